"""The common case of reading trace data, checked with exact type tests and built at once.

``_read``'s readers walk every field with a message ready for each thing that can be
wrong; for a 100,000-step trace that is most of the load. These readers make the same checks
as plain type and range tests, accept only values the full readers accept (exact ``dict``,
``list``, ``str``, ``int``, ``float``, ``bool``, as ``json.loads`` makes them), building no path
strings and no messages. On anything else they return None, and the full reader runs: it builds
the same object, or raises the ``ValueError`` that names the field.
``tests/core/test_read_fast.py`` holds the two readers to the same results.

The JSON itself is parsed first by msgspec's decoder when it is installed (the ``fast`` extra;
benchmarks/README.md has the figures): ``json_loads`` returns what ``json.loads`` would, or
``NOT_READ`` where msgspec refuses the bytes (not JSON, not UTF-8, NaN, a number past a float,
a lone surrogate, nesting deeper than it reads), and then the standard library parses them and
says what is wrong. The result is the same either way.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, cast

from .._engine._frozen import unchecked
from .._engine._types import ROLES, Message, ToolCall, Usage
from .._rules._budget import Projection
from ._result import APPROVALS, STATUSES, CallRecord, Status, Step

MAX_DEPTH = 100  # as _read.MAX_DEPTH: containers nested at most this deep
_NO: Any = object()
_INF = float("inf")
_BIG = 2**1023  # an int below this converts to a float
_SCALARS = frozenset({str, int, float, bool, type(None)})
_PLAIN = _SCALARS - {float}  # scalars that need no further look (a float may be NaN)


NOT_READ: Any = _NO  # json_loads: the standard library is to parse these bytes

# The records made from values checked here as their __post_init__ would check them.
_CALL_RECORD, _STEP, _USAGE = unchecked(CallRecord), unchecked(Step), unchecked(Usage)
_PROJECTION, _MESSAGE, _TOOL_CALL = unchecked(Projection), unchecked(Message), unchecked(ToolCall)


@functools.cache
def _decoder() -> Callable[[bytes], Any] | None:
    """msgspec's JSON decoder, when msgspec is installed."""
    try:
        msgspec_json = importlib.import_module("msgspec.json")
    except ImportError:
        return None
    decode: Callable[[bytes], Any] = msgspec_json.Decoder().decode
    return decode


def fast_json() -> bool:
    """Whether ``json_loads`` has a fast parser (msgspec is installed)."""
    return _decoder() is not None


def json_loads(raw: bytes, fast: bool = True) -> Any:
    """``raw`` parsed as ``json.loads`` would parse it, by msgspec; ``NOT_READ`` when ``fast``
    is False, msgspec is not installed or it refuses the bytes."""
    decode = _decoder() if fast else None
    if decode is None:
        return NOT_READ
    try:
        return decode(raw)
    except (ValueError, RecursionError):  # msgspec's DecodeError is a ValueError
        return NOT_READ


def _number(value: Any) -> bool:
    """What ``as_number`` accepts: a finite number >= 0 a float can hold (not a bool)."""
    kind = type(value)
    ok: bool = (0.0 <= value < _INF) if kind is float else (kind is int and 0 <= value < _BIG)
    return ok


def _json(value: Any) -> bool:
    """What ``as_json`` accepts: JSON data with string keys and finite numbers, at most
    ``MAX_DEPTH`` deep."""
    if type(value) is dict:  # the common case first: an object of plain values
        for key, inner in value.items():
            if type(key) is not str or type(inner) not in _PLAIN:
                break
        else:
            return True
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is float:
            if not -_INF < item < _INF:  # NaN and infinities are not JSON
                return False
            continue
        if kind in _SCALARS:
            continue
        if depth >= MAX_DEPTH:
            return False
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return False
                if type(inner) in _PLAIN:
                    continue
                stack.append((inner, depth + 1))
        elif kind is list:
            stack.extend((inner, depth + 1) for inner in item if type(inner) not in _PLAIN)
        else:
            return False
    return True


def call(data: Any, compact: bool = False) -> CallRecord | None:
    """``read_call``'s CallRecord, or None: leave it to ``read_call``. ``compact``: version 2's
    data, whose ``arguments`` left out are its ``raw_arguments`` (an object), as ``filled``
    puts them back."""
    if type(data) is not dict:
        return None
    get = data.get
    name: Any = get("name", _NO)
    id_, status = get("id", _NO), cast(Status, get("status", _NO))
    raw, arguments = get("raw_arguments", _NO), get("arguments", _NO)
    if arguments is _NO and compact and type(raw) is dict:
        arguments = raw
    result, error, traceback, server = get("result"), get("error"), get("traceback"), get("server")
    seconds, coerced, truncated = get("seconds", 0.0), get("coerced", ()), get("truncated")
    approval = get("approval")
    # _number(seconds) and the rest written out: this runs once for each call of a trace
    if not (
        (name is None or type(name) is str)
        and type(id_) is str
        and type(status) is str
        and status in STATUSES
        and (result is None or type(result) is str)
        and (error is None or type(error) is str)
        and (traceback is None or type(traceback) is str)
        and (server is None or type(server) is str)
        and (
            (0.0 <= seconds < _INF)
            if type(seconds) is float
            else (type(seconds) is int and 0 <= seconds < _BIG)
        )
        and (truncated is None or (type(truncated) is int and truncated >= 0))
        and raw is not _NO
        and _json(raw)
        and (
            arguments is None
            or (type(arguments) is dict and (arguments is raw or _json(arguments)))
        )
        and (
            coerced == ()
            or (type(coerced) in (list, tuple) and all(type(c) is str for c in coerced))
        )
        and (approval is None or (type(approval) is str and approval in APPROVALS))
        and (status == "denied") == (approval == "denied")
    ):
        return None
    # what CallRecord.__post_init__ checks is checked above
    return _CALL_RECORD(
        name,  # None too: a trace may hold a call that had no name
        id_,
        raw,
        arguments,
        status,
        result,
        error,
        seconds,
        coerced if type(coerced) is tuple else tuple(coerced),
        truncated,
        traceback,
        approval,
        server,
    )


def _usage(data: Any) -> Any:
    """``read_usage``'s Usage or None, or ``_NO``: leave it to ``read_usage``."""
    figures = usage_figures(data)
    if figures is None or figures is _NO:
        return figures
    return _USAGE(*figures)  # checked as Usage.__post_init__ checks them


def usage_figures(data: Any) -> Any:
    """A usage's counts as ``read_usage`` accepts them (input, output, cache read, cache write,
    reasoning), None for none, or ``_NO``: leave it to ``read_usage``."""
    if data is None:
        return None
    if type(data) is not dict:
        return _NO
    get = data.get
    inp, out = get("input_tokens", _NO), get("output_tokens", _NO)
    read, write = get("cache_read_tokens", 0), get("cache_write_tokens", 0)
    reasoning = get("reasoning_tokens", 0)
    if not (
        type(inp) is int
        and type(out) is int
        and type(read) is int
        and type(write) is int
        and type(reasoning) is int
        and inp >= 0
        and out >= 0
        and read >= 0
        and write >= 0
        and read + write <= inp
        and 0 <= reasoning <= out
    ):
        return _NO
    return inp, out, read, write, reasoning


def _projection(data: Any) -> Projection | None:
    values = _projection_values(data)
    return None if values is None else _PROJECTION(*values)


def projection_fits(data: Any) -> bool:
    """The data is a projection ``read_projection`` reads as it is (an object, not None)."""
    return _projection_values(data) is not None


def _projection_values(data: Any) -> tuple[Any, ...] | None:
    """A projection's fields in order, as ``read_projection`` accepts them, or None."""
    if type(data) is not dict:
        return None
    get = data.get
    inp, out, cost = get("input_tokens", _NO), get("output_tokens", _NO), get("cost_usd", _NO)
    spent, limit, fits = get("spent_usd", _NO), get("limit_usd", _NO), get("fits", _NO)
    tier, fitted = get("tier"), get("fitted_from")
    if (
        (tier is None or (type(tier) is int and tier >= 0))
        and (fitted is None or (type(fitted) is int and fitted >= 0))
        and type(inp) is int
        and inp >= 0
        and (out is None or (type(out) is int and out >= 0))
        and (cost is None or _number(cost))
        and _number(spent)
        and (limit is None or _number(limit))
        and type(fits) is bool
    ):
        return inp, out, cost, spent, limit, fits, tier, fitted
    return None


def step(data: Any, index: int | None, compact: bool = False) -> Step | None:
    """``read_step``'s Step (numbered ``index`` when given), or None: leave it to ``read_step``.
    ``compact``: version 2's data (``call``).

    Runs once a step of a trace: ``_number``, ``_usage`` and ``_projection`` are written out
    here, making the same checks."""
    if type(data) is not dict:
        return None
    get = data.get
    number, text, cost = get("index", _NO), get("text"), get("cost_usd", _NO)
    seconds, error, traceback = get("seconds", 0.0), get("error"), get("traceback")
    final, raw_calls = get("final_answer", False), get("tool_calls", ())
    model, response_id, finish = get("model"), get("response_id"), get("finish_reason")
    first, usage, projection = get("first_chunk_seconds"), get("usage"), get("projection", _NO)
    if not (
        type(number) is int
        and number >= 0
        and (index is None or number == index)
        and (text is None or type(text) is str)
        and (
            (0.0 <= cost < _INF)
            if type(cost) is float
            else (cost is None or (type(cost) is int and 0 <= cost < _BIG))
        )
        and (
            (0.0 <= seconds < _INF)
            if type(seconds) is float
            else (type(seconds) is int and 0 <= seconds < _BIG)
        )
        and (error is None or type(error) is str)
        and (traceback is None or type(traceback) is str)
        and type(final) is bool
        and type(raw_calls) in (list, tuple)
        and (model is None or type(model) is str)
        and (response_id is None or type(response_id) is str)
        and (finish is None or type(finish) is str)
        and (first is None or _number(first))
    ):
        return None
    if usage is not None:
        if type(usage) is not dict:
            return None
        counted = usage.get
        inp, out = counted("input_tokens", _NO), counted("output_tokens", _NO)
        read, write = counted("cache_read_tokens", 0), counted("cache_write_tokens", 0)
        reasoning = counted("reasoning_tokens", 0)
        if not (  # as usage_figures checks them
            type(inp) is int
            and type(out) is int
            and type(read) is int
            and type(write) is int
            and type(reasoning) is int
            and inp >= 0
            and out >= 0
            and read >= 0
            and write >= 0
            and read + write <= inp
            and 0 <= reasoning <= out
        ):
            return None
        usage = _USAGE(inp, out, read, write, reasoning)  # checked as Usage checks them
    if projection is not None:
        values = _projection_values(projection)
        if values is None:
            return None
        projection = _PROJECTION(*values)
    calls: tuple[CallRecord, ...] = ()
    if raw_calls:
        made = []
        for raw in raw_calls:
            record = call(raw, compact)
            if record is None:
                return None
            made.append(record)
        calls = tuple(made)
    return _STEP(
        number,
        text,
        calls,
        usage,
        cost,
        projection,
        seconds,
        error,
        final,
        traceback,
        model,
        response_id,
        finish,
        first,
    )


def message(data: Any) -> Message | None:
    """``read_messages``' Message, or None: leave it to ``read_message_fully``."""
    if type(data) is not dict:
        return None
    get = data.get
    role, content, raw_calls = get("role"), get("content"), get("tool_calls", ())
    call_id, name = get("tool_call_id"), get("name")
    if not (
        type(role) is str
        and role in ROLES
        and (content is None or type(content) is str)
        and (call_id is None or type(call_id) is str)
        and (name is None or type(name) is str)
        and type(raw_calls) in (list, tuple)
    ):
        return None
    calls = []
    for raw in raw_calls:
        if type(raw) is not dict:
            return None
        tool: Any = raw.get("name", _NO)
        arguments, id_ = raw.get("arguments", "{}"), raw.get("id")
        if not (
            (tool is None or type(tool) is str)
            and (id_ is None or type(id_) is str)
            and _json(arguments)
        ):
            return None
        calls.append(_TOOL_CALL(tool, arguments, id_))
    return _MESSAGE(role, content, tuple(calls), call_id, name)  # checked as Message checks
