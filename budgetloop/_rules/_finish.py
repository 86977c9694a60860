"""The loop's policies for ending well, each a function of the run's state (``RunState``):

- ``finish=True``: whether this turn is the run's last model call, made without tools for a
  final answer (``last_turn``), and the note that call is sent (``final_note``);
- a repetition or ``max_tool_calls`` stop that comes after such a final answer
  (``then_final_answer``);
- ``budget_note=True``: the line each request ends with, saying what is left (``budget_note``).

They decide; the turn (``Loop._turn``) acts. None of them changes the state: what ``last_turn``
measured is returned for the turn to keep, so ``Session.next_turn`` can ask them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from .._engine._turn import Ending
from .._engine._types import Message, Stop
from ._ceilings import REPEATING, Ceiling, Now, answers_after

if TYPE_CHECKING:
    from .._engine._state import RunState
    from ._guards import Guards

FINAL_NOTE = (
    "[budgetloop] {why}: tools are no longer available. Give your final answer now, from what "
    "you have."
)
BUDGET_LINE = "[budgetloop] Budget left: {parts}."


def final_note(stop: Stop, ceilings: tuple[Ceiling, ...]) -> str:
    """The note a final-answer turn appends to the context: which ceiling ends the run (one
    of ``ceilings``), or the repetition that does."""
    why = next((c.final_note() for c in ceilings if c.stop is stop), REPEATING)
    return FINAL_NOTE.format(why=why)


def budget_line(ceilings: tuple[Ceiling, ...], now: Now) -> str | None:
    """The line that tells the model what is left before the step ``now.taken`` (0-based):
    each ceiling's part, for the ceilings there are."""
    parts = [part for c in ceilings if (part := c.left(now)) is not None]
    return BUDGET_LINE.format(parts=", ".join(parts)) if parts else None


def last_turn(
    state: RunState,
    guards: Guards,
    now: Now,
    final_tokens: Callable[[list[Message]], int],
) -> tuple[Ending | None, tuple[int, int] | None]:
    """With ``finish=True``: the stop this turn is the last model call before, to be made
    without tools for a final answer, or None for an ordinary turn (or for no call at all:
    the guards say); and the final answer's token count and growth it measured, for the turn
    to keep. ``now`` is the run before this turn with tools (its projection), and
    ``final_tokens(extra)`` the tokens of the context and ``extra`` sent without tools. Each
    ceiling says whether this turn is the last it allows (``Ceiling.last_call``)."""
    if state.finishing is not None:  # a repetition or max_tool_calls stop is pending
        return state.finishing, None
    if guards.stops_outright(now):
        return None, None
    seen: list[tuple[int, int]] = []

    def after() -> int:
        """The final answer after this turn reads a context grown by it: predicted to grow as
        much as the most it has grown in a turn so far. Measured once, with the note of the
        first ceiling that asks."""
        if not seen:
            first = guards.projecting[0]
            tokens = final_tokens([Message("user", final_note(first.stop, guards.ceilings))])
            growth = state.growth
            if state.final_tokens is not None:
                growth = max(growth, tokens - state.final_tokens)
            seen.append((tokens, growth))
        return seen[0][0] + seen[0][1]

    now.after = after
    for ceiling in guards.ceilings:
        detail = ceiling.last_call(now)
        if detail is not None:
            return Ending(ceiling.stop, detail), seen[0] if seen else None
    return None, seen[0] if seen else None


def then_final_answer(finish: bool, block: Ending) -> Ending:
    """A stop that blocks a batch; with ``finish`` a repetition or a ceiling that leaves a
    model call possible (``max_tool_calls``) comes after one more call, without tools, for a
    final answer."""
    if finish and answers_after(block.stop):
        return replace(block, final_next=True)
    return block


def budget_note(guards: Guards, now: Now) -> list[Message]:
    """``budget_note=True``: the line that ends this turn's request, telling the model what
    is left; it is sent, not kept in the context (each request has only the current one)."""
    line = budget_line(guards.ceilings, now)
    return [] if line is None else [Message("user", line)]
