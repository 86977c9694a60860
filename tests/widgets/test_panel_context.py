"""The panel under a context policy (``context=``): the context view marks what the policy left
out of the next request and what each step's policy dropped or summarized, the meter says it
projects after the policy, and the cost chart draws the run against the same steps without it."""

from __future__ import annotations

from typing import Any

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    ScriptedModel,
    ToolCall,
    run,
    start,
    tool,
)
from budgetloop._engine._types import from_pico, to_pico
from budgetloop.context import KeepLast, Summarize
from budgetloop.display import charts, tally, whole_context_pico
from budgetloop_widgets import RunPanel
from budgetloop_widgets._views import chart_svgs
from tests.widgets.test_widgets import Page

PRICE = Price(3.0, 15.0)
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>&amp;"


@tool
def search(q: str) -> str:
    """Search: a long result each time."""
    return f"{q}: " + "found " * 100


def script(n: int, then: str = "done") -> list[Any]:
    calls = [
        Completion(tool_calls=(ToolCall("search", {"q": f"q{i}"}, f"c{i}"),)) for i in range(n)
    ]
    return [*calls, then]


def model(n: int = 6) -> ScriptedModel:
    return ScriptedModel(script(n), price=PRICE, max_output_tokens=50)


def marks(data: dict[str, Any] | None, strings: list[str]) -> dict[int, str]:
    assert data is not None
    return {i: strings[label] for i, label in data["d"]}


def written(data: dict[str, Any], strings: list[str]) -> list[tuple[int, str, str, str]]:
    return [
        (a, strings[label], strings[role], strings[body]) for a, label, role, body in data["w"]
    ]


def test_keep_last_marks_exactly_what_the_next_request_leaves_out() -> None:
    session = start(model(), "find it", tools=[search], system="be brief",
                    context=KeepLast(turns=2), budget=Budget(max_steps=20))  # fmt: skip
    panel = RunPanel(session)
    page = Page(panel)
    assert page.first["next_context"] is None  # the whole context is sent
    for _ in range(4):
        panel.step()
    ahead = panel.session.next_context
    assert ahead is not None
    assert ahead.dropped == (2, 3, 4, 5)
    strings = page.strings()
    now = page.appends[-1]["next_context"]
    assert marks(now, strings) == dict.fromkeys((2, 3, 4, 5), "dropped by KeepLast(turns=2)")
    assert now["w"] == []
    assert strings[now["h"]] == (
        "KeepLast(turns=2): 4 messages of the context not sent as they were in the next "
        f"request ({ahead.dropped_tokens:,} input tokens fewer than the whole context)."
    )
    # the meter projects on the request sent, and says so; the context's head too
    projection = panel.session.projection
    assert f"projected: {projection.input_tokens:,} in" in panel.meter.value
    assert '<div class="bl-policy">projected after the context policy, KeepLast(turns=2): 4 ' in (
        panel.meter.value
    )
    assert f"next request: {projection.input_tokens:,} input tokens projected after the " \
        "context policy" in page.appends[-1]["context_head"]  # fmt: skip
    # a past step: what its own policy dropped
    steps = [*page.first["runs"][0]["steps"]["cx"], *(c for d in page.appends
             for c in d["steps"]["cx"])]  # fmt: skip
    assert steps[:3] == [None, None, None]
    assert marks(steps[3], strings) == {2: "dropped by KeepLast(turns=2)",
                                        3: "dropped by KeepLast(turns=2)"}  # fmt: skip
    assert panel.session.steps[3].context is not None
    assert panel.session.steps[3].context.dropped == (2, 3)


def test_a_summarize_run_shows_the_summary_and_what_it_replaced() -> None:
    writer = ScriptedModel(["the summary " + HOSTILE], price=Price(1.0, 5.0), max_output_tokens=40)
    policy = Summarize(writer, when_input_tokens_over=400, keep_last=1)
    session = start(model(4), "find it", tools=[search], context=policy, price=PRICE,
                    budget=Budget(max_steps=20, max_cost_usd=1.0))  # fmt: skip
    panel = RunPanel(session)
    page = Page(panel)
    panel.run()
    panel.wait(30)
    result = panel.session.result
    made = next(s for s in result.steps if s.context and s.context.summary)
    assert made.context is not None
    assert made.context.summary is not None
    assert made.context.summary.replaced == (1, 2)
    strings = page.strings()
    cx = [c for d in [page.first["runs"][0]["steps"], *(d["steps"] for d in page.appends)]
          for c in d["cx"]][made.index]  # fmt: skip
    assert marks(cx, strings) == {1: "summarized by Summarize", 2: "summarized by Summarize"}
    assert written(cx, strings) == [(
        2, "written by Summarize: the summary of messages 1–2", "user",
        "Summary of the earlier turns (written for the context policy):\nthe summary " + HOSTILE,
    )]  # fmt: skip
    said = strings[cx["h"]]
    assert said.startswith("Summarize(model=")
    assert said.endswith(
        "2 messages of the context not sent as they were in this step's request "
        f"({made.context.dropped_tokens:,} input tokens fewer than the whole context); its "
        f"summary cost ${made.context.summary.cost_usd:.6f}."
    )
    # the summary's text is data for the page's textContent: nowhere is it markup
    assert "<img" not in panel.charts.value
    assert "<img" not in panel.meter.value


def test_the_cost_chart_draws_the_run_against_the_same_steps_without_the_policy() -> None:
    writer = ScriptedModel(["s1", "s2", "s3"], price=Price(1.0, 5.0), max_output_tokens=40)
    policy = Summarize(writer, when_input_tokens_over=400, keep_last=1)
    result = run(model(5), "find it", tools=[search], context=policy, price=PRICE,
                 budget=Budget(max_steps=20, max_cost_usd=1.0))  # fmt: skip
    assert result.summaries_usd > 0
    figures = tally(result.steps, 0.0, result.price)
    cost = charts(figures, result.budget)[1]
    # with the policy: each step's cost and its summary's, to the picodollar; the run's cost
    own = 0
    expected = [(0, 0.0)]
    for i, step in enumerate(result.steps, 1):
        summary = step.context.summary if step.context is not None else None
        own += to_pico(step.cost_usd or 0) + (0 if summary is None else to_pico(summary.cost_usd))
        expected.append((i, from_pico(own)))
    assert cost.points == tuple(expected)
    assert cost.points[-1] == (len(result.steps), result.cost_usd)
    # without it: the core's figure of each step sent its whole context, no summary
    whole = 0
    baseline = [(0, 0.0)]
    for i, step in enumerate(result.steps, 1):
        figure = whole_context_pico(step, result.price)
        assert figure is not None
        whole += figure
        baseline.append((i, from_pico(whole)))
    assert cost.baseline == tuple(baseline)
    assert (
        cost.baseline_label == f"dashed: the same steps without the policy, ${baseline[-1][1]:.6f}"
    )
    assert cost.title == "cost so far, with the context policy and its summaries"
    # the same script run without the policy: its steps cost what the dashed line says
    plain = run(model(5), "find it", tools=[search], price=PRICE, budget=Budget(max_steps=20))
    assert [s.cost_usd for s in plain.steps] == [
        from_pico(whole_context_pico(s, result.price) or 0) for s in result.steps
    ]
    svg = chart_svgs(result.steps, result.budget, price=result.price)[1]
    assert svg.count('class="bl-baseline"') == 1
    assert f">{cost.baseline_label}</text>" in svg
    # a run without a policy draws no second line
    assert charts(tally(plain.steps, 0.0, plain.price), plain.budget)[1].baseline == ()
    assert 'class="bl-baseline"' not in chart_svgs(plain.steps, plain.budget, price=PRICE)[1]


def test_hostile_text_in_a_dropped_message_and_a_policy_name_is_text() -> None:
    def hostile(messages: list[Message]) -> list[Message]:
        return [*messages[:1], *messages[-2:]] if len(messages) > 3 else messages

    hostile.__qualname__ = hostile.__name__ = HOSTILE
    played = ScriptedModel(
        [Completion(tool_calls=(ToolCall("search", {"q": HOSTILE}, "c0"),)), *script(2)[0:]],
        price=PRICE, max_output_tokens=50,
    )  # fmt: skip
    session = start(played, "find it", tools=[search], context=hostile,
                    budget=Budget(max_steps=20))  # fmt: skip
    panel = RunPanel(session)
    page = Page(panel)
    for _ in range(2):
        panel.step()
    ahead = panel.session.next_context
    assert ahead is not None
    assert ahead.policy == HOSTILE
    assert ahead.dropped == (1, 2)  # the first call, and its result that holds the text
    strings = page.strings()
    now = page.appends[-1]["next_context"]
    # a long name is said to its "(": the marks are the page's text, never its markup
    assert marks(now, strings) == {1: "dropped by <img src=x onerror=alert",
                                   2: "dropped by <img src=x onerror=alert"}  # fmt: skip
    assert strings[now["h"]].startswith(HOSTILE + ": 2 messages of the context not sent")
    assert f"{HOSTILE}: " + "found " * 100 in strings  # the dropped result, as it was
    # the meter, drawn in Python, escapes it
    assert "<img" not in panel.meter.value
    assert "<script" not in panel.meter.value
    assert (
        "projected after the context policy, &lt;img src=x onerror=alert(1)&gt;&lt;script&gt;"
        "alert(2)&lt;/script&gt;&amp;amp;: 2 messages" in panel.meter.value
    )
