"""The guards, each asserted alone with the others set high: the cost ceiling (projected before
each turn), the step and tool-call ceilings, the repetition guard and the deadline. Exact counts of
model calls and tool runs, exact stop reasons."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    Stop,
    ToolCall,
    Usage,
    max_turns_for,
    run,
    start,
    tool,
)
from budgetloop._rules._budget import estimate_message
from budgetloop.display import used_by
from tests.conftest import PRICE, FakeClock, always_calls, growing_count, make_search

# -- the cost guard: it projects the next turn's worst case and stops before a breach -------------


@pytest.mark.timeout(5)
def test_cost_guard_stops_before_the_turn_that_would_breach() -> None:
    log: list[tuple[str, int]] = []
    search = make_search(log)
    model = ScriptedModel([always_calls(log=log)], repeat_last=True)
    result = run(
        model,
        "find everything",
        tools=[search],
        budget=Budget(max_steps=1000, max_cost_usd=1.0),
        price=PRICE,
        max_output_tokens=400,
        count_tokens=growing_count(),
        repeat_limit=None,
    )
    # turn n costs (12,000 + 2,000(n-1)) x $3/M + 400 x $15/M = $0.042 + $0.006(n-1):
    # twelve turns cost $0.90, a thirteenth would bring it to $1.014.
    assert result.stop == Stop.MAX_COST_USD == "max_cost_usd"
    assert not result.answered
    assert result.answer is None
    assert len(result.steps) == 12
    assert model.calls == 12
    assert result.cost_usd == pytest.approx(0.90)
    assert result.cost_usd <= 1.0
    assert len(result.steps) == max_turns_for(
        1.0, start_tokens=12_000, tokens_per_turn=2_000, max_output_tokens=400, price=PRICE
    )
    # the partial work is there: every step, with what it cost
    assert [s.cost_usd for s in result.steps][:2] == pytest.approx([0.042, 0.048])
    # nothing ran after the final model call: its tools were skipped, not executed
    assert log[-1] == ("model", 12)
    assert search.count[0] == 11
    assert [c.status for c in result.steps[-1].tool_calls] == ["skipped"]
    assert len(result.tool_calls) == 11


def runaway(limit: float, output_tokens: int = 400) -> Any:
    """A model that asks for a tool every turn against a cost ceiling alone, on a context growing
    2,000 tokens a turn; returns the model and the result."""
    model = ScriptedModel([always_calls(output_tokens=output_tokens)], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=1000, max_cost_usd=limit),
        price=PRICE,
        max_output_tokens=output_tokens,
        count_tokens=growing_count(),
        repeat_limit=None,
    )
    return model, result


def test_cost_guard_equality_fits_despite_float_rounding() -> None:
    # $0.90 is not exact in binary floating point; the twelve turns sum to it exactly.
    _, result = runaway(0.9)
    assert len(result.steps) == 12
    assert result.cost_usd == 0.9
    _, below = runaway(0.899999)
    assert len(below.steps) == 11


def test_cost_guard_counts_output_tokens() -> None:
    # Output dominates: 20,000 tokens at $15/M is $0.30 a turn against ~$0.04 of input.
    model, result = runaway(1.0, output_tokens=20_000)
    # turns cost $0.336, $0.342, then a third at $0.348 would make $1.026
    assert result.stop == "max_cost_usd"
    assert model.calls == 2
    assert result.cost_usd == pytest.approx(0.678)
    assert result.cost_usd <= 1.0


def test_first_turn_that_cannot_fit_is_never_sent() -> None:
    model = ScriptedModel(["never sent"], price=PRICE, max_output_tokens=400)
    result = run(
        model, "hi", budget=Budget(max_cost_usd=0.01), count_tokens=growing_count(), tools=[]
    )
    assert result.stop == "max_cost_usd"
    assert model.calls == 0
    assert result.steps == ()
    assert result.cost_usd == 0
    assert "exceeds max_cost_usd" in (result.detail or "")


def test_cost_guard_projects_with_the_default_counter_and_model_attributes() -> None:
    # The README's shape: price and max_output_tokens come from the model callable.
    model = ScriptedModel(
        [always_calls(count=None)], repeat_last=True, price=PRICE, max_output_tokens=400
    )
    session = start(model, "go", tools=[make_search()], budget=Budget(max_cost_usd=0.2))
    before = session.projection
    assert model.calls == 0  # building a session and projecting call nothing
    assert before.output_tokens == 400
    assert before.limit_usd == 0.2
    assert before.spent_usd == 0
    assert before.fits
    assert before.cost_usd == PRICE.cost(before.input_tokens, 400)
    session.step()
    assert session.steps[0].projection == before


def test_projection_is_calibrated_by_the_usage_a_model_reports() -> None:
    # The provider says the first request was 100 tokens; our estimate said more. The next
    # projection takes the 100 as exact and estimates only what was appended since.
    first = Completion(tool_calls=[ToolCall("search", {"query": "a"}, "c1")], usage=Usage(100, 5))
    model = ScriptedModel([first, "done"], price=PRICE, max_output_tokens=50)
    session = start(model, "go " * 200, tools=[make_search()])
    estimated = session.projection.input_tokens
    assert estimated > 100
    session.step()
    appended = session.messages[-2:]
    added = sum(estimate_message(m) for m in appended)
    assert session.projection.input_tokens == 100 + added
    assert session.projection.cost_usd == PRICE.cost(100 + added, 50)


def test_spent_is_reported_cost_else_priced_usage() -> None:
    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("search", {"query": "a"})], usage=Usage(1000, 100), cost_usd=0.5),
            Completion(text="done", usage=Usage(1000, 100)),
        ]
    )  # fmt: skip
    result = run(model, "go", tools=[make_search()], price=PRICE)
    assert [s.cost_usd for s in result.steps] == [0.5, 0.0045]
    assert result.cost_usd == 0.5045


def test_cost_ceiling_without_price_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match=r"^start: price and max_output_tokens must be a Price"):
        start(ScriptedModel(["x"]), "hi", budget=Budget(max_cost_usd=1.0))
    with pytest.raises(ValueError, match=r"^run: max_output_tokens must be an int >= 1 with Budg"):
        run(ScriptedModel(["x"], price=PRICE), "hi", budget=Budget(max_cost_usd=1.0))


# -- the step ceiling -----------------------------------------------------------------------------


def test_step_ceiling_alone() -> None:
    search = make_search()
    model = ScriptedModel([always_calls()], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=5), repeat_limit=None)
    assert result.stop == "max_steps"
    assert model.calls == 5
    assert len(result.steps) == 5
    assert search.count[0] == 4  # the fifth turn's call could never be read: skipped
    assert [c.status for c in result.steps[4].tool_calls] == ["skipped"]


def test_step_ceiling_stops_a_free_tight_loop() -> None:
    # A free local tool spends nothing, so only the step ceiling ends this.
    model = ScriptedModel([always_calls(output_tokens=0)], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=50, max_cost_usd=1e6),
        price=PRICE,
        max_output_tokens=1,
        repeat_limit=None,
    )
    assert result.stop == "max_steps"
    assert model.calls == 50


# -- the tool-call ceiling ------------------------------------------------------------------------


def test_tool_call_ceiling_alone() -> None:
    twice = Completion(
        tool_calls=[ToolCall("search", {"query": "a"}), ToolCall("search", {"query": "b"})]
    )
    search = make_search()
    model = ScriptedModel([twice], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=100, max_tool_calls=7),
        repeat_limit=None,
    )
    # three turns run six calls; the fourth asks for two more, which would make eight
    assert result.stop == "max_tool_calls"
    assert model.calls == 4
    assert search.count[0] == 6
    assert len(result.tool_calls) == 6
    assert [c.status for c in result.steps[3].tool_calls] == ["skipped", "skipped"]


def test_a_call_the_check_refuses_never_runs_and_is_not_counted_against_max_tool_calls() -> None:
    search = make_search()
    three_and_a_bad_one = Completion(tool_calls=[
        ToolCall("search", {"query": "a"}, "a"),
        ToolCall("search", {"query": 5}, "bad"),  # arguments that do not fit
        ToolCall("search", {"query": "b"}, "b"),
        ToolCall("seach", {"query": "c"}, "unknown"),  # no such tool
        ToolCall("search", '{"query": "c"}', "c"),
    ])  # fmt: skip
    model = ScriptedModel([three_and_a_bad_one, "done"])
    result = run(model, "go", tools=[search], budget=Budget(max_tool_calls=3))
    assert (result.stop, result.answer, search.count[0]) == ("answered", "done", 3)
    assert [(c.id, c.status) for c in result.steps[0].tool_calls] == [
        ("a", "ok"), ("bad", "error"), ("b", "ok"), ("unknown", "error"), ("c", "ok")
    ]  # fmt: skip
    assert used_by(result).tool_calls == 3  # the meter counts what ran
    # a fourth call that would run is one too many; the refusal names the calls that would run
    four = replace(three_and_a_bad_one, tool_calls=[
        *three_and_a_bad_one.tool_calls, ToolCall("search", {"query": "d"}, "d")])  # fmt: skip
    stopped = run(ScriptedModel([four, "done"]), "go", tools=[search], finish=False,
                  budget=Budget(max_tool_calls=3))  # fmt: skip
    assert stopped.stop == "max_tool_calls"
    assert stopped.detail == "max_tool_calls=3: 0 run, this turn asks for 6, 4 that would run"
    assert search.count[0] == 3


# -- the input-token ceiling: the next request's input tokens, counted before it is sent ---------


def runaway_tokens(limit: int) -> Any:
    """A model that asks for a tool every turn against ``max_input_tokens`` alone, with no price,
    on a request growing 2,000 tokens a turn from 12,000; returns the model, search and result."""
    log: list[tuple[str, int]] = []
    search = make_search(log)
    model = ScriptedModel([always_calls(log=log)], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=1000, max_input_tokens=limit),
        count_tokens=growing_count(),
        repeat_limit=None,
    )
    return model, search, result


@pytest.mark.timeout(5)
def test_input_token_ceiling_alone_stops_before_sending_the_request_over_it() -> None:
    # request n counts 12,000 + 2,000(n-1): ten fit 30,000 (the tenth exactly), the eleventh
    # would count 32,000 and is never sent
    model, search, result = runaway_tokens(30_000)
    assert result.stop == Stop.MAX_INPUT_TOKENS == "max_input_tokens"
    assert not result.answered
    assert model.calls == 10 == len(result.steps)
    assert result.detail == (
        "the next request counts 32,000 input tokens, over max_input_tokens=30,000"
    )
    assert [s.projection.input_tokens for s in result.steps if s.projection][-1] == 30_000
    assert search.count[0] == 10  # an empty result could still be read: each batch ran
    assert runaway_tokens(29_999)[2].steps[-1].index == 8  # nine fit, never one more
    assert result.cost_usd == 0  # no price: the ceiling needs none


def test_a_first_request_over_the_input_token_ceiling_is_never_sent() -> None:
    model = ScriptedModel(["never sent"])
    result = run(model, "hi", budget=Budget(max_input_tokens=11_999), count_tokens=growing_count())
    assert (result.stop, model.calls, result.steps) == ("max_input_tokens", 0, ())
    assert result.detail == (
        "the next request counts 12,000 input tokens, over max_input_tokens=11,999"
    )


def test_a_batch_no_request_could_read_is_skipped_for_the_input_token_ceiling() -> None:
    # the assistant turn alone takes the next request past the ceiling: its calls never run
    search = make_search()
    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", {"query": "q" * 400})])])
    result = run(model, "hi", tools=[search], budget=Budget(max_input_tokens=150))
    assert result.stop == "max_input_tokens"
    assert model.calls == 1
    assert search.count[0] == 0
    assert [c.status for c in result.steps[0].tool_calls] == ["skipped"]
    assert (result.detail or "").startswith("no turn to read the results fits: the next request")


def test_the_session_says_before_the_step_that_the_input_token_ceiling_stops_it() -> None:
    session = start(
        ScriptedModel(["never sent"]),
        "hi",
        budget=Budget(max_input_tokens=100),
        count_tokens=growing_count(),
    )
    nxt = session.next_turn
    assert (nxt.action, nxt.stop) == ("stop", Stop.MAX_INPUT_TOKENS)
    assert nxt.detail == "the next request counts 12,000 input tokens, over max_input_tokens=100"
    assert nxt.projection is not None
    assert nxt.projection.input_tokens == 12_000


@pytest.mark.parametrize("value", [-1, 2.5, True])
def test_the_input_token_ceiling_is_a_count(value: Any) -> None:
    error = ValueError if value == -1 else TypeError
    got = "-1" if value == -1 else type(value).__name__
    with pytest.raises(error) as caught:
        Budget(max_input_tokens=value)
    assert str(caught.value) == (
        f"Budget: max_input_tokens must be an int >= 0 or None, got {got}."
    )


# -- the repetition guard -------------------------------------------------------------------------


def test_repetition_guard_alone() -> None:
    search = make_search()
    model = ScriptedModel([always_calls(vary=False)], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=100))
    assert result.stop == "repeated"
    assert model.calls == 3
    assert search.count[0] == 2  # the third identical request is not run
    assert result.steps[2].tool_calls[0].status == "skipped"


def test_repetition_guard_ignores_key_order_and_json_spacing() -> None:
    calls = [
        ToolCall("search", '{"query": "x", "page": 1}'),
        ToolCall("search", {"page": 1, "query": "x"}),
        ToolCall("search", '{"page":1,"query":"x"}'),
    ]

    @tool
    def search(query: str, page: int = 0) -> str:
        """Search."""
        return "nothing"

    model = ScriptedModel([Completion(tool_calls=[c]) for c in calls])
    assert run(model, "go", tools=[search]).stop == "repeated"


def test_repetition_guard_can_be_turned_off_and_counts_runs_not_totals() -> None:
    search = make_search()
    off = run(
        ScriptedModel([always_calls(vary=False)], repeat_last=True),
        "go",
        tools=[search],
        budget=Budget(max_steps=6),
        repeat_limit=None,
    )
    assert off.stop == "max_steps"
    a = Completion(tool_calls=[ToolCall("search", {"query": "a"})])
    b = Completion(tool_calls=[ToolCall("search", {"query": "b"})])
    alternating = run(ScriptedModel([a, a, b, a, a, "done"]), "go", tools=[make_search()])
    assert alternating.stop == "answered"


def test_repetition_guard_sees_real_arguments_when_the_trace_is_redacted() -> None:
    search = make_search()
    model = ScriptedModel([always_calls(vary=False)], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=100), redact=lambda s: s[:1])
    assert result.stop == "repeated"
    assert model.calls == 3
    assert result.steps[0].tool_calls[0].raw_arguments == {"q": "s"}


# -- the deadline (max_seconds) -------------------------------------------------------------------


def test_wall_clock_alone_with_a_fake_clock(clock: FakeClock) -> None:
    @tool
    def slow(query: str) -> str:
        """Takes two seconds."""
        clock.advance(2.0)
        return "ok"

    model = ScriptedModel([always_calls("slow")], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[slow],
        budget=Budget(max_steps=100, max_seconds=5),
        clock=clock,
        repeat_limit=None,
    )
    # batches start at 0 s, 2 s and 4 s; at 6 s no model call may start
    assert result.stop == "max_seconds"
    assert model.calls == 3
    assert len(result.tool_calls) == 3
    assert result.seconds == 6.0


def test_no_batch_starts_at_the_deadline(clock: FakeClock) -> None:
    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        clock.advance(5.0)  # the model call itself uses up the time
        return Completion(tool_calls=[ToolCall("search", {"query": "q"})])

    search = make_search()
    result = run(complete, "go", tools=[search], budget=Budget(max_seconds=5), clock=clock)
    assert result.stop == "max_seconds"
    assert search.count[0] == 0
    assert result.steps[0].tool_calls[0].status == "skipped"


@pytest.mark.timeout(10)
def test_a_hanging_tool_does_not_hold_the_run_past_the_deadline() -> None:
    release = threading.Event()

    @tool
    def hang(query: str) -> str:
        """Never returns on its own."""
        release.wait(30)
        return "late"

    @tool
    def quick(query: str) -> str:
        """Returns at once."""
        return "fast"

    model = ScriptedModel(
        [
            Completion(
                tool_calls=[ToolCall("quick", {"query": "a"}), ToolCall("hang", {"query": "b"})]
            )
        ]
    )
    began = time.monotonic()
    result = run(model, "go", tools=[quick, hang], budget=Budget(max_seconds=0.3))
    took = time.monotonic() - began
    release.set()
    assert took < 3
    assert result.stop == "max_seconds"
    quick_call, hang_call = result.steps[0].tool_calls
    assert (quick_call.status, quick_call.result) == ("ok", "fast")
    assert hang_call.status == "error"
    assert hang_call.error == "abandoned: still running when the max_seconds deadline passed"


@pytest.mark.timeout(10)
def test_a_hanging_model_is_abandoned_at_the_deadline() -> None:
    release = threading.Event()

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        release.wait(30)
        return Completion(text="too late")

    began = time.monotonic()
    result = run(complete, "go", budget=Budget(max_seconds=0.2))
    release.set()
    assert time.monotonic() - began < 3
    assert result.stop == "max_seconds"
    assert len(result.steps) == 1
    assert (result.steps[0].error or "").startswith("TimeoutError: the model call was still")
