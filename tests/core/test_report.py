"""budget_report: percentiles of cost and steps, who was stopped by what, the ceilings that let
p% of the runs answer (from the projections their guards checked), and the daily exposure."""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    BudgetReport,
    Completion,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    Usage,
    budget_report,
    run,
    run_many,
)


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def message(kind: type[Exception], call: Callable[[], Any]) -> str:
    """What ``call()`` raised, of ``kind``, in words."""
    with pytest.raises(kind) as caught:
        call()
    return str(caught.value)


def one_run(turns: int, max_steps: int = 10) -> Result:
    """``turns`` model calls to an answer, each sent 1,000 tokens and writing 50 of at most 100,
    at $1 per million: a turn costs $0.00105 and is projected at $0.0011."""
    script: list[Any] = [
        Completion(tool_calls=[ToolCall("echo", {"text": f"t{i}"})], usage=Usage(1000, 50))
        for i in range(turns - 1)
    ]
    script.append(Completion(text="done", usage=Usage(1000, 50)))
    model = ScriptedModel(script, price=Price(1.0, 1.0), max_output_tokens=100)
    return run(
        model,
        "go",
        tools=[echo],
        count_tokens=lambda m, t: 1000,
        budget=Budget(max_steps=max_steps, max_cost_usd=1.0),
    )


@pytest.fixture(scope="module")
def runs() -> list[Result]:
    return [one_run(1), one_run(2), one_run(3), one_run(4), one_run(5, max_steps=2)]


def test_the_numbers(runs: list[Result]) -> None:
    report = budget_report(runs, percentiles=[50, 80, 90], runs_per_day=1000)
    assert report.runs == 5
    assert report.names == ("#0", "#1", "#2", "#3", "#4")
    assert report.cost_usd == {50: 0.0021, 80: 0.00315, 90: 0.0042}
    assert report.steps == {50: 2, 80: 3, 90: 4}
    assert report.total_cost_usd == 0.0126
    assert report.mean_cost_usd == 0.0126 / 5
    assert report.stops == {"answered": ("#0", "#1", "#2", "#3"), "max_steps": ("#4",)}
    # a run of k turns needed (k - 1) x 0.00105 spent + 0.0011 projected
    assert report.max_cost_usd == {50: 0.0032, 80: 0.00425, 90: None}
    assert report.max_steps == {50: 3, 80: 4, 90: None}
    assert report.ceilings["max_input_tokens"] == {50: 1000, 80: 1000, 90: None}
    assert report.daily_expected_usd == pytest.approx(2.52, abs=1e-12)
    assert report.daily_worst_usd == {50: 3.2, 80: 4.25, 90: None}
    assert report.budget(50) == Budget(max_steps=3, max_cost_usd=0.0032, max_input_tokens=1000)


def rerun(turns: int, budget: Budget) -> str:
    model = ScriptedModel(
        [
            *[
                Completion(tool_calls=[ToolCall("echo", {"text": f"t{i}"})], usage=Usage(1000, 50))
                for i in range(turns - 1)
            ],
            Completion(text="done", usage=Usage(1000, 50)),
        ],
        price=Price(1.0, 1.0),
        max_output_tokens=100,
    )
    result = run(model, "go", tools=[echo], count_tokens=lambda m, t: 1000, budget=budget)
    assert result.stop is not None
    return result.stop.value


def test_each_suggested_ceiling_lets_exactly_that_many_finish(runs: list[Result]) -> None:
    budget = budget_report(runs[:4], percentiles=[75]).budget(75)
    assert budget == Budget(max_steps=3, max_cost_usd=0.0032, max_input_tokens=1000)
    by_cost = Budget(max_steps=None, max_cost_usd=budget.max_cost_usd)
    by_steps = Budget(max_steps=budget.max_steps)
    assert [rerun(k, by_cost) for k in (1, 2, 3, 4)] == ["answered"] * 3 + ["max_cost_usd"]
    assert [rerun(k, by_steps) for k in (1, 2, 3, 4)] == ["answered"] * 3 + ["max_steps"]
    one_pico_less = Budget(max_steps=None, max_cost_usd=0.003199999999)
    assert rerun(3, one_pico_less) == "max_cost_usd"
    by_tokens = Budget(max_steps=None, max_input_tokens=budget.max_input_tokens)
    assert [rerun(k, by_tokens) for k in (1, 2, 3, 4)] == ["answered"] * 4
    one_token_less = Budget(max_steps=None, max_input_tokens=999)
    assert [rerun(k, one_token_less) for k in (1, 4)] == ["max_input_tokens"] * 2


def test_readable_text(runs: list[Result]) -> None:
    report = budget_report(runs, percentiles=[50, 90], runs_per_day=1000)
    assert str(report) == "\n".join(
        [
            "5 runs, $0.0126 in all, $0.00252 a run on average",
            "",
            "                             p50         p90",
            "  run cost               $0.0021     $0.0042",
            "  steps                        2           4",
            "",
            "stopped by:",
            "  answered                     4  #0, #1, #2, ... (+1)",
            "  max_steps                    1  #4",
            "",
            "ceilings that would have let p% of these runs answer:",
            "  max_steps                    3           -",
            "  max_cost_usd           $0.0032           -",
            "  max_input_tokens          1000           -",
            "  (-: fewer than p% of the runs answered; raise the ceilings to learn it)",
            "",
            "daily exposure at 1,000 runs a day:",
            "  expected (mean)          $2.52",
            "  worst at ceiling         $3.20           -",
        ]
    )


def test_from_a_folder_of_traces_written_by_run_many(tmp_path: Path) -> None:
    def model(messages: Any, tools: Any) -> Completion:
        return Completion(text="ok", usage=Usage(10, 1))

    results = run_many(
        model, ["a", "b", "c"], trace_dir=tmp_path, progress=False, price=Price(1.0, 1.0)
    )
    (tmp_path / "notes.txt").write_text("not a trace")
    from_folder = budget_report(tmp_path)
    assert from_folder.names == ("run-0000.jsonl", "run-0001.jsonl", "run-0002.jsonl")
    assert from_folder.stops == {"answered": from_folder.names}
    assert (
        from_folder.cost_usd
        == budget_report(results).cost_usd
        == {50: 11e-6, 90: 11e-6, 95: 11e-6, 99: 11e-6}
    )
    mixed = budget_report([tmp_path / "run-0000.jsonl", results[1].to_dict(), results[2]])
    assert mixed.names == ("run-0000.jsonl", "#1", "#2")
    assert budget_report(tmp_path / "run-0001.jsonl").runs == 1
    assert budget_report(results[0]).runs == 1


@pytest.mark.parametrize(
    ("traces", "options", "error", "message"),
    [
        ([], {}, ValueError, "budget_report: traces must be at least one trace, got none."),
        (
            3,
            {},
            TypeError,
            "budget_report: traces must be a folder, a trace file, or a list of paths, Results and trace dicts, got int.",
        ),
        (
            [3],
            {},
            TypeError,
            "budget_report: traces[0] must be a path, a Result or a trace dict, got int.",
        ),
        (
            [None],
            {},
            TypeError,
            "budget_report: traces[0] must be a path, a Result or a trace dict, got None.",
        ),
        (
            [{"format": "x"}],
            {},
            ValueError,
            "Result.from_dict: format must be 'budgetloop-trace', got 'x': not a budgetloop trace.",
        ),
        (
            None,
            {"percentiles": [0]},
            ValueError,
            "budget_report: percentiles must be 0 < p <= 100, got 0.",
        ),
        (
            None,
            {"percentiles": [101]},
            ValueError,
            "budget_report: percentiles must be 0 < p <= 100, got 101.",
        ),
        (
            None,
            {"percentiles": [math.nan]},
            ValueError,
            "budget_report: percentiles must be 0 < p <= 100, got nan.",
        ),
        (
            None,
            {"percentiles": ["50"]},
            TypeError,
            "budget_report: percentiles must be numbers, got str.",
        ),
        (
            None,
            {"percentiles": 50},
            TypeError,
            "budget_report: percentiles must be a list of numbers, got int.",
        ),
        (
            None,
            {"percentiles": []},
            ValueError,
            "budget_report: percentiles must be at least one number, got an empty list.",
        ),
        (
            None,
            {"runs_per_day": 0},
            ValueError,
            "budget_report: runs_per_day must be a finite number > 0, got 0.",
        ),
        (
            None,
            {"runs_per_day": math.inf},
            ValueError,
            "budget_report: runs_per_day must be a finite number > 0, got inf.",
        ),
        (
            None,
            {"runs_per_day": "9"},
            TypeError,
            "budget_report: runs_per_day must be a number, got str.",
        ),
    ],
)
def test_bad_input(
    runs: list[Result], traces: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        budget_report(runs if traces is None else traces, **options)
    assert str(info.value) == message


def test_an_empty_folder_and_an_unknown_percentile(tmp_path: Path, runs: list[Result]) -> None:
    assert message(ValueError, lambda: budget_report(tmp_path)) == (
        "budget_report: traces must be a folder that holds *.json or *.jsonl traces, "
        f"got {str(tmp_path)!r}, which holds none."
    )
    report = budget_report(runs, percentiles=[50, 90])
    assert message(ValueError, lambda: report.budget(95)) == (
        "BudgetReport.budget: percentile must be one of the report's [50, 90], got 95."
    )
    assert message(ValueError, lambda: report.budget(90)) == (
        "BudgetReport.budget: the runs that answered must be at least 90% of the 5 runs, "
        "got 4, so no ceiling from these traces lets that many finish."
    )
    assert isinstance(report, BudgetReport)


# -- files that are not traces, names that are not plain, costs past a float ---------------------


def test_a_file_that_cannot_be_read_is_skipped_and_the_report_says_which_and_why(
    tmp_path: Path, runs: list[Result]
) -> None:
    runs[0].save(tmp_path / "a.json")
    runs[4].save(tmp_path / "b.json")
    (tmp_path / "loop.json").symlink_to("loop.json")
    (tmp_path / "gone.json").symlink_to("nowhere.json")
    (tmp_path / "cut.jsonl").write_text('{"kind": "header"}\n{"kind": "st\n')
    (tmp_path / "old.json").mkdir()
    report = budget_report(tmp_path, percentiles=[50])
    assert (report.runs, report.names) == (2, ("a.json", "b.json"))
    loop, gone = os.strerror(errno.ELOOP), os.strerror(errno.ENOENT)
    assert report.skipped == (
        (
            "cut.jsonl",
            "line 1: format must be 'budgetloop-trace', got None: not a budgetloop trace.",
        ),
        ("gone.json", f"cannot be read: {gone}."),
        ("loop.json", f"cannot be read: {loop}."),
        ("old.json", "the file must be a regular file, got a directory; nothing was read."),
    )
    assert str(report).splitlines() == [
        "2 runs (4 files skipped, listed below), $0.00315 in all, $0.001575 a run on average",
        "",
        "                             p50",
        "  run cost              $0.00105",
        "  steps                        1",
        "",
        "stopped by:",
        "  answered                     1  a.json",
        "  max_steps                    1  b.json",
        "",
        "ceilings that would have let p% of these runs answer:",
        "  max_steps                    1",
        "  max_cost_usd           $0.0011",
        "  max_input_tokens          1000",
        "",
        "skipped, not read as traces (4):",
        "  cut.jsonl: line 1: format must be 'budgetloop-trace', got None: not a budgetloop trace.",
        f"  gone.json: cannot be read: {gone}.",
        f"  loop.json: cannot be read: {loop}.",
        "  old.json: the file must be a regular file, got a directory; nothing was read.",
    ]


def test_when_no_file_can_be_read_the_error_lists_them(tmp_path: Path) -> None:
    (tmp_path / "loop.json").symlink_to("loop.json")
    (tmp_path / "empty.json").write_text("")
    assert message(
        ValueError, lambda: budget_report([tmp_path / "empty.json", tmp_path / "loop.json"])
    ) == (
        "budget_report: traces must be at least one trace that can be read, got 2 that cannot "
        "(empty.json: the file must be JSON, got text that is not (Expecting value: line 1 column 1 (char 0)).; "
        f"loop.json: cannot be read: {os.strerror(errno.ELOOP)}.)."
    )


def test_a_file_name_cannot_forge_a_row(tmp_path: Path, runs: list[Result]) -> None:
    forged = "x.json\n  max_steps                  999  all of them\u202e.json"
    runs[0].save(tmp_path / forged)
    (tmp_path / "bad\nrow\u200b.json").write_text("{")
    report = budget_report(tmp_path, percentiles=[50])
    assert report.names == (forged,)  # the data keeps the name as it is
    lines = str(report).splitlines()
    assert lines[6:9] == [
        "stopped by:",
        "  answered                     1  x.json\\n  max_steps                  999  all of"
        " them\\u202e.json",
        "",
    ]
    assert lines[-2:] == [
        "skipped, not read as traces (1):",
        "  bad\\nrow\\u200b.json: the file must be JSON, got text that is not (Expecting property name enclosed in double"
        " quotes: line 1 column 2 (char 1)).",
    ]


def test_a_ceiling_past_a_float_makes_no_budget() -> None:
    data = one_run(2).to_dict()
    data["cost_usd"] = 1.7e308
    data["steps"][0]["cost_usd"], data["steps"][1]["cost_usd"] = 1e308, 0.7e308
    for step in data["steps"]:
        step["projection"].update(cost_usd=1.7e308, limit_usd=None)
    data["steps"][1]["projection"]["spent_usd"] = 1e308  # it needed 2.7e308 to be let through
    report = budget_report([Result.from_dict(data)], percentiles=[50])
    assert report.max_cost_usd == {50: math.inf}
    assert message(ValueError, lambda: report.budget(50)) == (
        "BudgetReport.budget: the max_cost_usd ceiling for p50 must be within a float's range, "
        "got one past it, so no Budget can hold it."
    )


def test_costs_past_a_float_are_reported_not_raised(tmp_path: Path) -> None:
    data = one_run(1).to_dict()
    data["cost_usd"] = data["steps"][0]["cost_usd"] = 1e308
    results = [Result.from_dict(data), Result.from_dict(data), one_run(1)]
    report = budget_report(results, percentiles=[50, 90], runs_per_day=10)
    assert report.total_cost_usd == math.inf  # 2e308: past a float's range
    assert report.mean_cost_usd == 6.666666666666666e307  # added exactly, then divided
    assert report.max_cost_usd == {50: 1e308, 90: 1e308}
    assert str(report).splitlines() == [
        "3 runs, >$1.8e+308 in all, $6.667e+307 a run on average",
        "",
        "                             p50         p90",
        "  run cost           $1.000e+308 $1.000e+308",
        "  steps                        1           1",
        "",
        "stopped by:",
        "  answered                     3  #0, #1, #2",
        "",
        "ceilings that would have let p% of these runs answer:",
        "  max_steps                    1           1",
        "  max_cost_usd       $1.000e+308 $1.000e+308",
        "  max_input_tokens          1000        1000",
        "",
        "daily exposure at 10 runs a day:",
        "  expected (mean)     >$1.8e+308",
        "  worst at ceiling    >$1.8e+308  >$1.8e+308",
    ]


def test_a_worst_at_ceiling_below_the_mean_says_why() -> None:
    # four runs of one turn ($0.00105 each) and one of 20 turns ($0.021): the mean is $0.00504,
    # and the ceiling that lets half of them answer is one turn's worst case, $0.0011
    results = [one_run(1) for _ in range(4)] + [one_run(20, max_steps=20)]
    report = budget_report(results, percentiles=[50, 100], runs_per_day=1000)
    assert report.daily_expected_usd == pytest.approx(5.04, abs=1e-12)
    assert report.daily_worst_usd == {50: 1.1, 100: pytest.approx(21.05, abs=1e-12)}
    assert str(report).splitlines()[-5:] == [
        "daily exposure at 1,000 runs a day:",
        "  expected (mean)          $5.04",
        "  worst at ceiling         $1.10      $21.05",
        "  (worst at ceiling is below the mean at p50: a run that cost more than that",
        "  ceiling would have been stopped at it; the mean counts it at its full cost)",
    ]


def test_a_run_of_unknown_cost_makes_every_money_figure_unknown(runs: list[Result]) -> None:
    steps = tuple(replace(s, cost_usd=None, projection=None) for s in runs[1].steps)
    imported = replace(runs[1], cost_usd=None, steps=steps)
    report = budget_report([imported, runs[0], runs[2]], percentiles=[50, 90], runs_per_day=10)
    assert report.unknown_cost == ("#0",)
    assert report.cost_usd == {50: None, 90: None} == report.max_cost_usd
    assert (report.mean_cost_usd, report.total_cost_usd, report.daily_expected_usd) == (None,) * 3
    assert report.max_steps == {50: 2, 90: 3}  # what the traces do hold is still reported
    assert str(report) == "\n".join(
        [
            "3 runs, unknown in all, unknown a run on average",
            "cost unknown for 1: #0",
            "",
            "                             p50         p90",
            "  run cost               unknown     unknown",
            "  steps                        2           3",
            "",
            "stopped by:",
            "  answered                     3  #0, #1, #2",
            "",
            "ceilings that would have let p% of these runs answer:",
            "  max_steps                    2           3",
            "  max_cost_usd           unknown     unknown",
            "  max_input_tokens          1000        1000",
            "  (unknown: replay the runs of unknown cost with a price= to learn it)",
            "",
            "daily exposure at 10 runs a day:",
            "  expected (mean)        unknown",
            "  worst at ceiling       unknown     unknown",
        ]
    )
    assert message(ValueError, lambda: report.budget(50)) == (
        "BudgetReport.budget: the cost of every run must be known, got 1 of the 3 runs unknown "
        "(their traces hold none), so no cost ceiling can be derived; replay them with a price= "
        "first."
    )
