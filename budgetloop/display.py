"""What a view shows of a run, made by the core: every word, figure and count, formatted.

The notebook panel and the viewer (``budgetloop_widgets``) lay these out and compute nothing:
what each stop means (``stop_means``), the projection and its worst case in words, the meter
(the cost bar's figures and a row for each ceiling, ``meter``), what the next step will do
(``next_turn_text``), a step's head line (``step_head``), a fork's carried spend, money
(``format_usd``), counts (``count``), a message as a trace writes it (``message_to_dict``) and
a value of the wrong type as an error names it (``type_name``). The ceilings' words come from
the ceilings themselves (``_ceilings``), so a new ceiling shows in every view without a line of
the views changing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._budget import Projection
from ._ceilings import BY_NAME, Used, calls_run, count, meter_rows, stop_means
from ._trace._result import Result, Step, message_to_dict
from ._turn import NextTurn
from ._types import Budget, Stop, format_usd
from ._valid import type_name

__all__ = [
    "BAR_TITLE",
    "NO_PROJECTION",
    "Meter",
    "Used",
    "carried_text",
    "count",
    "format_usd",
    "message_to_dict",
    "meter",
    "next_turn_text",
    "plural",
    "projection_text",
    "refused_by_projection",
    "step_head",
    "stop_means",
    "type_name",
    "under_projected_text",
    "used_after",
    "used_by",
    "worst_case_text",
]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 step``, ``2 steps``, ``0 steps``: the count and the word in the right form."""
    return f"{count(n)} {word if n == 1 else (words or word + 's')}"


def projection_text(p: Projection) -> str:
    """The projection of the next step in one line, with its verdict."""
    out = "?" if p.output_tokens is None else count(p.output_tokens)
    head = f"projected: {count(p.input_tokens)} in + {out} out tokens"
    if p.cost_usd is None:
        return head + "; no price, so no cost projected"
    head += f" = {format_usd(p.cost_usd)}"
    spent = (
        f"spent {format_usd(p.spent_usd)} + {format_usd(p.cost_usd)} = {format_usd(p.total_usd)}"
    )
    if p.limit_usd is None:
        return f"{head}; {spent}, no max_cost_usd"
    verdict = "fits" if p.fits else "does NOT fit"
    return f"{head}; {spent} of max_cost_usd {format_usd(p.limit_usd)}: {verdict}"


def worst_case_text(p: Projection) -> str:
    """Why the projection is a worst case: the output tokens it assumes, and where from."""
    if p.output_tokens is None:
        return "0 output tokens assumed: no max_output_tokens is set"
    return f"{plural(p.output_tokens, 'output token')} assumed: max_output_tokens"


def carried_text(carried: float) -> str:
    """Why a fork's spend is more than its steps add up to."""
    return (
        f"spent includes {format_usd(carried)} carried from the run this one was forked from "
        "(its steps after the fork point): no step here accounts for it"
    )


@dataclass(frozen=True)
class Meter:
    """The budget meter at one point of a run, every figure made.

    ``bar`` is the cost bar: the spent part, the projected next step and the ceiling, each as a
    percentage of the bar's width, and whether the next step fits (None: no cost ceiling or
    no price). ``projection`` and ``worst_case`` say the projection in words (None: none was
    made), ``tier`` the price tier it was projected at, when the price has tiers, and ``rows``
    is each ceiling's label and what is used of it, and of what."""

    bar: tuple[float, float, float, bool] | None
    projection: str | None
    worst_case: str | None
    rows: tuple[tuple[str, str], ...]
    tier: str | None = None


NO_PROJECTION = "no projection: an imported run's step"
BAR_TITLE = "spent, projected next step, max_cost_usd"  # what the meter's cost bar shows


def meter(projection: Projection | None, used: Used, budget: Budget) -> Meter:
    """The meter for a run that has used ``used`` of ``budget``, before a step projected at
    ``projection``."""
    rows = tuple(meter_rows(budget, used, projection))
    if projection is None:
        return Meter(None, None, None, rows)
    return Meter(
        _bar(projection),
        projection_text(projection),
        worst_case_text(projection),
        rows,
        projection.tier_note,
    )


def _bar(p: Projection) -> tuple[float, float, float, bool] | None:
    if p.limit_usd is None or p.cost_usd is None:
        return None
    scale = max(p.limit_usd, p.spent_usd + p.cost_usd) or 1.0
    return (100 * p.spent_usd / scale, 100 * p.cost_usd / scale, 100 * p.limit_usd / scale, p.fits)


def used_by(result: Result) -> Used:
    """What ``result`` has used of each ceiling."""
    return Used(len(result.steps), result.seconds, calls_run(result.steps))


def used_after(before: Used, steps: Sequence[Step]) -> Used:
    """What a run had used after ``steps``, having used ``before`` before them (a tool call
    counts when its tool was called: ok or error, ``calls_run``)."""
    seconds = before.seconds + sum(s.seconds for s in steps)
    return Used(before.steps + len(steps), seconds, before.tool_calls + calls_run(steps))


def refused_by_projection(stop: Stop) -> bool:
    """``stop`` is a ceiling's that judges a call by its projection: the run ended before a
    call whose projection it refused (which a chart still draws)."""
    ceiling = BY_NAME.get(stop.value)
    return ceiling is not None and ceiling.projects


def next_turn_text(nxt: NextTurn) -> str | None:
    """What the next step will do, in one sentence, when it is not an ordinary call (None)."""
    if nxt.action == "stop":
        why = f": {nxt.detail}" if nxt.detail else ""
        return f"The next step will not call the model: the run stops there ({nxt.stop}){why}."
    if nxt.action == "held":
        return f"The run holds a batch for a person: {nxt.detail or ''}."
    if nxt.action == "final_answer":
        return (
            "The next step is the final answer: the model is called without tools, then the "
            f"run ends ({nxt.stop}): {nxt.detail or ''}."
        )
    return None


def under_projected_text(step: Step) -> str | None:
    """The warning for a step whose model reported more input tokens than its projection
    counted (None: it did not)."""
    under = step.under_projected
    if not under:
        return None
    return (
        f"▲ under-projected: the model reported {plural(under, 'input token')} more than projected"
    )


def step_head(step: Step) -> str:
    """A step's head line: its number, its cost and tokens (reported, or projected when the
    call reported none) and its time."""
    parts = [f"Step {step.index}"]
    usage, p = step.usage, step.projection
    if usage is None and p is None:
        cost = "cost unknown" if step.cost_usd is None else f"{format_usd(step.cost_usd)} reported"
        parts += [cost, "no tokens reported"]
    elif usage is None:
        assert p is not None
        if step.error is not None and step.cost_usd == 0:
            parts += ["nothing charged: the model raised", "no tokens reported"]
        else:
            parts += [
                f"{format_usd(step.cost_usd)} charged at the projection",
                f"{count(p.input_tokens)} in tokens projected, none reported",
            ]
    else:
        cost = "cost unknown" if step.cost_usd is None else f"{format_usd(step.cost_usd)} reported"
        thought = usage.reasoning_tokens
        said = f" ({count(thought)} of them reasoning)" if thought else ""
        tokens = f"{count(usage.input_tokens)} in / {count(usage.output_tokens)} out"
        parts += [cost, f"{tokens} tokens reported{said}"]
    parts.append(f"{step.seconds:.3f} s")
    return " · ".join(parts)
