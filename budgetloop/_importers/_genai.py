"""Messages in the OpenTelemetry GenAI conventions' JSON format (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``) read as
budgetloop's ``Message``s, replies and tool schemas, every field checked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._engine._types import Message, ToolCall
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from ._fields import data, items, obj, text


@dataclass
class Reply:
    """What one output message says: its text, the calls it asks for, why it ended."""

    text: str | None
    calls: list[tuple[str | None, str | None, Any]]  # name, id, arguments as sent
    finish_reason: str | None


def as_text(value: Any) -> str:
    """A tool's response as text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parts(message: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any], str]]:
    out = []
    where = at(path, "parts")
    for i, raw in enumerate(items(get(message, path, "parts", []), where, optional=True)):
        part = obj(raw, at(where, i))
        kind = text(get(part, at(where, i), "type"), at(at(where, i), "type"), optional=False)
        out.append((kind, part, at(where, i)))
    return out


def _call(part: dict[str, Any], path: str) -> tuple[str | None, str | None, Any]:
    return (
        text(get(part, path, "name", None), at(path, "name")),
        text(get(part, path, "id", None), at(path, "id")),
        data(get(part, path, "arguments", "{}"), at(path, "arguments")),  # none: no arguments
    )


def _joined(texts: list[str]) -> str | None:
    return "".join(texts) if texts else None


def reply(value: Any, path: str) -> Reply | None:
    """The first output message (the one choice a loop reads), or None when there is none."""
    messages = items(value, path)
    if not messages:
        return None
    message = obj(messages[0], at(path, 0))
    where = at(path, 0)
    texts: list[str] = []
    calls = []
    for kind, part, part_path in _parts(message, where):
        if kind == "text":
            texts.append(
                text(get(part, part_path, "content"), at(part_path, "content"), optional=False)
            )
        elif kind == "tool_call":
            calls.append(_call(part, part_path))
    finish = text(get(message, where, "finish_reason", None), at(where, "finish_reason"))
    return Reply(_joined(texts), calls, finish)


def messages(value: Any, path: str) -> list[Message]:
    """Input messages as budgetloop's: a message's text parts joined; a tool response part is
    a ``tool`` message of its own (a framework may put several in one message); parts that are
    neither (images, reasoning) are left out."""
    out: list[Message] = []
    for i, raw in enumerate(items(value, path)):
        where = at(path, i)
        message = obj(raw, where)
        role = text(get(message, where, "role"), at(where, "role"), optional=False)
        texts: list[str] = []
        calls: list[ToolCall] = []
        responses: list[Message] = []
        for kind, part, part_path in _parts(message, where):
            if kind == "text":
                texts.append(
                    text(get(part, part_path, "content"), at(part_path, "content"), optional=False)
                )
            elif kind == "tool_call":
                name, call_id, arguments = _call(part, part_path)
                calls.append(ToolCall(name, arguments, call_id))  # type: ignore[arg-type]
            elif kind == "tool_call_response":
                response = get(part, part_path, "response", get(part, part_path, "result", ""))
                responses.append(
                    Message(
                        "tool",
                        as_text(data(response, at(part_path, "response"))),
                        tool_call_id=text(get(part, part_path, "id", None), at(part_path, "id")),
                        name=text(get(part, part_path, "name", None), at(part_path, "name")),
                    )
                )
        if responses:
            out += responses
        elif role in ("system", "developer"):
            out.append(Message("system", _joined(texts) or ""))
        elif role == "assistant":
            out.append(Message("assistant", _joined(texts), tuple(calls)))
        else:
            out.append(Message("user", _joined(texts) or ""))
    return out


def instructions(value: Any, path: str) -> list[Message]:
    """``gen_ai.system_instructions``: each text part a system message."""
    out = []
    for i, raw in enumerate(items(value, path)):
        part = obj(raw, at(path, i))
        if get(part, at(path, i), "type", None) == "text":
            content = text(
                get(part, at(path, i), "content"), at(at(path, i), "content"), optional=False
            )
            out.append(Message("system", content))
    return out


def definitions(value: Any, path: str) -> tuple[dict[str, Any], ...]:
    """``gen_ai.tool.definitions`` as budgetloop's tool schemas (name, description,
    parameters); a definition with no name is left out."""
    out = []
    for i, raw in enumerate(items(value, path)):
        where = at(path, i)
        item = obj(raw, where)
        name = text(get(item, where, "name", None), at(where, "name"))
        if name is None:
            continue
        schema: dict[str, Any] = {"name": name}
        about = text(get(item, where, "description", None), at(where, "description"))
        if about is not None:
            schema["description"] = about
        parameters = get(item, where, "parameters", None)
        if parameters is not None:
            schema["parameters"] = data(
                obj(parameters, at(where, "parameters")), at(where, "parameters")
            )
        out.append(schema)
    return tuple(out)
