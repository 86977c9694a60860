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
    ContextEdit,
    Message,
    NextTurn,
    Price,
    Projection,
    Result,
    Step,
    format_usd,
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
from ._text import count, plural, text

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
    context: ContextEdit | None = None,
) -> str:
    """The budget meter (``budgetloop.display.meter``: the cost bar, the projection in words,
    a row for each ceiling) as HTML.

    ``missing`` is said instead of the projection when there is none. ``next_turn`` is what
    the loop says the next step will do (``Session.next_turn``): a stop before the model is
    called, or a final answer without tools, is said under the ceilings while the run goes on.
    ``carried`` (``Result.carried_usd``) is the part of the spend a fork carried from the run
    it came from, which none of its steps accounts for: said under the projection. ``price``
    is the run's: where it came from is said when it records a source (a catalog's price).
    ``context`` is what the run's context policy makes of the next request
    (``Session.next_context``): the projection is made on that request, and says so.
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
        if context is not None:
            said = context_marks(context, "the next request")[0]
            parts.append(
                f'<div class="bl-policy">projected after the context policy, {text(said)}</div>'
            )
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


def policy_name(edit: ContextEdit) -> str:
    """The policy as its marks name it: as the trace records it, or, where that is long (a
    ``Summarize`` names its model), its name only."""
    said = edit.policy
    return said if len(said) <= 40 else said.split("(", 1)[0]


def _which(indexes: Sequence[int]) -> str:
    if len(indexes) == 1:
        return f"message {indexes[0]}"
    run = list(range(indexes[0], indexes[-1] + 1)) == list(indexes)
    listed = f"{indexes[0]}–{indexes[-1]}" if run else ", ".join(map(str, indexes))
    return f"messages {listed}"


def context_marks(
    edit: ContextEdit, whose: str = "this step's request"
) -> tuple[str, list[tuple[int, str]], list[tuple[int, str, str, str]]]:
    """What a context view marks of a context policy's request (``Step.context``, or
    ``Session.next_context`` for the next turn's, ``whose`` saying which): a line saying what
    the policy did; each context message not sent as it was, with why (index, label: dropped,
    summarized, or replaced by a message the policy wrote); and each message the policy wrote
    (after which context message it stands, its label, role and text: a summary with what it
    replaced, a cut tool result). Plain text, for the page to show as text."""
    name = policy_name(edit)
    summary = edit.summary
    replaced = set(summary.replaced) if summary is not None else set()
    dropped = set(edit.dropped)
    written: list[tuple[int, str, str, str]] = []
    marks: dict[int, str] = {}
    before = -1  # the last context message sent as it was
    gaps: list[tuple[int, list[Message]]] = []  # the messages written after ``before``
    for x in edit.sent:
        if isinstance(x, int):
            before = x
        elif gaps and gaps[-1][0] == before:
            gaps[-1][1].append(x)
        else:
            gaps.append((before, [x]))
    ints = sorted(x for x in edit.sent if isinstance(x, int))
    for after, messages in gaps:
        later = [i for i in ints if i > after]
        upto = later[0] if later else max(dropped, default=after) + 1
        stood = sorted(i for i in dropped if after < i < upto)
        for message in messages:
            if summary is not None and stood and set(stood) <= replaced:
                label = f"written by {name}: the summary of {_which(stood)}"
            elif stood:
                label = f"written by {name}: sent instead of {_which(stood)}"
            else:
                label = f"written by {name}"
            written.append((stood[-1] if stood else after, label, message.role,
                            message_content(message)))  # fmt: skip
        for i in stood:
            marks[i] = (
                f"summarized by {name}" if i in replaced
                else f"replaced by {name} (its message is below)"
            )  # fmt: skip
    for i in sorted(dropped - marks.keys()):
        marks[i] = f"dropped by {name}"
    n = len(edit.dropped)
    tokens = edit.dropped_tokens
    saved = (
        f"{count(tokens)} input tokens fewer" if tokens >= 0
        else f"{count(-tokens)} input tokens more"
    )  # fmt: skip
    line = (
        f"{edit.policy}: {plural(n, 'message')} of the context not sent as "
        f"{'they were' if n != 1 else 'it was'} in {whose} ({saved} than the whole context)"
    )
    if summary is not None:
        line += f"; its summary cost {format_usd(summary.cost_usd)}"
    if edit.fallback is not None:
        line += f"; {edit.fallback}"
    return line + ".", sorted(marks.items()), written


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
    price: Price | None = None,
) -> str:
    """The charts of ``chart_svgs`` side by side."""
    svgs = chart_svgs(
        steps, budget, next_projection, max_points=max_points, carried=carried,
        refused=refused, ledger_limit=ledger_limit, price=price,
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
    price: Price | None = None,
) -> list[str]:
    """The run's charts (``budgetloop.display.charts``: reported input tokens per step, the
    cost so far, the tool calls run where a ceiling is drawn on that, each with its ceilings)
    as SVG, each drawn from at most ``max_points`` points.

    The cost starts at ``carried`` (``Result.carried_usd``: a fork's spend inherited from its
    source); ``next_projection`` (the next step's, or with ``refused`` the one that stopped the
    run) is drawn as a hollow point at spent + projected, and the chart's title says which.
    ``ledger_limit`` is a shared ledger's limit, drawn on the cost chart. Where a context
    policy edited a request, the cost chart draws the same steps without it too, dashed, at
    ``price`` (the run's: ``budgetloop.display.Tally.whole``).
    """
    made = charts(
        series_of(steps, carried, price), budget, next_projection, refused=refused,
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
        max_points=max_points, baseline=chart.baseline, baseline_label=chart.baseline_label,
    )  # fmt: skip


def stopped_by_projection(result: Result) -> bool:
    """The run stopped before a call its projection refused (a ceiling that projects): that
    projection is still the chart's crossing point."""
    return result.stop is not None and refused_by_projection(result.stop)
