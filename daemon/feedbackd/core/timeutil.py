"""Timestamps and durations in the formats the contract uses (the clock itself is
edges/clock.py: the time comes in as a `now`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime

from feedbackd.core.errors import UsageError
from feedbackd.core.wording import quoted

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Longer windows reach back before year 1 (a date Python cannot hold); a century is plenty.
_MAX_DURATION_S = 100 * 366 * 86400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)
_DATE_ONLY = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")


def iso_ms(moment: datetime) -> str:
    """UTC ISO 8601 with milliseconds and `Z`, e.g. `2026-04-08T10:00:00.000Z`."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def unix_ms(moment: datetime) -> int:
    """Whole milliseconds since 1970, rounded down as `iso_ms` writes them (integers only, so
    the two never disagree)."""
    return (moment.astimezone(UTC) - EPOCH) // _MS


def from_unix_ms(ms: int) -> datetime:
    """The UTC time `ms` milliseconds after 1970 (what `unix_ms` gives back exactly)."""
    return EPOCH + ms * _MS


def stored_ms(text: str) -> int:
    """`unix_ms` of a time in the stored spelling (`2026-04-08T10:00:00.000Z`, always UTC),
    read without an aware datetime: a store reads tens of thousands of them."""
    return (datetime.fromisoformat(text[:-1]) - _NAIVE_EPOCH) // _MS


def ceil_ms(moment: datetime) -> int:
    """Milliseconds since 1970, rounded up: a time in whole milliseconds is at or after
    `moment` exactly when it is at or after this."""
    return -((EPOCH - moment.astimezone(UTC)) // _MS)


def parse_iso(text: str) -> datetime:
    """Parse ISO 8601 (with `Z` or an offset); naive times are taken as UTC."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_moment_by(text: str) -> datetime:
    """The last moment `--at` names: a date alone (`2026-12-04`) is the end of that day, as a
    user who made commits that day means it; an ISO time is that moment. Both UTC when no
    offset is given; ValueError when `text` is neither."""
    moment = parse_iso(text)
    if _DATE_ONLY.match(text):
        if moment.date() == date.max:  # its end is the last moment there is
            return datetime.max.replace(tzinfo=UTC)
        return moment + timedelta(days=1) - timedelta(microseconds=1)
    return moment


def canonical_iso_ms(text: str) -> str:
    """A stored time in the one spelling records use; ValueError when `text` is not ISO 8601.

    Record models validate their time fields with this, so every file holds the same format.
    """
    try:
        return iso_ms(parse_iso(text))
    except (ValueError, OverflowError):
        raise ValueError("not an ISO 8601 time") from None


def parse_duration(text: str) -> timedelta:
    """`30s`, `15m`, `12h`, `7d`, `4w` → timedelta; anything else is a usage error."""
    match = _DURATION.match(text)
    if not match:
        raise UsageError(
            f"bad duration {quoted(text)}",
            hint="write a number followed by s, m, h, d or w, e.g. 7d",
        )
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds > _MAX_DURATION_S:
        raise UsageError(
            f"duration {quoted(text)} is too long", hint="use at most 100 years, e.g. 5200w"
        )
    return timedelta(seconds=seconds)


def since_start(since: str | None, now: datetime) -> datetime | None:
    """`since` as a duration back from now (`7d`) or an ISO time; None for no limit."""
    if not since:
        return None
    try:
        return now - parse_duration(since)
    except UsageError:
        try:
            return parse_iso(since)
        except ValueError:
            raise UsageError(
                f"since {quoted(since)} is neither a duration nor a date",
                hint="give a duration (30s, 15m, 12h, 7d, 4w) or a date or time"
                " (2026-11-30, 2026-11-30T09:00:00Z)",
            ) from None


# The variables git dates its commits by. A command run with them set (importing past
# decisions) records its decisions at that time too, so the ledger and the history agree.
GIT_DATES = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
_GIT_RAW_DATE = re.compile(r"^\s*@?(\d{9,11})(?:\s+([+-])(\d{2})(\d{2}))?\s*$")


def git_date(environment: Mapping[str, str]) -> datetime | None:
    """The time GIT_AUTHOR_DATE (else GIT_COMMITTER_DATE) gives, in the spellings git reads
    most: ISO 8601, git's own `@1773050400 +0000`, RFC 2822; None when neither is set; a usage
    error that says what to write when one cannot be read."""
    for name in GIT_DATES:
        text = environment.get(name)
        if text:
            moment = _read_git_date(text)
            if moment is None:
                raise UsageError(
                    f"{name} {quoted(text)} is not a time feedbackd reads",
                    hint="write it as ISO 8601 (2026-03-02T09:30:00Z), @UNIX_SECONDS or RFC 2822",
                )
            return moment
    return None


def _read_git_date(text: str) -> datetime | None:
    raw = _GIT_RAW_DATE.match(text)
    if raw:
        return datetime.fromtimestamp(int(raw.group(1)), UTC)
    try:
        return parse_iso(re.sub(r"\s+([+-]\d{2}:?\d{2})$", r"\1", text.strip()))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
