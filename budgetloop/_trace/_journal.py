"""Durable traces: a JSON Lines file written a step at a time, and reading any trace back.

``run(..., trace_path=...)`` writes a header line, then one line per step as it completes (each
a whole line, written at once and flushed), then an end line. A process killed mid-run leaves a
file that loads with every finished step; a torn last line is ignored.

An existing file at the path is never truncated: when the run writes its first line, that file
is renamed to the first free ``<stem>.<N><suffix>`` (``run.jsonl`` -> ``run.1.jsonl``), and the
run's trace is a new file at the path (see ``_files``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import IO, Any

from .._engine._types import Message, Stop, from_pico, to_pico
from .._engine._valid import type_name
from ._compact import VERSION, appended, dumps, head_data, message_data, step_line
from ._files import _fspath as fspath
from ._files import check_trace_path, open_new, read_regular
from ._read import (
    as_int,
    as_json,
    as_number,
    as_object,
    as_text,
    check_spend,
    content_id,
    filled,
    get_key,
    read_budget,
    read_edited,
    read_held,
    read_messages,
    read_options,
    read_price,
    read_result,
    read_step_fully,
    read_stop,
    read_tools,
)
from ._read_fast import NOT_READ, json_loads
from ._read_fast import step as fast_step
from ._read_fast import step_line as fast_step_line
from ._result import Result, Step, check_header, messages_later, summaries_pico

__all__ = [
    "Journal",
    "Trace",
    "as_result",
    "check_trace_path",
    "end_journal",
    "load_trace",
    "load_traces",
]

_MANY_OBJECTS = 100_000
_BLANK_TO_END = re.compile(rb"\s*\Z")  # what follows a one-line trace's line (no copy made)


class Journal:
    """Appends a run to a JSON Lines file as it goes. ``moved_to`` is where a file that was at
    the path went (None until the first line is written, or if there was none)."""

    def __init__(self, path: str | os.PathLike[str], *, going_on: bool = False) -> None:
        check_trace_path(path)
        self.path = path
        self.started = going_on  # ``going_on``: a held run resumed goes on in its own file
        self.moved_to: str | None = None
        self._fh: IO[str] | None = None
        self._going_on = going_on

    def _line(self, data: dict[str, Any]) -> None:
        if self._fh is None and self._going_on:  # appended to, as the run's own file
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._going_on = False
        if self._fh is None:
            self._fh, self.moved_to = open_new(self.path)
        self._fh.write(dumps(data) + "\n")
        self._fh.flush()

    def header(self, result: Result) -> None:
        """The run's first line. A fork's run starts with money spent that none of its steps
        accounts for (its source's steps after the fork point): the header carries it, so a
        file cut before its end line still loads with all the run has spent."""
        self.started = True
        data = result.to_dict()
        keys = ("run_id", "forked_from", "edited", "budget", "price", "max_output_tokens",
                "options")  # fmt: skip
        head = {"format": data["format"], "version": VERSION}
        head.update(head_data({k: data[k] for k in keys}))
        carried = (
            to_pico(result.cost_usd or 0.0)
            - to_pico(result.held_usd)
            - sum(to_pico(s.cost_usd or 0.0) for s in result.steps)
            - summaries_pico(result.steps)
        )  # (a held turn's cost is its step's, written when its batch runs)
        if carried > 0:
            head["carried_usd"] = from_pico(carried)
        tools = head_data({"tools": data["tools"]})
        written = [message_data(m) for m in result.messages]
        self._line({**head, "kind": "header", **tools, "messages": written})

    def step(self, step: Step, messages: list[Message]) -> None:
        """A step's line: the step, and the messages it appended (those it holds as
        references, ``_compact``)."""
        self._line(step_line(step, messages))

    def end(self, result: Result) -> None:
        self._line(_end_line(result))
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _end_line(result: Result) -> dict[str, Any]:
    data = result.to_dict()
    keys = ("stop", "answer", "error", "detail", "cost_usd", "held_usd", "seconds", "output",
            "held", "pending", "rules", "event_errors")  # fmt: skip
    return {"kind": "end", **head_data({k: data[k] for k in keys if k in data})}


def end_journal(path: str | os.PathLike[str], result: Result) -> bool:
    """End a journal another process left unended (it died mid-run) with ``result``'s end line.
    False, and the file left as it is, when its last line is torn (then it ends there)."""
    with open(path, "rb+") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            return False
        line = dumps(_end_line(result)) + "\n"
        fh.write(line.encode("utf-8", "backslashreplace"))
    return True


Trace = Result | Mapping[str, Any] | str | os.PathLike[str]


def as_result(trace: Trace, where: str = "as_result", name: str = "trace") -> Result:
    """A ``Result`` from a Result, the data of ``Result.to_dict()``, or the path of a saved
    trace (``load_trace``): the one conversion every function that takes a run uses. ``where``
    and ``name`` say, in an error, which function and which argument it was: ``where`` names
    a wrong field too (``replay: run.json: steps[3].status must be ...``)."""
    if isinstance(trace, Result):
        return trace
    if isinstance(trace, Mapping):
        try:
            return read_result(dict(trace))
        except ValueError as exc:  # it names the field
            raise ValueError(f"{where}: {exc}") from None
    if isinstance(trace, (str, os.PathLike)):
        return _one_run(trace, None, where)
    got = type_name(trace)
    raise TypeError(
        f"{where}: {name} must be a Result, a dict from Result.to_dict() or a path to a saved "
        f"trace, got {got}."
    )


def load_trace(
    path: str | os.PathLike[str], format: str | None = None, *, _stdlib: bool = False
) -> Result:
    """Read a trace written by ``Result.save`` or by ``run(..., trace_path=...)``, or a run
    another framework recorded.

    The file's format is recognised by its content: budgetloop's JSON or JSON Lines; OTLP JSON
    holding GenAI spans (an object with ``resourceSpans``, or JSON Lines of them, as pydantic-ai
    and ``budgetloop.otel`` export) or OpenInference spans; openai-agents' trace export;
    pydantic-ai's messages JSON (``all_messages_json()``); an Anthropic Messages log (content
    blocks ``tool_use`` and ``tool_result``); OpenAI Responses input items (openai-agents'
    ``to_input_list()``); an OpenAI Chat Completions message log (a list of messages, or an
    object with ``messages``).
    ``format=`` forces one: ``"budgetloop"``, ``"otlp"``, ``"openai-agents"``,
    ``"pydantic-ai"``, ``"anthropic"``, ``"responses"`` or ``"chat"``. A file holding several
    runs is a ``ValueError`` that says how many: ``load_traces`` reads them all. An imported
    run says where it came from and what its source lacks (``Result.imported``).

    Plain JSON only: nothing in the file is evaluated, and every field is checked, so a trace
    that loads can be formatted, shown and saved. A malformed file (not UTF-8, not JSON, nested
    too deep, a field missing or of the wrong type, a negative or non-finite number, a second
    header, steps repeated or out of order, a ``cost_usd`` below what its steps cost), or one
    written by a newer budgetloop, is a ``ValueError`` naming the file (and line, for JSON
    Lines) and the field: ``load_trace: run.jsonl:3: step.seconds must be a finite number >= 0,
    got -1.0.`` A path that is not a regular file (a directory, a FIFO, a device),
    or a file over 1 GiB (a trace is read whole), is a ``ValueError`` before anything is read,
    saying which. Python's cyclic garbage collector is paused while
    the file is read, and restored (docs/threads.md). The messages a journal's steps appended
    (each its reply, then its calls' results) are made from those steps when ``messages`` is
    first read: every check is made as the file is read, so reading them cannot fail.

    With msgspec installed (the ``fast`` extra) its parser reads the JSON, to the same result
    (``_stdlib=True``: the standard library's alone, as without it).
    """
    return _one_run(path, format, "load_trace", not _stdlib)


def _one_run(
    path: str | os.PathLike[str], format: object, where: str, fast: bool = True
) -> Result:
    """The one run of the file at ``path``; ``where`` (the function called) names an error;
    ``fast``: msgspec parses the JSON where it is installed."""
    found = _read_path(path, format, where, fast)
    if len(found) != 1:
        what = "no run (no model call)" if not found else f"{len(found)} runs"
        raise ValueError(
            f"{where}: {os.fspath(path)}: the file must be a trace of one run, got {what}; "
            "load_traces(path) returns every run a file holds, as a list."
        )
    return found[0]


def load_traces(
    path: str | os.PathLike[str], format: str | None = None, *, _stdlib: bool = False
) -> list[Result]:
    """Every run a file holds, as ``load_trace`` reads them: a budgetloop trace is one run; an
    OTLP file or an openai-agents export may hold many (one per trace id), in the order they
    first appear. A file with no spans in it is an empty list; spans that hold no run are a
    ``ValueError`` that names what they are. ``_stdlib`` as for ``load_trace``."""
    return _read_path(path, format, "load_traces", not _stdlib)


def _read_path(
    path: str | os.PathLike[str], format: object, where: str, fast: bool = True
) -> list[Result]:
    from .._importers import check_format

    chosen = check_format(where, format)
    fspath(path, f"{where}: path")  # a path of the wrong type, named by the function called
    raw = read_regular(path, where)
    with _collector_paused():
        try:
            return _read(raw, os.fspath(path), chosen, fast)
        except ValueError as exc:  # it names the file (and line) and the field
            raise ValueError(f"{where}: {exc}") from None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a trace is read.

    Reading a long trace makes a million objects, none of them part of a cycle, and each time
    the objects kept grow by a quarter the collector walks all of them: about a third of the time
    a 100,000-step trace took to load (benchmarks/README.md). Paused, and with one full
    collection after a load that left more than ``_MANY_OBJECTS`` (about 10,000 steps' worth),
    they are walked once; left young, they would be walked once per generation by the next
    collections.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
            if gc.get_count()[0] > _MANY_OBJECTS:
                gc.collect()


def _read(raw: bytes, where: str, fmt: str | None, fast: bool = True) -> list[Result]:
    """Every run of a file: budgetloop's own trace (JSON, or JSON Lines from its header line),
    else a run another framework recorded (``_importers``)."""
    from .. import _importers

    own = fmt in (None, "budgetloop")
    end = raw.find(b"\n")
    first = raw if end < 0 else raw[:end]
    one_line = end < 0 or bool(_BLANK_TO_END.match(raw, end))
    head: Any = None
    if not one_line:
        try:
            head = _parse(first, where, fast)
        except ValueError:
            head = None
        if own and _is_header(head):
            return [_from_lines(raw, where, fast)]
        if fmt != "budgetloop" and _importers.line_starts(head):
            lines = _importers.parse_lines(_decode(raw, where), where)
            return _importers.read(lines, True, fmt, where, raw)
    data = _parse(raw, where, fast)
    if own and _is_header(data):
        return [_from_lines(raw, where, fast)]
    if fmt == "budgetloop" or (own and isinstance(data, dict) and "format" in data):
        try:
            return [read_result(data)]
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return _importers.read(data, False, fmt, where, raw)


def _is_header(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == "header"


def _parse(raw: bytes, where: str, fast: bool) -> Any:
    """The file's JSON (msgspec's parse where it is installed and ``fast``)."""
    data = json_loads(raw, fast)
    if data is not NOT_READ:
        return data
    text = _decode(raw, where)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(
            f"{where}: the file must be a trace, got JSON nested too deeply to read."
        ) from None
    except ValueError as exc:
        raise ValueError(
            f"{where}: the file must be JSON, got text that is not ({exc})."
        ) from None


def _decode(raw: bytes, where: str, line: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw[: exc.start].count(b"\n") + 1 if line is None else line
        raise ValueError(
            f"{where}:{at}: the text must be UTF-8, got the byte 0x{raw[exc.start]:02x}, "
            "which cannot be decoded."
        ) from None


def _from_lines(raw: bytes, where: str, fast: bool = True) -> Result:
    header: dict[str, Any] = {}
    compact = False  # version 2 (the header says)
    steps: list[Step] = []
    lines: list[int] = []  # the line of each step, by its index
    # the messages: each a Message, or a Step that appended its reply and its calls' results
    # (made from it when first read, ``messages_later``)
    messages: list[Message | Step] = []
    end: dict[str, Any] = {}
    end_line = 0
    held_pico, held_index = 0, -1  # a taken held turn's cost, until its step is written
    for number, line in enumerate(io.BytesIO(raw), start=1):  # one line at a time, no list
        last = line[-1:] != b"\n"  # a file cut mid-write does not end in a newline
        if line.isspace() or not line:
            continue
        if fast and compact and not end:  # the common line first: a version-2 step
            step = fast_step_line(line, len(steps))  # msgspec reads it with its newline
            if step is not None:
                lines.append(number)
                steps.append(step)
                if step.index == held_index:
                    held_pico, held_index = 0, -1
                messages.append(step)  # its reply, its calls' results
                continue
        # msgspec reads the line with its newline (no copy); json, and its errors, without
        entry = json_loads(line, fast)
        if entry is NOT_READ:
            entry = _parse_line(line if last else line[:-1], where, number, last)
            if entry is NOT_READ:
                break  # the step in flight when the writer died
        kind = entry.get("kind") if type(entry) is dict else None
        try:
            if kind == "header":
                if header:
                    raise ValueError(
                        "kind must be step or end, got a second header "
                        "(a trace has one, on line 1)."
                    )
                check_header(entry)
                header = _header(entry)
                compact = header["compact"]
                messages.extend(header["messages"])
            elif kind == "taken":  # a held run's batch, taken by the resume that runs it
                if not end or end["stop"] is not Stop.HELD:
                    raise ValueError(
                        "kind must be step or end, got taken with no held end line before it."
                    )
                held_pico, held_index = to_pico(end["held_usd"]), end["held"].step.index
                end, end_line = {}, 0
            elif kind not in ("step", "end"):
                raise ValueError(f"kind must be header, step, end or taken, got {kind!r}.")
            elif end and kind == "end":
                raise ValueError(
                    f"kind must be step, got a second end line (the first is line {end_line})."
                )
            elif end:
                raise ValueError(
                    f"what follows the end line (line {end_line}) must be nothing, got a step."
                )
            elif kind == "step":
                step = _step(entry, lines, compact)
                lines.append(number)
                steps.append(step)
                if step.index == held_index:
                    held_pico, held_index = 0, -1
                if compact and "messages" not in entry:
                    messages.append(step)  # its reply, its calls' results
                else:
                    messages.extend(
                        read_messages(
                            get_key(entry, "", "messages"),
                            "messages",
                            steps if compact else None,
                        )
                    )
            else:
                end, end_line = _end(entry), number
        except ValueError as exc:
            raise ValueError(f"{where}:{number}: {exc}") from None
    if end and end["cost_usd"] is not None:
        try:
            check_spend(end["cost_usd"], steps, "cost_usd")
        except ValueError as exc:
            raise ValueError(f"{where}:{end_line}: {exc}") from None
    if end:  # it says what the run cost and took
        held_pico = to_pico(end["held_usd"])
        cost, seconds = end["cost_usd"], end["seconds"]
    else:  # what was spent and taken up to the last step written, summaries included
        cost = from_pico(
            header["carried"]
            + held_pico
            + sum(to_pico(s.cost_usd or 0.0) for s in steps)
            + summaries_pico(steps)
        )
        seconds = sum(s.seconds for s in steps)
    result = Result(
        stop=end.get("stop"),
        answer=end.get("answer"),
        steps=tuple(steps),
        messages=header["messages"],  # its messages (``edited`` indexes them), then the steps'
        cost_usd=cost,
        seconds=seconds,
        budget=header["budget"],
        error=end.get("error"),
        detail=end.get("detail", None if end else "the run did not finish (no end line)"),
        price=header["price"],
        max_output_tokens=header["max_output_tokens"],
        tools=header["tools"],
        options=header["options"],
        run_id=header["run_id"] or content_id(raw),
        forked_from=header["forked_from"],
        edited=header["edited"],
        output=end.get("output"),
        held_usd=from_pico(held_pico),
        **{k: end[k] for k in ("held", "pending", "rules", "event_errors") if k in end},
    )
    return messages_later(result, functools.partial(_messages, messages))


def _messages(parts: list[Message | Step]) -> tuple[Message, ...]:
    """The run's messages, from ``_from_lines``'s parts: a message, or the step that appended
    its reply and then each call's result. Made as the file was read: the collector paused."""
    out: list[Message] = []
    with _collector_paused():
        for part in parts:
            if isinstance(part, Step):
                out += appended(part, read=True)
            else:
                out.append(part)
    return tuple(out)


def _parse_line(line: bytes, where: str, number: int, last: bool) -> Any:
    """A line's JSON, read by the standard library; ``NOT_READ`` for a ``last`` line (no
    newline after it: the writer died writing it) that is not whole."""
    try:
        text = _decode(line, where, number)
    except ValueError:
        if last:
            return NOT_READ  # cut inside a character
        raise
    try:
        return json.loads(text)
    except RecursionError:
        if last:
            return NOT_READ
        raise ValueError(
            f"{where}:{number}: the line must be a trace line, got JSON nested too deeply to read."
        ) from None
    except ValueError as exc:
        if last:
            return NOT_READ
        raise ValueError(
            f"{where}:{number}: the line must be JSON, got text that is not ({exc})."
        ) from None


def _header(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "compact": entry["version"] == 2,  # each text once (``_compact``)
        "budget": read_budget(get_key(entry, "", "budget", {}), "budget"),
        "price": read_price(get_key(entry, "", "price", None), "price"),
        "max_output_tokens": as_int(
            get_key(entry, "", "max_output_tokens", None), "max_output_tokens", optional=True
        ),
        "tools": read_tools(get_key(entry, "", "tools", ()), "tools"),
        "options": read_options(get_key(entry, "", "options", {}), "options"),
        "messages": read_messages(get_key(entry, "", "messages"), "messages"),
        "carried": to_pico(as_number(get_key(entry, "", "carried_usd", 0.0), "carried_usd")),
        "run_id": as_text(get_key(entry, "", "run_id", None), "run_id") or None,
        "forked_from": as_text(get_key(entry, "", "forked_from", None), "forked_from"),
        "edited": read_edited(
            get_key(entry, "", "edited", ()), "edited", len(get_key(entry, "", "messages"))
        ),
    }


def _step(entry: dict[str, Any], lines: list[int], compact: bool) -> Step:
    """The step of a step line; ``lines`` are those of the steps read before it (step 0's
    first), so it must be numbered ``len(lines)``."""
    expected = len(lines)
    data = as_object(get_key(entry, "", "step"), "step")
    fast = fast_step(data, expected, compact)  # numbered as expected, so not seen before
    if fast is not None:
        return fast
    if compact:
        data = filled(data)
    index = as_int(get_key(data, "step", "index"), "step.index")
    if 0 <= index < expected:
        raise ValueError(
            f"step.index must be {expected}, got {index} again (line {lines[index]} has it)."
        )
    if index != expected:
        raise ValueError(
            f"step.index must be {expected} (steps are numbered in order from 0), got {index}."
        )
    return read_step_fully(data, "step", expected)


def _end(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"stop": read_stop(get_key(entry, "", "stop"), "stop")}
    for name in ("answer", "error", "detail"):
        out[name] = as_text(get_key(entry, "", name, None), name)
    out["cost_usd"] = as_number(get_key(entry, "", "cost_usd"), "cost_usd", optional=True)
    out["seconds"] = as_number(get_key(entry, "", "seconds", 0.0), "seconds")
    out["output"] = as_json(get_key(entry, "", "output", None), "output")
    out["held_usd"] = as_number(get_key(entry, "", "held_usd", 0.0), "held_usd")
    out.update(read_held(entry, ""))
    if (out["stop"] is Stop.HELD) != ("held" in out):
        raise ValueError(
            f"held must be given exactly when stop is 'held', got stop {out['stop']!s}."
        )
    return out
