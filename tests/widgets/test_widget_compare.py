"""CompareView and its pure view functions: two runs side by side, parted at their first
divergence, both cost curves on one chart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Completion, Price, Result, ScriptedModel, ToolCall, run, tool
from budgetloop_widgets import CompareView, usd
from budgetloop_widgets._compare import compare_chart, cost_points, divergence_text
from budgetloop_widgets._page import asset
from budgetloop_widgets._svg import lines_chart
from tests.viewer_support import decode

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


def data_of(view: CompareView) -> dict[str, Any]:
    """What the widget sends the page, decoded as the page decodes it."""
    return decode(view.data)


def test_both_runs_go_to_the_page_with_the_divergence_chosen() -> None:
    a, b = a_run("second"), a_run(f"other {XSS}")
    view = CompareView(a, b, names=("bad", "fixed"), title="two <runs>")
    data = data_of(view)
    assert data["kind"] == "compare"
    assert data["title"] == "two <runs>"  # text: the page sets it with textContent
    assert data["divergence"] == 1
    assert view.selected == 1  # the row the page opens at: where the runs part
    assert data["divergence_text"] == (
        "The runs agree on step 0 and part at step 1: the model's text, tool calls or error "
        "differ there."
    )
    strings = data["strings"]
    first, second = data["runs"]
    assert [strings[first["name"]], strings[second["name"]]] == ["bad", "fixed"]
    assert [strings[i] for i in second["steps"]["text"]] == ["first", f"other {XSS}", "done"]
    assert first["messages"] is None  # CompareView shows no context
    # each chart of the runs, both runs on it: input tokens per step, and the cost so far
    assert len(data["charts"]) == 2
    assert [re.findall(r"<title>([^<]*)</title>", svg)[0] for svg in data["charts"]] == [
        "input tokens per step, reported, both runs",
        "cost so far, both runs",
    ]
    # coloured by the page's stylesheet
    assert all("<polyline" in svg and " style=" not in svg for svg in data["charts"])
    assert view.summary() == (
        "CompareView of 'bad' and 'fixed': The runs agree on step 0 and part at step 1: the "
        "model's text, tool calls or error differ there."
    )


def test_divergence_text_for_agreeing_runs_and_runs_parted_at_once() -> None:
    a = a_run("second")
    assert divergence_text(a, a, None) == (
        "The runs agree: all 3 steps the same in the model's text, tool calls and errors."
    )
    assert divergence_text(a, a, 0) == "The runs differ from the first step (step 0)."
    assert divergence_text(a, a, 2) == (
        "The runs agree on steps 0 to 1 and part at step 2: the model's text, tool calls or "
        "error differ there."
    )
    same = CompareView(a, a)
    assert same.divergence is None
    assert same.selected == -1  # the folded row of agreeing steps
    assert data_of(same)["divergence"] is None


def test_a_fork_carries_its_source_spend_on_the_chart_and_the_banner() -> None:
    # item 2 of issue 19: a fork's steps add up to less than it spent; the view says why
    model = ScriptedModel(
        [
            Completion(text="first", tool_calls=[ToolCall("look", {"query": "a"}, "c1")]),
            Completion(text="second", tool_calls=[ToolCall("look", {"query": "b"}, "c2")]),
            "done",
            "fixed",
        ],
        price=PRICE,
        max_output_tokens=100,
    )
    from budgetloop import start

    source = start(model, "go", tools=[look], budget=Budget(max_steps=5, max_cost_usd=0.05))
    bad = source.run()
    fixed = source.fork(2).run()
    carried = fixed.carried_usd
    assert carried == pytest.approx(bad.steps[2].cost_usd)
    points = cost_points(fixed)
    assert points[0] == (0, carried)
    assert points[-1][1] == pytest.approx(fixed.cost_usd)
    data = data_of(CompareView(bad, fixed, names=("bad", "fixed")))
    head = data["strings"][data["runs"][1]["banner"][0][1]]
    assert head == (
        f"Run ended: answered · 3 steps taken · {usd(fixed.cost_usd)} spent ({usd(carried)} of "
        "it carried from the run this one was forked from, "
        f"{usd(fixed.cost_usd - carried)} by the steps here)"
    )


def test_cost_points_and_the_chart_of_both_runs_against_the_ceilings() -> None:
    a, b = a_run("second"), a_run("other", ceiling=0.04)
    points = cost_points(a)
    assert points[0] == (0, 0.0)  # a run that was not forked starts at nothing
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
    with pytest.raises(ValueError, match=r"^lines_chart: series must be at most 2, got 3\.$"):
        lines_chart([("a", []), ("b", []), ("c", [])], title="t")
    assert "nothing spent yet" in lines_chart([("a", []), ("b", [])], title="t")


def test_compareview_opens_results_dicts_and_paths(tmp_path: Path) -> None:
    a, b = a_run("second"), a_run("other")
    path = tmp_path / "a.json"
    a.save(path)
    view = CompareView(path, b.to_dict(), names=("saved", "live"))
    assert view.divergence == 1
    assert view.a == a
    assert view._esm == asset("viewer.js")
    assert CompareView(a, a).divergence is None
    with pytest.raises(
        TypeError, match=r"CompareView: source must be a Result, a dict from Result\.to_dict\(\)"
    ):
        CompareView(a, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CompareView: names must be a tuple of two str"):
        CompareView(a, b, names=("one",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CompareView: title must be a str, got int"):
        CompareView(a, b, title=3)  # type: ignore[arg-type]


def test_without_the_widget_a_notebook_shows_a_summary() -> None:
    # item 9 of issue 19: what a saved notebook shows where the widget is not drawn
    a, b = a_run("second"), a_run(f"other {XSS}")
    data, _meta = CompareView(a, b, names=("bad", f"{XSS}"))._repr_mimebundle_()
    assert data["text/plain"].startswith("CompareView of 'bad' and '<img")
    page = data["text/html"]
    assert XSS not in page
    assert "&lt;img src=x onerror=alert(1)&gt;: Run ended: answered · 3 steps taken" in page
    assert "The runs agree on step 0 and part at step 1" in page
    assert "application/vnd.jupyter.widget-view+json" in data


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
    strings = decode(view.data)["strings"]  # what the page gets: every text escaped once
    assert not [s for s in strings if "\u202e" in s or "\u200b" in s]
    assert "left\\u202eright\\u200bjoined" in strings


def _texts(svg: str) -> list[tuple[float, float, str, str]]:
    """Each text of a chart: x, y, its anchor and what it says (a tooltip's text left out)."""
    out = []
    for m in re.finditer(r"<text ([^>]*)>(.*?)</text>", svg):
        attrs, body = m.group(1), re.sub(r"<title>.*?</title>", "", m.group(2))
        x = float(re.search(r'\bx="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        y = float(re.search(r'\by="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        anchor = re.search(r'text-anchor="(\w+)"', attrs)
        out.append((x, y, anchor.group(1) if anchor else "start", body))
    return out


def _span(x: float, anchor: str, body: str) -> tuple[float, float]:
    width = len(body) * 6.6  # the charts' width budget of an 11px character
    return {"end": (x - width, x), "middle": (x - width / 2, x + width / 2)}.get(
        anchor, (x, x + width)
    )


def test_the_compare_chart_keys_its_lines_and_no_label_crosses_another_or_the_marker() -> None:
    # issue 29, item 7: the divergence label overlapped the run names, the divergence line
    # crossed a ceiling's label, and the two runs' lines had no key
    names = ("recorded run", "the replay under a lower ceiling")

    def script() -> list[Any]:
        return [Completion(text="looking", tool_calls=[ToolCall("look", {"query": f"q{i}" * 40})])
                for i in range(8)] + ["done"]  # fmt: skip

    a = run(ScriptedModel(script(), price=PRICE, max_output_tokens=300), "go", tools=[look],
            budget=Budget(max_steps=12, max_cost_usd=0.05))  # fmt: skip
    b = run(ScriptedModel(script(), price=PRICE, max_output_tokens=300), "go", tools=[look],
            budget=Budget(max_steps=12, max_cost_usd=0.03))  # fmt: skip
    at = 3
    svg = compare_chart(a, b, at, names)
    texts = _texts(svg)
    keys = re.findall(r'<g class="bl-key">.*?</g>', svg)
    assert [re.search(r"<text[^>]*>(.*?)</text>", k).group(1) for k in keys] == list(names)  # type: ignore[union-attr]
    assert 'class="bl-series-0"' in svg
    assert 'class="bl-series-1"' in svg
    marker = float(re.search(r'class="bl-marker" x1="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    ceilings = [t for t in texts if "max_cost_usd" in t[3]]
    assert [t[3][-5:] for t in ceilings] == ["$0.05", "$0.03"]  # each keeps its figure
    for x, _y, anchor, body in ceilings:
        lo, hi = _span(x, anchor, body)
        assert not lo <= marker <= hi, (body, lo, hi, marker)  # the marker clears the label
        assert lo >= 0
        assert hi <= 400
    label = next(t for t in texts if t[3] == "part at step 3")
    assert label[1] > 30  # under the title and the top of the plot, clear of the key below
    boxes = [(*_span(x, anchor, body), y) for x, y, anchor, body in texts]
    for i, (lo, hi, y) in enumerate(boxes):
        for lo2, hi2, y2 in boxes[i + 1 :]:
            assert not (abs(y - y2) < 11 and lo < hi2 and lo2 < hi), (texts[i], (lo2, hi2, y2))
