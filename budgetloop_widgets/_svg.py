"""Charts as inline SVG strings, drawn with the standard library: nothing loads from a network.

Every label is escaped; coordinates are rounded so that the same data gives the same bytes.
Colours are the theme's (``--jp-*`` variables in a ``style`` attribute) with light fallbacks,
so a chart shown on its own follows the front end's theme too. A long run is drawn from at most
``MAX_POINTS`` points, so a chart's size does not grow with the run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from html import escape

from ._text import count, text

WIDTH = 400
HEIGHT = 200
RIGHT, TOP, BOTTOM = 16, 30, 34
CHAR_WIDTH = 6.6  # of an 11px sans-serif digit, rounded up: the tick labels' width budget
MAX_POINTS = 300

Format = Callable[[float], str]

FG = "var(--jp-ui-font-color1, #222)"
MUTED = "var(--jp-ui-font-color2, #555)"
GRID = "var(--jp-border-color2, #ddd)"
LINE = "var(--jp-brand-color1, #1976d2)"
ALARM = "var(--jp-error-color1, #c0392b)"
NEXT = "var(--jp-warn-color1, #e67e22)"

STYLE = {
    "chart": 'role="img"',
    "chart-title": f'font-size="13" font-weight="600" style="fill:{FG}"',
    "grid": f'style="stroke:{GRID}"',
    "tick": f'font-size="11" style="fill:{MUTED}"',
    "empty": f'font-size="12" text-anchor="middle" style="fill:{MUTED}"',
    "bars": f'style="fill:{LINE}"',
    "ceiling": f'stroke-dasharray="5 4" style="stroke:{ALARM}"',
    "ceiling-label": f'font-size="11" text-anchor="end" style="fill:{ALARM}"',
    "line": f'fill="none" stroke-width="2" style="stroke:{LINE}"',
    "dot": f'style="fill:{LINE}"',
    "projected-line": f'stroke-dasharray="3 3" style="stroke:{NEXT}"',
    "projected": f'fill="none" stroke-width="2" style="stroke:{NEXT}"',
    "baseline": f'fill="none" stroke-width="1.5" stroke-dasharray="6 3" style="stroke:{MUTED}"',
    "baseline-label": f'font-size="11" style="fill:{MUTED}"',
}


def _look(name: str) -> str:
    """The class and presentation of one kind of mark: the SVG stands alone."""
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
    out = f"{value:.1f}"
    return out[:-2] if out.endswith(".0") else out


_POINT_ZERO = re.compile(r"\.0(?![0-9])")  # the ".0" that ``_num`` drops, in a run of numbers


def _nums(formatted: str) -> str:
    """Many numbers formatted with ``:.1f`` at once, written as ``_num`` writes each (one pass
    over the joined text instead of a call per number: a long run's chart has hundreds)."""
    return _POINT_ZERO.sub("", formatted)


def bucketed(values: Sequence[float], limit: int = MAX_POINTS) -> tuple[list[float], int]:
    """At most ``limit`` values: the largest of each run of ``size`` consecutive ones."""
    size = max(-(-len(values) // limit), 1)
    if size == 1:
        return list(values), 1
    return [max(values[i : i + size]) for i in range(0, len(values), size)], size


def _frame(
    title: str,
    y_top: float | None,
    y_format: Format,
    x_first: str,
    x_last: str,
    x_label: str,
    below: int = 0,
) -> tuple[list[str], int]:
    """The title, the grid and its labels; returns the parts and the plot's left edge, which
    is as far right as the widest y label needs, so no label is clipped. ``below`` is room
    added under the x axis's label (a key)."""
    labels: list[tuple[float, str]] = []
    if y_top is not None:
        for fraction in (0.0, 0.5, 1.0):
            label = y_format(y_top * fraction)
            if all(label != seen for _, seen in labels):  # "0, 0, 1" says nothing
                labels.append((fraction, label))
    widest = max((len(label) for _, label in labels), default=1)
    left = max(40, math.ceil(widest * CHAR_WIDTH) + 10)
    plot_w, plot_h = WIDTH - left - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {_look("chart")} '
        f'viewBox="0 0 {WIDTH} {HEIGHT + below}" width="{WIDTH}" height="{HEIGHT + below}" '
        f'font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        f'<text x="4" y="16" {_look("chart-title")}>{escape(title)}</text>',
    ]
    for fraction, label in labels:
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{left}" y1="{_num(y)}" x2="{left + plot_w}" y2="{_num(y)}" '
            f"{_look('grid')}/>"
            f'<text x="{left - 6}" y="{_num(y + 4)}" text-anchor="end" {_look("tick")}>'
            f"{escape(label)}</text>"
        )
    base = TOP + plot_h
    parts.append(
        f'<text x="{left}" y="{base + 14}" {_look("tick")}>{escape(x_first)}</text>'
        f'<text x="{left + plot_w}" y="{base + 14}" text-anchor="end" {_look("tick")}>'
        f"{escape(x_last)}</text>"
        f'<text x="{left + plot_w / 2:.0f}" y="{base + 28}" text-anchor="middle" '
        f"{_look('tick')}>{escape(x_label)}</text>"
    )
    return parts, left


def _empty(parts: list[str], left: int, note: str) -> str:
    x = left + (WIDTH - left - RIGHT) / 2
    y = TOP + (HEIGHT - TOP - BOTTOM) / 2
    parts.append(f'<text x="{_num(x)}" y="{_num(y)}" {_look("empty")}>{escape(note)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    values: Sequence[float],
    *,
    title: str,
    x_label: str = "step",
    y_format: Format = count,
    first_x: int = 0,
    empty: str = "no steps yet",
    max_points: int = MAX_POINTS,
    ceilings: Sequence[tuple[float, str]] = (),
) -> str:
    """One bar per value (per bucket of values past ``max_points``), drawn as a single path,
    with dashed ``ceilings`` (a value and its label each)."""
    if not values:
        parts, left = _frame(title, None, y_format, "", "", x_label)
        return _empty(parts, left, empty)
    shown, size = bucketed(values, max_points)
    if size > 1:
        title = f"{title} (largest of each {size})"
    top = nice_top(max([*shown, *(value for value, _ in ceilings)]))
    last = first_x + len(values) - 1
    right = str(last) if len(values) > 1 else ""  # one bar: one label, not "0 ... 0"
    parts, left = _frame(title, top, y_format, str(first_x), right, x_label)
    plot_w, plot_h = WIDTH - left - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(shown)
    width = max(slot * 0.8, 0.5)
    commands = []
    for i, value in enumerate(shown):
        h = plot_h * max(value, 0) / top
        x = left + i * slot + (slot - width) / 2
        y = TOP + plot_h - h
        commands.append(f"M{x:.1f} {y:.1f}h{width:.1f}v{h:.1f}h{-width:.1f}z")
    parts.append(f'<path d="{_nums("".join(commands))}" {_look("bars")}/>')
    _dashed(parts, left, plot_w, plot_h, top, ceilings, at_left=False)
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    points: Sequence[tuple[float, float]],
    *,
    title: str,
    x_label: str = "step",
    y_format: Format = count,
    ceilings: Sequence[tuple[float, str]] = (),
    projected: tuple[float, float] | None = None,
    empty: str = "nothing spent yet",
    max_points: int = MAX_POINTS,
    ceiling: float | None = None,
    ceiling_label: str = "ceiling",
    baseline: Sequence[tuple[float, float]] = (),
    baseline_label: str = "",
) -> str:
    """A line through ``points`` (x ascending; every n-th past ``max_points``, and the last),
    dashed ``ceilings`` (a value and its label each; ``ceiling`` and ``ceiling_label`` add one
    more) and a hollow marker for a projected next point. ``baseline`` is a second line, thin
    and dashed, under the first (thinned as it is), said by ``baseline_label`` under the axis."""
    if ceiling is not None:
        ceilings = [*ceilings, (ceiling, ceiling_label)]
    if not points and projected is None:
        parts, left = _frame(title, None, y_format, "", "", x_label)
        return _empty(parts, left, empty)
    size = max(-(-len(points) // max_points), 1)
    if size > 1:
        points = [*points[::size], *([points[-1]] if (len(points) - 1) % size else [])]
    base_size = max(-(-len(baseline) // max_points), 1)
    if base_size > 1:
        baseline = [
            *baseline[::base_size],
            *([baseline[-1]] if (len(baseline) - 1) % base_size else []),
        ]
    every = [*points, *baseline, *([projected] if projected else [])]
    xs = [x for x, _ in every]
    y_max = max([y for _, y in every] + [value for value, _ in ceilings])
    top = nice_top(y_max)
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0
    below = 16 if baseline_label else 0
    parts, left = _frame(title, top, y_format, _num(x0), _num(x1), x_label, below)
    plot_w, plot_h = WIDTH - left - RIGHT, HEIGHT - TOP - BOTTOM
    if len(baseline) > 1:
        drawn = " ".join(f"{left + plot_w * (x - x0) / span:.1f},"
                         f"{TOP + plot_h * (1 - y / top):.1f}" for x, y in baseline)  # fmt: skip
        parts.append(f'<polyline points="{_nums(drawn)}" {_look("baseline")}/>')
    if baseline_label:
        parts.append(
            f'<text x="4" y="{HEIGHT + below - 4}" {_look("baseline-label")}>'
            f"{escape(baseline_label)}</text>"
        )

    def at(x: float, y: float) -> tuple[str, str]:
        return _num(left + plot_w * (x - x0) / span), _num(TOP + plot_h * (1 - y / top))

    # each label at the right end, unless the projected next point is drawn there: the left
    _dashed(parts, left, plot_w, plot_h, top, ceilings, at_left=projected is not None)
    # "x,y" of each point, as ``at`` writes them, formatted in one pass
    pairs = _nums(
        " ".join(
            f"{left + plot_w * (x - x0) / span:.1f},{TOP + plot_h * (1 - y / top):.1f}"
            for x, y in points
        )
    ).split(" ")
    if len(points) > 1:
        parts.append(f'<polyline points="{" ".join(pairs)}" {_look("line")}/>')
    if len(points) <= 60:
        dot = _look("dot")
        for pair in pairs if points else ():
            cx, cy = pair.split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" {dot}/>')
    if projected is not None:
        cx, cy = at(*projected)
        if points:
            px, py = pairs[-1].split(",")
            parts.append(
                f'<line x1="{px}" y1="{py}" x2="{cx}" y2="{cy}" {_look("projected-line")}/>'
            )
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" {_look("projected")}/>')
    parts.append("</svg>")
    return "".join(parts)


def _dashed(
    parts: list[str],
    left: int,
    plot_w: float,
    plot_h: float,
    top: float,
    ceilings: Sequence[tuple[float, str]],
    *,
    at_left: bool,
) -> None:
    """A dashed line for each ceiling, labelled above it, unless that would reach into the
    title or onto a label already placed: then below it."""
    at_x, look = left + plot_w, _look("ceiling-label")
    if at_left:
        at_x, look = left + 4, look.replace('text-anchor="end"', 'text-anchor="start"')
    placed: list[float] = []
    for value, label in ceilings:
        y = TOP + plot_h * (1 - value / top)
        label_y = y - 4
        if label_y - 11 < 20 or any(abs(label_y - seen) < 12 for seen in placed):
            label_y = y + 13
        placed.append(label_y)
        parts.append(
            f'<line x1="{left}" y1="{_num(y)}" x2="{left + plot_w}" y2="{_num(y)}" '
            f'{_look("ceiling")}/><text x="{at_x}" y="{_num(label_y)}" '
            f"{look}>{escape(label)}</text>"
        )


SERIES = (
    f'fill="none" stroke-width="2" style="stroke:{LINE}"',
    f'fill="none" stroke-width="2" stroke-dasharray="6 3" style="stroke:{NEXT}"',
)


def _thinned(points: Sequence[tuple[float, float]], limit: int) -> Sequence[tuple[float, float]]:
    """Every n-th point and the last, at most about ``limit`` of them."""
    size = max(-(-len(points) // limit), 1)
    if size == 1:
        return points
    return [*points[::size], *([points[-1]] if (len(points) - 1) % size else [])]


KEY_ROW = 14  # the height of a line of the key under a chart of lines


def _fit(label: str, room: float, *, keep_end: bool = False) -> str:
    """``label`` cut with an ellipsis to what ``room`` pixels of 11px text hold: its end cut, or
    its start (``keep_end``: a ceiling's label keeps its figure)."""
    most = max(int(room / CHAR_WIDTH), 4)
    if len(label) <= most:
        return label
    return "…" + label[-(most - 1) :] if keep_end else label[: most - 1] + "…"


def _full(label: str, shown: str) -> str:
    """The whole label as the text's tooltip, where the chart shows it cut."""
    return "" if shown == label else f"<title>{text(label)}</title>"


def _ceiling_label(
    left: float,
    plot_w: float,
    y: float,
    label: str,
    marker: float | None,
    taken: list[tuple[float, float, float]],
) -> tuple[float, float, str]:
    """Where a ceiling's label goes (its right end and baseline) and what of it is shown: at
    the right of the plot, or left of the marker where only that side holds it whole (cut to
    the wider side where neither does), so the marker never crosses it; under its line where
    above it would sit on a label already placed or on the title. The place is added to
    ``taken``, for the labels after it."""
    right = left + plot_w - 2
    room = plot_w - 6
    full = len(label) * CHAR_WIDTH
    if marker is not None:
        right_room, left_room = right - marker - 4, marker - left - 6
        if full > right_room and (full <= left_room or left_room > right_room):
            right, room = marker - 4, left_room
        else:
            room = right_room
    shown = _fit(label, room, keep_end=True)
    width = len(shown) * CHAR_WIDTH
    y_label = y - 4
    clash = any(abs(y_label - ty) < 12 and right - width < tr and right > tl
                for tl, tr, ty in taken)  # fmt: skip
    if clash or y_label - 11 < 20:
        y_label = y + 13
    taken.append((right - width, right, y_label))
    return right, y_label, shown


def lines_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    title: str,
    x_label: str = "step",
    y_format: Format = count,
    ceilings: Sequence[tuple[float, str]] = (),
    marker_x: float | None = None,
    marker_label: str = "",
    empty: str = "nothing spent yet",
    max_points: int = MAX_POINTS,
) -> str:
    """Two lines (at most) on one frame, each named in a key under the chart and drawn from at
    most ``max_points`` points (every n-th, and the last), with dashed ceilings and an optional
    vertical marker at ``marker_x`` (such as where two runs part). A ceiling's label is put
    where it clears the marker, the frame and the labels before it; the marker's label sits at
    the foot of its line, clear of the title."""
    if len(series) > len(SERIES):
        raise ValueError(f"lines_chart: series must be at most {len(SERIES)}, got {len(series)}.")
    series = [(name, _thinned(points, max_points)) for name, points in series]
    every = [p for _, points in series for p in points]
    below = KEY_ROW * len(series)
    if not every:
        parts, left = _frame(title, None, y_format, "", "", x_label)
        return _empty(parts, left, empty)
    xs = [x for x, _ in every]
    top = nice_top(max([y for _, y in every] + [c for c, _ in ceilings]))
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0
    parts, left = _frame(title, top, y_format, _num(x0), _num(x1), x_label, below)
    plot_w, plot_h = WIDTH - left - RIGHT, HEIGHT - TOP - BOTTOM

    def at(x: float, y: float) -> tuple[str, str]:
        return _num(left + plot_w * (x - x0) / span), _num(TOP + plot_h * (1 - y / top))

    mx = None if marker_x is None else left + plot_w * (marker_x - x0) / span
    taken: list[tuple[float, float, float]] = []  # labels placed: left, right, baseline
    for value, label in ceilings:
        y = TOP + plot_h * (1 - value / top)
        parts.append(
            f'<line x1="{left}" y1="{_num(y)}" x2="{left + plot_w}" y2="{_num(y)}" '
            f"{_look('ceiling')}/>"
        )
        x, y_label, shown = _ceiling_label(left, plot_w, y, label, mx, taken)
        parts.append(
            f'<text x="{_num(x)}" y="{_num(y_label)}" {_look("ceiling-label")}>'
            f"{text(shown)}{_full(label, shown)}</text>"
        )
    if mx is not None:
        right = mx > left + plot_w * 0.6  # near the right edge the label reads leftwards
        anchor, lx = ("end", mx - 3) if right else ("start", mx + 3)
        parts.append(
            f'<line class="bl-marker" x1="{_num(mx)}" y1="{TOP}" x2="{_num(mx)}" '
            f'y2="{TOP + plot_h}" stroke-dasharray="2 2" style="stroke:{MUTED}"/>'
            f'<text class="bl-marker-label" x="{_num(lx)}" y="{TOP + plot_h - 4}" '
            f'text-anchor="{anchor}" {_look("tick")}>{escape(marker_label)}</text>'
        )
    for n, (name, points) in enumerate(series):
        look = f'class="bl-series-{n}" {SERIES[n]}'
        if len(points) > 1:
            line = " ".join(",".join(at(x, y)) for x, y in points)
            parts.append(f'<polyline points="{line}" {look}/>')
        elif points:
            cx, cy = at(*points[0])
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" {look}/>')
        ky = HEIGHT + KEY_ROW * n + 6
        shown = _fit(name, WIDTH - 40)
        parts.append(
            f'<g class="bl-key"><line x1="8" y1="{ky - 4}" x2="28" y2="{ky - 4}" {SERIES[n]}/>'
            f'<text x="34" y="{ky}" {_look("tick")}>{text(shown)}{_full(name, shown)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
