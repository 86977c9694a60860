"""OTLP JSON (an object with ``resourceSpans``, or JSON Lines of them) holding GenAI spans, as
pydantic-ai, budgetloop and other instrumented frameworks export them; a trace of OpenInference
spans instead is read by ``_openinference``.

A run is a trace (``traceId``) with model-call spans (``gen_ai.operation.name`` ``chat``,
``text_completion`` or ``generate_content``). Each such span is a step; each ``execute_tool``
span a tool run, paired to its call by ``gen_ai.tool.call.id``. The run span
(``invoke_agent``), when there is one, gives the run's id (``gen_ai.conversation.id``) and, for
budgetloop's own spans, the stop, the budget and the costs (``budgetloop.*``), and the run
options its requests were sent with: the settings (``gen_ai.request.temperature`` and the others
the conventions name, the rest in ``budgetloop.request.settings``) and ``min_output_tokens``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._engine._types import Budget, Message, Stop, Usage, to_pico
from .._engine._valid import type_name
from .._forms._otel_attrs import MIN_OUTPUT_TOKENS, NAMED_SETTINGS, OTHER_SETTINGS
from .._rules._budget import Projection
from .._rules._ceilings import CEILINGS
from .._tools._tracebacks import bounded
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from . import _genai, _openinference
from ._build import Call, Execution, Run, Turn
from ._ends import ended, limit_named
from ._fields import (
    boolean,
    count,
    dollars,
    embedded,
    items,
    obj,
    text,
    tokens_cached,
    tokens_reasoned,
)

MODEL_CALLS = ("chat", "text_completion", "generate_content")
MAX_VALUE_DEPTH = 16  # arrays of arrays in an attribute: deeper is not an exporter's
_STOPS = {s.value: s for s in Stop}
_ERROR = ("STATUS_CODE_ERROR", 2)


@dataclass
class Span:
    trace: str
    name: str
    start: float
    end: float
    attributes: dict[str, Any]
    paths: dict[str, str]  # attribute key -> where its value is in the file
    failed: bool
    message: str | None
    scope: str
    events: list[str] = field(default_factory=list)  # exception events' texts
    raised: list[tuple[str, str]] = field(default_factory=list)  # exception types, messages
    traceback: str | None = None  # the first exception event's stacktrace, cut to its end
    order: int = 0  # its place in the file
    parent: str | None = None  # its parent span's id; None for a trace's root

    def get(self, key: str) -> Any:
        return self.attributes.get(key)

    def where(self, key: str) -> str:
        return self.paths.get(key, key)

    def operation(self) -> str | None:
        value = self.attributes.get("gen_ai.operation.name")
        return value if isinstance(value, str) else None


def _value(value: Any, path: str, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as plain data."""
    value = obj(value, path)
    if depth > MAX_VALUE_DEPTH:
        raise ValueError(
            f"{path} must be a value with arrays nested at most {MAX_VALUE_DEPTH} deep, "
            "got one nested deeper."
        )
    if "stringValue" in value:
        return text(value["stringValue"], at(path, "stringValue"), optional=False)
    if "boolValue" in value:
        return boolean(value["boolValue"], at(path, "boolValue"))
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, str) and raw.startswith("-") and raw[1:].isdigit():
            return -int(raw[1:]) if len(raw) <= 21 else count(raw, at(path, "intValue"))
        if isinstance(raw, int) and not isinstance(raw, bool) and raw < 0:
            return raw
        return count(raw, at(path, "intValue"), optional=False)
    if "doubleValue" in value:
        raw = value["doubleValue"]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError(f"{at(path, 'doubleValue')} must be a number, got {type_name(raw)}.")
        try:
            return float(raw)
        except OverflowError:
            raise ValueError(
                f"{at(path, 'doubleValue')} must be a number, got an int past a float's range."
            ) from None
    if "arrayValue" in value:
        array = obj(value["arrayValue"], at(path, "arrayValue"))
        where = at(at(path, "arrayValue"), "values")
        return [
            _value(v, at(where, i), depth + 1)
            for i, v in enumerate(items(array.get("values"), where, optional=True))
        ]
    if "kvlistValue" in value or "bytesValue" in value:
        return None  # not a value any GenAI attribute takes
    return None


def _attributes(raw: Any, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for i, item in enumerate(items(raw, path, optional=True)):
        entry = obj(item, at(path, i))
        key = text(get(entry, at(path, i), "key"), at(at(path, i), "key"), optional=False)
        shown = repr(key) if len(key) <= 80 else repr(key[:80]) + "..."
        where = f"{path}[{shown}]"  # attributes['gen_ai.usage.input_tokens']
        values[key] = _value(get(entry, where, "value"), at(where, "value"))
        paths[key] = at(where, "value")
    return values, paths


def _nanos(value: Any, path: str) -> float:
    return (count(value, path, optional=False) or 0) / 1e9


def _span(raw: Any, path: str, scope: str) -> Span:
    span = obj(raw, path)
    attributes, paths = _attributes(span.get("attributes"), at(path, "attributes"))
    status = obj(span.get("status") or {}, at(path, "status"))
    code = status.get("code")
    events, raised, stacks = [], [], []
    for i, event in enumerate(items(span.get("events"), at(path, "events"), optional=True)):
        where = at(at(path, "events"), i)
        event = obj(event, where)
        if event.get("name") == "exception":
            found, _ = _attributes(event.get("attributes"), at(where, "attributes"))
            kind, message = found.get("exception.type"), found.get("exception.message")
            if isinstance(kind, str) and isinstance(message, str):  # as budgetloop says errors
                events.append(f"{kind.rsplit('.', 1)[-1]}: {message}")
                raised.append((kind, message))
                stack = found.get("exception.stacktrace")
                stacks.append(bounded(stack) if isinstance(stack, str) and stack else None)
    start = _nanos(get(span, path, "startTimeUnixNano"), at(path, "startTimeUnixNano"))
    end = _nanos(get(span, path, "endTimeUnixNano"), at(path, "endTimeUnixNano"))
    return Span(
        trace=text(get(span, path, "traceId"), at(path, "traceId"), optional=False),
        name=text(get(span, path, "name", ""), at(path, "name"), optional=False),
        start=start,
        end=max(start, end),
        attributes=attributes,
        paths=paths,
        failed=code in _ERROR,
        message=text(status.get("message"), at(at(path, "status"), "message")) or None,
        scope=scope,
        events=events,
        raised=raised,
        traceback=stacks[0] if stacks else None,
        parent=text(span.get("parentSpanId"), at(path, "parentSpanId")) or None,
    )


def _scope(raw: Any, path: str) -> str:
    scope = obj(raw or {}, path)
    name = text(scope.get("name"), at(path, "name")) or "an OpenTelemetry exporter"
    version = text(scope.get("version"), at(path, "version"))
    return name if not version else f"{name} {version}"


def spans(documents: list[tuple[Any, str]]) -> list[Span]:
    """Every span of the documents (each with where it is: "" for a JSON file, "line N")."""
    out = []
    for document, line in documents:
        top = obj(document, line)
        where = at(line, "resourceSpans")
        for i, resource in enumerate(items(get(top, line, "resourceSpans"), where)):
            rpath = at(where, i)
            resource = obj(resource, rpath)
            spath = at(rpath, "scopeSpans")
            for j, scoped in enumerate(items(resource.get("scopeSpans"), spath, optional=True)):
                sc_path = at(spath, j)
                scoped = obj(scoped, sc_path)
                scope = _scope(scoped.get("scope"), at(sc_path, "scope"))
                list_path = at(sc_path, "spans")
                for k, raw in enumerate(items(scoped.get("spans"), list_path, optional=True)):
                    out.append(_span(raw, at(list_path, k), scope))
                    out[-1].order = len(out)
    return out


def runs(all_spans: list[Span], path: str | None) -> list[Run]:
    """One run per trace that holds a model call or a run span (``invoke_agent``: a run that
    stopped before its first call), in the order the traces first appear."""
    traces: dict[str, list[Span]] = {}
    for span in all_spans:
        traces.setdefault(span.trace, []).append(span)
    out = []
    for found in traces.values():
        if any(s.operation() in (*MODEL_CALLS, "invoke_agent") for s in found):
            out.append(_run(found, path))
        elif any(s.get(_openinference.KIND) == "LLM" for s in found):
            out.append(_openinference.run(found, path, _failure))
    if all_spans and not out:
        raise ValueError(_no_run(all_spans))
    return out


def _no_run(all_spans: list[Span]) -> str:
    """Why spans that hold no run were not read, naming what they are."""
    keys = {k for s in all_spans for k in s.attributes}
    many = f"{len(all_spans)} span{'s' if len(all_spans) != 1 else ''}"
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "traceloop.")) for k in keys):
        return (
            "the spans must follow the OpenTelemetry GenAI conventions, got "
            f"{many} in OpenLLMetry's format (gen_ai.prompt.N / gen_ai.completion.N attributes), "
            "which load_trace does not read; export with the OpenTelemetry GenAI conventions' "
            "gen_ai.input.messages and gen_ai.output.messages instead."
        )
    names = sorted({s.name for s in all_spans})
    shown = ", ".join(repr(n[:60]) for n in names[:5]) + (", ..." if len(names) > 5 else "")
    return (
        "the spans must be a run's: a GenAI model call or run span (gen_ai.operation.name "
        f"{', '.join(MODEL_CALLS)} or invoke_agent) or an OpenInference LLM span among them, "
        f"got {many}, none of them one of these; the span names are {shown}."
    )


def _usage(span: Span) -> Usage | None:
    names = {
        "input": "gen_ai.usage.input_tokens",
        "output": "gen_ai.usage.output_tokens",
        "read": "gen_ai.usage.cache_read.input_tokens",
        "write": "gen_ai.usage.cache_write.input_tokens",
    }
    if span.get(names["input"]) is None or span.get(names["output"]) is None:
        return None
    write_key = names["write"]
    if span.get(write_key) is None:
        write_key = "gen_ai.usage.cache_creation.input_tokens"  # the name before the rename
    counts = {
        k: count(span.get(v), span.where(v)) or 0 for k, v in {**names, "write": write_key}.items()
    }
    tokens_cached(span.where(names["input"]), counts["input"], counts["read"] + counts["write"])
    reasoning_key = "gen_ai.usage.reasoning.output_tokens"
    reasoning = count(span.get(reasoning_key), span.where(reasoning_key)) or 0
    tokens_reasoned(span.where(names["output"]), counts["output"], reasoning)
    return Usage(counts["input"], counts["output"], counts["read"], counts["write"], reasoning)


def _projection(span: Span, max_tokens: int | None) -> Projection | None:
    tokens = span.get("budgetloop.step.projected_input_tokens")
    if tokens is None:
        return None
    cost = dollars(
        span.get("budgetloop.step.projected_cost_usd"),
        span.where("budgetloop.step.projected_cost_usd"),
    )
    spent = dollars(span.get("budgetloop.spent_usd"), span.where("budgetloop.spent_usd")) or 0.0
    limit = dollars(span.get("budgetloop.limit_usd"), span.where("budgetloop.limit_usd"))
    fits = limit is None or (cost is not None and to_pico(spent) + to_pico(cost) <= to_pico(limit))
    return Projection(
        input_tokens=count(tokens, span.where("budgetloop.step.projected_input_tokens")) or 0,
        output_tokens=max_tokens,
        cost_usd=cost,
        spent_usd=spent,
        limit_usd=limit,
        fits=fits,
        fitted_from=_fitted_from(span),
    )


def _fitted_from(span: Span) -> int | None:
    """The run's figure a fitted turn asked for fewer output tokens than (None: not fitted)."""
    key = "budgetloop.step.fitted_from"
    return count(span.get(key), span.where(key))


def _failure(span: Span, own: bool = False) -> str:
    """What a failed span says went wrong, as budgetloop says an error (``Kind: message``):
    its exception event, else its status message, else its ``error.type``; "" when it says
    nothing. The event comes first: a status message may be anything (OpenInference's
    LangChain tracer writes the exception's repr and its whole traceback there), and the
    traceback is kept apart (``Span.traceback``). budgetloop's own spans: the message only,
    which is the error's text as recorded, when content was exported."""
    if own:
        return span.message or ""
    if span.events:
        return span.events[0]
    if span.message:
        return span.message
    kind = span.get("error.type")
    return kind if isinstance(kind, str) else ""


def _turn(span: Span, own: bool) -> Turn:
    max_tokens = count(
        span.get("gen_ai.request.max_tokens"), span.where("gen_ai.request.max_tokens")
    )
    turn = Turn(start=span.start, end=span.end, usage=_usage(span), order=span.order)
    cost_key = (
        "budgetloop.step.cost_usd"
        if span.get("budgetloop.step.cost_usd") is not None
        else "operation.cost"
    )
    turn.cost = dollars(span.get(cost_key), span.where(cost_key))
    turn.projection = _projection(span, max_tokens)
    turn.model = text(span.get("gen_ai.response.model"), span.where("gen_ai.response.model"))
    turn.response_id = text(span.get("gen_ai.response.id"), span.where("gen_ai.response.id"))
    reasons = span.get("gen_ai.response.finish_reasons")
    if span.failed:
        turn.error, turn.traceback = _failure(span, own), span.traceback
        return turn
    raw = span.get("gen_ai.output.messages")
    said = (
        None
        if raw is None
        else _genai.reply(
            embedded(raw, span.where("gen_ai.output.messages")),
            span.where("gen_ai.output.messages"),
        )
    )
    if said is not None:
        turn.text, turn.finish_reason = said.text, said.finish_reason
        turn.calls = [Call(name, call_id, arguments) for name, call_id, arguments in said.calls]
    if turn.finish_reason is None and isinstance(reasons, list) and reasons:
        turn.finish_reason = text(reasons[0], span.where("gen_ai.response.finish_reasons"))
    skipped = span.get("budgetloop.step.skipped_tool_calls.reasons")
    if isinstance(skipped, list):
        turn.skipped = [
            text(r, span.where("budgetloop.step.skipped_tool_calls.reasons"), optional=False)
            for r in skipped
        ]
    return turn


def _execution(span: Span, own: bool) -> Execution:
    args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
    if span.get(args_key) is None and span.get(result_key) is None:
        args_key, result_key = "tool_arguments", "tool_response"  # pydantic-ai before version 3
    arguments = span.get(args_key)
    result = span.get(result_key)
    status = text(span.get("budgetloop.tool.status"), span.where("budgetloop.tool.status"))
    checked = None
    if own and span.get("error.type") not in ("invalid_arguments", "unknown_tool"):
        parsed = None if arguments is None else embedded(arguments, span.where(args_key))
        checked = parsed if isinstance(parsed, dict) else None
    coerced = span.get("budgetloop.tool.coerced")
    approval = text(span.get("budgetloop.tool.approval"), span.where("budgetloop.tool.approval"))
    refused = None
    if status == "denied":  # what an approve function raised, when it did
        key = "budgetloop.tool.approval.error"
        refused = text(span.get(key), span.where(key))
    return Execution(
        name=text(span.get("gen_ai.tool.name"), span.where("gen_ai.tool.name")),
        call_id=text(span.get("gen_ai.tool.call.id"), span.where("gen_ai.tool.call.id")),
        arguments=arguments if arguments is None else _genai.as_text(arguments),
        start=span.start,
        seconds=span.end - span.start,
        result=None if result is None else _genai.as_text(result),
        error=_failure(span, own) if span.failed or status == "error" else refused,
        traceback=span.traceback if span.failed else None,
        status=status,
        checked=checked,
        coerced=tuple(
            text(c, span.where("budgetloop.tool.coerced"), optional=False)
            for c in (coerced if isinstance(coerced, list) else [])
        ),
        order=span.order,
        truncated=count(
            span.get("budgetloop.tool.truncated"), span.where("budgetloop.tool.truncated")
        ),
        approval=approval if own else None,
    )


def _context(chats: list[Span], agent: Span | None) -> list[Message]:
    """What the first model call was sent: its system instructions, then its input messages;
    from the run span when no model call records them."""
    for span in [*chats, *([agent] if agent is not None else [])]:
        raw = span.get("gen_ai.input.messages")
        if raw is None:
            continue
        system = span.get("gen_ai.system_instructions")
        out = (
            []
            if system is None
            else _genai.instructions(
                embedded(system, span.where("gen_ai.system_instructions")),
                span.where("gen_ai.system_instructions"),
            )
        )
        where = span.where("gen_ai.input.messages")
        return out + _genai.messages(embedded(raw, where), where)
    return []


def _run(found: list[Span], path: str | None) -> Run:
    chats = sorted(
        (s for s in found if s.operation() in MODEL_CALLS), key=lambda s: (s.start, s.order)
    )
    agents = sorted(
        (s for s in found if s.operation() == "invoke_agent"), key=lambda s: (s.start, s.order)
    )
    agent = agents[0] if agents else None
    own = any(s.scope.split(" ")[0] == "budgetloop" for s in found)
    first = agent or chats[0]
    run = Run(
        format="otlp",
        source=f"{first.scope} spans",
        path=path,
        turns=[_turn(s, own) for s in chats],
        context=_context(chats, agent),
        executions=[_execution(s, own) for s in found if s.operation() == "execute_tool"],
        run_id=_run_id(found, agent),
        content=not chats or any(s.get("gen_ai.output.messages") is not None for s in chats),
    )
    for span in chats:
        raw = span.get("gen_ai.tool.definitions")
        if raw is not None:
            where = span.where("gen_ai.tool.definitions")
            run.tools = _genai.definitions(embedded(raw, where), where)
            break
    if chats:  # the run's figure: what its first call asked for, or was fitted down from
        asked = count(
            chats[0].get("gen_ai.request.max_tokens"), chats[0].where("gen_ai.request.max_tokens")
        )
        fitted = _fitted_from(chats[0]) if own else None
        run.max_output_tokens = asked if fitted is None else fitted
    if agent is not None:
        _from_agent(run, agent)
    if own:
        run.options = _options(agent, chats)
    else:
        run.read = _read(chats, agent)
    return run


def _options(agent: Span | None, chats: list[Span]) -> dict[str, Any]:
    """The run options budgetloop's spans record (``Result.options``): the settings, from
    the run span (or its first call's, which were sent the same), and ``min_output_tokens``."""
    out: dict[str, Any] = {}
    for span in [*([agent] if agent is not None else []), *chats[:1]]:
        found = _settings(span)
        if found:
            out["settings"] = found
            break
    if agent is not None and agent.get(MIN_OUTPUT_TOKENS) is not None:
        least = count(agent.get(MIN_OUTPUT_TOKENS), agent.where(MIN_OUTPUT_TOKENS))
        if not least:
            raise ValueError(f"{agent.where(MIN_OUTPUT_TOKENS)} must be an int >= 1, got 0.")
        out["min_output_tokens"] = least
    return out


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _settings(span: Span) -> dict[str, Any]:
    """The settings a span says its requests were sent with: those under the GenAI
    conventions' names, then the rest (``budgetloop.request.settings``), which holds a setting
    the conventional attribute cannot say exactly (``stop`` as one string)."""
    out: dict[str, Any] = {}
    for name, key in NAMED_SETTINGS.items():
        value, where = span.get(key), span.where(key)
        if value is None:
            continue
        if name == "stop":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where} must be a list of strings, got {type_name(value)}.")
        elif name == "seed":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{where} must be an int, got {type_name(value)}.")
        elif not _finite(value):
            shown = repr(value) if isinstance(value, float) else type_name(value)
            raise ValueError(f"{where} must be a finite number, got {shown}.")
        out[name] = value
    raw = span.get(OTHER_SETTINGS)
    if raw is not None:
        where = span.where(OTHER_SETTINGS)
        out.update(obj(embedded(raw, where), where))  # JSON data: no NaN, not too deep
    return out


def _read(chats: list[Span], agent: Span | None) -> dict[str, str]:
    """What each call's result was sent to a model as, by call id: the tool responses in the
    model calls' input messages, and in the run's record of its messages (pydantic-ai's
    ``pydantic_ai.all_messages``: a structured answer's tool too)."""
    out: dict[str, str] = {}
    keys = [(s, "gen_ai.input.messages") for s in chats]
    if agent is not None:
        keys.append((agent, "pydantic_ai.all_messages"))
    for span, key in keys:
        raw = span.get(key)
        if raw is None:
            continue
        for message in _genai.messages(embedded(raw, span.where(key)), span.where(key)):
            if message.role == "tool" and message.tool_call_id:
                out.setdefault(message.tool_call_id, message.content or "")
    return out


def _run_id(found: list[Span], agent: Span | None) -> str:
    for span in [*([agent] if agent is not None else []), *found]:
        value = span.get("gen_ai.conversation.id")
        if isinstance(value, str) and value:
            return value
    return found[0].trace


def _from_agent(run: Run, agent: Span) -> None:
    """What the run span holds: the answer, the time, and budgetloop's own run attributes."""
    raw = agent.get("gen_ai.output.messages")
    if raw is not None:
        said = _genai.reply(
            embedded(raw, agent.where("gen_ai.output.messages")),
            agent.where("gen_ai.output.messages"),
        )
        run.answer = None if said is None else said.text
    run.seconds = agent.end - agent.start
    if agent.scope.split(" ")[0] != "budgetloop":
        _source_end(run, agent)
        return
    run.stop_known = True  # budgetloop's run span says how the run ended, or that it had not
    run.cost = dollars(agent.get("budgetloop.cost_usd"), agent.where("budgetloop.cost_usd"))
    seconds = dollars(agent.get("budgetloop.seconds"), agent.where("budgetloop.seconds"))
    run.seconds = run.seconds if seconds is None else seconds
    limits: dict[str, Any] = {}
    for ceiling in CEILINGS:
        key = f"budgetloop.budget.{ceiling.name}"
        read = count if ceiling.integer else dollars
        limits[ceiling.name] = read(agent.get(key), agent.where(key))
    run.budget = Budget(**limits)
    stop = agent.get("budgetloop.stop")
    if stop is None:
        return
    if stop not in _STOPS:
        raise ValueError(
            f"{agent.where('budgetloop.stop')} must be one of {', '.join(_STOPS)}, got {stop!r}."
        )
    run.stop = _STOPS[stop]
    run.detail = text(agent.get("budgetloop.stop.detail"), agent.where("budgetloop.stop.detail"))
    if agent.failed and agent.message is not None and agent.message != run.detail:
        run.error = agent.message


def _source_end(run: Run, agent: Span) -> None:
    """How another framework's run span says its run ended: an ERROR status (its exception,
    and the limit it names), or the final result it gave (pydantic-ai's ``final_result``: a
    structured answer as its JSON)."""
    if agent.failed:
        kind, message = agent.raised[0] if agent.raised else ("", _failure(agent))
        said = _failure(agent) or "an error the source does not describe"
        limit = limit_named(message) if kind.endswith("UsageLimitExceeded") else None
        run.stop, run.detail = ended(said, limit)
        run.error, run.raised, run.stop_known = said, True, True
        return
    final = agent.get("final_result")
    if final is not None:
        run.stop, run.stop_known = Stop.ANSWERED, True
        run.answer = _genai.as_text(final)
