"""The ceilings of a ``Budget``, each one object that owns all of it: its field, its stop, its
checks at each point of a turn, and its words (the detail of its stop, the note of a final
answer, the line of ``budget_note=True``, what its stop means, its row in the meter).

``CEILINGS`` is the one list. ``Guards`` (the loop's checks), the final-answer policy
(``_finish``), the trace and its validation, the OpenTelemetry attributes, the importers,
``budget_report`` and the widgets go over it and name no ceiling, as pydantic-ai's
``UsageLimits`` owns its checks by phase (``check_before_request``). A ceiling is asked:

- ``before_call(now)``: may the next model call be sent?
- ``before_batch(now)``: may the tool batch run, that is, can a later call read its results?
- ``last_call(now)``: with ``finish=True``, is this turn the last model call it allows, to be
  made without tools for a final answer?

Each returns the detail of its stop, or None. ``now`` is the run at that point (``Now``). A
ceiling that ``projects`` judges a call by its projection: a final answer (sent without tools)
is projected again, and may fit where a call with tools did not.

To add a ceiling: a ``Stop`` member and a ``Budget`` field of its name, and a class here in
``CEILINGS`` (its ``chart`` names the chart it is a dashed line on, ``_charts``). A ceiling that
reads only what ``Now`` and ``Used`` already count touches nothing else: no layer of the loop
names a ceiling (tests/core/test_layout.py holds the few modules that do, and why).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from .._engine._types import Budget, Stop, format_usd, from_pico, to_pico
from ._budget import Projection, cost_detail

Figure = int | float
EXECUTED = frozenset({"ok", "error"})  # the statuses of a call that was run (or refused)


def calls_run(steps: Iterable[Any]) -> int:
    """The tool calls of ``steps`` (``Step``s) whose tool was called, ok or error: what
    ``max_tool_calls`` counts. A call the check refused (an unknown tool, arguments that do not
    fit: the trace keeps no checked ``arguments`` for it) never ran, and is not counted."""
    run = 0
    for step in steps:
        for c in step.tool_calls:
            if c.status in EXECUTED and c.arguments is not None:
                run += 1
    return run


class Now:
    """The run at one point of a turn, as the ceilings read it. The cheapest reader of a batch
    (``cheapest_tokens``, ``cheapest``) and ``after`` are counted only when a ceiling asks
    (each counts tokens). Made twice a turn, so a plain class: what a point does not set is
    the class's default, not set again each time."""

    projection: Projection | None = None  # the next call's worst case
    projected: int | None = None  # its cost in picodollars (None: no price)
    executed: int = 0  # tool calls run (``calls_run``)
    asked: int = 0  # the calls this turn's batch asks for
    runnable: Callable[[], int] | None = None  # counts those that would reach their tool
    longest: float = 0.0  # the longest step's seconds
    reader: Callable[[], int] | None = None  # counts the input tokens of the cheapest reader
    _tokens: int | None = None  # what ``reader`` counted, once a ceiling asked
    _cheapest: Projection | None = None  # its projection, once a ceiling asked for its words
    after: Callable[[], int] | None = None  # the input tokens of a final answer after this turn
    project: Callable[[int], int | None] | None = None  # a call's worst case in picodollars
    projection_of: Callable[[int], Projection] | None = None  # a call's whole projection

    def __init__(self, taken: int, left: float | None, spent: int = 0) -> None:
        self.taken = taken  # model calls made; the next is the taken-th (from 0)
        self.left = left  # seconds left before max_seconds (None: no max_seconds)
        self.spent = spent  # picodollars spent

    def cheapest_tokens(self) -> int | None:
        """The input tokens of the cheapest turn that could read the batch's results (they
        are empty), counted when a ceiling first asks and only then; None where no batch is
        checked."""
        if self._tokens is None and self.reader is not None:
            self._tokens = self.reader()
        return self._tokens

    def cheapest(self) -> Projection | None:
        """That turn's projection, made only when a ceiling asks for it (for the words of its
        stop: a ceiling's check reads numbers)."""
        if self._cheapest is None and self.projection_of is not None:
            tokens = self.cheapest_tokens()
            if tokens is not None:
                self._cheapest = self.projection_of(tokens)
        return self._cheapest


@dataclass(frozen=True)
class Used:
    """How much of each ceiling a run has used at a point (what the meter shows)."""

    steps: int
    seconds: float
    tool_calls: int  # run, ok or error


class Ceiling:
    """One field of ``Budget``, and everything about it. ``limit`` is the field's value."""

    name: ClassVar[str]  # the Budget field, the Stop's value, the OTel attribute's last part
    integer: ClassVar[bool]  # an int (True), or a number of seconds or dollars
    projects: ClassVar[bool] = False
    label: ClassVar[str | None] = None  # its row in the meter (None: shown another way)
    answers_after: ClassVar[bool] = False  # its stop before a batch lets a final answer follow
    reports: ClassVar[bool] = False  # budget_report says what runs needed of it (``needed``)
    money: ClassVar[bool] = False  # dollars: ``needed`` is in picodollars, exact
    chart: ClassVar[str | None] = None  # the chart it is a dashed line on (``_charts``)
    means: ClassVar[str]  # what its stop means, in one sentence
    reason: ClassVar[str]  # the final answer's note: why tools are no longer available

    __slots__ = ("limit",)

    def __init__(self, limit: Any) -> None:
        self.limit = limit

    @property
    def stop(self) -> Stop:
        return Stop(self.name)

    def before_call(self, now: Now) -> str | None:
        return None

    def before_batch(self, now: Now) -> str | None:
        return None

    def last_call(self, now: Now) -> str | None:
        return None

    def left(self, now: Now) -> str | None:
        """What is left of it, for the line ``budget_note=True`` ends a request with."""
        return None

    @classmethod
    def figure(cls, used: Used, projection: Projection | None) -> str | None:
        """What is used of it, as its row in the meter shows it before a next step projected
        at ``projection`` (None: no row)."""
        return None

    @classmethod
    def needed(cls, result: Any) -> int:
        """What a finished run needed of it (``budget_report``, for a ceiling that
        ``reports``): the least limit under which it would have run as it did."""
        raise NotImplementedError(cls.name)

    def final_note(self) -> str:
        return self.reason.format(limit=self.limit)


def count(value: float) -> str:
    """A count with thousands separators; one decimal only where the value has a fraction."""
    if math.isfinite(value) and value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}"


class MaxSteps(Ceiling):
    name = "max_steps"
    integer = True
    label = "steps taken"
    means = "the step ceiling (max_steps) was reached; a step is one model call"
    reason = "This is the last step the budget allows (max_steps={limit})"

    def before_call(self, now: Now) -> str | None:
        return f"max_steps={self.limit} reached" if now.taken >= self.limit else None

    def before_batch(self, now: Now) -> str | None:
        if now.taken + 1 >= self.limit:
            return f"max_steps={self.limit}: no step is left to read results"
        return None

    def last_call(self, now: Now) -> str | None:
        if now.taken == self.limit - 1:
            return (
                f"max_steps={self.limit}: the last step was kept for a final answer without tools"
            )
        return None

    def left(self, now: Now) -> str | None:
        return f"{max(0, self.limit - now.taken)} of {self.limit} steps (this one included)"

    @classmethod
    def figure(cls, used: Used, projection: Projection | None) -> str | None:
        return count(used.steps)

    reports = True

    @classmethod
    def needed(cls, result: Any) -> int:
        return len(result.steps)


class MaxSeconds(Ceiling):
    name = "max_seconds"
    integer = False
    label = "seconds"
    means = "the wall-clock ceiling (max_seconds) passed"
    reason = "The time budget is spent (max_seconds={limit})"

    def before_call(self, now: Now) -> str | None:
        if now.left is None or now.left > 0:
            return None
        return f"max_seconds={self.limit} passed"

    before_batch = before_call

    def last_call(self, now: Now) -> str | None:
        left = now.left
        if left is None or left >= 2 * now.longest:
            return None
        return (
            f"max_seconds={self.limit}: {left:.3f}s left, under twice the longest step "
            f"({now.longest:.3f}s), so this step was the final answer"
        )

    def left(self, now: Now) -> str | None:
        return None if now.left is None else f"{max(0.0, now.left):.1f} of {self.limit} seconds"

    @classmethod
    def figure(cls, used: Used, projection: Projection | None) -> str | None:
        return f"{used.seconds:.2f}"


class MaxCostUsd(Ceiling):
    name = "max_cost_usd"
    integer = False
    projects = True
    means = (
        "the next turn's worst case would have taken spend past max_cost_usd, so the model was "
        "not called"
    )
    reason = "The cost budget is spent (max_cost_usd={limit})"
    __slots__ = ("pico",)

    def __init__(self, limit: Any) -> None:
        super().__init__(limit)
        self.pico = to_pico(limit)

    def before_call(self, now: Now) -> str | None:
        p = now.projection
        return None if p is None or p.fits else cost_detail(p)

    def before_batch(self, now: Now) -> str | None:
        tokens = now.cheapest_tokens()
        if tokens is None:
            return None
        assert now.project is not None
        worst = now.project(tokens)
        if worst is not None and self._fits(now.spent + worst):
            return None
        p = now.cheapest()
        assert p is not None
        return cost_detail(p)

    def last_call(self, now: Now) -> str | None:
        # The final answer after this turn reads a context grown by it.
        assert now.after is not None
        assert now.project is not None
        after = now.project(now.after())
        projected = now.projected or 0
        if after is not None and self._fits(now.spent + projected + after):
            return None
        limit, turn, answer = self.limit, from_pico(projected), from_pico(after or 0)
        return (
            f"max_cost_usd={format_usd(limit)}: a turn with tools ({format_usd(turn)} at worst) "
            f"and a final answer after it ({format_usd(answer)}) would not both fit on "
            f"{format_usd(from_pico(now.spent))} spent, so this step was the final answer"
        )

    def _fits(self, total: int) -> bool:
        """Spent plus what is projected (picodollars) within the ceiling: equality fits."""
        return total <= self.pico

    def left(self, now: Now) -> str | None:
        money = from_pico(max(0, self.pico - now.spent))
        return f"${money:.6f} of ${self.limit}"

    reports = money = True
    chart = "cost"

    @classmethod
    def needed(cls, result: Any) -> int:
        """The largest worst case the cost guard checked (spent so far plus the projected
        next turn, or a context policy's summary call), or what the run cost if that was
        more."""
        need = to_pico(result.cost_usd or 0.0)
        for step in result.steps:
            edit = step.context
            seen = [step.projection]
            if edit is not None and edit.summary is not None:
                seen.append(edit.summary.projection)
            for p in seen:
                if p is not None and p.cost_usd is not None:
                    need = max(need, to_pico(p.spent_usd) + to_pico(p.cost_usd))
        return need


class MaxToolCalls(Ceiling):
    name = "max_tool_calls"
    integer = True
    label = "tool calls run"
    means = "the next batch would have taken executed tool calls past max_tool_calls"
    reason = "The tool-call budget is spent (max_tool_calls={limit})"
    answers_after = True  # the model may still be called, without tools
    chart = "calls"

    def before_batch(self, now: Now) -> str | None:
        """Only calls that would run count: not one the check refuses (``calls_run``)."""
        if now.executed + now.asked <= self.limit:
            return None  # the whole batch fits: no call's check is asked for
        runs = now.asked if now.runnable is None else now.runnable()
        if now.executed + runs <= self.limit:
            return None
        asks = f"{now.asked}" if runs == now.asked else f"{now.asked}, {runs} that would run"
        return f"max_tool_calls={self.limit}: {now.executed} run, this turn asks for {asks}"

    @classmethod
    def figure(cls, used: Used, projection: Projection | None) -> str | None:
        return count(used.tool_calls)


class MaxInputTokens(Ceiling):
    name = "max_input_tokens"
    integer = True
    projects = True
    label = "input tokens, next request"
    means = (
        "the next request's input tokens, counted before it was sent, were over "
        "max_input_tokens, so the model was not called"
    )
    reason = "The context is at its size limit (max_input_tokens={limit})"
    chart = "tokens"

    def _over(self, tokens: int | None) -> str | None:
        if tokens is None or tokens <= self.limit:
            return None
        return (
            f"the next request counts {tokens:,} input tokens, over "
            f"max_input_tokens={self.limit:,}"
        )

    def before_call(self, now: Now) -> str | None:
        p = now.projection
        return self._over(None if p is None else p.input_tokens)

    def before_batch(self, now: Now) -> str | None:
        return self._over(now.cheapest_tokens())

    def last_call(self, now: Now) -> str | None:
        assert now.after is not None
        after = now.after()
        p = now.projection
        if after <= self.limit and (p is None or p.input_tokens <= self.limit):
            return None
        return (
            f"max_input_tokens={self.limit:,}: a final answer after this turn would count about "
            f"{after:,} input tokens, so this step was the final answer"
        )

    def left(self, now: Now) -> str | None:
        return f"{self.limit:,} input tokens a request"

    @classmethod
    def figure(cls, used: Used, projection: Projection | None) -> str | None:
        return "not counted" if projection is None else count(projection.input_tokens)

    reports = True

    @classmethod
    def needed(cls, result: Any) -> int:
        """The largest request it sent, as counted before sending (as the model reported it,
        for an imported step with no count of its own)."""
        return max((_input_tokens(s) for s in result.steps), default=0)


def _input_tokens(step: Any) -> int:
    if step.projection is not None:
        return int(step.projection.input_tokens)
    return 0 if step.usage is None else int(step.usage.input_tokens)


CEILINGS: tuple[type[Ceiling], ...] = (
    MaxSteps,
    MaxSeconds,
    MaxCostUsd,
    MaxToolCalls,
    MaxInputTokens,
)
BY_NAME = {c.name: c for c in CEILINGS}


def ceilings_of(budget: Budget) -> tuple[Ceiling, ...]:
    """The ceilings ``budget`` sets, in ``CEILINGS`` order."""
    out = []
    for cls in CEILINGS:
        limit = getattr(budget, cls.name)
        if limit is not None:
            out.append(cls(limit))
    return tuple(out)


def budget_fields(budget: Budget) -> dict[str, Figure | None]:
    """Each ceiling's field, as the trace and the attributes write it."""
    return {c.name: getattr(budget, c.name) for c in CEILINGS}


# -- what each stop means, in one sentence (the panel's banner, the viewer) ----------------------

_OTHER_STOPS = {
    Stop.ANSWERED: "the model replied with no tool calls",
    Stop.REPEATED: (
        "the model kept making the same tool calls, or a cycle of them (repeat_limit, cycle_limit)"
    ),
    Stop.MODEL_ERROR: "the model raised, or returned something that is not a Completion",
    Stop.SHARED_BUDGET: (
        "the shared ledger refused to reserve the next turn's worst case: its limit is spent "
        "or reserved (by this run or others)"
    ),
    Stop.HELD: (
        "calls of the last turn wait for a person's decision (approve=hold): the run "
        "goes on with resume()"
    ),
    Stop.INTERRUPTED: (
        "a person interrupted the run (session.interrupt()): the reply streaming then was cut, "
        "or the run stopped before its next call"
    ),
}
REPEATING = "You were repeating the same tool calls, so the run is ending"


def answers_after(stop: Stop) -> bool:
    """With ``finish=True``, a stop before a batch that comes after one more call, without
    tools, for a final answer: a repetition, or a ceiling that leaves a model call possible."""
    ceiling = BY_NAME.get(stop.value)
    return stop is Stop.REPEATED or (ceiling is not None and ceiling.answers_after)


def stop_means(stop: Stop) -> str:
    """What ``stop`` means, in one sentence."""
    ceiling = BY_NAME.get(stop.value)
    return ceiling.means if ceiling is not None else _OTHER_STOPS[stop]


def clock_text(seconds: float, budget: Budget) -> str:
    """A run's seconds so far, against its wall-clock ceiling when it has one: ``"3.2 s"``, or
    ``"3.2 s of max_seconds 60 s"`` (a live view's clock)."""
    limit = getattr(budget, MaxSeconds.name)
    return f"{seconds:.1f} s" + ("" if limit is None else f" of {MaxSeconds.name} {limit:g} s")


def meter_rows(
    budget: Budget, used: Used, projection: Projection | None = None
) -> list[tuple[str, str]]:
    """The meter's rows, one for each ceiling shown by a row: its label, and what is used of
    it and of what (or that there is no such ceiling), before a next step projected at
    ``projection``."""
    rows = []
    for cls in CEILINGS:
        shown = cls.figure(used, projection)
        if cls.label is None or shown is None:
            continue
        limit = getattr(budget, cls.name)
        of = f"(no {cls.name})" if limit is None else f"of {cls.name} {count(limit)}"
        rows.append((cls.label, f"{shown} {of}"))
    return rows
