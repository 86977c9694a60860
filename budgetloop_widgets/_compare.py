"""``CompareView``: two runs side by side, parted at their first divergence.

The divergence is the core's (``budgetloop.first_divergence``: the first step where the model's
text, tool calls or error differ, or what came of a call: its status, decision, result). The
steps before it are the same in both runs, in what was said and what was done, and are folded
into one line, so the first row the view shows is the step where they part, marked. Both cost
curves are drawn on one chart against the ceilings, and so is each other chart of the runs
(``budgetloop.display.charts``). The view functions are pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from html import escape
from typing import Any

from budgetloop import Result, first_divergence
from budgetloop.display import Chart, charts, tally

from ._data import Strings, document, run_data, unstyled
from ._status import stop_lines
from ._svg import lines_chart
from ._text import plural, text
from ._traceview import Viewer
from ._views import as_result

Source = Result | Mapping[str, Any] | str | os.PathLike[str]


def cost_points(result: Result) -> list[tuple[float, float]]:
    """Cumulative cost after each step: (steps taken, dollars), from (0, what a fork carried
    from the run it came from: ``Result.carried_usd``), so each line ends at what its run
    spent (the core's figures: ``budgetloop.display.charts``)."""
    return list(_charts(result)["cost"].points)


def _charts(result: Result) -> dict[str, Chart]:
    made = charts(tally(result.steps, result.carried_usd, result.price), result.budget)
    return {chart.key: chart for chart in made}


def compare_charts(a: Result, b: Result, at: int | None, names: tuple[str, str]) -> list[str]:
    """Each chart of the two runs (``budgetloop.display.charts``) with both runs on it: their
    lines, each run's ceilings dashed (one line when both runs have the same), and a marker
    where the runs part."""
    by_run = [_charts(a), _charts(b)]
    keys = list(dict.fromkeys([*by_run[0], *by_run[1]]))
    return [compare_chart(a, b, at, names, key, by_run) for key in keys]


def compare_chart(
    a: Result,
    b: Result,
    at: int | None,
    names: tuple[str, str],
    key: str = "cost",
    by_run: list[dict[str, Chart]] | None = None,
) -> str:
    """One chart (``key``) with both runs on it: each run's figures, each run's ceilings
    dashed (one line when both runs have the same), and a marker where the runs part."""
    if by_run is None:
        by_run = [_charts(a), _charts(b)]
    shown = [(name, made[key]) for name, made in zip(names, by_run, strict=True) if key in made]
    ceilings = _named([(name, chart.ceilings) for name, chart in shown])
    first = shown[0][1]
    return lines_chart(
        [(name, chart.points) for name, chart in shown],
        title=f"{first.name}, both runs",
        x_label=first.x_label,
        y_format=first.y_text,
        ceilings=ceilings,
        marker_x=None if at is None else at,
        marker_label="" if at is None else f"part at step {at}",
        empty=first.empty,
    )


def _named(
    runs: list[tuple[str, tuple[tuple[float, str], ...]]],
) -> list[tuple[float, str]]:
    """The ceilings of both runs: one the runs share once, as it is; each other one named
    after its run."""
    shared = set(runs[0][1]).intersection(runs[1][1]) if len(runs) == 2 else set()
    out = [line for line in runs[0][1] if line in shared]
    for name, lines in runs:
        out += [
            (value, f"{name}: {label}") for value, label in lines if (value, label) not in shared
        ]
    return out


def divergence_text(a: Result, b: Result, at: int | None) -> str:
    """One sentence: where the runs part, or that they agree."""
    if at is None:
        return (
            f"The runs agree: all {plural(len(a.steps), 'step')} the same in the model's text, "
            "tool calls and errors."
        )
    if at == 0:
        return "The runs differ from the first step (step 0)."
    if at == 1:
        return (
            "The runs agree on step 0 and part at step 1: the model's text, tool calls or "
            "error differ there."
        )
    return (
        f"The runs agree on steps 0 to {at - 1} and part at step {at}: "
        "the model's text, tool calls or error differ there."
    )


def compare_document(
    a: Result, b: Result, names: tuple[str, str], title: str
) -> tuple[dict[str, Any], Strings]:
    """What the component draws for two runs: both runs' rows side by side, the agreeing steps
    before the divergence folded into one row, the divergence chosen and marked."""
    at = first_divergence(a, b)
    strings = Strings()
    runs = [
        run_data(result, strings, name=name, messages=False)
        for name, result in zip(names, (a, b), strict=True)
    ]
    data = document(
        "compare",
        title,
        runs,
        strings,
        divergence=at,
        divergence_text=divergence_text(a, b, at),
        charts=unstyled(compare_charts(a, b, at, names)),
    )
    return data, strings


class CompareView(Viewer):
    """Two runs side by side, from a ``Result``, a ``to_dict()`` dict or a saved trace's path
    each: one row per step number with both runs' status, cost and text, the steps before
    their first divergence folded into one row, the divergence chosen; the chosen step of
    both runs beside each other below. ``divergence`` is ``first_divergence(a, b)``;
    ``selected`` is the chosen step number (-1 for the folded row)."""

    def __init__(
        self,
        a: Source,
        b: Source,
        *,
        names: tuple[str, str] = ("run a", "run b"),
        title: str = "budgetloop: two runs",
    ) -> None:
        if (
            not isinstance(names, tuple)
            or len(names) != 2
            or not all(isinstance(n, str) for n in names)
        ):
            raise TypeError(f"CompareView: names must be a tuple of two str, got {names!r}.")
        if not isinstance(title, str):
            raise TypeError(f"CompareView: title must be a str, got {type(title).__name__}.")
        self.a = as_result(a, "CompareView")
        self.b = as_result(b, "CompareView")
        self.names = names
        self.title = title
        self.divergence: int | None = first_divergence(self.a, self.b)
        data, strings = compare_document(self.a, self.b, names, title)
        super().__init__(
            data, strings, selected=-1 if self.divergence is None else self.divergence
        )

    def summary(self) -> str:
        """The comparison in one line of plain text."""
        return f"CompareView of {self.names[0]!r} and {self.names[1]!r}: " + divergence_text(
            self.a, self.b, self.divergence
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if bundle is not None else ({}, {})
        data["text/plain"] = self.summary()
        data["text/html"] = (
            f'<div class="blv-fallback"><div><b>{text(self.title)}</b></div>'
            + "".join(
                f"<div>{text(name)}: {text(stop_lines(result)[0][1])}</div>"
                for name, result in zip(self.names, (self.a, self.b), strict=True)
            )
            + f"<div>{escape(divergence_text(self.a, self.b, self.divergence))}</div></div>"
        )
        return data, meta
