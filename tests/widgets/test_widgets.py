"""RunPanel and TraceView driven from Python, as a notebook user would click them, no kernel."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    Message,
    Price,
    Projection,
    Result,
    ScriptedModel,
    Session,
    Step,
    Stop,
    ToolCall,
    Usage,
    estimate_tokens,
    load_trace,
    run,
    start,
    tool,
)
from budgetloop.display import read_columns
from budgetloop_widgets import RunPanel, TraceView, projection_text, usd
from budgetloop_widgets._data import CUT, DETAIL_IDS
from budgetloop_widgets._log import jump_targets
from budgetloop_widgets._page import trace_document
from budgetloop_widgets._traceview import FIRST_STEPS
from tests.viewer_support import decode

XSS = "<img src=x onerror=alert(1)>"
XSS_SHOWN = "&lt;img src=x onerror=alert(1)&gt;"
PRICE = Price(3.00, 15.00)  # assumed rates for the tests


@tool
def read(topic: str, pages: int) -> str:
    """Read pages of notes.

    Args:
        topic: what to read about
        pages: how many pages
    """
    if topic == "missing":
        raise LookupError(f"no notes on {topic}")
    if topic == "xss":
        return XSS
    return f"notes on {topic}. " * 20 * pages


def script() -> list[Any]:
    return [
        Completion(text="first", tool_calls=[ToolCall("read", {"topic": "a", "pages": 1})]),
        Completion(text="second", tool_calls=[ToolCall("read", '{"topic": "b", "pages": "2"}')]),
        Completion(text="third", tool_calls=[ToolCall("read", {"topic": "missing", "pages": 1})]),
        "the answer",
    ]


def make(max_cost_usd: float = 1.0, **options: Any) -> Session:
    model = ScriptedModel(script(), price=PRICE, max_output_tokens=500)
    return start(
        model,
        "Go.",
        tools=[read],
        budget=Budget(max_steps=8, max_cost_usd=max_cost_usd),
        **options,
    )


def html_of(panel: RunPanel | TraceView) -> str:
    """Every HTML widget's markup in the panel, as the browser would get it."""
    out = []
    stack: list[Any] = [panel]
    while stack:
        widget = stack.pop()
        if isinstance(widget, widgets.HTML):
            out.append(widget.value)
        stack.extend(getattr(widget, "children", ()))
    return "".join(out)


class Page:
    """What the panel's step list has sent the page since it was last drawn whole: its data
    and each append after it, as the page gets them (``send`` is ipywidgets' way out)."""

    def __init__(self, panel: RunPanel) -> None:
        self.panel = panel
        self.appends: list[dict[str, Any]] = []
        panel.steps.send = self.appends.append  # type: ignore[method-assign]

    @property
    def first(self) -> dict[str, Any]:
        return json.loads(self.panel.steps.data.decode("utf-8"))

    def strings(self) -> list[str]:
        out = list(self.first["strings"])
        for delta in self.appends:
            assert delta["strings_from"] == len(out)  # the page appends them in order
            out += delta["strings"]
        return out

    def steps(self) -> int:
        return len(self.first["runs"][0]["steps"]["cost"]) + sum(
            len(d["steps"]["cost"]) for d in self.appends
        )

    def texts(self) -> str:
        """Every text the page has, one a line."""
        return "\n".join(self.strings())


def shown_projection(panel: RunPanel) -> str:
    match = re.search(r'<div class="bl-projection">(.*?)</div>', panel.meter.value)
    assert match is not None, panel.meter.value
    return match.group(1)


def test_step_shows_the_projection_before_each_turn_and_the_step_after() -> None:
    panel = RunPanel(make)
    page = Page(panel)
    session = panel.session
    first = session.messages
    expected_in = estimate_tokens(first, session.schemas)
    assert shown_projection(panel) == (
        f"projected: {expected_in:,} in + 500 out tokens = {_usd(PRICE.cost(expected_in, 500))}"
        f"; spent $0.00 + {_usd(PRICE.cost(expected_in, 500))} = "
        f"{_usd(PRICE.cost(expected_in, 500))} of max_cost_usd $1.00: fits"
    )
    for turn in range(3):
        before = shown_projection(panel)
        panel.step_button.click()
        step = panel.session.steps[-1]
        assert len(panel.session.steps) == turn + 1
        assert before == projection_text(step.projection)  # what was shown is what was checked
        assert shown_projection(panel) == projection_text(panel.session.projection)
        assert shown_projection(panel) != before
        assert page.steps() == turn + 1
        assert page.appends[-1]["base"] == turn  # each step sent once, as it is taken
        assert f"<b>steps taken</b> {turn + 1} of max_steps 8" in panel.meter.value
    assert "<b>tool calls run</b> 3 (no max_tool_calls)" in panel.meter.value
    assert "worst case: 500 output tokens assumed: max_output_tokens" in panel.meter.value
    # item 1 of issue 19: an idle panel is paused, not "running"
    assert panel.status.value == (
        '<div class="bl-idle">paused after 3 steps: the run is not over; Step or Run goes on</div>'
    )
    assert panel.error.value == ""
    assert not panel.step_button.disabled
    assert not panel.run_button.disabled


def test_the_step_list_gets_raw_and_checked_arguments() -> None:
    panel = RunPanel(make)
    page = Page(panel)
    panel.step_button.click()
    panel.step_button.click()
    strings = page.strings()
    calls = page.appends[-1]["calls"]
    assert strings[calls["raw"][0]] == '{"topic": "b", "pages": "2"}'
    assert strings[calls["args"][0]] == '{"topic": "b", "pages": 2}'
    assert [strings[i] for i in calls["co"][0]] == ["read.pages"]  # coerced, named
    panel.step_button.click()
    calls = page.appends[-1]["calls"]
    assert calls["st"] == [1]  # error
    assert page.strings()[calls["out"][0]] == "LookupError: no notes on missing"


def test_run_goes_to_the_end_and_the_buttons_stop() -> None:
    panel = RunPanel(make)
    panel.run_button.click()
    assert panel.wait(10)
    assert len(panel.session.steps) == 4
    assert panel.session.result.stop is Stop.ANSWERED
    assert "Run ended: answered · 4 steps" in panel.status.value  # not "answered — answered"
    assert "the answer" in panel.status.value
    assert panel.step_button.disabled
    assert panel.run_button.disabled
    assert not panel.reset_button.disabled
    panel.step_button.click()  # a disabled button's handler still runs from Python: no effect
    assert len(panel.session.steps) == 4


def test_the_panel_says_when_the_next_turn_will_not_fit_and_stops_there() -> None:
    probe = make()
    totals = []
    while not probe.done:
        totals.append(probe.projection.total_usd)
        probe.step()
    # a ceiling a millionth of a dollar under the third turn's projected total stops before it
    limit = totals[2] - 0.000001
    panel = RunPanel(lambda: make(max_cost_usd=limit))
    for _ in range(2):
        assert "bl-warn" not in panel.meter.value
        panel.step_button.click()
    assert "The next step will not call the model: the run stops there (max_cost_usd)" in (
        panel.meter.value
    )
    crossing = panel.session.projection
    assert f"exceeds max_cost_usd={_usd(limit)}." in panel.meter.value  # the core's detail
    assert not panel.session.done
    panel.step_button.click()
    assert panel.session.result.stop is Stop.MAX_COST_USD
    assert len(panel.session.steps) == 2
    assert "Run ended: max_cost_usd — did NOT answer · 2 steps taken" in panel.status.value
    # the projection that stopped the run stays drawn: the point over the ceiling
    assert panel.session.projection == crossing
    assert panel.charts.value.count('class="bl-projected"') == 1
    assert "bl-unanswered" in panel.status.value
    assert "bl-warn" not in panel.meter.value
    assert panel.step_button.disabled
    assert panel.run_button.disabled


def test_reset_with_a_factory_starts_over() -> None:
    panel = RunPanel(make)
    panel.run_button.click()
    assert panel.wait(10)
    old = panel.session
    panel.reset_button.click()
    assert panel.session is not old
    assert panel.session.steps == ()
    assert not panel.step_button.disabled
    assert panel.status.value == (
        '<div class="bl-idle">not started: Step takes one turn, Run goes on to the end</div>'
    )
    assert Page(panel).steps() == 0  # the page got the new session, whole: no steps
    panel.run_button.click()
    assert panel.wait(10)
    assert panel.session.result.stop is Stop.ANSWERED
    assert len(panel.session.steps) == 4


def test_reset_of_a_bare_session_rebuilds_it_and_rewinds_the_scripted_model() -> None:
    clock_ticks = iter(range(10_000))

    def clock() -> float:
        return float(next(clock_ticks))

    session = make(system="Be brief.", clock=clock)
    session.step()
    session.step()  # stepped before the panel saw it: the start is worked out from the steps
    panel = RunPanel(session)
    assert len(panel.session.steps) == 2
    model = session.complete
    assert isinstance(model, ScriptedModel)
    assert model.calls == 2
    panel.reset_button.click()
    fresh = panel.session
    assert fresh is not session
    assert fresh.messages == [Message("system", "Be brief."), Message("user", "Go.")]
    assert fresh.complete is model
    assert model.calls == 0
    assert fresh.budget == session.budget
    assert fresh.price == session.price
    assert fresh.max_output_tokens == 500
    assert fresh.options.values["clock"] is clock
    assert list(fresh.tools) == ["read"]
    panel.run_button.click()
    assert panel.wait(10)
    assert fresh.result.stop is Stop.ANSWERED
    assert [s.text for s in fresh.steps] == ["first", "second", "third", "the answer"]


def test_buttons_are_disabled_while_a_step_runs() -> None:
    seen: list[tuple[bool, bool, bool]] = []
    panel: RunPanel | None = None

    def watching(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        assert panel is not None
        seen.append(tuple(b.disabled for b in panel.buttons))  # type: ignore[arg-type]
        return Completion(text="x", tool_calls=[ToolCall("read", {"topic": "a", "pages": 1})])

    model = ScriptedModel([watching], price=PRICE, max_output_tokens=500, repeat_last=True)
    panel = RunPanel(start(model, "Go.", tools=[read], budget=Budget(max_steps=3)))
    assert [b.disabled for b in panel.buttons] == [False, False, False]
    panel.step_button.click()
    assert seen == [(True, True, True)]
    assert [b.disabled for b in panel.buttons] == [False, False, False]


def test_an_exception_inside_a_step_is_shown_in_the_panel() -> None:
    broken = False

    def count(messages: Any, tools: Any) -> int:
        if broken:
            raise RuntimeError(f"tokenizer broke on {XSS}")
        return 100

    panel = RunPanel(lambda: make(count_tokens=count))
    panel.step_button.click()
    assert len(panel.session.steps) == 1
    assert panel.error.value == ""
    broken = True
    panel.step_button.click()  # the projection at the top of step() raises
    assert len(panel.session.steps) == 1
    assert "Step raised RuntimeError: tokenizer broke on " + XSS_SHOWN in panel.error.value
    assert "Traceback (most recent call last)" in panel.error.value
    assert "Projecting the next turn raised RuntimeError" in panel.error.value
    assert "the projection failed: RuntimeError: tokenizer broke on" in panel.meter.value
    assert "<img" not in html_of(panel)
    assert not panel.step_button.disabled
    assert not panel.reset_button.disabled
    broken = False
    panel.reset_button.click()
    assert panel.error.value == ""
    assert panel.session.steps == ()


def test_without_the_widget_a_notebook_shows_where_the_run_is() -> None:
    # issue 19, item 9: a saved notebook showed "RunPanel(children=(HTML(value='<style>..."
    panel = RunPanel(make)
    data, _meta = panel._repr_mimebundle_()
    assert data["text/plain"] == "RunPanel: not started · $0.00 spent"
    assert data["text/html"] == (
        '<div class="blv-fallback">RunPanel: not started · $0.00 spent</div>'
    )
    assert "application/vnd.jupyter.widget-view+json" in data
    panel.step_button.click()
    spent = usd(panel.session.result.cost_usd)
    assert panel._repr_mimebundle_()[0]["text/plain"] == (
        f"RunPanel: paused after 1 step · {spent} spent"
    )
    panel.run_button.click()
    assert panel.wait(10)
    assert panel._repr_mimebundle_()[0]["text/plain"] == (
        f"RunPanel: Run ended: answered · 4 steps taken · {usd(panel.session.result.cost_usd)} "
        "spent"
    )


def test_a_factory_that_returns_something_else_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"^RunPanel: factory's result must be a budgetloop Session, got int\.$"
    ):
        RunPanel(lambda: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="source must be a Session, a function returning one"):
        RunPanel(42)  # type: ignore[arg-type]
    # a str is the path of a held run's trace: going on from it needs the model
    with pytest.raises(TypeError, match=r"^RunPanel: complete must be the model to go on with"):
        RunPanel("not a session")


def test_what_the_model_and_tools_wrote_is_escaped_everywhere() -> None:
    model = ScriptedModel(
        [
            Completion(
                text=f"{XSS} \x1b[31mred\x00",
                tool_calls=[
                    ToolCall("read", {"topic": "xss", "pages": 1}),
                    ToolCall("read", f'{{"topic": "{XSS}", "pages": 1}}'),
                    ToolCall(XSS, {XSS: 1}),
                ],
            ),
            XSS,
        ],
        price=PRICE,
        max_output_tokens=500,
    )
    panel = RunPanel(start(model, XSS, tools=[read], budget=Budget(max_cost_usd=1.0)))
    page = Page(panel)
    panel.run_button.click()
    assert panel.wait(10)
    markup = html_of(panel)  # the panel's own HTML: escaped
    assert "<img" not in markup
    assert "\x1b" not in markup
    assert "\x00" not in markup
    assert XSS_SHOWN in panel.status.value  # the answer
    # the step list's texts: control characters shown as escapes, markup left as text (the
    # page puts them in with textContent; the browser tests see them as text)
    texts = page.strings()
    assert not any("\x1b" in t or "\x00" in t for t in texts)
    assert f"{XSS} \\x1b[31mred\\x00" in texts  # the model's text
    assert XSS in texts  # a tool's result, and a tool's name
    assert f'{{"topic": "{XSS}", "pages": 1}}' in texts  # arguments as the model wrote them
    assert any(f"unknown tool '{XSS}'" in t for t in texts)  # an error


HIDDEN = "pay\u202eevil\u200bjoin\ufeff"  # a right-to-left override, a zero-width space, a BOM
HIDDEN_SHOWN = "pay\\u202eevil\\u200bjoin\\ufeff"
MARKS = ("\u202e", "\u200b", "\ufeff")


def hidden_run() -> Session:
    """A run whose model text, tool name, arguments, result, error and answer hold bidi and
    zero-width marks."""

    @tool
    def echo(q: str) -> str:
        """Echo.

        Args:
            q: what to echo
        """
        return q

    calls = [ToolCall("echo", {"q": HIDDEN}, "c1"), ToolCall(HIDDEN, {}, "c2")]
    model = ScriptedModel(
        [Completion(text=HIDDEN, tool_calls=calls), HIDDEN], price=PRICE, max_output_tokens=500
    )
    return start(model, HIDDEN, tools=[echo], budget=Budget(max_cost_usd=1.0))


def test_the_panel_shows_bidi_and_zero_width_marks_as_escapes() -> None:
    panel = RunPanel(hidden_run())
    page = Page(panel)
    panel.run_button.click()
    assert panel.wait(10)
    texts = page.texts()  # every text the step list sent the page
    shown = html_of(panel) + texts
    assert not [mark for mark in MARKS if mark in shown]
    assert HIDDEN_SHOWN in texts.splitlines()  # the model's text, the tool's name, the answer
    assert HIDDEN_SHOWN in panel.status.value  # the answer, in the banner


def test_traceview_shows_bidi_and_zero_width_marks_as_escapes() -> None:
    result = hidden_run().run()
    view = TraceView(result)
    data = data_of(view)
    strings = data["strings"]
    assert not [mark for s in strings for mark in MARKS if mark in s]
    run = data["runs"][0]
    assert strings[run["steps"]["text"][0]] == HIDDEN_SHOWN  # the model's text
    assert strings[run["calls"]["name"][1]] == HIDDEN_SHOWN  # a tool's name
    request = json.dumps(view.request(0), ensure_ascii=False)  # data, for Python: kept as is
    assert HIDDEN in request


def test_the_context_and_charts_grow_with_each_step() -> None:
    panel = RunPanel(make)
    page = Page(panel)
    counts = []
    tokens = list(page.first["runs"][0]["tokens"])
    for _ in range(3):
        panel.step_button.click()
        delta = page.appends[-1]
        head = re.search(r"(\d+) messages; next request: ([\d,]+) input tokens projected",
                         delta["context_head"])  # fmt: skip
        assert head is not None
        counts.append((int(head.group(1)), int(head.group(2).replace(",", ""))))
        assert int(head.group(2).replace(",", "")) == panel.session.projection.input_tokens
        tokens += delta["tokens"]  # each new message's estimate, once
        assert tokens == list(panel.session.message_tokens)
    assert [n for n, _ in counts] == [3, 5, 7]
    assert counts[0][1] < counts[1][1] < counts[2][1]
    bars = re.search(r'<path d="([^"]*)" class="bl-bars"', panel.charts.value)
    assert bars is not None
    assert bars.group(1).count("M") == 3
    assert ">max_cost_usd $1.00</text>" in panel.charts.value
    assert 'class="bl-projected"' in panel.charts.value


def _usd(value: float) -> str:
    from budgetloop_widgets import usd

    return usd(value)


# -- TraceView ---------------------------------------------------------------------------------


def finished() -> Result:
    session = make()
    return session.run()


def data_of(view: TraceView) -> dict[str, Any]:
    """What the widget sends the page, decoded as the page decodes it: the data, and the calls'
    texts it asks for once the rows are drawn, joined as the page joins them."""
    data = decode(view.data)
    if data["runs"][0]["later"]:
        later = json.loads(view.later().decode("utf-8"))
        assert later["strings_from"] == len(data["strings"])
        data["strings"] += later["strings"]
        data["cut"].update(later["cut"])
        data["runs"][0]["calls"].update(later["calls"])
    return data


def test_traceview_opens_a_result_a_dict_and_a_path(tmp_path: Path) -> None:
    result = finished()
    path = tmp_path / "trace.json"
    result.save(path)
    views = [TraceView(result), TraceView(result.to_dict()), TraceView(path), TraceView(str(path))]
    for view in views:
        assert view.result.to_dict() == result.to_dict()
        assert view.selected == 0
        data = data_of(view)
        assert data["kind"] == "trace"
        run = data["runs"][0]
        head = data["strings"][run["banner"][0][1]]
        assert head.startswith("Run ended: answered · 4 steps taken · $0.00")
    # the same bytes from a run or its data; a file's view is sent its rows only, the same again
    assert len({v.data for v in views[:2]}) == 1
    assert len({v.data for v in views[2:]}) == 1
    assert not data_of(views[0])["runs"][0]["rows"]
    assert data_of(views[2])["runs"][0]["rows"]


def test_the_page_gets_every_step_as_numbers_and_texts() -> None:
    result = finished()
    data = data_of(TraceView(result))
    strings = data["strings"]
    run = data["runs"][0]
    st = run["steps"]
    assert st["cost"] == [s.cost_usd for s in result.steps]
    assert st["in"] == [s.usage.input_tokens for s in result.steps if s.usage]
    assert st["pin"] == [s.projection.input_tokens for s in result.steps]
    assert [strings[i] for i in st["text"]] == ["first", "second", "third", "the answer"]
    assert st["err"] == [-1, -1, -1, -1]
    assert st["c0"] == [0, 1, 2, 3]  # each step's first call
    # status tags as bits: ok, ok, error, answer (viewer.js reads the same bits)
    assert st["fl"] == [1, 1, 2, 16]
    calls = run["calls"]
    assert [strings[i] for i in calls["name"]] == ["read"] * 3
    assert [strings[i] for i in calls["raw"]] == [
        '{"topic": "a", "pages": 1}',
        '{"topic": "b", "pages": "2"}',
        '{"topic": "missing", "pages": 1}',
    ]
    assert strings[calls["args"][1]] == '{"topic": "b", "pages": 2}'
    assert [strings[i] for i in calls["co"][1]] == ["read.pages"]  # coerced, marked
    assert calls["co"][0] is None
    assert calls["st"] == [0, 0, 1]
    assert strings[calls["out"][2]] == "LookupError: no notes on missing"
    assert run["sent"] == [1, 3, 5, 7]  # the messages each step was sent
    assert run["messages"] is None  # a widget's page asks for a step's context when opened
    assert run["jumps"] == {
        "first error": 2,
        "first skipped": None,
        "first denied": None,
        "first under-projected": None,
        "most expensive": max(range(4), key=lambda i: result.steps[i].cost_usd),
        "the stop": 3,
    }
    assert len(strings) == len(set(strings))  # each text once


def test_choosing_a_step_from_python_and_the_jumps() -> None:
    result = finished()
    view = TraceView(result)
    seen: list[int] = []
    view.observe(lambda change: seen.append(change["new"]), names="selected")
    view.show(2)
    assert view.selected == 2
    view.show(99)
    assert view.selected == 3  # clamped to the steps there are
    assert view.jump("first error") == 2
    assert view.jump("first skipped") is None
    assert view.selected == 2
    assert seen == [2, 3, 2]
    with pytest.raises(
        ValueError,
        match=r"^TraceView\.jump: jump must be one of first error, .*, got 'last error'\.$",
    ):
        view.jump("last error")
    with pytest.raises(TypeError, match=r"TraceView\.show: index must be an int, got str"):
        view.show("2")  # type: ignore[arg-type]


def test_the_page_asks_for_a_steps_context_and_request() -> None:
    result = finished()
    view = TraceView(result)
    context = view.answer({"type": "context", "step": 2})
    assert context is not None
    assert context["upto"] == 5
    assert context["first"] == 0
    assert [row[:2] for row in context["rows"]] == [
        [0, "user"], [1, "assistant"], [2, "tool"], [3, "assistant"], [4, "tool"]
    ]  # fmt: skip
    assert context["rows"][1][2] == 'first → read({"topic": "a", "pages": 1})'
    assert context["rows"][2][2].startswith("[read] notes on a.")
    request = view.answer({"type": "request", "step": 1})
    assert request is not None
    head, body = request["text"].split("\n\n", 1)
    assert head == "Request of step 1: 3 messages and 1 tool schema, as the trace holds them"
    sent = json.loads(body)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool"]
    assert sent["messages"][1]["tool_calls"][0]["name"] == "read"
    assert sent["tools"] == list(result.tools)
    assert sent == view.request(1)
    for wrong in ({"type": "context", "step": 9}, {"type": "request", "step": True},
                  {"type": "nothing"}, {"type": "full", "id": 10**6}):  # fmt: skip
        assert view.answer(wrong) is None
    with pytest.raises(
        ValueError,
        match=r"TraceView\.request: index must be a step of the run \(0 to 3\), got 4\.",
    ):
        view.request(4)


def _resolved(values: Any, strings: list[str], ids: bool) -> Any:
    """A column's value with its string ids read from ``strings`` (``ids``: it holds ids)."""
    if isinstance(values, list):
        return [_resolved(v, strings, ids) for v in values]
    if ids and isinstance(values, int) and not isinstance(values, bool):
        return None if values < 0 else strings[values]
    return values


_STEP_TEXTS = {"ptier", "text", "err", "tb", "head", "usd", "under", "proj", "worst", "mr"}
_CALL_TEXTS = {"name", "raw", "args", "co", "out", "tb", "srv"}


def test_the_page_asks_for_a_steps_whole_detail(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    result = make(trace_path=path).run()
    data = data_of(TraceView(result))  # every step's detail sent with the rows
    table, run = data["strings"], data["runs"][0]
    # the keys the page shifts when it appends a detail's strings to its own table
    assert (set(DETAIL_IDS["step"]), set(DETAIL_IDS["calls"])) == (_STEP_TEXTS, _CALL_TEXTS)
    for view in (TraceView(result), TraceView(path)):  # a file's view is sent the rows only
        for i, step in enumerate(result.steps):
            answer = view.answer({"type": "step", "step": i})
            assert answer is not None
            assert answer["index"] == i
            own = answer["strings"]
            assert len(own) == len(set(own))  # a small table of its own: each text once
            for name, value in answer["step"].items():
                ids = name in _STEP_TEXTS
                assert _resolved(value, own, ids) == _resolved(run["steps"][name][i], table, ids)
            first, last = run["steps"]["c0"][i], run["steps"]["c0"][i] + len(step.tool_calls)
            assert set(answer["calls"]) == set(run["calls"])
            for name, values in answer["calls"].items():
                ids = name in _CALL_TEXTS
                shared = run["calls"][name][first:last]
                assert _resolved(values, own, ids) == _resolved(shared, table, ids)
        second = view.answer({"type": "step", "step": 1})
        assert second["strings"][second["step"]["text"]] == "second"


def test_a_detail_asked_for_from_a_file_is_read_from_the_steps_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    result = make(trace_path=path).run()  # JSON Lines: a line a step
    view = TraceView(path)
    assert view.columns.offsets is not None
    assert result.steps[0].tool_calls[0].result.startswith("notes on a.")
    with open(path, "r+b") as fh:  # the same file, its line rewritten in place
        raw = fh.read()
        fh.seek(0)
        fh.write(raw.replace(b"notes on a.", b"NOTES ON A."))
    detail = view.answer({"type": "step", "step": 0})
    assert detail is not None
    out = detail["strings"][detail["calls"]["out"][0]]
    assert out == result.steps[0].tool_calls[0].result.replace("notes on a.", "NOTES ON A.")


def test_a_bad_detail_question_gets_an_error_answer() -> None:
    view = TraceView(finished())
    sent: list[dict[str, Any]] = []
    view.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    for step in (4, -1, "1", True, None, 10**30):
        view._on_message(view, {"type": "step", "step": step, "ask": 7}, [])
    assert sent == [
        {"type": "answer", "ask": 7, "error": "TraceView: step must be a step of the run (0 to 3), got 4."},
        {"type": "answer", "ask": 7, "error": "TraceView: step must be a step of the run (0 to 3), got -1."},
        {"type": "answer", "ask": 7, "error": "TraceView: step must be an int, got str."},
        {"type": "answer", "ask": 7, "error": "TraceView: step must be an int, got bool."},
        {"type": "answer", "ask": 7, "error": "TraceView: step must be an int, got NoneType."},
        {"type": "answer", "ask": 7, "error": "TraceView: step must be a step of the run (0 to 3), got "
         "1000000000000000000000000000000."},
    ]  # fmt: skip


def test_a_final_answer_was_sent_without_tools() -> None:
    probe = make()
    totals = []
    while not probe.done:
        totals.append(probe.projection.total_usd)
        probe.step()
    result = make(max_cost_usd=totals[2] - 0.000001, finish=True).run()
    assert result.steps[-1].final_answer
    view = TraceView(result)
    last = len(result.steps) - 1
    request = view.answer({"type": "request", "step": last})
    assert request is not None
    assert request["text"].startswith(
        f"Request of step {last}: {len(view.request(last)['messages'])} messages and no tool "
        "schemas (the final answer is asked for without tools)"
    )
    assert view.request(last)["tools"] == []
    assert data_of(view)["runs"][0]["steps"]["fl"][-1] & 64  # marked as the final answer


def big_trace(n: int = 1000) -> Result:
    messages = [Message("user", "go")]
    steps = []
    for i in range(n):
        call = CallRecord("read", f"c{i}", {"topic": "a", "pages": i}, {"topic": "a", "pages": i},
                          "ok", result=f"result {i}")  # fmt: skip
        proj = Projection(100 + 10 * i, 500, 0.001, 0.001 * i, None, True)
        steps.append(Step(i, f"turn {i}", (call,), Usage(100 + 10 * i, 20), 0.001, proj, 0.01))
        messages.append(Message("assistant", f"turn {i}", (ToolCall("read", "{}", f"c{i}"),)))
        messages.append(Message("tool", f"result {i}", tool_call_id=f"c{i}", name="read"))
    return Result(Stop.MAX_STEPS, None, tuple(steps), tuple(messages), 0.001 * n, 10.0,
                  Budget(max_steps=n))  # fmt: skip


def test_a_long_trace_sends_each_text_once_and_a_short_context() -> None:
    result = big_trace(1000)
    view = TraceView(result.to_dict())
    data = data_of(view)
    strings = data["strings"]
    # "turn i", "result i" and the raw arguments of each step, and the core's words for it (its
    # head line, its projection, the meter's rows before it), and a few more, each once
    assert len(strings) < 9 * 1000 + 20
    assert strings.count("result 537") == 1
    context = view.answer({"type": "context", "step": 537})
    assert context is not None
    assert context["upto"] == 1 + 2 * 537
    assert len(context["rows"]) == 40
    assert context["first"] == context["upto"] - 40


def test_the_numbers_go_as_raw_arrays_and_read_back_as_sent() -> None:
    from budgetloop_widgets._page import trace_document
    from budgetloop_widgets._wire import MAGIC, encode, encode_binary

    data, _strings = trace_document(big_trace(300), "t", messages=False, later=True)
    raw = encode_binary(data)
    assert raw.startswith(MAGIC)
    assert decode(raw) == json.loads(encode(data))  # exactly: floats as float64, ints as int32
    mixed = {"runs": [{"steps": {"none": [1, None], "big": [2**40, 1], "f": [0.1, 3],
                                 "i": [-(2**31), 2**31 - 1], "lists": [[1], None]},
                       "calls": {}}]}  # fmt: skip
    packed = encode_binary(mixed)
    head = json.loads(packed[8 : 8 + int.from_bytes(packed[4:8], "little")])
    kept = head["runs"][0]["steps"]
    assert kept["none"] == [1, None]  # a value not known: JSON, null and all
    assert kept["big"] == [2**40, 1]  # past 32 bits: JSON
    assert kept["lists"] == [[1], None]
    assert kept["f"] == {"$bin": [0, 2, "d"]}
    assert kept["i"] == {"$bin": [16, 2, "i"]}
    assert decode(encode_binary(mixed)) == mixed


def test_the_views_charts_are_the_panels_charts_of_the_same_run() -> None:
    # TraceView draws them from the columns it sends (no pass of its own over the steps)
    from budgetloop_widgets._data import unstyled
    from budgetloop_widgets._views import chart_svgs

    source = make()
    source.run()
    fork = source.fork(1)
    fork.step()
    empty = make(max_cost_usd=0.000001).run()
    for result in (finished(), fork.result, empty, big_trace(700)):
        sent = data_of(TraceView(result))["runs"][0]["charts"]
        assert sent == unstyled(chart_svgs(result.steps, result.budget,
                                           carried=result.carried_usd))  # fmt: skip


def test_a_text_longer_than_the_page_takes_is_cut_and_sent_whole_on_demand() -> None:
    long = "x" * (CUT + 5) + "\x1b[31m"
    step = Step(0, long, (), Usage(5, 1), 0.0, Projection(5, 1, 0.0, 0.0, None, True), 0.0)
    result = Result(Stop.ANSWERED, long, (step,), (Message("user", "go"),), 0.0, 0.0)
    view = TraceView(result)
    data = data_of(view)
    text_id = data["runs"][0]["steps"]["text"][0]
    assert data["strings"][text_id] == "x" * CUT
    assert data["cut"] == {str(text_id): CUT + 10}
    whole = view.answer({"type": "full", "id": text_id})
    assert whole == {"text": "x" * (CUT + 5) + "\\x1b[31m"}  # shown as text, escapes and all


def test_traceview_of_a_run_without_steps() -> None:
    session = make(max_cost_usd=0.000001)
    result = session.run()
    view = TraceView(result)
    assert result.steps == ()
    assert view.selected == -1
    data = data_of(view)
    assert data["runs"][0]["steps"]["cost"] == []
    assert set(data["runs"][0]["jumps"].values()) == {None}
    assert data["strings"][data["runs"][0]["banner"][0][1]] == (
        "Run ended: max_cost_usd — did NOT answer · 0 steps taken · $0.00 spent"
    )
    view.show(3)
    assert view.selected == -1


def test_without_the_widget_a_notebook_shows_a_summary_of_the_trace() -> None:
    # item 9 of issue 19: a saved notebook's output reads as a summary, not as widget reprs
    result = finished()
    data, _meta = TraceView(result, title="<b>run</b>")._repr_mimebundle_()
    assert data["text/plain"] == (
        "TraceView of '<b>run</b>': Run ended: answered · 4 steps taken · "
        f"{usd(result.cost_usd)} spent"
    )
    page = data["text/html"]
    assert "<b>run</b>" not in page
    assert "&lt;b&gt;run&lt;/b&gt;" in page
    assert "first error: step 2 · most expensive: step" in page
    assert "application/vnd.jupyter.widget-view+json" in data


def test_traceview_title_is_checked() -> None:
    with pytest.raises(TypeError, match="TraceView: title must be a str, got int"):
        TraceView(finished(), title=3)  # type: ignore[arg-type]


def test_with_finish_the_panel_says_the_next_step_is_the_final_answer_and_it_is() -> None:
    # the meter asks the loop (Session.next_turn), so it cannot disagree with what Step does
    probe = make()
    totals = []
    while not probe.done:
        totals.append(probe.projection.total_usd)
        probe.step()
    panel = RunPanel(lambda: make(max_cost_usd=totals[2] - 0.000001, finish=True))
    nxt = panel.session.next_turn
    while nxt.action == "call":
        panel.step_button.click()
        nxt = panel.session.next_turn
    assert nxt.action == "final_answer"
    assert "The next step is the final answer: the model is called without tools" in (
        panel.meter.value
    )
    assert "without calling the model" not in panel.meter.value
    model = panel.session.complete
    assert isinstance(model, ScriptedModel)
    before = len(model.requests)
    panel.step_button.click()
    assert len(model.requests) == before + 1  # the model was called, for the final answer
    assert model.requests[-1].tools == ()
    assert panel.session.steps[-1].final_answer
    assert panel.session.done


def test_after_a_fork_the_cost_chart_ends_at_what_the_run_has_spent() -> None:
    source = make()
    source.run()
    fork = source.fork(1)
    fork.step()
    result = fork.result
    assert result.carried_usd > 0
    assert result.cost_usd == pytest.approx(
        result.carried_usd + sum(s.cost_usd for s in result.steps)
    )
    from budgetloop.display import charts
    from budgetloop_widgets._series import series_of

    figures = series_of(result.steps, result.carried_usd)
    cost = charts(figures, result.budget)[1]
    assert cost.points[0] == (0, result.carried_usd)
    assert cost.points[-1][1] == result.cost_usd  # summed in picodollars, as the run bills
    assert figures.spent[-1] == result.cost_usd


def test_the_request_of_a_final_answer_run_is_what_each_step_was_sent() -> None:
    # the viewer reads what a step was sent from the core (Result.request), final answer included
    @tool
    def look(q: str) -> str:
        """Look."""
        return f"seen {q}"

    calls = [Completion(tool_calls=[ToolCall("look", {"q": q}, q)]) for q in "ab"]
    model = ScriptedModel([*calls, "what I saw"])
    result = run(model, "go", tools=[look], budget=Budget(max_steps=3), finish=True)
    view = TraceView(result)
    for index, sent in enumerate(model.requests):
        shown = view.request(index)
        assert len(shown["messages"]) == len(sent.messages) == [1, 3, 6][index]
        assert [m["role"] for m in shown["messages"]] == [m.role for m in sent.messages]
        assert shown["tools"] == list(sent.tools)
    assert shown["messages"][-1]["content"].startswith("[budgetloop] This is the last step")


@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(alphabet=st.characters(codec=None), max_size=30), max_size=8))
def test_the_string_table_is_escaped_as_each_text_alone(items: list[str]) -> None:
    # one pass over the joined table (or a byte check when it is plain ASCII) gives what
    # shown (the core's printable) gives each text, lone surrogates written as escapes so the page's JSON is UTF-8
    from budgetloop_widgets._data import escaped, shown

    out = escaped(list(items))
    assert len(out) == len(items)
    for text, seen in zip(items, out, strict=True):
        expected = shown(text)
        if any(0xD800 <= ord(c) <= 0xDFFF for c in expected):
            expected = "".join(
                f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in expected
            )
        assert seen == expected
        seen.encode("utf-8")
    assert escaped(["a\ue000b", "\x1b"]) == ["a\ue000b", "\\x1b"]  # the separator, in a text


def test_an_ended_runs_cost_chart_draws_and_names_no_next_step() -> None:
    panel = RunPanel(make)
    assert "cost so far (○ = + next step, projected)" in panel.charts.value
    panel.run()
    assert panel.wait(10)
    assert panel.session.result.answered
    assert "<title>cost so far</title>" in panel.charts.value
    assert "○" not in panel.charts.value


# -- the widgets compute nothing: money, under-projected and the viewer's rules are the core's --


def costly_run(*costs: float) -> Result:
    """A run whose steps reported ``costs``, a tool call each, then an answer costing nothing."""
    turns: list[Any] = [
        Completion(text=f"step {i}", tool_calls=[ToolCall("read", {"topic": f"t{i}", "pages": 1})],
                   cost_usd=cost)
        for i, cost in enumerate(costs)
    ]  # fmt: skip
    turns.append(Completion(text="done", cost_usd=0.0))
    return run(ScriptedModel(turns), "Go.", tools=[read])


def test_a_meter_says_money_was_carried_only_where_a_fork_carried_it() -> None:
    # each projection's spend is the core's, in picodollars; the viewer said it held carried
    # money where the steps' costs, added in floats, came to less (16455.479999999996)
    result = costly_run(16455.46, 0.01, 0.01)
    assert [s.projection.spent_usd for s in result.steps if s.projection] == [
        0.0, 16455.46, 16455.47, 16455.48,
    ]  # fmt: skip
    data = decode(TraceView(result).data)
    assert data["runs"][0]["steps"]["carry"] == [0, 0, 0, 0]
    assert data["runs"][0]["carried_text"] == -1


def test_the_cost_so_far_is_what_the_run_billed_to_the_picodollar() -> None:
    from budgetloop_widgets._compare import cost_points

    result = costly_run(0.1, 0.2)
    assert result.cost_usd == 0.3
    # added in floats, 0.1 + 0.2 is 0.30000000000000004: the chart ended above what was spent
    assert cost_points(result) == [(0, 0.0), (1, 0.1), (2, 0.3), (3, 0.3)]


def test_under_projected_is_the_cores_figure_in_every_column() -> None:
    from budgetloop_widgets._log import BITS, flags

    result = run(ScriptedModel([Completion(text="hi", usage=Usage(10_000, 5))]), "Go.")
    step = result.steps[0]
    assert step.under_projected > 0
    assert flags(step) & BITS["under-projected"]
    data = decode(TraceView(result).data)
    assert data["strings"][data["runs"][0]["steps"]["under"][0]] == (
        f"▲ under-projected: the model reported {step.under_projected:,} input tokens more "
        "than projected"
    )


def test_the_viewer_holds_the_rules_the_python_writes() -> None:
    # the status bits, jumps, roles and a call's statuses and decisions, as the columns are
    # written: viewer.js holds the block viewer_rules writes, as it is
    from budgetloop_widgets._data import viewer_rules
    from budgetloop_widgets._log import BITS, JUMPS
    from budgetloop_widgets._page import asset

    rules = viewer_rules()
    assert f'"under-projected": {BITS["under-projected"]}' in rules
    assert json.dumps(list(JUMPS)) in rules
    assert rules in asset("viewer.js"), f"write this block into viewer.js:\n{rules}"
    # the viewer marks an under-projected row by the core's bit, not a rule of its own
    assert 'st.fl[i] & BITS["under-projected"]' in asset("viewer.js")
    assert "st.in[i] > st.pin[i]" not in asset("viewer.js")


def test_the_panel_draws_a_shared_ledgers_limit_on_its_cost_chart() -> None:
    from budgetloop import MemoryLedger

    panel = RunPanel(make(max_cost_usd=0.05, ledger=MemoryLedger(0.5)))
    panel.step()
    charts = panel.charts.value
    assert ">max_cost_usd $0.05</text>" in charts
    assert ">shared ledger limit $0.50</text>" in charts
    assert charts.count('class="bl-ceiling"') == 2


def long_varied_file(path: Path, steps: int) -> None:
    """bench_widgets.py's trace of distinct steps, each step's text a line and more after it."""
    folder = str(Path(__file__).resolve().parents[2] / "benchmarks")
    sys.path.insert(0, folder)
    try:
        from bench_widgets import varied_file
    finally:
        sys.path.remove(folder)
    varied_file(str(path), steps)
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines[1:-1], 1):
        entry = json.loads(line)
        entry["step"]["text"] += "\n" + "the notes say more. " * 20
        lines[n] = json.dumps(entry, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_saved_traces_view_is_sent_its_rows_and_asked_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "varied.jsonl"
    long_varied_file(path, 10_000)
    view = TraceView(path)
    view.answer({"type": "rest"})  # asked by the page once the first steps are drawn
    assert len(view.data) < 1_000_000  # 0.9 MB; with every step's detail, 7.2 MB
    data = decode(view.data)
    assert set(data) == {"v", "kind", "title", "strings", "cut", "runs", "origin"}
    run = data["runs"][0]
    assert (run["rows"], run["later"], run["messages"]) == (True, False, None)
    assert set(run["steps"]) == {"cost", "usd", "in", "out", "pin", "s", "fl", "c0", "text", "err"}
    assert set(run["calls"]) == {"name", "st", "ap"}
    table = data["strings"]
    assert [table[i] for i in run["steps"]["text"][:2]] == ["reading part 0 …", "reading part 1 …"]
    assert run["steps"]["pin"][:2] == [113, 113]
    assert [table[i] for i in run["calls"]["name"][:2]] == ["read", "read"]
    # no step's whole text, no call's arguments or result: they come when a step is opened
    assert not any("the notes say more" in t or "notes on part" in t for t in table)
    detail = view.answer({"type": "step", "step": 9_999})
    assert detail is not None
    own = detail["strings"]
    assert own[detail["step"]["text"]] == "reading part 9999\n" + "the notes say more. " * 20
    assert own[detail["calls"]["out"][0]] == "notes on part 9999. " * 25
    assert run["jumps"] == jump_targets(load_trace(path).steps, stopped=True)


def test_the_rows_in_view_are_sent_their_details_in_one_answer(tmp_path: Path) -> None:
    path = tmp_path / "varied.jsonl"
    long_varied_file(path, 40)
    view = TraceView(path)
    answer = view.answer({"type": "steps", "steps": [7, 3, 40, "x"]})
    assert answer == {
        "details": [
            view.detail_answer(7),
            view.detail_answer(3),
            {"error": "TraceView: step must be a step of the run (0 to 39), got 40."},
            {"error": "TraceView: step must be an int, got str."},
        ]
    }
    own = answer["details"][0]["strings"]
    assert own[answer["details"][0]["step"]["text"]].startswith("reading part 7\n")
    assert view.answer({"type": "steps", "steps": list(range(65))}) == {
        "error": "TraceView: steps must be a list of at most 64 steps, got 65 items."
    }
    assert view.answer({"type": "steps", "steps": 3}) == {
        "error": "TraceView: steps must be a list of at most 64 steps, got int."
    }


def test_a_long_saved_trace_is_drawn_from_its_first_steps_and_sent_whole_when_asked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "varied.jsonl"
    steps = FIRST_STEPS + 500
    long_varied_file(path, steps)
    view = TraceView(path, title="long")
    assert view.reading
    first = decode(view.data)
    run = first["runs"][0]
    table = first["strings"]
    assert (run["partial"], run["rows"], len(run["steps"]["cost"])) == (True, True, FIRST_STEPS)
    assert [[kind, table[i]] for kind, i in run["banner"]] == [
        ["head", "Reading the rest of the run: its first 2,000 steps are shown"],
        ["why", "how it ended, what it spent and its charts follow once every step is read"],
    ]
    assert table[run["steps"]["text"][FIRST_STEPS - 1]] == "reading part 1999 …"
    assert (run["ended"], run["sent"], run["charts"]) == (False, [], [])
    bundle, _ = view._repr_mimebundle_()
    said = f"a saved run of more than 2,000 steps, at {path}"
    assert bundle["text/plain"] == f"TraceView of 'long': {said}"
    assert f"<div>A{said[1:]}.</div>" in bundle["text/html"]
    assert view.answer({"type": "rest"}) is None  # the page has drawn the first steps
    assert not view.reading
    whole = decode(view.data)
    columns = read_columns(path)
    expected, _ = trace_document(load_trace(path), "long", messages=False, rows=columns)
    assert whole == json.loads(json.dumps(expected))
    assert len(whole["runs"][0]["steps"]["cost"]) == steps
    assert "partial" not in whole["runs"][0]
    sent = view.data
    view.answer({"type": "rest"})  # a second view of it asks again: it has the run already
    assert view.data is sent
    assert (
        view.summary()
        == "TraceView of 'long': Run ended: answered · 2,500 steps taken · $0.728125 spent"
    )


def test_a_long_saved_trace_is_drawn_before_its_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "varied.jsonl"
    long_varied_file(path, FIRST_STEPS + 10)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[FIRST_STEPS + 2 :] = ["not JSON at all"] * 50  # after its first steps: never read yet
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    view = TraceView(path)
    assert view.reading
    assert len(decode(view.data)["runs"][0]["steps"]["cost"]) == FIRST_STEPS
    view.answer({"type": "rest"})  # now read whole: the page is told why it cannot be
    run = decode(view.data)["runs"][0]
    assert (run["partial"], len(run["steps"]["cost"])) == (False, FIRST_STEPS)


def test_a_rest_cut_short_by_an_interrupt_is_sent_when_asked_again(tmp_path: Path) -> None:
    class Interrupted(TraceView):  # the kernel interrupted while it reads the rest, once
        cut = True

        @property
        def columns(self) -> Any:
            if self.cut:
                self.cut = False
                raise KeyboardInterrupt
            return super().columns

    path = tmp_path / "varied.jsonl"
    long_varied_file(path, FIRST_STEPS + 10)
    view = Interrupted(path)
    first = view.data
    with pytest.raises(KeyboardInterrupt):
        view.answer({"type": "rest"})
    assert (view.reading, view.data) == (True, first)  # the page still has its first steps
    view.answer({"type": "rest"})  # asked again (a redraw, a view shown again)
    assert not view.reading
    assert len(decode(view.data)["runs"][0]["steps"]["cost"]) == FIRST_STEPS + 10


def test_a_trace_shorter_than_its_first_steps_is_read_whole_at_once(tmp_path: Path) -> None:
    path = tmp_path / "varied.jsonl"
    long_varied_file(path, FIRST_STEPS - 1)
    view = TraceView(path)
    assert not view.reading
    run = decode(view.data)["runs"][0]
    assert (run.get("partial"), len(run["steps"]["cost"])) == (None, FIRST_STEPS - 1)


def test_a_long_trace_broken_after_its_first_steps_says_why_on_the_page(tmp_path: Path) -> None:
    path = tmp_path / "varied.jsonl"
    long_varied_file(path, FIRST_STEPS + 10)
    view = TraceView(path)  # its first steps read; the file is broken after them, later
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[FIRST_STEPS + 5] = '{"kind": "step", "step": {"index": "five"}}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    why = f"TraceView: {path}:{FIRST_STEPS + 6}: step.index must be an int >= 0, got str."
    view.answer({"type": "rest"})
    assert not view.reading
    data = decode(view.data)
    run, table = data["runs"][0], data["strings"]
    assert [[kind, table[i]] for kind, i in run["banner"]] == [
        ["head", "The run could not be read whole: its first 2,000 steps are shown"],
        ["error", f"error: {why}"],
    ]
    assert (run["partial"], len(run["steps"]["cost"])) == (False, FIRST_STEPS)
    assert view.answer({"type": "step", "step": 3}) == {
        "error": f"the run could not be read whole: {why}"
    }
    with pytest.raises(ValueError, match=re.escape(why)):
        view.result  # noqa: B018  (asked here, it is read again, and says why)


def test_a_text_a_steps_detail_cut_is_sent_whole_when_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    result = make(trace_path=path).run()
    long = "x" * (CUT + 5)
    lines = path.read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[1])
    entry["step"]["tool_calls"][0]["result"] = long
    lines[1] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    view = TraceView(path)
    detail = view.answer({"type": "step", "step": 0})
    assert detail is not None
    out = detail["calls"]["out"][0]
    assert (detail["strings"][out], detail["cut"]) == ("x" * CUT, {str(out): CUT + 5})
    assert view.answer({"type": "full", "step": 0, "id": out}) == {"text": long}
    assert view.answer({"type": "full", "step": 0, "id": 99}) == {
        "error": f"TraceView: id must be a text of step 0's detail (0 to "
        f"{len(detail['strings']) - 1}), got 99."
    }
    assert view.answer({"type": "full", "step": 0, "id": "1"}) == {
        "error": "TraceView: id must be an int, got str."
    }
    assert view.answer({"type": "full", "step": len(result.steps), "id": 0}) == {
        "error": f"TraceView: step must be a step of the run (0 to {len(result.steps) - 1}), "
        f"got {len(result.steps)}."
    }
