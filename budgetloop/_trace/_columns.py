"""The list's columns of a saved run, read from its file without building every ``Step``.

A viewer's list shows a few short columns a step: its number, status, cost, tokens, a preview of
its text and its seconds. ``read_columns(path)`` reads them from a budgetloop trace (JSON Lines
or a saved JSON, format version 1 or 2) with the fast parser (``_read_fast.json_loads``), taking
from each step only those fields, each checked by exact type tests as ``_read_fast`` checks
them; and for JSON Lines where each step's line starts, so ``read_step_at`` reads the step's
full record when it is opened. What it cannot read that way (another framework's file, a field
of another type, a line out of place, a total below what the steps cost) is read by
``load_trace`` and its columns taken from the ``Result`` (``columns_of``): the same columns, or
the same error. Fields it does not read (a call's arguments and result, the messages) are
checked when a step is opened.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _read_fast as _fast
from ._files import read_regular
from ._journal import _end, _header, _one_run
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


class _Builder:
    """Columns as they are read, a step at a time."""

    def __init__(self) -> None:
        self.cols = Columns([], [], [], [], [], [], [], [], [], [], [], [])

    def add(
        self,
        index: int,
        text: str | None,
        error: str | None,
        cost: float | None,
        seconds: float,
        tokens: tuple[int, int] | None,
        under: bool,
        calls: tuple[tuple[str, str | None], ...],
        final: bool,
        tools: tuple[str, ...],
        projected: int | None,
    ) -> None:
        c = self.cols
        c.index.append(index)
        c.status.append(status_of(error is not None, [s for s, _ in calls]))
        c.cost_usd.append(cost)
        c.input_tokens.append(None if tokens is None else tokens[0])
        c.output_tokens.append(None if tokens is None else tokens[1])
        c.preview.append(preview_of(text, error))
        c.seconds.append(float(seconds))
        c.calls.append(calls)
        c.under.append(under)
        c.final.append(final)
        c.tools.append(tools)
        c.projected.append(projected)


def columns_of(steps: Sequence[Step]) -> Columns:
    """The columns of steps already built (a loaded ``Result``'s)."""
    built = _Builder()
    for s in steps:
        usage, projection = s.usage, s.projection
        built.add(
            s.index,
            s.text,
            s.error,
            s.cost_usd,
            s.seconds,
            None if usage is None else (usage.input_tokens, usage.output_tokens),
            s.under_projected > 0,  # the step's one rule
            tuple((c.status, c.approval) for c in s.tool_calls),
            s.final_answer,
            tuple(c.name for c in s.tool_calls),
            None if projection is None else projection.input_tokens,
        )
    return built.cols


class _NotHere(Exception):
    """Not read here: ``load_trace`` reads the file."""


def _step(data: Any, index: int, built: _Builder) -> None:
    """Add a step's columns from its data, checked as ``_read_fast.step`` checks them."""
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
    built.add(
        index,
        text,
        error,
        cost,
        seconds,
        None if usage is None else usage[:2],
        usage is not None and projection is not None and usage[0] > projection["input_tokens"],
        tuple(calls),
        final,
        tuple(tools),
        None if projection is None else projection["input_tokens"],
    )


def _covers(total: Any, costs: list[float | None]) -> None:
    """The run's total is at least what its steps cost, by the float sum (``check_spend``'s
    first test); anything closer is ``load_trace``'s to decide."""
    if total is None:
        return
    if not _fast._number(total) or math.fsum(c or 0.0 for c in costs) > total * (1 + 2**-50):
        raise _NotHere


def _parse(raw: bytes, fast: bool) -> Any:
    data = _fast.json_loads(raw, fast)
    return json.loads(raw.decode("utf-8")) if data is _fast.NOT_READ else data


def _from_lines(raw: bytes, fast: bool) -> Columns:
    built = _Builder()
    offsets: list[int] = []
    version = 0
    ended = False
    at = 0
    for line in io.BytesIO(raw):
        start, at = at, at + len(line)
        last = line[-1:] != b"\n"
        if not line.strip():
            continue
        try:
            entry = _parse(line, fast)
        except (ValueError, RecursionError):
            if last:
                break  # a torn last line, as load_trace ignores it
            raise _NotHere from None
        kind = entry.get("kind") if type(entry) is dict else None
        if ended or (kind == "header") != (not version):
            raise _NotHere  # a line after the end, a second header, a step before one
        if kind == "header":
            check_header(entry)
            _header(entry)  # the run's settings, checked as load_trace checks them
            version = entry["version"]
        elif kind == "step":
            _step(entry.get("step"), len(offsets), built)
            offsets.append(start)
        elif kind == "end":
            _covers(_end(entry)["cost_usd"], built.cols.cost_usd)
            ended = True
        else:
            raise _NotHere
    if not version:
        raise _NotHere
    return _done(built, offsets, version)


def _done(built: _Builder, offsets: list[int] | None, version: int) -> Columns:
    c = built.cols
    return Columns(
        c.index, c.status, c.cost_usd, c.input_tokens, c.output_tokens, c.preview, c.seconds,
        c.calls, c.under, c.final, c.tools, c.projected, offsets, version,
    )  # fmt: skip


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
    built = _Builder()
    for i, step in enumerate(steps):
        _step(step, i, built)
    _covers(data.get("cost_usd", _fast.NOT_READ), built.cols.cost_usd)
    return _done(built, None, data["version"])


def read_columns(
    path: str | os.PathLike[str], *, first: int | None = None, _stdlib: bool = False
) -> Columns:
    """The columns of the run saved at ``path`` (``Columns``), without building its steps
    where the file is budgetloop's own; any other file's, or one it cannot read so, from
    ``load_trace`` (its errors too, naming ``read_columns``). ``_stdlib`` as for
    ``load_trace``."""
    if first is not None:  # SHIM: replaced by the real first= at merge
        whole = read_columns(path, _stdlib=_stdlib)
        n = min(first, len(whole.index))
        return Columns(*(getattr(whole, f.name)[:n] if isinstance(getattr(whole, f.name), list) else getattr(whole, f.name) for f in dataclasses.fields(whole)))
    fast = not _stdlib
    found = os.stat(path)
    raw = read_regular(path, "read_columns")
    end = raw.find(b"\n")
    try:
        if 0 <= end < len(raw.rstrip()):
            first = raw[:end]
            head = _parse(first, fast) if first.strip() else None
            if type(head) is dict and head.get("kind") == "header":
                columns = _from_lines(raw, fast)
                return dataclasses.replace(columns, file=(found.st_dev, found.st_ino))
        return _from_document(raw, fast)
    except (_NotHere, ValueError, RecursionError, UnicodeDecodeError):
        pass
    return columns_of(_one_run(path, None, "read_columns", fast).steps)


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
