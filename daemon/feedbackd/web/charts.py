"""Small server-drawn SVG charts for a skill: reputation over time, ratings, price history.

Points are spread evenly in time order (ratings arrive in bursts; an even spread keeps every one
visible), and each chart names its last value, so it reads without axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedbackd.core.wording import counted
from feedbackd.web.html import e

WIDTH, HEIGHT, PAD = 240.0, 56.0, 4.0


def line(title: str, points: Sequence[dict[str, Any]], key: str, low: float, high: float) -> str:
    values = [float(p[key]) for p in points]
    coords = _coords(values, low, high)
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    shape = f'<polyline points="{path}" class="line"/>' if len(coords) > 1 else _dots(coords)
    return _frame(title, values, shape, f"{values[-1]:.2f}" if values else "—")


def bars(title: str, points: Sequence[dict[str, Any]], key: str, low: int, high: int) -> str:
    values = [float(p[key]) for p in points]
    step = (WIDTH - 2 * PAD) / max(1, len(values))
    shapes = "".join(
        f'<rect x="{PAD + i * step:.1f}" y="{y:.1f}" width="{max(1.0, step - 1):.1f}"'
        f' height="{HEIGHT - PAD - y:.1f}" class="bar r{int(v)}"/>'
        for i, (v, (_, y)) in enumerate(zip(values, _coords(values, low - 1, high), strict=True))
    )
    average = f"avg {sum(values) / len(values):.1f}" if values else "—"
    return _frame(title, values, shapes, average)


def steps(title: str, points: Sequence[dict[str, Any]], key: str) -> str:
    values = [float(p[key]) for p in points]
    high = max(values, default=1.0) * 1.1
    coords = _coords(values, 0.0, high)
    corners: list[tuple[float, float]] = []
    for index, (x, y) in enumerate(coords):
        if index:
            corners.append((x, corners[-1][1]))
        corners.append((x, y))
    if len(coords) == 1:  # one price so far: it has held all along
        corners = [(PAD, coords[0][1]), (WIDTH - PAD, coords[0][1])]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in corners)
    shape = f'<polyline points="{path}" class="line"/>' if len(corners) > 1 else _dots(coords)
    return _frame(title, values, shape, f"{values[-1]:g}" if values else "—")


def _coords(values: Sequence[float], low: float, high: float) -> list[tuple[float, float]]:
    span = (high - low) or 1.0
    count = len(values)
    step = (WIDTH - 2 * PAD) / max(1, count - 1)
    return [
        (
            PAD + index * step if count > 1 else WIDTH / 2,
            HEIGHT - PAD - (min(max(v, low), high) - low) / span * (HEIGHT - 2 * PAD),
        )
        for index, v in enumerate(values)
    ]


def _dots(coords: Sequence[tuple[float, float]]) -> str:
    return "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" class="dot"/>' for x, y in coords)


def _frame(title: str, values: Sequence[float], shapes: str, last: str) -> str:
    label = f"{title}: {counted(len(values), 'point')}, latest {last}"
    empty = '<text x="8" y="32" class="none">no data yet</text>' if not values else ""
    return (
        f'<figure class="chart"><figcaption>{e(title)} <b>{e(last)}</b></figcaption>'
        f'<svg viewBox="0 0 {WIDTH:g} {HEIGHT:g}" role="img" aria-label="{e(label)}">'
        f"{shapes}{empty}</svg></figure>"
    )
