"""What the viewer knows about each step of a run as a log: its status tags (what a filter
matches), the places a jump goes, the messages each step was sent, and the request a step sent
(its messages and the tool schemas, as the trace holds them). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from budgetloop import Result, Step
from budgetloop.display import Columns, message_to_dict

STATUSES = ("ok", "error", "skipped", "model error", "answer", "under-projected", "denied",
            "edited", "approved")  # fmt: skip
FINAL = 64  # the step was the final answer, asked for without tools
BITS = {  # as viewer.js reads them
    **{status: 1 << n for n, status in enumerate(STATUSES[:6])},
    **{status: 128 << n for n, status in enumerate(STATUSES[6:])},  # a person's decisions
}
_CALL_BITS = {"ok": 1, "error": 2, "skipped": 4, "denied": 128}
_DECISION_BITS = {"edited": 256, "approved": 512}
JUMPS = ("first error", "first skipped", "first denied", "first under-projected",
         "most expensive", "the stop")  # fmt: skip
JUMP_BITS = {
    "first error": BITS["error"] | BITS["model error"],
    "first skipped": BITS["skipped"],
    "first denied": BITS["denied"],
    "first under-projected": BITS["under-projected"],
}


def flags(step: Step) -> int:
    """The step's tags as bits (``BITS``), as ``bits_of`` says them of its values."""
    return bits_of(
        [(c.status, c.approval) for c in step.tool_calls],
        failed=step.error is not None,
        under=step.under_projected > 0,  # the core's one rule
        final=step.final_answer,
    )


def bits_of(
    calls: Sequence[tuple[str, str | None]], *, failed: bool, under: bool, final: bool
) -> int:
    """A step's tags as bits (``BITS``) from plain values, as a loaded step or a file's columns
    (``budgetloop.display.Columns``) give them: its calls' statuses and a person's decisions
    (``calls``: each call's status and approval; ``denied`` is a status; ``edited``,
    ``approved``), ``model error`` (``failed``), ``answer`` (no tool calls and no error),
    ``under-projected`` (reported input above the projection) and ``FINAL`` for a final
    answer."""
    bits = 0
    for status, approval in calls:
        bits |= _CALL_BITS[status]
        if approval is not None and approval != "denied":
            bits |= _DECISION_BITS[approval]
    if failed:
        bits |= 8
    elif not calls:
        bits |= 16
    if under:
        bits |= BITS["under-projected"]
    return bits | FINAL if final else bits


def column_flags(columns: Columns) -> list[int]:
    """Each step's ``bits_of``, from a file's columns."""
    return [
        bits_of(calls, failed=status == "model error", under=under, final=final)
        for calls, status, under, final in zip(
            columns.calls, columns.status, columns.under, columns.final, strict=True
        )
    ]


class Jumps:
    """Where each jump goes (``JUMPS``) in a run that grows: kept up to date a step at a time.
    "most expensive" is the first of the dearest steps whose cost is known (an imported run may
    not know them)."""

    def __init__(self) -> None:
        self.places: dict[str, int | None] = dict.fromkeys(JUMPS)
        self.dearest: float | None = None
        self.steps = 0

    def extend(
        self, costs: Sequence[float | None], bits: Sequence[int], *, stopped: bool
    ) -> dict[str, int | None]:
        """Take the new steps (their ``cost_usd`` and ``flags``) into account; where each jump
        goes ("the stop" only once the run has stopped: a paused run has none)."""
        for cost, bit in zip(costs, bits, strict=True):
            for name, mask in JUMP_BITS.items():
                if self.places[name] is None and bit & mask:
                    self.places[name] = self.steps
            if cost is not None and (self.dearest is None or cost > self.dearest):
                self.dearest, self.places["most expensive"] = cost, self.steps
            self.steps += 1
        self.places["the stop"] = self.steps - 1 if self.steps and stopped else None
        return dict(self.places)


def jump_targets(
    steps: Sequence[Step], bits: Sequence[int] | None = None, *, stopped: bool
) -> dict[str, int | None]:
    """Where each jump goes (``JUMPS``), by step number; None when the run has no such step.
    ``bits`` are the steps' ``flags`` when already known. "the stop" is the last step of a run
    that has stopped (``stopped``), and None for a run paused or still going, or a trace that
    records no stop."""
    if bits is None:
        bits = [flags(s) for s in steps]
    return Jumps().extend([s.cost_usd for s in steps], bits, stopped=stopped)


def jump_target(result: Result, jump: str) -> int | None:
    """The step a jump goes to; None when the trace has no such step."""
    if jump not in JUMPS:
        raise ValueError(f"TraceView.jump: jump must be one of {', '.join(JUMPS)}, got {jump!r}.")
    return jump_targets(result.steps, stopped=result.stop is not None)[jump]


def sent_counts(result: Result) -> list[int]:
    """How many of the run's messages each step was sent (its context), by step, as the core
    reads the trace (``Result.sent_counts``); 0 where its messages are too few to say."""
    return [0 if n is None else n for n in result.sent_counts()]


def request_of(result: Result, index: int) -> dict[str, Any]:
    """The request step ``index`` sent: its messages and the tool schemas it was offered (none
    for a final answer, which is asked for without tools)."""
    try:
        request = result.request(index)  # the core's reading of the trace
    except ValueError:  # its messages are too few to say what this step was sent
        return {"messages": [], "tools": []}
    return {
        "messages": [message_to_dict(m) for m in request.messages],
        "tools": list(request.tools),
    }
