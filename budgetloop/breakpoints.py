"""Breakpoints: predicates ``(session) -> bool`` that say when to pause a run.

Each reads only what a session shows anyone (``session.steps``, ``session.projection``,
``session.done``), so it works on a ``Session`` and an ``AsyncSession`` alike, and is meant to
be asked after each step (``Session.run(until=...)`` does that)::

    from budgetloop import breakpoints

    session.run(until=breakpoints.on_tool("transfer"))

``on_tool``, ``on_error`` and ``on_step`` look at the step just taken; ``on_cost`` looks at the
turn to come, so a run pauses before its money goes; ``before_tool`` holds a batch before a call
of a tool runs, so a person can approve, edit or deny it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from ._engine._types import to_pico
from ._engine._valid import type_name
from ._rules._budget import Projection
from ._trace._result import Step

__all__ = [
    "Breakpoint",
    "Inspectable",
    "before_tool",
    "check",
    "on_cost",
    "on_error",
    "on_step",
    "on_tool",
]


class Inspectable(Protocol):
    """What a breakpoint reads of a session."""

    @property
    def steps(self) -> Sequence[Step]: ...

    @property
    def projection(self) -> Projection: ...

    @property
    def done(self) -> bool: ...


Breakpoint = Callable[[Inspectable], bool]


def on_tool(name: str) -> Breakpoint:
    """True after a step in which the model called the tool ``name`` (whatever came of the
    call: run, refused for its arguments, or skipped because the run stopped)."""
    if not isinstance(name, str):
        raise TypeError(f"on_tool: name must be a tool name (str), got {type_name(name)}.")
    if not name:
        raise ValueError("on_tool: name must be a tool name, got an empty string.")

    def called(session: Inspectable) -> bool:
        steps = session.steps
        return bool(steps) and any(c.name == name for c in steps[-1].tool_calls)

    called.__qualname__ = f"on_tool({name!r})"
    return called


def before_tool(name: str) -> Breakpoint:
    """Pause before a call of the tool ``name`` runs: ``session.run(until=before_tool(name))``
    holds each batch that calls it, even when the tool is not marked ``needs_approval``, and
    pauses with the calls waiting in ``session.pending`` (whatever ``approve=`` says). Decide
    each with ``session.approve`` or ``session.deny``; the next ``run()`` runs the batch and
    goes on. True when the session holds such a batch."""
    if not isinstance(name, str):
        raise TypeError(f"before_tool: name must be a tool name (str), got {type_name(name)}.")
    if not name:
        raise ValueError("before_tool: name must be a tool name, got an empty string.")

    def holding(session: Inspectable) -> bool:
        return any(c.name == name for c in getattr(session, "pending", ()))

    holding.__qualname__ = f"before_tool({name!r})"
    holding.before_tools = frozenset({name})  # type: ignore[attr-defined]  # read by run()
    return holding


def on_error() -> Breakpoint:
    """True after a step that went wrong: the model failed (``Step.error``), a tool call ended
    in an error, a call was skipped, or the model reported more input tokens than the projection
    made before the step (``usage.input_tokens > projection.input_tokens``: the cost guard
    counted low)."""

    def went_wrong(session: Inspectable) -> bool:
        steps = session.steps
        if not steps:
            return False
        step = steps[-1]
        if step.error is not None:
            return True
        if any(c.status in ("error", "skipped") for c in step.tool_calls):
            return True
        return step.under_projected > 0

    went_wrong.__qualname__ = "on_error()"
    return went_wrong


def on_cost(usd: float) -> Breakpoint:
    """True when the next turn, at its worst case, would take spend past ``usd``: spent plus
    projected (``session.projection.total_usd``) above ``usd``, compared exactly as the cost
    guard compares (equality does not pass). So a run pauses before the money goes. False once
    the run is done (there is no next turn). Asked of a session with no price, it raises
    ``ValueError``: without a price the next turn's cost cannot be projected."""
    if isinstance(usd, bool) or not isinstance(usd, (int, float)):
        raise TypeError(f"on_cost: usd must be a number of dollars, got {type_name(usd)}.")
    if not math.isfinite(usd) or usd < 0:
        raise ValueError(f"on_cost: usd must be a finite number >= 0, got {usd!r}.")
    limit = to_pico(usd)

    def priced(session: Inspectable) -> Projection:
        projection = session.projection
        if projection.cost_usd is None:
            raise ValueError(
                f"on_cost({usd!r}): the session's price must be set, got None: without it the "
                "next turn's cost cannot be projected; pass price=Price(...) to start()."
            )
        return projection

    def would_pass(session: Inspectable) -> bool:
        if session.done:
            return False
        projection = priced(session)
        assert projection.cost_usd is not None
        return to_pico(projection.spent_usd) + to_pico(projection.cost_usd) > limit

    would_pass.__qualname__ = f"on_cost({usd!r})"
    would_pass.check = priced  # type: ignore[attr-defined]
    return would_pass


def on_step(n: int) -> Breakpoint:
    """True when the session has taken exactly ``n`` steps in all, so a run paused there goes
    on when it is run again."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"on_step: n must be an int, got {type_name(n)}.")
    if n < 0:
        raise ValueError(f"on_step: n must be a number of steps >= 0, got {n}.")

    def reached(session: Inspectable) -> bool:
        return len(session.steps) == n

    def ahead(session: Inspectable) -> None:
        taken = len(session.steps)
        if n <= taken:
            raise ValueError(
                f"on_step({n}): the steps the session has taken must be fewer than {n:,}, got "
                f"{taken:,}, so a run asked after its next step never pauses there; choose a "
                "larger number."
            )

    reached.__qualname__ = f"on_step({n})"
    reached.check = ahead  # type: ignore[attr-defined]
    return reached


def check(until: Breakpoint, session: Inspectable) -> None:
    """Raise ``ValueError``, saying why, when ``until`` cannot pause a run of ``session`` that
    asks it after each step: ``on_cost`` of a session with no price (its turns cannot be
    projected), ``on_step(n)`` of one that has taken ``n`` steps or more already."""
    checked = getattr(until, "check", None)
    if checked is not None:
        checked(session)
