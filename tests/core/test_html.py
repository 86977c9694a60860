"""Result._repr_html_: with the widgets' extra installed, the viewer of ``to_html`` (tested in
tests/widgets/test_widget_html.py); without it, the core's static, script-free view of a run (here),
escaped like the widgets."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    Message,
    Price,
    Projection,
    Result,
    ScriptedModel,
    Step,
    Stop,
    ToolCall,
    Usage,
    run,
    tool,
)
from budgetloop._rules._budget import cost_detail
from budgetloop._trace._html import render
from budgetloop.display import projection_text, worst_case_text

XSS = "<img src=x onerror=alert(1)>"
XSS_SHOWN = "&lt;img src=x onerror=alert(1)&gt;"


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up
    """
    if topic == "missing":
        raise LookupError(f"no notes on {XSS}")
    return f"notes on {topic}: {XSS}\x1b[31m"


def finished() -> Result:
    model = ScriptedModel(
        [
            Completion(text=f"first {XSS}", tool_calls=[ToolCall("lookup", {"topic": "a"})]),
            Completion(text="second", tool_calls=[ToolCall("lookup", {"topic": "missing"})]),
            f"the answer is $0.03 and $0.05 {XSS}",
        ]
    )
    return run(model, "go", tools=[lookup])


def test_a_bare_result_renders_every_step_as_a_row_and_a_card() -> None:
    result = finished()
    html = render(result)
    assert html.startswith('<div class="blh tex2jax_ignore mathjax_ignore">')
    assert "Run ended: answered · 3 steps taken · $0.00 spent" in html
    assert re.findall(r'<tr data-step="(\d+)">', html) == ["0", "1", "2"]
    assert re.findall(r'<details id="blh-step-(\d+)">', html) == ["0", "1", "2"]
    assert '<a href="#blh-step-1">first error (step 1)</a>' in html
    assert '<a href="#blh-step-2">the stop (step 2)</a>' in html
    assert "first skipped" not in html  # no call was skipped
    assert "6 messages in the context" in html


def test_everything_the_model_and_tools_wrote_is_escaped() -> None:
    html = render(finished())
    assert "<img" not in html
    assert "<script" not in html
    # the first text and the answer (row and card each), the result, the error, the answer box
    assert html.count(XSS_SHOWN) == 7
    assert "\x1b" not in html
    assert "\\x1b[31m" in html


def test_nothing_loads_from_anywhere() -> None:
    html = render(finished())
    assert not re.search(r"(src|href)=\"(?!#)", html)
    assert "url(" not in html
    assert "@import" not in html


def test_a_long_run_draws_the_first_and_last_cards_and_lists_every_row() -> None:
    steps = tuple(
        Step(
            i, f"step {i}", (), Usage(10, 1), 0.001, Projection(9, 1, 0.001, 0.0, None, True), 0.0
        )
        for i in range(2_500)
    )
    result = Result(Stop.MAX_STEPS, None, steps, (Message("user", "go"),), 2.5, 1.0,
                    Budget(max_steps=2_500))  # fmt: skip
    html = render(result)
    assert html.count("<tr data-step=") == 2_500
    cards = [int(i) for i in re.findall(r'<details id="blh-step-(\d+)">', html)]
    assert cards == [*range(500), *range(2_000, 2_500)]
    assert "1,500 steps in the middle not drawn as cards (the table lists every step)" in html
    # reported 10 input tokens against 9 projected: under-projected from step 0
    assert '<a href="#blh-step-0">first under-projected (step 0)</a>' in html
    assert "under-projected by 1 input token<" in html


def test_a_run_without_steps_and_a_skipped_call() -> None:
    empty = Result(Stop.MAX_COST_USD, None, (), (), 0.0, 0.0, detail=f"over {XSS}")
    html = render(empty)
    assert "Run ended: max_cost_usd — did NOT answer · 0 steps taken" in html
    assert f"over {XSS_SHOWN}" in html
    assert "<nav>" not in html
    skipped = CallRecord("lookup", "c", {}, None, "skipped", error="the run stopped")
    step = Step(0, None, (skipped,), None, 0.0, Projection(5, None, None, 0.0, None, True), 0.0)
    one = render(Result(Stop.MAX_TOOL_CALLS, None, (step,), (), 0.0, 0.0))
    assert '<a href="#blh-step-0">first skipped (step 0)</a>' in one
    assert "$0.00 charged at the projection, no usage reported" in one


def test_a_projection_without_max_output_tokens_reads_0_out_as_every_view_says_it() -> None:
    # no max_output_tokens: the reply's output is not counted, so the page says 0 out (as the
    # cost was projected, and as the panel and the viewer say it), never "?"
    result = run(ScriptedModel(["hi"]), "go " * 1500, price=Price(3, 15))
    p = result.steps[0].projection
    assert p is not None
    assert p.output_tokens is None
    html = render(result)
    assert (
        '<div class="muted">before it, projected: 1,507 in + 0 out tokens = $0.004521 (0 output '
        "tokens assumed: no max_output_tokens is set)</div>"
    ) in html
    assert projection_text(p).startswith("projected: 1,507 in + 0 out tokens = $0.004521; ")
    assert worst_case_text(p) == "0 output tokens assumed: no max_output_tokens is set"
    # and a stop's detail, where a ceiling refuses such a projection
    refused = Projection(1_507, None, 0.004521, 0.0081, 0.01, False)
    assert cost_detail(refused) == (
        "next turn projected $0.004521 (1,507 in + 0 out tokens) on $0.0081 spent exceeds "
        "max_cost_usd=$0.01"
    )


def test_a_bare_result_is_the_viewer_with_the_widgets_and_the_static_view_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = finished()
    try:
        import budgetloop_widgets  # noqa: F401
    except ImportError:  # the core alone (the other Pythons' runs): the static view
        assert result._repr_html_() == render(result)
        return
    assert result._repr_html_().startswith('<div class="blv-page" data-blv="">')
    monkeypatch.setitem(sys.modules, "budgetloop_widgets._page", None)  # as if not installed
    assert result._repr_html_() == render(result)


def registered(folder: Path, name: str, viewers: dict[str, str]) -> None:
    """A package installed in ``folder`` (its metadata only) that registers ``viewers``."""
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{key} = {value}\n" for key, value in viewers.items())
    (info / "entry_points.txt").write_text(f"[budgetloop.viewers]\n{lines}")


def test_the_viewer_is_whatever_a_package_registers_and_the_core_names_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The core finds the page a bare result shows through the entry-point group, not an import
    # of budgetloop_widgets: hide the widgets' own entry, then register others.
    monkeypatch.setitem(sys.modules, "budgetloop_widgets._page", None)
    result = finished()
    (tmp_path / "other_viewer.py").write_text(
        "def page(result):\n    return f'<p>{len(result.steps)} steps, by other_viewer</p>'\n"
    )
    registered(tmp_path, "broken_viewer", {"broken": "no_such_module_here:page"})
    registered(tmp_path, "other_viewer", {"other": "other_viewer:page"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert result._repr_html_() == "<p>3 steps, by other_viewer</p>"  # the broken one passed over
    monkeypatch.setitem(sys.modules, "other_viewer", None)  # its module no longer imports
    assert result._repr_html_() == render(result)


def test_a_fitted_turn_is_said_on_the_panels_projection_line_and_the_static_page() -> None:
    price = Price(3.0, 15.0)
    model = ScriptedModel(["a" * 9000], price=price, max_output_tokens=1000)
    tokens = run(model, "go").steps[0].projection.input_tokens  # type: ignore[union-attr]
    model.reset()
    result = run(model, "go", budget=Budget(max_cost_usd=price.cost(tokens, 312)),
                 min_output_tokens=100)  # fmt: skip
    projection = result.steps[0].projection
    assert projection is not None
    said = "asked for 312 of 1,000 output tokens: what the budget had left"
    assert projection_text(projection).endswith("of max_cost_usd $0.004704: fits; " + said)
    assert said in render(result)
    assert said not in render(run(model.__class__(["ok"], price=price, max_output_tokens=9), "go"))
