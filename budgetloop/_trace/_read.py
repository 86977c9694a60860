"""Reading trace data back: every field's type and range checked, so a trace that loads is usable.

Each reader takes plain data (as ``to_dict()`` writes it, or as ``json.loads`` reads it) and
returns the object, or raises ``ValueError`` naming the field's path and what was wrong:
``steps[3].tool_calls[0].status must be one of ok, error, skipped, denied, got 'done'.``
A key that is absent reads as its field's default where the field has one (older traces
load); derived keys (``answered``, ``totals``, a step's ``under_projected``) are ignored;
unknown keys are ignored.
Values the trace keeps as they came (tool arguments, tool schemas) must be JSON data nested at
most ``MAX_DEPTH`` levels deep.

Steps, calls and messages are first tried by ``_read_fast``, which accepts the common case with
plain type tests; whatever it does not accept is read here, field by field.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar, cast

from .._engine._types import (
    ROLES,
    Budget,
    Message,
    Price,
    Stop,
    ToolCall,
    Usage,
    from_pico,
    to_pico,
)
from .._engine._valid import check_int, check_number, type_name
from .._rules._budget import Projection
from .._rules._ceilings import CEILINGS
from . import _read_fast as _fast
from ._compact import assistant_of, tool_of
from ._result import (
    APPROVALS,
    READERS,
    RECORDED_OPTIONS,
    STATUSES,
    CallRecord,
    HeldTurn,
    Imported,
    PendingCall,
    Result,
    Rule,
    RunOptions,
    Step,
    check_header,
)

T = TypeVar("T")
MAX_DEPTH = _fast.MAX_DEPTH
_MISSING = object()
_STOPS = tuple(s.value for s in Stop)


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return key if not path else f"{path}.{key}"


def get_key(data: dict[str, Any], path: str, key: str, default: Any = _MISSING) -> Any:
    if key in data:
        return data[key]
    if default is _MISSING:
        raise ValueError(f"{_at(path, key)} must be present, got nothing.")
    return default


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{path or 'the trace'} must be an object, got {type_name(value)}.")
    return value


def as_list(value: Any, path: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{path} must be a list, got {type_name(value)}.")
    return value


def as_text(value: Any, path: str, *, optional: bool = True) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "a string or None" if optional else "a string"
        raise ValueError(f"{path} must be {expected}, got {type_name(value)}.")
    return value


def as_int(value: Any, path: str, *, optional: bool = False) -> Any:
    try:
        check_int("", path, value, optional=optional)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    return value


def as_number(value: Any, path: str, *, optional: bool = False) -> Any:
    """A finite number >= 0 that a float can hold (so it can be formatted and summed)."""
    try:
        check_number("", path, value, optional=optional)
        if value is not None:
            float(value)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    except OverflowError:
        raise ValueError(
            f"{path} must be a finite number >= 0, got an int past a float's range."
        ) from None
    return value


def as_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{path} must be true or false, got {type_name(value)}.")
    return value


def as_json(value: Any, path: str) -> Any:
    """JSON data (objects with string keys, lists, strings, numbers, booleans, null), at most
    ``MAX_DEPTH`` levels deep. Walked with a stack, not recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise ValueError(
                    f"{path} must be nested at most {MAX_DEPTH} levels deep, got deeper."
                )
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise ValueError(
                            f"{path} must be JSON data, with string keys, got a key that is "
                            f"{type_name(key)}."
                        )
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{path} must be JSON data, got the number {item!r}.")
        elif item is not None and not isinstance(item, (str, int, float)):
            raise ValueError(f"{path} must be JSON data, got {type_name(item)}.")
    return value


def _build(path: str, make: Callable[..., T], **fields: Any) -> T:
    """Construct once every field is checked; a check of the class's own is named by path."""
    try:
        return make(**fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path or 'the trace'}: {exc}") from None


def read_usage(value: Any, path: str) -> Usage | None:
    if value is None:
        return None
    data = as_object(value, path)
    return _build(
        path,
        Usage,
        **{
            name: as_int(get_key(data, path, name, default), _at(path, name))
            for name, default in (
                ("input_tokens", _MISSING),
                ("output_tokens", _MISSING),
                ("cache_read_tokens", 0),
                ("cache_write_tokens", 0),
                ("reasoning_tokens", 0),
            )
        },
    )


def read_price(value: Any, path: str) -> Price | None:
    if value is None:
        return None
    data = as_object(value, path)
    fields = {
        name: as_number(get_key(data, path, name), _at(path, name))
        for name in ("input_per_mtok", "output_per_mtok")
    }
    for name in ("cache_read_per_mtok", "cache_write_per_mtok"):
        fields[name] = as_number(get_key(data, path, name, None), _at(path, name), optional=True)
    fields["source"] = as_text(get_key(data, path, "source", None), _at(path, "source"))
    tiers = get_key(data, path, "tiers", None)
    if tiers is not None:
        fields["tiers"] = _read_tiers(tiers, _at(path, "tiers"))
    return _build(path, Price, **fields)


def _read_tiers(value: Any, path: str) -> dict[int, Price]:
    """A price's tiers, as ``price_to_dict`` writes them: ``[{"above": n, "price": {...}}]``."""
    tiers: dict[int, Price] = {}
    for i, entry in enumerate(as_list(value, path)):
        where = f"{path}[{i}]"
        data = as_object(entry, where)
        above = as_int(get_key(data, where, "above"), _at(where, "above"))
        tier = read_price(get_key(data, where, "price"), _at(where, "price"))
        if tier is None:
            raise ValueError(f"{_at(where, 'price')} must be an object, got None.")
        tiers[above] = tier
    return tiers


def read_budget(value: Any, path: str) -> Budget:
    data = as_object(value, path)
    defaults = Budget()
    fields = {}
    for ceiling in CEILINGS:
        name = ceiling.name
        raw = get_key(data, path, name, getattr(defaults, name))
        read = as_int if ceiling.integer else as_number
        fields[name] = read(raw, _at(path, name), optional=True)
    return _build(path, Budget, **fields)


def read_projection(value: Any, path: str) -> Projection | None:
    if value is None:  # an imported run's step: no projection was made
        return None
    data = as_object(value, path)

    def get(name: str) -> Any:
        return get_key(data, path, name)

    return Projection(
        input_tokens=as_int(get("input_tokens"), _at(path, "input_tokens")),
        output_tokens=as_int(get("output_tokens"), _at(path, "output_tokens"), optional=True),
        cost_usd=as_number(get("cost_usd"), _at(path, "cost_usd"), optional=True),
        spent_usd=as_number(get("spent_usd"), _at(path, "spent_usd")),
        limit_usd=as_number(get("limit_usd"), _at(path, "limit_usd"), optional=True),
        fits=as_bool(get("fits"), _at(path, "fits")),
        tier=as_int(get_key(data, path, "tier", None), _at(path, "tier"), optional=True),
        fitted_from=as_int(
            get_key(data, path, "fitted_from", None), _at(path, "fitted_from"), optional=True
        ),
    )


def read_call(value: Any, path: str) -> CallRecord:
    fast = _fast.call(value)
    return read_call_fully(value, path) if fast is None else fast


def read_call_fully(value: Any, path: str) -> CallRecord:
    """``read_call`` field by field, with a message ready for each thing that can be wrong."""
    data = as_object(value, path)

    def get(name: str, default: Any = _MISSING) -> Any:
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


def read_step(value: Any, path: str, index: int | None = None) -> Step:
    """A step; with ``index``, its ``index`` field must be that (steps are numbered 0, 1, ...)."""
    fast = _fast.step(value, index)
    return read_step_fully(value, path, index) if fast is None else fast


def read_step_fully(value: Any, path: str, index: int | None = None) -> Step:
    """``read_step`` field by field, with a message ready for each thing that can be wrong."""
    data = as_object(value, path)

    def get(name: str, default: Any = _MISSING) -> Any:
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
    )


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
            return assistant_of(steps[of[0]])
        if len(of) == 2 and of[0] < len(steps):
            calls = steps[of[0]].tool_calls
            if of[1] < len(calls):
                return tool_of(calls[of[1]])
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


def read_tools(value: Any, path: str) -> tuple[dict[str, Any], ...]:
    tools = as_list(value, path)
    return tuple(as_json(as_object(t, _at(path, i)), _at(path, i)) for i, t in enumerate(tools))


_FLAGS = ("finish", "budget_note", "warn_repeats")
# as start() checks them
_LEAST = {"repeat_limit": 2, "cycle_limit": 2, "max_result_chars": 1, "min_output_tokens": 1}


def read_options(value: Any, path: str) -> RunOptions:
    """The recorded ``start()`` options; an option a trace does not record is left out (an
    older trace records none), and a key that is not one of them is ignored."""
    data = as_object(value, path)
    out: dict[str, Any] = {}
    for name in RECORDED_OPTIONS:
        if name not in data:
            continue
        raw, at = data[name], _at(path, name)
        if name in _FLAGS:
            out[name] = as_bool(raw, at)
            continue
        if name == "output":
            out[name] = read_output_option(raw, at)
            continue
        if name == "settings":
            out[name] = as_json(as_object(raw, at), at)
            continue
        least = _LEAST[name]
        try:
            check_int("", at, raw, least=least, optional=True)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        out[name] = raw
    return cast(RunOptions, out)


def read_output_option(value: Any, path: str) -> dict[str, Any]:
    """The recorded ``output``: the final_answer schema, and whether the answer is its one
    argument."""
    data = as_object(value, path)
    as_bool(get_key(data, path, "wraps"), _at(path, "wraps"))
    at = _at(path, "parameters")
    params = as_object(get_key(data, path, "parameters"), at)
    as_object(get_key(params, at, "properties"), _at(at, "properties"))
    as_json(params, at)
    return data


def read_stop(value: Any, path: str) -> Stop | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in _STOPS:
        raise ValueError(f"{path} must be one of {', '.join(_STOPS)} or None, got {value!r}.")
    return Stop(value)


def check_spend(cost: float, steps: Sequence[Step], path: str) -> None:
    """A run's ``cost_usd`` is at least what its steps cost (it counts them all, and a fork's
    spend before them too); less would make ``resume`` start below what was spent.

    Decided in picodollars, as the loop adds money, with room for the float rounding of each
    figure written (at most 2**-52 of it): a trace the loop wrote always passes. The float sum
    is tried first, so a long trace needs no exact sum unless it is close. A total at the
    largest float is a sum past a float's range, saturated (``from_pico``): it holds any sum.
    """
    if cost >= sys.float_info.max:
        return
    try:
        if math.fsum(s.cost_usd or 0.0 for s in steps) <= cost * (1 + 2**-50):
            return
    except OverflowError:  # a sum past a float's range: decided exactly below
        pass
    owed = sum(to_pico(s.cost_usd or 0.0) for s in steps)
    if owed - to_pico(cost) > owed >> 50:
        raise ValueError(
            f"{path} must be at least {_dollars(owed)}, what the steps cost (the sum of "
            f"their cost_usd), got {cost!r}."
        )


def _dollars(pico: int) -> str:
    """Picodollars as a float's repr, or in scientific notation past a float's range."""
    try:
        return repr(from_pico(pico))
    except OverflowError:
        return f"{Decimal(pico).scaleb(-12):.6e}"


def read_result(value: Any) -> Result:
    """A Result from ``Result.to_dict()`` data; messages name the field, not the caller."""
    check_header(value)
    data = as_object(value, "")

    def get(name: str, default: Any = _MISSING) -> Any:
        return get_key(data, "", name, default)

    compact = data["version"] == 2  # each text once: calls' arguments, messages referred to
    steps = tuple(
        read_step(filled(s) if compact else s, _at("steps", i), i)
        for i, s in enumerate(as_list(get("steps"), "steps"))
    )
    cost = as_number(get("cost_usd"), "cost_usd", optional=True)
    if cost is not None:  # None: an imported run whose source holds no cost
        check_spend(cost, steps, "cost_usd")
    messages = read_messages(get("messages"), "messages", steps if compact else None)
    return Result(
        stop=read_stop(get("stop"), "stop"),
        answer=as_text(get("answer", None), "answer"),
        steps=steps,
        messages=messages,
        cost_usd=cost,
        seconds=as_number(get("seconds", 0.0), "seconds"),
        budget=read_budget(get("budget", {}), "budget"),
        error=as_text(get("error", None), "error"),
        detail=as_text(get("detail", None), "detail"),
        price=read_price(get("price", None), "price"),
        max_output_tokens=as_int(
            get("max_output_tokens", None), "max_output_tokens", optional=True
        ),
        tools=read_tools(get("tools", ()), "tools"),
        options=read_options(get("options", {}), "options"),
        run_id=read_run_id(get("run_id", None), "run_id", value),
        forked_from=as_text(get("forked_from", None), "forked_from"),
        edited=read_edited(get("edited", ()), "edited", len(messages)),
        imported=read_imported(get("imported", None), "imported"),
        output=as_json(get("output", None), "output"),
        held_usd=as_number(get("held_usd", 0.0), "held_usd"),
        **read_held(data, ""),
    )


def read_held(data: dict[str, Any], path: str) -> dict[str, Any]:
    """A held run's ``held``, ``pending`` and ``rules`` (``Result.held_dict``), each absent
    from a run that has none."""
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
    return out


def read_pending(value: Any, path: str) -> PendingCall:
    data = as_object(value, path)

    def get(name: str, default: Any = _MISSING) -> Any:
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


def read_edited(value: Any, path: str, messages: int) -> tuple[int, ...]:
    """The indexes of the messages a fork edited: ascending, each one of the ``messages``."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{path} must be a list of message indexes, got {type_name(value)}.")
    out: list[int] = []
    for i, index in enumerate(value):
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"{path}[{i}] must be a message index, got {type_name(index)}.")
        if not 0 <= index < messages or (out and index <= out[-1]):
            raise ValueError(
                f"{path}[{i}] must be an index below {messages} and above the one before, "
                f"got {index}."
            )
        out.append(index)
    return tuple(out)


def read_run_id(value: Any, path: str, content: Any) -> str:
    """A run id; a trace written before runs had ids gets one derived from ``content``, so
    loading the same old trace twice gives the same id (docs/traces.md)."""
    if value is None:
        return content_id(content)
    text: str = as_text(value, path, optional=False)
    if not text:
        raise ValueError(f"{path} must be a non-empty string, got ''.")
    return text


def content_id(content: Any) -> str:
    """32 hex digits of the SHA-256 of ``content``: bytes as they are, data as sorted JSON."""
    if not isinstance(content, bytes):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False, default=repr).encode(
            "utf-8", "surrogatepass"
        )
    return hashlib.sha256(content).hexdigest()[:32]


def read_imported(value: Any, path: str) -> Imported | None:
    if value is None:
        return None
    data = as_object(value, path)
    lacks = as_list(get_key(data, path, "lacks", ()), _at(path, "lacks"))
    return Imported(
        format=as_text(get_key(data, path, "format"), _at(path, "format"), optional=False),
        source=as_text(get_key(data, path, "source"), _at(path, "source"), optional=False),
        path=as_text(get_key(data, path, "path", None), _at(path, "path")),
        lacks=tuple(
            as_text(item, _at(_at(path, "lacks"), i), optional=False)
            for i, item in enumerate(lacks)
        ),
    )


# What CallRecord.from_dict, Step.from_dict and Result.from_dict read with.
READERS.call = read_call
READERS.step = read_step
READERS.result = lambda value, _path: read_result(value)
