"""The widgets compute nothing: every word, figure and count they show of a run is the core's
(``budgetloop.display``, the ceilings' own words), so a new ceiling, ``max_input_tokens``, shows
in the panel and the viewer without a line of either naming it."""

from __future__ import annotations

from importlib import resources
from typing import Any

from budgetloop import Budget, Completion, Message, ScriptedModel, Stop, ToolCall, start, tool
from budgetloop._rules._ceilings import CEILINGS
from budgetloop.display import format_usd, meter, projection_text, step_head, stop_means
from budgetloop_widgets import RunPanel, TraceView
from tests.widgets.test_widgets import Page, data_of

LIMIT = 1_000


@tool
def read(topic: str) -> str:
    """Read about a topic."""
    return "notes " * 60


def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
    """A request's input tokens: 400, and one per character of the tool results."""
    return 400 + sum(len(m.content or "") for m in messages if m.role == "tool")


def session() -> Any:
    """Requests of 400, 760, 1,120 tokens...: two fit ``max_input_tokens=1,000``."""
    turn = Completion(text="reading", tool_calls=[ToolCall("read", {"topic": "a"})])
    model = ScriptedModel([turn], repeat_last=True)
    return start(
        model,
        "Go.",
        tools=[read],
        budget=Budget(max_steps=50, max_input_tokens=LIMIT),
        count_tokens=count,
        repeat_limit=None,
    )


def test_the_panel_shows_the_input_token_ceiling_in_the_cores_words() -> None:
    panel = RunPanel(session())
    assert "<b>input tokens, next request</b> 400 of max_input_tokens 1,000" in panel.meter.value
    panel.step_button.click()
    panel.step_button.click()
    assert "<b>input tokens, next request</b> 1,120 of max_input_tokens 1,000" in (
        panel.meter.value
    )
    assert (
        "The next step will not call the model: the run stops there (max_input_tokens): the "
        "next request counts 1,120 input tokens, over max_input_tokens=1,000." in panel.meter.value
    )
    panel.step_button.click()
    result = panel.session.result
    assert (result.stop, len(result.steps)) == (Stop.MAX_INPUT_TOKENS, 2)
    assert "Run ended: max_input_tokens — did NOT answer · 2 steps taken" in panel.status.value
    assert stop_means(Stop.MAX_INPUT_TOKENS).replace("'", "&#x27;") in panel.status.value


def test_the_viewer_gets_every_word_and_figure_as_the_core_made_it() -> None:
    result = session().run()
    assert result.stop == "max_input_tokens"
    data = data_of(TraceView(result))
    strings, run = data["strings"], data["runs"][0]
    steps = run["steps"]
    labels = [strings[i] for i in run["meter_labels"]]
    assert labels == ["steps taken", "seconds", "tool calls run", "input tokens, next request"]
    assert "budget" not in run  # no positional list of ceilings for the page to read
    assert ["why", stop_means(Stop.MAX_INPUT_TOKENS)] in [
        [kind, strings[i]] for kind, i in run["banner"]
    ]
    for i, step in enumerate(result.steps):
        assert strings[steps["head"][i]] == step_head(step)
        assert strings[steps["usd"][i]] == format_usd(step.cost_usd, column=True)
        assert step.projection is not None
        assert strings[steps["proj"][i]] == projection_text(step.projection)
    second = [strings[k] for k in steps["mr"][1]]
    assert second[0] == "1 of max_steps 50"
    assert second[2] == "1 (no max_tool_calls)"
    assert second[3] == "760 of max_input_tokens 1,000"
    figures = meter(result.steps[1].projection, _used(result, 1), result.budget)
    assert second == [text for _, text in figures.rows]
    assert steps["bar"] == [None, None]  # no cost ceiling: no bar


def _used(result: Any, i: int) -> Any:
    from budgetloop.display import Used

    before = result.steps[:i]
    ran = sum(1 for s in before for c in s.tool_calls if c.status != "skipped")
    return Used(i, sum(s.seconds for s in before), ran)


def test_the_panels_step_list_sends_each_step_with_its_words() -> None:
    panel = RunPanel(session())
    page = Page(panel)
    panel.step_button.click()
    sent = page.appends[-1]
    words = sent["strings"]
    assert words[sent["steps"]["mr"][0][3] - sent["strings_from"]] == (
        "400 of max_input_tokens 1,000"
    )


def test_the_viewer_names_no_ceiling_and_formats_no_money() -> None:
    js = resources.files("budgetloop_widgets").joinpath("viewer.js").read_text("utf-8")
    for ceiling in CEILINGS:
        assert ceiling.name not in js
    assert "function usd" not in js
    assert "out tokens" not in js  # the projection's words are the core's
    assert "assumed: max_output" not in js  # and the worst case's
    assert "secBefore" not in js
    assert "runBefore" not in js


PANEL = ("_panel.py", "_panel_view.py", "_panel_run.py", "_source.py")  # the panel's modules


def test_the_widgets_read_no_ceiling() -> None:
    package = resources.files("budgetloop_widgets")
    for name in ("_status.py", "_views.py", "_data.py", "_series.py", "_until.py", *PANEL):
        source = package.joinpath(name).read_text("utf-8")
        for ceiling in CEILINGS:
            if ceiling.name == "max_cost_usd" and name == "_views.py":
                continue  # the cost chart's dashed line: the chart of cost draws its ceiling
            assert f".{ceiling.name}" not in source, (name, ceiling.name)
            assert f"Stop.{ceiling.name.upper()}" not in source, (name, ceiling.name)
