"""``budget_report``: choosing the ceilings from your own traces instead of assuming them.

For a set of finished runs: how cost and step count are spread (percentiles), which stop reason
stopped which runs, the ceilings that would have let p% of the runs finish (each ceiling that
says what a run needed of it: ``max_steps``, ``max_cost_usd``, ``max_input_tokens``), and the
daily exposure at a given number of runs a day. A file that cannot be read as a
trace is skipped, and the report says which and why.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._engine._reading import price_of_name
from .._engine._types import PICO, Budget, Price, format_usd, from_pico, to_pico
from .._engine._valid import must, type_name
from .._forms._printable import printable
from .._rules._ceilings import BY_NAME, CEILINGS, Figure
from .._trace._journal import load_traces
from .._trace._result import APPROVALS, Result, summaries_pico

DEFAULT_PERCENTILES = (50, 90, 95, 99)
TraceSource = str | os.PathLike[str] | Result | Mapping[str, Any]


@dataclass(frozen=True)
class BudgetReport:
    """Plain data; ``str(report)`` is a readable table. Percentiles are nearest-rank (a value
    some run really had). Dicts are keyed by the percentiles asked for.

    When some run's cost is unknown (a run imported from a source that records none; their
    names are in ``unknown_cost``), every money figure is None and shown as "unknown": a
    percentile that leaves those runs out would not be what it says. Replay such runs with a
    ``price=`` to learn what they cost."""

    runs: int
    names: tuple[str, ...]  # each run's file name, or "#i" for one passed as data
    percentiles: tuple[float, ...]
    cost_usd: dict[float, float | None]  # the p-th percentile of what a run cost
    steps: dict[float, int]  # the p-th percentile of a run's model calls
    mean_cost_usd: float | None
    total_cost_usd: float | None
    stops: dict[str, tuple[str, ...]]  # stop reason -> the runs it stopped, by name
    # Each ceiling's value that lets p% of all runs answer, by its name (``_ceilings``): None
    # when fewer than p% of these runs answered at all, or when what some run needed of it is
    # unknown (a cost its trace does not hold).
    ceilings: dict[str, dict[float, Figure | None]]
    runs_per_day: float | None = None
    daily_expected_usd: float | None = None  # runs_per_day x mean cost
    daily_worst_usd: dict[float, float | None] | None = None  # runs_per_day x max_cost_usd[p]
    skipped: tuple[tuple[str, str], ...] = ()  # (file name, why) for each file not read
    unknown_cost: tuple[str, ...] = ()  # the runs whose cost their trace does not hold
    prices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # price -> runs billed at it
    # the calls held for a person, by decision ("approved", "edited", "denied"): how many,
    # and the runs that had one
    decisions: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    # the turns whose request asked for fewer output tokens than the run's max_output_tokens,
    # to fit what the budget had left (min_output_tokens): how many, and the runs that had one
    fitted: tuple[int, tuple[str, ...]] = (0, ())
    # the summaries a context policy had written (``Summarize``): how many, what they cost in
    # all (part of each run's cost), and the runs that had one
    summaries: tuple[int, float, tuple[str, ...]] = (0, 0.0, ())

    @property
    def max_cost_usd(self) -> dict[float, float | None]:
        """The ``max_cost_usd`` that lets p% of all runs answer."""
        return self.ceilings["max_cost_usd"]

    @property
    def max_steps(self) -> dict[float, int | None]:
        """The ``max_steps`` that lets p% of all runs answer."""
        return self.ceilings["max_steps"]  # type: ignore[return-value]

    def budget(self, percentile: float) -> Budget:
        """The ``Budget`` of the report's ceilings (``max_steps``, ``max_cost_usd``,
        ``max_input_tokens``) that would have let ``percentile``% of these runs answer (one of
        the percentiles the report was made with)."""
        if percentile not in self.percentiles:
            expected = f"one of the report's {list(self.percentiles)}"
            raise ValueError(must("BudgetReport.budget", "percentile", expected, repr(percentile)))
        values = {name: by_p[percentile] for name, by_p in self.ceilings.items()}
        if self.unknown_cost:
            raise ValueError(
                "BudgetReport.budget: the cost of every run must be known, got "
                f"{len(self.unknown_cost)} of the {self.runs} runs unknown (their traces hold "
                "none), so no cost ceiling can be derived; replay them with a price= first."
            )
        if any(v is None for v in values.values()):
            answered = len(self.stops.get("answered", ()))
            raise ValueError(
                f"BudgetReport.budget: the runs that answered must be at least {percentile}% of "
                f"the {self.runs} runs, got {answered}, so no ceiling from these traces lets "
                "that many finish."
            )
        for name, value in values.items():
            if isinstance(value, float) and math.isinf(value):
                raise ValueError(
                    f"BudgetReport.budget: the {name} ceiling for p{_num(percentile)} must be "
                    "within a float's range, got one past it, so no Budget can hold it."
                )
        return Budget(**values)  # type: ignore[arg-type]  # each of its type, by its ceiling

    def __str__(self) -> str:
        heads = [f"p{_num(p)}" for p in self.percentiles]
        width = max(12, *(len(h) + 2 for h in heads))
        skipped = f" ({len(self.skipped)} files skipped, listed below)" if self.skipped else ""
        _usd = _unknown if self.unknown_cost else _usd_text
        lines = [
            f"{self.runs} runs{skipped}, {_usd(self.total_cost_usd)} in all, "
            f"{_usd(self.mean_cost_usd)} a run on average",
            *(
                [f"cost unknown for {len(self.unknown_cost)}: {_some(self.unknown_cost)}"]
                if self.unknown_cost
                else []
            ),
            "",
            " " * 20 + "".join(h.rjust(width) for h in heads),
            _row("run cost", [_usd(self.cost_usd[p]) for p in self.percentiles], width),
            _row("steps", [str(self.steps[p]) for p in self.percentiles], width),
            "",
            "stopped by:",
        ]
        for stop, names in sorted(self.stops.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {stop:<18}{len(names):>{width}}  {_some(names)}")
        if self.decisions:
            lines += ["", "calls held for a person:"]
            for decision in APPROVALS:
                if decision in self.decisions:
                    count, runs = self.decisions[decision]
                    lines.append(f"  {decision:<18}{count:>{width}}  {_some(runs)}")
        if self.fitted[0]:
            count, runs = self.fitted
            lines += ["", "turns fitted to what the budget had left (min_output_tokens):"]
            lines.append(f"  {'fitted':<18}{count:>{width}}  {_some(runs)}")
        if self.summaries[0]:
            count, usd, runs = self.summaries
            lines += ["", "summaries a context policy had written (part of the runs' cost):"]
            lines.append(f"  {'summaries':<18}{count:>{width}}  {_usd(usd)}  {_some(runs)}")
        if self._prices_worth_saying():
            lines += ["", "priced at:"]
            for words, names in sorted(self.prices.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                lines.append(f"  {printable(words)}: {_some(names)}")
        lines += [
            "",
            "ceilings that would have let p% of these runs answer:",
            *(
                _row(name, [_shown(name, by_p[p], _usd) for p in self.percentiles], width)
                for name, by_p in self.ceilings.items()
            ),
        ]
        if self.unknown_cost:
            lines.append("  (unknown: replay the runs of unknown cost with a price= to learn it)")
        answered = len(self.stops.get("answered", ()))
        if any(max(1, math.ceil(p / 100 * self.runs)) > answered for p in self.percentiles):
            lines.append(
                "  (-: fewer than p% of the runs answered; raise the ceilings to learn it)"
            )
        if self.runs_per_day is not None and self.daily_worst_usd is not None:
            lines += [
                "",
                f"daily exposure at {_num(self.runs_per_day)} runs a day:",
                _row("expected (mean)", [_usd(self.daily_expected_usd)], width),
                _row(
                    "worst at ceiling",
                    [_usd(self.daily_worst_usd[p]) for p in self.percentiles],
                    width,
                ),
            ]
            lines += self._below_the_mean()
        if self.skipped:
            lines += ["", f"skipped, not read as traces ({len(self.skipped)}):"]
            lines += [f"  {printable(name)}: {printable(why)}" for name, why in self.skipped]
        return "\n".join(lines)

    def _prices_worth_saying(self) -> bool:
        """The runs were billed at more than one price, or at one whose source is known (a
        catalog's): a single price given by hand goes unsaid."""
        return len(self.prices) > 1 or any(
            not (words == "none" or words.startswith("given: ")) for words in self.prices
        )

    def _below_the_mean(self) -> list[str]:
        """A note for each worst at ceiling below the expected figure: the mean is of the runs
        as they ran, and that ceiling would have stopped the costlier ones at it."""
        expected, worst = self.daily_expected_usd, self.daily_worst_usd or {}
        below = []
        for p in self.percentiles:
            ceiling = worst.get(p)
            if ceiling is not None and expected is not None and ceiling < expected:
                below.append(p)
        if not below:
            return []
        at = ", ".join(f"p{_num(p)}" for p in below)
        return [
            f"  (worst at ceiling is below the mean at {at}: a run that cost more than that",
            "  ceiling would have been stopped at it; the mean counts it at its full cost)",
        ]


def budget_report(
    traces: TraceSource | Sequence[TraceSource],
    *,
    runs_per_day: float | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    price: Price | str | None = None,
) -> BudgetReport:
    """A ``BudgetReport`` from a folder of traces (every ``*.json`` and ``*.jsonl`` in it), one
    trace file, or a list of paths, ``Result``s and ``to_dict()`` data. A file is read as
    ``load_traces`` reads it: runs from other frameworks too, and a file holding several runs
    counts each (named ``file.json#0``, ``#1``...). A file that cannot be read as a trace is
    skipped and listed in ``skipped`` with why; a ValueError only when no trace can be read.

    The cost ceiling a run needed is the largest worst case its cost guard checked (spent so
    far plus the projected next turn), or what it cost if that was more: a lower
    ``max_cost_usd`` would have stopped it; the input-token ceiling, the largest request it
    sent, as counted before sending. A run that did not answer is counted as needing
    more than it was given, so it finishes under no ceiling the report suggests.

    ``price`` (a ``Price``, or a model name priced by ``budgetloop.prices.price_of``) bills the
    runs whose traces hold no cost (imported ones) at their recorded usage; a run with a step
    that reported no usage stays unknown. ``prices`` says which price each run was billed at;
    the text says it when the runs were billed at more than one, or at a catalog's.
    """
    names, results, skipped = _load(traces)
    if price is not None:
        given = _price_given(price)
        results = [_billed(r, given) for r in results]
    ps = _check_percentiles(percentiles)
    per_day = _check_runs_per_day(runs_per_day)
    n = len(results)
    steps = sorted(len(r.steps) for r in results)
    answered = [r for r in results if r.answered]
    stops: dict[str, list[str]] = {}
    for name, r in zip(names, results, strict=True):
        stops.setdefault("running" if r.stop is None else r.stop.value, []).append(name)
    unknown = tuple(name for name, r in zip(names, results, strict=True) if r.cost_usd is None)
    prices: dict[str, list[str]] = {}
    for name, r in zip(names, results, strict=True):
        prices.setdefault("none" if r.price is None else r.price.describe(), []).append(name)
    ceilings: dict[str, dict[float, Figure | None]] = {}
    max_cost: dict[float, int | None] = dict.fromkeys(ps)  # picodollars
    for ceiling in CEILINGS:
        if not ceiling.reports:
            continue
        if ceiling.money and unknown:  # a percentile that left them out would not be what it says
            ceilings[ceiling.name] = dict.fromkeys(ps)
            continue
        needed = sorted(ceiling.needed(r) for r in answered)
        by_p = {p: _needed(needed, n, p) for p in ps}
        if ceiling.money:
            max_cost = by_p
        ceilings[ceiling.name] = {
            p: _dollars(v) if ceiling.money and v is not None else v for p, v in by_p.items()
        }
    decided: dict[str, tuple[int, tuple[str, ...]]] = {}
    for name, r in zip(names, results, strict=True):
        for decision in APPROVALS:
            count = sum(1 for s in r.steps for c in s.tool_calls if c.approval == decision)
            if count:
                total, runs = decided.get(decision, (0, ()))
                decided[decision] = (total + count, (*runs, name))
    fitted_turns, fitted_runs = 0, []
    for name, r in zip(names, results, strict=True):
        count = sum(1 for s in r.steps if s.projection and s.projection.fitted_from is not None)
        if count:
            fitted_turns += count
            fitted_runs.append(name)
    report = BudgetReport(
        runs=n,
        names=tuple(names),
        percentiles=ps,
        cost_usd=dict.fromkeys(ps),
        steps={p: steps[_rank(n, p)] for p in ps},
        mean_cost_usd=None,
        total_cost_usd=None,
        stops={k: tuple(v) for k, v in stops.items()},
        ceilings=ceilings,
        skipped=tuple(skipped),
        unknown_cost=unknown,
        prices={k: tuple(v) for k, v in prices.items()},
        decisions=decided,
        fitted=(fitted_turns, tuple(fitted_runs)),
        summaries=_summaries(names, results),
    )
    if unknown:
        if per_day is None:
            return report
        return replace(report, runs_per_day=per_day, daily_worst_usd=dict.fromkeys(ps))
    costs = sorted(to_pico(r.cost_usd or 0.0) for r in results)
    total = sum(costs)
    report = replace(
        report,
        cost_usd={p: _dollars(costs[_rank(n, p)]) for p in ps},
        mean_cost_usd=_dollars(total, n),
        total_cost_usd=_dollars(total),
    )
    if per_day is None:
        return report
    return replace(
        report,
        runs_per_day=per_day,
        daily_expected_usd=_dollars(total, n) * per_day,
        daily_worst_usd={
            p: None if v is None else _dollars(v) * per_day for p, v in max_cost.items()
        },
    )


def _price_given(price: object) -> Price:
    if isinstance(price, str):
        return price_of_name(price, "budget_report")
    if not isinstance(price, Price):
        expected = "a Price, a model name or None"
        raise TypeError(f"budget_report: price must be {expected}, got {type_name(price)}.")
    return price


def _billed(result: Result, price: Price) -> Result:
    """A run whose trace holds no cost, billed at ``price`` for its recorded usage (each step
    at the tier of its own input); unchanged when it has a cost or a step lacks usage."""
    if result.cost_usd is not None or any(s.usage is None for s in result.steps):
        return result
    picos = [price.usage_pico(s.usage) for s in result.steps if s.usage is not None]
    steps = tuple(
        replace(s, cost_usd=from_pico(c)) for s, c in zip(result.steps, picos, strict=True)
    )
    return replace(result, steps=steps, cost_usd=from_pico(sum(picos)), price=price)


def _summaries(
    names: Sequence[str], results: Sequence[Result]
) -> tuple[int, float, tuple[str, ...]]:
    """How many summaries the runs' context policies had written, their cost, and the runs."""
    count, pico, runs = 0, 0, []
    for name, r in zip(names, results, strict=True):
        made = sum(1 for s in r.steps if s.context and s.context.summary)
        if made:
            count += made
            pico += summaries_pico(r.steps)
            runs.append(name)
    return count, from_pico(pico), tuple(runs)


def _dollars(pico: int, runs: int = 1) -> float:
    """``pico / runs`` picodollars in dollars; infinity past a float's range (a trace's cost is
    a float, but what many of them add to need not be)."""
    try:
        return pico / (runs * PICO)
    except OverflowError:
        return math.inf


def _load(traces: object) -> tuple[list[str], list[Result], list[tuple[str, str]]]:
    """Each trace's name and Result, and (name, why) for each file that could not be read."""
    if isinstance(traces, (str, os.PathLike)):
        path = Path(traces)
        if path.is_dir():
            try:
                files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl"))
            except OSError as exc:
                raise ValueError(
                    f"budget_report: traces must be a folder that can be listed, got "
                    f"{str(path)!r} ({exc.strerror or exc})."
                ) from None
            if not files:
                expected = "a folder that holds *.json or *.jsonl traces"
                raise ValueError(
                    must("budget_report", "traces", expected, f"{str(path)!r}, which holds none")
                )
            items: list[Any] = list(files)
        else:
            items = [path]
    elif isinstance(traces, (Result, Mapping)):
        items = [traces]
    elif isinstance(traces, (list, tuple)):
        items = list(traces)
    else:
        raise TypeError(
            "budget_report: traces must be a folder, a trace file, or a list of paths, "
            f"Results and trace dicts, got {type_name(traces)}."
        )
    if not items:
        raise ValueError("budget_report: traces must be at least one trace, got none.")
    names: list[str] = []
    results: list[Result] = []
    skipped: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        if isinstance(item, Result):
            names.append(f"#{i}")
            results.append(item)
        elif isinstance(item, Mapping):
            names.append(f"#{i}")
            results.append(Result.from_dict(dict(item)))
        elif isinstance(item, (str, os.PathLike)):
            name = Path(item).name
            try:
                found = load_traces(item)  # a file from another framework may hold several runs
            except (OSError, ValueError) as exc:
                skipped.append((name, _why(exc, os.fspath(item))))
                continue
            if not found:
                skipped.append((name, "holds no run (no model call)."))
                continue
            names += [name] if len(found) == 1 else [f"{name}#{k}" for k in range(len(found))]
            results += found
        else:
            raise TypeError(
                f"budget_report: traces[{i}] must be a path, a Result or a trace dict, "
                f"got {type_name(item)}."
            )
    if not results:
        listed = "; ".join(f"{printable(name)}: {printable(why)}" for name, why in skipped)
        raise ValueError(
            "budget_report: traces must be at least one trace that can be read, "
            f"got {len(skipped)} that cannot ({listed})."
        )
    return names, results, skipped


def _why(exc: OSError | ValueError, where: str) -> str:
    """Why a file was not read, without its path (the report names it): ``load_trace``'s
    message, its line as ``line N:``; what the system said for a file it could not open."""
    if isinstance(exc, OSError):
        return f"cannot be read: {exc.strerror or exc}."
    text = str(exc).removeprefix("load_traces: ")
    rest = text[len(where) :] if text.startswith(where) else ": " + text
    line, colon, said = rest[1:].partition(": ")
    if rest.startswith(":") and line.isdigit() and colon:
        return f"line {line}: {said}"
    return rest.removeprefix(": ")


def _check_percentiles(percentiles: object) -> tuple[float, ...]:
    if isinstance(percentiles, (str, bytes)) or not isinstance(percentiles, (list, tuple)):
        raise TypeError(
            f"budget_report: percentiles must be a list of numbers, got {type_name(percentiles)}."
        )
    if not percentiles:
        got = f"an empty {type_name(percentiles)}"
        raise ValueError(must("budget_report", "percentiles", "at least one number", got))
    for p in percentiles:
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise TypeError(f"budget_report: percentiles must be numbers, got {type_name(p)}.")
        if not (0 < p <= 100):
            raise ValueError(f"budget_report: percentiles must be 0 < p <= 100, got {p!r}.")
    return tuple(sorted(set(percentiles)))


def _check_runs_per_day(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"budget_report: runs_per_day must be a number, got {type_name(value)}.")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"budget_report: runs_per_day must be a finite number > 0, got {value!r}."
        )
    return value


def _rank(n: int, p: float) -> int:
    """Nearest rank: the index of the smallest value at or above p% of ``n`` sorted values."""
    return max(1, math.ceil(p / 100 * n)) - 1


def _needed(values: list[int], n: int, p: float) -> int | None:
    """The least ceiling under which p% of all ``n`` runs finish, given what each finished run
    needed (``values``, sorted); None when fewer than that many finished."""
    k = max(1, math.ceil(p / 100 * n))
    return values[k - 1] if k <= len(values) else None


def _row(label: str, cells: list[str], width: int) -> str:
    return f"  {label:<18}" + "".join(c.rjust(width) for c in cells)


def _some(names: tuple[str, ...]) -> str:
    """The first three names (escaped: a name cannot forge a row), and how many more."""
    shown = ", ".join(printable(name) for name in names[:3])
    return shown + (f", ... (+{len(names) - 3})" if len(names) > 3 else "")


def _unknown(value: float | None) -> str:
    return "unknown"


def _usd_text(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e12:  # a trillion and more: too wide written out, or past a float's range
        return f"${value:.3e}" if value <= sys.float_info.max else f">${sys.float_info.max:.1e}"
    return format_usd(value)  # the one formatter every view uses


def _opt(value: Figure | None) -> str:
    return "-" if value is None else str(value)


def _shown(name: str, value: Figure | None, usd: Callable[[float | None], str]) -> str:
    """A ceiling's value in the report's table: dollars as ``usd`` writes them."""
    return usd(value) if BY_NAME[name].money else _opt(value)


def _num(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) or not value.is_integer() else f"{int(value):,}"
