"""A model that raises, returns something other than a Completion, runs out of script, or reports
an impossible cost or usage: each ends the run as model_error with the steps so far kept."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Result,
    ScriptedModel,
    Stop,
    ToolCall,
    UnreadableReply,
    Usage,
    arun,
    format_usd,
    load_trace,
    replay,
    run,
    start,
)
from budgetloop._engine._types import to_pico
from budgetloop.display import step_head
from tests.conftest import PRICE, make_search


def test_a_model_that_raises_ends_the_run_with_the_steps_kept() -> None:
    def boom(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise RuntimeError("provider unavailable")

    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", {"query": "a"})]), boom])
    result = run(model, "go", tools=[make_search()])
    assert result.stop == "model_error"
    assert result.error == "RuntimeError: provider unavailable"
    assert len(result.steps) == 2
    assert result.steps[0].tool_calls[0].status == "ok"
    assert result.steps[1].error == "RuntimeError: provider unavailable"


@pytest.mark.parametrize(("returned", "kind"), [(None, "None"), ("text", "str")])
def test_a_model_that_returns_something_else_is_a_model_error(returned: Any, kind: str) -> None:
    result = run(lambda messages, tools: returned, "go")
    assert result.stop == "model_error"
    assert result.error == (
        f"TypeError: the model returned {kind}, expected a Completion(text=..., tool_calls=[...])"
    )


def test_an_exhausted_script_is_a_model_error_not_a_crash() -> None:
    result = run(ScriptedModel([]), "go")
    assert result.stop == "model_error"
    assert result.error == (
        "IndexError: ScriptedModel: each call must be one of the script's 0 entries, got call 1; "
        "add entries or pass repeat_last=True."
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Completion(text="x", cost_usd=float("nan")),
            "ValueError: Completion: cost_usd must be",
        ),
        (
            lambda: Completion(text="x", usage=Usage(-5, 2)),
            "ValueError: Usage: input_tokens must be",
        ),
    ],
)
def test_a_model_reporting_impossible_cost_or_usage_is_a_model_error(
    make: Any, message: str
) -> None:
    result = run(lambda messages, tools: make(), "go", price=PRICE)
    assert result.stop == "model_error"
    assert (result.error or "").startswith(message)
    assert result.cost_usd == 0


# -- a reply that arrived but could not be read: billed, never $0 -------------------------------

# what the unreadable reply reported: 4,000 x $3 + 300 x $15 per million = $0.0165 (PRICE has
# no cache rate, so the cached part is input)
READ = Usage(4_000, 300, cache_read_tokens=1_000)
ASKED = Usage(500, 20)  # the step before it: $0.0018
ASK = Completion(tool_calls=[ToolCall("search", {"query": "a"})], usage=ASKED)


def unreadable(usage: Any = READ, **reported: Any) -> Any:
    def reply(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise UnreadableReply("shell: custom_tool_call is not read", usage, **reported)

    return reply


def spent_at(model: ScriptedModel, driver: str, ledger: MemoryLedger) -> Result:
    options: dict[str, Any] = {"tools": [make_search()], "ledger": ledger}
    if driver == "run":
        return run(model, "go", **options)
    if driver == "run with max_seconds":  # each step on the session's own thread
        return run(model, "go", budget=Budget(max_seconds=60), **options)
    if driver == "Session.step":
        session = start(model, "go", **options)
        while not session.done:
            session.step()
        return session.result
    if driver == "arun":
        return asyncio.run(arun(model, "go", **options))
    raise AssertionError(driver)


DRIVERS = ["run", "run with max_seconds", "Session.step", "arun"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_unreadable_reply_is_billed_at_the_usage_it_reported(driver: str) -> None:
    ledger = MemoryLedger(1.0)
    model = ScriptedModel([ASK, unreadable()], price=PRICE, max_output_tokens=400)
    result = spent_at(model, driver, ledger)

    assert (result.stop, result.error) == (
        Stop.MODEL_ERROR,
        "UnreadableReply: shell: custom_tool_call is not read",
    )
    last = result.steps[1]
    assert (last.error, last.usage) == (result.error, READ)
    assert last.cost_usd == 0.0165
    assert result.cost_usd == 0.0183
    assert ledger.spent_pico() == sum(to_pico(s.cost_usd or 0) for s in result.steps)
    assert ledger.reserved_pico() == 0
    assert step_head(last).startswith("Step 1 · $0.0165 reported · 4,000 in / 300 out tokens")


def test_an_async_model_raising_an_unreadable_reply_is_billed_too() -> None:
    async def reply(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise UnreadableReply("queued", READ)

    for result in (
        run(reply, "go", price=PRICE, max_output_tokens=400),
        asyncio.run(arun(reply, "go", price=PRICE, max_output_tokens=400)),
    ):
        assert (result.error, result.cost_usd) == ("UnreadableReply: queued", 0.0165)


@pytest.mark.parametrize(
    "usage", [None, {"input_tokens": 4_000, "output_tokens": 300}, "4000"], ids=repr
)
def test_an_unreadable_reply_without_a_usage_is_billed_at_the_projection(usage: Any) -> None:
    ledger = MemoryLedger(1.0)
    model = ScriptedModel([unreadable(usage)], price=PRICE, max_output_tokens=400)
    result = run(model, "go", ledger=ledger)

    step = result.steps[0]
    assert step.projection is not None
    assert step.projection.cost_usd
    assert step.usage is None
    assert step.cost_usd == result.cost_usd == step.projection.cost_usd
    assert ledger.spent_usd() == step.projection.cost_usd
    assert f"{format_usd(step.cost_usd)} charged at the projection" in step_head(step)


def test_an_unreadable_reply_with_a_reported_cost_is_billed_that_cost() -> None:
    model = ScriptedModel([unreadable(cost_usd=0.5)], price=PRICE, max_output_tokens=400)
    assert run(model, "go").cost_usd == 0.5
    model = ScriptedModel([unreadable(cost_usd=float("nan"))], price=PRICE)  # none: the usage
    assert run(model, "go", max_output_tokens=400).cost_usd == 0.0165


def test_an_unreadable_reply_of_a_subclass_that_sets_nothing_is_billed_at_the_projection() -> None:
    class Bare(UnreadableReply):
        def __init__(self) -> None:  # never calls UnreadableReply.__init__
            Exception.__init__(self, "bare")

    def reply(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise Bare()

    result = run(reply, "go", price=PRICE, max_output_tokens=400)
    step = result.steps[0]
    assert (result.error, step.usage) == ("Bare: bare", None)
    assert step.projection is not None
    assert result.cost_usd == step.projection.cost_usd


def test_any_other_exception_is_a_call_the_provider_refused_and_costs_nothing() -> None:
    def refused(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError("HTTP 503")

    ledger = MemoryLedger(1.0)
    result = run(ScriptedModel([refused], price=PRICE, max_output_tokens=400), "go", ledger=ledger)
    assert (result.error, result.cost_usd, ledger.spent_usd()) == (
        "ConnectionError: HTTP 503",
        0.0,
        0.0,
    )
    assert step_head(result.steps[0]).startswith("Step 0 · nothing charged: the model raised")


@pytest.mark.parametrize("usage", [READ, None], ids=["usage", "no usage"])
def test_a_billed_model_error_round_trips_and_replays_at_its_cost(
    usage: Usage | None, tmp_path: Path
) -> None:
    model = ScriptedModel([ASK, unreadable(usage)], price=PRICE, max_output_tokens=400)
    result = run(model, "go", tools=[make_search()], trace_path=tmp_path / "run.jsonl")
    billed = result.steps[1].cost_usd
    assert billed  # the usage, or the projection

    assert Result.from_dict(result.to_dict()) == result
    assert load_trace(tmp_path / "run.jsonl").to_dict() == result.to_dict()
    again = replay(result)
    assert (again.error, again.steps[1].usage, again.steps[1].cost_usd) == (
        result.error,
        usage,
        billed,
    )
    assert again.cost_usd == result.cost_usd
    played = run(ScriptedModel.from_trace(result), "go", tools=[make_search()])
    assert (played.error, played.cost_usd) == (result.error, result.cost_usd)
