"""Pure functions behind ``TraceView`` as a log viewer: a one-line row per step, the tags a
filter matches, the text a search looks in, the places a jump goes, and the exact request a step
sent (its messages and the tool schemas, as the trace holds them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from budgetloop import Message, Request, Step, printable

from ._text import count, plural, text, usd
from ._views import arguments_text

STATUSES = ("ok", "error", "skipped", "model error", "answer", "under-projected")
JUMPS = ("first error", "first skipped", "first under-projected", "most expensive", "the stop")


def tags(step: Step) -> frozenset[str]:
    """What a status filter matches: the calls' statuses, ``model error``, ``answer`` (a step
    with no tool calls and no error) and ``under-projected``."""
    out: set[str] = {c.status for c in step.tool_calls}
    if step.error is not None:
        out.add("model error")
    elif not step.tool_calls:
        out.add("answer")
    if step.under_projected:
        out.add("under-projected")
    return frozenset(out)


def haystack(step: Step) -> str:
    """The text a search looks in, lowercased: the model's text, each call's tool name,
    arguments, result and error, and the model error."""
    parts = [step.text or "", step.error or ""]
    for call in step.tool_calls:
        parts += [
            call.name,
            arguments_text(call.raw_arguments),
            call.result or "",
            call.error or "",
        ]
    return "\n".join(parts).lower()


def matches(step: Step, tool: str | None, status: str | None, search: str) -> bool:
    """Whether ``step`` passes the filters; None and "" mean any."""
    if tool is not None and all(c.name != tool for c in step.tool_calls):
        return False
    if status is not None and status not in tags(step):
        return False
    return not search or search.lower() in haystack(step)


def row_label(step: Step) -> str:
    """One line for the step list: number, cost, reported input tokens, calls and status."""
    status = "model error" if step.error is not None else (
        ", ".join(sorted({c.status for c in step.tool_calls})) or "answer"
    )  # fmt: skip
    tokens = "—" if step.usage is None else count(step.usage.input_tokens)
    first = printable((step.text or step.error or "").split("\n", 1)[0][:60])
    calls = plural(len(step.tool_calls), "call")
    cost = usd(step.cost_usd)
    return f"{step.index:>6} │ {cost:>10} │ {tokens:>9} in │ {calls} │ {status} │ {first}"


ROW_HEAD = f"{'step':>6} │ {'cost':>10} │ {'reported':>12} │ calls │ status │ text"


def _has_error(step: Step) -> bool:
    return step.error is not None or any(c.status == "error" for c in step.tool_calls)


def jump_target(steps: Sequence[Step], jump: str) -> int | None:
    """The step a jump button goes to; None when the trace has no such step."""
    if jump == "the stop":
        return len(steps) - 1 if steps else None
    if jump == "most expensive":
        if all(s.cost_usd is None for s in steps):
            return None  # an imported run with no cost: none is most expensive
        return max(range(len(steps)), key=lambda i: steps[i].cost_usd or 0.0, default=None)
    wanted: dict[str, Callable[[Step], bool]] = {
        "first error": _has_error,
        "first skipped": lambda s: any(c.status == "skipped" for c in s.tool_calls),
        "first under-projected": lambda s: s.under_projected > 0,
    }
    if jump not in wanted:
        raise ValueError(f"TraceView.jump: expected one of {', '.join(JUMPS)}, got {jump!r}.")
    test = wanted[jump]
    return next((i for i, s in enumerate(steps) if test(s)), None)


def message_dict(message: Message) -> dict[str, Any]:
    """A message as a request carries it: role, content, tool calls, call id and name."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


def request_html(index: int, request: Request, budget_note: bool = False) -> str:
    """The exact request step ``index`` sent (``Result.request``): its messages and the tool
    schemas, and with ``budget_note``, that each request also ended with a line not kept."""
    messages = [message_dict(m) for m in request.messages]
    body = json.dumps(
        {"messages": messages, "tools": list(request.tools)}, ensure_ascii=False, indent=1
    )
    head = (
        f"Request of step {index}: {plural(len(messages), 'message')} and "
        f"{plural(len(request.tools), 'tool schema')}, as the trace holds them"
    )
    if budget_note:
        head += " (the budget line budget_note=True ended it with is not kept in the trace)"
    return (
        f'<div class="bl-request"><div class="bl-context-head">{escape(head)}</div>'
        f"<pre>{text(body)}</pre></div>"
    )
