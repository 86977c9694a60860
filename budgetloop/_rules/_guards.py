"""The ceilings a run has, asked at the points of a turn where one can stop the run.

``Guards`` holds a run's ``Budget`` as its ceilings (``_ceilings``: each owns its checks and
its words) and answers three questions, each in one method, going over them in order:

- ``before_call``: may the next model call be sent?
- ``before_batch``: may the tool batch run, that is, is there a later model call to read its
  results? (and the repetition guard's loop, found before the ceilings that project);
- ``before_final``: may the final-answer call (``finish=True``) be sent?

The loop asks them, and so does ``Session.next_turn``, which the panel shows: what the panel
predicts is what the loop does.
"""

from __future__ import annotations

from .._engine._turn import Ending
from .._engine._types import Budget, Stop
from .._forms._redact import Said
from ._ceilings import Ceiling, Now, ceilings_of


class Guards:
    """A run's ceilings (``Budget``), and the stop each would make now."""

    __slots__ = ("budget", "ceilings", "plain", "projecting")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.ceilings: tuple[Ceiling, ...] = ceilings_of(budget)
        self.plain = tuple(c for c in self.ceilings if not c.projects)
        self.projecting = tuple(c for c in self.ceilings if c.projects)

    def before_call(self, now: Now) -> Ending | None:
        """Before a model call with tools."""
        for ceiling in self.ceilings:
            detail = ceiling.before_call(now)
            if detail is not None:
                return Ending(ceiling.stop, detail)
        return None

    def stops_outright(self, now: Now) -> bool:
        """A ceiling that does not project stops the next call: no call at all is made, not
        even a final answer."""
        return any(c.before_call(now) is not None for c in self.plain)

    def before_batch(self, now: Now, loop: Said | None) -> Ending | None:
        """Before the batch of ``now.asked`` calls: is there a later model call to read its
        results? ``loop`` is a repetition found (None: none, or only warned); the ceilings that
        project ask ``now.cheapest_tokens()``, the cheapest turn that could read them."""
        for ceiling in self.plain:
            detail = ceiling.before_batch(now)
            if detail is not None:
                return Ending(ceiling.stop, detail)
        if loop is not None:
            return Ending(Stop.REPEATED, loop)
        for ceiling in self.projecting:
            detail = ceiling.before_batch(now)
            if detail is not None:
                return Ending(ceiling.stop, "no turn to read the results fits: " + detail)
        return None

    def before_final(self, now: Now, last: Ending, pending: bool) -> Ending | None:
        """Before the final-answer call, made for the stop ``last``; ``pending`` when that stop
        was already decided (a repetition or ``max_tool_calls`` stop after the final answer),
        so a final answer that does not fit still ends the run for it."""
        for ceiling in self.plain:
            detail = ceiling.before_call(now)
            if detail is not None:
                return Ending(ceiling.stop, detail)
        for ceiling in self.projecting:
            detail = ceiling.before_call(now)
            if detail is not None:
                unfit = "no final answer fits: " + detail
                if pending:
                    return Ending(last.stop, Said(last.detail, "; ", unfit))
                return Ending(ceiling.stop, unfit)
        return None
