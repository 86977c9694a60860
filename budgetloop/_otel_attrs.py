"""The span attributes ``budgetloop.otel`` writes, as plain dicts: GenAI semantic conventions for
what they name, ``budgetloop.*`` for budgets. Standard library only; ``otel.py`` makes the spans.

Every string that came from a model or a tool (text, arguments, results, errors, tool names and
call ids) goes through ``redact`` here, once, before it can become an attribute or a span name.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._trace import CallRecord, Result, Step
from ._types import Message

Redact = Callable[[str], str]
Attributes = dict[str, Any]  # values: str, bool, int, float or a list of str

_EXCEPTION = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): ")


@dataclass(frozen=True)
class Names:
    """What the trace does not record: the model, the provider, the agent's name."""

    model: str | None = None
    provider: str | None = None
    agent: str | None = None


def seconds(value: Any) -> float:
    """A recorded duration as a usable one: not a number, negative or infinite is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) and value > 0 else 0.0


def model_seconds(step: Step) -> float:
    """How long the model call took: the step less its tool batch, whose calls run side by
    side, so less its longest executed call."""
    batch = max((seconds(c.seconds) for c in executed(step)), default=0.0)
    return max(seconds(step.seconds) - batch, 0.0)


def executed(step: Step) -> tuple[CallRecord, ...]:
    """The step's calls that ran or were refused; skipped calls never started."""
    return tuple(c for c in step.tool_calls if c.status != "skipped")


def error_type(error: str, *, ran: bool) -> str:
    """A low-cardinality ``error.type``: the exception's class for a tool that raised, else
    what kept the call from running."""
    if error.startswith("abandoned: "):
        return "timeout"
    if not ran:
        if error.startswith(("unknown tool ", "a tool call needs a name")):
            return "unknown_tool"
        return "invalid_arguments"
    match = _EXCEPTION.match(error)
    return match.group(1) if match else "_OTHER"


def _common(names: Names, operation: str) -> Attributes:
    out: Attributes = {"gen_ai.operation.name": operation}
    if names.provider is not None:
        out["gen_ai.provider.name"] = names.provider
    if names.model is not None:
        out["gen_ai.request.model"] = names.model
    return out


def agent_name(names: Names) -> str:
    return "invoke_agent" if names.agent is None else f"invoke_agent {names.agent}"


def chat_name(names: Names) -> str:
    return "chat" if names.model is None else f"chat {names.model}"


def agent_start(names: Names) -> Attributes:
    out = _common(names, "invoke_agent")
    if names.agent is not None:
        out["gen_ai.agent.name"] = names.agent
    return out


def agent_end(result: Result, redact: Redact, content: bool) -> Attributes:
    """The run's outcome: stop, spend against the ceiling, totals."""
    usage = [s.usage for s in result.steps if s.usage is not None]
    budget = result.budget
    out: Attributes = {
        "gen_ai.usage.input_tokens": sum(u.input_tokens for u in usage),
        "gen_ai.usage.output_tokens": sum(u.output_tokens for u in usage),
        "gen_ai.usage.cache_read.input_tokens": sum(u.cache_read_tokens for u in usage),
        "gen_ai.usage.cache_creation.input_tokens": sum(u.cache_write_tokens for u in usage),
        "budgetloop.seconds": seconds(result.seconds),
        "budgetloop.steps": len(result.steps),
        "budgetloop.tool_calls": len(result.tool_calls),
        "budgetloop.tool_calls.failed": len(result.failed),
        "budgetloop.tool_calls.skipped": len(result.skipped),
    }
    if result.cost_usd is not None:  # None only for an imported run of unknown cost
        out["budgetloop.cost_usd"] = result.cost_usd
    if result.stop is not None:
        out["budgetloop.stop"] = result.stop.value
        out["budgetloop.answered"] = result.answered
    if result.detail is not None:
        out["budgetloop.stop.detail"] = redact(result.detail)
    for name in ("max_cost_usd", "max_steps", "max_seconds", "max_tool_calls"):
        value = getattr(budget, name)
        if value is not None:
            out[f"budgetloop.budget.{name}"] = value
    if result.error is not None:
        out["error.type"] = redact(error_type(result.error, ran=True))
    if content and result.answer is not None:
        out["gen_ai.output.messages"] = _json([_assistant(result.answer, (), redact)])
    return out


def chat(
    step: Step,
    names: Names,
    max_tokens: int | None,
    sent: Sequence[Message] | None,
    redact: Redact,
) -> Attributes:
    """A model call: the GenAI attributes, then what the cost guard saw and what it cost.

    ``sent`` is the context the call was sent (from the trace); None leaves content out."""
    out = _common(names, "chat")
    if max_tokens is not None:
        out["gen_ai.request.max_tokens"] = max_tokens
    if step.usage is not None:
        out["gen_ai.usage.input_tokens"] = step.usage.input_tokens
        out["gen_ai.usage.output_tokens"] = step.usage.output_tokens
        out["gen_ai.usage.cache_read.input_tokens"] = step.usage.cache_read_tokens
        out["gen_ai.usage.cache_creation.input_tokens"] = step.usage.cache_write_tokens
    out["budgetloop.step.index"] = step.index
    if step.cost_usd is not None:  # None only for an imported step of unknown cost
        out["budgetloop.step.cost_usd"] = step.cost_usd
    out.update(_projected(step))
    out["budgetloop.step.skipped_tool_calls"] = len(step.tool_calls) - len(executed(step))
    if step.error is not None:
        out["error.type"] = redact(error_type(step.error, ran=True))
    if sent is not None:
        out.update(inputs(sent, redact))
        if step.error is None:
            calls = tuple((c.name, c.id, c.raw_arguments) for c in step.tool_calls)
            out["gen_ai.output.messages"] = _json([_assistant(step.text, calls, redact)])
    return out


def _projected(step: Step) -> Attributes:
    """What the cost guard saw before the step (nothing for an imported step: none was made)."""
    projection, out = step.projection, Attributes()
    if projection is None:
        return out
    out["budgetloop.step.projected_input_tokens"] = projection.input_tokens
    if projection.cost_usd is not None:
        out["budgetloop.step.projected_cost_usd"] = projection.cost_usd
        if step.cost_usd is not None:
            out["budgetloop.step.under_projected"] = step.cost_usd > projection.cost_usd
    out["budgetloop.spent_usd"] = projection.spent_usd
    if projection.limit_usd is not None:
        out["budgetloop.limit_usd"] = projection.limit_usd
    return out


def inputs(sent: Sequence[Message], redact: Redact) -> Attributes:
    """Messages sent to a model: system messages as ``gen_ai.system_instructions``, the rest as
    ``gen_ai.input.messages``, in the conventions' JSON message format."""
    out: Attributes = {}
    system = [m.content for m in sent if m.role == "system" and m.content is not None]
    if system:
        out["gen_ai.system_instructions"] = _json([_text(text, redact) for text in system])
    out["gen_ai.input.messages"] = _json([_message(m, redact) for m in sent if m.role != "system"])
    return out


def tool(call: CallRecord, content: bool, redact: Redact) -> Attributes:
    """A tool call that ran (or was refused before running)."""
    out: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": redact(call.name),
        "gen_ai.tool.call.id": redact(call.id),
        "gen_ai.tool.type": "function",
        "budgetloop.tool.status": call.status,
    }
    if call.coerced:
        out["budgetloop.tool.coerced"] = [redact(name) for name in call.coerced]
    if call.truncated is not None:
        out["budgetloop.tool.truncated"] = call.truncated
    if call.status == "error" and call.error is not None:
        out["error.type"] = redact(error_type(call.error, ran=call.arguments is not None))
    if content:
        args = call.arguments if call.arguments is not None else call.raw_arguments
        out["gen_ai.tool.call.arguments"] = (
            redact(args) if isinstance(args, str) else _json(_redacted(args, redact))
        )
        if call.result is not None:
            out["gen_ai.tool.call.result"] = redact(call.result)
    return out


def sent_before(result: Result) -> list[Sequence[Message]]:
    """For each step, the context its model call was sent: the messages before that step's
    assistant message (a step whose model call failed has none: it was sent all before the
    next one, or all there are)."""
    assistants = [i for i, m in enumerate(result.messages) if m.role == "assistant"]
    out: list[Sequence[Message]] = []
    k = 0
    for step in result.steps:
        end = assistants[k] if k < len(assistants) else len(result.messages)
        out.append(result.messages[:end])
        if step.error is None:
            k += 1
    return out


def _message(message: Message, redact: Redact) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": _opt(message.tool_call_id, redact),
                    "response": redact(message.content or ""),
                }
            ],
        }
    if message.role == "assistant":
        calls = tuple((c.name, c.id, c.arguments) for c in message.tool_calls)
        return _assistant(message.content, calls, redact)
    return {"role": message.role, "parts": [_text(message.content or "", redact)]}


def _assistant(
    text: str | None, calls: Sequence[tuple[str, str | None, Any]], redact: Redact
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append(_text(text, redact))
    for name, call_id, arguments in calls:
        parts.append(
            {
                "type": "tool_call",
                "id": _opt(call_id, redact),
                "name": redact(name),
                "arguments": _redacted(arguments, redact),
            }
        )
    return {"role": "assistant", "parts": parts}


def _text(text: str, redact: Redact) -> dict[str, Any]:
    return {"type": "text", "content": redact(text)}


def _opt(text: str | None, redact: Redact) -> str | None:
    return None if text is None else redact(text)


def _redacted(value: Any, redact: Redact) -> Any:
    """Every string inside ``value``, keys included, through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redacted(str(k), redact): _redacted(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(v, redact) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(repr(value))  # not JSON data: its repr, redacted like any text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
