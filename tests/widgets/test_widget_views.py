"""The pure view layer of budgetloop_widgets: data in, text and markup out, no kernel."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    NextTurn,
    Price,
    Projection,
    Result,
    ScriptedModel,
    Step,
    Stop,
    ToolCall,
    Usage,
    load_trace,
    printable,
    run,
    tool,
)
from budgetloop.display import columns_of, read_columns
from budgetloop_widgets import TraceView, _text, bar_chart, line_chart, projection_text, usd
from budgetloop_widgets._status import stop_html
from budgetloop_widgets._svg import bucketed, nice_top
from budgetloop_widgets._text import count, plural, text
from budgetloop_widgets._views import (
    Used,
    as_result,
    charts_html,
    meter_html,
    worst_case_text,
)

XSS = "<img src=x onerror=alert(1)>"
XSS_SHOWN = "&lt;img src=x onerror=alert(1)&gt;"


def projection(fits: bool = True, **changes: object) -> Projection:
    fields: dict[str, object] = {
        "input_tokens": 1234,
        "output_tokens": 500,
        "cost_usd": 0.011202,
        "spent_usd": 0.03,
        "limit_usd": 0.05,
        "fits": fits,
    }
    fields.update(changes)
    return Projection(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.585, "$0.585"),
        (1.77, "$1.77"),
        (3.0, "$3.00"),
        (0.0, "$0.00"),
        (0.000123, "$0.000123"),
        (1234.5, "$1,234.50"),
        (0.20523, "$0.20523"),
        (1e6, "$1,000,000.00"),
        (2e-8, "$2.0e-08"),
        (None, "unknown"),
    ],
)
def test_usd(value: float | None, shown: str) -> None:
    assert usd(value) == shown


def test_projection_text_says_whether_the_turn_fits() -> None:
    assert projection_text(projection()) == (
        "projected: 1,234 in + 500 out tokens = $0.011202; "
        "spent $0.03 + $0.011202 = $0.041202 of max_cost_usd $0.05: fits"
    )
    assert projection_text(projection(fits=False)).endswith(": does NOT fit")
    assert projection_text(projection(limit_usd=None)).endswith("= $0.041202, no max_cost_usd")
    assert projection_text(projection(cost_usd=None, output_tokens=None)) == (
        "projected: 1,234 in + 0 out tokens; no price, so no cost projected"
    )


def test_meter_warns_only_when_the_next_turn_would_not_fit_and_the_run_goes_on() -> None:
    used = Used(steps=3, seconds=1.5, tool_calls=4)
    budget = Budget(max_steps=10, max_cost_usd=0.05, max_tool_calls=20)
    p, unfit = projection(), projection(fits=False)
    fits = meter_html(p, used, budget, done=False, next_turn=NextTurn("call", None, None, p))
    stop = NextTurn("stop", Stop.MAX_COST_USD, "next turn projected ...", unfit)
    over = meter_html(unfit, used, budget, done=False, next_turn=stop)
    ended = meter_html(unfit, used, budget, done=True, next_turn=stop)
    assert "bl-warn" not in fits
    assert (
        '<div class="bl-warn">The next step will not call the model: the run stops there '
        "(max_cost_usd): next turn projected ....</div>"  # the core's detail, as it is
    ) in over
    assert "bl-warn" not in ended
    for html in (fits, over):
        assert "<b>steps taken</b> 3 of max_steps 10" in html
        assert "<b>seconds</b> 1.50 (no max_seconds)" in html
        assert "<b>tool calls run</b> 4 of max_tool_calls 20" in html
        assert "<b>input tokens, next request</b> 1,234 (no max_input_tokens)" in html
        assert "worst case: 500 output tokens assumed: max_output_tokens;" in html
    assert projection_text(projection()) in fits
    assert 'class="bl-next bl-over"' in over
    assert 'class="bl-next bl-over"' not in fits


def test_counts_and_ceilings_have_thousands_separators() -> None:
    # issue 19, item 6: "12433 in" next to "3,138 in"; every count is written by count()
    used = Used(steps=12_433, seconds=3.5, tool_calls=1_234)
    budget = Budget(max_steps=100_000, max_seconds=3600.0, max_tool_calls=50_000)
    html = meter_html(projection(), used, budget, done=False)
    assert "<b>steps taken</b> 12,433 of max_steps 100,000" in html
    assert "<b>seconds</b> 3.50 of max_seconds 3,600" in html
    assert "<b>tool calls run</b> 1,234 of max_tool_calls 50,000" in html


def test_meter_without_a_projection_says_why() -> None:
    html = meter_html(None, Used(0, 0.0, 0), Budget(), done=False, missing="boom <b>")
    assert "boom &lt;b&gt;" in html


def test_text_escapes_markup_and_neutralises_control_characters() -> None:
    assert text(XSS) == XSS_SHOWN
    assert text("\"quoted\" & 'single'") == "&quot;quoted&quot; &amp; &#x27;single&#x27;"
    assert text("\x1b[31mred\x00") == "\\x1b[31mred\\x00"
    assert text("two\nlines") == "two\nlines"
    # bidi and zero-width marks too, by the core's one rule
    assert text("a\u202eb\u200bc\u2066d") == "a\\u202eb\\u200bc\\u2066d"
    assert text("two\nlines", keep_newlines=False) == printable("two\nlines") == "two\\nlines"
    assert _text.printable is printable  # the widgets have no escaper of their own


def record(**changes: object) -> CallRecord:
    fields: dict[str, object] = {
        "name": "convert",
        "id": "call_0_0",
        "raw_arguments": '{"amount": "118.4", "rate": 0.091}',
        "arguments": {"amount": 118.4, "rate": 0.091},
        "status": "ok",
        "result": "10.77",
        "coerced": ("convert.amount",),
        "seconds": 0.25,
    }
    fields.update(changes)
    return CallRecord(**fields)  # type: ignore[arg-type]


def test_a_run_that_cuts_a_result_shows_its_full_length() -> None:
    @tool
    def dump() -> str:
        """Dump everything."""
        return "y" * 12_345

    model = ScriptedModel([Completion(tool_calls=[ToolCall("dump", {})]), Completion(text="ok")])
    result = run(model, "go", tools=[dump], max_result_chars=100)
    (call,) = result.steps[0].tool_calls
    assert call.truncated == 12_345
    later = json.loads(TraceView(result).later().decode("utf-8"))  # the calls' texts
    assert later["calls"]["tr"] == [12_345]  # the page says "12,345 characters in all"


def test_each_mcp_calls_server_goes_to_the_page_with_its_texts() -> None:
    @tool
    def local() -> str:
        """Here."""
        return "ok"

    model = ScriptedModel([Completion(tool_calls=[ToolCall("local", {})]), Completion(text="ok")])
    plain = json.loads(TraceView(run(model, "go", tools=[local])).later().decode("utf-8"))
    assert "srv" not in plain["calls"]  # a run with no MCP call sends nothing more
    step = make_step(tool_calls=(record(server="files"), record(id="c2")))
    model.reset()
    mixed = dataclasses.replace(run(model, "go", tools=[local]), steps=(step,))
    later = json.loads(TraceView(mixed).later().decode("utf-8"))
    first, second = later["calls"]["srv"]
    assert second == -1
    assert later["strings"][first - later["strings_from"]] == "files"


def make_step(index: int = 0, **changes: object) -> Step:
    fields: dict[str, object] = {
        "index": index,
        "text": "Looking it up.",
        "tool_calls": (record(),),
        "usage": Usage(800, 40),
        "cost_usd": 0.003,
        "projection": projection(),
        "seconds": 0.5,
    }
    fields.update(changes)
    return Step(**fields)  # type: ignore[arg-type]


def test_stop_html_cannot_be_missed() -> None:
    base = {"steps": (make_step(),), "messages": (), "cost_usd": 0.003, "seconds": 0.5}
    answered = stop_html(Result(stop=Stop.ANSWERED, answer="42 <b>", **base))  # type: ignore[arg-type]
    assert "bl-answered" in answered
    assert "Run ended: answered · 1 step taken · $0.003 spent" in answered
    assert "42 &lt;b&gt;" in answered
    stopped = stop_html(
        Result(stop=Stop.MAX_COST_USD, answer=None, detail="over <i>", **base)  # type: ignore[arg-type]
    )
    assert "bl-unanswered" in stopped
    assert "Run ended: max_cost_usd — did NOT answer" in stopped
    assert "over &lt;i&gt;" in stopped
    unended = stop_html(Result(stop=None, answer=None, **base))  # type: ignore[arg-type]
    assert unended == (
        '<div class="bl-stop bl-running"><div class="bl-stop-head">No stop recorded: 1 step '
        'taken · $0.003 spent</div><div class="bl-stop-why">the run had not ended when this '
        "trace was written</div></div>"
    )


def test_as_result_rejects_what_is_not_a_trace() -> None:
    with pytest.raises(TypeError, match="TraceView: source must be a Result"):
        as_result(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a budgetloop trace"):
        as_result({"steps": []})


@pytest.mark.parametrize(
    ("value", "top"), [(0, 1.0), (0.585, 1.0), (1.77, 2.0), (3.0, 5.0), (8000, 10000.0)]
)
def test_nice_top(value: float, top: float) -> None:
    assert nice_top(value) == pytest.approx(top)


def test_bar_chart_draws_one_bar_per_value_in_one_path() -> None:
    svg = bar_chart([100, 200, 400], title=f"tokens {XSS}")
    path = re.search(r'<path d="([^"]*)"', svg)
    assert path is not None
    assert path.group(1).count("M") == 3
    assert path.group(1).count("z") == 3
    assert "<img" not in svg
    assert f"<title>tokens {XSS_SHOWN}</title>" in svg
    assert ">500<" in svg  # the axis top: the next 1-2-5 step above 400
    assert svg == bar_chart([100, 200, 400], title=f"tokens {XSS}")
    assert "http://www.w3.org/2000/svg" in svg
    assert "href" not in svg  # nothing is fetched


def test_line_chart_draws_the_ceiling_and_the_projected_point() -> None:
    svg = line_chart(
        [(0, 0.0), (1, 0.2), (2, 0.5)],
        title="cost",
        ceilings=[(1.0, "max_cost_usd $1.00")],
        projected=(3, 0.9),
    )
    assert svg.count('class="bl-ceiling"') == 1
    assert ">max_cost_usd $1.00</text>" in svg
    assert svg.count('class="bl-projected"') == 1
    assert svg.count('class="bl-dot"') == 3
    # y labels "0", "0.5", "1" need the minimum 40 px: plot x 40..384, y 166 (zero) up to 30
    # (the top, 1.0); x runs 0..3 with the projection
    assert '<polyline points="40,166 154.7,138.8 269.3,98"' in svg
    assert '<circle cx="384" cy="43.6" r="4"' in svg
    no_ceiling = line_chart([(0, 0.0), (1, 0.2)], title="cost")
    assert "bl-ceiling" not in no_ceiling


def test_charts_for_a_run() -> None:
    steps = [
        make_step(i, cost_usd=0.01 * (i + 1), usage=Usage(1000 * (i + 1), 10)) for i in range(3)
    ]
    html = charts_html(steps, Budget(max_cost_usd=0.1), projection(cost_usd=0.04, spent_usd=0.06))
    assert html.count("<svg") == 2
    assert "input tokens per step, reported" in html
    assert ">max_cost_usd $0.10</text>" in html
    assert 'class="bl-projected"' in html
    assert charts_html([], Budget()).count("<svg") == 2


def test_price_is_only_read_not_recomputed() -> None:
    # The meter prints the core's numbers as they are: a projection the core got "wrong" on
    # purpose shows as given, which proves the view computes no cost of its own.
    odd = projection(cost_usd=0.5, spent_usd=0.25, fits=True)
    html = meter_html(odd, Used(0, 0.0, 0), Budget(max_cost_usd=0.05), done=False)
    assert "= $0.50; spent $0.25 + $0.50 = $0.75 of max_cost_usd $0.05: fits" in html
    assert "bl-warn" not in html
    assert Price(3.0, 15.0).cost(1234, 500) == pytest.approx(0.011202)


def test_a_single_bar_has_one_x_label_not_two() -> None:
    x_labels = re.compile(r'<text x="\d+" y="180"[^>]*>([^<]*)</text>')
    assert x_labels.findall(bar_chart([5.0], title="t")) == ["0", ""]
    assert x_labels.findall(bar_chart([5.0, 6.0, 7.0], title="t", first_x=3)) == ["3", "5"]


@pytest.mark.parametrize(
    ("value", "shown"), [(0, "0"), (1, "1"), (1234, "1,234"), (100_000_000, "100,000,000"),
                         (2.5, "2.5")],
)  # fmt: skip
def test_count(value: float, shown: str) -> None:
    assert count(value) == shown


def test_plural() -> None:
    assert [plural(n, "step") for n in (0, 1, 2, 1000)] == [
        "0 steps", "1 step", "2 steps", "1,000 steps"
    ]  # fmt: skip
    assert plural(1, "tool schema") == "1 tool schema"


def test_worst_case_says_where_the_output_tokens_come_from() -> None:
    assert worst_case_text(projection()) == "500 output tokens assumed: max_output_tokens"
    assert (
        worst_case_text(projection(output_tokens=1)) == "1 output token assumed: max_output_tokens"
    )
    assert worst_case_text(projection(output_tokens=None)) == (
        "0 output tokens assumed: no max_output_tokens is set"
    )


def test_under_projected_is_reported_input_beyond_the_projection() -> None:
    assert make_step(usage=Usage(1300, 5)).under_projected == 66  # projected 1,234
    assert make_step(usage=Usage(800, 5)).under_projected == 0
    assert make_step(usage=None).under_projected == 0


def tick_labels(svg: str) -> list[tuple[float, str]]:
    return [
        (float(x), label)
        for x, label in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end" '
                                   r'class="bl-tick"[^>]*>([^<]*)</text>', svg)
        if float(x) < 200  # the y axis's labels, not the last x label at the right
    ]  # fmt: skip


@pytest.mark.parametrize("top", [0.0001, 0.003, 1.0, 42.0, 1e6])
def test_no_cost_label_is_clipped_or_over_the_title(top: float) -> None:
    svg = line_chart(
        [(0, 0.0), (1, top / 2), (2, top)],
        title="cost so far (○ = + next step, projected)",
        y_format=usd,
        ceilings=[(top, f"max_cost_usd {usd(top)}")],
        projected=(3, top * 1.5),
    )
    labels = tick_labels(svg)
    assert len(labels) == 3
    for x, label in labels:
        assert len(label) * 6.6 <= x, label  # the label fits left of the axis
    ceiling = re.search(r'<text x="([\d.]+)" y="([\d.]+)" class="bl-ceiling-label"', svg)
    assert ceiling is not None
    assert float(ceiling.group(2)) - 11 >= 20  # below the title's line
    # the projected next point sits at the right end: the label starts at the left, clear of it
    assert float(ceiling.group(1)) < 200  # the left half; the marker is at the right end
    assert 'text-anchor="start"' in svg[ceiling.start() : ceiling.start() + 200]


@pytest.mark.parametrize("top", [1, 10, 12_345, 1e8])
def test_no_token_label_is_clipped(top: float) -> None:
    labels = tick_labels(bar_chart([top / 3, top], title="input tokens per step, reported"))
    assert labels
    for x, label in labels:
        assert len(label) * 6.6 <= x, label
    assert len({label for _, label in labels}) == len(labels)  # no "0, 0, 1"


def test_empty_charts_say_so_and_draw_no_axis() -> None:
    bars = bar_chart([], title="t")
    assert tick_labels(bars) == []
    assert ">no steps yet</text>" in bars
    assert "<path" not in bars
    line = line_chart([], title="t")
    assert ">nothing spent yet</text>" in line
    assert "<polyline" not in line


def test_a_long_run_is_drawn_from_a_few_hundred_points() -> None:
    assert bucketed([1, 5, 2, 2, 9, 3], limit=3) == ([5, 2, 9], 2)
    assert bucketed([1, 2], limit=3) == ([1, 2], 1)
    steps = [make_step(i, usage=Usage(i + 1, 1), cost_usd=0.001) for i in range(10_000)]
    html = charts_html(steps, Budget(max_cost_usd=20.0))
    path = re.search(r'<path d="([^"]*)"', html)
    assert path is not None
    assert path.group(1).count("M") == 295  # buckets of ceil(10,000 / 300) = 34
    assert "(largest of each 34)" in html
    polyline = re.search(r'<polyline points="([^"]*)"', html)
    assert polyline is not None
    assert len(polyline.group(1).split()) <= 301
    assert polyline.group(1).split()[-1].startswith("384,")  # the last point is kept
    assert len(html) < 30_000


def test_the_crossing_point_is_drawn_after_a_cost_stop() -> None:
    steps = [make_step(i, cost_usd=0.02) for i in range(2)]
    crossing = projection(spent_usd=0.04, cost_usd=0.02, fits=False)
    html = charts_html(steps, Budget(max_cost_usd=0.05), crossing)
    assert html.count('class="bl-projected"') == 1
    assert html.count('class="bl-projected-line"') == 1


def test_a_typed_output_is_said_in_the_stop_lines() -> None:
    from budgetloop_widgets._status import stop_lines

    @dataclasses.dataclass
    class Pick:
        choice: str

    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("final_answer", {"choice": "b"}, "a")])]
    )
    result = run(model, "go", output=Pick)
    for shown in (result, Result.from_dict(json.loads(json.dumps(result.to_dict())))):
        assert stop_lines(shown)[1:] == [
            ("why", "the model called final_answer with an answer that fits the output type"),
            ("output", "output: the answer given by calling final_answer, as JSON"),
            ("answer", '{"choice": "b"}'),
        ]


def test_a_step_that_lasted_near_the_largest_float_is_shown(tmp_path: Path) -> None:
    from budgetloop_widgets import CompareView, to_html
    from tests.viewer_support import decode

    result = run(ScriptedModel(["hi"]), "go")
    step = dataclasses.replace(result.steps[0], seconds=1.7e308)
    loaded = Result.from_dict(
        dataclasses.replace(result, steps=(step,), seconds=1.7e308).to_dict()
    )
    assert decode(TraceView(loaded).data)["runs"][0]["steps"]["s"] == [1.7e308]
    CompareView(loaded, result)
    to_html(loaded, tmp_path / "run.html")
    assert loaded._repr_html_().startswith("<")


def test_a_projection_without_max_output_tokens_says_it_counts_no_output() -> None:
    unbounded = projection(output_tokens=None, cost_usd=0.003702, spent_usd=0.0)
    assert projection_text(unbounded) == (
        "projected: 1,234 in + 0 out tokens = $0.003702; spent $0.00 + $0.003702 = $0.003702 of "
        "max_cost_usd $0.05: fits"
    )
    html = meter_html(unbounded, Used(0, 0.0, 0), Budget(max_cost_usd=0.05), done=False)
    assert (
        '<div class="bl-why">not a worst case: 0 output tokens assumed: no max_output_tokens is '
        "set, so the reply&#x27;s output is not counted and a step&#x27;s reported cost is "
        "higher by what the model writes</div>"
    ) in html
    assert "? out" not in html
    assert "usually writes fewer" not in html


def test_the_cost_chart_names_its_hollow_point_only_where_one_is_drawn() -> None:
    steps = [make_step(cost_usd=0.01, index=i) for i in range(2)]

    def title(html: str) -> str:
        found = re.findall(r"<title>([^<]*)</title>", html)
        return found[-1]

    assert title(charts_html(steps, Budget(max_cost_usd=0.1))) == "cost so far"
    nxt = projection(cost_usd=0.01, spent_usd=0.02, limit_usd=0.1)
    assert title(charts_html(steps, Budget(max_cost_usd=0.1), nxt)) == (
        "cost so far (○ = + next step, projected)"
    )
    assert title(charts_html(steps, Budget(max_cost_usd=0.1), nxt, refused=True)) == (
        "cost so far (○ = + the step that did not fit, projected)"
    )


def test_every_ceiling_a_run_has_is_charted_with_the_cores_figures() -> None:
    from budgetloop.display import charts, tally

    @tool
    def look(q: str) -> str:
        """Look."""
        return f"seen {q}"

    turn = Completion(text="look", tool_calls=[ToolCall("look", {"q": "a"})])
    budget = Budget(max_steps=5, max_cost_usd=0.05, max_tool_calls=3, max_input_tokens=2_000)
    model = ScriptedModel([turn], price=Price(3.0, 15.0), max_output_tokens=50, repeat_last=True)
    result = run(model, "Go.", tools=[look], budget=budget, repeat_limit=None)
    assert result.stop is Stop.MAX_TOOL_CALLS
    made = charts(tally(result.steps), result.budget, ledger_limit=0.5)
    assert [(c.key, c.title, c.ceilings) for c in made] == [
        ("tokens", "input tokens per step, reported", ((2000.0, "max_input_tokens 2,000"),)),
        (
            "cost",
            "cost so far",
            ((0.05, "max_cost_usd $0.05"), (0.5, "shared ledger limit $0.50")),
        ),
        ("calls", "tool calls run so far", ((3.0, "max_tool_calls 3"),)),
    ]
    # three calls ran; the fourth step, the final answer, was asked for without tools
    assert made[2].points == ((0, 0), (1, 1), (2, 2), (3, 3), (4, 3))
    assert made[1].points[-1] == (4, result.cost_usd)
    html = charts_html(result.steps, result.budget, ledger_limit=0.5)
    assert html.count("<svg") == 3
    for label in ("max_input_tokens 2,000", "max_cost_usd $0.05", "shared ledger limit $0.50",
                  "max_tool_calls 3"):  # fmt: skip
        assert f">{label}</text>" in html
    assert html.count('class="bl-ceiling"') == 4
    # a run with no ceiling on a chart has no line on it, and no chart of tool calls
    assert charts_html(result.steps, Budget()).count('class="bl-ceiling"') == 0
    assert charts_html(result.steps, Budget()).count("<svg") == 2


def test_the_widgets_name_no_ceiling_and_add_no_money() -> None:
    # the charts, the meter and every figure of money come from the core: the widgets' code
    # names no ceiling and adds, subtracts or sums no dollars
    from budgetloop_widgets import _page

    root = Path(_page.__file__).parent
    for path in sorted(root.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for name in ("max_cost_usd", "max_tool_calls", "max_input_tokens", "max_seconds"):
            assert f".{name}" not in source, f"{path.name} reads {name}"
        assert not re.search(r"cost_usd\s*(or 0\.0)?\s*[-+]|[-+]=\s*\w*\.?cost_usd", source), path
        assert not re.search(r"(usd|spent|cost)[^\n]*\de-\d", source), path  # no epsilon


def test_a_trace_view_of_a_journal_reads_its_list_and_a_step_from_the_file(
    tmp_path: Path,
) -> None:
    from tests.core.test_trace_load import rich_run

    path = tmp_path / "run.jsonl"
    result = rich_run(path)
    view = TraceView(path)
    assert view.path == str(path)
    assert view.columns == read_columns(path)
    assert view.columns.status == ["error", "skipped"]
    assert view.columns.offsets is not None  # read from the lines, not from the Result
    assert [view.record(i).to_dict() for i in (0, 1)] == [s.to_dict() for s in result.steps]
    # the file is where a step is read from when it is opened
    path.write_text(path.read_text(encoding="utf-8").replace("Once more.", "Twice more"))
    assert view.record(1).text == "Twice more"
    with pytest.raises(ValueError, match="index must be a step") as info:
        view.record(2)
    assert str(info.value) == (
        "TraceView.record: index must be a step of the run (0 to 1), got 2."
    )
    with pytest.raises(TypeError, match="index must be an int") as wrong:
        view.record("1")  # type: ignore[arg-type]
    assert str(wrong.value) == "TraceView.record: index must be an int, got str."
    rich_run(path)  # a new trace at the path, this view's file renamed aside: the kernel's copy
    assert view.record(1) is view.result.steps[1]


def test_a_trace_view_of_a_run_takes_its_list_and_steps_from_the_run(tmp_path: Path) -> None:
    from tests.core.test_trace_load import rich_run

    result = rich_run()
    view = TraceView(result)
    assert view.path is None
    assert view.columns == columns_of(result.steps)
    assert view.record(1) is result.steps[1]
    result.save(tmp_path / "run.json")  # a saved JSON: the list from the file, steps from the run
    saved = TraceView(tmp_path / "run.json")
    assert saved.columns == view.columns
    assert saved.columns.offsets is None
    assert saved.record(0) == result.steps[0]


def test_the_benchmarks_trace_of_distinct_steps_loads(tmp_path: Path) -> None:
    """bench_widgets.py's trace whose every step has its own texts: its end line's cost covers
    its steps, so it loads, and its list reads the same from the file."""
    folder = str(Path(__file__).resolve().parents[2] / "benchmarks")
    sys.path.insert(0, folder)
    try:
        from bench_widgets import varied_file
    finally:
        sys.path.remove(folder)
    path = tmp_path / "varied.jsonl"
    varied_file(str(path), 50)
    loaded = load_trace(path)
    assert [s.text for s in loaded.steps[:2]] == ["reading part 0", "reading part 1"]
    assert loaded.steps[49].tool_calls[0].result == "notes on part 49. " * 25
    assert loaded.messages[-1].content == "notes on part 49. " * 25
    assert read_columns(path) == columns_of(loaded.steps)
