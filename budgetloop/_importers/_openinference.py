"""OpenInference spans in OTLP JSON: what LangChain, LlamaIndex, the OpenAI and Anthropic
instrumentations and others send to Phoenix (``openinference.span.kind``).

A run is a trace with ``LLM`` spans. Each is a step: its output message
(``llm.output_messages.0.message.*``: content, tool calls), its token counts
(``llm.token_count.*``), its model (``llm.model_name``). ``TOOL`` spans are tool runs
(``tool.name``, ``input.value``, ``output.value``), paired by ``tool_call.id`` where they
carry one, else by order and name. The first model call's ``llm.input_messages.*`` is the
context, and every call's input says what the model read as each earlier call's result (its
``tool`` messages, by ``tool_call_id``): a program that runs its tools itself, with no ``TOOL``
span, still has them. The tools offered are ``llm.tools.*.tool.json_schema``. A root span that
failed is the run's end. A failed span's error is its exception event's type and message (not
its status message, where LangChain's tracer puts the exception's repr and whole traceback),
and the event's stacktrace is the step's or the call's ``traceback``, kept apart as a native
run keeps it.
"""

from __future__ import annotations

from typing import Any

from .._engine._types import Message, Usage
from .._engine._valid import type_name
from . import _chat
from ._build import Call, Execution, Run, Turn
from ._ends import ended
from ._fields import count, embedded, tokens_cached

KIND = "openinference.span.kind"


def is_span(span: Any) -> bool:
    return isinstance(span.get(KIND), str)


def _grouped(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened list attributes (``prefix.0.a.b``) as a list of dicts (``{"a.b": ...}``), in
    index order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if index.isdigit() and rest:
            found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{where} must be a string or None, got {type_name(value)}.")


def _message(fields: dict[str, Any], where: str) -> dict[str, Any]:
    """One message's flattened fields as a Chat Completions message."""
    content = _text(fields.get("message.content"), f"{where}.message.content")
    if content is None:
        parts = _grouped(fields, "message.contents.")
        texts = [
            p.get("message_content.text") for p in parts if p.get("message_content.type") == "text"
        ]
        content = "".join(t for t in texts if isinstance(t, str)) if parts else None
    calls = [
        {
            "id": c.get("tool_call.id"),
            "type": "function",
            "function": {
                "name": c.get("tool_call.function.name"),
                "arguments": c.get("tool_call.function.arguments", "{}"),
            },
        }
        for c in _grouped(fields, "message.tool_calls.")
    ]
    out: dict[str, Any] = {"role": fields.get("message.role", "user"), "content": content}
    if calls:
        out["tool_calls"] = calls
    for key in ("tool_call_id", "name"):
        if fields.get(f"message.{key}") is not None:
            out[key] = fields[f"message.{key}"]
    return out


def _messages(span: Any, prefix: str) -> list[Message]:
    raw = [_message(m, f"{prefix}{i}") for i, m in enumerate(_grouped(span.attributes, prefix))]
    return _chat.messages(raw, prefix.rstrip("."))


def _usage(span: Any) -> Usage | None:
    prompt, completion = span.get("llm.token_count.prompt"), span.get("llm.token_count.completion")
    if prompt is None or completion is None:
        return None
    keys = {
        "input": "llm.token_count.prompt",
        "output": "llm.token_count.completion",
        "read": "llm.token_count.prompt_details.cache_read",
        "write": "llm.token_count.prompt_details.cache_write",
    }
    n = {k: count(span.get(v), span.where(v)) or 0 for k, v in keys.items()}
    tokens_cached(span.where(keys["input"]), n["input"], n["read"] + n["write"])
    return Usage(n["input"], n["output"], n["read"], n["write"])


def _turn(span: Any, failure: str) -> Turn:
    turn = Turn(start=span.start, end=span.end, usage=_usage(span), order=span.order)
    turn.model = _text(span.get("llm.model_name"), span.where("llm.model_name"))
    if span.failed:
        turn.error, turn.traceback = failure, span.traceback
        return turn
    said = _messages(span, "llm.output_messages.")
    if said:
        turn.text = said[0].content
        turn.calls = [Call(c.name, c.id, c.arguments) for c in said[0].tool_calls]
    reason = span.get("llm.finish_reason")
    turn.finish_reason = reason if isinstance(reason, str) else None
    return turn


def _execution(span: Any, failure: str) -> Execution:
    arguments = span.get("input.value")
    result = span.get("output.value")
    return Execution(
        name=_text(span.get("tool.name"), span.where("tool.name")),
        call_id=_text(span.get("tool_call.id"), span.where("tool_call.id")),
        arguments=None if arguments is None else str(arguments),
        start=span.start,
        seconds=span.end - span.start,
        result=None if result is None or span.failed else str(result),
        error=failure if span.failed else None,
        traceback=span.traceback if span.failed else None,
        order=span.order,
    )


def _tools(chats: list[Any]) -> tuple[dict[str, Any], ...]:
    for span in chats:
        found = _grouped(span.attributes, "llm.tools.")
        if not found:
            continue
        out = []
        for i, tool in enumerate(found):
            raw = tool.get("tool.json_schema")
            where = span.where(f"llm.tools.{i}.tool.json_schema")
            schema = None if raw is None else embedded(raw, where)
            function = schema.get("function", schema) if isinstance(schema, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                out.append({k: function[k] for k in ("name", "description", "parameters")
                            if k in function})  # fmt: skip
        return tuple(out)
    return ()


def run(found: list[Any], path: str | None, failure: Any) -> Run:
    """The trace's spans as one run; ``failure(span)`` says what a failed span says."""
    ordered = sorted(found, key=lambda s: (s.start, s.order))
    chats = [s for s in ordered if s.get(KIND) == "LLM"]
    root = next((s for s in ordered if s.parent is None), None)
    read: dict[str, str] = {}
    for span in chats:
        for message in _messages(span, "llm.input_messages."):
            if message.role == "tool" and message.tool_call_id:
                read.setdefault(message.tool_call_id, message.content or "")
    first = root or ordered[0]
    out = Run(
        format="otlp",
        source=f"{first.scope} spans (OpenInference)",
        path=path,
        turns=[_turn(s, failure(s)) for s in chats],
        context=_messages(chats[0], "llm.input_messages.") if chats else [],
        executions=[_execution(s, failure(s)) for s in ordered if s.get(KIND) == "TOOL"],
        tools=_tools(chats),
        run_id=first.trace,
        read=read,
    )
    if root is not None and root.get(KIND) != "LLM":
        out.seconds = root.end - root.start
        if root.failed:
            said = failure(root) or "an error the source does not describe"
            out.stop, out.detail = ended(said)
            out.error, out.raised, out.stop_known = said, True, True
    return out
