"""The trace: what each step sent, called, got back, took and cost, as plain data."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ._budget import Projection
from ._files import open_new
from ._types import Budget, Message, Price, Stop, Usage, format_usd

FORMAT = "budgetloop-trace"
VERSION = 1
STATUSES = ("ok", "error", "skipped")
Status = Literal["ok", "error", "skipped"]
T = TypeVar("T")


@dataclass(frozen=True)
class CallRecord:
    """One tool call: as the model wrote it, as it was checked, and what came of it."""

    name: str
    id: str
    raw_arguments: str | dict[str, Any]
    arguments: dict[str, Any] | None
    status: Status
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0
    coerced: tuple[str, ...] = ()
    truncated: int | None = None  # the result's full length, when it was cut for the model
    traceback: str | None = field(default=None, compare=False, repr=False)  # its failure's

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"CallRecord.status: expected one of {', '.join(STATUSES)}, got {self.status!r}."
            )
        if not isinstance(self.coerced, tuple):
            object.__setattr__(self, "coerced", tuple(self.coerced))

    @property
    def content(self) -> str:
        """What the model reads as this call's result."""
        if self.status == "ok":
            return self.result or ""
        if self.status == "skipped":
            return f"skipped: {self.error}"
        return f"error: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "raw_arguments": self.raw_arguments,
            "arguments": self.arguments,
            "coerced": list(self.coerced),
            "status": self.status,
            "result": self.result,
            "error": self.error,
            "seconds": self.seconds,
            "truncated": self.truncated,
            "traceback": self.traceback,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        """A CallRecord from ``to_dict()`` data; a ValueError names a field that is wrong."""
        from ._validate_trace import read_call

        return _reading("CallRecord.from_dict", read_call, data)


@dataclass(frozen=True)
class Step:
    """One turn: the model call, the projection made before it, and its tool batch.

    ``final_answer`` marks a turn made after a ceiling to get an answer; ``traceback`` is the
    model call's, when it raised. Tracebacks are left out of comparisons.
    """

    index: int
    text: str | None
    tool_calls: tuple[CallRecord, ...]
    usage: Usage | None
    cost_usd: float
    projection: Projection
    seconds: float
    error: str | None = None
    final_answer: bool = False
    traceback: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    @property
    def under_projected(self) -> int:
        """How many input tokens the provider reported beyond the projection made before this
        step (0 when it reported none, or no more than projected)."""
        if self.usage is None:
            return 0
        return max(self.usage.input_tokens - self.projection.input_tokens, 0)

    def to_dict(self) -> dict[str, Any]:
        """The step as plain data."""
        usage = self.usage
        out: dict[str, Any] = {
            "index": self.index,
            "text": self.text,
            "usage": None if usage is None else usage_to_dict(usage),
            "cost_usd": self.cost_usd,
            "projection": self.projection.to_dict(),
            "seconds": self.seconds,
            "error": self.error,
            "final_answer": self.final_answer,
            "under_projected": self.under_projected,
            "traceback": self.traceback,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
        }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        """A Step from ``to_dict()`` data; a ValueError names a field that is wrong."""
        from ._validate_trace import read_step

        return _reading("Step.from_dict", read_step, data)


def _reading(where: str, read: Callable[[Any, str], T], data: Any) -> T:
    try:
        return read(data, "")
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def usage_to_dict(usage: Usage) -> dict[str, int]:
    """A usage as plain data; the cache counts only when there are some (older readers)."""
    out = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        out["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        out["cache_write_tokens"] = usage.cache_write_tokens
    return out


def message_to_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments, "id": c.id} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


@dataclass(frozen=True)
class Result:
    """How a run ended, and everything it did on the way. Valid for a run still going too."""

    stop: Stop | None
    answer: str | None
    steps: tuple[Step, ...]
    messages: tuple[Message, ...]
    cost_usd: float
    seconds: float
    budget: Budget = field(default_factory=Budget)
    error: str | None = None
    detail: str | None = None
    price: Price | None = None
    max_output_tokens: int | None = None
    tools: tuple[dict[str, Any], ...] = ()

    @property
    def answered(self) -> bool:
        return self.stop is Stop.ANSWERED

    @property
    def carried_usd(self) -> float:
        """Spend no step of this run accounts for: what the run it was forked from spent
        after the fork point (0.0 for a run that was not forked). ``cost_usd`` includes it."""
        carried = self.cost_usd - math.fsum(s.cost_usd for s in self.steps)
        return carried if carried > 1e-12 else 0.0

    @property
    def tool_calls(self) -> tuple[CallRecord, ...]:
        """The calls that were executed (ok or error), in order; skipped calls are left out."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status != "skipped")

    @property
    def failed(self) -> tuple[CallRecord, ...]:
        """The executed calls that ended in an error."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status == "error")

    @property
    def skipped(self) -> tuple[CallRecord, ...]:
        """Calls the model asked for that were not run because the run stopped."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status == "skipped")

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data; ``Result.from_dict`` reads it back."""
        price = self.price
        usage = [s.usage for s in self.steps if s.usage is not None]
        return {
            "format": FORMAT,
            "version": VERSION,
            "stop": None if self.stop is None else self.stop.value,
            "answered": self.answered,
            "answer": self.answer,
            "error": self.error,
            "detail": self.detail,
            "cost_usd": self.cost_usd,
            "seconds": self.seconds,
            "budget": {
                "max_steps": self.budget.max_steps,
                "max_seconds": self.budget.max_seconds,
                "max_cost_usd": self.budget.max_cost_usd,
                "max_tool_calls": self.budget.max_tool_calls,
            },
            "price": None if price is None else price_to_dict(price),
            "max_output_tokens": self.max_output_tokens,
            "totals": {
                "steps": len(self.steps),
                "tool_calls": len(self.tool_calls),
                "failed": len(self.failed),
                "skipped": len(self.skipped),
                "input_tokens": sum(u.input_tokens for u in usage),
                "output_tokens": sum(u.output_tokens for u in usage),
                "cost_usd": self.cost_usd,
            },
            "tools": list(self.tools),
            "steps": [s.to_dict() for s in self.steps],
            "messages": [message_to_dict(m) for m in self.messages],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A Result from ``to_dict()`` data. Every field is checked: a ValueError names the field
        and what was wrong (``Result.from_dict: steps[3].tool_calls[0].status: ...``)."""
        from ._validate_trace import read_result

        try:
            return read_result(data)
        except ValueError as exc:
            raise ValueError(f"Result.from_dict: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> str | None:
        """Write the trace as JSON; ``load_trace`` reads it back. An existing file at ``path`` is
        never overwritten: it is renamed to ``<stem>.<N><suffix>`` first, and that name is
        returned (None when there was no file)."""
        fh, moved = open_new(path)
        with fh:
            json.dump(self.to_dict(), fh, ensure_ascii=False, indent=1, default=repr)
            fh.write("\n")
        return moved

    def _repr_html_(self) -> str:
        """What Jupyter shows for a bare ``result`` in a cell. With the ``widgets`` extra
        installed: the viewer of ``budgetloop_widgets.to_html`` (the run's data and the
        viewer's script inline; a short summary where scripts do not run, as in nbviewer or
        an untrusted notebook). Without it: a read-only view of every step, no script."""
        try:
            from budgetloop_widgets._page import result_html
        except ImportError:  # the widgets extra is not installed: the core's own view
            from ._html import render  # ._html reads this module: imported when first used

            return render(self)
        return result_html(self)

    def format(self) -> str:
        """The run as readable text: each step, each call and its outcome, then the totals.

        Every line says where it comes from: ``step N:`` starts a step (the model's text
        follows; each further line of that text starts with ``  | ``), ``  -``/``  x``/``  .``
        is a call that ran, failed or was skipped (on one line, its newlines escaped), then a
        blank line, the ``stop=`` totals and the run's detail. Control and format characters
        (ANSI escapes, NUL, bidi and zero-width marks) are shown as escapes.
        """
        lines = []
        for step in self.steps:
            head = f"step {step.index}:"
            if step.error is not None:
                head += f" model error: {printable(step.error)}"
            elif step.text:
                first, *rest = printable(step.text, keep_newlines=True).split("\n")
                head += " " + first
                head = "\n".join([head, *(f"  | {line}" if line else "  |" for line in rest)])
            lines.append(head)
            for call in step.tool_calls:
                mark = {"ok": "-", "error": "x", "skipped": "."}[call.status]
                args = call.raw_arguments
                shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                lines.append(
                    f"  {mark} {printable(call.name)}({printable(shown)})"
                    f" -> {printable(call.content)}"
                )
        stop = "running" if self.stop is None else self.stop.value
        lines.append("")
        lines.append(
            f"stop={stop} tools={len(self.tool_calls)} failed={len(self.failed)}"
            f" cost={format_usd(self.cost_usd)}"
        )
        if self.detail:
            lines.append(printable(self.detail))
        return "\n".join(lines)


def price_to_dict(price: Price) -> dict[str, float]:
    """A price as plain data; the cache prices only when they are set (older readers)."""
    out = {"input_per_mtok": price.input_per_mtok, "output_per_mtok": price.output_per_mtok}
    if price.cache_read_per_mtok is not None:
        out["cache_read_per_mtok"] = price.cache_read_per_mtok
    if price.cache_write_per_mtok is not None:
        out["cache_write_per_mtok"] = price.cache_write_per_mtok
    return out


def check_header(data: Any) -> None:
    """The data says it is a budgetloop trace of the version this budgetloop reads."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a budgetloop trace (no 'format': '{FORMAT}').")
    version = data.get("version")
    if type(version) is not int or version != VERSION:
        raise ValueError(
            f"trace format version {version!r} is not supported; this budgetloop "
            f"reads version {VERSION}. Upgrade budgetloop to read newer traces."
        )


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


@functools.cache
def _format_chars() -> re.Pattern[str]:
    """The format characters (category Cf: bidi, zero-width, BOM...) of this Python's Unicode
    and the surrogates, as one character class; found by a scan (~0.1 s) when first needed."""
    found = [i for i in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(i)) == "Cf"]
    ranges = [(0xD800, 0xDFFF)]
    for code in found:
        if code == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")


def _format_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: object, keep_newlines: bool = False) -> str:
    """Text with control characters (ANSI escapes, NUL...), format characters (U+202E, U+200B,
    U+FEFF and every other of Unicode category Cf) and lone surrogates shown as escapes."""
    shown = "" if text is None else str(text)
    shown = _CONTROL.sub(_escape, shown)
    if not shown.isascii():
        shown = _format_chars().sub(_format_char, shown)
    if not keep_newlines:
        shown = shown.replace("\n", "\\n").replace("\t", "\\t")
    return shown
