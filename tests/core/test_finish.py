"""finish=True: a run that hits a ceiling ends on one call without tools, for a final answer;
budget_note=True: each request ends with a line saying what is left."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Message,
    Result,
    ScriptedModel,
    Stop,
    ToolCall,
    Usage,
    arun,
    run,
    start,
    tool,
)
from tests.conftest import PRICE, FakeClock, growing_count
from tests.strategies import PROMPT, Scenario, build, scenarios, tools_ran

RESULT = "r" * 2000  # each result adds 2,000 tokens under growing_count
ANSWER = "Here is what I found."
STEPS_NOTE = (
    "[budgetloop] This is the last step the budget allows (max_steps=3): tools are no longer "
    "available. Give your final answer now, from what you have."
)


def make_search(advance: FakeClock | None = None) -> Any:
    ran: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        ran.append(query)
        if advance is not None:
            advance.advance(1.0)
        return RESULT

    search.ran = ran  # type: ignore[attr-defined]
    return search


def agent(*, vary: bool = True, answer_with_calls: bool = False, usage: bool = True) -> Any:
    """A model that asks for a search whenever it has tools, and answers when it has none;
    its usage is the request as growing_count counts it, and 400 tokens out (none with
    ``usage=False``: the ScriptedModel then counts it with the default estimate)."""
    count = growing_count()
    turns = [0]

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        turns[0] += 1
        used = Usage(count(messages, tools), 400) if usage else None
        if not tools:
            calls = [ToolCall("search", {"query": "more"}, "late")] if answer_with_calls else []
            return Completion(text=ANSWER, tool_calls=calls, usage=used)
        query = f"q{turns[0]}" if vary else "same"
        return Completion(tool_calls=[ToolCall("search", {"query": query}, f"c{turns[0]}")],
                          usage=used)  # fmt: skip

    return complete


def scripted(**kw: Any) -> ScriptedModel:
    return ScriptedModel([agent(**kw)], repeat_last=True, price=PRICE, max_output_tokens=400)


def test_the_last_step_is_a_call_without_tools_whose_text_is_the_answer() -> None:
    search, model = make_search(), scripted()
    result = run(model, "go", tools=[search], budget=Budget(max_steps=3), finish=True)
    assert result.stop == "max_steps"
    assert result.answer == ANSWER
    assert result.detail == (
        "max_steps=3: the last step was kept for a final answer without tools"
    )
    assert model.calls == 3
    assert [len(r.tools) for r in model.requests] == [1, 1, 0]
    assert model.requests[-1].tools == ()
    assert model.requests[-1].messages[-1] == Message("user", STEPS_NOTE)
    assert search.ran == ["q1", "q2"]
    assert [s.final_answer for s in result.steps] == [False, False, True]
    assert result.messages[-2:] == (Message("user", STEPS_NOTE), Message("assistant", ANSWER))
    assert Result.from_dict(result.to_dict()).steps[2].final_answer is True
    assert result.to_dict()["steps"][0]["final_answer"] is False


def test_the_input_token_ceiling_keeps_the_last_request_that_fits_for_a_final_answer() -> None:
    # requests count 12,000 + 2,000 a turn; the final answer after the tenth (30,000) would
    # count about 32,000, over the ceiling: so the tenth is the final answer, without tools
    search, model = make_search(), scripted()
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=1000, max_input_tokens=30_000),
        count_tokens=growing_count(),
        finish=True,
    )
    assert (result.stop, result.answer) == ("max_input_tokens", ANSWER)
    assert result.detail == (
        "max_input_tokens=30,000: a final answer after this turn would count about 32,000 "
        "input tokens, so this step was the final answer"
    )
    assert [len(r.tools) for r in model.requests] == [1] * 9 + [0]
    assert [s.projection.input_tokens for s in result.steps if s.projection][-1] == 30_000
    assert model.requests[-1].messages[-1] == Message(
        "user",
        "[budgetloop] The context is at its size limit (max_input_tokens=30000): tools are no "
        "longer available. Give your final answer now, from what you have.",
    )


def test_the_trace_says_what_each_step_was_sent_final_answer_included() -> None:
    model = scripted()
    result = run(model, "go", tools=[make_search()], budget=Budget(max_steps=3), finish=True)
    assert [result.request(i) for i in range(3)] == model.requests
    assert [len(result.request(i).messages) for i in range(3)] == [1, 3, 6]
    assert result.request(2).messages[-1] == Message("user", STEPS_NOTE)
    assert result.request(2).tools == ()
    with pytest.raises(ValueError, match="index") as info:
        result.request(3)
    assert str(info.value) == "Result.request: index must be a step index from 0 to 2, got 3."
    with pytest.raises(TypeError) as raised:
        result.request("2")  # type: ignore[arg-type]
    assert str(raised.value) == "Result.request: index must be an int, got str."


def test_without_finish_the_seed_semantics_hold() -> None:
    search, model = make_search(), scripted()
    result = run(model, "go", tools=[search], budget=Budget(max_steps=3))
    assert (result.stop, result.answer) == ("max_steps", None)
    assert [len(r.tools) for r in model.requests] == [1, 1, 1]
    assert search.ran == ["q1", "q2"]  # the last batch had no step left to read it
    assert not any(s.final_answer for s in result.steps)


def test_tool_calls_on_the_final_turn_are_recorded_skipped_and_never_run() -> None:
    search, model = make_search(), scripted(answer_with_calls=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=2), finish=True)
    assert (result.stop, result.answer) == ("max_steps", ANSWER)
    assert search.ran == ["q1"]
    last = result.steps[-1]
    assert last.final_answer
    assert [(c.id, c.status, c.error) for c in last.tool_calls] == [
        ("late", "skipped", "the final-answer turn runs no tools")
    ]
    assert result.messages[-1] == Message(
        "tool", "skipped: the final-answer turn runs no tools", tool_call_id="late", name="search"
    )
    assert [c.id for c in result.skipped] == ["late"]
    assert [c.id for c in result.tool_calls] == ["c1"]


def test_max_steps_of_one_makes_the_only_call_the_final_answer() -> None:
    model = scripted()
    result = run(model, "go", tools=[make_search()], budget=Budget(max_steps=1), finish=True)
    assert (result.stop, result.answer, model.calls) == ("max_steps", ANSWER, 1)
    assert model.requests[0].tools == ()
    assert result.steps[0].final_answer


# -- the cost ceiling -----------------------------------------------------------------------------
# Under growing_count turn n (from 0) is sent 12,000 + 2,000n tokens and reports exactly that,
# with 400 out: it costs $0.042 + $0.006n, at worst and in fact.


def cost_run(finish: bool, limit: float = 0.5, **kw: Any) -> tuple[Result, ScriptedModel, Any]:
    search, model = make_search(), scripted()
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=1000, max_cost_usd=limit),
        count_tokens=growing_count(),
        finish=finish,
        **kw,
    )
    return result, model, search


def test_the_cost_ceiling_leaves_its_last_turn_to_a_final_answer() -> None:
    result, model, search = cost_run(finish=True)
    # Turn 6 with tools ($0.078) and an answer after it ($0.084) would pass $0.5 on $0.342.
    assert result.stop == "max_cost_usd"
    assert result.answer == ANSWER
    assert model.calls == 7
    assert len(search.ran) == 6
    assert model.requests[-1].tools == ()
    assert [s.final_answer for s in result.steps] == [False] * 6 + [True]
    assert result.cost_usd == pytest.approx(0.42)
    assert result.cost_usd <= 0.5
    inputs = [s.usage.input_tokens for s in result.steps if s.usage is not None]
    assert inputs == [12_000 + 2_000 * n for n in range(7)]
    assert result.detail == (
        "max_cost_usd=$0.50: a turn with tools ($0.078 at worst) and a final answer after it "
        "($0.084) would not both fit on $0.342 spent, so this step was the final answer"
    )


def test_the_same_ceiling_without_finish_runs_one_more_batch_and_no_answer() -> None:
    result, model, search = cost_run(finish=False)
    assert (result.stop, result.answer) == ("max_cost_usd", None)
    assert model.calls == 7
    assert len(search.ran) == 7
    assert result.cost_usd == pytest.approx(0.42)


@pytest.mark.parametrize("limit", [0.05, 0.09, 0.13, 0.2, 0.3, 0.41, 0.5, 0.77, 1.0])
def test_spend_never_passes_the_ceiling_and_an_answer_always_ends_a_finish_run(
    limit: float,
) -> None:
    result, model, _ = cost_run(finish=True, limit=limit)
    assert result.cost_usd <= limit
    assert result.stop == "max_cost_usd"
    assert result.answer == ANSWER
    assert result.steps[-1].final_answer
    assert model.requests[-1].tools == ()
    assert sum(s.final_answer for s in result.steps) == 1


def test_no_final_call_is_made_when_even_it_does_not_fit() -> None:
    result, model, _ = cost_run(finish=True, limit=0.04)  # the first turn costs $0.042 at worst
    assert (result.stop, result.answer, model.calls) == ("max_cost_usd", None, 0)
    assert result.detail == (
        "no final answer fits: next turn projected $0.042 (12,000 in + 400 out tokens) on $0.00 "
        "spent exceeds max_cost_usd=$0.04"
    )


def test_the_default_estimate_keeps_the_final_call_within_the_ceiling() -> None:
    for limit in (0.01, 0.02, 0.05, 0.1):
        model = ScriptedModel(
            [agent(usage=False)], repeat_last=True, price=PRICE, max_output_tokens=400
        )
        search = make_search()
        result = run(
            model, "go", tools=[search], budget=Budget(max_steps=1000, max_cost_usd=limit),
            finish=True,
        )  # fmt: skip
        assert result.cost_usd <= limit
        assert result.stop == "max_cost_usd"
        if result.answer is not None:
            assert result.steps[-1].final_answer
            assert model.requests[-1].tools == ()
        assert all(s.projection.fits for s in result.steps)


# -- the deadline ---------------------------------------------------------------------------------


def test_the_deadline_leaves_its_last_turn_to_a_final_answer() -> None:
    clock = FakeClock()
    search, model = make_search(clock), scripted()
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=100, max_seconds=10),
        clock=clock,
        finish=True,
    )
    # Each turn with tools takes 1s; at 9s, 1s is left, under twice the longest step.
    assert result.stop == "max_seconds"
    assert result.answer == ANSWER
    assert model.calls == 10
    assert len(search.ran) == 9
    assert result.steps[-1].final_answer
    assert result.detail == (
        "max_seconds=10: 1.000s left, under twice the longest step (1.000s), so this step was "
        "the final answer"
    )


# -- repetition and max_tool_calls ----------------------------------------------------------------


def test_a_repetition_stop_ends_with_one_call_without_tools() -> None:
    search, model = make_search(), scripted(vary=False)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=100), finish=True)
    assert result.stop == "repeated"
    assert result.answer == ANSWER
    assert model.calls == 4
    assert search.ran == ["same", "same"]
    assert [c.status for c in result.steps[2].tool_calls] == ["skipped"]
    assert [s.final_answer for s in result.steps] == [False, False, False, True]
    assert model.requests[-1].messages[-1] == Message(
        "user",
        "[budgetloop] You were repeating the same tool calls, so the run is ending: tools are "
        "no longer available. Give your final answer now, from what you have.",
    )
    assert result.detail == 'the same tool calls 3 turns running: search({"query": "same"})'


def test_a_max_tool_calls_stop_ends_with_one_call_without_tools() -> None:
    search, model = make_search(), scripted()
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=100, max_tool_calls=2),
        finish=True,
    )
    assert (result.stop, result.answer, model.calls) == ("max_tool_calls", ANSWER, 4)
    assert search.ran == ["q1", "q2"]
    assert "(max_tool_calls=2)" in (model.requests[-1].messages[-1].content or "")


def test_a_pending_final_answer_that_does_not_fit_is_not_made() -> None:
    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        text = sum(len(m.content or "") + sum(len(str(c.arguments)) for c in m.tool_calls)
                   for m in messages)  # fmt: skip
        return 12_000 + text

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        used = Usage(count(messages, tools), 400)
        if len(messages) == 1:
            return Completion(tool_calls=[ToolCall("search", {"query": "a"}, "c1")], usage=used)
        # Two calls past max_tool_calls, with 50,000 characters of arguments: the skipped turn
        # makes the context too big for a final answer.
        big = [ToolCall("search", {"query": "x" * 50_000}, f"b{i}") for i in range(2)]
        return Completion(tool_calls=big, usage=used)

    search, model = make_search(), ScriptedModel([complete], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=100, max_cost_usd=0.25, max_tool_calls=2),
        price=PRICE,
        max_output_tokens=400,
        count_tokens=count,
        finish=True,
    )
    assert (result.stop, result.answer, model.calls) == ("max_tool_calls", None, 2)
    assert search.ran == ["a"]
    assert not any(s.final_answer for s in result.steps)
    assert result.detail is not None
    assert result.detail.startswith(
        "max_tool_calls=2: 1 run, this turn asks for 2; no final answer fits: next turn "
        "projected $0.3"
    )
    assert result.cost_usd <= 0.25


# -- the async driver -----------------------------------------------------------------------------


class AsyncModel:
    def __init__(self, model: ScriptedModel) -> None:
        self.model, self.price, self.max_output_tokens = model, model.price, 400

    async def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        await asyncio.sleep(0)
        return self.model(messages, tools)


def test_arun_ends_on_the_same_final_answer() -> None:
    search, model = make_search(), scripted()
    result = asyncio.run(
        arun(
            AsyncModel(model),
            "go",
            tools=[search],
            budget=Budget(max_steps=1000, max_cost_usd=0.5),
            count_tokens=growing_count(),
            finish=True,
        )
    )
    assert (result.stop, result.answer, model.calls) == ("max_cost_usd", ANSWER, 7)
    assert model.requests[-1].tools == ()
    assert result.steps[-1].final_answer
    assert result.cost_usd == pytest.approx(0.42)


def test_a_session_pauses_before_the_final_answer_and_takes_it_on_the_next_step() -> None:
    model = scripted(vary=False)
    session = start(model, "go", tools=[make_search()], finish=True)
    for _ in range(3):
        session.step()
    assert not session.done  # the repetition is found; the final answer is still to come
    step = session.step()
    assert step is not None
    assert step.final_answer
    assert session.done
    assert session.result.stop == "repeated"


# -- budget_note ----------------------------------------------------------------------------------


def test_each_request_ends_with_one_budget_line_that_the_context_does_not_keep() -> None:
    model = scripted()
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=3, max_cost_usd=1.0),
        count_tokens=growing_count(),
        budget_note=True,
    )
    lines = [r.messages[-1] for r in model.requests]
    assert lines == [
        Message("user", "[budgetloop] Budget left: 3 of 3 steps (this one included), "
                "$1.000000 of $1.0."),
        Message("user", "[budgetloop] Budget left: 2 of 3 steps (this one included), "
                "$0.958000 of $1.0."),
        Message("user", "[budgetloop] Budget left: 1 of 3 steps (this one included), "
                "$0.910000 of $1.0."),
    ]  # fmt: skip
    for request in model.requests:
        assert sum("Budget left" in (m.content or "") for m in request.messages) == 1
    assert not any("Budget left" in (m.content or "") for m in result.messages)


def test_the_budget_line_names_only_the_ceilings_there_are() -> None:
    clock = FakeClock()
    model = ScriptedModel(["done"])
    run(model, "go", budget=Budget(max_steps=None, max_seconds=30), clock=clock, budget_note=True)
    assert model.requests[0].messages[-1] == Message(
        "user", "[budgetloop] Budget left: 30.0 of 30 seconds."
    )
    model = ScriptedModel(["done"])
    run(model, "go", budget=Budget(max_steps=None), budget_note=True)
    assert model.requests[0].messages == (Message("user", "go"),)


def test_the_final_answer_request_has_its_note_and_no_budget_line() -> None:
    model = scripted()
    run(model, "go", tools=[make_search()], budget=Budget(max_steps=2), finish=True,
        budget_note=True)  # fmt: skip
    last = model.requests[-1].messages
    assert last[-1].content is not None
    assert "last step the budget allows" in last[-1].content
    assert not any("Budget left" in (m.content or "") for m in last)


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["finish", "warn_repeats", "budget_note"])
def test_the_switches_take_only_booleans(name: str) -> None:
    with pytest.raises(TypeError, match=rf"^start: {name} must be True or False, got int\.$"):
        start(ScriptedModel(["x"]), "go", **{name: 1})


def test_fork_keeps_finish() -> None:
    model = scripted()
    session = start(model, "go", tools=[make_search()], budget=Budget(max_steps=3), finish=True)
    session.step()
    forked = session.fork()
    result = forked.run()
    assert (result.stop, result.answer) == ("max_steps", ANSWER)
    assert result.steps[-1].final_answer
    assert not result.steps[0].final_answer


def test_a_failed_final_call_keeps_the_ceiling_as_the_stop_and_says_so() -> None:
    inner = agent()

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        if not tools:
            raise ConnectionError("provider down")
        result: Completion = inner(messages, tools)
        return result

    seen: list[bool] = []
    model = ScriptedModel([complete], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=2),
        finish=True,
        on_step=lambda session, step: seen.append(step is not None and step.final_answer),
    )
    assert (result.stop, result.answer, model.calls) == ("max_steps", None, 2)
    assert result.error == "ConnectionError: provider down"
    assert result.detail == (
        "max_steps=2: the last step was kept for a final answer without tools; the final-answer "
        "call failed"
    )
    assert result.steps[-1].final_answer
    assert result.steps[-1].error == "ConnectionError: provider down"
    assert seen == [False, True]
    assert result.messages[-1].role == "tool"  # the note of a failed call is not kept


# -- over random runs -----------------------------------------------------------------------------


@given(
    scenarios(),
    st.sampled_from([None, 2, 3]),
    st.booleans(),
    st.booleans(),
)
def test_random_runs_with_every_option_keep_every_ceiling_and_end_on_one_final_answer(
    s: Scenario, cycle_limit: int | None, warn_repeats: bool, budget_note: bool
) -> None:
    built = build(s)
    result = run(
        built.model,
        PROMPT,
        finish=True,
        cycle_limit=cycle_limit,
        warn_repeats=warn_repeats,
        budget_note=budget_note,
        **built.kwargs,
    )
    budget = s.budget
    assert result.stop is not None
    assert built.model.calls == len(result.steps)
    if budget.max_steps is not None:
        assert len(result.steps) <= budget.max_steps
    if budget.max_tool_calls is not None:  # a call the check refused never ran: not counted
        assert tools_ran(result) <= budget.max_tool_calls
    if budget.max_cost_usd is not None and s.counted:
        assert result.cost_usd <= budget.max_cost_usd
    finals = [step.index for step in result.steps if step.final_answer]
    assert finals in ([], [len(result.steps) - 1])
    if finals:
        assert built.model.requests[-1].tools == ()
        assert result.stop is not Stop.ANSWERED
        assert all(c.status == "skipped" for c in result.steps[-1].tool_calls)
    ran = [e for e in built.log if e[0] == "tool" and e[3] in finals]
    assert ran == []  # no tool of the final turn ever started
    warnings = sum("You are repeating yourself" in (m.content or "") for m in result.messages)
    assert warnings <= (1 if warn_repeats else 0)
    for request in built.model.requests:
        lines = sum("[budgetloop] Budget left" in (m.content or "") for m in request.messages)
        assert lines <= (1 if budget_note else 0)
