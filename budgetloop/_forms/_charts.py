"""What a run's charts draw, every figure made by the core: the views lay the charts out.

``Tally`` counts a run's steps as they come: each step's reported input tokens, and after each
step what the run has spent (summed in whole picodollars, as the run bills, so no figure drifts
from the spend the core reports: a step's cost with the summary its context policy had written
for it) and the tool calls it has run (``calls_run``); where a context policy edited a request,
what the same steps would have spent had each been sent its whole context (``whole``,
``whole_context_pico``). ``charts`` makes
a run's charts from it: input tokens per step, cost so far, and tool calls run so far where a
ceiling is drawn on it. Each ceiling says which chart it is a dashed line on (``Ceiling.chart``),
so a new ceiling is charted in every view without a line of the views changing; a shared
ledger's limit is a line on the cost chart where the view knows the ledger. ``max_steps`` is the
charts' x axis, and ``max_seconds`` is not charted: the steps' seconds do not add up to the
run's wall clock, which it limits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .._engine._types import Budget, Price, format_usd, from_pico, to_pico
from .._rules._budget import Projection
from .._rules._ceilings import calls_run, ceilings_of, count
from .._trace._records import summaries_pico
from .._trace._result import Step

Point = tuple[float, float]


def whole_context_pico(step: Step, price: Price | None) -> int | None:
    """What ``step`` would have cost had its whole context been sent, with no context policy:
    its cost, with the input tokens its policy left out (``ContextEdit.dropped_tokens``, as the
    guard estimates them) billed as uncached input at ``price`` (the run's), at the tier of the
    whole input; no summary is written. A step its policy did not edit costs what it cost. None
    when that is not known (a step of unknown cost; an edited step without usage or price)."""
    if step.cost_usd is None:
        return None
    cost = to_pico(step.cost_usd)
    edit = step.context
    if edit is None or not edit.dropped_tokens:
        return cost
    usage = step.usage
    if usage is None or price is None:
        return None
    whole = max(usage.input_tokens + edit.dropped_tokens, 0)
    whole = max(whole, usage.cache_read_tokens + usage.cache_write_tokens)
    return cost + price.usage_pico(replace(usage, input_tokens=whole)) - price.usage_pico(usage)


class Tally:
    """A run's per-step figures as its charts draw them, extended a step at a time (``add``).

    ``carried`` is what a fork carried from the run it came from (``Result.carried_usd``), which
    no step accounts for: the cost so far starts there. ``tokens`` holds each step's reported
    input tokens (0 when it reported none), ``spent`` the cost so far after each step, in
    dollars (a step's cost and its context policy's summary), and ``calls`` the tool calls run
    so far after each step. ``whole`` is the cost so far after each step had every step been
    sent its whole context (``whole_context_pico`` at ``price``, the run's), and ``edited``
    whether any step's context policy edited its request: the cost chart draws ``whole`` then
    (``summarized``: a summary was billed).
    ``whole`` stops at the first step whose figure is not known."""

    __slots__ = (
        "_carried", "_own", "_price", "_whole", "calls", "carried", "edited", "spent",
        "summarized", "tokens", "whole",
    )  # fmt: skip

    def __init__(self, carried: float = 0.0, price: Price | None = None) -> None:
        self.carried = carried
        self._carried = to_pico(carried)
        self._price = price
        self._own = 0  # picodollars the steps counted cost (a step of unknown cost adds none)
        self._whole: int | None = 0  # the same, each step sent its whole context (None: unknown)
        self.tokens: list[int] = []
        self.spent: list[float] = []
        self.calls: list[int] = []
        self.whole: list[float] = []
        self.edited = False
        self.summarized = False

    @property
    def price(self) -> Price | None:
        return self._price

    def add(self, step: Step) -> bool:
        """Count ``step``. True when the spend its meter says holds money a fork carried: its
        projection was made on more than the steps before it cost, and its own summary (it
        came after the fork point)."""
        p = step.projection
        summary = summaries_pico((step,))  # billed before the step's call was projected
        carries = p is not None and to_pico(p.spent_usd) > self._own + summary
        if step.cost_usd is not None:
            self._own += to_pico(step.cost_usd)
        self._own += summary
        whole = whole_context_pico(step, self._price)
        self._whole = None if whole is None or self._whole is None else self._whole + whole
        if self._whole is not None:
            self.whole.append(from_pico(self._carried + self._whole))
        self.edited = self.edited or step.context is not None
        self.summarized = self.summarized or summary > 0
        self.tokens.append(step.usage.input_tokens if step.usage is not None else 0)
        self.spent.append(from_pico(self._carried + self._own))
        self.calls.append((self.calls[-1] if self.calls else 0) + calls_run((step,)))
        return carries

    def extend(self, steps: tuple[Step, ...] | list[Step]) -> None:
        for step in steps:
            self.add(step)

    def copy(self) -> Tally:
        """The figures as they are now, kept as they are when this one is extended."""
        out = Tally.__new__(Tally)
        out.carried, out._carried, out._own = self.carried, self._carried, self._own
        out._price, out._whole, out.edited = self._price, self._whole, self.edited
        out.summarized = self.summarized
        out.tokens, out.spent, out.calls = self.tokens[:], self.spent[:], self.calls[:]
        out.whole = self.whole[:]
        return out


def tally(
    steps: tuple[Step, ...] | list[Step], carried: float = 0.0, price: Price | None = None
) -> Tally:
    """The figures of ``steps``, the cost starting from ``carried`` (``price``: the run's, for
    ``Tally.whole``)."""
    out = Tally(carried, price)
    out.extend(steps)
    return out


@dataclass(frozen=True)
class Chart:
    """One chart of a run, every figure and word made: ``key`` says which ("tokens", "cost",
    "calls"), ``name`` what it draws and ``title`` that with what its marks mean; ``points``
    are (step, the step's figure) for ``bars``, else (steps taken, the figure so far);
    ``ceilings`` are the dashed lines on it (the value and its label); ``money``: its figures
    are dollars (``format_usd``), else counts; ``projected`` is the hollow point (steps taken,
    spent + the projected step), where one is drawn; ``x_label`` names the x axis and ``empty``
    is said when there is nothing to draw. ``baseline`` is a second line, drawn thin and dashed
    under ``points`` where there is one (the cost chart of a run whose context policy edited a
    request: the same steps without it), and ``baseline_label`` says what it is."""

    key: str
    name: str
    title: str
    bars: bool
    points: tuple[Point, ...]
    ceilings: tuple[tuple[float, str], ...]
    x_label: str
    empty: str
    money: bool = False
    projected: Point | None = None
    baseline: tuple[Point, ...] = ()
    baseline_label: str = ""

    def y_text(self, value: float) -> str:
        """A figure of the chart as its axis writes it."""
        return format_usd(value) if self.money else count(value)


def ceiling_lines(
    budget: Budget, ledger_limit: float | None = None
) -> dict[str, tuple[tuple[float, str], ...]]:
    """The dashed lines of each chart (by ``Chart.key``): each ceiling ``budget`` sets that is
    drawn on one (its value and its label), and a shared ledger's limit on the cost chart."""
    lines: dict[str, list[tuple[float, str]]] = {}
    for ceiling in ceilings_of(budget):
        if ceiling.chart is None:
            continue
        limit = ceiling.limit
        shown = format_usd(limit) if ceiling.money else count(limit)
        lines.setdefault(ceiling.chart, []).append((float(limit), f"{ceiling.name} {shown}"))
    if ledger_limit is not None:
        lines.setdefault("cost", []).append(
            (ledger_limit, f"shared ledger limit {format_usd(ledger_limit)}")
        )
    return {key: tuple(values) for key, values in lines.items()}


def charts(
    figures: Tally,
    budget: Budget,
    projection: Projection | None = None,
    *,
    refused: bool = False,
    ledger_limit: float | None = None,
) -> tuple[Chart, ...]:
    """A run's charts: its input tokens per step, reported; its cost so far (from what a fork
    carried, its context policy's summaries counted; where the policy edited a request, with
    the same steps without it: ``Tally.whole``), with the hollow point of ``projection`` (the
    next step's, or with ``refused`` the one that stopped the run) at spent + projected; and
    its tool calls run so far where a ceiling is drawn on that. Each with the ceilings drawn
    on it (``ceiling_lines``)."""
    lines = ceiling_lines(budget, ledger_limit)
    n = len(figures.tokens)
    tokens = Chart(
        "tokens", "input tokens per step, reported", "input tokens per step, reported", True,
        tuple(enumerate(figures.tokens)), lines.get("tokens", ()), "step", "no steps yet",
    )  # fmt: skip
    carried = figures.carried
    points: tuple[Point, ...] = ()
    if n or carried:
        points = ((0, carried), *enumerate(figures.spent, 1))
    projected = None
    if projection is not None and projection.total_usd is not None:
        projected = (n + 1, projection.total_usd)
        points = points or ((0, 0.0),)
    title = "cost so far" if not carried else f"cost so far, from {format_usd(carried)} carried"
    baseline: tuple[Point, ...] = ()
    said = ""
    if figures.edited and figures.whole:
        baseline = ((0, carried), *enumerate(figures.whole, 1))
        said = f"dashed: the same steps without the policy, {format_usd(figures.whole[-1])}"
        title += ", with the context policy"
        title += " and its summaries" if figures.summarized else ""
    if projected is not None:  # the hollow point is said only where one is drawn
        which = "the step that did not fit" if refused else "next step"
        title += f" (○ = + {which}, projected)" if not carried else f" (○ = + {which})"
    cost = Chart(
        "cost", "cost so far", title, False, points, lines.get("cost", ()), "steps taken",
        "nothing spent yet", money=True, projected=projected, baseline=baseline,
        baseline_label=said,
    )  # fmt: skip
    out = [tokens, cost]
    if "calls" in lines:
        calls = ((0, 0), *enumerate(figures.calls, 1)) if n else ()
        name = "tool calls run so far"
        out.append(
            Chart("calls", name, name, False, calls, lines["calls"], "steps taken", "no steps yet")
        )
    return tuple(out)


def spent_text(cost_usd: float | None, carried: float) -> str:
    """What a run spent, in words; for a fork, how much of it was carried from the run it came
    from (``carried``), and the rest, by its steps, reckoned in picodollars."""
    if cost_usd is None:
        return "cost unknown"
    spent = f"{format_usd(cost_usd)} spent"
    if carried:
        own = from_pico(to_pico(cost_usd) - to_pico(carried))
        spent += (
            f" ({format_usd(carried)} of it carried from the run this one was forked from, "
            f"{format_usd(own)} by the steps here)"
        )
    return spent
