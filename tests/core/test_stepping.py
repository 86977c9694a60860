"""Sessions: stepping and running give the same trace, the state between steps, prompt forms,
fresh(), and the setup checked at start()."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    Session,
    ToolCall,
    run,
    start,
    tool,
)
from tests.conftest import PRICE, FakeClock, make_search


def test_stepping_and_running_give_the_same_trace() -> None:
    def build() -> Any:
        clock = FakeClock()

        @tool
        def search(query: str) -> str:
            """Search."""
            clock.advance(0.25)
            return query.upper()

        script: list[Any] = [
            Completion(text="first", tool_calls=[ToolCall("search", {"query": "a"}), ToolCall("search", '{"query": "b"}')]),
            Completion(tool_calls=[ToolCall("search", {"query": "c"})]),
            "the answer",
        ]  # fmt: skip
        model = ScriptedModel(script, price=PRICE, max_output_tokens=300)
        return start(model, "go", tools=[search], budget=Budget(max_cost_usd=1.0), clock=clock)

    stepped = build()
    taken = []
    while not stepped.done:
        taken.append(stepped.step())
    assert stepped.step() is None
    assert [s.index for s in taken] == [0, 1, 2]
    ran = build().run()
    assert replace(stepped.result, run_id=ran.run_id).to_dict() == ran.to_dict()  # two runs
    assert ran.answer == "the answer"
    assert ran.seconds == 0.75


def test_session_state_is_visible_between_steps() -> None:
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("search", {"query": "a"})]), "done"],
        price=PRICE,
        max_output_tokens=100,
    )
    session = start(model, "go", tools=[make_search()], system="be brief")
    assert [m.role for m in session.messages] == ["system", "user"]
    assert session.result.stop is None
    assert not session.done
    first = session.projection
    session.step()
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool"]
    second = session.projection
    assert second.input_tokens > first.input_tokens + 600  # the 2,000-character result
    assert second.spent_usd == session.result.cost_usd > 0
    assert session.result.stop is None
    assert session.run().stop == "answered"
    assert session.done


def test_prompt_may_be_a_list_of_messages() -> None:
    model = ScriptedModel(["hi"])
    history = [Message("user", "one"), Message("assistant", "two"), Message("user", "three")]
    result = run(model, history, system="sys")
    assert [m.content for m in model.requests[0].messages] == ["sys", "one", "two", "three"]
    assert result.messages[-1] == Message("assistant", "hi")
    with pytest.raises(TypeError, match=r"^run: prompt\[1\] must be a Message, got dict\.$"):
        run(model, [Message("user", "a"), {"role": "user"}])  # type: ignore[list-item]


def test_fresh_is_the_same_setup_at_its_first_step() -> None:
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("search", {"query": "a"})]), "done"],
        price=PRICE,
        max_output_tokens=100,
    )
    session = start(
        model,
        "go",
        tools=[make_search()],
        system="be brief",
        budget=Budget(max_steps=4, max_cost_usd=1.0),
        redact=str.upper,
        max_result_chars=10,
        clock=FakeClock(),
    )
    first = session.run()
    model.reset()
    again = session.fresh()
    assert type(again) is Session
    assert not again.done
    assert again.messages == [Message("system", "be brief"), Message("user", "go")]
    assert (again.budget, again.price, again.options.values["redact"]) == (
        session.budget,
        PRICE,
        str.upper,
    )
    assert replace(again.run(), run_id=first.run_id).to_dict() == first.to_dict()
    assert first.steps[0].tool_calls[0].truncated == 2000


def test_a_trace_path_in_a_missing_folder_fails_at_start(tmp_path: Any) -> None:
    missing = tmp_path / "nope" / "run.jsonl"
    with pytest.raises(
        ValueError,
        match=r"^start: trace_path must be a path in a folder that exists, "
        r"got '.*run\.jsonl' \(no folder '.*nope'\)\.$",
    ):
        start(ScriptedModel(["x"]), "go", trace_path=missing)
