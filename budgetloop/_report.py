"""``budget_report``: choosing the ceilings from your own traces instead of assuming them.

For a set of finished runs: how cost and step count are spread (percentiles), which stop reason
stopped which runs, the ``max_cost_usd`` and ``max_steps`` that would have let p% of the runs
finish, and the daily exposure at a given number of runs a day.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._journal import load_trace
from ._trace import Result
from ._types import Budget, format_usd, from_pico, to_pico

DEFAULT_PERCENTILES = (50, 90, 95, 99)
TraceSource = str | os.PathLike[str] | Result | Mapping[str, Any]


@dataclass(frozen=True)
class BudgetReport:
    """Plain data; ``str(report)`` is a readable table. Percentiles are nearest-rank (a value
    some run really had). Dicts are keyed by the percentiles asked for."""

    runs: int
    names: tuple[str, ...]  # each run's file name, or "#i" for one passed as data
    percentiles: tuple[float, ...]
    cost_usd: dict[float, float]  # the p-th percentile of what a run cost
    steps: dict[float, int]  # the p-th percentile of a run's model calls
    mean_cost_usd: float
    total_cost_usd: float
    stops: dict[str, tuple[str, ...]]  # stop reason -> the runs it stopped, by name
    max_cost_usd: dict[float, float | None]  # the ceiling that lets p% of all runs answer
    max_steps: dict[float, int | None]  # None: fewer than p% of these runs answered at all
    runs_per_day: float | None = None
    daily_expected_usd: float | None = None  # runs_per_day x mean cost
    daily_worst_usd: dict[float, float | None] | None = None  # runs_per_day x max_cost_usd[p]

    def budget(self, percentile: float) -> Budget:
        """``Budget(max_steps=..., max_cost_usd=...)`` that would have let ``percentile``% of
        these runs answer (one of the percentiles the report was made with)."""
        if percentile not in self.max_steps:
            raise ValueError(
                f"BudgetReport.budget: percentile {percentile!r} is not one of "
                f"{list(self.percentiles)}."
            )
        steps, cost = self.max_steps[percentile], self.max_cost_usd[percentile]
        if steps is None or cost is None:
            raise ValueError(
                f"BudgetReport.budget: fewer than {percentile}% of the {self.runs} runs "
                "answered, so no ceiling from these traces lets that many finish."
            )
        return Budget(max_steps=steps, max_cost_usd=cost)

    def __str__(self) -> str:
        heads = [f"p{_num(p)}" for p in self.percentiles]
        width = max(12, *(len(h) + 2 for h in heads))
        lines = [
            f"{self.runs} runs, {_usd(self.total_cost_usd)} in all, "
            f"{_usd(self.mean_cost_usd)} a run on average",
            "",
            " " * 20 + "".join(h.rjust(width) for h in heads),
            _row("run cost", [_usd(self.cost_usd[p]) for p in self.percentiles], width),
            _row("steps", [str(self.steps[p]) for p in self.percentiles], width),
            "",
            "stopped by:",
        ]
        for stop, names in sorted(self.stops.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            shown = ", ".join(names[:3]) + (f", ... (+{len(names) - 3})" if len(names) > 3 else "")
            lines.append(f"  {stop:<18}{len(names):>{width}}  {shown}")
        lines += [
            "",
            "ceilings that would have let p% of these runs answer:",
            _row("max_cost_usd", [_usd(self.max_cost_usd[p]) for p in self.percentiles], width),
            _row("max_steps", [_opt(self.max_steps[p]) for p in self.percentiles], width),
        ]
        if any(v is None for v in self.max_steps.values()):
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
                "  (expected: the runs as they went, no ceiling; worst at ceiling: every run",
                "   spending the whole max_cost_usd above. A ceiling below the mean cost comes",
                "   out lower than expected: the dearer runs it stops end without an answer)",
            ]
        return "\n".join(lines)


def budget_report(
    traces: TraceSource | Sequence[TraceSource],
    *,
    runs_per_day: float | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
) -> BudgetReport:
    """A ``BudgetReport`` from a folder of traces (every ``*.json`` and ``*.jsonl`` in it), one
    trace file, or a list of paths, ``Result``s and ``to_dict()`` data.

    The cost ceiling a run needed is the largest worst case its cost guard checked (spent so
    far plus the projected next turn), or what it cost if that was more: a lower
    ``max_cost_usd`` would have stopped it. A run that did not answer is counted as needing
    more than it was given, so it finishes under no ceiling the report suggests.
    """
    names, results = _load(traces)
    ps = _check_percentiles(percentiles)
    per_day = _check_runs_per_day(runs_per_day)
    n = len(results)
    costs = sorted(to_pico(r.cost_usd) for r in results)
    steps = sorted(len(r.steps) for r in results)
    answered = [r for r in results if r.answered]
    needed_cost = sorted(_needed_pico(r) for r in answered)
    needed_steps = sorted(len(r.steps) for r in answered)
    stops: dict[str, list[str]] = {}
    for name, r in zip(names, results, strict=True):
        stops.setdefault("running" if r.stop is None else r.stop.value, []).append(name)
    total = sum(costs)
    max_cost = {p: _needed(needed_cost, n, p) for p in ps}
    report = BudgetReport(
        runs=n,
        names=tuple(names),
        percentiles=ps,
        cost_usd={p: from_pico(costs[_rank(n, p)]) for p in ps},
        steps={p: steps[_rank(n, p)] for p in ps},
        mean_cost_usd=from_pico(total) / n,
        total_cost_usd=from_pico(total),
        stops={k: tuple(v) for k, v in stops.items()},
        max_cost_usd={p: None if v is None else from_pico(v) for p, v in max_cost.items()},
        max_steps={p: _needed(needed_steps, n, p) for p in ps},
    )
    if per_day is None:
        return report
    return replace(
        report,
        runs_per_day=per_day,
        daily_expected_usd=from_pico(total) / n * per_day,
        daily_worst_usd={
            p: None if v is None else from_pico(v) * per_day for p, v in max_cost.items()
        },
    )


def _load(traces: object) -> tuple[list[str], list[Result]]:
    if isinstance(traces, (str, os.PathLike)):
        path = Path(traces)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl"))
            if not files:
                raise ValueError(f"budget_report: no *.json or *.jsonl traces in {str(path)!r}.")
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
            f"Results and trace dicts, got {type(traces).__name__}."
        )
    if not items:
        raise ValueError("budget_report: no traces given.")
    names, results = [], []
    for i, item in enumerate(items):
        if isinstance(item, Result):
            names.append(f"#{i}")
            results.append(item)
        elif isinstance(item, Mapping):
            names.append(f"#{i}")
            results.append(Result.from_dict(dict(item)))
        elif isinstance(item, (str, os.PathLike)):
            names.append(Path(item).name)
            results.append(load_trace(item))
        else:
            raise TypeError(
                f"budget_report: traces[{i}] must be a path, a Result or a trace dict, "
                f"got {type(item).__name__}."
            )
    return names, results


def _check_percentiles(percentiles: object) -> tuple[float, ...]:
    if isinstance(percentiles, (str, bytes)) or not isinstance(percentiles, (list, tuple)):
        raise TypeError(
            "budget_report: percentiles must be a list of numbers, "
            f"got {type(percentiles).__name__}."
        )
    if not percentiles:
        raise ValueError("budget_report: percentiles must not be empty.")
    for p in percentiles:
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise TypeError(
                f"budget_report: percentiles: expected numbers, got {type(p).__name__}."
            )
        if not (0 < p <= 100):
            raise ValueError(f"budget_report: percentiles: expected 0 < p <= 100, got {p!r}.")
    return tuple(sorted(set(percentiles)))


def _check_runs_per_day(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"budget_report: runs_per_day must be a number, got {type(value).__name__}."
        )
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


def _needed_pico(result: Result) -> int:
    need = to_pico(result.cost_usd)
    for step in result.steps:
        cost = step.projection.cost_usd
        if cost is not None:
            need = max(need, to_pico(step.projection.spent_usd) + to_pico(cost))
    return need


def _row(label: str, cells: list[str], width: int) -> str:
    return f"  {label:<18}" + "".join(c.rjust(width) for c in cells)


def _usd(value: float | None) -> str:
    return "-" if value is None else format_usd(value)


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


def _num(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) or not value.is_integer() else f"{int(value):,}"
