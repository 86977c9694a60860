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
says what is wrong. The result is the same either way. A version-2 journal's usual step line
(``step_line``) is decoded by msgspec into structs of the record's fields, no dict made, and
checked by the same tests; a line it cannot decode so is parsed again as any line is.
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


# Each record's keys in the order of its class's fields, and what a key left out reads as
# (``_NO``: it is required, and the full reader says so).
_CALL_KEYS = ("name", "id", "raw_arguments", "arguments", "status", "result", "error", "seconds",
              "coerced", "truncated", "traceback", "approval", "server")  # fmt: skip
_CALL_DEFAULTS = (_NO, _NO, _NO, _NO, _NO, None, None, 0.0, (), None, None, None, None)
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
               "reasoning_tokens")  # fmt: skip
_USAGE_DEFAULTS = (_NO, _NO, 0, 0, 0)
_PROJECTION_KEYS = ("input_tokens", "output_tokens", "cost_usd", "spent_usd", "limit_usd", "fits",
                    "tier", "fitted_from")  # fmt: skip
_PROJECTION_DEFAULTS = (_NO, _NO, _NO, _NO, _NO, _NO, None, None)
_STEP_KEYS = ("index", "text", "tool_calls", "usage", "cost_usd", "projection", "seconds", "error",
              "final_answer", "traceback", "model", "response_id", "finish_reason",
              "first_chunk_seconds")  # fmt: skip
_STEP_DEFAULTS = (_NO, None, (), None, _NO, _NO, 0.0, None, False, None, None, None, None, None)

# A record's values in the order of its keys: from a dict (None for anything else), or from
# the typed line ``step_line`` decodes (its structs are fields in that order, ``astuple``).
Values = Callable[[Any, tuple[str, ...], tuple[Any, ...]], tuple[Any, ...] | None]


def _from_dict(data: Any, keys: tuple[str, ...], defaults: tuple[Any, ...]) -> Any:
    return tuple(map(data.get, keys, defaults)) if type(data) is dict else None


def call(data: Any, compact: bool = False) -> CallRecord | None:
    """``read_call``'s CallRecord, or None: leave it to ``read_call``. ``compact``: version 2's
    data, whose ``arguments`` left out are its ``raw_arguments`` (an object), as ``filled``
    puts them back."""
    values = _from_dict(data, _CALL_KEYS, _CALL_DEFAULTS)
    return None if values is None else _call(values, compact)


def _call(values: tuple[Any, ...], compact: bool) -> CallRecord | None:
    """``call`` of a call's values (``_CALL_KEYS``)."""
    (name, id_, raw, arguments, status, result, error, seconds, coerced, truncated, traceback,
     approval, server) = values  # fmt: skip
    if arguments is _NO and compact and type(raw) is dict:
        arguments = raw
    if not (
        (name is None or type(name) is str)
        and type(id_) is str
        and type(status) is str
        and status in STATUSES
        and (result is None or type(result) is str)
        and (error is None or type(error) is str)
        and (traceback is None or type(traceback) is str)
        and (server is None or type(server) is str)
        and (  # _number(seconds), written out: this runs once a call of a trace
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
        cast(Status, status),
        result,
        error,
        seconds,
        coerced if type(coerced) is tuple else tuple(coerced),
        truncated,
        traceback,
        approval,
        server,
    )


def usage_figures(data: Any) -> Any:
    """A usage's counts as ``read_usage`` accepts them (input, output, cache read, cache write,
    reasoning), None for none, or ``_NO``: leave it to ``read_usage``."""
    if data is None:
        return None
    figures = _from_dict(data, _USAGE_KEYS, _USAGE_DEFAULTS)
    return _NO if figures is None or not _counts(figures) else figures


def _counts(figures: tuple[Any, ...]) -> bool:
    """A usage's counts (``_USAGE_KEYS``) are what ``read_usage`` accepts."""
    inp, out, read, write, reasoning = figures
    return (
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
    )


def projection_fits(data: Any) -> bool:
    """The data is a projection ``read_projection`` reads as it is (an object, not None)."""
    values = _from_dict(data, _PROJECTION_KEYS, _PROJECTION_DEFAULTS)
    return values is not None and _fits(values)


def _fits(values: tuple[Any, ...]) -> bool:
    """A projection's fields (``_PROJECTION_KEYS``) are what ``read_projection`` accepts."""
    inp, out, cost, spent, limit, fits, tier, fitted = values
    return (
        (tier is None or (type(tier) is int and tier >= 0))
        and (fitted is None or (type(fitted) is int and fitted >= 0))
        and type(inp) is int
        and inp >= 0
        and (out is None or (type(out) is int and out >= 0))
        and (cost is None or _number(cost))
        and _number(spent)
        and (limit is None or _number(limit))
        and type(fits) is bool
    )


def step(data: Any, index: int | None, compact: bool = False) -> Step | None:
    """``read_step``'s Step (numbered ``index`` when given), or None: leave it to ``read_step``.
    ``compact``: version 2's data (``call``)."""
    if type(data) is dict and "context" in data:  # a policy's edit: read field by field
        return None
    values = _from_dict(data, _STEP_KEYS, _STEP_DEFAULTS)
    return None if values is None else _step(values, index, compact, _from_dict)


def _step(values: tuple[Any, ...], index: int | None, compact: bool, of: Values) -> Step | None:
    """``step`` of a step's values (``_STEP_KEYS``), its usage, projection and calls read by
    ``of``."""
    (number, text, raw_calls, usage, cost, projection, seconds, error, final, traceback, model,
     response_id, finish, first) = values  # fmt: skip
    if not (
        type(number) is int
        and number >= 0
        and (index is None or number == index)
        and (text is None or type(text) is str)
        and (  # _number(cost) and _number(seconds), written out: this runs once a step
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
        figures = of(usage, _USAGE_KEYS, _USAGE_DEFAULTS)
        if figures is None or not _counts(figures):
            return None
        usage = _USAGE(*figures)  # checked as Usage.__post_init__ checks them
    if projection is not None:
        figures = of(projection, _PROJECTION_KEYS, _PROJECTION_DEFAULTS)
        if figures is None or not _fits(figures):
            return None
        projection = _PROJECTION(*figures)
    calls: tuple[CallRecord, ...] = ()
    if raw_calls:
        made = []
        for raw in raw_calls:
            fields = of(raw, _CALL_KEYS, _CALL_DEFAULTS)
            record = None if fields is None else _call(fields, compact)
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


@functools.cache
def _line_decoder() -> tuple[Callable[[bytes], Any], Values] | None:
    """msgspec's decoder of a journal's step line into structs of its fields (any value each,
    ``_NO`` where left out), and the ``Values`` of its structs; None without msgspec."""
    if _decoder() is None:
        return None
    msgspec = importlib.import_module("msgspec")

    def struct(name: str, keys: tuple[str, ...], defaults: tuple[Any, ...], **typed: Any) -> Any:
        fields = [(k, typed.get(k, Any), d) for k, d in zip(keys, defaults, strict=True)]
        return msgspec.defstruct(name, fields)

    usage = struct("Usage", _USAGE_KEYS, _USAGE_DEFAULTS)
    projection = struct("Projection", _PROJECTION_KEYS, _PROJECTION_DEFAULTS)
    record = struct("CallRecord", _CALL_KEYS, _CALL_DEFAULTS)
    calls = list[record]  # type: ignore[valid-type]
    typed = {"usage": usage | None, "projection": projection | None, "tool_calls": calls}
    # a step's ``context`` (a policy's edit) is read, so a line with one is left to the full
    # reader rather than read without it
    step_type = struct("Step", (*_STEP_KEYS, "context"), (*_STEP_DEFAULTS, _NO), **typed)
    line = struct("Line", ("kind", "step", "messages"), (_NO, None, _NO), step=step_type | None)
    astuple = msgspec.structs.astuple

    def of(data: Any, keys: tuple[str, ...], defaults: tuple[Any, ...]) -> Any:
        return None if data is _NO else astuple(data)  # (a projection left out is _NO)

    return msgspec.json.Decoder(line).decode, of


def utf8(raw: bytes) -> bool:
    """Whether ``raw`` is UTF-8 throughout: msgspec decodes only the fields it reads, and skips
    the text of any other unchecked."""
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def step_line(raw: bytes, index: int) -> Step | None:
    """The step of a version-2 journal's step line ``raw`` that holds no ``messages`` (the
    loop's usual ones, ``_compact``), numbered ``index``, as ``read_step`` reads the line's
    ``step``; None for any other line, or without msgspec: leave it to the full reader.

    msgspec decodes the line into structs, not dicts (their values as ``json_loads`` gives
    them); a line whose records are not objects where they must be is not decoded here."""
    decoder = _line_decoder()
    if decoder is None:
        return None
    decode, of = decoder
    try:
        line = decode(raw)
    except (ValueError, RecursionError):  # not JSON, or not of these shapes (ValidationError)
        return None
    data = line.step
    if line.kind != "step" or line.messages is not _NO or data is None or not utf8(raw):
        return None
    if data.context is not _NO:  # a policy's edit: read field by field
        return None
    fields = of(data, _STEP_KEYS, _STEP_DEFAULTS)
    return None if fields is None else _step(fields[: len(_STEP_KEYS)], index, True, of)


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
