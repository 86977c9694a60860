"""Pure functions from core data (Result, Step, Projection, messages) to view text and markup.

Nothing here decides anything about a budget or re-counts a token: every number shown is one
the core computed (``Session.projection``, ``Session.message_tokens``, ``Step.projection``,
``Step.usage``, ``Step.cost_usd``) or a count of trace entries, and each says what it is:
*projected* (before a step, at worst), *reported* (by the model's usage) or *estimated* (the
session's per-message count). Steps are numbered as ``Step.index`` (from 0). Everything a model,
a tool or a trace produced goes through ``text()``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from html import escape
from importlib import resources
from typing import Any

from budgetloop import (
    Budget,
    Message,
    NextTurn,
    Price,
    Projection,
    Result,
    Step,
)
from budgetloop import as_result as core_as_result
from budgetloop.display import (
    BAR_TITLE,
    Chart,
    Used,
    carried_text,
    charts,
    meter,
    next_turn_text,
    projection_text,
    refused_by_projection,
    used_by,
    worst_case_text,
)

from ._series import series_of
from ._svg import MAX_POINTS, bar_chart, line_chart
from ._text import text

__all__ = [  # the core's, shown here: each view takes its words and figures from it
    "Used",
    "carried_text",
    "meter_html",
    "next_turn_html",
    "projection_text",
    "used_by",
    "worst_case_text",
]

IGNORE_MATH = "tex2jax_ignore mathjax_ignore"  # MathJax 2 and 3 leave "$0.03 ... $0.05" alone


def stylesheet() -> str:
    """The panel's CSS, shipped with the package, as a ``<style>`` element."""
    css = resources.files(__package__).joinpath("panel.css").read_text(encoding="utf-8")
    return f"<style>{css}</style>"


def as_result(
    source: Result | Mapping[str, Any] | str | os.PathLike[str], where: str = "TraceView"
) -> Result:
    """A Result from a Result, a ``Result.to_dict()`` dict, or the path of a saved trace."""
    return core_as_result(source, where, "source")


def meter_html(
    projection: Projection | None,
    used: Used,
    budget: Budget,
    *,
    done: bool,
    label: str = "",
    missing: str = "no projection",
    next_turn: NextTurn | None = None,
    carried: float = 0.0,
    price: Price | None = None,
) -> str:
    """The budget meter (``budgetloop.display.meter``: the cost bar, the projection in words,
    a row for each ceiling) as HTML.

    ``missing`` is said instead of the projection when there is none. ``next_turn`` is what
    the loop says the next step will do (``Session.next_turn``): a stop before the model is
    called, or a final answer without tools, is said under the ceilings while the run goes on.
    ``carried`` (``Result.carried_usd``) is the part of the spend a fork carried from the run
    it came from, which none of its steps accounts for: said under the projection. ``price``
    is the run's: where it came from is said when it records a source (a catalog's price).
    """
    figures = meter(projection, used, budget)
    parts = ['<div class="bl-meter">']
    if label:
        parts.append(f'<div class="bl-meter-label">{escape(label)}</div>')
    if figures.projection is None:
        parts.append(f'<div class="bl-muted">{text(missing)}</div>')
    else:
        parts.append(_cost_bar(figures.bar))
        parts.append(f'<div class="bl-projection">{escape(figures.projection)}</div>')
        parts.append(f'<div class="bl-why">{escape(figures.why or "")}</div>')
        if figures.tier is not None:
            parts.append(f'<div class="bl-tier">{escape(figures.tier)}</div>')
    if price is not None and price.source is not None:
        parts.append(f'<div class="bl-price">price: {escape(price.describe())}</div>')
    if carried:
        parts.append(f'<div class="bl-carried">{escape(carried_text(carried))}</div>')
    cells = "".join(
        f'<span class="bl-ceil"><b>{escape(name)}</b> {escape(value)}</span>'
        for name, value in figures.rows
    )
    parts.append(f'<div class="bl-ceilings">{cells}</div>')
    if next_turn is not None and not done:
        parts.append(next_turn_html(next_turn))
    parts.append("</div>")
    return "".join(parts)


def edited_text(result: Result) -> str:
    """What a fork changed (``Result.edited``), said beside every context it shows."""
    edited = result.edited
    described = []
    for i in edited:
        m = result.messages[i]
        described.append(f"{i} ({m.role}{f': {m.name}' if m.name else ''})")
    which = f"message {described[0]}" if len(edited) == 1 else "messages " + ", ".join(described)
    return (
        f'This run is a fork that changed {which}, marked "edited by the fork" where a context '
        "shows it: the steps it kept show their calls as they ran, and the contexts sent after "
        "the fork hold the changed text."
    )


def next_turn_html(nxt: NextTurn) -> str:
    """What the loop says the next step will do, when it is not an ordinary call: the core's
    sentence (``budgetloop.display.next_turn_text``)."""
    said = next_turn_text(nxt)
    return "" if said is None else f'<div class="bl-warn">{text(said)}</div>'


def _cost_bar(bar: tuple[float, float, float, bool] | None) -> str:
    if bar is None:
        return ""
    spent, nxt, limit, fits = bar
    over = "" if fits else " bl-over"
    return (
        f'<div class="bl-bar" title="{escape(BAR_TITLE)}">'
        f'<div class="bl-spent" style="width:{spent:.2f}%"></div>'
        f'<div class="bl-next{over}" style="width:{nxt:.2f}%"></div>'
        f'<div class="bl-limit" style="left:{limit:.2f}%"></div></div>'
    )


def message_content(message: Message) -> str:
    parts = [message.content or ""]
    for call in message.tool_calls:
        parts.append(f"→ {call.name}({call.arguments_text})")
    if message.role == "tool" and message.name:
        parts.insert(0, f"[{message.name}]")
    return " ".join(p for p in parts if p)


def charts_html(
    steps: Sequence[Step],
    budget: Budget,
    next_projection: Projection | None = None,
    *,
    max_points: int = MAX_POINTS,
    carried: float = 0.0,
    refused: bool = False,
    ledger_limit: float | None = None,
) -> str:
    """The charts of ``chart_svgs`` side by side."""
    svgs = chart_svgs(
        steps, budget, next_projection, max_points=max_points, carried=carried,
        refused=refused, ledger_limit=ledger_limit,
    )  # fmt: skip
    return f'<div class="bl-charts">{"".join(svgs)}</div>'


def chart_svgs(
    steps: Sequence[Step],
    budget: Budget,
    next_projection: Projection | None = None,
    *,
    max_points: int = MAX_POINTS,
    carried: float = 0.0,
    refused: bool = False,
    ledger_limit: float | None = None,
) -> list[str]:
    """The run's charts (``budgetloop.display.charts``: reported input tokens per step, the
    cost so far, the tool calls run where a ceiling is drawn on that, each with its ceilings)
    as SVG, each drawn from at most ``max_points`` points.

    The cost starts at ``carried`` (``Result.carried_usd``: a fork's spend inherited from its
    source); ``next_projection`` (the next step's, or with ``refused`` the one that stopped the
    run) is drawn as a hollow point at spent + projected, and the chart's title says which.
    ``ledger_limit`` is a shared ledger's limit, drawn on the cost chart.
    """
    made = charts(
        series_of(steps, carried), budget, next_projection, refused=refused,
        ledger_limit=ledger_limit,
    )  # fmt: skip
    return [drawn(chart, max_points) for chart in made]


def drawn(chart: Chart, max_points: int = MAX_POINTS) -> str:
    """One of the core's charts as SVG: bars, or a line, with its dashed ceilings."""
    if chart.bars:
        return bar_chart(
            [y for _, y in chart.points], title=chart.title, x_label=chart.x_label,
            y_format=chart.y_text, empty=chart.empty, max_points=max_points,
            ceilings=chart.ceilings,
        )  # fmt: skip
    return line_chart(
        chart.points, title=chart.title, x_label=chart.x_label, y_format=chart.y_text,
        ceilings=chart.ceilings, projected=chart.projected, empty=chart.empty,
        max_points=max_points,
    )  # fmt: skip


def stopped_by_projection(result: Result) -> bool:
    """The run stopped before a call its projection refused (a ceiling that projects): that
    projection is still the chart's crossing point."""
    return result.stop is not None and refused_by_projection(result.stop)
