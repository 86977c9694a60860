"""An Anthropic Messages log: the ``messages`` a program sends to ``messages.create`` (a JSON
array), or the request itself (an object with ``messages``, and ``system`` and ``tools`` when it
has them). Assistant messages hold ``text`` and ``tool_use`` blocks; user messages hold text and
``tool_result`` blocks, each answering a ``tool_use`` by its id. An assistant message kept as the
whole API response (``"type": "message"``) gives its usage, model, id and stop reason too.

Each assistant message is a step; a ``tool_result`` is what the model read as that call's result
(its error, when ``is_error``). ``thinking`` blocks are left out; a block of a type not named
here is refused, never skipped in silence. A log records no time and no cost.
"""

from __future__ import annotations

from typing import Any

from .._engine._types import Message, Usage
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from ._build import Call, Execution, Run, Turn
from ._chat import _names_by_id as names_by_id  # a tool_result names no tool
from ._fields import content_hash, count, data, items, obj, text

BLOCKS = ("text", "tool_use", "tool_result", "thinking", "redacted_thinking")
TOOL_BLOCKS = ("tool_use", "tool_result")


def _log(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return value


def looks_like(value: Any) -> bool:
    """Messages with roles, one of them holding a ``tool_use`` or ``tool_result`` block (a log
    of text alone reads the same as a Chat Completions log)."""
    log = _log(value)
    if not isinstance(log, list) or not log:
        return False
    return all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in log) and any(
        isinstance(b, dict) and b.get("type") in TOOL_BLOCKS
        for m in log
        if isinstance(m.get("content"), list)
        for b in m["content"]
    )


def _blocks(message: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any], str]]:
    """A message's content blocks with their types; a string is one text block."""
    where = at(path, "content")
    content = get(message, path, "content")
    if isinstance(content, str):
        return [("text", {"type": "text", "text": content}, where)]
    out = []
    for i, raw in enumerate(items(content, where)):
        block = obj(raw, at(where, i))
        kind = text(get(block, at(where, i), "type"), at(at(where, i), "type"), optional=False)
        if kind not in BLOCKS:
            raise ValueError(
                f"{at(at(where, i), 'type')} must be one of {', '.join(BLOCKS)}, got {kind!r}."
            )
        out.append((kind, block, at(where, i)))
    return out


def _text(block: dict[str, Any], path: str) -> str:
    return str(text(get(block, path, "text"), at(path, "text"), optional=False))


def _result(block: dict[str, Any], path: str) -> str:
    """What a ``tool_result`` gave the model: its string, or its text blocks joined."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    where = at(path, "content")
    texts = []
    for i, raw in enumerate(items(content, where)):
        part = obj(raw, at(where, i))
        if part.get("type") != "text":
            raise ValueError(
                f"{at(at(where, i), 'type')} must be 'text', got {part.get('type')!r}."
            )
        texts.append(_text(part, at(where, i)))
    return "".join(texts)


def _usage(message: dict[str, Any], path: str) -> Usage | None:
    """An API response's usage as budgetloop counts it: the whole input, cache included."""
    raw = message.get("usage")
    if raw is None:
        return None
    where = at(path, "usage")
    usage = obj(raw, where)
    fresh = count(get(usage, where, "input_tokens"), at(where, "input_tokens")) or 0
    read = count(usage.get("cache_read_input_tokens"), at(where, "cache_read_input_tokens")) or 0
    key = "cache_creation_input_tokens"
    written = count(usage.get(key), at(where, key)) or 0
    output = count(get(usage, where, "output_tokens"), at(where, "output_tokens")) or 0
    return Usage(fresh + read + written, output, read, written)


def _system(value: Any, path: str) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("system", value)]
    return [Message("system", _text(obj(b, at(path, i)), at(path, i))) for i, b in
            enumerate(items(value, path))]  # fmt: skip


def _tools(value: Any, path: str) -> tuple[dict[str, Any], ...]:
    out = []
    for i, raw in enumerate(items(value, path, optional=True)):
        where = at(path, i)
        tool = obj(raw, where)
        name = text(tool.get("name"), at(where, "name"))
        if name is None:
            continue
        schema: dict[str, Any] = {"name": name}
        about = text(tool.get("description"), at(where, "description"))
        if about is not None:
            schema["description"] = about
        if tool.get("input_schema") is not None:
            schema["parameters"] = data(
                obj(tool["input_schema"], at(where, "input_schema")), at(where, "input_schema")
            )
        out.append(schema)
    return tuple(out)


def _user(
    message: dict[str, Any], path: str, position: int
) -> tuple[Message | None, list[Execution]]:
    """A user message: its text, and the tool results it carries."""
    texts, results = [], []
    for kind, block, where in _blocks(message, path):
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_result":
            said = _result(block, where)
            failed = block.get("is_error") is True
            results.append(
                Execution(
                    None,
                    text(
                        get(block, where, "tool_use_id"), at(where, "tool_use_id"), optional=False
                    ),
                    None,
                    float(position),
                    result=None if failed else said,
                    error=said if failed else None,
                    order=position,
                    read=said,
                )
            )
    prompt = Message("user", "".join(texts)) if texts or not results else None
    return prompt, results


def _assistant(message: dict[str, Any], path: str, position: int) -> Turn:
    texts: list[str] = []
    calls: list[Call] = []
    for kind, block, where in _blocks(message, path):
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_use":
            calls.append(
                Call(
                    text(get(block, where, "name"), at(where, "name"), optional=False),
                    text(get(block, where, "id"), at(where, "id"), optional=False),
                    data(get(block, where, "input", {}), at(where, "input")),
                )
            )
    turn = Turn(float(position), float(position), "".join(texts) if texts else None)
    turn.calls, turn.order = calls, position
    turn.usage = _usage(message, path)
    turn.model = text(message.get("model"), at(path, "model"))
    turn.response_id = text(message.get("id"), at(path, "id"))
    turn.finish_reason = text(message.get("stop_reason"), at(path, "stop_reason"))
    return turn


def run(document: Any, path: str | None, raw: bytes) -> Run:
    """The log as one run: the messages before the first assistant message are its context."""
    where = "messages" if isinstance(document, dict) else ""
    top = document if isinstance(document, dict) else {}
    log = items(get(document, "", "messages") if where else document, where)
    context = _system(top.get("system"), "system")
    turns: list[Turn] = []
    executions: list[Execution] = []
    for position, raw_message in enumerate(log):
        mpath = at(where, position)
        message = obj(raw_message, mpath)
        role = text(get(message, mpath, "role"), at(mpath, "role"), optional=False)
        if role == "assistant":
            turns.append(_assistant(message, mpath, position))
        elif role == "user":
            said, results = _user(message, mpath, position)
            if not turns:
                context += [m for m in [said] if m is not None]
            executions += results
        else:
            raise ValueError(f"{at(mpath, 'role')} must be user or assistant, got {role!r}.")
    names_by_id(turns, executions)
    return Run(
        format="anthropic",
        source="an Anthropic Messages log",
        path=path,
        turns=turns,
        context=context,
        executions=executions,
        tools=_tools(top.get("tools"), "tools"),
        run_id=content_hash(raw),
        seconds=0.0,
        timed=False,
        max_output_tokens=count(top.get("max_tokens"), "max_tokens"),
    )
