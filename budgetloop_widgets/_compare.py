"""``CompareView``: two runs side by side, parted at their first divergence.

The divergence is the core's (``budgetloop.first_divergence``: the first step where the model's
text, tool calls or error differ). The steps before it are the same in both runs and are folded
into one line, so the first row the view shows is the step where they part, marked. Both cost
curves are drawn on one chart against the ceilings. The view functions are pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from html import escape
from typing import Any

import ipywidgets as widgets

from budgetloop import Result, Step, first_divergence

from ._status import stop_html
from ._svg import lines_chart
from ._text import plural, text, usd
from ._views import IGNORE_MATH, as_result, step_html, stylesheet

Source = Result | Mapping[str, Any] | str | os.PathLike[str]


def cost_points(result: Result) -> list[tuple[float, float]]:
    """Cumulative cost after each step: (steps taken, dollars), from (0, 0)."""
    total = 0.0
    points: list[tuple[float, float]] = [(0, 0.0)]
    for step in result.steps:
        total += step.cost_usd or 0.0  # an imported step of unknown cost adds none
        points.append((step.index + 1, total))
    return points


def compare_chart(a: Result, b: Result, at: int | None, names: tuple[str, str]) -> str:
    """Both runs' cost so far on one chart, each run's max_cost_usd dashed (one line when
    they are the same), and a marker where the runs part."""
    ceilings: list[tuple[float, str]] = []
    for name, result in zip(names, (a, b), strict=True):
        limit = result.budget.max_cost_usd
        if limit is None:
            continue
        if any(limit == value for value, _ in ceilings):
            ceilings = [(limit, f"max_cost_usd {usd(limit)}")]
        else:
            ceilings.append((limit, f"{name}: max_cost_usd {usd(limit)}"))
    return lines_chart(
        [(names[0], cost_points(a)), (names[1], cost_points(b))],
        title="cost so far, both runs",
        x_label="steps taken",
        y_format=usd,
        ceilings=ceilings,
        marker_x=None if at is None else at,
        marker_label="" if at is None else f"part at step {at}",
    )


def divergence_text(a: Result, b: Result, at: int | None) -> str:
    """One sentence: where the runs part, or that they agree."""
    if at is None:
        return (
            f"The runs agree: all {plural(len(a.steps), 'step')} the same in the model's text, "
            "tool calls and errors."
        )
    if at == 0:
        return "The runs differ from the first step (step 0)."
    return (
        f"The runs agree on steps 0 to {at - 1} and part at step {at}: "
        "the model's text, tool calls or error differ there."
    )


def _cell(steps: tuple[Step, ...], i: int, name: str, open_: bool) -> str:
    if i < len(steps):
        return step_html(steps[i], open_=open_)
    return f'<div class="bl-muted">{text(name)} has no step {i}: it ended before</div>'


def _row(a: Result, b: Result, i: int, names: tuple[str, str], cls: str, open_: bool) -> str:
    return (
        f'<div class="bl-compare-row {cls}" data-step="{i}">'
        f"<div>{_cell(a.steps, i, names[0], open_)}</div>"
        f"<div>{_cell(b.steps, i, names[1], open_)}</div></div>"
    )


def compare_html(a: Result, b: Result, names: tuple[str, str] = ("a", "b")) -> str:
    """The two runs side by side: their stops, the cost chart, then the steps by index; the
    agreeing steps before the divergence folded into one line, the divergence marked and open
    at the top of the list."""
    at = first_divergence(a, b)
    heads = "".join(
        f'<div class="bl-compare-col"><div class="bl-section">{text(name)}</div>'
        f"{stop_html(result)}</div>"
        for name, result in zip(names, (a, b), strict=True)
    )
    parts = [
        f'<div class="bl-compare-cols">{heads}</div>',
        f'<div class="bl-diverge-line">{escape(divergence_text(a, b, at))}</div>',
        f'<div class="bl-charts">{compare_chart(a, b, at, names)}</div>',
        '<div class="bl-compare-box">',
    ]
    longest = max(len(a.steps), len(b.steps))
    agreed = longest if at is None else at
    if agreed:
        rows = "".join(_row(a, b, i, names, "bl-agreed", False) for i in range(agreed))
        parts.append(
            f'<details class="bl-agree"><summary>steps 0 to {agreed - 1}: the same in both '
            f"runs ({plural(agreed, 'step')}, folded)</summary>{rows}</details>"
        )
    if at is not None:
        parts.append(
            f'<div class="bl-diverge-head" id="bl-diverged">step {at}: the runs part here</div>'
        )
        parts.append(_row(a, b, at, names, "bl-diverged", True))
        parts.extend(_row(a, b, i, names, "bl-after", False) for i in range(at + 1, longest))
    parts.append("</div>")
    return "".join(parts)


class CompareView(widgets.VBox):  # type: ignore[misc]
    """Two runs side by side, from a ``Result``, a ``to_dict()`` dict or a saved trace's path
    each; ``divergence`` is ``first_divergence(a, b)``."""

    def __init__(
        self, a: Source, b: Source, *, names: tuple[str, str] = ("run a", "run b")
    ) -> None:
        if (
            not isinstance(names, tuple)
            or len(names) != 2
            or not all(isinstance(n, str) for n in names)
        ):
            raise TypeError(f"CompareView: names must be a tuple of two str, got {names!r}.")
        self.a = as_result(a, "CompareView")
        self.b = as_result(b, "CompareView")
        self.names = names
        self.divergence: int | None = first_divergence(self.a, self.b)
        self.view = widgets.HTML(stylesheet() + compare_html(self.a, self.b, names))
        super().__init__([self.view])
        self.add_class("bl-root")
        self.add_class("bl-compare")
        for name in IGNORE_MATH.split():
            self.add_class(name)
