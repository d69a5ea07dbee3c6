"""The agent page's "Would the lessons have helped?" card, beside the learning curve: the newest
eval of the agent kept with `feedbackd eval --note` (app/commands/evaluating.saved_eval), as
two bars (with the lessons, and the baseline), the difference with its 95 % interval, how many
later approvals it was scored on, and at which revision; a hint how to keep one when none is.

A note is text a user may edit: every value is checked for its type before it is shown (one of
the wrong type shows as a dash) and escaped, so a note edited into anything breaks nothing.
"""

from __future__ import annotations

import math
from typing import Any

from feedbackd.core.wording import counted
from feedbackd.web.html import e

WIDTH, BAR, GAP = 300.0, 14.0, 8.0


def eval_card(agent: str, saved: dict[str, Any] | None) -> str:
    if saved is None:
        body = (
            '<p class="empty">No eval kept yet. To keep one: '
            f"<code>feedbackd eval {e(agent)} --note</code></p>"
        )
    else:
        body = _saved(agent, saved)
    return (
        '<section class="card eval"><h2>Would the lessons have helped?</h2>'
        '<p class="hint">the last eval kept with <code>--note</code>: its later approvals'
        " redone with the lessons of a revision</p>"
        f"{body}</section>"
    )


def _saved(agent: str, saved: dict[str, Any]) -> str:
    report = saved["report"]
    against = report.get("against") if isinstance(report.get("against"), dict) else {}
    mine, theirs = _number(report.get("score")), _number(against.get("score"))
    baseline = _baseline(against.get("at"))
    return (
        f"{_bars(mine, theirs, baseline)}"
        f'<p class="delta">{_delta(report)}</p>'
        f'<p class="facts">{e(_items(report))}</p>'
        f'<p class="facts">{_revision(saved)}</p>'
        f'<p class="hint-line">a newer one: <code>feedbackd eval {e(agent)} --note</code></p>'
    )


def _bars(mine: float | None, theirs: float | None, baseline: str) -> str:
    """Two bars from 0 to 1: the score with the lessons, and the baseline's."""
    rows = [("with these lessons", mine, "mine"), (baseline, theirs, "theirs")]
    height = 2 * BAR + GAP
    bars = "".join(
        f'<rect x="0" y="{n * (BAR + GAP):g}" width="{WIDTH * _unit(value):.1f}"'
        f' height="{BAR:g}" class="{kind}"/>'
        for n, (_, value, kind) in enumerate(rows)
    )
    label = "; ".join(f"{name} {_score(value)}" for name, value, _ in rows)
    keys = "".join(
        f'<li class="{kind}"><b>{_score(value)}</b> {e(name)}</li>' for name, value, kind in rows
    )
    return (
        f'<figure class="scores"><svg viewBox="0 0 {WIDTH:g} {height:g}"'
        f' preserveAspectRatio="none" role="img" aria-label="{e(label)}">'
        f'<rect x="0" y="0" width="{WIDTH:g}" height="{height:g}" class="track"/>{bars}</svg>'
        f'<ul class="keys">{keys}</ul></figure>'
    )


def _delta(report: dict[str, Any]) -> str:
    delta = _number(report.get("delta"))
    ci = report.get("ci95")
    low, high = (None, None)
    if isinstance(ci, list) and len(ci) == 2:
        low, high = _number(ci[0]), _number(ci[1])
    shown = "—" if delta is None else f"{delta:+.2f}"
    word = "" if delta is None else " better" if delta > 0 else " worse" if delta < 0 else ""
    interval = f" (95 % {low:.2f} to {high:.2f})" if low is not None and high is not None else ""
    return f"<b>{e(shown)}</b>{e(word)}{e(interval)}"


def _items(report: dict[str, Any]) -> str:
    items, failed = _count(report.get("items")), _count(report.get("failed"))
    said = "—" if items is None else counted(items, "later approval")
    return f"on {said}" + (f", {failed} failed" if failed else "")


def _revision(saved: dict[str, Any]) -> str:
    at = str(saved["commit"])  # the revision the note is on: the report's "at" may be edited
    date = str(saved.get("date") or "")[:10]
    since = saved.get("lessons_since") or 0
    changed = (
        "the lessons have not changed since"
        if not since
        else f"the lessons changed {counted(since, 'time')} since"
    )
    return f"lessons as of <code>{e(at[:7])}</code>{f' ({e(date)})' if date else ''} · {e(changed)}"


def _baseline(at: object) -> str:
    if isinstance(at, str) and at:
        return f"with those of {at[:7]}"
    return "without lessons"


def _number(value: object) -> float | None:
    """A finite number, or None for anything else (a note is text a user may edit)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past what a float holds
        return None
    return number if math.isfinite(number) else None


def _count(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number >= 0 and number < 1e9 else None


def _unit(value: float | None) -> float:
    return 0.0 if value is None else min(max(value, 0.0), 1.0)


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
