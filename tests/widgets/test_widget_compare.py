"""CompareView and its pure view functions: two runs side by side, parted at their first
divergence, both cost curves on one chart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Completion, Price, Result, ScriptedModel, ToolCall, run, tool
from budgetloop_widgets import CompareView
from budgetloop_widgets._compare import compare_chart, compare_html, cost_points, divergence_text
from budgetloop_widgets._svg import lines_chart

PRICE = Price(3.00, 15.00)  # assumed rates for the tests
XSS = "<img src=x onerror=alert(1)>"


@tool
def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def a_run(second: str, *, ceiling: float = 0.05, answer: str = "done") -> Result:
    script: list[Any] = [
        Completion(text="first", tool_calls=[ToolCall("look", {"query": "a"}, "c1")]),
        Completion(text=second, tool_calls=[ToolCall("look", {"query": second}, "c2")]),
        answer,
    ]
    model = ScriptedModel(script, price=PRICE, max_output_tokens=100)
    return run(model, "go", tools=[look], budget=Budget(max_steps=5, max_cost_usd=ceiling))


def test_the_divergence_is_marked_open_and_first_after_the_folded_agreeing_steps() -> None:
    a, b = a_run("second"), a_run(f"other {XSS}")
    html = compare_html(a, b, ("bad", "fixed"))
    assert html.count('class="bl-compare-row bl-agreed" data-step="0"') == 1
    assert (
        '<details class="bl-agree"><summary>steps 0 to 0: the same in both runs '
        "(1 step, folded)</summary>"
    ) in html
    diverged = html.index('class="bl-compare-row bl-diverged" data-step="1"')
    assert html.index('id="bl-diverged">step 1: the runs part here</div>') < diverged
    assert html.index("</details>") < diverged  # the first row outside the fold
    assert re.search(r'bl-diverged" data-step="1"><div><details class="bl-step" '
                     r'data-step="1" open>', html)  # fmt: skip
    assert 'class="bl-compare-row bl-after" data-step="2"' in html
    assert "The runs agree on steps 0 to 0 and part at step 1" in html
    assert "other &lt;img src=x onerror=alert(1)&gt;" in html
    assert XSS not in html


def test_divergence_text_for_agreeing_runs_and_runs_parted_at_once() -> None:
    a = a_run("second")
    assert divergence_text(a, a, None) == (
        "The runs agree: all 3 steps the same in the model's text, tool calls and errors."
    )
    assert divergence_text(a, a, 0) == "The runs differ from the first step (step 0)."
    html = compare_html(a, a)
    assert "bl-diverged" not in html
    assert "steps 0 to 2: the same in both runs (3 steps, folded)" in html


def test_a_shorter_run_leaves_its_column_empty_past_its_end() -> None:
    a = a_run("second")
    b = run(ScriptedModel(["first"], price=PRICE, max_output_tokens=100), "go", tools=[look])
    html = compare_html(a, b, ("long", "short"))
    assert '<div class="bl-muted">short has no step 1: it ended before</div>' in html


def test_cost_points_and_the_chart_of_both_runs_against_the_ceilings() -> None:
    a, b = a_run("second"), a_run("other", ceiling=0.04)
    points = cost_points(a)
    assert points[0] == (0, 0.0)
    assert [x for x, _ in points] == [0, 1, 2, 3]
    assert points[-1][1] == pytest.approx(a.cost_usd)
    svg = compare_chart(a, b, 1, ("bad", "fixed"))
    assert svg.count("<polyline") == 2
    assert 'class="bl-series-0"' in svg
    assert 'class="bl-series-1"' in svg
    assert ">bad: max_cost_usd $0.05</text>" in svg
    assert ">fixed: max_cost_usd $0.04</text>" in svg
    assert ">part at step 1</text>" in svg
    same = compare_chart(a, a_run("other"), None, ("x", "y"))
    assert same.count('class="bl-ceiling"') == 1
    assert ">max_cost_usd $0.05</text>" in same
    assert "bl-marker" not in same


def test_lines_chart_refuses_a_third_line_and_draws_nothing_for_no_points() -> None:
    with pytest.raises(ValueError, match="lines_chart: at most 2 series, got 3"):
        lines_chart([("a", []), ("b", []), ("c", [])], title="t")
    assert "nothing spent yet" in lines_chart([("a", []), ("b", [])], title="t")


def test_compareview_opens_results_dicts_and_paths(tmp_path: Path) -> None:
    a, b = a_run("second"), a_run("other")
    path = tmp_path / "a.json"
    a.save(path)
    view = CompareView(path, b.to_dict(), names=("saved", "live"))
    assert view.divergence == 1
    assert view.a == a
    assert "bl-root" in view._dom_classes
    assert "mathjax_ignore" in view._dom_classes
    assert "<style>" in view.view.value
    assert CompareView(a, a).divergence is None
    with pytest.raises(
        TypeError, match=r"CompareView: source must be a Result, a dict from Result\.to_dict\(\)"
    ):
        CompareView(a, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CompareView: names must be a tuple of two str"):
        CompareView(a, b, names=("one",))  # type: ignore[arg-type]


def test_a_long_line_is_drawn_from_at_most_max_points() -> None:
    points = [(float(i), i / 1000) for i in range(1001)]
    svg = lines_chart([("long", points)], title="t", max_points=100)
    drawn = re.search(r'<polyline points="([^"]*)"', svg)
    assert drawn is not None
    assert len(drawn.group(1).split()) == 92  # every 11th of 1,001 (91 points), and the last


def test_bidi_and_zero_width_marks_are_shown_as_escapes() -> None:
    hidden = "left\u202eright\u200bjoined"
    a, b = a_run("second"), a_run(hidden, answer=hidden)
    view = CompareView(a, b, names=(hidden, "b"))
    for page in (compare_html(a, b, (hidden, "b")), view.view.value):
        assert "\u202e" not in page
        assert "\u200b" not in page
        assert "left\\u202eright\\u200bjoined" in page
