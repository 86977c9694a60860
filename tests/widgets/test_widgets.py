"""RunPanel and TraceView driven from Python, as a notebook user would click them, no kernel."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import ipywidgets as widgets
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
    Session,
    Step,
    Stop,
    ToolCall,
    Usage,
    estimate_tokens,
    run,
    start,
    tool,
)
from budgetloop_widgets import RunPanel, TraceView, projection_text

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


def cards_of(panel: RunPanel) -> str:
    """The step list's markup: the line above it and every card, newest first."""
    return panel.steps_view.value + "".join(c.children[0].value for c in panel.step_cards.children)


def shown_projection(panel: RunPanel) -> str:
    match = re.search(r'<div class="bl-projection">(.*?)</div>', panel.meter.value)
    assert match is not None, panel.meter.value
    return match.group(1)


def test_step_shows_the_projection_before_each_turn_and_the_step_after() -> None:
    panel = RunPanel(make)
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
        assert f'data-step="{turn}"' in cards_of(panel)
        assert f"<b>steps taken</b> {turn + 1} of max_steps 8" in panel.meter.value
    assert "<b>tool calls run</b> 3 (no max_tool_calls)" in panel.meter.value
    assert "worst case: 500 output tokens assumed: max_output_tokens" in panel.meter.value
    assert panel.status.value == '<div class="bl-running">running: 3 steps taken</div>'
    assert panel.error.value == ""
    assert not panel.step_button.disabled
    assert not panel.run_button.disabled


def test_rendered_table_shows_raw_and_checked_arguments() -> None:
    panel = RunPanel(make)
    panel.step_button.click()
    panel.step_button.click()
    step1 = cards_of(panel).split('data-step="1"')[1].split('data-step="0"')[0]
    assert (
        '<td class="bl-raw"><code>{&quot;topic&quot;: &quot;b&quot;, &quot;pages&quot;: '
        "&quot;2&quot;}</code></td>"
    ) in step1
    assert (
        '<td class="bl-checked"><code>topic: &quot;b&quot;<br><mark class="bl-coerced">'
        "pages: 2</mark> <i>(coerced)</i></code></td>"
    ) in step1
    panel.step_button.click()
    assert '<td class="bl-status">error</td>' in cards_of(panel)
    assert "LookupError: no notes on missing" in cards_of(panel)


def test_run_goes_to_the_end_and_the_buttons_stop() -> None:
    panel = RunPanel(make)
    panel.run_button.click()
    assert panel.wait(10)
    assert len(panel.session.steps) == 4
    assert panel.session.result.stop is Stop.ANSWERED
    assert "Run ended: answered — answered · 4 steps" in panel.status.value
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
    assert f"is over max_cost_usd {_usd(limit)}" in panel.meter.value
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
    assert panel.status.value == '<div class="bl-running">running: 0 steps taken</div>'
    assert cards_of(panel) == '<div class="bl-muted">no steps yet: press Step</div>'
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
    assert fresh.options.clock is clock
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


def test_a_factory_that_returns_something_else_is_refused() -> None:
    with pytest.raises(TypeError, match="the factory must return a budgetloop Session, got int"):
        RunPanel(lambda: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="source must be a Session or a function"):
        RunPanel("not a session")  # type: ignore[arg-type]


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
    panel.run_button.click()
    assert panel.wait(10)
    page = html_of(panel)
    assert "<img" not in page
    assert "\x1b" not in page
    assert "\x00" not in page
    assert f"{XSS_SHOWN} \\x1b[31mred\\x00" in cards_of(panel)  # the model's text
    assert f"<pre>{XSS_SHOWN}</pre>" in cards_of(panel)  # a tool's result
    assert f"&quot;topic&quot;: &quot;{XSS_SHOWN}&quot;" in cards_of(panel)  # arguments
    assert f"<td><code>{XSS_SHOWN}</code></td>" in cards_of(panel)  # a tool's name
    assert f"unknown tool &#x27;{XSS_SHOWN}&#x27;" in cards_of(panel)  # an error
    assert XSS_SHOWN in panel.context.value
    assert XSS_SHOWN in panel.status.value  # the answer


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
    panel.run_button.click()
    assert panel.wait(10)
    page = html_of(panel)
    assert not [mark for mark in MARKS if mark in page]
    assert f'<pre class="bl-text">{HIDDEN_SHOWN}</pre>' in cards_of(panel)  # the model's text
    assert f"<td><code>{HIDDEN_SHOWN}</code></td>" in cards_of(panel)  # a tool's name
    assert HIDDEN_SHOWN in panel.context.value
    assert HIDDEN_SHOWN in panel.status.value  # the answer


def test_traceview_shows_bidi_and_zero_width_marks_as_escapes() -> None:
    result = hidden_run().run()
    view = TraceView(result)
    view.show(0)
    view.show_request.value = True
    page = html_of(view)
    labels = [label for label, _ in view.rows.options]
    for shown in (page, *labels):
        assert not [mark for mark in MARKS if mark in shown], shown
    assert HIDDEN_SHOWN in page
    assert labels[0].endswith(HIDDEN_SHOWN)  # the row's first line of the model's text
    tools = [label for label, _ in view.tool_filter.options]
    assert tools == ["any", "echo", HIDDEN_SHOWN]
    view.tool_filter.value = HIDDEN  # the label is escaped, the filter still matches the name
    assert [value for _, value in view.rows.options] == [0]


def test_the_context_and_charts_grow_with_each_step() -> None:
    panel = RunPanel(make)
    counts = []
    for _ in range(3):
        panel.step_button.click()
        head = re.search(r"(\d+) messages; next request: ([\d,]+) input tokens projected",
                         panel.context.value)  # fmt: skip
        assert head is not None
        counts.append((int(head.group(1)), int(head.group(2).replace(",", ""))))
        assert int(head.group(2).replace(",", "")) == panel.session.projection.input_tokens
        column = re.findall(r'<td>(?:user|assistant|tool)</td><td class="bl-num">([\d,]+)</td>',
                            panel.context.value)  # fmt: skip
        assert [int(c.replace(",", "")) for c in column] == list(panel.session.message_tokens)
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


def test_traceview_opens_a_result_a_dict_and_a_path(tmp_path: Path) -> None:
    result = finished()
    path = tmp_path / "trace.json"
    result.save(path)
    views = [TraceView(result), TraceView(result.to_dict()), TraceView(path), TraceView(str(path))]
    for view in views:
        assert view.result.to_dict() == result.to_dict()
        assert "Run ended: answered — answered · 4 steps taken" in view.summary.value
        assert view.step_box.max == 3
        assert view.page_label.value == "rows 1–4 of 4 matching steps (4 steps in all)"
        assert [value for _, value in view.rows.options] == [0, 1, 2, 3]
        assert view.rows.value == 0
        assert f'<div class="bl-projection">{projection_text(result.steps[0].projection)}' in (
            view.meter.value
        )
    assert len({v.detail.value for v in views}) == 1


def test_clicking_a_row_shows_the_step_its_meter_and_the_context_it_was_sent() -> None:
    result = finished()
    view = TraceView(result)
    view.rows.value = 2  # what a click on the row does
    assert view.index == 2
    assert view.step_box.value == 2
    assert 'data-step="2"' in view.detail.value
    assert "LookupError: no notes on missing" in view.detail.value
    assert view.meter.value.count(projection_text(result.steps[2].projection)) == 1
    assert "Before step 2" in view.meter.value
    assert "<b>steps taken</b> 2 of max_steps 8" in view.meter.value
    assert "<b>tool calls run</b> 2 (no max_tool_calls)" in view.meter.value
    # step 2 was sent the prompt and two steps of (assistant, tool): five messages
    step = result.steps[2]
    assert step.usage is not None
    assert (
        f"5 messages; {step.projection.input_tokens:,} input tokens projected, "
        f"{step.usage.input_tokens:,} reported"
    ) in view.context.value
    view.step_box.value = 1  # typing a step number
    assert view.rows.value == 1
    assert 'data-step="1"' in view.detail.value


def test_the_request_of_a_step_is_shown_as_sent() -> None:
    result = finished()
    view = TraceView(result)
    view.show(1)
    assert view.request.value == ""
    view.show_request.value = True
    shown = view.request.value
    assert "Request of step 1: 3 messages and 1 tool schema, as the trace holds them" in shown
    body = re.search(r"<pre>(.*)</pre>", shown, re.S)
    assert body is not None
    sent = json.loads(html.unescape(body.group(1)))
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool"]
    assert sent["messages"][1]["tool_calls"][0]["name"] == "read"
    assert sent["tools"] == list(result.tools)
    view.show(3)
    assert "Request of step 3: 7 messages" in view.request.value


def test_the_request_of_a_final_answer_run_is_what_each_step_was_sent() -> None:
    @tool
    def look(q: str) -> str:
        """Look."""
        return f"seen {q}"

    calls = [Completion(tool_calls=[ToolCall("look", {"q": q}, q)]) for q in "ab"]
    model = ScriptedModel([*calls, "what I saw"])
    result = run(model, "go", tools=[look], budget=Budget(max_steps=3), finish=True)
    view = TraceView(result)
    view.show_request.value = True
    for index, sent in enumerate(model.requests):
        view.show(index)
        body = re.search(r"<pre>(.*)</pre>", view.request.value, re.S)
        assert body is not None
        shown = json.loads(html.unescape(body.group(1)))
        assert len(shown["messages"]) == len(sent.messages) == [1, 3, 6][index]
        assert [m["role"] for m in shown["messages"]] == [m.role for m in sent.messages]
        assert shown["tools"] == list(sent.tools)
        n = len(sent.messages)
        assert f"{n} message{'s' if n > 1 else ''}; " in view.context.value
    assert "Request of step 2: 6 messages and 0 tool schemas" in view.request.value
    assert "[budgetloop] This is the last step" in view.request.value


def test_the_request_view_says_what_the_trace_does_not_hold() -> None:
    result = run(ScriptedModel(["done"]), "go", budget=Budget(max_steps=3), budget_note=True)
    view = TraceView(result)
    view.show_request.value = True
    assert (
        "Request of step 0: 1 message and 0 tool schemas, as the trace holds them (the budget "
        "line budget_note=True ended it with is not kept in the trace)"
    ) in view.request.value
    # a fork's edited context is shorter than the steps it kept appended: nothing is made up
    call = Completion(tool_calls=[ToolCall("read", {"topic": "a", "pages": 1})])
    session = start(ScriptedModel([call, "done"]), "go", tools=[read])
    session.step()
    fork = session.fork(messages=[Message("user", "start over")])
    view = TraceView(fork.run())
    view.show_request.value = True
    assert "cannot be shown" in view.context.value
    assert view.request.value == ""
    view.show(1)
    assert "1 message; " in view.context.value  # its own step: sent the edited context


def test_jumps_go_to_the_error_the_most_expensive_step_and_the_stop() -> None:
    result = finished()
    view = TraceView(result)
    view.jumps["first error"].click()
    assert view.index == 2  # the missing topic's LookupError
    view.jumps["the stop"].click()
    assert view.index == 3
    view.jumps["most expensive"].click()
    assert view.index == max(range(4), key=lambda i: result.steps[i].cost_usd)
    assert view.jumps["first skipped"].disabled  # no call was skipped in this run
    assert view.jumps["first under-projected"].disabled  # the scripted model reports no usage
    with pytest.raises(ValueError, match=r"TraceView\.jump: expected one of first error"):
        view.jump("last error")


def test_filters_and_search_keep_the_matching_rows() -> None:
    trace = big_trace(30)
    steps = list(trace.steps)
    steps[7] = Step(7, "the weather", (CallRecord("weather", "w", {}, {}, "error", error="down"),),
                    Usage(5000, 3), 0.5, steps[7].projection, 0.1)  # fmt: skip
    steps[9] = Step(9, None, (), None, 0.001, steps[9].projection, 0.1, error="timeout <b>")
    trace = Result(trace.stop, None, tuple(steps), trace.messages, trace.cost_usd, 1.0,
                   trace.budget)  # fmt: skip
    view = TraceView(trace, page_size=10)
    assert [name for name, _ in view.tool_filter.options] == ["any", "read", "weather"]
    view.tool_filter.value = "weather"
    assert view.matching == (7,)
    view.tool_filter.value = "any"
    view.status_filter.value = "model error"
    assert view.matching == (9,)
    view.status_filter.value = "under-projected"
    assert view.matching == (7,)  # reported 5,000 input tokens against 170 projected
    view.status_filter.value = "any"
    view.search.value = "RESULT 2"
    assert view.matching == (2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29)
    assert view.page_label.value == "rows 1–10 of 11 matching steps (30 steps in all)"
    view.next_page.click()
    assert [v for _, v in view.rows.options] == [29]
    assert view.next_page.disabled
    view.search.value = "nothing like this"
    assert view.matching == ()
    assert view.page_label.value == "no step matches"
    view.search.value = ""
    view.jumps["first under-projected"].click()
    assert view.index == 7
    view.jumps["first error"].click()
    assert view.index == 7  # a failed call counts as an error
    view.show(25)  # on the third page: the list turns to it
    assert view.rows.value == 25
    assert view.rows.options[0][1] == 20


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


def test_traceview_of_a_thousand_steps_draws_one_page_and_one_step() -> None:
    result = big_trace()
    view = TraceView(result.to_dict(), page_size=200)
    view.show(537)
    assert view.page_label.value == "rows 401–600 of 1,000 matching steps (1,000 steps in all)"
    assert [v for _, v in view.rows.options] == list(range(400, 600))
    assert view.rows.value == 537
    assert re.findall(r'data-step="(\d+)"', view.detail.value) == ["537"]
    assert "1,075 messages" in view.context.value  # 1 + 2 x 537, sent to step 537
    assert view.context.value.count("<tr class=") == 40
    assert len(html_of(view)) < 100_000
    view.next_page.click()
    assert view.rows.options[0][1] == 600
    assert view.rows.value is None  # step 537 is not on this page; it stays shown
    assert view.index == 537
    view.show(999)
    assert view.next_page.disabled
    assert view.page_label.value == "rows 801–1,000 of 1,000 matching steps (1,000 steps in all)"


def test_traceview_of_a_run_without_steps() -> None:
    session = make(max_cost_usd=0.000001)
    result = session.run()
    view = TraceView(result)
    assert result.steps == ()
    assert view.rows.options == ()
    assert view.page_label.value == '<span class="bl-muted">no steps</span>'
    assert all(b.disabled for b in view.jumps.values())
    assert "this trace has no steps" in view.detail.value
    assert "Run ended: max_cost_usd — did NOT answer · 0 steps taken" in view.summary.value


def test_traceview_page_size_is_checked() -> None:
    with pytest.raises(ValueError, match="TraceView: page_size must be >= 1, got 0"):
        TraceView(finished(), page_size=0)
    with pytest.raises(TypeError, match="TraceView: page_size must be an int, got str"):
        TraceView(finished(), page_size="5")  # type: ignore[arg-type]


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
    from budgetloop_widgets._series import series_of

    points = series_of(result.steps, result.carried_usd).points
    assert points[0] == (0, result.carried_usd)
    assert points[-1][1] == pytest.approx(result.cost_usd)
