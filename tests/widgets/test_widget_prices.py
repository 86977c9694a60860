"""What the views say about a run's price and reasoning: a catalog price's source in the panel's
meter and the viewer's banner, the next turn's long-context tier in the meters (in the core's
words, which the viewer only places), and reasoning tokens in the step's head. No kernel."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from budgetloop import (
    Budget,
    Completion,
    Price,
    ScriptedModel,
    ToolCall,
    Usage,
    run,
    start,
    tool,
)
from budgetloop_widgets._page import trace_document
from budgetloop_widgets._status import stop_lines
from budgetloop_widgets._views import Used, meter_html

VIEWER = Path(__file__).parents[2] / "budgetloop_widgets" / "viewer.js"


@tool
def note(text: str) -> str:
    """Keep a note."""
    return "kept"


def crossing_session(price: Price) -> Any:
    """A run whose second turn's context is above the first turn's by a long note."""
    script = [
        Completion(
            tool_calls=[ToolCall("note", {"text": "x" * 400}, "c1")],
            usage=Usage(120, 90, reasoning_tokens=70),
        ),
        Completion("done", usage=Usage(260, 5)),
    ]
    model = ScriptedModel(script, max_output_tokens=10)
    return start(model, "hello", tools=[note], price=price, budget=Budget(max_cost_usd=1.0))


def test_the_meter_says_when_the_next_turn_is_in_a_higher_tier() -> None:
    probe = crossing_session(Price(1.0, 1.0))
    first = probe.projection.input_tokens
    probe.step()
    second = probe.projection.input_tokens
    price = Price(1.0, 1.0, tiers={first + 10: Price(2.0, 2.0)})
    session = crossing_session(price)
    before = session.projection
    assert (before.tier, before.tier_note) == (None, None)
    session.step()
    after = session.projection
    assert after.tier == first + 10
    assert after.tier_note == (
        f"long context: {second:,} input tokens is above {first + 10:,}, so the turn is priced "
        "at the higher tier's rates, for every token"
    )
    used = Used(steps=1, seconds=0.0, tool_calls=1)
    html = meter_html(after, used, session.budget, done=False)
    assert f'<div class="bl-tier">{escape(after.tier_note)}</div>' in html
    assert "bl-tier" not in meter_html(before, used, session.budget, done=False)
    # the trace keeps the tier, and the viewer gets the core's words for that step
    result = session.run()
    assert result.to_dict()["steps"][1]["projection"]["tier"] == first + 10
    assert "tier" not in result.to_dict()["steps"][0]["projection"]
    data, _strings = trace_document(result, "t")
    ids = data["runs"][0]["steps"]["ptier"]
    assert ids[0] == -1
    assert data["strings"][ids[1]] == after.tier_note
    assert "st.ptier[i]" in VIEWER.read_text(encoding="utf-8")  # the page shows it as sent


def test_a_catalog_price_is_named_in_the_meter_and_the_banner_a_given_one_is_not() -> None:
    catalog = Price(0.15, 0.6, source="genai-prices 0.2.3: openai gpt-4o-mini")
    model = ScriptedModel(["done"], max_output_tokens=10)
    result = run(model, "hi", price=catalog)
    assert ("price", "priced at: genai-prices 0.2.3: openai gpt-4o-mini") in stop_lines(result)
    html = meter_html(None, Used(1, 0.0, 0), Budget(), done=True, price=catalog)
    assert '<div class="bl-price">price: genai-prices 0.2.3: openai gpt-4o-mini</div>' in html
    given = run(ScriptedModel(["done"], max_output_tokens=10), "hi", price=Price(0.15, 0.6))
    assert all(kind != "price" for kind, _ in stop_lines(given))
    assert "bl-price" not in meter_html(
        None, Used(1, 0.0, 0), Budget(), done=True, price=Price(1, 1)
    )
    data, _ = trace_document(result, "t")
    banner = data["runs"][0]["banner"]
    assert [
        "price",
        data["strings"].index("priced at: genai-prices 0.2.3: openai gpt-4o-mini"),
    ] in banner


def test_markup_in_a_price_source_is_shown_as_text() -> None:
    hostile = Price(1.0, 1.0, source="<img src=x onerror=alert(1)>")
    html = meter_html(None, Used(0, 0.0, 0), Budget(), done=False, price=hostile)
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_reasoning_tokens_go_to_the_viewer_with_the_step() -> None:
    result = crossing_session(Price(1.0, 1.0)).run()
    data, _ = trace_document(result, "t")
    steps = data["runs"][0]["steps"]
    assert steps["rsn"] == [70, 0]
    assert steps["out"] == [90, 5]
    head = data["strings"][steps["head"][0]]  # the step's head line, worded by the core
    assert "90 out tokens reported (70 of them reasoning)" in head
    assert json.loads(json.dumps(data)) == data
