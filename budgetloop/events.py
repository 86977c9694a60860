"""What a run tells ``on_event=fn`` as it happens, in order: frozen records.

A turn gives ``TurnStarted`` before its model call; the reply arrives as ``TextDelta`` and
``ToolCallDelta`` pieces (as they stream, or one per text and per call for a model that does not
stream); each call that runs gives ``ToolStarted`` and ``ToolEnded``; the turn ends with
``StepEnded``, and the run with ``RunEnded``. ``step`` is a step's index in the run, except in
``StepEnded``, where it is the ``Step`` record itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from ._rules._budget import Projection
from ._trace._result import CallRecord, Result, Step

__all__ = [
    "Event",
    "RunEnded",
    "StepEnded",
    "TextDelta",
    "ToolCallDelta",
    "ToolEnded",
    "ToolStarted",
    "TurnStarted",
]


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """Step ``step``'s model call is about to be sent, its worst case projected."""

    step: int
    projection: Projection | None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of step ``step``'s reply text, redacted when the run has ``redact=``."""

    step: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of step ``step``'s tool call ``index``: its name when known, and a fragment of
    its arguments' JSON."""

    step: int
    index: int
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """Step ``step``'s call ``call_id`` to the tool ``name`` has started."""

    step: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolEnded:
    """Step ``step``'s call has ended: ``record`` is what the trace keeps of it."""

    step: int
    record: CallRecord


@dataclass(frozen=True, slots=True)
class StepEnded:
    """A step has been recorded: ``step`` is its record."""

    step: Step


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run has ended: ``result`` is what ``run()`` returns."""

    result: Result


Event: TypeAlias = (
    TurnStarted | TextDelta | ToolCallDelta | ToolStarted | ToolEnded | StepEnded | RunEnded
)
