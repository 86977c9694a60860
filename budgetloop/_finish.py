"""``finish=True``: the final-answer turn a run may end on, and what the loop tells the model
about its budget (the final note, and the line each request ends with for ``budget_note=True``).

The turn is the loop's own (``Loop._turn`` hands over to ``final_turn``); it is kept here so
that ``_loop.py`` reads as the ordinary turn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ._budget import cost_fits
from ._context import checked
from ._money import call_cost
from ._turn import Ending, ModelCall, Plan, received
from ._types import PICO, Budget, Message, Stop, format_usd

if TYPE_CHECKING:
    from ._loop import Loop, Turn

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
        money = max(0, budget.limit_pico - spent_pico) / PICO
        parts.append(f"${money:.6f} of ${budget.max_cost_usd}")
    if seconds_left is not None:
        parts.append(f"{max(0.0, seconds_left):.1f} of {budget.max_seconds} seconds")
    return BUDGET_LINE.format(parts=", ".join(parts)) if parts else None


def last_turn(
    loop: Loop, started: float | None, projected: int | None
) -> tuple[Ending | None, tuple[int, int] | None]:
    """The stop this turn is the last model call before, to be made without tools for a
    final answer, or None for an ordinary turn (or for no call at all: the guards say); and
    the final answer's token count and growth it measured, for the turn to keep. Changes
    nothing: ``Session.next_turn`` asks it too."""
    if loop._finishing is not None:  # a repetition or max_tool_calls stop is pending
        return loop._finishing, None
    budget, index = loop.budget, len(loop._steps)
    steps = budget.max_steps
    if (steps is not None and index >= steps) or loop._out_of_time(started):
        return None, None
    if steps is not None and index == steps - 1:
        return Ending(Stop.MAX_STEPS, f"max_steps={steps}: the last step was kept for a "
                      "final answer without tools"), None  # fmt: skip
    left, longest = loop._left(started), max((s.seconds for s in loop._steps), default=0.0)
    if left is not None and left < 2 * longest:
        return Ending(Stop.MAX_SECONDS, f"max_seconds={budget.max_seconds}: {left:.3f}s "
                      f"left, under twice the longest step ({longest:.3f}s), so this step "
                      "was the final answer"), None  # fmt: skip
    if budget.max_cost_usd is None:
        return None, None
    # The final answer after this turn reads a context grown by it: predicted to grow as
    # much as the most it has grown in a turn so far.
    tokens = tool_less_tokens(loop, [Message("user", final_note(Stop.MAX_COST_USD, budget))])
    growth = loop._growth
    if loop._final_tokens is not None:
        growth = max(growth, tokens - loop._final_tokens)
    seen = (tokens, growth)
    after = loop._project(tokens + growth)[1]
    spent = loop._money.spent
    if cost_fits(budget, spent + (projected or 0), after):
        return None, seen
    turn, answer = (projected or 0) / PICO, (after or 0) / PICO
    return Ending(
        Stop.MAX_COST_USD,
        f"max_cost_usd={format_usd(budget.max_cost_usd)}: a turn with tools "
        f"({format_usd(turn)} at worst) and a final answer after it ({format_usd(answer)}) "
        f"would not both fit on {format_usd(spent / PICO)} spent, so this step was the final "
        "answer",
    ), seen


def final_turn(loop: Loop, started: float, plan: Plan) -> Turn:
    """finish=True: the run's last model call, without tools, for an answer, as ``plan``
    says (``plan.final`` is the stop it comes before; the run ends with it whatever the model
    says)."""
    last, projection, projected = plan.final, plan.projection, plan.projected
    assert last is not None
    reservation, ending = None, plan.ending
    if ending is None:
        reservation, ending = loop._money.reserve(projected)
    if ending is not None:
        loop._end_run(ending)
        return None
    index = len(loop._steps)
    try:
        reply = yield ModelCall([*loop._messages, *plan.extra], [], loop._left(started))
    except GeneratorExit:
        raise
    except BaseException as exc:  # interrupted in flight: it may be billed, so bill the worst
        loop._money.bill(projected or 0, reservation)
        step = loop._model_step(index, None, exc, projection, started)
        loop._record(replace(step, final_answer=True))
        raise
    cost = call_cost(reply, projected, loop.price)
    loop._money.bill(cost, reservation)
    completion = reply.completion
    end = Ending(last.stop, last.detail)
    if completion is None:
        step = loop._model_step(index, reply, None, projection, started, cost)
        stop = Stop.MAX_SECONDS if reply.abandoned else last.stop
        failed = Ending(stop, f"{last.detail}; the final-answer call failed", reply.error)
        return loop._record(replace(step, final_answer=True), end=failed)
    calls = received(completion.tool_calls, index)  # asked for anyway: recorded, never run
    records = [loop._not_run(c, "skipped", "the final-answer turn runs no tools") for c in calls]
    assistant = Message("assistant", completion.text, tuple(c.request for c in calls))
    step = loop._call_step(index, completion, records, cost, projection, started)
    loop._answer = loop._traced(completion.text)
    step = replace(step, final_answer=True)
    return loop._record(step, assistant, records, end, told=plan.extra)


def then_final_answer(loop: Loop, block: Ending) -> Ending:
    """A stop that blocks a batch; with finish=True a repetition or ``max_tool_calls`` stop
    comes after one more call, without tools, for a final answer."""
    if loop.options.finish and block.stop in (Stop.REPEATED, Stop.MAX_TOOL_CALLS):
        return replace(block, final_next=True)
    return block


def tool_less_tokens(loop: Loop, extra: list[Message]) -> int:
    """The input tokens of the context and ``extra`` sent without tool schemas. The default
    estimate keeps the schemas counted: once a provider has reported a count, what they
    took in it is not known, so taking them out could count below the truth."""
    count_tokens = loop.options.count_tokens
    if count_tokens is None:
        return loop._count.count(extra)
    return checked(count_tokens([*loop._messages, *extra], []))


def budget_note(loop: Loop, started: float | None) -> list[Message]:
    """budget_note=True: the line that ends this turn's request, telling the model what
    is left; it is sent, not kept in the context (each request has only the current one)."""
    if not loop.options.budget_note:
        return []
    line = budget_line(loop.budget, len(loop._steps), loop._money.spent, loop._left(started))
    return [] if line is None else [Message("user", line)]
