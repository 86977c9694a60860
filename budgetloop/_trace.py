"""The trace: what each step sent, called, got back, took and cost, as plain data."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ._budget import Projection
from ._types import Budget, Message, Price, Stop, ToolCall, Usage

FORMAT = "budgetloop-trace"
VERSION = 1
STATUSES = ("ok", "error", "skipped")


@dataclass(frozen=True)
class CallRecord:
    """One tool call: as the model wrote it, as it was checked, and what came of it."""

    name: str
    id: str
    raw_arguments: str | dict[str, Any]
    arguments: dict[str, Any] | None
    status: str
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0
    coerced: tuple[str, ...] = ()
    truncated: int | None = None  # the result's full length, when it was cut for the model

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
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        return cls(
            name=data["name"],
            id=data["id"],
            raw_arguments=data["raw_arguments"],
            arguments=data["arguments"],
            status=data["status"],
            result=data.get("result"),
            error=data.get("error"),
            seconds=data.get("seconds", 0.0),
            coerced=tuple(data.get("coerced", ())),
            truncated=data.get("truncated"),
        )


@dataclass(frozen=True)
class Step:
    """One turn: the model call, the projection made before it, and its tool batch."""

    index: int
    text: str | None
    tool_calls: tuple[CallRecord, ...]
    usage: Usage | None
    cost_usd: float
    projection: Projection
    seconds: float
    error: str | None = None
    final_answer: bool = False  # the tool-less call a run with ``finish=True`` ends on

    def to_dict(self) -> dict[str, Any]:
        """The step as plain data; ``final_answer`` only when True (older readers)."""
        usage = self.usage
        out: dict[str, Any] = {
            "index": self.index,
            "text": self.text,
            "usage": None if usage is None else usage_to_dict(usage),
            "cost_usd": self.cost_usd,
            "projection": self.projection.to_dict(),
            "seconds": self.seconds,
            "error": self.error,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
        }
        if self.final_answer:
            out["final_answer"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        usage = data.get("usage")
        return cls(
            index=data["index"],
            text=data.get("text"),
            tool_calls=tuple(CallRecord.from_dict(c) for c in data.get("tool_calls", ())),
            usage=None if usage is None else Usage(**usage),
            cost_usd=data["cost_usd"],
            projection=Projection.from_dict(data["projection"]),
            seconds=data.get("seconds", 0.0),
            error=data.get("error"),
            final_answer=data.get("final_answer", False),
        )


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


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=data.get("content"),
        tool_calls=tuple(ToolCall(**c) for c in data.get("tool_calls", ())),
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


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
        """A Result from ``to_dict()`` data; a ValueError says what is wrong with other data."""
        check_header(data, "Result.from_dict")
        price = data.get("price")
        try:
            return cls(
                stop=None if data["stop"] is None else Stop(data["stop"]),
                answer=data.get("answer"),
                steps=tuple(Step.from_dict(s) for s in data["steps"]),
                messages=tuple(message_from_dict(m) for m in data["messages"]),
                cost_usd=data["cost_usd"],
                seconds=data.get("seconds", 0.0),
                budget=Budget(**data["budget"]),
                error=data.get("error"),
                detail=data.get("detail"),
                price=None if price is None else Price(**price),
                max_output_tokens=data.get("max_output_tokens"),
                tools=tuple(data.get("tools", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"Result.from_dict: not a budgetloop trace: {exc!r}.") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as JSON; ``load_trace`` reads it back."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, ensure_ascii=False, indent=1)
            fh.write("\n")

    def format(self) -> str:
        """The run as readable text: each step, each call and its outcome, then the totals."""
        lines = []
        for step in self.steps:
            head = f"step {step.index}:"
            if step.error is not None:
                head += f" model error: {printable(step.error)}"
            elif step.text:
                head += " " + printable(step.text, keep_newlines=True)
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
            f" cost=${self.cost_usd:.4f}"
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


def check_header(data: Any, where: str) -> None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: not a budgetloop trace (no 'format': '{FORMAT}').")
    version = data.get("version")
    if version != VERSION:
        raise ValueError(
            f"{where}: trace format version {version!r} is not supported; this budgetloop "
            f"reads version {VERSION}. Upgrade budgetloop to read newer traces."
        )


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: object, keep_newlines: bool = False) -> str:
    """Text with control characters (ANSI escapes, NUL...) shown as escapes, never acted on."""
    shown = "" if text is None else str(text)
    shown = _CONTROL.sub(lambda m: repr(m.group())[1:-1], shown)
    if not keep_newlines:
        shown = shown.replace("\n", "\\n").replace("\t", "\\t")
    return shown
