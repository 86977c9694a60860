"""Reading trace data back: every field's type and range checked, so a trace that loads is usable.

Each reader takes plain data (as ``to_dict()`` writes it, or as ``json.loads`` reads it) and
returns the object, or raises ``ValueError`` naming the field's path and what was wrong:
``steps[3].tool_calls[0].status must be one of ok, error, skipped, denied, got 'done'.``
A key that is absent reads as its field's default where the field has one (older traces
load); derived keys (``answered``, ``totals``, a step's ``under_projected``) are ignored;
unknown keys are ignored.
Values the trace keeps as they came (tool arguments, tool schemas) must be JSON data nested at
most ``MAX_DEPTH`` levels deep.

This module reads the whole trace: its header (either format version), what the run started
with and how it ended, and that its cost holds its steps' (``read_result``). A field is read by
``_values``; the steps, calls and messages by ``_read_steps``, after ``_read_fast`` has tried
the common case with plain type tests. The readers are imported from here.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, cast

from .._engine._types import Stop, from_pico, to_pico
from .._engine._valid import check_int, type_name
from ._read_steps import filled as filled
from ._read_steps import read_call as read_call
from ._read_steps import read_call_fully as read_call_fully
from ._read_steps import read_held as read_held
from ._read_steps import read_message_fully as read_message_fully
from ._read_steps import read_messages as read_messages
from ._read_steps import read_pending as read_pending
from ._read_steps import read_reference as read_reference
from ._read_steps import read_rule as read_rule
from ._read_steps import read_step as read_step
from ._read_steps import read_step_fully as read_step_fully
from ._result import READERS, RECORDED_OPTIONS, Imported, Result, RunOptions, Step, check_header
from ._values import MAX_DEPTH as MAX_DEPTH
from ._values import MISSING
from ._values import _at as _at
from ._values import as_bool as as_bool
from ._values import as_int as as_int
from ._values import as_json as as_json
from ._values import as_list as as_list
from ._values import as_number as as_number
from ._values import as_object as as_object
from ._values import as_text as as_text
from ._values import content_id as content_id
from ._values import get_key as get_key
from ._values import read_budget as read_budget
from ._values import read_price as read_price
from ._values import read_projection as read_projection
from ._values import read_usage as read_usage

_STOPS = tuple(s.value for s in Stop)


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

    def get(name: str, default: Any = MISSING) -> Any:
        return get_key(data, "", name, default)

    compact = data["version"] == 2  # each text once: calls' arguments, messages referred to
    steps = tuple(
        read_step(s, _at("steps", i), i, compact)
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
