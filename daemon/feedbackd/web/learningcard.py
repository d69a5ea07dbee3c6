"""The agent page's "Is it learning?" card: the unedited-approval rate and the rejection rate per
week as one small server-drawn SVG chart (the approach of charts.py), the totals, and the fields
curators correct most.

Periods are evenly spaced in time, so each gets the same width; a period with nothing to rate
(no approval, no decision) leaves a gap in its line rather than a made-up zero. The chart
stretches to the card's width (its lines keep their width: non-scaling strokes, panel.css).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedbackd.core.wording import counted, duration_text
from feedbackd.web.charts import PAD, WIDTH
from feedbackd.web.html import e, facts_line

HEIGHT = 120.0
FIELDS_LISTED = 8


def learning_card(stats: dict[str, Any]) -> str:
    total, periods = stats["total"], stats["periods"]
    if not total["decided"]:
        body = '<p class="empty">No decisions yet: the curve starts with the first one.</p>'
    else:
        body = f"{_facts(total)}{rates_chart(periods)}{_fields(stats['fields'])}"
    return (
        '<section class="card learning"><h2>Is it learning?</h2>'
        f'<p class="hint">per {e(stats["by"])}, from the decisions HEAD holds (reverted ones'
        f" and forgotten lessons left out)</p>{body}</section>"
    )


def _facts(total: dict[str, Any]) -> str:
    rate, per = total["unedited_rate"], total["corrections_per_approval"]
    facts = [
        f"{total['decided']} decided",
        f"{_percent(rate)} approved unedited",
        f"{'—' if per is None else f'{per:.2f}'} corrections per approval",
        f"{_percent(_rejection_rate(total))} rejected",
        f"median {duration_text(total['median_decision_s'])} from draft to decision",
    ]
    return facts_line(facts)


def rates_chart(periods: Sequence[dict[str, Any]]) -> str:
    """Two lines over the periods, 0 to 100 %: unedited approvals (rising is learning) and
    rejections (falling is learning)."""
    unedited = [p["unedited_rate"] for p in periods]
    rejected = [_rejection_rate(p) for p in periods]
    grid = "".join(
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{_y(v):.1f}" y2="{_y(v):.1f}" class="grid"/>'
        for v in (0.0, 0.5, 1.0)
    )
    first, last = (periods[0]["start"], periods[-1]["start"]) if periods else ("", "")
    label = (
        f"Unedited approvals and rejections per period, {counted(len(periods), 'period')}"
        f" from {first}"
        f" to {last}; latest {_percent(_last(unedited))} unedited,"
        f" {_percent(_last(rejected))} rejected"
    )
    return (
        '<figure class="chart rates"><figcaption>'
        f'<span class="key unedited">unedited approvals <b>{_percent(_last(unedited))}</b></span>'
        f'<span class="key rejected">rejections <b>{_percent(_last(rejected))}</b></span>'
        f"</figcaption>"
        f'<svg viewBox="0 0 {WIDTH:g} {HEIGHT:g}" preserveAspectRatio="none" role="img"'
        f' aria-label="{e(label)}">{grid}'
        f"{_series(unedited, 'unedited')}{_series(rejected, 'rejected')}</svg>"
        f'<div class="span"><span>{e(first)}</span><span>lines at 0, 50 and 100 %</span>'
        f"<span>{e(last)}</span></div></figure>"
    )


def _series(values: Sequence[float | None], kind: str) -> str:
    """A line through the known values; a run of one value is a dot."""
    step = (WIDTH - 2 * PAD) / max(1, len(values) - 1)
    runs: list[list[tuple[float, float]]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        x = PAD + index * step if len(values) > 1 else WIDTH / 2
        runs[-1].append((x, _y(value)))
    shapes = []
    for run in runs:
        if len(run) == 1:  # a line of no length, drawn as a round dot (its stroke's cap)
            shapes.append(f'<polyline points="{_points(run * 2)}" class="dot"/>')
        elif run:
            shapes.append(f'<polyline points="{_points(run)}"/>')
    return f'<g class="{kind}">{"".join(shapes)}</g>'


def _points(run: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in run)


def _fields(fields: dict[str, int]) -> str:
    if not fields:
        return '<p class="empty">No field corrected yet.</p>'
    items = "".join(
        f'<li><code>{e(name)}</code> <span class="n">{count}</span></li>'
        for name, count in list(fields.items())[:FIELDS_LISTED]
    )
    return f'<h3>Most corrected fields</h3><ol class="fields-corrected">{items}</ol>'


def _y(value: float) -> float:
    return HEIGHT - PAD - min(max(value, 0.0), 1.0) * (HEIGHT - 2 * PAD)


def _rejection_rate(row: dict[str, Any]) -> float | None:
    return row["rejected"] / row["decided"] if row["decided"] else None


def _last(values: Sequence[float | None]) -> float | None:
    return next((value for value in reversed(values) if value is not None), None)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
