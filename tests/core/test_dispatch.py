"""Running tool calls: what a tool does wrong is a record the model reads, under both drivers."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from budgetloop import Completion, ScriptedModel, ToolCall, arun, run, tool


def drive(driver: str, model: ScriptedModel, tools: list[Any]) -> Any:
    if driver == "sync":
        return run(model, "go", tools=tools)
    return asyncio.run(arun(model, "go", tools=tools))


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_an_async_tool_raising_cancelled_error_is_an_error_record(driver: str) -> None:
    @tool
    async def flaky(q: str) -> str:
        """Gives up."""
        raise asyncio.CancelledError("gave up")

    @tool
    async def fine(q: str) -> str:
        """Works."""
        return f"fine {q}"

    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("flaky", {"q": "a"}), ToolCall("fine", {"q": "b"})]),
            "ok",
        ]
    )
    result = drive(driver, model, [flaky, fine])
    assert result.stop == "answered"
    flaky_call, fine_call = result.steps[0].tool_calls
    assert (flaky_call.status, flaky_call.error) == ("error", "CancelledError: gave up")
    assert (fine_call.status, fine_call.result) == ("ok", "fine b")
    assert model.requests[1].messages[-2].content == "error: CancelledError: gave up"


def test_cancelling_arun_still_cancels_its_tools() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    @tool
    async def wait(q: str) -> str:
        """Waits."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    model = ScriptedModel([Completion(tool_calls=[ToolCall("wait", {"q": "a"})]), "ok"])

    async def main() -> None:
        task = asyncio.ensure_future(arun(model, "go", tools=[wait]))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # the tool's own task sees its cancellation

    asyncio.run(main())
    assert cancelled == [True]


@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("kind", ["coroutine", "awaitable"])
def test_a_sync_tool_that_returns_an_awaitable_is_an_error_saying_so(
    driver: str, kind: str
) -> None:
    async def later() -> str:
        return "late"

    class Later:
        def __await__(self) -> Any:
            return later().__await__()

    def lookup(q: str) -> Any:
        """Forgets to be async."""
        return later() if kind == "coroutine" else Later()

    model = ScriptedModel([Completion(tool_calls=[ToolCall("lookup", {"q": "a"})]), "ok"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would warn: it is closed
        result = drive(driver, model, [lookup])
    call = result.steps[0].tool_calls[0]
    shown = "a coroutine" if kind == "coroutine" else "an awaitable Later"
    assert (call.status, call.error) == (
        "error",
        f"TypeError: the tool returned {shown}, which nothing awaits: declare it with async def",
    )


def test_a_raising_redact_withholds_the_trace_record_and_hands_the_error_back() -> None:
    from budgetloop._engine._turn import Call
    from budgetloop._forms._redact import WITHHELD, Redactor
    from budgetloop._tools._dispatch import Dispatch
    from budgetloop._tools._pool import Workers

    @tool
    def echo(q: str) -> str:
        """Echo."""
        return q

    def redact(text: str) -> str:
        raise RuntimeError("redact broke")

    dispatch = Dispatch({"echo": echo}, lambda: 0.0, Workers(1), None, Redactor(redact))
    calls = [
        Call(ToolCall("echo", {"q": "x"}, "c1"), "c1", {"q": "x"}),
        Call(ToolCall("nope", {}, "c2"), "c2", {}),
    ]
    ok, refused = dispatch.run_batch(calls, None).records
    assert (ok.record.result, ok.trace.result, ok.trace.raw_arguments) == (
        "x",
        WITHHELD,
        {WITHHELD: WITHHELD},
    )
    assert refused.trace.error == WITHHELD
    assert [str(r.redact_error) for r in (ok, refused)] == ["redact broke", "redact broke"]
    assert ok.message.content == "x"  # the model still reads the real result
