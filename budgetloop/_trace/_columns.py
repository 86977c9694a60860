"""The list's columns of a saved run, read from its file without building every ``Step``.

A viewer's list shows a few short columns a step: its number, status, cost, tokens, a preview of
its text and its seconds. ``read_columns(path)`` reads them from a budgetloop trace (JSON Lines
or a saved JSON, format version 1 or 2), taking from each step only those fields, each checked
by exact type tests as ``_read_fast`` checks them; and for JSON Lines where each step's line
starts, so ``read_step_at`` reads the step's full record when it is opened. A JSON Lines trace
is read a line at a time, and with msgspec installed (the ``fast`` extra) each step line is
decoded into structs of those fields alone, typed to take what those tests take
(``_typed_decoder``); a line they do not take is parsed whole (``_read_fast.json_loads``) and
its fields tested. What it cannot read that way (another framework's file, a field of another
type, a line out of place, a total below what the steps cost) is read by ``load_trace`` and its
columns taken from the ``Result`` (``columns_of``): the same columns, or the same error, with
msgspec or without. Fields it does not read (a call's arguments and result, the messages) are
checked when a step is opened. ``read_columns(path, first=K)`` reads a JSON Lines trace's first
K steps only, for a view to show them before the rest is read.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Annotated, Any, Literal

from .._engine._valid import check_int
from . import _read_fast as _fast
from ._files import MAX_TRACE_BYTES, open_regular, read_regular
from ._journal import _BLANK_TO_END, _collector_paused, _end, _header, _one_run
from ._read import read_step
from ._result import APPROVALS, STATUSES, Step, check_header

PREVIEW = 200  # characters of a step's first line in ``preview``
_STATUS_ORDER = ("error", "skipped", "denied", "ok")  # the first of these a step's calls have


def status_of(failed: bool, statuses: Sequence[str]) -> str:
    """A step's status as its row says it: ``model error`` when its model call failed, else the
    first of error, skipped, denied and ok among its calls' statuses, else ``answer``."""
    if failed:
        return "model error"
    for name in _STATUS_ORDER:
        if name in statuses:
            return name
    return "answer"


def preview_of(text: str | None, error: str | None) -> str:
    """A step's text (its model error when it has no text) as a row shows it: the first line,
    `` …`` when more follow, cut at ``PREVIEW`` characters."""
    value = text or error or ""
    line, newline, _ = value.partition("\n")
    if len(line) > PREVIEW:
        return line[:PREVIEW] + "…"
    return line + " …" if newline else line


@dataclass(frozen=True)
class Columns:
    """One entry per step of a saved run, in order: ``index``, ``status`` (``status_of``),
    ``cost_usd``, ``input_tokens`` and ``output_tokens`` (None without a usage), ``preview``
    (``preview_of``), ``seconds``; what a list's filters read: each call's status and a
    person's decision (``calls``), whether the step reported more input than projected
    (``under``) and was a final answer (``final``); each call's tool (``tools``) and the input
    tokens projected before the step (``projected``, None for a step with no projection).
    ``offsets``: where each step's line starts in a JSON Lines file (None otherwise, or when
    the columns came from a loaded ``Result``), and ``version``, the file's format."""

    index: list[int]
    status: list[str]
    cost_usd: list[float | None]
    input_tokens: list[int | None]
    output_tokens: list[int | None]
    preview: list[str]
    seconds: list[float]
    calls: list[tuple[tuple[str, str | None], ...]]
    under: list[bool]
    final: list[bool]
    tools: list[tuple[str, ...]]
    projected: list[int | None]
    offsets: list[int] | None = field(default=None, compare=False)
    version: int = field(default=2, compare=False)
    file: tuple[int, int] | None = field(default=None, compare=False)  # its device and inode


Facts = tuple[
    int, str | None, str | None, float | None, int | None, int | None, float,
    tuple[tuple[str, str | None], ...], bool, bool, tuple[str, ...], int | None,
]  # fmt: skip
"""What the columns hold of a step: its index, text, error, cost, input and output tokens,
seconds, calls' status and decision, under-projected, final, tools and projected input."""
_COLUMNS = 12  # the columns of a Columns, in its fields' order


def _under(input_tokens: int | None, projected: int | None) -> bool:
    """``Step.under_projected > 0``, of its figures: more input reported than projected."""
    return input_tokens is not None and projected is not None and input_tokens > projected


def _columns(
    facts: list[Facts],
    offsets: list[int] | None = None,
    version: int = 2,
    file: tuple[int, int] | None = None,
) -> Columns:
    """The columns of steps' facts: each a column of them, and the status and the preview a
    row shows, each kind of status worked out once."""
    if not facts:
        return Columns([], [], [], [], [], [], [], [], [], [], [], [], offsets, version, file)
    index, texts, errors, cost, inp, out, seconds, calls, under, final, tools, projected = map(
        list, zip(*facts, strict=True)
    )
    shared: dict[Any, Any] = {}  # one copy of each calls and tools (most steps' are alike)
    calls, tools = (
        list(map(shared.setdefault, calls, calls)),
        list(map(shared.setdefault, tools, tools)),
    )
    keys = [(error is not None, pairs) for error, pairs in zip(errors, calls, strict=True)]
    known = {key: status_of(key[0], [status for status, _ in key[1]]) for key in set(keys)}
    return Columns(
        index,
        [known[key] for key in keys],
        cost,
        inp,
        out,
        list(map(preview_of, texts, errors)),
        list(map(float, seconds)),
        calls,
        under,
        final,
        tools,
        projected,
        offsets,
        version,
        file,
    )


def _cut(columns: Columns, first: int) -> Columns:
    """The columns of the first ``first`` steps."""
    cut = {
        f.name: getattr(columns, f.name)[:first] for f in dataclasses.fields(columns)[:_COLUMNS]
    }
    offsets = None if columns.offsets is None else columns.offsets[:first]
    return dataclasses.replace(columns, offsets=offsets, **cut)


def columns_of(steps: Sequence[Step]) -> Columns:
    """The columns of steps already built (a loaded ``Result``'s)."""
    facts: list[Facts] = []
    for s in steps:
        usage, projection = s.usage, s.projection
        facts.append(
            (
                s.index,
                s.text,
                s.error,
                s.cost_usd,
                None if usage is None else usage.input_tokens,
                None if usage is None else usage.output_tokens,
                s.seconds,
                tuple((c.status, c.approval) for c in s.tool_calls),
                s.under_projected > 0,  # the step's one rule
                s.final_answer,
                tuple(c.name for c in s.tool_calls),
                None if projection is None else projection.input_tokens,
            )
        )
    return _columns(facts)


class _NotHere(Exception):
    """Not read here: ``load_trace`` reads the file."""


def _step(data: Any, index: int) -> Facts:
    """A step's facts from its data, checked as ``_read_fast.step`` checks them."""
    if type(data) is not dict:
        raise _NotHere
    get = data.get
    number, text, error = get("index"), get("text"), get("error")
    cost, seconds, final = (
        get("cost_usd", _fast.NOT_READ),
        get("seconds", 0.0),
        get("final_answer", False),
    )
    raw_calls = get("tool_calls", ())
    if not (
        type(number) is int
        and number == index
        and (text is None or type(text) is str)
        and (error is None or type(error) is str)
        and (cost is None or _fast._number(cost))
        and _fast._number(seconds)
        and type(final) is bool
        and type(raw_calls) in (list, tuple)
    ):
        raise _NotHere
    usage = _fast.usage_figures(get("usage"))
    projection = get("projection", _fast.NOT_READ)
    if usage is _fast.NOT_READ or not (projection is None or _fast.projection_fits(projection)):
        raise _NotHere
    calls, tools = [], []
    for call in raw_calls:
        if type(call) is not dict:
            raise _NotHere
        status, approval, name = call.get("status"), call.get("approval"), call.get("name")
        if not (
            type(name) is str
            and type(status) is str
            and status in STATUSES
            and (approval is None or (type(approval) is str and approval in APPROVALS))
            and (status == "denied") == (approval == "denied")
        ):
            raise _NotHere
        calls.append((status, approval))
        tools.append(name)
    inp = None if usage is None else usage[0]
    projected = None if projection is None else projection["input_tokens"]
    return (
        index, text, error, cost, inp, None if usage is None else usage[1], seconds,
        tuple(calls), _under(inp, projected), final, tuple(tools), projected,
    )  # fmt: skip


Typed = tuple[Callable[[bytes], Any], Callable[[Any], tuple[Any, ...]]]  # a decoder, astuple


@functools.cache
def _typed_decoder() -> Typed | None:
    """msgspec's decoder of a step line into structs of only the fields ``_step`` reads (the
    others skipped, not built), typed so that what they take ``_step`` takes: an int is an int
    (not a bool, not a float), a count one >= 0 (and below 2**63), a number such a count or a
    float >= 0 (msgspec reads no NaN and no number past a float), a text a str or null, a
    status one of ``STATUSES``, an approval one of ``APPROVALS`` or null, a record an object, a
    field ``_step`` requires required. What a type cannot say (the step's number, a usage's
    sums, the ``denied`` rule) ``_typed_facts`` checks; with msgspec's ``astuple`` for that.
    None without msgspec."""
    if not _fast.fast_json():
        return None
    msgspec = importlib.import_module("msgspec")
    count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
    number = count | Annotated[float, msgspec.Meta(ge=0)]  # each kept as it is written
    statuses: Any = Literal.__getitem__(STATUSES)
    approvals: Any = Literal.__getitem__(APPROVALS)

    def struct(
        title: str, keys: tuple[str, ...], defaults: tuple[Any, ...], /, **types: Any
    ) -> Any:
        fields = [
            (key, types[key]) if default is _fast.NOT_READ else (key, types[key], default)
            for key, default in zip(keys, defaults, strict=True)
        ]
        return msgspec.defstruct(f"Columns{title}", fields, kw_only=True, gc=False)

    call = struct(
        "Call",
        ("name", "status", "approval"),
        (_fast.NOT_READ, _fast.NOT_READ, None),
        name=str,
        status=statuses,
        approval=approvals | None,
    )
    usage = struct("Usage", _fast._USAGE_KEYS, _fast._USAGE_DEFAULTS, **dict.fromkeys(
        _fast._USAGE_KEYS, count))  # fmt: skip
    projection = struct(
        "Projection",
        _fast._PROJECTION_KEYS,
        _fast._PROJECTION_DEFAULTS,
        input_tokens=count,
        output_tokens=count | None,
        cost_usd=number | None,
        spent_usd=number,
        limit_usd=number | None,
        fits=bool,
        tier=count | None,
        fitted_from=count | None,
    )
    step = struct(
        "Step",
        ("index", "text", "error", "cost_usd", "seconds", "final_answer", "tool_calls", "usage",
         "projection"),
        (_fast.NOT_READ, None, None, _fast.NOT_READ, 0.0, False, (), None, _fast.NOT_READ),
        index=int,
        text=str | None,
        error=str | None,
        cost_usd=number | None,
        seconds=number,
        final_answer=bool,
        tool_calls=list[call],  # type: ignore[valid-type]
        usage=usage | None,
        projection=projection | None,
    )  # fmt: skip
    line = struct("Line", ("kind", "step"), (_fast.NOT_READ,) * 2, kind=Literal["step"], step=step)
    return msgspec.json.Decoder(line).decode, msgspec.structs.astuple


def _typed_facts(typed: Typed, line: bytes, index: int) -> Facts | None:
    """The facts of step line ``line`` (step ``index``) by ``typed``, ``_typed_decoder``'s
    structs, or None: ``_step`` reads the line."""
    decode, astuple = typed
    try:
        step = decode(line).step
    except (ValueError, RecursionError):  # not JSON, or not of these types (a ValidationError)
        return None
    if not _fast.utf8(line):
        return None
    if step.index != index:
        return None
    usage, projection, calls = step.usage, step.projection, step.tool_calls
    if usage is None:
        inp = out = None
    elif _fast._counts(astuple(usage)):  # what cached and what reasoned are within the counts
        inp, out = usage.input_tokens, usage.output_tokens
    else:
        return None
    projected = None if projection is None else projection.input_tokens
    pairs: tuple[tuple[str, str | None], ...] = ()
    tools: tuple[str, ...] = ()
    if len(calls) == 1:  # the usual step's
        call = calls[0]
        if (call.status == "denied") != (call.approval == "denied"):
            return None
        pairs, tools = ((call.status, call.approval),), (call.name,)
    elif calls:
        made, names = [], []
        for call in calls:
            status, approval = call.status, call.approval
            if (status == "denied") != (approval == "denied"):
                return None
            made.append((status, approval))
            names.append(call.name)
        pairs, tools = tuple(made), tuple(names)
    return (
        index, step.text, step.error, step.cost_usd, inp, out, step.seconds, pairs,
        _under(inp, projected), step.final_answer, tools, projected,
    )  # fmt: skip


def _covers(total: Any, costs: Iterable[float | None]) -> None:
    """The run's total is at least what its steps cost, by the float sum (``check_spend``'s
    first test); anything closer is ``load_trace``'s to decide."""
    if total is None:
        return
    if not _fast._number(total) or math.fsum(c or 0.0 for c in costs) > total * (1 + 2**-50):
        raise _NotHere


def _parse(raw: bytes, fast: bool) -> Any:
    data = _fast.json_loads(raw, fast)
    return json.loads(raw.decode("utf-8")) if data is _fast.NOT_READ else data


_PEEK = 1 << 16  # bytes of the line after the ``first`` steps read before it is known an end line
_END = re.compile(rb'\s*\{\s*"kind"\s*:\s*"end"')  # how budgetloop writes an end line's start


def _from_lines(source: IO[bytes], fast: bool, first: int | None = None) -> Columns:
    """The columns of the JSON Lines trace read from ``source``, a line at a time. ``first``:
    of its first steps only, read no further than the next line that is not blank, and on only
    when it is the end line; that line is read whole when it is at most ``_PEEK`` bytes or
    starts as budgetloop writes an end line (``_END``), else it is taken for another step."""
    typed = _typed_decoder() if fast else None
    steps: list[Facts] = []
    offsets: list[int] = []
    version = 0
    ended = False
    at = 0
    readline = source.readline
    while True:
        past = len(offsets) == first and not ended  # the first steps read: only an end line now
        line = readline(_PEEK if past else -1)
        if not line:
            break
        start, at = at, at + len(line)
        if typed and version and not past and not ended:  # the common line: a step
            facts = _typed_facts(typed, line, len(offsets))
            if facts is not None:
                steps.append(facts)
                offsets.append(start)
                continue
        if not line.strip():
            continue
        if past and len(line) == _PEEK and line[-1:] != b"\n":  # a line longer than _PEEK
            if not _END.match(line):
                break
            rest = readline()
            line, at = line + rest, at + len(rest)
        last = line[-1:] != b"\n"
        try:
            entry = _parse(line, fast)
        except (ValueError, RecursionError):
            if last or past:
                break  # a torn last line, as load_trace ignores it; or after the first steps
            raise _NotHere from None
        kind = entry.get("kind") if type(entry) is dict else None
        if past and kind != "end":
            break
        if ended or (kind == "header") != (not version):
            raise _NotHere  # a line after the end, a second header, a step before one
        if kind == "header":
            check_header(entry)
            _header(entry)  # the run's settings, checked as load_trace checks them
            version = entry["version"]
        elif kind == "step":
            steps.append(_step(entry.get("step"), len(offsets)))
            offsets.append(start)
        elif kind == "end":
            _covers(_end(entry)["cost_usd"], (f[3] for f in steps))
            ended = True
        else:
            raise _NotHere
    if not version:
        raise _NotHere
    return _columns(steps, offsets, version)


def _from_document(raw: bytes, fast: bool) -> Columns:
    try:
        data = _parse(raw, fast)
    except (ValueError, RecursionError):
        raise _NotHere from None
    if type(data) is not dict or "format" not in data:
        raise _NotHere
    check_header(data)
    steps = data.get("steps")
    if type(steps) is not list:
        raise _NotHere
    facts = [_step(step, i) for i, step in enumerate(steps)]
    _covers(data.get("cost_usd", _fast.NOT_READ), (f[3] for f in facts))
    return _columns(facts, None, data["version"])


_UNREAD = (_NotHere, ValueError, RecursionError, UnicodeDecodeError)  # load_trace reads the file
_CHUNK = 1 << 16  # bytes a JSON Lines trace is read in
_HEAD = 1 << 24  # bytes of a header line read a line at a time (a longer one: the file read whole)


def read_columns(
    path: str | os.PathLike[str], *, first: int | None = None, _stdlib: bool = False
) -> Columns:
    """The columns of the run saved at ``path`` (``Columns``), without building its steps
    where the file is budgetloop's own; any other file's, or one it cannot read so, from
    ``load_trace`` (its errors too, naming ``read_columns``). ``_stdlib`` as for
    ``load_trace``.

    ``first=K`` (an int >= 1): the columns of the run's first K steps only. A JSON Lines trace
    is read from its start, in chunks, no further than the line after step K's (and the rest
    when that line is the end line), its offsets and ``file`` as a whole read gives them. So a
    file of K steps or fewer, whose last step's line is followed by its end line or a torn
    line, gives what ``read_columns(path)`` gives (the end line's total checked as it checks
    it), and one of more steps its first K even when a later line is torn or not JSON. Any
    other file (a saved JSON, another framework's, a JSON Lines trace whose first K steps are
    not read so) is read whole, and the first K of its columns returned."""
    check_int("read_columns", "first", first, least=1, optional=True)
    fast = not _stdlib
    columns = _from_start(path, fast, first)
    if columns is None:
        columns = _whole(path, fast)
    return columns if first is None or len(columns.index) <= first else _cut(columns, first)


def _from_start(path: str | os.PathLike[str], fast: bool, first: int | None) -> Columns | None:
    """The columns of a JSON Lines trace of a step or more (its ``first`` steps'), read a line
    at a time from the file's start, or ``load_trace``'s when a line is not read so; None for
    any other file (``_whole`` reads it)."""
    with open_regular(path, "read_columns", _CHUNK) as fh:
        found = os.fstat(fh.fileno())
        if found.st_size > MAX_TRACE_BYTES:
            return None
        head = fh.readline(_HEAD)  # (a file of one line is read whole)
        if head[-1:] != b"\n" or not _is_header(head, fast):
            return None
        fh.seek(0)
        try:
            with _collector_paused():
                columns = _from_lines(fh, fast, first)
        except _UNREAD:
            return _loaded(path, fast)
    if not columns.index:  # no step: maybe no JSON Lines trace (a header alone), so as _whole
        return None
    return dataclasses.replace(columns, file=(found.st_dev, found.st_ino))


def _whole(path: str | os.PathLike[str], fast: bool) -> Columns:
    """The columns of the file at ``path``, read whole."""
    found = os.stat(path)
    raw = read_regular(path, "read_columns")
    end = raw.find(b"\n")
    try:
        with _collector_paused():
            if end >= 0 and not _BLANK_TO_END.match(raw, end) and _is_header(raw[:end], fast):
                columns = _from_lines(io.BytesIO(raw), fast)
                return dataclasses.replace(columns, file=(found.st_dev, found.st_ino))
            return _from_document(raw, fast)
    except _UNREAD:
        return _loaded(path, fast)


def _loaded(path: str | os.PathLike[str], fast: bool) -> Columns:
    """The columns of the run ``load_trace`` reads (or its error, naming ``read_columns``)."""
    return columns_of(_one_run(path, None, "read_columns", fast).steps)


def _is_header(line: bytes, fast: bool) -> bool:
    """``line`` is a JSON Lines trace's header line."""
    try:
        head = _parse(line, fast) if line.strip() else None
    except _UNREAD:
        return False
    return type(head) is dict and head.get("kind") == "header"


def read_step_at(path: str | os.PathLike[str], columns: Columns, index: int) -> Step:
    """Step ``index``'s full record, read from its line of the JSON Lines file ``columns`` were
    read from (``read_columns``), every field checked; a ValueError names the file and the
    field when the line is not that step's."""
    offsets = columns.offsets
    where = f"read_step_at: {os.fspath(path)}"
    if offsets is None or not 0 <= index < len(offsets):
        got = "no line offsets" if offsets is None else f"{len(offsets)} steps"
        raise ValueError(
            f"{where}: index must be a step of a JSON Lines trace's columns, got {index} ({got})."
        )
    with open(path, "rb") as fh:
        now = os.fstat(fh.fileno())
        if columns.file is not None and (now.st_dev, now.st_ino) != columns.file:
            raise ValueError(
                f"{where}: the file must be the one the columns were read from, got another "
                "at that path (a new trace is written there, the old one renamed aside)."
            )
        fh.seek(offsets[index])
        line = fh.readline()
    try:
        entry = _parse(line, True)
    except (ValueError, RecursionError):
        raise ValueError(f"{where}: the step's line must be JSON, got text that is not.") from None
    if type(entry) is not dict or entry.get("kind") != "step":
        kind = entry.get("kind") if type(entry) is dict else type(entry).__name__
        raise ValueError(
            f"{where}: the line at byte {offsets[index]} must be a step line, got {kind!r}."
        )
    step = entry.get("step")
    try:
        return read_step(step, "step", index, columns.version == 2)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
