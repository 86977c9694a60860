"""Pure functions from core data (Result, Step, Projection, messages) to view text and markup.

Nothing here decides anything about a budget: every number shown is one the core computed
(``Session.projection``, ``Step.projection``, ``Step.cost_usd``) or a count of trace entries.
Everything a model, a tool or a trace produced goes through ``text()``: control characters are
shown as escapes and the result is HTML-escaped, so it is always shown, never interpreted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from typing import Any

from budgetloop import Budget, CallRecord, Message, Projection, Result, Step, load_trace
from budgetloop._budget import estimate_message
from budgetloop._trace import printable

from ._svg import bar_chart, line_chart

PREVIEW_CHARS = 600  # of a model's text or a message
CELL_CHARS = 240  # of a tool's result in the calls table


def text(value: object, *, keep_newlines: bool = True) -> str:
    """Untrusted text, made safe to put in HTML: control characters escaped, markup escaped."""
    return escape(printable(str(value), keep_newlines=keep_newlines), quote=True)


def stylesheet() -> str:
    """The panel's CSS, shipped with the package, as a ``<style>`` element."""
    css = resources.files(__package__).joinpath("panel.css").read_text(encoding="utf-8")
    return f"<style>{css}</style>"


def as_result(source: Result | Mapping[str, Any] | str | os.PathLike[str]) -> Result:
    """A Result from a Result, a ``Result.to_dict()`` dict, or the path of a saved trace."""
    if isinstance(source, Result):
        return source
    if isinstance(source, Mapping):
        return Result.from_dict(dict(source))
    if isinstance(source, (str, os.PathLike)):
        return load_trace(source)
    raise TypeError(
        f"TraceView: source must be a Result, a to_dict() dict or a path, "
        f"got {type(source).__name__}."
    )


def usd(value: float | None) -> str:
    """Dollars to six places at most, trailing zeros dropped but two decimals kept."""
    if value is None:
        return "—"
    shown = f"{value:,.6f}".rstrip("0")
    decimals = len(shown.split(".")[1])
    return "$" + (shown + "0" * (2 - decimals) if decimals < 2 else shown)


def projection_text(p: Projection) -> str:
    """The projection of the next turn in one line, with its verdict."""
    out = "?" if p.output_tokens is None else f"{p.output_tokens:,}"
    head = f"next turn: {p.input_tokens:,} in + {out} out tokens"
    if p.cost_usd is None:
        return head + "; no price, so no cost projected"
    head += f" = {usd(p.cost_usd)} projected"
    spent = f"spent {usd(p.spent_usd)} + {usd(p.cost_usd)} = {usd(p.total_usd)}"
    if p.limit_usd is None:
        return f"{head}; {spent}, no max_cost_usd"
    verdict = "fits" if p.fits else "does NOT fit"
    return f"{head}; {spent} of max_cost_usd {usd(p.limit_usd)}: {verdict}"


@dataclass(frozen=True)
class Used:
    """How much of each ceiling a run has used at some point."""

    steps: int
    seconds: float
    tool_calls: int


def used_by(result: Result) -> Used:
    return Used(len(result.steps), result.seconds, len(result.tool_calls))


def _of(used: str, limit: object | None) -> str:
    return f"{used} of {limit}" if limit is not None else f"{used} (no limit)"


def meter_html(
    projection: Projection | None,
    used: Used,
    budget: Budget,
    *,
    done: bool,
    label: str = "",
    missing: str = "no projection",
) -> str:
    """The budget meter: spent and projected against max_cost_usd, and the other ceilings.

    ``missing`` is said instead of the projection when there is none.
    """
    parts = ['<div class="bl-meter">']
    if label:
        parts.append(f'<div class="bl-meter-label">{escape(label)}</div>')
    if projection is None:
        parts.append(f'<div class="bl-muted">{text(missing)}</div>')
    else:
        parts.append(_cost_bar(projection))
        parts.append(f'<div class="bl-projection">{escape(projection_text(projection))}</div>')
    ceilings = [
        ("steps", _of(str(used.steps), budget.max_steps)),
        ("seconds", _of(f"{used.seconds:.2f}", budget.max_seconds)),
        ("tool calls", _of(str(used.tool_calls), budget.max_tool_calls)),
    ]
    cells = "".join(
        f'<span class="bl-ceil"><b>{name}</b> {value}</span>' for name, value in ceilings
    )
    parts.append(f'<div class="bl-ceilings">{cells}</div>')
    if projection is not None and not projection.fits and not done:
        parts.append(
            '<div class="bl-warn">The next turn would not fit: spent '
            f"{usd(projection.spent_usd)} + projected {usd(projection.cost_usd)} = "
            f"{usd(projection.total_usd)} is over max_cost_usd {usd(projection.limit_usd)}. "
            "The run will stop there (max_cost_usd) without calling the model.</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _cost_bar(p: Projection) -> str:
    if p.limit_usd is None or p.cost_usd is None:
        return ""
    scale = max(p.limit_usd, p.spent_usd + p.cost_usd) or 1.0
    spent = 100 * p.spent_usd / scale
    nxt = 100 * p.cost_usd / scale
    limit = 100 * p.limit_usd / scale
    over = "" if p.fits else " bl-over"
    return (
        f'<div class="bl-bar" title="spent, projected next turn, max_cost_usd">'
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
            f'<td class="bl-outcome"><pre>{text(_preview(outcome or "", CELL_CHARS))}</pre>'
            f"{_cut_note(call.truncated)}</td>"
            f"<td>{call.seconds:.3f}</td></tr>"
        )
    return f'<table class="bl-table bl-calls"><tr>{head}</tr>{"".join(rows)}</table>'


def _cut_note(truncated: int | None) -> str:
    """Said under a result that was cut to ``max_result_chars`` before the model saw it."""
    if truncated is None:
        return ""
    note = f"(cut for the model: {truncated:,} characters in all)"
    return f'<div class="bl-truncated">{note}</div>'


def step_html(step: Step, *, selected: bool = False) -> str:
    """One turn: what it cost, what the model wrote, and its tool calls."""
    usage = "" if step.usage is None else (
        f" · {step.usage.input_tokens:,} in / {step.usage.output_tokens:,} out tokens"
    )  # fmt: skip
    head = f"Step {step.index} · {usd(step.cost_usd)}{usage} · {step.seconds:.3f} s"
    parts = [
        f'<div class="bl-step{" bl-selected" if selected else ""}" data-step="{step.index}">',
        f'<div class="bl-step-head">{escape(head)}</div>',
        f'<div class="bl-step-projection">before it: {escape(projection_text(step.projection))}'
        "</div>",
    ]
    if step.error is not None:
        parts.append(f'<div class="bl-error">model error: {text(step.error)}</div>')
    if step.text:
        parts.append(f'<pre class="bl-text">{text(_preview(step.text))}</pre>')
    elif step.error is None:
        parts.append('<div class="bl-muted">(no text)</div>')
    parts.append(calls_table(step.tool_calls))
    parts.append("</div>")
    return "".join(parts)


def steps_html(steps: Sequence[Step], *, shown: int = 20) -> str:
    """The latest ``shown`` steps, newest first, and a note of how many are left out."""
    if not steps:
        return '<div class="bl-muted">no steps yet: press Step</div>'
    latest = list(steps[-shown:])[::-1]
    note = ""
    if len(steps) > shown:
        note = (
            f'<div class="bl-muted">showing the latest {shown} of {len(steps)} steps; '
            "open the result in a TraceView to page through all of them</div>"
        )
    return note + "".join(step_html(s) for s in latest)


def steps_list_html(steps: Sequence[Step], start: int, stop: int, selected: int) -> str:
    """A one-line summary of each step in ``steps[start:stop]``: one page of a long trace."""
    rows = []
    for step in steps[start:stop]:
        status = ", ".join(c.status for c in step.tool_calls) or "answer"
        if step.error is not None:
            status = "model error"
        first = (step.text or "").split("\n", 1)[0][:80]
        cls = ' class="bl-selected"' if step.index == selected else ""
        rows.append(
            f'<tr data-step="{step.index}"{cls}><td>{step.index}</td>'
            f"<td>{usd(step.cost_usd)}</td><td>{step.projection.input_tokens:,}</td>"
            f"<td>{len(step.tool_calls)}</td><td>{escape(status)}</td><td>{text(first)}</td></tr>"
        )
    head = "<tr><th>step</th><th>cost</th><th>in tokens</th><th>calls</th><th>status</th>"
    head += "<th>text</th></tr>"
    return f'<table class="bl-table bl-steps-list">{head}{"".join(rows)}</table>'


def message_content(message: Message) -> str:
    parts = [message.content or ""]
    for call in message.tool_calls:
        parts.append(f"→ {call.name}({arguments_text(call.arguments)})")
    if message.role == "tool" and message.name:
        parts.insert(0, f"[{message.name}]")
    return " ".join(p for p in parts if p)


def context_html(messages: Sequence[Message], *, shown: int = 40) -> str:
    """The context with each message's role and estimated tokens; the latest ``shown`` rows."""
    counts = [estimate_message(m) for m in messages]
    first = max(len(messages) - shown, 0)
    head = (
        f'<div class="bl-context-head">{len(messages)} messages, ≈{sum(counts):,} tokens '
        "(estimated per message)"
    )
    if first:
        head += f"; showing the latest {shown}"
    rows = [
        f'<tr class="bl-role-{escape(m.role)}"><td>{i}</td><td>{escape(m.role)}</td>'
        f"<td>{counts[i]:,}</td><td><pre>{text(_preview(message_content(m)))}</pre></td></tr>"
        for i, m in enumerate(messages[first:], start=first)
    ]
    table = "<tr><th>#</th><th>role</th><th>tokens</th><th>content</th></tr>" + "".join(rows)
    return f'{head}</div><table class="bl-table bl-context">{table}</table>'


def _preview(value: str, limit: int = PREVIEW_CHARS) -> str:
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value) - limit:,} more characters)"


def charts_html(
    steps: Sequence[Step], budget: Budget, next_projection: Projection | None = None
) -> str:
    """Input tokens per turn, and cumulative cost against max_cost_usd, as inline SVG."""
    tokens = [s.usage.input_tokens if s.usage else s.projection.input_tokens for s in steps]
    bars = bar_chart(tokens, title="input tokens per turn")
    total = 0.0
    points: list[tuple[float, float]] = [(0, 0.0)]
    for step in steps:
        total += step.cost_usd
        points.append((step.index + 1, total))
    projected = None
    if next_projection is not None and next_projection.total_usd is not None:
        projected = (len(steps) + 1, next_projection.total_usd)
    ceiling = budget.max_cost_usd
    line = line_chart(
        points,
        title="cumulative cost (○ = spent + next turn projected)",
        x_label="turns taken",
        y_format=usd,
        ceiling=ceiling,
        ceiling_label=f"max_cost_usd {usd(ceiling)}",
        projected=projected,
    )
    return f'<div class="bl-charts">{bars}{line}</div>'


def stop_html(result: Result) -> str:
    """How the run ended, impossible to miss; a quiet line while it is still going."""
    if result.stop is None:
        return f'<div class="bl-running">running: {len(result.steps)} steps taken</div>'
    answered = result.answered
    verdict = "answered" if answered else "did NOT answer"
    parts = [
        f'<div class="bl-stop {"bl-answered" if answered else "bl-unanswered"}">',
        f'<div class="bl-stop-head">Run ended: {escape(result.stop.value)} — {verdict}'
        f" · {len(result.steps)} steps · {usd(result.cost_usd)}</div>",
    ]
    if result.detail:
        parts.append(f"<div>{text(result.detail)}</div>")
    if result.error:
        parts.append(f"<div>error: {text(result.error)}</div>")
    if answered and result.answer:
        parts.append(f'<pre class="bl-text">{text(_preview(result.answer))}</pre>')
    parts.append("</div>")
    return "".join(parts)


def error_html(title: str, detail: str) -> str:
    """An exception raised while driving the session, shown in full."""
    return f'<div class="bl-error"><b>{escape(title)}</b><pre>{text(detail)}</pre></div>'


def page_bounds(index: int, total: int, size: int) -> tuple[int, int]:
    """The ``[start, stop)`` of the page of ``size`` that holds ``index``."""
    start = (index // size) * size if total else 0
    return start, min(start + size, total)
