"""Pure functions from core data (Result, Step, Projection, messages) to view text and markup.

Nothing here decides anything about a budget or re-counts a token: every number shown is one
the core computed (``Session.projection``, ``Session.message_tokens``, ``Step.projection``,
``Step.usage``, ``Step.cost_usd``) or a count of trace entries, and each says what it is:
*projected* (before a step, at worst), *reported* (by the model's usage) or *estimated* (the
session's per-message count). Steps are numbered as ``Step.index`` (from 0). Everything a model,
a tool or a trace produced goes through ``text()``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from typing import Any

from budgetloop import (
    Budget,
    CallRecord,
    Message,
    NextTurn,
    Projection,
    Result,
    Step,
    Stop,
)
from budgetloop import as_result as core_as_result

from ._series import series_of
from ._status import traceback_html
from ._svg import MAX_POINTS, bar_chart, line_chart
from ._text import count, plural, preview, text, usd

CELL_CHARS = 240  # of a tool's result in the calls table
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
) -> str:
    """The budget meter: spent and projected against max_cost_usd, and the other ceilings.

    ``missing`` is said instead of the projection when there is none. ``next_turn`` is what
    the loop says the next step will do (``Session.next_turn``): a stop before the model is
    called, or a final answer without tools, is said under the ceilings while the run goes on.
    ``carried`` (``Result.carried_usd``) is the part of the spend a fork carried from the run
    it came from, which none of its steps accounts for: said under the projection.
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


def arguments_text(arguments: str | dict[str, Any] | None) -> str:
    """Arguments as text: a string as the model wrote it, a dict as JSON."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _coerced(call: CallRecord, key: str) -> bool:
    path = f"{call.name}.{key}"
    return any(c == path or c.startswith((path + ".", path + "[")) for c in call.coerced)


def checked_html(call: CallRecord) -> str:
    """The checked arguments, one per line, the coerced ones marked."""
    if call.arguments is None:
        return '<span class="bl-muted">not checked</span>'
    if not call.arguments:
        return "{}"
    lines = []
    for key, value in call.arguments.items():
        item = f"{text(key)}: {text(json.dumps(value, ensure_ascii=False))}"
        if _coerced(call, key):
            item = f'<mark class="bl-coerced">{item}</mark> <i>(coerced)</i>'
        lines.append(item)
    return "<br>".join(lines)


def calls_table(calls: Sequence[CallRecord]) -> str:
    if not calls:
        return '<div class="bl-muted">no tool calls</div>'
    head = "".join(
        f"<th>{h}</th>"
        for h in ("tool", "raw arguments", "checked arguments", "status", "result / error", "s")
    )
    rows = []
    for call in calls:
        outcome = call.result if call.status == "ok" else call.error
        rows.append(
            f'<tr class="bl-call bl-status-{escape(call.status)}">'
            f"<td><code>{text(call.name)}</code></td>"
            f'<td class="bl-raw"><code>{text(arguments_text(call.raw_arguments))}</code></td>'
            f'<td class="bl-checked"><code>{checked_html(call)}</code></td>'
            f'<td class="bl-status">{escape(call.status)}</td>'
            f'<td class="bl-outcome"><pre>{text(preview(outcome or "", CELL_CHARS))}</pre>'
            f"{_cut_note(call.truncated)}{traceback_html(call.traceback)}</td>"
            f'<td class="bl-num">{call.seconds:.3f}</td></tr>'
        )
    return f'<table class="bl-table bl-calls"><tr>{head}</tr>{"".join(rows)}</table>'


def _cut_note(truncated: int | None) -> str:
    """Said under a result that was cut to ``max_result_chars`` before the model saw it."""
    if truncated is None:
        return ""
    note = f"(cut for the model: {plural(truncated, 'character')} in all)"
    return f'<div class="bl-truncated">{note}</div>'


def step_head(step: Step) -> str:
    """Step ``index``: its cost and tokens, each saying whether it was reported or projected."""
    if step.usage is None and step.error is not None and not step.cost_usd:
        tokens = "no tokens reported"
        cost = "nothing charged: the model raised"
    elif step.usage is None:
        tokens = f"{count(step.projection.input_tokens)} in tokens projected, none reported"
        cost = f"{usd(step.cost_usd)} charged at the projection"
    else:
        tokens = (
            f"{count(step.usage.input_tokens)} in / {count(step.usage.output_tokens)} out "
            "tokens reported"
        )
        cost = f"{usd(step.cost_usd)} reported"
    return f"Step {step.index} · {cost} · {tokens} · {step.seconds:.3f} s"


def step_html(step: Step, *, open_: bool = True, selected: bool = False) -> str:
    """One step, as a card that can fold: what it cost, what the model wrote, its calls."""
    cls = "bl-step" + (" bl-selected" if selected else "")
    under = step.under_projected
    parts = [
        f'<details class="{cls}" data-step="{step.index}"{" open" if open_ else ""}>',
        f'<summary><span class="bl-step-head">{escape(step_head(step))}</span></summary>',
        f'<div class="bl-step-projection">before it, {escape(projection_text(step.projection))}'
        "</div>",
    ]
    if under:
        parts.append(
            f'<div class="bl-warn">under-projected: the model reported '
            f"{plural(under, 'input token')} more than projected</div>"
        )
    if step.error is not None:
        parts.append(f'<div class="bl-error">model error: {text(step.error)}</div>')
        parts.append(traceback_html(step.traceback))
    if step.text:
        parts.append(f'<pre class="bl-text">{text(preview(step.text))}</pre>')
    elif step.error is None:
        parts.append('<div class="bl-muted">(no text)</div>')
    parts.append(calls_table(step.tool_calls))
    parts.append("</details>")
    return "".join(parts)


def steps_note(taken: int, shown: int) -> str:
    """The line above a list of the latest ``shown`` of ``taken`` steps: none yet, or how
    many it leaves out; empty when it shows them all."""
    if not taken:
        return '<div class="bl-muted">no steps yet: press Step</div>'
    if taken <= shown:
        return ""
    return (
        f'<div class="bl-muted">showing the latest {shown} of '
        f"{plural(taken, 'step')}; open the result in a TraceView to see them all</div>"
    )


def steps_html(
    steps: Sequence[Step], *, shown: int = 20, folded: dict[int, str] | None = None
) -> str:
    """The latest ``shown`` steps, newest first and the only one unfolded, in a scroll box.

    ``folded`` caches each step's folded card by index (a step never changes once taken), so a
    redraw renders one card whatever the run's length.
    """
    if not steps:
        return steps_note(0, shown)
    latest = list(steps[-shown:])[::-1]
    note = steps_note(len(steps), shown)
    cache = {} if folded is None else folded
    cards = [step_html(latest[0], open_=True)]
    for step in latest[1:]:
        if step.index not in cache:
            cache[step.index] = step_html(step, open_=False)
        cards.append(cache[step.index])
    return f'{note}<div class="bl-steps-box">{"".join(cards)}</div>'


def message_content(message: Message) -> str:
    parts = [message.content or ""]
    for call in message.tool_calls:
        parts.append(f"→ {call.name}({arguments_text(call.arguments)})")
    if message.role == "tool" and message.name:
        parts.insert(0, f"[{message.name}]")
    return " ".join(p for p in parts if p)


def context_html(
    messages: Sequence[Message],
    *,
    shown: int = 40,
    tokens: Sequence[int] | None = None,
    head: str = "",
    rows_cache: dict[tuple[int, bool], str] | None = None,
) -> str:
    """The context, the latest ``shown`` messages in a scroll box; with ``tokens`` (the
    session's ``message_tokens``), each message's estimated tokens beside it. ``rows_cache``
    keeps each row by position, for a context that only grows (a session's)."""
    first = max(len(messages) - shown, 0)
    line = head or plural(len(messages), "message")
    if first:
        line += f"; showing the latest {shown}"
    column = tokens is not None and len(tokens) == len(messages)
    cache = {} if rows_cache is None else rows_cache
    rows = []
    for i, m in enumerate(messages[first:], start=first):
        key = (i, column)
        if key not in cache:
            cell = f'<td class="bl-num">{count(tokens[i])}</td>' if column and tokens else ""
            cache[key] = (
                f'<tr class="bl-role-{escape(m.role)}"><td class="bl-num">{i}</td>'
                f"<td>{escape(m.role)}</td>{cell}"
                f"<td><pre>{text(preview(message_content(m)))}</pre></td></tr>"
            )
        rows.append(cache[key])
    heads = "<th>#</th><th>role</th>" + ("<th>tokens, estimated</th>" if column else "")
    table = f"<tr>{heads}<th>content</th></tr>" + "".join(rows)
    return (
        f'<div class="bl-context-head">{escape(line)}</div><div class="bl-context-box">'
        f'<table class="bl-table bl-context">{table}</table></div>'
    )


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
    bars = bar_chart(
        figures.tokens, title="input tokens per step, reported", max_points=max_points
    )
    points: Sequence[tuple[float, float]] = figures.points
    projected = None
    if next_projection is not None and next_projection.total_usd is not None:
        projected = (len(steps) + 1, next_projection.total_usd)
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
