"""openai-agents' trace export: the ``export()`` of each trace and span (``"object": "trace"`` /
``"trace.span"``), as a JSON array, an object with ``data`` (what its exporter posts), or JSON
Lines; an ``event`` key beside them (a processor's record of start and end) is ignored.

A run is a trace with model calls: ``generation`` spans (chat-format input, output items, usage)
or ``response`` spans (only the response id and usage). Each is a step, in time order. Its
``function`` spans are the tool runs; they carry no call id, so they are paired with the calls
by order and name, and where the reply is not recorded (a ``response`` span) they are the step's
calls, with each ``handoff`` span as the call openai-agents makes for a handoff by default. The
run's end is its agent and turn spans' errors and its tripped guardrails (``_end``)."""

from __future__ import annotations

import json
import re
from typing import Any

from .._engine._types import Message, ToolCall, Usage
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from . import _chat
from ._build import Call, Execution, Run, Turn
from ._ends import ended, guarded
from ._fields import count, data, items, obj, text, timestamp, tokens_cached, tokens_reasoned
from ._genai import as_text

OBJECTS = ("trace", "trace.span")


def is_item(value: Any) -> bool:
    return isinstance(value, dict) and value.get("object") in OBJECTS


def looks_like(value: Any) -> bool:
    """A list of exported traces and spans, or an object with ``data`` holding them."""
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value = value["data"]
    return isinstance(value, list) and bool(value) and all(is_item(v) for v in value)


def runs(found: list[tuple[Any, str]], path: str | None) -> list[Run]:
    """One run per trace with a model call, in the order the traces first appear."""
    names: dict[str, str] = {}
    spans: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for raw, where in found:
        item = obj(raw, where)
        kind = get(item, where, "object")
        if kind == "trace":
            trace = text(get(item, where, "id"), at(where, "id"), optional=False)
            name = text(item.get("workflow_name"), at(where, "workflow_name"))
            names[trace] = name or trace
            spans.setdefault(trace, [])
        elif kind == "trace.span":
            trace = text(get(item, where, "trace_id"), at(where, "trace_id"), optional=False)
            spans.setdefault(trace, []).append((item, where))
        else:
            raise ValueError(
                f"{at(where, 'object')} must be one of {', '.join(OBJECTS)}, got {kind!r}."
            )
    out = []
    found_kinds: set[str] = set()
    for trace, entries in spans.items():
        kinds = [_kind(item, where) for item, where in entries]
        found_kinds.update(kinds)
        if any(k in ("generation", "response", "agent") for k in kinds):
            out.append(_run(trace, names.get(trace), entries, kinds, path))
    if found_kinds and not out:
        shown = ", ".join(sorted(repr(k[:40]) for k in found_kinds))
        raise ValueError(
            "the spans must be a run's: a generation, response or agent span among them, got "
            f"openai-agents spans of the types {shown} only."
        )
    return out


def _kind(item: dict[str, Any], where: str) -> str:
    span_data = obj(get(item, where, "span_data"), at(where, "span_data"))
    return str(
        text(
            get(span_data, at(where, "span_data"), "type"),
            at(at(where, "span_data"), "type"),
            optional=False,
        )
    )


def _times(item: dict[str, Any], where: str) -> tuple[float, float]:
    start = timestamp(item.get("started_at"), at(where, "started_at"))
    end = timestamp(item.get("ended_at"), at(where, "ended_at"))
    if start is None:
        got = "None" if "started_at" in item else "nothing"
        raise ValueError(f"{at(where, 'started_at')} must be an ISO 8601 time, got {got}.")
    return start, max(start, end if end is not None else start)


def _error(item: dict[str, Any], where: str) -> str | None:
    """A span's error: its message, and the error its data names (a tool's exception)."""
    raw = item.get("error")
    if raw is None:
        return None
    error = obj(raw, at(where, "error"))
    message = text(
        get(error, at(where, "error"), "message", ""),
        at(at(where, "error"), "message"),
        optional=False,
    )
    detail = error.get("data")
    said = None
    if isinstance(detail, dict):
        said = detail.get("error", detail.get("guardrail"))
        turns = detail.get("max_turns")
        if isinstance(turns, int) and not isinstance(turns, bool):
            said = f"max_turns={turns}"
    return f"{message}: {said}" if isinstance(said, str) and said else message


def _usage(raw: Any, path: str) -> Usage | None:
    if raw is None:
        return None
    usage = obj(raw, path)
    inputs = usage.get("input_tokens", usage.get("prompt_tokens"))
    outputs = usage.get("output_tokens", usage.get("completion_tokens"))
    if inputs is None or outputs is None:
        return None
    details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}
    where = at(path, "input_tokens_details")
    details = obj(details, where)
    inputs_n = count(inputs, at(path, "input_tokens")) or 0
    cached_n = count(details.get("cached_tokens"), at(where, "cached_tokens")) or 0
    written_n = count(details.get("cache_write_tokens"), at(where, "cache_write_tokens")) or 0
    tokens_cached(at(path, "input_tokens"), inputs_n, cached_n + written_n)
    outputs_n = count(outputs, at(path, "output_tokens")) or 0
    out_details = usage.get("output_tokens_details") or usage.get("completion_tokens_details")
    out_where = at(path, "output_tokens_details")
    out_details = obj(out_details or {}, out_where)
    reasoning_n = count(out_details.get("reasoning_tokens"), at(out_where, "reasoning_tokens"))
    tokens_reasoned(at(path, "output_tokens"), outputs_n, reasoning_n or 0)
    return Usage(inputs_n, outputs_n, cached_n, written_n, reasoning_n or 0)


def _output(value: Any, path: str) -> tuple[str | None, list[Call]]:
    """A generation's output: Responses items (``message``, ``function_call``) or Chat
    Completions messages, as the reply's text and calls."""
    texts: list[str] = []
    calls: list[Call] = []
    for i, raw in enumerate(items(value, path, optional=True)):
        where = at(path, i)
        item = obj(raw, where)
        kind = item.get("type")
        if kind == "function_call":
            calls.append(
                Call(
                    text(get(item, where, "name"), at(where, "name")),
                    text(item.get("call_id"), at(where, "call_id")),
                    data(get(item, where, "arguments", "{}"), at(where, "arguments")),
                )
            )
        elif kind == "message" or item.get("role") == "assistant":
            said = _chat.content(item.get("content"), at(where, "content"))
            if said:
                texts.append(said)
            calls += [Call(n, c, a) for n, c, a in _chat.calls(item, where)]
    return ("".join(texts) if texts else None), calls


def _turn(item: dict[str, Any], where: str, kind: str) -> Turn:
    start, end = _times(item, where)
    span_path = at(where, "span_data")
    span_data = obj(item["span_data"], span_path)
    turn = Turn(start=start, end=end, usage=_usage(span_data.get("usage"), at(span_path, "usage")))
    turn.error = _error(item, where)
    if kind == "response":
        turn.response_id = text(span_data.get("response_id"), at(span_path, "response_id"))
        return turn
    turn.model = text(span_data.get("model"), at(span_path, "model"))
    if turn.error is None:
        turn.text, turn.calls = _output(span_data.get("output"), at(span_path, "output"))
    return turn


def _execution(item: dict[str, Any], where: str, order: int) -> Execution:
    start, end = _times(item, where)
    span_path = at(where, "span_data")
    span_data = obj(item["span_data"], span_path)
    output = span_data.get("output")
    result = None if output is None else as_text(data(output, at(span_path, "output")))
    return Execution(
        name=text(span_data.get("name"), at(span_path, "name")),
        call_id=None,
        arguments=data(span_data.get("input"), at(span_path, "input")),
        start=start,
        seconds=end - start,
        result=result,
        error=_error(item, where),
        order=order,
        read=result,  # what the model was sent, a failure's too (not the error it logged)
    )


def _handoff(item: dict[str, Any], where: str, order: int) -> Execution:
    """A handoff where the model's reply is not recorded (a ``response`` span): the call
    openai-agents makes for it by default, ``transfer_to_<agent>`` (the agent's name in
    lower case, anything but letters, digits and ``_`` as ``_``), and its default result,
    ``{"assistant": "<agent>"}``."""
    start, end = _times(item, where)
    span_path = at(where, "span_data")
    target = text(item["span_data"].get("to_agent"), at(span_path, "to_agent")) or ""
    said = json.dumps({"assistant": target})
    return Execution(
        name=re.sub(r"[^a-zA-Z0-9_]", "_", f"transfer_to_{target}").lower(),
        call_id=None,
        arguments="{}",
        start=start,
        seconds=end - start,
        result=said,
        order=order,
        read=said,
    )


def _context(value: Any, path: str) -> list[Message]:
    """The first model call's input: chat messages, or Responses input items (a function call
    and its output as an assistant call and a ``tool`` message; other items left out)."""
    if isinstance(value, str):
        return [Message("user", value)]
    out = []
    for i, raw in enumerate(items(value, path)):
        where = at(path, i)
        item = obj(raw, where)
        if "role" in item:
            out.append(_chat.message(item, where))
        elif item.get("type") == "function_call":
            name = text(get(item, where, "name"), at(where, "name"))
            arguments = data(get(item, where, "arguments", "{}"), at(where, "arguments"))
            call_id = text(item.get("call_id"), at(where, "call_id"))
            out.append(Message("assistant", None, (ToolCall(name, arguments, call_id),)))
        elif item.get("type") == "function_call_output":
            output = as_text(data(item.get("output", ""), at(where, "output")))
            out.append(
                Message(
                    "tool", output, tool_call_id=text(item.get("call_id"), at(where, "call_id"))
                )
            )
    return out


def _run(
    trace: str,
    name: str | None,
    entries: list[tuple[dict[str, Any], str]],
    kinds: list[str],
    path: str | None,
) -> Run:
    numbered = [
        (order, item, where, kind)
        for order, ((item, where), kind) in enumerate(zip(entries, kinds, strict=True))
        if kind in ("generation", "response")
    ]
    calls = [(item, where, kind) for _, item, where, kind in numbered]
    turns = [_turn(item, where, kind) for item, where, kind in calls]
    for turn, (order, _, _, _) in zip(turns, numbered, strict=True):
        turn.order = order  # its place in the file: what started at the same time, in order
    context: list[Message] = []
    max_tokens = None
    first = min(calls, key=lambda c: _times(c[0], c[1])[0]) if calls else None
    if first is not None and first[2] == "generation":
        span_path = at(first[1], "span_data")
        span_data = obj(first[0]["span_data"], span_path)
        if span_data.get("input") is not None:
            context = _context(span_data["input"], at(span_path, "input"))
        config = span_data.get("model_config")
        if isinstance(config, dict):
            max_tokens = count(
                config.get("max_tokens"), at(at(span_path, "model_config"), "max_tokens")
            )
    executions = [
        _execution(item, where, order)
        for order, ((item, where), k) in enumerate(zip(entries, kinds, strict=True))
        if k == "function"
    ]
    if not all(k == "generation" for _, _, k in calls):  # the replies are not recorded
        executions += [
            _handoff(item, where, order)
            for order, ((item, where), k) in enumerate(zip(entries, kinds, strict=True))
            if k == "handoff"
        ]
    run = Run(
        format="openai-agents",
        source=f"openai-agents trace {name}" if name and name != trace else "openai-agents",
        path=path,
        turns=turns,
        context=context,
        executions=executions,
        run_id=trace,
        max_output_tokens=max_tokens,
        content=all(k == "generation" for _, _, k in calls),
        read=_read(calls),
    )
    _end(run, entries, kinds, turns)
    return run


def _read(calls: list[tuple[dict[str, Any], str, str]]) -> dict[str, str]:
    """What each call's result was sent to a model as, by call id: the tool results in the
    model calls' recorded input (a handoff's too, which no function span records)."""
    out: dict[str, str] = {}
    for item, where, kind in calls:
        span_path = at(where, "span_data")
        sent = item["span_data"].get("input") if kind == "generation" else None
        if sent is None or isinstance(sent, str):
            continue
        for message in _context(sent, at(span_path, "input")):
            if message.role == "tool" and message.tool_call_id:
                out.setdefault(message.tool_call_id, message.content or "")
    return out


def _end(
    run: Run, entries: list[tuple[dict[str, Any], str]], kinds: list[str], turns: list[Turn]
) -> None:
    """How the run ended, where the export says: a tripped guardrail (an input guardrail
    before the first model call, an output one after the last), else the first error of an
    agent or turn span (max turns, an exception raised out of the run)."""
    errors = [
        _error(item, where)
        for (item, where), kind in zip(entries, kinds, strict=True)
        if kind in ("agent", "custom")
    ]
    said = next((e for e in errors if e is not None), None)
    last = max((t.end for t in turns), default=None)
    for (item, where), kind in zip(entries, kinds, strict=True):
        span_data = item["span_data"]
        if kind != "guardrail" or span_data.get("triggered") is not True:
            continue
        name = text(span_data.get("name"), at(at(where, "span_data"), "name"))
        start, _ = _times(item, where)
        which = "output" if last is not None and start >= last else "input"
        run.stop, run.detail = guarded(which, name)
        run.error = said or f"Guardrail tripwire triggered: {name}"
        run.raised = run.stop_known = True
        return
    if said is not None:
        limit = "max_turns" if "max_turns=" in said else None
        run.stop, run.detail = ended(said, limit)
        run.error, run.raised, run.stop_known = said, True, True
