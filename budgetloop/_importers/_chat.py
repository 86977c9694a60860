"""An OpenAI Chat Completions message log: a JSON array of messages, or an object with
``messages`` (the shape almost every framework can give: pydantic-ai, openai-agents, LangChain).

Each user turn is a run (a follow-up after a reply begins the next, with all before it as its
context); each assistant message is a step; its ``tool_calls`` are paired with the ``tool``
messages that answer them by ``tool_call_id``, else by order and name. A log holds no usage,
cost or time: those are left unknown, never made up. A ``tool`` message has no flag for a
failure: its call is ``ok``, its result what the model read, and ``imported.lacks`` names
``tool error flags``."""

from __future__ import annotations

from typing import Any

from .._engine._types import Message, ToolCall
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from ._build import Call, Execution, Run, Turn
from ._fields import content_hash, data, items, obj, text
from ._genai import as_text

ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


def looks_like(value: Any) -> bool:
    """A list of objects each with a ``role``, or an object with such a ``messages`` list."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)
    )


TEXT_PARTS = ("text", "input_text", "output_text", "refusal")  # "refusal" holds its text there
LEFT_OUT = ("image_url", "input_image", "input_audio", "file")  # what the model was shown


def content(value: Any, path: str) -> str | None:
    """A message's content: a string, or the text of its text parts joined (images, audio and
    files are left out; a part of any other type is refused, never skipped in silence)."""
    if value is None or isinstance(value, str):
        return value
    texts = []
    for i, raw in enumerate(items(value, path)):
        where = at(path, i)
        part = obj(raw, where)
        kind = part.get("type")
        if kind in TEXT_PARTS:
            key = "refusal" if kind == "refusal" else "text"
            texts.append(text(get(part, where, key), at(where, key), optional=False))
        elif kind not in LEFT_OUT:
            name, known = at(where, "type"), ", ".join((*TEXT_PARTS, *LEFT_OUT))
            if kind in ("tool_use", "tool_result"):
                raise ValueError(
                    f"{name} must be one of {known}, got {kind!r}. An Anthropic Messages log is "
                    "read with format='anthropic'."
                )
            raise ValueError(f"{name} must be one of {known}, got {kind!r}.")
    return "".join(texts)


def calls(message: dict[str, Any], path: str) -> list[tuple[str | None, str | None, Any]]:
    """An assistant message's tool calls: name, id and arguments as the model wrote them."""
    out = []
    where = at(path, "tool_calls")
    for i, raw in enumerate(items(message.get("tool_calls"), where, optional=True)):
        call_path = at(where, i)
        call = obj(raw, call_path)
        function = obj(get(call, call_path, "function"), at(call_path, "function"))
        fpath = at(call_path, "function")
        out.append(
            (
                text(get(function, fpath, "name"), at(fpath, "name")),
                text(call.get("id"), at(call_path, "id")),
                data(get(function, fpath, "arguments", "{}"), at(fpath, "arguments")),
            )
        )
    return out


def message(raw: Any, path: str) -> Message:
    """One Chat Completions message as budgetloop's."""
    found = obj(raw, path)
    role = text(get(found, path, "role"), at(path, "role"), optional=False)
    if role not in ROLES:
        raise ValueError(f"{at(path, 'role')} must be one of {', '.join(ROLES)}, got {role!r}.")
    said = content(found.get("content"), at(path, "content"))
    name = text(found.get("name"), at(path, "name"))
    if ROLES[role] == "assistant":
        asked = tuple(
            ToolCall(n, "{}" if a is None else a, i)  # type: ignore[arg-type]
            for n, i, a in calls(found, path)
        )
        return Message("assistant", said, asked, name=name)
    if ROLES[role] == "tool":
        call_id = text(found.get("tool_call_id"), at(path, "tool_call_id"))
        return Message("tool", said or "", tool_call_id=call_id, name=name)
    return Message(ROLES[role], said or "", name=name)


def messages(value: Any, path: str) -> list[Message]:
    return [message(raw, at(path, i)) for i, raw in enumerate(items(value, path))]


def runs(document: Any, path: str | None, raw: bytes) -> list[Run]:
    """The log's runs: one per user turn. A run is the loop from a prompt to its answer, so a
    message the user sent after a reply (a follow-up) begins the next run, whose context is
    every message before its first model call, that reply and follow-up included."""
    where = ""
    log = document
    if isinstance(document, dict):
        where = "messages"
        log = get(document, "", "messages")
    found = messages(log, where)
    starts = [next((i for i, m in enumerate(found) if m.role == "assistant"), len(found))]
    for i in range(starts[0] + 1, len(found)):
        said, before = found[i], found[i - 1]
        if said.role == "assistant" and before.role not in ("assistant", "tool"):
            starts.append(i)  # the first reply after a follow-up
    ends = [*starts[1:], len(found)]
    run_id = content_hash(raw)
    return [
        _run(found, first, end, path, run_id if n == 0 else f"{run_id}-{n}")
        for n, (first, end) in enumerate(zip(starts, ends, strict=True))
    ]


def _run(found: list[Message], first: int, end: int, path: str | None, run_id: str) -> Run:
    """The run whose model calls are ``found[first:end]``'s assistant messages."""
    turns: list[Turn] = []
    executions: list[Execution] = []
    for position, entry in enumerate(found[first:end], start=first):
        if entry.role == "assistant":
            turn = Turn(float(position), float(position), entry.content, order=position)
            turn.calls = [Call(c.name, c.id, c.arguments) for c in entry.tool_calls]
            turns.append(turn)
        elif entry.role == "tool":
            executions.append(
                Execution(
                    entry.name,
                    entry.tool_call_id,
                    None,
                    float(position),
                    result=as_text(entry.content or ""),
                    order=position,
                )
            )
    _names_by_id(turns, executions)
    return Run(
        format="chat",
        source="a Chat Completions message log",
        path=path,
        turns=turns,
        context=found[:first],
        executions=executions,
        run_id=run_id,
        seconds=0.0,
        timed=False,
        flags_errors=False,
    )


def _names_by_id(turns: list[Turn], executions: list[Execution]) -> None:
    """A ``tool`` message names no tool; the call it answers does."""
    named = {c.call_id: c.name for t in turns for c in t.calls if c.call_id}
    for execution in executions:
        if execution.name is None and execution.call_id in named:
            execution.name = named[execution.call_id]
