"""The text of an eval note (`eval --note`): git keeps one note per revision, and several agents'
lessons may be evaluated at the same revision, so a note holds each agent's report, one JSON
object after another. With one agent it is that agent's report alone, as `git log
--notes=feedbackd-eval` shows it."""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def reports_in(note: str | None) -> list[dict[str, Any]]:
    """The JSON objects of a note, in order; reading stops at the first thing that is not one
    (a user may have edited the note: what came before still counts)."""
    found: list[dict[str, Any]] = []
    text, at = note or "", 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return found
        try:
            value, at = _DECODER.raw_decode(text, at)
        except ValueError:
            return found
        if isinstance(value, dict):
            found.append(value)


def note_with(note: str | None, report: dict[str, Any]) -> str:
    """The note `note` with `report` in it: its agent's older report goes, the other agents'
    reports stay as they were."""
    kept = [each for each in reports_in(note) if each.get("agent") != report.get("agent")]
    return "\n".join(json.dumps(each, indent=2) + "\n" for each in [*kept, report])


def report_of(note: str | None, agent: str) -> dict[str, Any] | None:
    """The report of `agent` in a note; None when it holds none."""
    return next((each for each in reports_in(note) if each.get("agent") == agent), None)
