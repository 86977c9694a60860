"""What the loop tells the model about its budget: the note of a final-answer turn
(``finish=True``) and the budget line each request may end with (``budget_note=True``)."""

from __future__ import annotations

from ._types import PICO, Budget, Stop

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
