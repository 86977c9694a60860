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
from dataclasses import dataclass
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
    Stop,
)
from budgetloop import as_result as core_as_result

from ._series import series_of
from ._svg import MAX_POINTS, bar_chart, line_chart
from ._text import count, plural, text, usd

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


def worst_case_text(p: Projection) -> str:
    """Why the projection is a worst case: the output tokens it assumes, and where from."""
    if p.output_tokens is None:
        return "0 output tokens assumed: no max_output_tokens is set"
    return f"{plural(p.output_tokens, 'output token')} assumed: max_output_tokens"


def projection_text(p: Projection) -> str:
    """The projection of the next step in one line, with its verdict."""
    out = "?" if p.output_tokens is None else count(p.output_tokens)
    head = f"projected: {count(p.input_tokens)} in + {out} out tokens"
    if p.cost_usd is None:
        return head + "; no price, so no cost projected"
    head += f" = {usd(p.cost_usd)}"
    spent = f"spent {usd(p.spent_usd)} + {usd(p.cost_usd)} = {usd(p.total_usd)}"
    if p.limit_usd is None:
        return f"{head}; {spent}, no max_cost_usd"
    verdict = "fits" if p.fits else "does NOT fit"
    return f"{head}; {spent} of max_cost_usd {usd(p.limit_usd)}: {verdict}"


@dataclass(frozen=True)
class Used:
    """How much of each ceiling a run has used at some point: counts, not step numbers."""

    steps: int
    seconds: float
    tool_calls: int


def used_by(result: Result) -> Used:
    return Used(
        len(result.steps), result.seconds, series_of(result.steps, result.carried_usd).executed
    )


def _of(used: str, name: str, limit: float | None) -> str:
    return f"{used} of {name} {count(limit)}" if limit is not None else f"{used} (no {name})"


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
    """The budget meter: spent and projected against max_cost_usd, and the other ceilings.

    ``missing`` is said instead of the projection when there is none. ``next_turn`` is what
    the loop says the next step will do (``Session.next_turn``): a stop before the model is
    called, or a final answer without tools, is said under the ceilings while the run goes on.
    ``carried`` (``Result.carried_usd``) is the part of the spend a fork carried from the run
    it came from, which none of its steps accounts for: said under the projection. ``price``
    is the run's: where it came from is said when it records a source (a catalog's price).
    """
    parts = ['<div class="bl-meter">']
    if label:
        parts.append(f'<div class="bl-meter-label">{escape(label)}</div>')
    if projection is None:
        parts.append(f'<div class="bl-muted">{text(missing)}</div>')
    else:
        parts.append(_cost_bar(projection))
        parts.append(f'<div class="bl-projection">{escape(projection_text(projection))}</div>')
        parts.append(
            f'<div class="bl-why">worst case: {escape(worst_case_text(projection))}; '
            "the model usually writes fewer, so a step's reported cost is lower</div>"
        )
        if projection.tier_note is not None:
            parts.append(f'<div class="bl-tier">{escape(projection.tier_note)}</div>')
    if price is not None and price.source is not None:
        parts.append(f'<div class="bl-price">price: {escape(price.describe())}</div>')
    if carried:
        parts.append(f'<div class="bl-carried">{escape(carried_text(carried))}</div>')
    ceilings = [
        ("steps taken", _of(count(used.steps), "max_steps", budget.max_steps)),
        ("seconds", _of(f"{used.seconds:.2f}", "max_seconds", budget.max_seconds)),
        ("tool calls run", _of(count(used.tool_calls), "max_tool_calls", budget.max_tool_calls)),
    ]
    cells = "".join(
        f'<span class="bl-ceil"><b>{name}</b> {value}</span>' for name, value in ceilings
    )
    parts.append(f'<div class="bl-ceilings">{cells}</div>')
    if next_turn is not None and not done:
        parts.append(next_turn_html(next_turn))
    parts.append("</div>")
    return "".join(parts)


def carried_text(carried: float) -> str:
    """Why a fork's spend is more than its steps add up to."""
    return (
        f"spent includes {usd(carried)} carried from the run this one was forked from (its "
        "steps after the fork point): no step here accounts for it"
    )


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
    """What the loop says the next step will do, when it is not an ordinary call."""
    p = nxt.projection
    if nxt.action == "stop":
        why = f": {nxt.detail}" if nxt.detail else ""
        if nxt.stop is Stop.MAX_COST_USD and p is not None and p.cost_usd is not None:
            why = (
                f": spent {usd(p.spent_usd)} + projected {usd(p.cost_usd)} = "
                f"{usd(p.total_usd)} is over max_cost_usd {usd(p.limit_usd)}"
            )
        return (
            f'<div class="bl-warn">The next step will not call the model: the run stops there '
            f"({text(str(nxt.stop))}){text(why)}.</div>"
        )
    if nxt.action == "held":
        return (
            '<div class="bl-warn">The run holds a batch for a person: '
            f"{text(nxt.detail or '')}.</div>"
        )
    if nxt.action == "final_answer":
        return (
            '<div class="bl-warn">The next step is the final answer: the model is called '
            f"without tools, then the run ends ({text(str(nxt.stop))}): "
            f"{text(nxt.detail or '')}.</div>"
        )
    return ""


def _cost_bar(p: Projection) -> str:
    if p.limit_usd is None or p.cost_usd is None:
        return ""
    scale = max(p.limit_usd, p.spent_usd + p.cost_usd) or 1.0
    spent = 100 * p.spent_usd / scale
    nxt = 100 * p.cost_usd / scale
    limit = 100 * p.limit_usd / scale
    over = "" if p.fits else " bl-over"
    return (
        f'<div class="bl-bar" title="spent, projected next step, max_cost_usd">'
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
) -> str:
    """The two charts of ``chart_svgs`` side by side."""
    svgs = chart_svgs(steps, budget, next_projection, max_points=max_points, carried=carried)
    return f'<div class="bl-charts">{"".join(svgs)}</div>'


def chart_svgs(
    steps: Sequence[Step],
    budget: Budget,
    next_projection: Projection | None = None,
    *,
    max_points: int = MAX_POINTS,
    carried: float = 0.0,
) -> list[str]:
    """Reported input tokens per step, and cumulative cost against max_cost_usd, as SVG, each
    drawn from at most ``max_points`` points.

    The cost starts at ``carried`` (``Result.carried_usd``: a fork's spend inherited from its
    source); ``next_projection`` (the next step's, or the one that stopped the run) is drawn as
    a hollow point at spent + projected.
    """
    figures = series_of(steps, carried)
    return charts_of(
        figures.tokens, figures.points, budget, next_projection, len(steps),
        max_points=max_points, carried=carried,
    )  # fmt: skip


def charts_of(
    tokens: Sequence[int],
    points: Sequence[tuple[float, float]],
    budget: Budget,
    next_projection: Projection | None = None,
    steps: int = 0,
    *,
    max_points: int = MAX_POINTS,
    carried: float = 0.0,
) -> list[str]:
    """``chart_svgs`` from the figures themselves: each step's reported input tokens, and the
    cost so far after each of the ``steps`` steps (``Series.points``)."""
    bars = bar_chart(tokens, title="input tokens per step, reported", max_points=max_points)
    projected = None
    if next_projection is not None and next_projection.total_usd is not None:
        projected = (steps + 1, next_projection.total_usd)
        points = points or [(0, 0.0)]
    ceiling = budget.max_cost_usd
    title = "cost so far (○ = + next step, projected)"
    if carried:
        title = f"cost so far, from {usd(carried)} carried (○ = + next step)"
    line = line_chart(
        points,
        title=title,
        x_label="steps taken",
        y_format=usd,
        ceiling=ceiling,
        ceiling_label=f"max_cost_usd {usd(ceiling)}",
        projected=projected,
        max_points=max_points,
    )
    return [bars, line]


def stopped_by_cost(result: Result) -> bool:
    return result.stop is Stop.MAX_COST_USD
