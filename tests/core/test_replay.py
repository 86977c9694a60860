"""replay: a saved run again under new options; first_divergence: where two runs part."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Result,
    ScriptedModel,
    Stop,
    ToolCall,
    Usage,
    budget_report,
    first_divergence,
    load_trace,
    replay,
    resume,
    run,
    start,
    tool,
)
from tests.conftest import PRICE, FakeClock, always_calls
from tests.strategies import PRICE as RATES
from tests.strategies import PROMPT, Scenario, budgets, build, loop_options, scenarios


def trace_of(result: Result) -> dict[str, Any]:
    """A run as data, without what a replay cannot reproduce: time, tracebacks, and the run's
    id (a replay is a run of its own)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("seconds", "traceback", "run_id")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return dict(strip(result.to_dict()))


def yesterdays_run(budget: Budget | None = None) -> Result:
    """A runaway: every turn searches again, reporting 12,000 input tokens and more each turn."""

    @tool
    def search(query: str) -> str:
        """Search."""
        return f"results for {query}: " + "x" * 200

    return run(
        always_calls("search", output_tokens=400),
        "find it",
        tools=[search],
        budget=budget or Budget(max_steps=8),
        price=PRICE,
        max_output_tokens=500,
    )


# -- with no options, a replay is the run ---------------------------------------------------------


@given(scenarios(deterministic=True), loop_options())
def test_replay_reproduces_a_random_run(s: Scenario, options: dict[str, Any]) -> None:
    built = build(s)
    result = run(built.model, PROMPT, **built.kwargs, **options)
    assert trace_of(replay(result)) == trace_of(result)
    assert trace_of(replay(json.loads(json.dumps(result.to_dict())))) == trace_of(result)
    recorded = {**options, "repeat_limit": s.repeat_limit, "max_result_chars": 100_000}
    assert result.options == recorded
    # and what each step was sent, as the trace says, is what the model was sent
    for step, sent in zip(result.steps, built.model.requests, strict=True):
        said = result.request(step.index)
        assert sent.messages[: len(said.messages)] == said.messages
        assert sent.tools == said.tools
        extra = [m.content or "" for m in sent.messages[len(said.messages) :]]
        if step.final_answer and step.error is not None:  # the note of a failed final call
            assert [e[:13] for e in extra] == ["[budgetloop] "]
        elif extra:  # the budget line, sent and not kept
            assert (options["budget_note"], step.final_answer) == (True, False)
            assert [e[:26] for e in extra] == ["[budgetloop] Budget left: "]


@given(scenarios(deterministic=True), st.data())
def test_replay_reproduces_a_fork_of_a_random_run(s: Scenario, data: st.DataObject) -> None:
    s = replace(s, price=RATES, max_output_tokens=s.max_output_tokens or 32)
    built = build(s)
    session = start(built.model, PROMPT, **built.kwargs)
    for _ in range(data.draw(st.integers(0, 8))):
        session.step()
    at = data.draw(st.integers(0, len(session.steps)))
    budget = data.draw(budgets(costed=data.draw(st.booleans()), need_steps=True))
    fork = session.fork(at, budget=budget).run()
    if at and not fork.carried_usd:  # nothing says where it was forked: see replay()
        return
    again = replay(fork)
    assert trace_of(again) == trace_of(fork)
    assert again.forked_from == fork.forked_from == session.run_id


def test_a_fork_replays_with_the_spend_it_carried() -> None:
    # Three calls of $0.055; a fork after the first carries the other two's $0.11.
    turn = Completion(tool_calls=[ToolCall("note", {"label": "x"})], usage=Usage(5000, 500))
    rates = Price(input_per_mtok=10.0, output_per_mtok=10.0)
    model = ScriptedModel([turn] * 4, price=rates, max_output_tokens=500)

    @tool
    def note(label: str) -> str:
        """Notes."""
        return label

    session = start(model, "go", tools=[note], budget=Budget(max_steps=3))
    assert session.run().cost_usd == pytest.approx(0.165)
    fork = session.fork(1, budget=Budget(max_cost_usd=0.2)).run()
    assert (fork.stop, len(fork.steps), fork.carried_usd) == (Stop.MAX_COST_USD, 2, 0.11)
    assert fork.cost_usd == pytest.approx(0.22)
    again = replay(fork)
    assert (again.stop, again.cost_usd, again.detail) == (fork.stop, fork.cost_usd, fork.detail)
    assert trace_of(again) == trace_of(fork)


@st.composite
def tighter(draw: st.DrawFn, budget: Budget) -> Budget:
    """A budget no looser than ``budget`` in any ceiling."""

    def at_most(value: float | None, top: int) -> Any:
        if value is None:
            return draw(st.none() | st.integers(0, top))
        return draw(st.integers(0, int(value)))

    cost = budget.max_cost_usd
    return Budget(
        max_steps=at_most(budget.max_steps, 8),
        max_seconds=at_most(budget.max_seconds, 8),
        max_tool_calls=at_most(budget.max_tool_calls, 8),
        max_cost_usd=None if cost is None else draw(st.integers(0, round(cost * 1e5))) * 1e-5,
    )


@given(st.data())
def test_replay_under_a_tighter_budget_is_the_run_that_budget_gives(data: st.DataObject) -> None:
    s = data.draw(scenarios(deterministic=True))
    built = build(s)
    recorded = run(built.model, PROMPT, **built.kwargs)
    budget = data.draw(tighter(s.budget))
    live = build(s)
    expected = run(live.model, PROMPT, **{**live.kwargs, "budget": budget})
    assert trace_of(replay(recorded, budget=budget)) == trace_of(expected)


def test_replay_under_an_input_token_ceiling_is_the_run_that_ceiling_gives() -> None:
    recorded = yesterdays_run()
    projected = [s.projection.input_tokens for s in recorded.steps if s.projection]
    assert projected == sorted(projected)
    assert len(set(projected)) == len(projected)
    budget = Budget(max_steps=8, max_input_tokens=projected[3])  # the fourth request fits
    replayed = replay(recorded, budget=budget)
    assert replayed.stop == "max_input_tokens"
    assert len(replayed.steps) == 4
    assert trace_of(replayed) == trace_of(yesterdays_run(budget))


def test_replay_reads_a_result_its_dict_and_a_saved_file(tmp_path: Path) -> None:
    result = yesterdays_run()
    path = tmp_path / "run.json"
    result.save(path)
    expected = trace_of(result)
    assert trace_of(replay(result)) == expected
    assert trace_of(replay(result.to_dict())) == expected
    assert trace_of(replay(json.loads(path.read_text()))) == expected
    assert trace_of(replay(path)) == expected
    assert trace_of(replay(str(path))) == expected


def test_a_journal_replays_as_it_was_written(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("search", {"query": "a"})]), "done"], price=PRICE
    )

    @tool
    def search(query: str) -> str:
        """Search."""
        raise KeyError(query)

    result = run(model, "go", tools=[search], trace_path=tmp_path / "run.jsonl")
    replayed = replay(tmp_path / "run.jsonl")
    assert replayed.failed[0].error == "KeyError: 'a'"
    assert trace_of(replayed) == trace_of(result)


# -- under a new budget ---------------------------------------------------------------------------


def test_would_ten_cents_have_stopped_yesterdays_run_and_where() -> None:
    yesterday = yesterdays_run()
    assert (yesterday.stop, len(yesterday.steps), yesterday.cost_usd) == ("max_steps", 8, 0.354144)
    answer = replay(yesterday, budget=Budget(max_steps=8, max_cost_usd=0.10))
    assert answer.stop == Stop.MAX_COST_USD
    assert len(answer.steps) == 2  # step 1's batch was skipped: no turn to read it fits
    assert [c.status for c in answer.steps[1].tool_calls] == ["skipped"]
    assert answer.cost_usd == 0.084648
    assert answer.detail == (
        "no turn to read the results fits: next turn projected $0.044304 (12,268 in + 500 out tokens) "
        "on $0.084648 spent exceeds max_cost_usd=$0.10"
    )
    # exactly what a live run under that budget does
    live = yesterdays_run(Budget(max_steps=8, max_cost_usd=0.10))
    assert trace_of(answer) == trace_of(live)


def test_a_looser_budget_runs_out_of_recording_and_says_so() -> None:
    yesterday = yesterdays_run()
    replayed = replay(yesterday, budget=Budget(max_steps=20))
    assert replayed.stop is None
    assert replayed.detail == (
        "replay: the run goes on past the 8 recorded steps, and what the model said next was "
        "never recorded"
    )
    assert [trace_of(replayed)["steps"][i] for i in range(7)] == trace_of(yesterday)["steps"][:7]
    # the call skipped in the recorded last step ran here, and has no recorded result
    (last,) = replayed.steps[7].tool_calls
    assert last.status == "error"
    assert last.error == (
        "LookupError: search: the recorded run has no result for this call (it was not run "
        "there), so a replay cannot say what the tool would have returned"
    )


def test_a_new_price_re_prices_usage_but_not_reported_costs() -> None:
    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("f", {})], usage=Usage(1000, 100)),
            Completion(text="done", usage=Usage(2000, 10), cost_usd=0.5),
        ]
    )

    result = run(model, "go", tools=[f], price=Price(1.0, 10.0))
    assert result.tool_calls[0].result == "0"
    assert [s.cost_usd for s in result.steps] == [0.002, 0.5]
    again = replay(result, price=Price(2.0, 20.0))
    assert [s.cost_usd for s in again.steps] == [0.004, 0.5]
    assert again.price == Price(2.0, 20.0)


def test_a_cut_result_is_cut_again_at_the_same_place() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("dump", {})]), "done"])

    @tool
    def dump() -> str:
        """Dump."""
        return "abcdefghij" * 5

    result = run(model, "go", tools=[dump], max_result_chars=12)
    assert result.tool_calls[0].truncated == 50
    assert trace_of(replay(result)) == trace_of(result)


def test_a_model_error_and_a_repeat_stop_replay_as_recorded() -> None:
    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError("the provider hung up: 'x'")

    errored = run(ScriptedModel([broken]), "go")
    assert errored.error == "ConnectionError: the provider hung up: 'x'"
    assert trace_of(replay(errored)) == trace_of(errored)

    same = Completion(tool_calls=[ToolCall("f", '{"a": 1}')])
    repeated = run(ScriptedModel([same], repeat_last=True), "go", tools=[f], repeat_limit=2)
    assert (repeated.stop, len(repeated.steps)) == (Stop.REPEATED, 2)
    assert trace_of(replay(repeated)) == trace_of(repeated)


def test_a_trace_file_that_does_not_load_is_named_by_the_function_called(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"format": "budgetloop-trace", "version": 1}), encoding="utf-8")
    with pytest.raises(ValueError, match="must be") as info:
        replay(path)
    assert str(info.value) == f"replay: {path}: steps must be present, got nothing."
    with pytest.raises(ValueError, match="must be") as info:
        first_divergence(yesterdays_run(), path)
    assert str(info.value) == f"first_divergence: {path}: steps must be present, got nothing."


def test_bad_traces_and_options_fail_with_the_thing_named() -> None:
    result = yesterdays_run()
    with pytest.raises(
        TypeError, match=r"replay: trace must be a Result, a dict from Result\.to_dict"
    ):
        replay(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be") as info:
        replay({"steps": []})
    assert str(info.value) == (
        "replay: format must be 'budgetloop-trace', got None: not a budgetloop trace."
    )
    with pytest.raises(
        TypeError, match=r"^replay: each option .*, got 'tools' \(the replay's own"
    ):
        replay(result, tools=[])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r", got 'trace_path' \(save the result instead\)\.$"):
        replay(result, trace_path="x.jsonl")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^replay: each option must be one of budget, .*'bugdet'"):
        replay(result, bugdet=Budget())  # type: ignore[call-arg]
    data = result.to_dict()
    data["messages"] = data["messages"][:2]
    with pytest.raises(ValueError, match="messages") as info:
        replay(data)
    assert str(info.value) == (
        "replay: messages must be at least the 16 messages that steps 0 to 7 appended, got 2; the "
        "messages are not this run's."
    )
    data = result.to_dict()
    data["price"] = None
    with pytest.raises(
        ValueError,
        match=r"^replay: price must be a Price with Budget\(max_cost_usd=\.\.\.\), which",
    ):
        replay(data, budget=Budget(max_cost_usd=1.0))
    data["tools"] = [{"name": "search"}]
    with pytest.raises(ValueError, match="must be") as info:
        replay(data)
    assert str(info.value) == (
        "replay: tools[0] must be a tool schema with a name and parameters.properties, "
        'got {"name": "search"}.'
    )


# -- first_divergence -----------------------------------------------------------------------------


@tool
def f(a: int = 0, b: str = "") -> str:
    """F."""
    return f"{a}{b}"


def scripted(*turns: Completion | str) -> Result:
    return run(ScriptedModel(list(turns)), "go", tools=[f])


def test_first_divergence_of_a_run_with_itself_is_none(tmp_path: Path) -> None:
    result = yesterdays_run()
    result.save(tmp_path / "a.json")
    assert first_divergence(result, result) is None
    assert first_divergence(result.to_dict(), tmp_path / "a.json") is None
    assert first_divergence(result, replay(result)) is None


def test_key_order_spacing_and_ids_do_not_count() -> None:
    a = scripted(Completion(tool_calls=[ToolCall("f", '{"a": 1, "b": "x"}', id="one")]), "ok")
    b = scripted(Completion(tool_calls=[ToolCall("f", {"b": "x", "a": 1}, id="two")]), "ok")
    c = scripted(Completion(tool_calls=[ToolCall("f", '{"b":"x","a":1}')]), "ok")
    assert first_divergence(a, b) is None
    assert first_divergence(a, c) is None


def test_the_first_step_that_differs_is_named() -> None:
    call = Completion(text="looking", tool_calls=[ToolCall("f", {"a": 1})])
    base = scripted(call, call, "the answer")
    assert first_divergence(base, scripted(call, call, "another answer")) == 2
    other_args = Completion(text="looking", tool_calls=[ToolCall("f", {"a": 2})])
    assert first_divergence(base, scripted(call, other_args, "the answer")) == 1
    assert first_divergence(base, scripted(call, Completion(text="looking"))) == 1
    other_text = Completion(text="searching", tool_calls=[ToolCall("f", {"a": 1})])
    assert first_divergence(base, scripted(other_text, call, "the answer")) == 0
    both = Completion(text="looking", tool_calls=[ToolCall("f", {"a": 1}), ToolCall("f", {})])
    assert first_divergence(base, scripted(call, both, "the answer")) == 1
    assert first_divergence(base, scripted(call, call, "the answer")) is None


def test_a_prefix_diverges_at_its_length_and_an_error_is_a_difference() -> None:
    call = Completion(tool_calls=[ToolCall("f", {"a": 1})])
    full = scripted(call, call, "done")
    cut = run(ScriptedModel([call, call]), "go", tools=[f], budget=Budget(max_steps=2))
    assert len(cut.steps) == 2
    # the model said the same at step 1, but the cut run's call there never ran (its last step)
    assert [c.status for c in cut.steps[1].tool_calls] == ["skipped"]
    assert first_divergence(full, cut) == 1
    assert first_divergence(cut, full) == 1
    longer = run(ScriptedModel([call, call]), "go", tools=[f], budget=Budget(max_steps=3))
    assert first_divergence(longer, cut) == 1  # a prefix diverges at its length, or before
    assert first_divergence(full, scripted(call, call)) == 2
    failed = scripted(call)  # the model's second call raises IndexError
    assert failed.steps[1].error is not None
    assert first_divergence(full, failed) == 1


def test_arguments_that_are_not_an_object_are_compared_as_written() -> None:
    a = scripted(Completion(tool_calls=[ToolCall("f", "{not json")]), "ok")
    b = scripted(Completion(tool_calls=[ToolCall("f", "{not  json")]), "ok")
    c = scripted(Completion(tool_calls=[ToolCall("f", "")]), "ok")
    d = scripted(Completion(tool_calls=[ToolCall("f", "{}")]), "ok")
    assert first_divergence(a, b) == 0
    assert first_divergence(c, d) is None
    with pytest.raises(TypeError, match="first_divergence: b must be a Result"):
        first_divergence(a, [1])  # type: ignore[arg-type]


def test_a_run_that_ended_on_a_final_answer_replays_to_the_same_answer() -> None:
    from budgetloop import Completion, ScriptedModel, ToolCall, run

    calls = [Completion(tool_calls=[ToolCall("lookup", {"isin": f"SE{i}"})]) for i in range(2)]
    model = ScriptedModel([*calls, "all I found"], price=Price(3.0, 15.0), max_output_tokens=100)

    def lookup(isin: str) -> str:
        """Look up."""
        return f"{isin}: 1.0"

    original = run(model, "go", tools=[lookup], budget=Budget(max_steps=3), finish=True)
    assert (original.stop, original.answer) == ("max_steps", "all I found")
    again = replay(original)
    assert (again.stop, again.answer) == ("max_steps", "all I found")
    assert [s.final_answer for s in again.steps] == [False, False, True]


def test_each_call_of_a_batch_replays_with_its_own_seconds() -> None:
    clock = FakeClock()

    @tool
    def slow(q: str) -> str:
        """Takes two seconds."""
        clock.advance(2)
        return "slow " + q

    @tool
    def quick(q: str) -> str:
        """Takes one second."""
        clock.advance(1)
        return "quick " + q

    calls = [ToolCall("slow", {"q": "a"}), ToolCall("quick", {"q": "b"})]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    # one worker: the calls run one after the other, the quick one after the slow one
    result = run(model, "go", tools=[slow, quick], clock=clock, max_workers=1)
    assert [c.seconds for c in result.tool_calls] == [2.0, 1.0]
    again = replay(result)
    assert [c.seconds for c in again.tool_calls] == [2.0, 1.0]
    assert [s.seconds for s in again.steps] == [s.seconds for s in result.steps] == [3.0, 0.0]


# -- the options a run was started with are in its trace, and a replay uses them -----------------


def reading(max_cost_usd: float) -> Result:
    """A run with finish=True that reads a short page, then a long one, under a cost ceiling."""

    @tool
    def read(page: int) -> str:
        """Read a page."""
        return "x" * [400, 40_000][page]

    calls = [
        Completion(f"reading page {p}", [ToolCall("read", {"page": p}, f"r{p}")]) for p in (0, 1)
    ]
    model = ScriptedModel([*calls, "what I read"], price=PRICE, max_output_tokens=100)
    return run(model, "go", tools=[read], budget=Budget(max_cost_usd=max_cost_usd), finish=True)


def test_a_run_that_ended_on_a_final_answer_replays_as_it_ran() -> None:
    result = reading(0.004)
    assert [s.final_answer for s in result.steps] == [False, True]
    # the second call was the final answer: sent without tools, its call recorded as skipped
    assert (result.stop, result.answer) == ("max_cost_usd", "reading page 1")
    assert result.steps[1].tool_calls[0].status == "skipped"
    again = replay(result)
    assert [s.projection for s in again.steps] == [s.projection for s in result.steps]
    assert (again.stop, again.answer, again.cost_usd) == (
        result.stop,
        result.answer,
        result.cost_usd,
    )
    assert trace_of(again) == trace_of(result)


def test_a_finish_run_that_never_made_its_final_call_replays_with_finish() -> None:
    # the long page grew the context past what a final answer could be paid for
    result = reading(0.01)
    assert [s.final_answer for s in result.steps] == [False, False]
    assert result.detail == (
        "no final answer fits: next turn projected $0.04263 (13,710 in + 100 out tokens) on $0.00171 "
        "spent exceeds max_cost_usd=$0.01"
    )
    assert trace_of(replay(result)) == trace_of(result)
    assert result.options["finish"] is True
    # without finish, the run stops on the turn with tools it would have taken instead
    other = replay(result, finish=False)
    assert other.options["finish"] is False
    assert other.detail == (
        "next turn projected $0.04245 (13,650 in + 100 out tokens) on $0.00171 spent exceeds "
        "max_cost_usd=$0.01"
    )


def test_a_warning_and_the_budget_note_replay_as_they_were_given() -> None:
    same = Completion(tool_calls=[ToolCall("f", {"a": 1})])
    model = ScriptedModel([same, same, same, "done"], price=PRICE, max_output_tokens=50)
    result = run(model, "go", tools=[f], budget=Budget(max_steps=6), warn_repeats=True,
                 budget_note=True)  # fmt: skip
    assert (result.stop, len(result.steps)) == ("answered", 4)
    assert "[budgetloop] You are repeating yourself" in (result.messages[-2].content or "")
    again = replay(result)
    assert again.messages == result.messages
    assert [s.projection for s in again.steps] == [s.projection for s in result.steps]
    assert trace_of(again) == trace_of(result)


def test_a_trace_written_before_options_were_recorded_replays_as_before() -> None:
    result = reading(0.004)
    data = result.to_dict()
    del data["options"]
    older = Result.from_dict(data)
    assert older.options == {}
    # what its steps show is enough here: a final answer means finish=True
    again = replay(older)
    assert again.options["finish"] is True
    assert {**trace_of(again), "options": {}} == {**trace_of(result), "options": {}}


def test_a_new_price_re_prices_cached_input_at_its_own_rates() -> None:
    cached = Usage(10_000, 100, cache_read_tokens=6_000, cache_write_tokens=2_000)
    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("f", {})], usage=cached),
            Completion("done", usage=cached),
        ]
    )
    then = Price(3.0, 15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)
    result = run(model, "go", tools=[f], price=then)
    # 2,000 uncached at $3, 6,000 read at $0.30, 2,000 written at $3.75, 100 out at $15
    assert [s.cost_usd for s in result.steps] == [0.0168, 0.0168]
    now = Price(1.0, 5.0, cache_read_per_mtok=0.1, cache_write_per_mtok=1.25)
    again = replay(result, price=now)
    # 2,000 at $1, 6,000 at $0.10, 2,000 at $1.25, 100 at $5
    assert [s.cost_usd for s in again.steps] == [0.0056, 0.0056]
    assert again.cost_usd == 0.0112
    assert trace_of(replay(result)) == trace_of(result)


def test_steps_that_said_the_same_but_did_otherwise_diverge() -> None:
    # issue 29, item 5: CompareView folded a step as "the same in both runs" though one run ran
    # its call and the other skipped it (max_tool_calls): the step did otherwise
    call = Completion(text="looking", tool_calls=[ToolCall("f", {"a": 1})])
    ran = run(ScriptedModel([call, "done"]), "go", tools=[f])
    skipped = run(ScriptedModel([call, "done"]), "go", tools=[f], budget=Budget(max_tool_calls=0))
    assert [c.status for c in ran.steps[0].tool_calls] == ["ok"]
    assert [c.status for c in skipped.steps[0].tool_calls] == ["skipped"]
    assert first_divergence(ran, skipped) == 0

    # the same call that returned something else: the model read another result
    @tool(name="f")
    def other_f(a: int = 0, b: str = "") -> str:
        """F."""
        return "another result"

    other = run(ScriptedModel([call, "done"]), "go", tools=[other_f])
    assert other.steps[0].tool_calls[0].content == "another result"
    assert first_divergence(ran, other) == 0
    # what the model said and what came of it the same: the runs agree
    assert first_divergence(ran, run(ScriptedModel([call, "done"]), "go", tools=[f])) is None


def test_a_run_of_unknown_cost_replayed_or_resumed_without_a_price_stays_unknown(
    tmp_path: Path,
) -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "price", "arguments": '{"isin": "A"}'}}  # fmt: skip
    log = [
        {"role": "user", "content": "What is A worth?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "118.4"},
        {"role": "assistant", "content": "A is 118.4."},
    ]
    (tmp_path / "log.json").write_text(json.dumps(log))
    imported = load_trace(tmp_path / "log.json")
    assert imported.cost_usd is None  # a log holds no usage, cost or price
    again = replay(imported)
    assert (again.stop, again.cost_usd) == (Stop.ANSWERED, None)
    assert [s.cost_usd for s in again.steps] == [None, None]
    assert again.format().endswith("cost=unknown")

    @tool
    def price(isin: str) -> str:
        """The price."""
        return "118.4"

    journal = tmp_path / "resumed.jsonl"
    resumed = resume(imported, ScriptedModel(["A is 118.4."]), tools=[price], at=1,
                     trace_path=journal).run()  # fmt: skip
    assert (resumed.stop, resumed.cost_usd) == (Stop.ANSWERED, None)
    assert [s.cost_usd for s in resumed.steps] == [None, None]
    assert load_trace(journal).cost_usd is None
    report = budget_report([again, resumed])
    assert (report.total_cost_usd, report.unknown_cost) == (None, ("#0", "#1"))
    # with a price, what the replay can price is priced
    assert replay(imported, price=Price(1.0, 1.0), max_output_tokens=10).cost_usd is not None


def test_replay_asks_for_a_missing_price_or_max_output_tokens_in_words_it_can_follow(
    tmp_path: Path,
) -> None:
    log = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    (tmp_path / "log.json").write_text(json.dumps(log))
    imported = load_trace(tmp_path / "log.json")  # a log records neither
    with pytest.raises(ValueError, match=r"^replay: max_output_tokens") as info:
        replay(imported, budget=Budget(max_cost_usd=1.0), price=Price(1.0, 1.0))
    assert str(info.value) == (
        "replay: max_output_tokens must be an int >= 1 with Budget(max_cost_usd=...), which "
        "projects each turn's worst case before it is sent, got None. Pass it to replay: the "
        "trace records none."
    )
    with pytest.raises(ValueError, match=r"^replay: price and max_output_tokens") as info:
        replay(imported, budget=Budget(max_cost_usd=1.0))
    assert "Pass them to replay: the trace records none." in str(info.value)
    assert "model callable" not in str(info.value)  # replay gives no way to set its model's


def test_a_call_approve_edits_in_a_replay_has_no_recorded_result() -> None:
    """The recorded result answers the arguments the call ran with, and no others: a call a
    replay's ``approve`` edits was never run with its new arguments."""

    @tool(needs_approval=True)
    def transfer(to: str, amount: float) -> str:
        """Send money."""
        return f"sent {amount:g} to {to}"

    paying = Completion(tool_calls=[ToolCall("transfer", {"to": "a", "amount": 50}, "c1")])
    model = ScriptedModel([paying, "done"], price=PRICE, max_output_tokens=100)
    recorded = run(model, "pay", tools=[transfer], approve=lambda call: True)
    assert recorded.steps[0].tool_calls[0].result == "sent 50 to a"
    again = replay(recorded, approve=lambda call: {"to": "a", "amount": 1})
    (call,) = again.steps[0].tool_calls
    assert (call.approval, call.arguments, call.status, call.result) == (
        "edited",
        {"to": "a", "amount": 1.0},
        "error",
        None,
    )
    assert call.error == (
        "LookupError: transfer: the recorded run has no result for this call (it was not run "
        "there), so a replay cannot say what the tool would have returned"
    )
    # approved as recorded, the same call is given its recorded result
    same = replay(recorded, approve=lambda call: True)
    assert same.steps[0].tool_calls[0].result == "sent 50 to a"
