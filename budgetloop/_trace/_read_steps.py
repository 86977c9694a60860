"""Reading a trace's records back: its steps, their calls and the messages (each tried first
by ``_read_fast``, then field by field), and what a held run keeps (its turn, the calls
pending, the standing rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._engine._types import ROLES, Message, ToolCall
from . import _read_fast as _fast
from ._compact import assistant_of, tool_of
from ._records import (
    APPROVALS,
    STATUSES,
    CallRecord,
    ContextEdit,
    HeldTurn,
    PendingCall,
    Rule,
    Step,
    Summary,
)
from ._values import (
    MISSING,
    _at,
    as_bool,
    as_int,
    as_json,
    as_list,
    as_number,
    as_object,
    as_text,
    get_key,
    read_projection,
    read_usage,
)


def read_call(value: Any, path: str) -> CallRecord:
    fast = _fast.call(value)
    return read_call_fully(value, path) if fast is None else fast


def read_call_fully(value: Any, path: str) -> CallRecord:
    """``read_call`` field by field, with a message ready for each thing that can be wrong."""
    data = as_object(value, path)

    def get(name: str, default: Any = MISSING) -> Any:
        return get_key(data, path, name, default)

    status = get("status")
    if status not in STATUSES:
        raise ValueError(
            f"{_at(path, 'status')} must be one of {', '.join(STATUSES)}, got {status!r}."
        )
    arguments = get("arguments")
    if arguments is not None:
        as_json(as_object(arguments, _at(path, "arguments")), _at(path, "arguments"))
    coerced = as_list(get("coerced", ()), _at(path, "coerced"))
    for i, item in enumerate(coerced):
        as_text(item, _at(_at(path, "coerced"), i), optional=False)
    approval = get("approval", None)
    if approval is not None and approval not in APPROVALS:
        raise ValueError(
            f"{_at(path, 'approval')} must be None or one of {', '.join(APPROVALS)}, "
            f"got {approval!r}."
        )
    if (status == "denied") != (approval == "denied"):
        raise ValueError(
            f"{_at(path, 'approval')} must be 'denied' exactly when status is 'denied', got "
            f"{approval!r} with status {status!r}."
        )
    return CallRecord(
        name=as_text(get("name"), _at(path, "name")),
        id=as_text(get("id"), _at(path, "id"), optional=False),
        raw_arguments=as_json(get("raw_arguments"), _at(path, "raw_arguments")),
        arguments=arguments,
        status=status,
        result=as_text(get("result", None), _at(path, "result")),
        error=as_text(get("error", None), _at(path, "error")),
        seconds=as_number(get("seconds", 0.0), _at(path, "seconds")),
        coerced=tuple(coerced),
        truncated=as_int(get("truncated", None), _at(path, "truncated"), optional=True),
        traceback=as_text(get("traceback", None), _at(path, "traceback")),
        approval=approval,
        server=as_text(get("server", None), _at(path, "server")),
    )


def read_step(value: Any, path: str, index: int | None = None, compact: bool = False) -> Step:
    """A step; with ``index``, its ``index`` field must be that (steps are numbered 0, 1, ...).
    ``compact``: version 2's data, its calls' ``arguments`` left out where ``filled`` puts them
    back."""
    fast = _fast.step(value, index, compact)
    if fast is not None:
        return fast
    return read_step_fully(filled(value) if compact else value, path, index)


def read_step_fully(value: Any, path: str, index: int | None = None) -> Step:
    """``read_step`` field by field, with a message ready for each thing that can be wrong."""
    data = as_object(value, path)

    def get(name: str, default: Any = MISSING) -> Any:
        return get_key(data, path, name, default)

    number = as_int(get("index"), _at(path, "index"))
    if index is not None and number != index:
        raise ValueError(
            f"{_at(path, 'index')} must be {index} (steps are numbered in order from 0), "
            f"got {number}."
        )
    calls = as_list(get("tool_calls", ()), _at(path, "tool_calls"))
    return Step(
        index=number,
        text=as_text(get("text", None), _at(path, "text")),
        tool_calls=tuple(
            read_call_fully(c, _at(_at(path, "tool_calls"), i)) for i, c in enumerate(calls)
        ),
        usage=read_usage(get("usage", None), _at(path, "usage")),
        cost_usd=as_number(get("cost_usd"), _at(path, "cost_usd"), optional=True),
        projection=read_projection(get("projection"), _at(path, "projection")),
        seconds=as_number(get("seconds", 0.0), _at(path, "seconds")),
        error=as_text(get("error", None), _at(path, "error")),
        final_answer=as_bool(get("final_answer", False), _at(path, "final_answer")),
        traceback=as_text(get("traceback", None), _at(path, "traceback")),
        model=as_text(get("model", None), _at(path, "model")),
        response_id=as_text(get("response_id", None), _at(path, "response_id")),
        finish_reason=as_text(get("finish_reason", None), _at(path, "finish_reason")),
        first_chunk_seconds=as_number(
            get("first_chunk_seconds", None), _at(path, "first_chunk_seconds"), optional=True
        ),
        context=read_context(get("context", None), _at(path, "context")),
    )


def read_context(value: Any, path: str) -> ContextEdit | None:
    """A step's ``context`` (what its context policy made of its request), or None."""
    if value is None:
        return None
    data = as_object(value, path)

    def get(name: str, default: Any = MISSING) -> Any:
        return get_key(data, path, name, default)

    sent: list[int | Message] = []
    where = _at(path, "sent")
    for i, x in enumerate(as_list(get("sent"), where)):
        sent.append(
            as_int(x, _at(where, i))
            if isinstance(x, int)
            else read_message_fully(x, _at(where, i))
        )
    where = _at(path, "dropped")
    dropped = [as_int(x, _at(where, i)) for i, x in enumerate(as_list(get("dropped"), where))]
    return ContextEdit(
        policy=as_text(get("policy"), _at(path, "policy")) or "",
        sent=tuple(sent),
        dropped=tuple(dropped),
        dropped_tokens=as_signed(get("dropped_tokens"), _at(path, "dropped_tokens")),
        summary=read_summary(get("summary", None), _at(path, "summary")),
        fallback=as_text(get("fallback", None), _at(path, "fallback")),
    )


def read_summary(value: Any, path: str) -> Summary | None:
    if value is None:
        return None
    data = as_object(value, path)
    where = _at(path, "replaced")
    replaced = as_list(get_key(data, path, "replaced"), where)
    projection = read_projection(get_key(data, path, "projection"), _at(path, "projection"))
    if projection is None:
        raise ValueError(f"{_at(path, 'projection')} must be a projection, got None.")
    return Summary(
        replaced=tuple(as_int(x, _at(where, i)) for i, x in enumerate(replaced)),
        cost_usd=as_number(get_key(data, path, "cost_usd"), _at(path, "cost_usd")) or 0.0,
        usage=read_usage(get_key(data, path, "usage", None), _at(path, "usage")),
        projection=projection,
    )


def as_signed(value: Any, path: str) -> int:
    """An int, negative too."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{path} must be an int, got {type(value).__name__}.")
    return value


def read_message_fully(value: Any, path: str) -> Message:
    """A message read field by field, with an error ready for each thing that can be wrong."""
    data = as_object(value, path)
    role = get_key(data, path, "role")
    if role not in ROLES:
        raise ValueError(f"{_at(path, 'role')} must be one of {', '.join(ROLES)}, got {role!r}.")
    calls = []
    where = _at(path, "tool_calls")
    for i, raw in enumerate(as_list(get_key(data, path, "tool_calls", ()), where)):
        call = as_object(raw, _at(where, i))
        at = _at(where, i)
        calls.append(
            ToolCall(
                name=as_text(get_key(call, at, "name"), _at(at, "name")),
                arguments=as_json(get_key(call, at, "arguments", "{}"), _at(at, "arguments")),
                id=as_text(get_key(call, at, "id", None), _at(at, "id")),
            )
        )
    return Message(
        role=role,
        content=as_text(get_key(data, path, "content", None), _at(path, "content")),
        tool_calls=tuple(calls),
        tool_call_id=as_text(get_key(data, path, "tool_call_id", None), _at(path, "tool_call_id")),
        name=as_text(get_key(data, path, "name", None), _at(path, "name")),
    )


def read_messages(
    value: Any, path: str, steps: Sequence[Step] | None = None
) -> tuple[Message, ...]:
    """Messages; with ``steps`` (a version-2 trace's, read so far), a message may be a
    reference to what they hold (``{"of": [3, 0]}``, ``_compact``)."""
    out = []
    for i, item in enumerate(as_list(value, path)):
        if steps is not None and type(item) is dict and "of" in item:
            out.append(read_reference(item, _at(path, i), steps))
            continue
        fast = _fast.message(item)
        out.append(read_message_fully(item, _at(path, i)) if fast is None else fast)
    return tuple(out)


def read_reference(data: dict[str, Any], path: str, steps: Sequence[Step]) -> Message:
    """The message a reference stands for: ``[step]`` an assistant's reply, ``[step, call]``
    a tool's result as the model read it."""
    of = data["of"]
    if type(of) is list and all(type(n) is int and n >= 0 for n in of):
        if len(of) == 1 and of[0] < len(steps):
            return assistant_of(steps[of[0]], read=True)
        if len(of) == 2 and of[0] < len(steps):
            calls = steps[of[0]].tool_calls
            if of[1] < len(calls):
                return tool_of(calls[of[1]], read=True)
    held = f"the {len(steps)} steps read so far" if steps else "no step read so far"
    raise ValueError(
        f"{_at(path, 'of')} must be [step] (a step's reply) or [step, call] (a call's result) "
        f"of {held}, got {of!r}."
    )


def filled(value: Any) -> Any:
    """A version-2 step's data with each call's ``arguments`` that were left out (they are its
    ``raw_arguments``, an object) put back; anything else as it is, for ``read_step`` to judge.
    The data given is not changed."""
    calls = value.get("tool_calls") if type(value) is dict else None
    if type(calls) is not list or all(type(c) is not dict or "arguments" in c for c in calls):
        return value
    whole = [
        {**c, "arguments": c["raw_arguments"]}
        if type(c) is dict and "arguments" not in c and type(c.get("raw_arguments")) is dict
        else c
        for c in calls
    ]
    return {**value, "tool_calls": whole}


def read_held(data: dict[str, Any], path: str) -> dict[str, Any]:
    """A held run's ``held``, ``pending`` and ``rules``, and a run's ``event_errors``
    (``Result.held_dict``), each absent from a run that has none."""
    out: dict[str, Any] = {}
    held = get_key(data, path, "held", None)
    if held is not None:
        at = _at(path, "held")
        turn = as_object(held, at)
        out["held"] = HeldTurn(
            step=read_step_fully(get_key(turn, at, "step"), _at(at, "step")),
            message=read_message_fully(get_key(turn, at, "message"), _at(at, "message")),
        )
    at = _at(path, "pending")
    out["pending"] = tuple(
        read_pending(c, _at(at, i))
        for i, c in enumerate(as_list(get_key(data, path, "pending", ()), at))
    )
    at = _at(path, "rules")
    out["rules"] = tuple(
        read_rule(r, _at(at, i))
        for i, r in enumerate(as_list(get_key(data, path, "rules", ()), at))
    )
    at = _at(path, "event_errors")
    out["event_errors"] = tuple(
        as_text(e, _at(at, i), optional=False)
        for i, e in enumerate(as_list(get_key(data, path, "event_errors", ()), at))
    )
    return out


def read_pending(value: Any, path: str) -> PendingCall:
    data = as_object(value, path)

    def get(name: str, default: Any = MISSING) -> Any:
        return get_key(data, path, name, default)

    rule = get("rule", None)
    if rule is not None and rule not in ("approved", "denied"):
        raise ValueError(
            f"{_at(path, 'rule')} must be None, 'approved' or 'denied', got {rule!r}."
        )
    return PendingCall(
        name=as_text(get("name"), _at(path, "name"), optional=False),
        id=as_text(get("id"), _at(path, "id"), optional=False),
        step=as_int(get("step"), _at(path, "step")),
        raw_arguments=as_json(get("raw_arguments"), _at(path, "raw_arguments")),
        arguments=as_json(
            as_object(get("arguments"), _at(path, "arguments")), _at(path, "arguments")
        ),
        spent_usd=as_number(get("spent_usd"), _at(path, "spent_usd")),
        projection=read_projection(get("projection", None), _at(path, "projection")),
        tool_marked=as_bool(get("tool_marked", True), _at(path, "tool_marked")),
        rule=rule,
        redacted=tuple(
            as_text(p, _at(_at(path, "redacted"), i), optional=False)
            for i, p in enumerate(as_list(get("redacted", ()), _at(path, "redacted")))
        ),
    )


def read_rule(value: Any, path: str) -> Rule:
    data = as_object(value, path)
    approval = get_key(data, path, "approval")
    if approval not in ("approved", "denied"):
        raise ValueError(
            f"{_at(path, 'approval')} must be 'approved' or 'denied', got {approval!r}."
        )
    return Rule(
        tool=as_text(get_key(data, path, "tool"), _at(path, "tool"), optional=False),
        approval=approval,
        call_id=as_text(get_key(data, path, "call_id"), _at(path, "call_id"), optional=False),
        step=as_int(get_key(data, path, "step"), _at(path, "step")),
        reason=as_text(get_key(data, path, "reason", ""), _at(path, "reason"), optional=False),
    )
