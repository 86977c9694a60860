"""Money is never forgotten, one step runs at a time, and malformed model output is a result."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    ScriptedModel,
    ToolCall,
    Usage,
    astart,
    load_trace,
    run,
    start,
    tool,
)
from tests.conftest import PRICE

CALL = Completion(tool_calls=[ToolCall("boom", {"x": 1}, "c1")], usage=Usage(1000, 100))


def test_an_interrupt_in_a_tool_is_billed_and_the_context_stays_a_conversation() -> None:
    @tool
    def boom(x: int) -> str:
        """Interrupts."""
        raise KeyboardInterrupt

    model = ScriptedModel([CALL, "done"], price=PRICE, max_output_tokens=100)
    session = start(model, "go", tools=[boom], budget=Budget(max_cost_usd=0.011))
    with pytest.raises(KeyboardInterrupt):
        session.step()
    # The call returned before the tool broke: its $0.0045 is spent, not forgotten.
    assert session.result.cost_usd == PRICE.cost(1000, 100) == 0.0045
    assert session.projection.spent_usd == 0.0045
    (step,) = session.steps
    assert step.tool_calls[0].status == "error"
    assert step.tool_calls[0].error.startswith("interrupted (KeyboardInterrupt)")
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    assert not session.done
    # Going on, the ceiling counts that money: the run ends within it.
    result = session.run()
    assert result.stop == "answered"
    assert result.cost_usd == 0.0045 + result.steps[1].cost_usd <= 0.011


@pytest.mark.timeout(10)
def test_an_interrupt_in_a_batch_starts_no_call_after_it() -> None:
    ran: list[str] = []

    @tool
    def boom(x: int) -> str:
        """Interrupts."""
        raise KeyboardInterrupt

    @tool
    def note(label: str) -> str:
        """Notes that it ran."""
        ran.append(label)
        return label

    calls = [ToolCall("boom", {"x": 1}, "c1")]
    calls += [ToolCall("note", {"label": str(i)}, f"n{i}") for i in range(3)]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    session = start(model, "go", tools=[boom, note])
    with pytest.raises(KeyboardInterrupt):
        session.step()
    time.sleep(0.3)  # time enough for a worker to start what it was offered
    assert ran == []
    (step,) = session.steps
    assert [c.status for c in step.tool_calls] == ["error"] * 4
    assert all(c.error.startswith("interrupted (KeyboardInterrupt)") for c in step.tool_calls)


def test_a_raising_count_tokens_after_the_call_still_bills_it() -> None:
    calls = [0]

    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        calls[0] += 1
        if calls[0] > 2:  # at start(), before the call; then it breaks
            raise RuntimeError("tokenizer down")
        return 100

    @tool
    def boom(x: int) -> str:
        """Never runs."""
        raise AssertionError("ran")

    model = ScriptedModel([CALL], price=PRICE, max_output_tokens=100)
    session = start(model, "go", tools=[boom], count_tokens=count, budget=Budget(max_cost_usd=1.0))
    with pytest.raises(RuntimeError, match="tokenizer down"):
        session.step()
    assert session.result.cost_usd == 0.0045
    record = session.steps[0].tool_calls[0]
    assert (record.status, record.error) == (
        "skipped", "the turn broke (RuntimeError) before its batch started",
    )  # fmt: skip


def test_a_raising_redact_withholds_the_text_but_keeps_the_money() -> None:
    seen = [0]

    def redact(text: str) -> str:
        seen[0] += 1
        if "secret" in text:
            raise ValueError("cannot redact")
        return text

    model = ScriptedModel([Completion(text="the secret", usage=Usage(10, 1))], price=PRICE)
    session = start(model, "go", redact=redact)
    with pytest.raises(ValueError, match="cannot redact"):
        session.step()
    assert session.result.cost_usd == PRICE.cost(10, 1)
    assert session.steps[0].text == "[withheld: redact raised]"
    assert "secret" not in str(session.result.to_dict())


def test_an_interrupt_in_redact_while_the_step_is_recorded_loses_nothing(tmp_path: Any) -> None:
    sent: list[int] = []

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        sent.append(len(messages))
        call = ToolCall("note", {"label": str(len(sent))}, f"c{len(sent)}")
        return Completion(text="a secret", tool_calls=[call], usage=Usage(1000, 100))

    @tool
    def note(label: str) -> str:
        """Notes."""
        return label

    broke = [False]

    def redact(text: str) -> str:
        if "secret" in text and not broke[0]:
            broke[0] = True
            raise KeyboardInterrupt  # Ctrl-C while the billed step is being recorded
        return text.replace("secret", "[x]")

    ledger = MemoryLedger(limit_usd=10.0)
    path = tmp_path / "run.jsonl"
    session = start(
        model, "go", tools=[note], redact=redact, ledger=ledger, price=PRICE,
        max_output_tokens=100, trace_path=path, budget=Budget(max_steps=2),
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        session.step()
    # The billed call is a step of the result, of the ledger and of the trace file alike.
    assert session.result.cost_usd == ledger.spent_usd() == 0.0045
    (step,) = session.steps
    assert step.text == "[withheld: redact raised]"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    result = session.run()
    assert sent == [1, 3]  # the next step sent the next request, not the same one again
    assert result.stop == "max_steps"
    assert result.cost_usd == ledger.spent_usd() == 0.009
    assert load_trace(path).to_dict() == result.to_dict()
    assert "secret" not in path.read_text()


def test_a_cancelled_model_call_in_flight_is_billed_at_its_worst_case() -> None:
    async def slow(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        await asyncio.sleep(30)
        raise AssertionError("never")

    async def main() -> Any:
        session = astart(slow, "go", price=PRICE, max_output_tokens=100)
        task = asyncio.ensure_future(session.step())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return session

    session = asyncio.run(main())
    (step,) = session.steps
    assert step.error == "interrupted (CancelledError) while the model call was in flight"
    assert step.cost_usd == step.projection.cost_usd == session.result.cost_usd > 0
    assert session.messages == [Message("user", "go")]
    assert not session.done


BUSY = (
    "the session must be idle, got another step running; a session takes one turn at a time "
    "(use fork() or another session to run in parallel)."
)


@pytest.mark.timeout(10)
def test_two_threads_stepping_one_session_make_one_model_call() -> None:
    entered = threading.Event()
    release = threading.Event()

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        entered.set()
        release.wait(5)
        return Completion(text="done")

    session = start(model, "go", budget=Budget(max_steps=1))
    worker = threading.Thread(target=session.step)
    worker.start()
    entered.wait(5)
    for take in (session.step, session.run):  # each names the method the user called
        with pytest.raises(RuntimeError) as caught:
            take()
        assert str(caught.value) == f"Session.{take.__name__}: {BUSY}"
    release.set()
    worker.join()
    assert len(session.steps) == 1
    assert session.result.stop == "answered"


def test_gathered_steps_of_one_async_session_make_one_call() -> None:
    calls = [0]

    async def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        calls[0] += 1
        await asyncio.sleep(0.01)
        return Completion(tool_calls=[ToolCall("t", {})])

    @tool
    def t() -> str:
        """T."""
        return "ok"

    async def main() -> list[Any]:
        session = astart(model, "go", tools=[t], budget=Budget(max_steps=1))
        return await asyncio.gather(session.step(), session.step(), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert calls[0] == 1
    assert [str(o) for o in outcomes if isinstance(o, RuntimeError)] == [
        f"AsyncSession.step: {BUSY}"
    ]


@pytest.mark.parametrize(
    ("call", "name", "error"),
    [
        (ToolCall(123, {"x": 1}), "123", "unknown tool '123'; available tools: t"),  # type: ignore[arg-type]
        (ToolCall(["t"], {"x": 1}), "['t']", "unknown tool \"['t']\"; available tools: t"),  # type: ignore[arg-type]
        (ToolCall("t", b'{"x": 1}'), "t", "t: arguments must be a JSON object, got bytes"),  # type: ignore[arg-type]
        (ToolCall("t", {1: 2, "x": 1}), "t", "t: arguments must be a JSON object, got dict"),  # type: ignore[dict-item]
        (ToolCall("t", {(1, 2): 3}), "t", "t: arguments must be a JSON object, got dict"),  # type: ignore[dict-item]
        (ToolCall("t", {"x": {1, 2}}), "t", "t: arguments must be a JSON object, got dict"),
        (
            ToolCall("t", {"x": datetime.date(2026, 1, 1)}),
            "t",
            "t: arguments must be a JSON object, got dict",
        ),
    ],
)
def test_malformed_calls_are_error_results_never_a_crash(
    call: ToolCall, name: str, error: str
) -> None:
    @tool
    def t(x: int) -> str:
        """T."""
        return "ok"

    model = ScriptedModel([Completion(tool_calls=[call]), "done"], repeat_last=True)
    result = run(model, "go", tools=[t], budget=Budget(max_steps=3))
    assert result.stop == "answered"
    record = result.steps[0].tool_calls[0]
    assert (record.name, record.status, record.error) == (name, "error", error)
    assert isinstance(record.raw_arguments, (str, dict))
    result.to_dict()
    result.format()


def test_a_model_timeout_with_the_deadlines_words_is_a_model_error_not_a_deadline() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise TimeoutError("the model call was still running when max_seconds passed")

    result = run(model, "go", price=PRICE, max_output_tokens=100)
    assert result.stop == "model_error"
    assert result.cost_usd == 0.0


def test_a_hanging_model_is_abandoned_and_billed_at_the_worst_case() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        time.sleep(2)
        return Completion(text="late")

    result = run(model, "go", price=PRICE, max_output_tokens=100, budget=Budget(max_seconds=0.1))
    assert result.stop == "max_seconds"
    assert result.cost_usd == result.steps[0].projection.cost_usd
