"""The git merge driver for feedback files: `feedbackd merge-driver %O %A %B %P`.

Two machines that each recorded feedback must end with the same files, whatever order their
commits meet in. So every merge here is a pure, symmetric function of the three versions:

- `feedback.json`: both sides' entries by `id`, oldest first (by `createdAt`; entries of the
  same time in the order the sides hold them, see `_in_order`), keeping the newest
  `feedback.max_entries`.
- `*.jsonl` (decision ledgers, ratings, memory): both sides' lines keyed by `id` (or
  `transaction_id`), sorted by time (`at`, `createdAt` or `timestamp`), lines of the same time
  in the order the sides hold them.
- generated prompt snippets (`prompt/feedback.md`, `prompt/skills/*.md`): either side will do,
  because feedbackd regenerates them from the merged feedback after every pull; picking one
  keeps a rebase from stopping on text nobody wrote by hand.

What either side added is kept; what one side removed since the common ancestor, while the other
left it as it was, is removed. That makes `git revert` of a decision an undo: reverting is a
merge whose one side is the decision's parent, which lacks the decision's entries and ledger
line, so they go, whatever commits came after the decision.

When both sides hold different versions of the same entry, the side that changed it since the
common ancestor wins (also over a side that removed it); when both changed it, the greater
canonical JSON text wins, so the answer never depends on which side is "ours". Anything that
cannot be merged safely (a side that is not valid JSON, a line without an id, a file type this
driver does not know) is refused: git then reports a conflict instead of feedbackd guessing.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from feedbackd.core.curation.feedbackjson import read_entries, stored_shape
from feedbackd.core.errors import FeedbackdError, MergeRefused
from feedbackd.core.formats.jsontext import dumps_json
from feedbackd.core.ids import is_derived_id
from feedbackd.core.timeutil import parse_iso

FileKind = Literal["feedback", "jsonl", "generated"]
KEY_FIELDS = ("id", "transaction_id")
TIME_FIELDS = ("at", "createdAt", "timestamp")
# The .gitattributes lines that hand these files to the driver: `init` writes them into the
# workspace, and sync's rebase uses them whatever the workspace's own file holds.
ATTRIBUTES = (
    "feedback.json merge=feedbackd",
    "*.jsonl merge=feedbackd",
    "**/prompt/feedback.md merge=feedbackd",
    "**/prompt/skills/*.md merge=feedbackd",
)
DRIVER_NAME = "feedbackd merge of feedback files"  # merge.feedbackd.name in git config
# Items move one by one between queue/, approved/ and rejected/. When the last draft leaves
# queue/, git's merge takes the folder for renamed and would stop a revert that puts a draft
# back in queue/ ("CONFLICT (file location)"), or move it to approved/. Workspaces turn that
# guess off (`init`, and sync's rebase).
MERGE_SETTINGS = (("merge.directoryRenames", "false"),)


@dataclass(frozen=True)
class Record:
    """One mergeable unit: an entry of feedback.json or a line of a .jsonl file."""

    key: str
    moment: float  # seconds since the epoch; -inf when the record carries no readable time
    text: str  # canonical text, used to compare versions of the same key


# --- what a path is ----------------------------------------------------------------------------
def kind_of(path: str) -> FileKind | None:
    """Which merge applies to the file at `path` (as git names it), or None for none."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not parts:
        return None
    name = parts[-1]
    if name == "feedback.json":
        return "feedback"
    if name.endswith(".jsonl"):
        return "jsonl"
    if name == "feedback.md" and parts[-2:-1] == ("prompt",):
        return "generated"
    if name.endswith(".md") and parts[-3:-1] == ("prompt", "skills"):
        return "generated"
    return None


# --- the merges (pure) -------------------------------------------------------------------------
def merge_feedback(base: bytes, ours: bytes, theirs: bytes, cap: int) -> bytes:
    """feedback.json: merged by id, oldest first, newest `cap` kept; raises MergeRefused."""
    if cap < 1:
        raise MergeRefused(f"the feedback cap must be at least 1, not {cap}")
    sides = [_feedback_records(data, side) for data, side in ((ours, "ours"), (theirs, "theirs"))]
    base_records = _lenient(lambda: _feedback_records(base, "base"))
    merged = _merge(base_records, sides[0], sides[1])[-cap:]
    # Versions are compared as canonical (sorted) text; the file puts the contract's fields first.
    return dumps_json([stored_shape(json.loads(record.text)) for record in merged]).encode("utf-8")


def merge_jsonl(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """A .jsonl file: lines merged by id / transaction_id, sorted by time; raises MergeRefused."""
    sides = [_jsonl_records(data, side) for data, side in ((ours, "ours"), (theirs, "theirs"))]
    base_records = _lenient(lambda: _jsonl_records(base, "base"))
    merged = _merge(base_records, sides[0], sides[1])
    return "".join(record.text + "\n" for record in merged).encode("utf-8")


def merge_generated(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """A generated snippet: the side that changed it, else the greater; regenerated later anyway."""
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    return max(ours, theirs)


def merge_bytes(kind: FileKind, base: bytes, ours: bytes, theirs: bytes, cap: int) -> bytes:
    if kind == "feedback":
        return merge_feedback(base, ours, theirs, cap)
    if kind == "jsonl":
        return merge_jsonl(base, ours, theirs)
    return merge_generated(base, ours, theirs)


def _merge(base: list[Record], ours: list[Record], theirs: list[Record]) -> list[Record]:
    """Every key of either side once, in time order, but those one side removed; a symmetric
    choice between versions, but for one decision both sides made on their own (ours)."""
    base_texts: dict[str, set[str]] = {}
    for record in base:
        base_texts.setdefault(record.key, set()).add(record.text)
    on_both = {record.key for record in ours} & {record.key for record in theirs}
    candidates: dict[str, dict[str, Record]] = {}
    for record in (*ours, *theirs):
        candidates.setdefault(record.key, {})[record.text] = record
    chosen = {
        key: kept
        for key, versions in candidates.items()
        if (kept := _choose(versions, base_texts.get(key), key in on_both, is_derived_id(key)))
        is not None
    }
    return _in_order(chosen, ours, theirs)


def _in_order(chosen: dict[str, Record], ours: list[Record], theirs: list[Record]) -> list[Record]:
    """The chosen records oldest first, and those of one time in the order the sides hold
    them: the entries of one pass share a millisecond, and their order is the order they were
    decided in (the snippet shows the newest ones), never their random ids. The sides are
    merged as sorted lists are: the older head first, the smaller key between heads of one time,
    and then the rest of that side's run of the same time, so two clones' passes stay apart.
    Nothing depends on which side is ours, so every machine gets the same file."""
    sides = [deque(r.key for r in side if r.key in chosen) for side in (ours, theirs)]
    placed: dict[str, None] = {}  # an ordered set

    def head(side: deque[str]) -> str | None:
        while side and side[0] in placed:
            side.popleft()
        return side[0] if side else None

    while heads := {key: side for side in sides if (key := head(side)) is not None}:
        key = min(heads, key=lambda k: (chosen[k].moment, k))
        placed[key] = None
        if len(heads) == 1 and len([s for s in sides if s]) == 2:
            continue  # both sides' head is this record: choose again
        run, moment = heads[key], chosen[key].moment
        others = {head(side) for side in sides if side is not run}
        while (after := head(run)) is not None and chosen[after].moment == moment:
            if after in others:
                break  # the other side holds it next too: its place is chosen anew
            placed[after] = None
    return sorted((chosen[key] for key in placed), key=lambda record: record.moment)


def _choose(
    versions: dict[str, Record], base_texts: set[str] | None, on_both: bool, derived: bool
) -> Record | None:
    """The version of one key to keep (`versions` in the order ours, theirs; `derived`: its id
    says what the record is, see core.ids.derived_id); None when one side removed it and the
    other did not change it (a revert's undo, a forgotten entry, one the cap let go)."""
    changed = [text for text in versions if text not in (base_texts or ())]
    if base_texts is not None and not on_both and not changed:
        return None
    if derived and on_both and base_texts is None:
        # One decision that both sides made on their own (a price cut decided on two machines
        # before they synced): any copy is as good, so it stays as the branch merged into has
        # it. In sync's rebase that is the remote's: the local copy's commit changes nothing
        # and git drops it, so the cut is one commit too.
        return next(iter(versions.values()))
    # A version that differs from the common ancestor is an edit: it beats the unchanged one.
    return versions[max(changed or versions)]


def _lenient(read: Callable[[], list[Record]]) -> list[Record]:
    """The ancestor only breaks ties between edits; an unreadable one counts as absent."""
    try:
        return read()
    except MergeRefused:
        return []


# --- reading each side -------------------------------------------------------------------------
def _text(data: bytes, side: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MergeRefused(
            f"{side}: not UTF-8 (byte {error.start})",
            hint="restore that version from git, or resolve the conflict by hand",
        ) from None


def _feedback_records(data: bytes, side: str) -> list[Record]:
    try:
        entries = read_entries(_text(data, side))
    except MergeRefused:
        raise
    except FeedbackdError as error:
        raise MergeRefused(f"{side}: {error.message}", hint=error.hint) from None
    return [
        Record(entry["id"], _moment(entry["createdAt"]), _canonical(stored_shape(entry)))
        for entry in entries
    ]


def _jsonl_records(data: bytes, side: str) -> list[Record]:
    records = []
    for number, line in enumerate(_text(data, side).splitlines(), start=1):
        if line.strip():
            records.append(_jsonl_record(line, f"{side} line {number}"))
    return records


def _jsonl_record(line: str, where: str) -> Record:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise MergeRefused(
            f"{where}: not valid JSON ({error.msg}, column {error.colno})",
            hint="repair or remove that line, then merge again",
        ) from None
    if not isinstance(value, dict):
        raise MergeRefused(f"{where}: not a JSON object", hint="each line must be one object")
    key = next((value[name] for name in KEY_FIELDS if isinstance(value.get(name), str)), None)
    if not key:
        raise MergeRefused(
            f"{where}: no `id` or `transaction_id` to merge by",
            hint="give the line a unique id, then merge again",
        )
    moment = next((value[name] for name in TIME_FIELDS if isinstance(value.get(name), str)), "")
    # The line is kept exactly as written; only versions of one key are compared canonically.
    return Record(key, _moment(moment), line.rstrip("\r"))


def _moment(text: str) -> float:
    try:
        return parse_iso(text).timestamp() if text else -math.inf
    except (ValueError, OverflowError):
        return -math.inf


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
