"""Decided items as training and evaluation data (`feedbackd export`): which decisions stand, the
row of each, and the text of each format. Pure: app/curation/exportread.py reads the history
as one commit held it and hands the decided files here, so the same commit always gives the same
bytes (no time of the export, keys in a fixed order, rows by decision time then item id).

A row's INPUT is the item's own `prompt`, `brief` or `task`, else `export.input_template` filled
from the item; DRAFT is the content as the agent first wrote it (originalContentData, else the
draft as first committed in queue/); APPROVED the content as approved. Content is the item's
content fields as JSON with sorted keys (JSON and YAML items), or front matter and body (Markdown
items). Reverted decisions have no ledger line at that commit, so they are not here; forgotten
lessons are left out of the corrections and notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from string import Formatter
from typing import Any, Literal

from feedbackd.core.commitmsg import AGENT_KEY, EVENT_KEY, ITEM_KEY, RENAMED_FROM_KEY
from feedbackd.core.curation.decisions import parse_record
from feedbackd.core.curation.feedback import Identity
from feedbackd.core.curation.items import Correction, Item, diff_content
from feedbackd.core.curation.learningcurve import Tally
from feedbackd.core.errors import UsageError
from feedbackd.core.formats import yamlio
from feedbackd.core.timeutil import canonical_iso_ms
from feedbackd.core.wording import quoted

FORMATS = ("openai-sft", "openai-dpo", "trl-sft", "trl-dpo", "trl-kto", "dspy", "hf")
# The formats that are one stream of text (to standard output, a file or an HTTP answer); `hf`
# is a folder.
STREAMED = ("openai-sft", "openai-dpo", "trl-sft", "trl-dpo", "trl-kto", "dspy")
INPUT_KEYS = ("prompt", "brief", "task")
# The trailers a walk of the history reads, and the commits it asks git for.
TRAILER_KEYS = (EVENT_KEY, AGENT_KEY, ITEM_KEY, RENAMED_FROM_KEY)
DECISION_GREP = f"^{EVENT_KEY}: (approve|reject|rename)$"
RENAME_GREP = f"^{EVENT_KEY}: rename$"
HF_DATA_FOLDER = "data"


def hf_data_file(content_digest: str, split: str = "train") -> str:
    """The `hf` folder's data file of a split, named by its content: `datasets` keys its cache
    on the card's `data_files` as written (not on the file's bytes or time), so an export
    replaced in the same folder must name another file to load fresh rather than as the earlier
    rows."""
    return f"{HF_DATA_FOLDER}/{split}-{content_digest[:16]}.jsonl"


Decision = Literal["approved", "rejected"]
_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_EVENT_OF: dict[str, str] = {"approved": "approve", "rejected": "reject"}
# JSON leaves these raw inside strings; readers that split lines on them (Python's splitlines,
# some editors) would cut a row in two, so they are written as escapes.
_LINE_BREAK_ESCAPES = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def check_format(name: str | None) -> str:
    """The export format `name`; a usage error that lists the formats otherwise."""
    if name in FORMATS:
        return name
    what = "--format is missing" if name is None else f"unknown export format {quoted(name)}"
    raise UsageError(what, hint=f"choose one of: {', '.join(FORMATS)}")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{field}` replaced by its value (a missing one by nothing)."""
    parts: list[str] = []
    for literal, name, _, _ in Formatter().parse(template):
        parts.append(literal)
        if name is not None:
            parts.append(values.get(name, ""))
    return "".join(parts)


# --- which decisions stand at the commit --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Decided:
    """An item's standing decision, from the ledger's latest line for it."""

    item: str
    state: Decision
    at: str
    file: str | None  # the decided file as the ledger names it, relative to the workspace
    curator: str | None


def ledger_lines(text: str) -> Iterator[str]:
    """The lines of a ledger, one at a time (a big ledger is not copied into a list)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def standing_decisions(lines: Iterable[str]) -> list[Decided]:
    """The items whose latest ledger line decides them, by decision time then item id. An item
    moved back to queue/ is a draft (left out); lines that do not read are passed over, as
    every ledger reader does (`doctor` names them)."""
    latest: dict[str, Decided | None] = {}
    shared: dict[str, str] = {}  # one string for each curator, however many lines name them
    for line in lines:
        if not line.strip():
            continue
        try:
            record = parse_record(line)
        except ValueError:
            continue
        if record.state == "queued":
            latest[record.item] = None
            continue
        curator = shared.setdefault(record.curator, record.curator) if record.curator else None
        at = _moment(record.at)
        latest[record.item] = Decided(record.item, record.state, at, record.file, curator)
    found = [decided for decided in latest.values() if decided is not None]
    found.sort(key=lambda decided: (decided.at, decided.item))
    return found


def _moment(text: str) -> str:
    """A ledger time in the one spelling feedbackd writes, so that times sort as text."""
    if _STORED_TIME.fullmatch(text):
        return text  # as feedbackd writes it: a hundred thousand need no parsing
    try:
        return canonical_iso_ms(text)
    except ValueError:
        return text


@dataclass(frozen=True, slots=True)
class DecisionCommit:
    sha: str
    agent: str  # the agent's name (its folder's) when the commit was made


class DecisionCommits:
    """The approve and reject commits of one agent's items, from its history read newest first
    (`add` each commit), following its folder back through renames as `git log --follow`
    follows a file. Only the items in `wanted` are kept."""

    def __init__(self, agent: str, wanted: Iterable[str]) -> None:
        self._name = agent
        self.names = [agent]  # the agent's names, newest first
        # Each item's own string, so that a hundred thousand commits hold no copy of their ids.
        self._wanted = {item: item for item in wanted}
        self._newest: dict[str, dict[str, DecisionCommit]] = {"approve": {}, "reject": {}}
        self._oldest: dict[str, DecisionCommit] = {}

    def add(self, sha: str, trailers: Mapping[str, str]) -> None:
        if trailers.get(AGENT_KEY) != self._name:
            return
        event, former = trailers.get(EVENT_KEY, "").lower(), trailers.get(RENAMED_FROM_KEY)
        item = self._wanted.get(trailers.get(ITEM_KEY) or "")
        if event == "rename" and former:
            self._name = former
            self.names.append(former)
        elif event in self._newest and item is not None:
            found = DecisionCommit(sha, self._name)
            self._newest[event].setdefault(item, found)
            self._oldest[item] = found

    def of(self, decided: Decided) -> DecisionCommit | None:
        """The commit that made the decision: the item's newest commit of its kind (a revert
        of a newer one removed that one's ledger line, so it stands for no line)."""
        return self._newest[_EVENT_OF[decided.state]].get(decided.item)

    def first(self, item: str) -> DecisionCommit | None:
        """The item's first decision commit: before it, queue/ held the draft as committed."""
        return self._oldest.get(item)


# --- rows ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExportRow:
    item: str
    agent: str
    decision: Decision
    input: str
    draft: str | None  # None: the draft as first written is nowhere to be found
    approved: str | None  # None for a rejection
    corrections: tuple[Correction, ...]
    notes: str | None  # a rejection's note; None when it has none (or it was forgotten)
    curator: str | None
    decided_at: str
    commit: str | None
    snippet: str | None = None  # the lessons the agent read when it drafted (--with-snippet)


@dataclass(frozen=True)
class RowSource:
    """What a row is made of: the decision, the decided item as the commit held it, the draft
    as first committed (None: not found), and the commit that made the decision."""

    decided: Decided
    item: Item
    first: Item | None
    commit: str | None
    snippet: str | None = None


def export_row(
    agent: str, source: RowSource, forgotten: frozenset[Identity], template: str
) -> ExportRow:
    item, decided = source.item, source.decided
    original = _original(item, source.first)
    if original is not None:
        draft: str | None = render_content(*original)
    elif decided.state == "rejected":
        draft = render_content(item.content, item.format)  # what was rejected is the draft
    else:
        draft = None
    approved = render_content(item.content, item.format) if decided.state == "approved" else None
    return ExportRow(
        item=decided.item,
        agent=agent,
        decision=decided.state,
        input=input_text(item, agent, template),
        draft=draft,
        approved=approved,
        corrections=_corrections(decided, item, original[0] if original else None, forgotten),
        notes=_notes(decided, item, forgotten),
        curator=decided.curator,
        decided_at=decided.at,
        commit=source.commit,
        snippet=source.snippet or None,
    )


def _original(item: Item, first: Item | None) -> tuple[dict[str, Any], str] | None:
    """The content as the agent first wrote it, and its format: the item's
    originalContentData, else the draft as first committed; None when neither is known."""
    if item.original is not None:
        return item.original, item.format
    return (first.content, first.format) if first is not None else None


def _corrections(
    decided: Decided,
    item: Item,
    draft: dict[str, Any] | None,
    forgotten: frozenset[Identity],
) -> tuple[Correction, ...]:
    if decided.state != "approved" or draft is None:
        return ()
    return tuple(
        change
        for change in diff_content(draft, item.content)
        if (decided.item, "correction", change.field, change.corrected, None) not in forgotten
    )


def _notes(decided: Decided, item: Item, forgotten: frozenset[Identity]) -> str | None:
    note = item.rejection_feedback
    if decided.state != "rejected" or not note:
        return None
    return None if (decided.item, "rejection", None, None, note) in forgotten else note


def input_text(item: Item, agent: str, template: str) -> str:
    """The item's own `prompt`, `brief` or `task`, else the template filled from the item."""
    document = item.document
    for key in INPUT_KEYS:
        value = document.get(key)
        if isinstance(value, str) and value.strip():
            return value
    values = {
        "id": item.item_id,
        "agent": _text(document.get("agentId")) or agent,
        "collection": _text(document.get("collection")),
        "slug": _text(document.get("slug")),
    }
    return fill_template(template, values)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def render_content(content: Mapping[str, Any], item_format: str) -> str:
    """Content as a model reads and writes it: JSON with sorted keys for JSON and YAML items;
    for Markdown items, the front matter fields as YAML between `---` lines, then the body."""
    if item_format != "md":
        return json.dumps(content, ensure_ascii=False, sort_keys=True, indent=2)
    body = content.get("body")
    fields = {key: value for key, value in content.items() if key != "body"}
    text = body if isinstance(body, str) else ""
    return f"---\n{yamlio.dump(fields)}---\n{text}" if fields else text


# --- the formats --------------------------------------------------------------------------------
def _message(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def prompt_text(row: ExportRow) -> str:
    """What the agent was given: INPUT, then the lessons it read then (with --with-snippet)."""
    return f"{row.input}\n\n{row.snippet}" if row.snippet else row.input


def prompt_messages(row: ExportRow, system: str | None) -> list[dict[str, str]]:
    """The turns before the answer: the system message (export.system), then the prompt."""
    head = [_message("system", system)] if system else []
    return [*head, _message("user", prompt_text(row))]


def metadata(row: ExportRow) -> dict[str, Any]:
    """What joins a row back to its decision (and splits rows by time)."""
    return {
        "id": row.item,
        "decision": row.decision,
        "curator": row.curator,
        "decided_at": row.decided_at,
        "commit": row.commit,
    }


def _answer(content: str | None) -> list[dict[str, str]] | None:
    return None if content is None else [_message("assistant", content)]


def _pair(row: ExportRow) -> tuple[str, str] | None:
    """(approved, draft) of an approval a curator corrected: a preference pair."""
    if row.approved is None or row.draft is None or not row.corrections:
        return None
    return row.approved, row.draft


def sft_record(row: ExportRow, system: str | None) -> dict[str, Any] | None:
    """OpenAI's supervised fine-tuning line (chat `messages`): an approved item. OpenAI's
    format has no room for metadata."""
    if row.approved is None:
        return None
    return {"messages": [*prompt_messages(row, system), _message("assistant", row.approved)]}


def dpo_record(row: ExportRow, system: str | None) -> dict[str, Any] | None:
    """OpenAI's preference (DPO) line: an approved item a curator corrected, its approved
    version preferred to the draft."""
    pair = _pair(row)
    if pair is None:
        return None
    return {
        "input": {"messages": prompt_messages(row, system)},
        "preferred_output": _answer(pair[0]),
        "non_preferred_output": _answer(pair[1]),
    }


def trl_sft_record(row: ExportRow, system: str | None) -> dict[str, Any] | None:
    """TRL's conversational prompt-completion row (SFTTrainer): an approved item."""
    if row.approved is None:
        return None
    return {
        "prompt": prompt_messages(row, system),
        "completion": _answer(row.approved),
        "metadata": metadata(row),
    }


def trl_dpo_record(row: ExportRow, system: str | None) -> dict[str, Any] | None:
    """TRL's conversational preference row (DPOTrainer): a corrected approval."""
    pair = _pair(row)
    if pair is None:
        return None
    return {
        "prompt": prompt_messages(row, system),
        "chosen": _answer(pair[0]),
        "rejected": _answer(pair[1]),
        "metadata": metadata(row),
    }


def trl_kto_record(row: ExportRow, system: str | None) -> dict[str, Any] | None:
    """TRL's unpaired preference row (KTOTrainer): an approval is desirable (label true), a
    rejected draft undesirable (false)."""
    completion = row.approved if row.decision == "approved" else row.draft
    if completion is None:
        return None
    return {
        "prompt": prompt_messages(row, system),
        "completion": _answer(completion),
        "label": row.decision == "approved",
        "metadata": metadata(row),
    }


def dspy_record(row: ExportRow, system: str | None) -> dict[str, Any]:
    """A DSPy example (`dspy.Example(**row).with_inputs("input")`): a decided item."""
    return {
        "input": prompt_text(row),
        "draft": row.draft,
        "output": row.approved,
        "feedback": feedback(row),
        "metadata": metadata(row),
    }


def feedback(row: ExportRow) -> str:
    """What the curator said: a rejection's note, or a line per correction."""
    if row.decision == "rejected":
        return row.notes or ""
    return "\n".join(f"{c.field}: {c.original} → {c.corrected}" for c in row.corrections)


def hf_record(row: ExportRow, system: str | None) -> dict[str, Any]:
    """A row of the Hugging Face dataset (the card's features are its columns, in this order):
    the decision, then TRL's columns (a rejection's completion is its draft, labelled false;
    chosen and rejected only for a corrected approval)."""
    pair = _pair(row)
    return {
        "id": row.item,
        "agent": row.agent,
        "decision": row.decision,
        "input": row.input,
        "draft": row.draft,
        "approved": row.approved,
        "corrections": [
            {"field": c.field, "original": c.original, "corrected": c.corrected}
            for c in row.corrections
        ],
        "notes": row.notes,
        "curator": row.curator,
        "decided_at": row.decided_at,
        "commit": row.commit,
        "prompt": prompt_messages(row, system),
        "completion": _answer(row.approved if row.decision == "approved" else row.draft),
        "label": row.decision == "approved",
        "chosen": _answer(pair[0]) if pair else None,
        "rejected": _answer(pair[1]) if pair else None,
    }


Record = Callable[[ExportRow, str | None], dict[str, Any] | None]
RECORDS: dict[str, Record] = {
    "openai-sft": sft_record,
    "openai-dpo": dpo_record,
    "trl-sft": trl_sft_record,
    "trl-dpo": trl_dpo_record,
    "trl-kto": trl_kto_record,
    "dspy": dspy_record,
    "hf": hf_record,
}


def json_text(value: Any) -> str:
    """One value as a line of JSON: UTF-8 kept readable, no line break but escaped ones."""
    return json.dumps(value, ensure_ascii=False).translate(_LINE_BREAK_ESCAPES)


def export_text(export_format: str, records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The format's text, a piece at a time: a JSON line per record (`dspy`: a JSON array, an
    object a line)."""
    if check_format(export_format) == "dspy":
        opening = "[\n"
        for value in records:
            yield opening + json_text(value)
            opening = ",\n"
        yield "[]\n" if opening == "[\n" else "\n]\n"
        return
    for value in records:
        yield json_text(value) + "\n"


# --- the Hugging Face dataset card --------------------------------------------------------------
def count_row(tally: Tally, row: ExportRow) -> None:
    """An export's row into the tally its dataset card tells."""
    tally.add(row.decision != "rejected", [change.field for change in row.corrections])


_CORRECTION_KEYS = ("field", "original", "corrected")
_STRING_COLUMNS = ("id", "agent", "decision", "input", "draft", "approved")
_LAST_COLUMNS = ("notes", "curator", "decided_at", "commit")
_MESSAGE_COLUMNS = ("prompt", "completion")
_PAIR_COLUMNS = ("chosen", "rejected")


def _listed(name: str, parts: Iterable[str]) -> str:
    """A column that is a list of objects of string fields."""
    fields = "".join(f"    - name: {part}\n      dtype: string\n" for part in parts)
    return f"  - name: {name}\n    list:\n{fields}"


def _features() -> str:
    features = [f"  - name: {name}\n    dtype: string\n" for name in _STRING_COLUMNS]
    features.append(_listed("corrections", _CORRECTION_KEYS))
    features += [f"  - name: {name}\n    dtype: string\n" for name in _LAST_COLUMNS]
    features += [_listed(name, ("role", "content")) for name in _MESSAGE_COLUMNS]
    features.append("  - name: label\n    dtype: bool\n")
    features += [_listed(name, ("role", "content")) for name in _PAIR_COLUMNS]
    return "".join(features)


@dataclass(frozen=True)
class DataFiles:
    """What an `hf` folder holds: each split's file and rows, and the rows --dedup dropped."""

    paths: Mapping[str, str]
    rows: Mapping[str, int]
    dropped: int = 0


def dataset_card(agent: str, commit: str | None, tally: Tally, data: DataFiles) -> str:
    """README.md of the `hf` folder: front matter that tells `datasets` the data file of each
    split and the columns (so an export of rejections only still has typed corrections), then
    what it holds."""
    data_files = data.paths
    splits = "".join(f"  - split: {name}\n    path: {path}\n" for name, path in data_files.items())
    front = (
        "---\n"
        f"pretty_name: {json.dumps(f'{agent}: drafts and their curated versions')}\n"
        "tags:\n- feedbackd\n- curation\n- preference\n- trl\n"
        "configs:\n- config_name: default\n  data_files:\n" + splits + ""
        "dataset_info:\n  features:\n" + _features() + "---\n"
    )
    return front + _card_text(agent, commit, tally, data)


def _card_text(agent: str, commit: str | None, tally: Tally, data: DataFiles) -> str:
    source = f"commit `{commit}`" if commit else "no commit (the history was empty then)"
    fields = ", ".join(f"{name} ({count})" for name, count in _most_corrected(tally.fields))
    data_file = ", ".join(f"`{path}`" for path in data.paths.values())
    rows = ", ".join(f"{name} {count}" for name, count in data.rows.items())
    dropped = f"- duplicates dropped (--dedup): {data.dropped}\n" if data.dropped else ""
    return (
        f"\n# {agent}: drafts and their curated versions\n\n"
        f"Exported by feedbackd from {source} of the workspace's git history: every item"
        f" of the agent `{agent}` that a curator had decided then, once, in the order of the"
        " decisions. Reverted decisions and forgotten lessons are left out.\n\n"
        f"- decided items: {tally.decided}\n"
        f"- approved: {tally.approved} ({tally.corrected} corrected,"
        f" {tally.approved - tally.corrected} unedited)\n"
        f"- rejected: {tally.rejected}\n"
        f"- most corrected fields: {fields or 'none'}\n"
        f"- rows: {rows}\n{dropped}\n"
        "Columns: `input` (what the agent was asked), `draft` (its content as the agent first"
        " wrote it), `approved` (as the curator approved it; null for a rejection),"
        " `corrections` (each field the curator changed, from original to corrected),"
        " `notes` (a rejection's note), `curator`, `decided_at` and `commit` (the decision's"
        " commit), then TRL's columns: `prompt` (the system and user turns), `completion` (the"
        " approved content, or a rejected draft), `label` (true for an approval: KTO as it is),"
        " `chosen` and `rejected` (approved and draft of a corrected approval, else null: keep"
        " the rows where `chosen` is set for DPO, where `label` is true for SFT). Content is"
        " JSON with sorted keys, or Markdown with front matter.\n\n"
        f"Load it with `datasets.load_dataset(PATH)`; {data_file} hold one JSON line a row"
        " (named by their content, so that a cache never serves an earlier export).\n"
    )


def _most_corrected(fields: Mapping[str, int], shown: int = 5) -> list[tuple[str, int]]:
    return sorted(fields.items(), key=lambda pair: (-pair[1], pair[0]))[:shown]
