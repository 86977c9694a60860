"""The ceilings: each written once, asked at the points of a turn where it can stop the run.

``Guards`` holds a run's ``Budget`` and answers three questions, each in one method:

- ``before_call``: may the next model call be sent? (steps, seconds, cost);
- ``before_batch``: may the tool batch run, that is, is there a later model call to read its
  results? (steps, seconds, tool calls, a loop, the cheapest next turn's cost);
- ``before_final``: may the final-answer call (``finish=True``) be sent? (steps, seconds, cost).

The loop asks them, and so does ``Session.next_turn``, which the panel shows: the words a
stop is given are written here alone, so what the panel predicts is what the loop does.
"""

from __future__ import annotations

from collections.abc import Callable

from ._budget import Projection, cost_detail
from ._redact import Said
from ._turn import Ending
from ._types import Budget, Stop


class Guards:
    """A run's ceilings (``Budget``), and the stop each would make now."""

    __slots__ = ("budget",)

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    # -- each ceiling, once ----------------------------------------------------------------------

    def steps(self, taken: int, *, then_reads: bool = False) -> Ending | None:
        """``max_steps``: before a call (``taken`` calls made), or before a batch whose results
        would need one more call (``then_reads``: the batch's own call is ``taken``-th)."""
        limit = self.budget.max_steps
        if limit is None:
            return None
        if then_reads and taken + 1 >= limit:
            return Ending(Stop.MAX_STEPS, f"max_steps={limit}: no step is left to read results")
        if not then_reads and taken >= limit:
            return Ending(Stop.MAX_STEPS, f"max_steps={limit} reached")
        return None

    def seconds(self, left: float | None) -> Ending | None:
        """``max_seconds``: ``left`` is what remains (None: no ceiling)."""
        if left is None or left > 0:
            return None
        return Ending(Stop.MAX_SECONDS, f"max_seconds={self.budget.max_seconds} passed")

    def cost(self, projection: Projection, why: str = "") -> Ending | None:
        """``max_cost_usd``: does spent plus ``projection`` fit? ``why`` starts the detail."""
        if projection.fits:
            return None
        return Ending(Stop.MAX_COST_USD, why + cost_detail(projection))

    def tool_calls(self, executed: int, asked: int) -> Ending | None:
        """``max_tool_calls``: ``executed`` so far, ``asked`` by this turn."""
        limit = self.budget.max_tool_calls
        if limit is None or executed + asked <= limit:
            return None
        return Ending(
            Stop.MAX_TOOL_CALLS,
            f"max_tool_calls={limit}: {executed} run, this turn asks for {asked}",
        )

    # -- the points of a turn --------------------------------------------------------------------

    def before_call(self, taken: int, left: float | None, projection: Projection) -> Ending | None:
        """Before a model call with tools."""
        return self.steps(taken) or self.seconds(left) or self.cost(projection)

    def before_batch(
        self,
        index: int,
        left: float | None,
        executed: int,
        asked: int,
        loop: Said | None,
        cheapest: Callable[[], Projection | None],
    ) -> Ending | None:
        """Before step ``index``'s batch of ``asked`` calls: is there a later model call to
        read its results? ``loop`` is a repetition found (None: none, or only warned);
        ``cheapest()`` projects the cheapest turn that could read them (results left empty),
        None when there is no cost ceiling."""
        ending = (
            self.steps(index, then_reads=True)
            or self.seconds(left)
            or self.tool_calls(executed, asked)
        )
        if ending is not None:
            return ending
        if loop is not None:
            return Ending(Stop.REPEATED, loop)
        if self.budget.max_cost_usd is None:
            return None
        projection = cheapest()
        if projection is None:
            return None
        return self.cost(projection, "no turn to read the results fits: ")

    def before_final(
        self, taken: int, left: float | None, projection: Projection, last: Ending, pending: bool
    ) -> Ending | None:
        """Before the final-answer call, made for the stop ``last``; ``pending`` when that stop
        was already decided (a repetition or ``max_tool_calls`` stop after the final answer),
        so an unaffordable final answer still ends the run for it."""
        ending = self.steps(taken) or self.seconds(left)
        if ending is not None or projection.fits:
            return ending
        unfit = "no final answer fits: " + cost_detail(projection)
        if pending:
            return Ending(last.stop, Said(last.detail, "; ", unfit))
        return Ending(Stop.MAX_COST_USD, unfit)
