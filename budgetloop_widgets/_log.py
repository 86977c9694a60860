"""What the viewer knows about each step of a run as a log: its status tags (what a filter
matches), the places a jump goes, the messages each step was sent, and the request a step sent
(its messages and the tool schemas, as the trace holds them). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from budgetloop import Result, Step
from budgetloop.display import message_to_dict

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
    """The step's tags as bits (``BITS``): its calls' statuses, ``model error``, ``answer`` (no
    tool calls and no error), ``under-projected`` (reported input above the projection), a
    person's decisions on its calls (``denied`` is a status; ``edited``, ``approved``); and
    ``FINAL`` for a final answer."""
    bits = 0
    for call in step.tool_calls:
        bits |= _CALL_BITS[call.status]
        if call.approval is not None and call.approval != "denied":
            bits |= _DECISION_BITS[call.approval]
    if step.error is not None:
        bits |= 8
    elif not step.tool_calls:
        bits |= 16
    usage, projection = step.usage, step.projection
    if (
        usage is not None
        and projection is not None
        and usage.input_tokens > projection.input_tokens
    ):
        bits |= 32
    return bits | FINAL if step.final_answer else bits


def jump_targets(
    steps: Sequence[Step], bits: Sequence[int] | None = None, *, stopped: bool
) -> dict[str, int | None]:
    """Where each jump goes (``JUMPS``), by step number; None when the run has no such step.
    ``bits`` are the steps' ``flags`` when already known. "the stop" is the last step of a run
    that has stopped (``stopped``), and None for a run paused or still going, or a trace that
    records no stop."""
    if bits is None:
        bits = [flags(s) for s in steps]
    out: dict[str, int | None] = {}
    for name, wanted in JUMP_BITS.items():
        out[name] = next((i for i, b in enumerate(bits) if b & wanted), None)
    costs = [s.cost_usd for s in steps]
    known = [c for c in costs if c is not None]  # an imported run may not know them
    out["most expensive"] = costs.index(max(known)) if known else None
    out["the stop"] = len(steps) - 1 if steps and stopped else None
    return {name: out[name] for name in JUMPS}


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
