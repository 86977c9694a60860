"""Trace format version 2, as written: each text once, fields at their defaults left out.

``Result.to_dict()`` (version 1's shape) writes every field of every record and every message
whole, so a tool's result is there twice (in its call record, and in the ``tool`` message the
model read) and a step's text and calls twice (in the step, and in the ``assistant`` message).
What ``Result.save`` and ``trace_path=`` write (version 2) keeps:

- a record's field whose value is its dataclass's default left out (read back as that default),
  found from the dataclass itself, so a field added with a default needs nothing here;
- a step's derived ``under_projected`` only when it is above 0;
- a call's ``arguments`` left out when they are its ``raw_arguments`` (an object), exactly;
- a message that the steps hold written as a reference: ``{"of": [3]}`` is step 3's reply
  (the assistant message of its text and its calls as the model wrote them), ``{"of": [3, 0]}``
  the result of step 3's first call as the model read it (the tool message of
  ``CallRecord.content``). A reference is written only when the message it reads back as is
  that message exactly; any other is written whole;
- a journal's step line without ``messages`` when the step appended its reply and then each
  call's result, in order (as the loop does);
- JSON without spaces after ``,`` and ``:``.

``_read`` reads it back (``read_result``, and ``_journal`` for JSON Lines).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import MISSING, fields
from typing import Any

from .._engine._frozen import unchecked
from .._engine._types import Message, Stop, ToolCall
from ._result import READERS, CallRecord, Result, Step, message_to_dict

VERSION = 2  # what save() and trace_path= write
_CONTAINERS = (list, dict)
_MESSAGE, _TOOL_CALL = unchecked(Message), unchecked(ToolCall)


@functools.cache
def _bare(cls: type) -> dict[str, Any]:
    """A record of ``cls`` with its required fields filled, as ``to_dict`` writes it."""
    if cls is Step:
        return Step(0, None, (), None, None, None, 0.0).to_dict()
    if cls is CallRecord:
        return CallRecord("", "", {}, None, "ok").to_dict()
    if cls is Result:
        return Result(Stop.ANSWERED, None, (), (), None, 0.0).to_dict()
    return message_to_dict(Message("user"))


@functools.cache
def defaults(cls: type) -> dict[str, Any]:
    """Each field of ``cls`` that has a default, and that default as ``to_dict`` writes it."""
    bare = _bare(cls)
    return {
        f.name: bare[f.name]
        for f in fields(cls)
        if f.name in bare and (f.default is not MISSING or f.default_factory is not MISSING)
    }


def same(value: Any, other: Any) -> bool:
    """The two are the same JSON: of one type (``1``, ``1.0`` and ``true`` differ), equal."""
    if value is other:
        return True
    if type(value) is not type(other):
        return False
    if isinstance(value, _CONTAINERS):
        dump = functools.partial(json.dumps, ensure_ascii=False, default=repr)
        return bool(dump(value) == dump(other))
    return bool(value == other)


def strip(data: dict[str, Any], cls: type) -> dict[str, Any]:
    """``data`` less the keys whose value is their field's default in ``cls``."""
    found = defaults(cls)
    return {k: v for k, v in data.items() if k not in found or not same(v, found[k])}


def call_data(call: CallRecord, whole: dict[str, Any] | None = None) -> dict[str, Any]:
    """A call as version 2 writes it; ``whole`` is its ``to_dict()`` when already made."""
    data = strip(call.to_dict() if whole is None else whole, CallRecord)
    raw = call.raw_arguments
    if isinstance(raw, dict) and same(call.arguments, raw):
        del data["arguments"]
    return data


def step_data(step: Step, whole: dict[str, Any] | None = None) -> dict[str, Any]:
    """A step as version 2 writes it; ``whole`` is its ``to_dict()`` when already made."""
    whole = step.to_dict() if whole is None else whole
    data = strip(whole, Step)
    if not data["under_projected"]:
        del data["under_projected"]
    data["tool_calls"] = list(map(call_data, step.tool_calls, whole["tool_calls"]))
    return data


def message_data(message: Message) -> dict[str, Any]:
    """A message written whole, its defaults left out."""
    return strip(message_to_dict(message), Message)


def assistant_of(step: Step, read: bool = False) -> Message:
    """The message a step's model reply is: its text and its calls as the model wrote them.
    ``read``: the step was read from a trace, its text and calls checked as a message's are,
    so the message is made without checking them again."""
    message, tool_call = (_MESSAGE, _TOOL_CALL) if read else (Message, ToolCall)
    calls = tuple([tool_call(c.name, c.raw_arguments, c.id) for c in step.tool_calls])
    return message("assistant", step.text, calls)


def tool_of(call: CallRecord, read: bool = False) -> Message:
    """The message a call's result is, as the model read it (``read`` as for ``assistant_of``)."""
    return (_MESSAGE if read else Message)("tool", call.content, (), call.id, call.name)


def _same_message(a: Message, b: Message) -> bool:
    if not (
        a.role == b.role
        and same(a.content, b.content)
        and same(a.tool_call_id, b.tool_call_id)
        and same(a.name, b.name)
        and len(a.tool_calls) == len(b.tool_calls)
    ):
        return False
    return all(
        same(x.name, y.name) and same(x.id, y.id) and same(x.arguments, y.arguments)
        for x, y in zip(a.tool_calls, b.tool_calls, strict=True)
    )


class Refs:
    """Writes messages as references to the steps that hold them, where they are exact.

    ``steps`` are the steps a reader will have read when it reads the messages (a journal's
    step line: that step; a saved trace: all of them), found by their ``index``."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = {s.index: s for s in steps}
        self.last: int | None = None  # the step of the last assistant message referred to
        self._ids: dict[str, tuple[int, int]] | None = None

    def _call_ids(self) -> dict[str, tuple[int, int]]:
        if self._ids is None:
            self._ids = {}
            for step in self.steps.values():
                for k, call in enumerate(step.tool_calls):
                    self._ids.setdefault(call.id, (step.index, k))
        return self._ids

    def data(self, message: Message) -> dict[str, Any]:
        """The message as a reference when one reads back as it exactly, else whole."""
        if message.role == "assistant":
            tried = [] if self.last is None else [self.last + 1]
            if self.last is None:
                tried.append(min(self.steps, default=0))
            if message.tool_calls and message.tool_calls[0].id is not None:
                found = self._call_ids().get(message.tool_calls[0].id)
                if found is not None:
                    tried.append(found[0])
            for index in tried:
                step = self.steps.get(index)
                if step is not None and _same_message(assistant_of(step), message):
                    self.last = index
                    return {"of": [index]}
        elif message.role == "tool" and message.tool_call_id is not None:
            for index, k in self._tool_places(message.tool_call_id):
                if _same_message(tool_of(self.steps[index].tool_calls[k]), message):
                    return {"of": [index, k]}
        return message_data(message)

    def _tool_places(self, call_id: str) -> list[tuple[int, int]]:
        """Where a tool message's call may be: in the last step referred to, else by its id."""
        places = []
        step = None if self.last is None else self.steps.get(self.last)
        if step is not None:
            places += [(step.index, k) for k, c in enumerate(step.tool_calls) if c.id == call_id]
        found = self._call_ids().get(call_id)
        if found is not None and found not in places:
            places.append(found)
        return places


def appended(step: Step, read: bool = False) -> list[Message]:
    """What a step appends to the messages as the loop runs it: its reply, then each call's
    result in order (``read`` as for ``assistant_of``)."""
    return [assistant_of(step, read), *[tool_of(c, read) for c in step.tool_calls]]


def step_line(step: Step, messages: Sequence[Message]) -> dict[str, Any]:
    """A journal's line for ``step`` and the ``messages`` it appended."""
    line: dict[str, Any] = {"kind": "step", "step": step_data(step)}
    usual = appended(step)
    if len(usual) != len(messages) or not all(map(_same_message, usual, messages)):
        refs = Refs([step])
        line["messages"] = [refs.data(m) for m in messages]
    return line


def dumps(data: Any) -> str:
    """JSON as version 2 writes it: no spaces, text as it is (not ASCII-escaped)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=repr)


def result_data(result: Result) -> dict[str, Any]:
    """The whole trace as ``Result.save`` writes it (version 2)."""
    data = strip(result.to_dict(), Result)
    data["version"] = VERSION
    data["steps"] = list(map(step_data, result.steps, data["steps"]))
    refs = Refs(result.steps)
    data["messages"] = [refs.data(m) for m in result.messages]
    return data


def head_data(data: dict[str, Any]) -> dict[str, Any]:
    """A journal's header or end line's fields of ``Result.to_dict()`` data, defaults left
    out."""
    return strip(data, Result)


def document(result: Result) -> str:
    """The whole trace as ``Result.save`` writes it: one JSON object, its steps and its messages
    one a line."""
    data = result_data(result)
    steps, messages = data.pop("steps"), data.pop("messages")

    def listed(items: list[dict[str, Any]]) -> str:
        return "[\n" + ",\n".join(map(dumps, items)) + "\n]" if items else "[]"

    return f'{dumps(data)[:-1]},\n"steps":{listed(steps)},\n"messages":{listed(messages)}}}\n'


READERS.document = document  # what Result.save writes
