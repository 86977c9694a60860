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

from ._budget import cost_fits
from ._turn import Ending
from ._types import Budget, Message, Stop, format_usd, from_pico

if TYPE_CHECKING:
    from ._state import RunState

FINAL_NOTE = (
    "[budgetloop] {why}: tools are no longer available. Give your final answer now, from what "
    "you have."
)
BUDGET_LINE = "[budgetloop] Budget left: {parts}."


def final_note(stop: Stop, budget: Budget) -> str:
    """The note a final-answer turn appends to the context: which ceiling ends the run."""
    if stop is Stop.MAX_STEPS:
        why = f"This is the last step the budget allows (max_steps={budget.max_steps})"
    elif stop is Stop.MAX_COST_USD:
        why = f"The cost budget is spent (max_cost_usd={budget.max_cost_usd})"
    elif stop is Stop.MAX_SECONDS:
        why = f"The time budget is spent (max_seconds={budget.max_seconds})"
    elif stop is Stop.MAX_TOOL_CALLS:
        why = f"The tool-call budget is spent (max_tool_calls={budget.max_tool_calls})"
    else:
        why = "You were repeating the same tool calls, so the run is ending"
    return FINAL_NOTE.format(why=why)


def budget_line(
    budget: Budget, index: int, spent_pico: int, seconds_left: float | None
) -> str | None:
    """The line that tells the model what is left before step ``index`` (0-based): the steps,
    this one included, the money and the seconds, each only when there is a ceiling on it."""
    parts = []
    if budget.max_steps is not None:
        left = max(0, budget.max_steps - index)
        parts.append(f"{left} of {budget.max_steps} steps (this one included)")
    if budget.limit_pico is not None:
        money = from_pico(max(0, budget.limit_pico - spent_pico))
        parts.append(f"${money:.6f} of ${budget.max_cost_usd}")
    if seconds_left is not None:
        parts.append(f"{max(0.0, seconds_left):.1f} of {budget.max_seconds} seconds")
    return BUDGET_LINE.format(parts=", ".join(parts)) if parts else None


def last_turn(
    state: RunState,
    budget: Budget,
    left: float | None,
    projected: int | None,
    final_tokens: Callable[[list[Message]], int],
    project: Callable[[int], int | None],
) -> tuple[Ending | None, tuple[int, int] | None]:
    """With ``finish=True``: the stop this turn is the last model call before, to be made
    without tools for a final answer, or None for an ordinary turn (or for no call at all:
    the guards say); and the final answer's token count and growth it measured, for the turn
    to keep. ``left`` is the seconds left, ``projected`` this turn's worst case with tools,
    ``final_tokens(extra)`` the tokens of the context and ``extra`` sent without tools, and
    ``project(tokens)`` a call's worst case in picodollars."""
    if state.finishing is not None:  # a repetition or max_tool_calls stop is pending
        return state.finishing, None
    index, steps = len(state.steps), budget.max_steps
    if (steps is not None and index >= steps) or (left is not None and left <= 0):
        return None, None
    if steps is not None and index == steps - 1:
        return Ending(Stop.MAX_STEPS, f"max_steps={steps}: the last step was kept for a "
                      "final answer without tools"), None  # fmt: skip
    longest = max((s.seconds for s in state.steps), default=0.0)
    if left is not None and left < 2 * longest:
        return Ending(Stop.MAX_SECONDS, f"max_seconds={budget.max_seconds}: {left:.3f}s "
                      f"left, under twice the longest step ({longest:.3f}s), so this step "
                      "was the final answer"), None  # fmt: skip
    if budget.max_cost_usd is None:
        return None, None
    # The final answer after this turn reads a context grown by it: predicted to grow as
    # much as the most it has grown in a turn so far.
    tokens = final_tokens([Message("user", final_note(Stop.MAX_COST_USD, budget))])
    growth = state.growth
    if state.final_tokens is not None:
        growth = max(growth, tokens - state.final_tokens)
    seen = (tokens, growth)
    after = project(tokens + growth)
    spent = state.money.spent
    if cost_fits(budget, spent + (projected or 0), after):
        return None, seen
    turn, answer = from_pico(projected or 0), from_pico(after or 0)
    return Ending(
        Stop.MAX_COST_USD,
        f"max_cost_usd={format_usd(budget.max_cost_usd)}: a turn with tools "
        f"({format_usd(turn)} at worst) and a final answer after it ({format_usd(answer)}) "
        f"would not both fit on {format_usd(from_pico(spent))} spent, so this step was the final "
        "answer",
    ), seen


def then_final_answer(finish: bool, block: Ending) -> Ending:
    """A stop that blocks a batch; with ``finish`` a repetition or ``max_tool_calls`` stop
    comes after one more call, without tools, for a final answer."""
    if finish and block.stop in (Stop.REPEATED, Stop.MAX_TOOL_CALLS):
        return replace(block, final_next=True)
    return block


def budget_note(state: RunState, budget: Budget, left: float | None) -> list[Message]:
    """``budget_note=True``: the line that ends this turn's request, telling the model what
    is left; it is sent, not kept in the context (each request has only the current one)."""
    line = budget_line(budget, len(state.steps), state.money.spent, left)
    return [] if line is None else [Message("user", line)]
