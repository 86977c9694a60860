"""OpenTelemetry export: a run as GenAI spans, live as it steps or from a saved trace.

``pip install 'budgetloop[otel]'`` (opentelemetry-api and opentelemetry-sdk). ``import budgetloop``
never imports this module; importing it without OpenTelemetry is an ImportError naming the extra.

- ``OtelHook(...)`` is an ``on_step`` hook: ``run(..., on_step=OtelHook())`` exports each step's
  spans when the step is committed and ends the run's span when the run stops.
- ``export_trace(trace)`` exports a finished run (a ``Result``, its ``to_dict()`` data, or a
  path ``load_trace`` reads) after the fact, with times laid out from the recorded seconds.

Spans: ``invoke_agent`` for the run, a ``chat {model}`` child per model call and an
``execute_tool {name}`` child per tool call that ran, all with the run's id as
``gen_ai.conversation.id``; the run span's status is OK for an answer and ERROR for any other
stop. See docs/otel.md for every attribute. The trace records the model that served each reply
(when the completion named it) but not the model asked for or the provider: pass ``model=``
and ``provider=``, or let ``OtelHook`` read them from an adapter.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from opentelemetry import trace as _trace_api
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "budgetloop.otel: OpenTelemetry must be installed, got none; pip install "
        "'budgetloop[otel]' (opentelemetry-api and opentelemetry-sdk)."
    ) from exc

from . import __version__
from ._engine._types import Message
from ._engine._valid import type_name
from ._forms import _otel_attrs as attrs
from ._forms._otel_attrs import Names
from ._forms._redact import PLAIN, Redactor
from ._trace._journal import as_result
from ._trace._result import Result, Step

__all__ = ["OtelHook", "export_trace"]

Redact = Callable[[str], str]
_SCOPE = "budgetloop"


@dataclass(frozen=True)
class _Options:
    tracer: Any
    names: Names
    content: bool
    redact: Redactor


_LAST_NS = 2**64 - 1  # OpenTelemetry's timestamps are unsigned 64-bit nanoseconds


def _ns(seconds: float) -> int:
    """``seconds`` as nanoseconds, within what a span's timestamp can hold (a step that
    lasted longer than about 584 years ends at the last one)."""
    ns = seconds * 1e9
    return _LAST_NS if not ns < _LAST_NS else max(0, round(ns))


def _options(
    where: str,
    tracer_provider: Any,
    content: Any,
    redact: Any,
    model: Any,
    provider: Any,
    agent_name: Any,
) -> _Options:
    """Checked options: a wrong type is a TypeError naming the option, at construction."""
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(
            f"{where}: tracer_provider must be a TracerProvider or None, "
            f"got {type_name(tracer_provider)}."
        )
    if not isinstance(content, bool):
        raise TypeError(f"{where}: content must be bool, got {type_name(content)}.")
    if redact is not None and not callable(redact):
        raise TypeError(
            f"{where}: redact must be a function str -> str or None, got {type_name(redact)}."
        )
    for name, value in (("model", model), ("provider", provider), ("agent_name", agent_name)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{where}: {name} must be str or None, got {type_name(value)}.")
    tracer = _trace_api.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
    return _Options(tracer, Names(model, provider, agent_name), content, _checked(where, redact))


def _checked(where: str, redact: Redact | None) -> Redactor:
    if redact is None:
        return PLAIN

    def checked(text: str) -> str:
        out = redact(text)
        if not isinstance(out, str):
            raise TypeError(f"{where}: what redact returns must be a str, got {type_name(out)}.")
        return out

    return Redactor(checked)


@dataclass(frozen=True)
class _Span:
    """A span to emit: everything computed (and redacted) before any span is started, so a
    ``redact`` that raises leaves nothing half exported."""

    name: str
    kind: SpanKind
    attributes: dict[str, Any]
    start: int
    end: int
    error: str | None = None  # the ERROR status's description ("" for none)


def _start_agent(options: _Options, start_ns: int, result: Result) -> Any:
    return options.tracer.start_span(
        attrs.agent_name(options.names),
        kind=SpanKind.INTERNAL,
        attributes={**attrs.agent_start(options.names, result), **_conversation(result)},
        start_time=start_ns,
    )


def _conversation(result: Result) -> dict[str, Any]:
    """On every span of a run: the run's id, so a viewer groups its spans as one session (a
    fork's run span names the run it came from: ``budgetloop.forked_from``)."""
    return {"gen_ai.conversation.id": result.run_id}


def _agent_end(options: _Options, result: Result) -> tuple[dict[str, Any], Status | None]:
    """The run span's closing attributes, and its status: OK for a run that answered, ERROR
    for one a ceiling or an error ended (None for a run not ended yet)."""
    values = attrs.agent_end(result, options.redact, options.content)
    if options.content:
        first = attrs.sent_before(result)[0] if result.steps else result.messages
        values.update(attrs.inputs(first, options.redact))
        values.update(attrs.prompt(first, options.redact))
    if result.stop is None:
        return values, None
    if result.answered:
        return values, Status(StatusCode.OK)
    why = result.error if result.error is not None else result.detail
    return values, Status(StatusCode.ERROR, _description(why or "", options) or None)


def _end_agent(span: Any, values: dict[str, Any], status: Status | None, end_ns: int) -> None:
    span.set_attributes(values)
    if status is not None:
        span.set_status(status)
    span.end(end_time=end_ns)


def _description(message: str, options: _Options) -> str:
    """An error's text, for the ERROR status: only when content is on ("" otherwise)."""
    return options.redact.text(message) if options.content else ""


def _plan_step(
    options: _Options,
    step: Step,
    start_ns: int,
    result: Result,
    sent: Sequence[Message] | None,
) -> list[_Span]:
    """The step's ``chat`` span from ``start_ns`` and its ``execute_tool`` spans after it."""
    chat_end = start_ns + _ns(attrs.model_seconds(step))
    run = _conversation(result)
    values = attrs.chat(
        step,
        options.names,
        result.max_output_tokens,
        sent,
        options.redact,
        result.price,
        result.options.get("settings"),
    )
    if sent is not None and not step.final_answer:  # content: the tools the call was offered
        values.update(attrs.definitions(result.tools, options.redact))  # (a final answer: none)
    plan = [
        _Span(
            attrs.chat_name(options.names),
            SpanKind.CLIENT,
            {**values, **run},
            start_ns,
            chat_end,
            None if step.error is None else _description(step.error, options),
        )
    ]
    for call in attrs.executed(step):
        about = attrs.description(result.tools, call.name)
        values = {**attrs.tool(call, options.content, options.redact, about), **run}
        failed = call.status == "error" and call.error is not None
        plan.append(
            _Span(
                f"execute_tool {values['gen_ai.tool.name']}",
                SpanKind.INTERNAL,
                values,
                chat_end,
                chat_end + _ns(attrs.seconds(call.seconds)),
                _description(call.error or "", options) if failed else None,
            )
        )
    return plan


def _emit(options: _Options, parent: Any, plan: Sequence[_Span]) -> None:
    context = _trace_api.set_span_in_context(parent)
    for item in plan:
        span = options.tracer.start_span(
            item.name,
            context=context,
            kind=item.kind,
            attributes=item.attributes,
            start_time=item.start,
        )
        if item.error is not None:  # an error mark, and the event the UIs show it by
            span.set_status(Status(StatusCode.ERROR, item.error or None))
            failure = {"exception.type": str(item.attributes.get("error.type", "error"))}
            if item.error:
                failure["exception.message"] = item.error
            span.add_event("exception", failure, timestamp=item.end)
        span.end(end_time=item.end)


def _as_result(trace: Any) -> Result:
    return as_result(trace, "export_trace")


def export_trace(
    trace: Result | dict[str, Any] | str | os.PathLike[str],
    tracer_provider: Any = None,
    *,
    content: bool = False,
    redact: Redact | None = None,
    model: str | None = None,
    provider: str | None = None,
    agent_name: str | None = None,
    start_time: float | None = None,
) -> None:
    """Export a finished (or partial) run as spans, after the fact.

    ``start_time`` is when the run started, in seconds since the epoch (``time.time()``); by
    default the run is laid out to end now. Steps follow each other by their recorded
    ``seconds``; in a step the model call comes first and lasts the step's seconds less its
    longest tool call, then the step's tool calls start together. ``tracer_provider`` defaults to
    the global one. ``content=True`` adds messages, tool arguments and results and the stop's
    detail (which can quote the calls), each through ``redact`` by the trace's own rule.
    """
    options = _options(
        "export_trace", tracer_provider, content, redact, model, provider, agent_name
    )
    result = _as_result(trace)
    total = max(attrs.seconds(result.seconds), sum(attrs.seconds(s.seconds) for s in result.steps))
    if start_time is None:
        start_ns = max(0, time.time_ns() - _ns(total))
    else:
        if isinstance(start_time, bool) or not isinstance(start_time, (int, float)):
            raise TypeError(
                f"export_trace: start_time must be seconds since the epoch (a number) or None, "
                f"got {type_name(start_time)}."
            )
        if attrs.seconds(start_time) != start_time:
            raise ValueError(
                "export_trace: start_time must be a finite number of seconds >= 0 since the "
                f"epoch, got {start_time!r}."
            )
        start_ns = _ns(start_time)
    sent = attrs.sent_before(result) if content else None
    plan: list[_Span] = []
    at = start_ns
    for i, step in enumerate(result.steps):
        steps = _plan_step(options, step, at, result, None if sent is None else sent[i])
        plan += steps
        at = min(_LAST_NS, max(at + _ns(attrs.seconds(step.seconds)), *(s.end for s in steps)))
    values, status = _agent_end(options, result)
    agent = _start_agent(options, start_ns, result)
    _emit(options, agent, plan)
    _end_agent(agent, values, status, min(_LAST_NS, max(at, start_ns + _ns(total))))


@dataclass
class _Live:
    span: Any
    next_index: int = 0
    ended: bool = False


class OtelHook:
    """``on_step`` for ``start()``/``run()``: each committed step becomes a ``chat`` span and
    its ``execute_tool`` spans, under one ``invoke_agent`` span per session that ends when the
    session is done.

    Spans carry what the trace holds (so the run's own ``redact=`` has already applied), then
    this hook's ``redact``. ``model`` and ``provider`` default to the adapter's (``openai_chat``,
    ``anthropic_messages``) when the session's model is one. One hook can serve many sessions
    (``session.fresh()`` starts a new ``invoke_agent`` span).
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        content: bool = False,
        redact: Redact | None = None,
        model: str | None = None,
        provider: str | None = None,
        agent_name: str | None = None,
    ) -> None:
        self._options = _options(
            "OtelHook", tracer_provider, content, redact, model, provider, agent_name
        )
        self._runs: weakref.WeakKeyDictionary[Any, _Live] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, session: Any, step: Step | None) -> None:
        if step is not None and not isinstance(step, Step):
            raise TypeError(f"OtelHook: step must be a Step or None, got {type_name(step)}.")
        now = time.time_ns()
        with self._lock:
            live = self._runs.get(session)
            if live is not None and live.ended:
                return
            result: Result = session.result
            options = self._for(session)
            plan: list[_Span] = []
            upto = len(result.steps) if step is None else step.index + 1
            first = getattr(session, "_kept", upto - 1) if live is None else live.next_index
            if step is None and live is None:
                first = upto
            # this step, and before it any an interrupt kept from this hook (they were billed)
            ends = now
            for index in range(upto - 1, first - 1, -1):
                shown = step if step is not None and index == step.index else result.steps[index]
                traced = _traced(result, shown)
                sent = None
                if options.content and traced.index < len(result.steps):
                    sent = attrs.sent_before(result)[traced.index]
                began = max(0, ends - _ns(attrs.seconds(shown.seconds)))
                plan = _plan_step(options, traced, began, result, sent) + plan
                ends = began
            closing = _agent_end(options, result) if session.done else None
            if live is None:
                live = _Live(_start_agent(options, ends, result))
                self._runs[session] = live
            _emit(options, live.span, plan)
            live.next_index = max(live.next_index, upto)
            if closing is not None:
                live.ended = True
                _end_agent(live.span, *closing, now)

    def _for(self, session: Any) -> _Options:
        """The options, with the model and provider read from an adapter when not given."""
        options = self._options
        names = options.names
        complete = getattr(session, "complete", None)
        model = names.model
        if model is None and isinstance(getattr(complete, "model", None), str):
            model = complete.model  # type: ignore[union-attr]
        provider = names.provider
        adapter = getattr(complete, "provider_name", None)  # the adapters carry it
        if provider is None and isinstance(adapter, str):
            provider = adapter
        if (model, provider) == (names.model, names.provider):
            return options
        return _Options(
            options.tracer, Names(model, provider, names.agent), options.content, options.redact
        )


def _traced(result: Result, step: Step) -> Step:
    """The step as the trace holds it (after the run's ``redact=``), else as given."""
    if step.index < len(result.steps) and result.steps[step.index].index == step.index:
        return result.steps[step.index]
    return step
