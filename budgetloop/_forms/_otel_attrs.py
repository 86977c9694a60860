"""The span attributes ``budgetloop.otel`` writes, as plain dicts: GenAI semantic conventions for
what they name, ``budgetloop.*`` for budgets and the run options they do not name. Standard
library only; ``otel.py`` makes the spans.

Every string that came from a model or a tool (text, arguments, results, errors, tool names and
call ids) gets here from a trace and goes through a ``Redactor`` (the exporter's ``redact=``),
once, before it can become an attribute or a span name: the same rule as the trace's own
redaction (arguments as values before they are encoded, numbers by their text, escapes in raw
argument strings decoded first). Whatever can quote the model or a tool, the run's ``detail``
included, is content: left out unless ``content`` is on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._engine._types import Message, Price, from_pico, to_pico
from .._rules._ceilings import budget_fields
from .._rules._money import cost_parts
from .._trace._result import CallRecord, Result, Step
from ._redact import Redactor

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
    """The step's calls that ran or were refused (by the check, or denied by a person, whose
    span carries the decision); skipped calls never started."""
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


# What a run span's status is, and the provider a span names when none is known.
OTHER = "_OTHER"


def _common(names: Names, operation: str) -> Attributes:
    """The attributes a chat or invoke_agent span starts with; ``gen_ai.provider.name`` is
    required there, so a provider no one named is ``_OTHER``."""
    out: Attributes = {"gen_ai.operation.name": operation}
    out["gen_ai.provider.name"] = OTHER if names.provider is None else names.provider
    if names.model is not None:
        out["gen_ai.request.model"] = names.model
    return out


def agent_name(names: Names) -> str:
    return "invoke_agent" if names.agent is None else f"invoke_agent {names.agent}"


def chat_name(names: Names) -> str:
    return "chat" if names.model is None else f"chat {names.model}"


def agent_start(names: Names, result: Result) -> Attributes:
    """The run span's opening attributes: what names it, and the run options every request
    was sent with (``settings``) or fitted by (``min_output_tokens``), when the run set them."""
    out = _common(names, "invoke_agent")
    if names.agent is not None:
        out["gen_ai.agent.name"] = names.agent
    out.update(settings(result.options.get("settings")))
    least = result.options.get("min_output_tokens")
    if least is not None:
        out[MIN_OUTPUT_TOKENS] = least
    return out


# The attributes the run options no GenAI convention names are written under (the importer
# reads them back): min_output_tokens, and the settings with no conventional name, as JSON.
MIN_OUTPUT_TOKENS = "budgetloop.min_output_tokens"
OTHER_SETTINGS = "budgetloop.request.settings"
# The settings the GenAI conventions name: the setting, its attribute, the value it takes.
NAMED_SETTINGS = {
    "temperature": "gen_ai.request.temperature",  # double
    "top_p": "gen_ai.request.top_p",  # double
    "seed": "gen_ai.request.seed",  # int
    "stop": "gen_ai.request.stop_sequences",  # string[]
}


def settings(values: Mapping[str, Any] | None) -> Attributes:
    """A run's ``settings`` as span attributes: each the GenAI conventions name under its
    conventional attribute, when its value is of the attribute's type (``stop`` as a list of
    strings; one string is written as a list of it, and kept as given below); every other
    setting (``tool_choice``, ``parallel_tool_calls``, a provider's own keys, a value the
    conventions' type cannot hold exactly) in ``budgetloop.request.settings``, one JSON
    object. Reading both back gives the settings as they were (``_importers/_otlp.py``)."""
    out: Attributes = {}
    rest: dict[str, Any] = {}
    for key, value in (values or {}).items():
        named = conventional(key, value)
        if named is not None:
            out[NAMED_SETTINGS[key]] = named
        if named is None or (key == "stop" and isinstance(value, str)):
            rest[key] = value
    if rest:
        out[OTHER_SETTINGS] = _json(rest)
    return out


def conventional(key: str, value: Any) -> Any:
    """``value`` as the GenAI conventions' attribute for setting ``key`` holds it, or None
    when they name no such setting or their type cannot hold the value as it is."""
    if isinstance(value, bool) or key not in NAMED_SETTINGS:
        return None
    if key == "seed":
        return value if isinstance(value, int) else None
    if key == "stop":
        if isinstance(value, str):
            return [value]
        is_texts = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return list(value) if is_texts else None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int past a float's range: only JSON holds it
            return None
        return number if number == value else None
    return None


def agent_end(result: Result, redact: Redactor, content: bool) -> Attributes:
    """The run's outcome: stop, spend against the ceiling, totals; with ``content``, the
    loop's sentence about the stop (it may quote the calls a repetition stop repeated) and the
    answer."""
    usage = [s.usage for s in result.steps if s.usage is not None]
    budget = result.budget
    out: Attributes = {
        "gen_ai.usage.input_tokens": sum(u.input_tokens for u in usage),
        "gen_ai.usage.output_tokens": sum(u.output_tokens for u in usage),
        "gen_ai.usage.cache_read.input_tokens": sum(u.cache_read_tokens for u in usage),
        **_cache_write(sum(u.cache_write_tokens for u in usage)),
        **_reasoning(sum(u.reasoning_tokens for u in usage)),
        "budgetloop.seconds": seconds(result.seconds),
        "budgetloop.steps": len(result.steps),
        "budgetloop.tool_calls": len(result.tool_calls),
        "budgetloop.tool_calls.failed": len(result.failed),
        "budgetloop.tool_calls.skipped": len(result.skipped),
    }
    if result.denied:
        out["budgetloop.tool_calls.denied"] = len(result.denied)
    if result.cost_usd is not None:  # None only for an imported run of unknown cost
        out["budgetloop.cost_usd"] = result.cost_usd
    if result.forked_from is not None:  # a fork: the run it came from, and the spend it carried
        out["budgetloop.forked_from"] = result.forked_from
        out["budgetloop.carried_usd"] = result.carried_usd
    if result.price is not None and result.price.source is not None:
        out["budgetloop.price.source"] = result.price.source  # where the rates came from
    if result.stop is not None:
        out["budgetloop.stop"] = result.stop.value
        out["budgetloop.answered"] = result.answered
    if content and result.detail is not None:
        out["budgetloop.stop.detail"] = redact.text(result.detail)
    for name, value in budget_fields(budget).items():
        if value is not None:
            out[f"budgetloop.budget.{name}"] = value
    if result.cost_usd is not None:
        out["mlflow.llm.cost"] = _run_cost(result)
    if result.stop is not None and not result.answered:  # a dashboard counts runs by it
        out["error.type"] = result.stop.value
    if content and result.answer is not None:
        answer = {**_assistant(result.answer, (), redact), "finish_reason": "stop"}
        out["gen_ai.output.messages"] = _json([answer])
        out["output.value"] = redact.text(result.answer)  # the trace list's output (OpenInference)
    if result.output is not None:  # output=T: the answer is T's JSON
        out["gen_ai.output.type"] = "json"
        if content and result.answer is not None:
            out["output.mime_type"] = "application/json"
    return out


def mlflow_cost(input_pico: int, output_pico: int) -> str:
    """``mlflow.llm.cost`` as MLflow's UI shows a span's cost: all three of its keys."""
    return _json(
        {
            "input_cost": from_pico(input_pico),
            "output_cost": from_pico(output_pico),
            "total_cost": from_pico(input_pico + output_pico),
        }
    )


def _run_cost(result: Result) -> str:
    """The run's cost for MLflow, which takes a trace's cost from the top-most span that has
    one: what budgetloop billed for the run (``cost_usd``, spend carried from a fork included),
    its output part the sum of the steps' (``cost_parts``), the rest input."""
    output = sum(
        cost_parts(s.cost_usd, s.usage, result.price)[1]
        for s in result.steps
        if s.cost_usd is not None
    )
    total = to_pico(result.cost_usd or 0.0)
    output = min(output, total)
    return mlflow_cost(total - output, output)


def prompt(sent: Sequence[Message], redact: Redactor) -> Attributes:
    """The run's prompt as the trace list of Phoenix and MLflow shows it (OpenInference's
    ``input.value``): the user messages it started with."""
    texts = [m.content for m in sent if m.role == "user" and m.content]
    return {"input.value": redact.text("\n\n".join(texts))} if texts else {}


def chat(
    step: Step,
    names: Names,
    max_tokens: int | None,
    sent: Sequence[Message] | None,
    redact: Redactor,
    price: Price | None = None,
    sent_settings: Mapping[str, Any] | None = None,
) -> Attributes:
    """A model call: the GenAI attributes, what it asked for (the output tokens its projection
    used, else the run's ``max_tokens``; the run's ``sent_settings``), then what the cost guard
    saw and what it cost (split into input and output at ``price``, the run's, for MLflow).

    ``sent`` is the context the call was sent (from the trace); None leaves content out."""
    out = _common(names, "chat")
    if step.projection is not None:
        max_tokens = step.projection.output_tokens  # what the request asked for (Request)
    if max_tokens is not None:
        out["gen_ai.request.max_tokens"] = max_tokens
    out.update(settings(sent_settings))
    if step.usage is not None:
        out["gen_ai.usage.input_tokens"] = step.usage.input_tokens
        out["gen_ai.usage.output_tokens"] = step.usage.output_tokens
        out["gen_ai.usage.cache_read.input_tokens"] = step.usage.cache_read_tokens
        out.update(_cache_write(step.usage.cache_write_tokens))
        out.update(_reasoning(step.usage.reasoning_tokens))
    out["budgetloop.step.index"] = step.index
    if step.cost_usd is not None:  # None only for an imported step of unknown cost
        out["budgetloop.step.cost_usd"] = step.cost_usd
    out.update(_projected(step))
    out["budgetloop.step.skipped_tool_calls"] = len(step.tool_calls) - len(executed(step))
    if step.first_chunk_seconds is not None:  # a streamed reply (no GenAI span attribute says it)
        out["budgetloop.step.first_chunk_seconds"] = seconds(step.first_chunk_seconds)
    if step.error is not None:
        out["error.type"] = redact.text(error_type(step.error, ran=True))
    out.update(response(step, redact))
    if step.cost_usd is not None:
        out["mlflow.llm.cost"] = mlflow_cost(*cost_parts(step.cost_usd, step.usage, price))
    if sent is not None:
        out.update(inputs(sent, redact))
        out.update(skipped(step, redact))
        if step.error is None:
            calls = tuple((c.name, c.id, c.raw_arguments) for c in step.tool_calls)
            message = _assistant(step.text, calls, redact)
            message["finish_reason"] = finish_reason(step, redact)
            out["gen_ai.output.messages"] = _json([message])
    return out


def _reasoning(tokens: int) -> Attributes:
    """The part of the output a reasoning model spent thinking, under the conventions' name;
    left out when there was none (most models reason not at all)."""
    return {"gen_ai.usage.reasoning.output_tokens": tokens} if tokens else {}


def _cache_write(tokens: int) -> Attributes:
    """Input written to the cache, under both names: the conventions' current one (read by
    MLflow) and the one it replaced (read by Phoenix)."""
    return {
        "gen_ai.usage.cache_write.input_tokens": tokens,
        "gen_ai.usage.cache_creation.input_tokens": tokens,
    }


def finish_reason(step: Step, redact: Redactor) -> str:
    """Why the model's reply ended: as the provider said (through ``redact``), else
    ``tool_call`` for a reply with calls and ``stop`` for one without; ``error`` for a call
    that gave no reply."""
    if step.error is not None:
        return "error"
    if step.finish_reason is not None:
        return redact.text(step.finish_reason)
    return "tool_call" if step.tool_calls else "stop"


def response(step: Step, redact: Redactor) -> Attributes:
    """What the reply says about itself: why it ended, the model that served it, its id."""
    out: Attributes = {"gen_ai.response.finish_reasons": [finish_reason(step, redact)]}
    if step.model is not None:
        out["gen_ai.response.model"] = redact.text(step.model)
    if step.response_id is not None:
        out["gen_ai.response.id"] = redact.text(step.response_id)
    return out


def definitions(tools: Sequence[dict[str, Any]], redact: Redactor) -> Attributes:
    """The tools a model call was offered, as ``gen_ai.tool.definitions`` (content: every
    string of them through ``redact``)."""
    if not tools:
        return {}
    out = []
    for schema in tools:
        item: dict[str, Any] = {"type": "function", "name": redact.text(str(schema.get("name")))}
        if isinstance(schema.get("description"), str):
            item["description"] = redact.text(schema["description"])
        if isinstance(schema.get("parameters"), dict):
            item["parameters"] = redact.value(schema["parameters"])
        out.append(item)
    return {"gen_ai.tool.definitions": _json(out)}


def description(tools: Sequence[dict[str, Any]], name: str | None) -> str | None:
    """The recorded description of the tool called ``name``, if the trace has one."""
    for schema in tools:
        if schema.get("name") == name and isinstance(schema.get("description"), str):
            text: str = schema["description"]
            return text
    return None


def skipped(step: Step, redact: Redactor) -> Attributes:
    """Why each of the step's skipped calls was not run (content: the reason can quote the
    stop's detail), in the order the model asked for them."""
    reasons = [redact.text(c.error or "") for c in step.tool_calls if c.status == "skipped"]
    return {"budgetloop.step.skipped_tool_calls.reasons": reasons} if reasons else {}


def _projected(step: Step) -> Attributes:
    """What the cost guard saw before the step (nothing for an imported step: none was made)."""
    projection, out = step.projection, Attributes()
    if projection is None:
        return out
    out["budgetloop.step.projected_input_tokens"] = projection.input_tokens
    if projection.fitted_from is not None:  # fitted: asked for fewer than the run's figure
        out["budgetloop.step.fitted_from"] = projection.fitted_from
    if projection.cost_usd is not None:
        out["budgetloop.step.projected_cost_usd"] = projection.cost_usd
        if step.cost_usd is not None:
            out["budgetloop.step.under_projected"] = step.cost_usd > projection.cost_usd
    out["budgetloop.spent_usd"] = projection.spent_usd
    if projection.limit_usd is not None:
        out["budgetloop.limit_usd"] = projection.limit_usd
    return out


def inputs(sent: Sequence[Message], redact: Redactor) -> Attributes:
    """Messages sent to a model: system messages as ``gen_ai.system_instructions``, the rest as
    ``gen_ai.input.messages``, in the conventions' JSON message format."""
    out: Attributes = {}
    system = [m.content for m in sent if m.role == "system" and m.content is not None]
    if system:
        out["gen_ai.system_instructions"] = _json([_text(text, redact) for text in system])
    out["gen_ai.input.messages"] = _json([_message(m, redact) for m in sent if m.role != "system"])
    return out


def tool(
    call: CallRecord, content: bool, redact: Redactor, about: str | None = None
) -> Attributes:
    """A tool call that ran (or was refused before running); ``about`` is the tool's
    description, when the trace's schemas have one."""
    out: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": redact.text(call.name),
        "gen_ai.tool.call.id": redact.text(call.id),
        "gen_ai.tool.type": "function",
        "budgetloop.tool.status": call.status,
    }
    if about is not None:
        out["gen_ai.tool.description"] = redact.text(about)
    if call.coerced:
        out["budgetloop.tool.coerced"] = [redact.text(name) for name in call.coerced]
    if call.truncated is not None:
        out["budgetloop.tool.truncated"] = call.truncated
    if call.server is not None:
        out["budgetloop.tool.server"] = redact.text(call.server)
    if call.status == "error" and call.error is not None:
        out["error.type"] = redact.text(error_type(call.error, ran=call.arguments is not None))
    if call.approval is not None:  # a person's decision: "approved", "edited" or "denied"
        out["budgetloop.tool.approval"] = call.approval
    if content and call.status == "denied" and call.error is not None:  # approve raised
        out["budgetloop.tool.approval.error"] = redact.text(call.error)
    if content:
        out["gen_ai.tool.call.arguments"] = (
            redact.arguments_text(call.raw_arguments)
            if call.arguments is None
            else redact.json(call.arguments)
        )
        if call.result is not None:
            out["gen_ai.tool.call.result"] = redact.text(call.result)
        elif call.status == "error":  # what the model read instead: the error
            out["gen_ai.tool.call.result"] = redact.text(call.content)
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


def _message(message: Message, redact: Redactor) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": redact.text(message.tool_call_id),
                    "response": redact.text(message.content or ""),
                }
            ],
        }
    if message.role == "assistant":
        calls = tuple((c.name, c.id, c.arguments) for c in message.tool_calls)
        return _assistant(message.content, calls, redact)
    return {"role": message.role, "parts": [_text(message.content or "", redact)]}


def _assistant(
    text: str | None, calls: Sequence[tuple[str, str | None, Any]], redact: Redactor
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append(_text(text, redact))
    for name, call_id, arguments in calls:
        parts.append(
            {
                "type": "tool_call",
                "id": redact.text(call_id),
                "name": redact.text(name),
                "arguments": redact.arguments(arguments),
            }
        )
    return {"role": "assistant", "parts": parts}


def _text(text: str, redact: Redactor) -> dict[str, Any]:
    return {"type": "text", "content": redact.text(text)}


def _json(value: Any) -> str:
    """Attributes' JSON, of parts each already through the ``Redactor``."""
    return json.dumps(value, ensure_ascii=False)
