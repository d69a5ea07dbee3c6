"""Commit messages of the learning history: build them safely, read them back from `git log`.

Every commit feedbackd makes carries a subject `{event}({agent}[/{skill}]): {summary}`, an optional
body and a paragraph of trailers (`Feedback-Event`, `Feedback-Agent`, ...). Text that comes from
files (titles, notes, field values) is squeezed onto one line before it goes in, so a curator's
note can never forge a trailer or a second subject line. Pure functions only: no git, no disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from feedbackd.core.people import display_name
from feedbackd.core.timeutil import iso_ms, parse_iso

EVENTS = (
    "draft",
    "approve",
    "reject",
    "record",
    "forget",
    "rename",
    "revise",
    "rating",
    "pricing",
    "optimize",
    "sync",
    "review",
    "dispute",
)
# The events a curator decides; the others are a buyer's (rating) or feedbackd's own.
CURATOR_EVENTS = ("approve", "reject", "revise", "record", "forget", "rename", "review", "dispute")
LINE_LIMIT = 120
# Body lines hold two cut values; trailer values (field lists) may run long too.
TRAILER_LIMIT = 1000
NEWLINE_MARK = "⏎"

EVENT_KEY = "Feedback-Event"
AGENT_KEY = "Feedback-Agent"
SKILL_KEY = "Feedback-Skill"
ITEM_KEY = "Feedback-Item"
FIELDS_KEY = "Feedback-Fields"
TRANSACTION_KEY = "Feedback-Transaction"
RENAMED_FROM_KEY = "Feedback-Renamed-From"
PRICE_OLD_KEY = "Price-Old"
PRICE_NEW_KEY = "Price-New"

_NOTE_START = '- notes: "'
# Anything a reader could take as a line break: git only splits on \n, but other tools
# (editors, Python's splitlines) also break on these.
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*?)\s*$")


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """Show line breaks as ⏎, drop other control characters, cut at `limit` characters with `…`."""
    flat = _CONTROL.sub("", _LINE_BREAKS.sub(NEWLINE_MARK, text.replace("\t", " ")))
    if len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)] + "…"


def build_message(
    event: str,
    agent: str,
    summary: str,
    *,
    skill: str | None = None,
    body: Sequence[str] = (),
    trailers: Sequence[tuple[str, str]] = (),
) -> str:
    """The full commit message: subject, blank line, body lines, blank line, trailers.

    `Feedback-Event`, `Feedback-Agent` and (with a skill) `Feedback-Skill` are always present;
    callers may pass them too, as long as the values agree with the subject.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown commit event {event!r}; expected one of {', '.join(EVENTS)}")
    scope = one_line(agent, 200) + (f"/{one_line(skill, 200)}" if skill else "")
    subject = f"{event}({scope}): {one_line(summary)}"
    paragraphs = [subject]
    # Blank lines would split the body into paragraphs; it stays one block, one line per fact.
    body_lines = [safe for safe in map(_safe_body_line, body) if safe.strip()]
    if body_lines:
        paragraphs.append("\n".join(body_lines))
    paragraphs.append(
        "\n".join(f"{k}: {v}" for k, v in _all_trailers(event, agent, skill, trailers))
    )
    return "\n\n".join(paragraphs) + "\n"


def _safe_body_line(line: str) -> str:
    # `git interpret-trailers` stops reading at a line starting with `---` (a patch divider),
    # which would hide the real trailers; indent such lines so they stay plain body text.
    flat = one_line(line, TRAILER_LIMIT)
    return " " + flat if flat.startswith("---") else flat


def _all_trailers(
    event: str, agent: str, skill: str | None, extra: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    implied = [(EVENT_KEY, event), (AGENT_KEY, agent)] + ([(SKILL_KEY, skill)] if skill else [])
    result = [(key, one_line(value, TRAILER_LIMIT)) for key, value in implied]
    seen = {key.lower(): value for key, value in result}
    for key, value in extra:
        if not isinstance(key, str) or not _TRAILER_KEY.fullmatch(key):
            raise ValueError(f"bad trailer key {key!r}: use letters, digits and '-'")
        flat = one_line(str(value), TRAILER_LIMIT).strip()
        if key.lower() in seen:
            if seen[key.lower()] != flat:
                raise ValueError(f"trailer {key} {flat!r} contradicts {seen[key.lower()]!r}")
            continue
        if flat:  # An empty value says nothing; leave the trailer out.
            result.append((key, flat))
    return result


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The `Key: value` lines of the message's last paragraph (not the subject), by key.

    Like git, the last paragraph counts only if every line in it is a trailer (lines starting
    with white space continue the previous value); otherwise the message has no trailers.
    """
    paragraphs = _paragraphs(message)
    if len(paragraphs) < 2:
        return {}
    found: list[tuple[str, str]] = []
    for line in paragraphs[-1]:
        if line[:1] in (" ", "\t") and found:
            key, value = found[-1]
            found[-1] = (key, f"{value} {line.strip()}".strip())
            continue
        match = _TRAILER_LINE.match(line)
        if not match:
            return {}
        found.append((match.group(1), match.group(2)))
    result: dict[str, list[str]] = {}
    for key, value in found:
        result.setdefault(key, []).append(value)
    return result


def _paragraphs(message: str) -> list[list[str]]:
    """Groups of non-blank lines, split at blank (or white-space-only) lines."""
    groups: list[list[str]] = [[]]
    for line in message.replace("\r\n", "\n").split("\n"):
        if line.strip():
            groups[-1].append(line.rstrip())
        elif groups[-1]:
            groups.append([])
    return [group for group in groups if group]


@dataclass(frozen=True)
class LogEntry:
    """One step of an agent's learning history, read from a commit's trailers."""

    commit: str
    date: str
    event: str | None
    agent: str | None
    item: str | None
    skill: str | None
    curator: str | None
    fields: list[str] | None
    price_old: str | None
    price_new: str | None
    subject: str
    note: str | None = None  # a rejection's note, as its commit body has it (cut at 120)
    renamed_from: str | None = None  # a `rename` commit: the agent's folder before
    # What the commit recorded, as its body tells it (`- title: "…" → "…"`, `- notes: "…"`):
    # how `why` knows which of an item's commits added an entry.
    changes: tuple[str, ...] = ()
    reverted: bool = False  # a `git revert` that stands undid this commit
    reverts: str | None = None  # a `revert` row (core/curation/reverts.py): the commit undone

    def to_json(self) -> dict[str, Any]:
        """The `feedbackd log --json` shape: the contract's keys, absent values as None."""
        return {
            "commit": self.commit,
            "date": self.date,
            "event": self.event,
            "agent": self.agent,
            "item": self.item,
            "skill": self.skill,
            "curator": self.curator,
            "fields": list(self.fields) if self.fields is not None else None,
            "price_old": self.price_old,
            "price_new": self.price_new,
            "reverted": self.reverted,
            "reverts": self.reverts,
        }


def follow_renames(entries: Iterable[LogEntry], agent: str) -> list[LogEntry]:
    """The entries of `agent` (the history, newest first), following its folder back through
    each rename as `git log --follow` follows a file: past its `rename` commit, the history is
    that of the name it had before. A newer agent that took the old name is not part of it."""
    name = agent
    followed = []
    for entry in entries:
        if entry.agent != name:
            continue
        followed.append(entry)
        if entry.event == "rename" and entry.renamed_from:
            name = entry.renamed_from
    return followed


def former_names(history: Iterable[LogEntry]) -> list[str]:
    """The names an agent had before, newest first, from its followed history."""
    return [e.renamed_from for e in history if e.event == "rename" and e.renamed_from]


def log_entry(commit: str, date: str, author: str, message: str) -> LogEntry | None:
    """A LogEntry from one commit's raw fields, or None when it carries no Feedback-Event."""
    trailers = {key.lower(): values for key, values in parse_trailers(message).items()}

    def last(key: str) -> str | None:
        values = trailers.get(key.lower())
        return values[-1] if values else None

    event = last(EVENT_KEY)
    if event is None:
        return None
    fields = last(FIELDS_KEY)
    changes = _changes(message)
    return LogEntry(
        commit=commit,
        date=iso_date(date),
        event=event,
        agent=last(AGENT_KEY),
        item=last(ITEM_KEY),
        skill=last(SKILL_KEY),
        curator=author.strip() or None,
        fields=_split_fields(fields) if fields is not None else None,
        price_old=last(PRICE_OLD_KEY),
        price_new=last(PRICE_NEW_KEY),
        subject=message.split("\n", 1)[0].strip(),
        note=_note(changes),
        renamed_from=last(RENAMED_FROM_KEY),
        changes=changes,
    )


def _changes(message: str) -> tuple[str, ...]:
    """The body's lines that tell a correction or a note (decision_body, entry_body)."""
    return tuple(line for line in message.split("\n")[1:] if line.startswith("- "))


def _note(changes: Sequence[str]) -> str | None:
    """The `- notes: "…"` line of a rejection's body (decision_body, entry_body)."""
    for line in changes:
        if line.startswith(_NOTE_START) and line.endswith('"'):
            return line[len(_NOTE_START) : -1]
    return None


def fields_trailer(fields: Iterable[str]) -> str:
    """The `Feedback-Fields` value: distinct field names in order, comma separated."""
    return ", ".join(dict.fromkeys(one_line(f, 200).replace(",", " ") for f in fields))


def _split_fields(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def iso_date(text: str) -> str:
    """A commit date as the history shows it (milliseconds, UTC); as given when unreadable."""
    try:
        return iso_ms(parse_iso(text))
    except ValueError:
        return text.strip()


# --- what the curation commits say ---------------------------------------------------------------
class FieldChange(Protocol):
    """One corrected field of an approval (core.items.Correction)."""

    @property
    def field(self) -> str: ...

    @property
    def original(self) -> str: ...

    @property
    def corrected(self) -> str: ...


# The event of a commit that records a ledger line of this state.
EVENT_OF_STATE: dict[str, str] = {"approved": "approve", "rejected": "reject", "queued": "draft"}


def decision_summary(
    item_id: str, state: str, corrections: Sequence[FieldChange], already: Sequence[str] = ()
) -> tuple[str, str]:
    """(event, summary) of a decision: `reject`, `qi-1`; `approve`, `qi-1, 1 correction (t)`.

    `corrections` are those the commit records; `already` names the fields whose same
    correction an earlier decision recorded (written once only), so the message claims no
    entry that feedback.json did not get: `qi-1, no new corrections (t already recorded)`."""
    if state == "rejected":
        return "reject", item_id
    fields = [c.field for c in corrections]
    recorded = f"{', '.join(already)} already recorded"
    if not fields and already:
        return "approve", f"{item_id}, no new corrections ({recorded})"
    if not fields:
        return "approve", f"{item_id}, no corrections"
    noun = "correction" if len(fields) == 1 else "corrections"
    summary = f"{item_id}, {len(fields)} {noun} ({', '.join(fields)})"
    return "approve", f"{summary}; {recorded}" if already else summary


def decision_body(state: str, notes: str | None, corrections: Sequence[FieldChange]) -> list[str]:
    """A rejection's note, or one line per correction: `- title: "old" → "new"`."""
    if state == "rejected":
        return [f'{_NOTE_START}{one_line(notes or "")}"']
    return [
        f'- {one_line(c.field)}: "{one_line(c.original)}" → "{one_line(c.corrected)}"'
        for c in corrections
    ]


def decision_trailers(item_id: str, corrections: Sequence[FieldChange]) -> list[tuple[str, str]]:
    trailers = [(ITEM_KEY, item_id)]
    if corrections:
        trailers.append((FIELDS_KEY, fields_trailer(c.field for c in corrections)))
    return trailers


def revision_summary(
    item_id: str, state: str, corrections: Sequence[FieldChange], note: str | None
) -> str:
    """`qi-1 edited after its approval: 1 new correction (body)`: a decided file committed
    again, and what its edit adds."""
    if state == "rejected":
        return f"{item_id} edited after its rejection: {'a new note' if note else 'no new note'}"
    fields = [c.field for c in corrections]
    noun = "correction" if len(fields) == 1 else "corrections"
    added = f"{len(fields)} new {noun} ({', '.join(fields)})" if fields else "no new corrections"
    return f"{item_id} edited after its approval: {added}"


def revision_body(note: str | None, corrections: Sequence[FieldChange]) -> list[str]:
    """The new note, or one line per new correction, as a decision's body says them."""
    if note:
        return decision_body("rejected", note, [])
    return decision_body("approved", None, corrections)


def drafts_summary(new: Sequence[str], requeued: Sequence[str]) -> str:
    """`2 new drafts (qi-1, qi-2); back in queue: qi-3`."""
    parts = []
    if new:
        noun = "draft" if len(new) == 1 else "drafts"
        parts.append(f"{len(new)} new {noun} ({few_ids(new)})")
    if requeued:
        parts.append(f"back in queue: {few_ids(requeued)}")
    return "; ".join(parts)


def few_ids(ids: Sequence[str], shown: int = 5) -> str:
    """`a, b, c, d, e, and 1,195 more`: a subject line stays short in a burst."""
    if len(ids) <= shown:
        return ", ".join(ids)
    return f"{', '.join(ids[:shown])}, and {len(ids) - shown:,} more"


def interrupted_summary(items: Sequence[str]) -> str:
    """The commit of ledger lines that a killed pass wrote but never committed."""
    return few_ids(items) + " (completed after an interruption)"


def interrupted_trailers(item_id: str, fields: Sequence[str] | None) -> list[tuple[str, str]]:
    trailers = [(ITEM_KEY, item_id)]
    if fields:
        trailers.append((FIELDS_KEY, fields_trailer(fields)))
    return trailers


def rename_summary(old_agent: str) -> str:
    """`from writer`: an agent folder renamed (the subject's scope names the new one)."""
    return f"from {old_agent}"


def rename_trailers(old_agent: str) -> list[tuple[str, str]]:
    return [(RENAMED_FROM_KEY, old_agent)]


class RecordedEntry(Protocol):
    """One feedback entry that `feedbackd record` wrote (core.curation.feedback.FeedbackEntry)."""

    @property
    def type(self) -> str: ...

    @property
    def queueItemId(self) -> str | None: ...

    @property
    def field(self) -> str | None: ...

    @property
    def original(self) -> str | None: ...

    @property
    def corrected(self) -> str | None: ...

    @property
    def notes(self) -> str | None: ...


def record_summary(entry: RecordedEntry) -> str:
    """`edit of title (qi-1)`: what `feedbackd record` recorded."""
    summary = entry.type + (f" of {entry.field}" if entry.field else "")
    return summary + (f" ({entry.queueItemId})" if entry.queueItemId else "")


def record_trailers(entry: RecordedEntry) -> list[tuple[str, str]]:
    trailers = [(ITEM_KEY, entry.queueItemId)] if entry.queueItemId else []
    if entry.field:
        trailers.append((FIELDS_KEY, fields_trailer([entry.field])))
    return trailers


def reason_body(reason: str) -> list[str]:
    """The `- reason: "…"` line of a forget commit (none without a reason): why a lesson was
    taken back belongs where history is read, not only in forgotten.jsonl."""
    text = one_line(reason.strip(), TRAILER_LIMIT)
    return [f'- reason: "{text}"'] if text else []


def entry_body(entry: RecordedEntry) -> list[str]:
    if entry.original is not None and entry.corrected is not None:
        name = one_line(entry.field or "value")
        return [f'- {name}: "{one_line(entry.original)}" → "{one_line(entry.corrected)}"']
    if entry.notes is not None:
        return [f'{_NOTE_START}{one_line(entry.notes)}"']
    return []


def decider(entry: LogEntry) -> str:
    """Who decided a step of the history, by name: the curator of a curator's event or of a
    `git revert`; nobody for a rating (its buyer is in the summary) or feedbackd's own steps
    (drafts, prices, lessons, syncs), whoever's git identity committed them."""
    if entry.event not in (*CURATOR_EVENTS, "revert") or not entry.curator:
        return ""
    return display_name(entry.curator)
