"""Holding a tool call for a person: the call as it is offered (``PendingCall``), and the
decision that comes back (``Decision``), read from what an ``approve`` function returned.

The loop decides which calls are held (``Loop._holding``) and what a decision does to the batch
(``Loop._decided_batch``); this module only says what a decision is. ``approve(call)`` returns
True (run it), False or a str (deny it; the str is the reason the model reads), or a dict (run
it with these arguments instead). Anything else, or an exception, denies the call, and the trace
keeps the error and its traceback.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._engine._valid import must, type_name
from .._trace._result import Approval
from .._trace._result import PendingCall as PendingCall  # held calls are offered as these
from ._tracebacks import own_traceback

Approve = Callable[["PendingCall"], Any]  # returns (or, async, resolves to) a decision

_RETURNS = "True, False, a str (deny, with the reason) or a dict (the arguments to run with)"


@dataclass(frozen=True, slots=True)
class Decision:
    """What a person decided about one held call."""

    approval: Approval
    arguments: dict[str, Any] | None = None  # "edited": what the call runs with instead
    reason: str = ""  # "denied": what the model reads as the reason
    error: str | None = None  # "denied" because approve raised (or returned nonsense): what
    traceback: str | None = None


APPROVED = Decision("approved")


def edited(call: PendingCall, arguments: Mapping[str, Any]) -> Decision:
    """A decision to run ``call`` with ``arguments``: "edited", or "approved" when they are the
    call's own checked arguments."""
    given = dict(arguments)
    return APPROVED if given == call.arguments else Decision("edited", given)


def denied(reason: str = "") -> Decision:
    return Decision("denied", reason=reason)


def read(value: Any, call: PendingCall) -> Decision:
    """What ``approve`` returned, as a decision (a TypeError for anything else)."""
    if isinstance(value, Decision):  # a replay's: the decision the trace recorded
        return value
    if value is True:
        return APPROVED
    if value is False:
        return denied()
    if isinstance(value, str):
        return denied(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return edited(call, value)
    raise TypeError(must("approve", "what it returns", _RETURNS, type_name(value)))


def failed(exc: BaseException) -> Decision:
    """``approve`` raised: the call is denied, and the trace keeps what it raised."""
    kind = type(exc).__name__
    try:
        said = f"{kind}: {exc}" if str(exc) else kind
    except Exception:
        said = f"{kind}: (its message could not be shown)"
    return Decision(
        "denied",
        reason=f"the approval failed ({type(exc).__name__})",
        error=f"approve raised {said}",
        traceback=own_traceback(exc),
    )


def returned(value: object, call: PendingCall) -> Decision:
    """What ``approve`` returned, as a decision. A value that is no decision denies the call,
    and the trace says what came back (``approve`` raised nothing, so there is no traceback)."""
    try:
        return read(value, call)
    except Exception as exc:
        return Decision(
            "denied", reason=f"the approval failed ({type(exc).__name__})", error=str(exc)
        )


def ask(approve: Approve, call: PendingCall) -> Decision:
    """Ask ``approve`` about one call, on this thread (an ``async def`` one on a loop of its
    own). Only ``KeyboardInterrupt`` and ``SystemExit`` go on; anything else denies the call."""
    try:
        value = approve(call)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        return failed(exc)
    return returned(value, call)


async def aask(approve: Approve, call: PendingCall) -> Decision:
    """``ask`` under ``arun``: an ``async def`` approve is awaited on the run's own loop, on a
    task of its own, so that a ``CancelledError`` it raises (an await of its own cancelled)
    is told apart from the run's task being cancelled: the first denies the call, as anything
    else it raises does; the second cancels approve's task and goes on, and the turn records
    it."""
    try:
        value = approve(call)
        task = asyncio.ensure_future(_awaited(value)) if inspect.isawaitable(value) else None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        return failed(exc)
    if task is not None:
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # the run's own task was cancelled
            task.cancel()
            raise
        try:
            value = task.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # CancelledError too: approve's own
            return failed(exc)
    return returned(value, call)


async def _awaited(value: Any) -> Any:
    return await value
