"""The values one turn passes between the loop and its driver.

A turn (``Loop._turn``) is a generator. It yields a ``ModelCall``; the driver makes the call and
sends back a ``Reply``. If the model asked for tools, it yields a ``Batch``; the driver runs the
calls and sends back their ``CallRecord``s in request order. The generator then returns the
``Step`` it committed (None when the run stopped before calling the model). When the driver's
work raises (``KeyboardInterrupt``, a cancelled task), the driver throws the exception into the
turn, which records what is known (money first) and lets it go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._check import ArgumentError
from ._trace import CallRecord
from ._types import Completion, Message, Stop, ToolCall

Parsed = dict[str, Any] | ArgumentError  # a call's arguments as a dict, or why they are not one


@dataclass(frozen=True)
class Call:
    """One tool call of a turn: as the model sent it (with its id filled in), and its
    arguments parsed."""

    request: ToolCall
    id: str
    parsed: Parsed

    @property
    def name(self) -> str:
        return self.request.name


@dataclass(frozen=True)
class ModelCall:
    """What a turn asks its driver for first: one model call, within ``timeout`` seconds."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    timeout: float | None


@dataclass(frozen=True)
class Reply:
    """What became of a model call: a completion, or why there is none."""

    completion: Completion | None
    error: str | None = None
    abandoned: bool = False  # still running at the deadline: billed at the worst case
    traceback: str | None = None


@dataclass(frozen=True)
class Batch:
    """What a turn asks its driver for next: these tool calls, at once, within ``timeout``."""

    calls: list[Call]
    timeout: float | None


@dataclass(frozen=True)
class BatchDone:
    """The records of a batch in request order, and whether the deadline abandoned any."""

    records: list[CallRecord]
    abandoned: bool = False


@dataclass(frozen=True)
class Ending:
    """Why the run ends: the stop, in words, and the model's error when there was one."""

    stop: Stop
    detail: str | None = None
    error: str | None = None
