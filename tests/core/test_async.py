"""The async driver: awaited models and tools, the same guards, cancellation that leaves no mess."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    ToolCall,
    arun,
    astart,
    run,
    start,
    tool,
)
from tests.conftest import PRICE, FakeClock


def two_calls(*names: str) -> Completion:
    return Completion(tool_calls=[ToolCall(n, {"x": i}, f"id{i}") for i, n in enumerate(names)])


class AsyncScripted:
    """An async model over a ScriptedModel, as an async SDK adapter would be."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.price = model.price
        self.max_output_tokens = model.max_output_tokens

    async def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        await asyncio.sleep(0)
        return self.model(messages, tools)


@pytest.mark.timeout(10)
def test_async_tools_in_one_turn_overlap() -> None:
    state = {"running": 0, "peak": 0}

    @tool
    async def wait(x: int) -> int:
        """Wait a little."""
        state["running"] += 1
        state["peak"] = max(state["peak"], state["running"])
        await asyncio.sleep(0.05)
        state["running"] -= 1
        return x * 10

    model = AsyncScripted(ScriptedModel([two_calls("wait", "wait", "wait"), "done"]))
    result = asyncio.run(arun(model, "go", tools=[wait]))
    assert result.stop == "answered"
    assert state["peak"] == 3
    assert [c.result for c in result.tool_calls] == ["0", "10", "20"]


@pytest.mark.timeout(10)
def test_the_deadline_cancels_a_hanging_async_tool() -> None:
    cancelled: list[bool] = []

    @tool
    async def hang(x: int) -> str:
        """Never finishes."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "late"

    @tool
    async def quick(x: int) -> str:
        """Finishes at once."""
        return "fast"

    model = AsyncScripted(ScriptedModel([two_calls("quick", "hang")]))
    began = time.monotonic()
    result = asyncio.run(arun(model, "go", tools=[quick, hang], budget=Budget(max_seconds=0.2)))
    assert time.monotonic() - began < 3
    assert result.stop == "max_seconds"
    assert [c.status for c in result.steps[0].tool_calls] == ["ok", "error"]
    assert result.steps[0].tool_calls[1].error == (
        "abandoned: still running when the max_seconds deadline passed"
    )
    assert cancelled == [True]


@pytest.mark.timeout(10)
def test_the_deadline_cancels_a_hanging_async_model() -> None:
    async def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        await asyncio.sleep(30)
        return Completion(text="late")

    result = asyncio.run(arun(complete, "go", budget=Budget(max_seconds=0.1)))
    assert result.stop == "max_seconds"
    assert len(result.steps) == 1
    assert result.steps[0].error == (
        "TimeoutError: the model call was still running when max_seconds passed"
    )


@pytest.mark.timeout(10)
def test_a_step_cancelled_mid_batch_is_billed_and_recorded_with_its_calls_marked() -> None:
    started = asyncio.Event()

    @tool
    async def slow(x: int) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    @tool
    async def fine(x: int) -> str:
        """Fine."""
        return "ok"

    script = [two_calls("fine"), two_calls("slow"), "unused"]
    model = AsyncScripted(ScriptedModel(script))

    async def main() -> Any:
        session = astart(model, "go", tools=[fine, slow], price=PRICE)
        await session.step()
        task = asyncio.ensure_future(session.step())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return session

    session = asyncio.run(main())
    result = session.result
    # The model call of step 1 returned: it is billed and recorded, not forgotten.
    assert len(result.steps) == 2
    assert result.cost_usd == result.steps[0].cost_usd + result.steps[1].cost_usd > 0
    calls = result.steps[1].tool_calls
    assert [c.status for c in calls] == ["error"]
    assert calls[0].error == (
        "interrupted (CancelledError) before the batch finished; this call may or may not "
        "have run, and it was not run again"
    )
    # Every call has its result message, so the context is a conversation to go on with.
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert result.stop is None
    assert not session.done
    assert asyncio.run(session.step()) is not None
    assert session.result.stop == "answered"


def test_async_and_sync_drivers_give_the_same_trace() -> None:
    def build() -> tuple[ScriptedModel, Any, FakeClock]:
        clock = FakeClock()

        @tool
        def lookup(x: int) -> int:
            """Look up."""
            clock.advance(1)
            return x + 1

        script: list[Any] = [two_calls("lookup", "lookup"), two_calls("lookup"), "done"]
        return ScriptedModel(script, price=PRICE, max_output_tokens=100), lookup, clock

    model, lookup, clock = build()
    sync = run(model, "go", tools=[lookup], budget=Budget(max_cost_usd=1), clock=clock)
    model, lookup, clock = build()
    awaited = asyncio.run(
        arun(model, "go", tools=[lookup], budget=Budget(max_cost_usd=1), clock=clock)
    )
    assert replace(awaited, run_id=sync.run_id).to_dict() == sync.to_dict()  # two runs
    assert awaited.answer == "done"


def test_sync_run_takes_async_tools_and_models_inside_a_running_loop() -> None:
    @tool
    async def double(x: int) -> int:
        """Double."""
        await asyncio.sleep(0)
        return 2 * x

    async def notebook_cell() -> Any:
        # A notebook's kernel already runs an event loop; the sync API must still work in it.
        asyncio.get_running_loop()
        model = AsyncScripted(ScriptedModel([two_calls("double", "double"), "done"]))
        first = run(model, "go", tools=[double])
        single = run(ScriptedModel([two_calls("double"), "ok"]), "go", tools=[double])
        return first, single

    first, single = asyncio.run(notebook_cell())
    assert first.stop == "answered"
    assert [c.result for c in first.tool_calls] == ["0", "2"]
    assert [c.result for c in single.tool_calls] == ["0"]


def test_async_session_keeps_the_cost_guard() -> None:
    model = AsyncScripted(
        ScriptedModel([two_calls("t")], repeat_last=True, price=PRICE, max_output_tokens=1000)
    )

    @tool
    async def t(x: int) -> str:
        """T."""
        return "r" * 3000

    result = asyncio.run(
        arun(
            model,
            "go",
            tools=[t],
            budget=Budget(max_steps=100, max_cost_usd=0.05),
            repeat_limit=None,
        )
    )
    assert result.stop == "max_cost_usd"
    assert result.cost_usd <= 0.05
    assert model.model.calls == len(result.steps)
    sync = start(ScriptedModel([two_calls("t")], repeat_last=True, price=PRICE, max_output_tokens=1000),
                 "go", tools=[t], budget=Budget(max_steps=100, max_cost_usd=0.05), repeat_limit=None).run()  # fmt: skip
    assert len(sync.steps) == len(result.steps)
