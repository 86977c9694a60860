"""OpenAI Responses input items: a JSON array of the items a Responses API user keeps and sends
back (what openai-agents' ``result.to_input_list()`` gives), or an object with ``input``.

Messages are items with a ``role`` (``user``, ``system``, ``developer``, ``assistant``); a
``function_call`` is a call the model asked for, a ``function_call_output`` its result (what the
model read), paired by ``call_id``. The model's items in a row (its message, its calls, its
reasoning) are one model call, a step; the items before the first of them are the context.
Reasoning is left out; an item of a type not named here (a hosted tool's call, a computer
action) is refused, never skipped in silence. The items hold no usage, time or cost, and no
flag for a tool's failure: a call with an output is ``ok``, its result what the model read, and
``imported.lacks`` names ``tool error flags``.
"""

from __future__ import annotations

from typing import Any

from .._engine._types import Message
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from . import _chat
from ._build import Call, Execution, Run, Turn
from ._fields import content_hash, data, items, obj, text
from ._genai import as_text

TYPES = ("message", "function_call", "function_call_output", "reasoning")
MODEL_SIDE = ("function_call", "reasoning")


def _items(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("input"), list):
        return value["input"]
    return value


def looks_like(value: Any) -> bool:
    """Items each with a ``role`` or a ``type``, one of them a function call, its output, or a
    message with ``type``."""
    found = _items(value)
    return (
        isinstance(found, list)
        and bool(found)
        and all(isinstance(i, dict) and ("role" in i or "type" in i) for i in found)
        and any(i.get("type") in TYPES for i in found)
    )


def _kind(item: dict[str, Any], path: str) -> str:
    kind = item.get("type", "message")
    if kind not in TYPES:
        raise ValueError(f"{at(path, 'type')} must be one of {', '.join(TYPES)}, got {kind!r}.")
    return str(kind)


def _said(item: dict[str, Any], path: str) -> str | None:
    return _chat.content(item.get("content"), at(path, "content"))


def run(document: Any, path: str | None, raw: bytes) -> Run:
    """The items as one run (see the module's text)."""
    where = "input" if isinstance(document, dict) else ""
    context: list[Message] = []
    turns: list[Turn] = []
    executions: list[Execution] = []
    current: Turn | None = None  # the model call whose items are being read
    for position, raw_item in enumerate(items(_items(document), where)):
        ipath = at(where, position)
        item = obj(raw_item, ipath)
        kind = _kind(item, ipath)
        role = text(item.get("role"), at(ipath, "role"))
        if kind in MODEL_SIDE or (kind == "message" and role == "assistant"):
            if current is None:
                current = Turn(float(position), float(position), order=position)
                turns.append(current)
            if kind == "function_call":
                current.calls.append(
                    Call(
                        text(get(item, ipath, "name"), at(ipath, "name"), optional=False),
                        text(get(item, ipath, "call_id"), at(ipath, "call_id"), optional=False),
                        data(get(item, ipath, "arguments", "{}"), at(ipath, "arguments")),
                    )
                )
            elif kind == "message":
                said = _said(item, ipath)
                current.text = said if current.text is None else current.text + (said or "")
            continue
        current = None
        if kind == "function_call_output":
            output = as_text(data(item.get("output", ""), at(ipath, "output")))
            call_id = text(get(item, ipath, "call_id"), at(ipath, "call_id"), optional=False)
            executions.append(
                Execution(
                    None,
                    call_id,
                    None,
                    float(position),
                    result=output,
                    order=position,
                    read=output,
                )
            )
        elif not turns:
            if role is None:
                got = "None" if "role" in item else "nothing"
                raise ValueError(f"{at(ipath, 'role')} must be a string, got {got}.")
            context.append(_chat.message({"role": role, "content": _said(item, ipath)}, ipath))
    _chat._names_by_id(turns, executions)  # a function_call_output names no tool
    return Run(
        format="responses",
        source="OpenAI Responses input items",
        path=path,
        turns=turns,
        context=context,
        executions=executions,
        run_id=content_hash(raw),
        seconds=0.0,
        timed=False,
        flags_errors=False,
    )
