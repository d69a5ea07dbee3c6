"""A small line chart for the README: medians against a baseline as something grows.

The chart is drawn as SVG (no plotting library needed) and turned into a PNG by Debian's headless
`chromium` through Playwright, the browser the web panel's tests already use. Without chromium
only the SVG is written, and the caller is told.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from html import escape
from pathlib import Path

from playwright.sync_api import sync_playwright

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 44, 40, 56
COLOURS = ("#1f6feb", "#8b949e", "#d1242f", "#2da44e")


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]  # one per x, same order
    dashed: bool = False


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    xs: list[int]  # drawn on a log scale: sizes that grow by factors
    series: list[Series]


def svg(chart: Chart) -> str:
    top = _nice_ceiling(1.2 * max(max(s.values) for s in chart.series))  # room for the legend
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}"'
        ' font-family="DejaVu Sans, sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">'
        f"{escape(chart.title)}</text>",
        *_axes(chart, top),
        *(_line(chart, s, top, COLOURS[i % len(COLOURS)]) for i, s in enumerate(chart.series)),
        *_legend(chart),
        "</svg>",
    ]
    return "\n".join(parts)


def write_chart(chart: Chart, png: Path) -> Path:
    """Write `png` (and the SVG beside it); the path of what was written last."""
    source = png.with_suffix(".svg")
    source.write_text(svg(chart), encoding="utf-8")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return source
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        page = launched.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(source.absolute().as_uri())
        page.screenshot(path=str(png))
        launched.close()
    return png


# --- drawing --------------------------------------------------------------------------------
def _x(chart: Chart, value: int) -> float:
    low, high = math.log10(min(chart.xs)), math.log10(max(chart.xs))
    share = 0.5 if high == low else (math.log10(value) - low) / (high - low)
    return LEFT + share * (WIDTH - LEFT - RIGHT)


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - value / top * (HEIGHT - TOP - BOTTOM)


def _axes(chart: Chart, top: float) -> list[str]:
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts = [f'<path d="M{LEFT},{TOP} V{bottom} H{right}" stroke="#444" fill="none"/>']
    for step in range(5):
        value = top * step / 4
        y = _y(value, top)
        parts.append(f'<path d="M{LEFT},{y:.1f} H{right}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    for value in chart.xs:
        parts.append(
            f'<text x="{_x(chart, value):.1f}" y="{bottom + 18}" text-anchor="middle">'
            f"{value:,}</text>"
        )
    parts.append(
        f'<text x="{(LEFT + right) / 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        f"{escape(chart.x_label)}</text>"
    )
    parts.append(
        f'<text transform="translate(16,{(TOP + bottom) / 2}) rotate(-90)"'
        f' text-anchor="middle">{escape(chart.y_label)}</text>'
    )
    return parts


def _line(chart: Chart, series: Series, top: float, colour: str) -> str:
    points = " ".join(
        f"{_x(chart, x):.1f},{_y(v, top):.1f}" for x, v in zip(chart.xs, series.values, strict=True)
    )
    dash = ' stroke-dasharray="6 4"' if series.dashed else ""
    dots = "".join(
        f'<circle cx="{_x(chart, x):.1f}" cy="{_y(v, top):.1f}" r="3" fill="{colour}"/>'
        for x, v in zip(chart.xs, series.values, strict=True)
    )
    return (
        f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>' + dots
    )


def _legend(chart: Chart) -> list[str]:
    parts = []
    for index, series in enumerate(chart.series):
        y = TOP + 8 + 18 * index
        colour = COLOURS[index % len(COLOURS)]
        dash = ' stroke-dasharray="6 4"' if series.dashed else ""
        parts.append(
            f'<path d="M{LEFT + 12},{y} h24" stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{LEFT + 42}" y="{y + 4}">{escape(series.name)}</text>'
        )
    return parts


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (a round top for the y axis)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)
