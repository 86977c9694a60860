"""Charts as inline SVG strings, drawn with the standard library: nothing loads from a network.

Every label is escaped; coordinates are rounded so that the same data gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

WIDTH = 400
HEIGHT = 200
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 30, 34

Format = Callable[[float], str]

STYLE = {
    "chart": 'role="img"',
    "chart-title": 'font-size="13" font-weight="600" fill="#222"',
    "grid": 'stroke="#ddd"',
    "tick": 'font-size="11" fill="#555"',
    "bars": 'fill="#4c78a8"',
    "ceiling": 'stroke="#c0392b" stroke-dasharray="5 4"',
    "ceiling-label": 'font-size="11" fill="#c0392b"',
    "line": 'fill="none" stroke="#4c78a8" stroke-width="2"',
    "dot": 'fill="#4c78a8"',
    "projected-line": 'stroke="#e67e22" stroke-dasharray="3 3"',
    "projected": 'fill="none" stroke="#e67e22" stroke-width="2"',
}


def _look(name: str) -> str:
    """The class and presentation attributes of one kind of mark: the SVG stands alone."""
    return f'class="bl-{name}" {STYLE[name]}'


def nice_top(value: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at or above ``value`` (1 when there is nothing to show)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _frame(
    title: str, y_top: float, y_format: Format, x_first: str, x_last: str, x_label: str
) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {_look("chart")} '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="18" {_look("chart-title")}>{escape(title)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{LEFT}" y1="{_num(y)}" x2="{LEFT + plot_w}" y2="{_num(y)}" '
            f"{_look('grid')}/>"
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{_num(y + 4)}" text-anchor="end" {_look("tick")}>'
            f"{escape(y_format(y_top * fraction))}</text>"
        )
    base = TOP + plot_h
    parts.append(
        f'<text x="{LEFT}" y="{base + 16}" {_look("tick")}>{escape(x_first)}</text>'
        f'<text x="{LEFT + plot_w}" y="{base + 16}" text-anchor="end" {_look("tick")}>'
        f"{escape(x_last)}</text>"
        f'<text x="{LEFT + plot_w / 2:.0f}" y="{base + 28}" text-anchor="middle" '
        f"{_look('tick')}>{escape(x_label)}</text>"
    )
    return parts


def bar_chart(
    values: Sequence[float],
    *,
    title: str,
    x_label: str = "step",
    y_format: Format = lambda v: f"{v:,.0f}",
    first_x: int = 0,
) -> str:
    """One bar per value, drawn as a single path so a thousand bars stay small."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = nice_top(max(values, default=0))
    last = first_x + max(len(values) - 1, 0)
    right = str(last) if len(values) > 1 else ""  # one bar: one label, not "0 ... 0"
    parts = _frame(title, top, y_format, str(first_x), right, x_label)
    if values:
        slot = plot_w / len(values)
        width = max(slot * 0.8, 0.5)
        commands = []
        for i, value in enumerate(values):
            h = plot_h * max(value, 0) / top
            x = LEFT + i * slot + (slot - width) / 2
            y = TOP + plot_h - h
            commands.append(f"M{_num(x)} {_num(y)}h{_num(width)}v{_num(h)}h{_num(-width)}z")
        parts.append(f'<path d="{"".join(commands)}" {_look("bars")}/>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    points: Sequence[tuple[float, float]],
    *,
    title: str,
    x_label: str = "step",
    y_format: Format = lambda v: f"${v:,.2f}",
    ceiling: float | None = None,
    ceiling_label: str = "ceiling",
    projected: tuple[float, float] | None = None,
) -> str:
    """A line through ``points`` (x ascending), an optional dashed ceiling and a hollow marker
    for a projected next point."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    every = [*points, *([projected] if projected else [])]
    xs = [x for x, _ in every]
    y_max = max([y for _, y in every] + ([ceiling] if ceiling is not None else []), default=0)
    top = nice_top(y_max)
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span = (x1 - x0) or 1.0

    def at(x: float, y: float) -> str:
        return f"{_num(LEFT + plot_w * (x - x0) / span)},{_num(TOP + plot_h * (1 - y / top))}"

    parts = _frame(title, top, y_format, _num(x0), _num(x1), x_label)
    if ceiling is not None:
        y = TOP + plot_h * (1 - ceiling / top)
        parts.append(
            f'<line x1="{LEFT}" y1="{_num(y)}" x2="{LEFT + plot_w}" y2="{_num(y)}" '
            f'{_look("ceiling")}/><text x="{LEFT + plot_w}" y="{_num(y - 4)}" '
            f'text-anchor="end" {_look("ceiling-label")}>{escape(ceiling_label)}</text>'
        )
    if len(points) > 1:
        line = " ".join(at(x, y) for x, y in points)
        parts.append(f'<polyline points="{line}" {_look("line")}/>')
    if len(points) <= 60:
        for x, y in points:
            cx, cy = at(x, y).split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" {_look("dot")}/>')
    if projected is not None:
        cx, cy = at(*projected).split(",")
        if points:
            px, py = at(*points[-1]).split(",")
            parts.append(
                f'<line x1="{px}" y1="{py}" x2="{cx}" y2="{cy}" {_look("projected-line")}/>'
            )
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" {_look("projected")}/>')
    parts.append("</svg>")
    return "".join(parts)
