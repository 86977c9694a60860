"""With max_seconds the whole step runs on the session's own thread: everything the loop
promises without a deadline holds with one, and at the deadline the caller gets the turn back."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from budgetloop import Budget, Completion, Message, ScriptedModel, ToolCall, Usage, start, tool
from tests.conftest import PRICE

CALL = Completion(tool_calls=[ToolCall("boom", {"x": 1}, "c1")], usage=Usage(1000, 100))
DEADLINE = Budget(max_cost_usd=0.011, max_seconds=30)


def test_an_interrupt_in_a_tool_is_raised_to_the_caller_billed_and_recorded() -> None:
    @tool
    def boom(x: int) -> str:
        """Interrupts."""
        raise KeyboardInterrupt

    model = ScriptedModel([CALL, "done"], price=PRICE, max_output_tokens=100)
    session = start(model, "go", tools=[boom], budget=DEADLINE)
    with pytest.raises(KeyboardInterrupt):
        session.step()
    assert session.result.cost_usd == 0.0045
    (step,) = session.steps
    assert step.tool_calls[0].status == "error"
    assert step.tool_calls[0].error.startswith("interrupted (KeyboardInterrupt)")
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    result = session.run()  # a new thread takes the next step
    assert result.stop == "answered"


def test_a_raising_redact_is_raised_to_the_caller_with_the_text_withheld() -> None:
    def redact(text: str) -> str:
        if "secret" in text:
            raise ValueError("cannot redact")
        return text

    model = ScriptedModel([Completion(text="the secret", usage=Usage(10, 1))], price=PRICE)
    session = start(model, "go", redact=redact, budget=Budget(max_seconds=30))
    with pytest.raises(ValueError, match="cannot redact"):
        session.step()
    assert session.result.cost_usd == PRICE.cost(10, 1)
    assert session.steps[0].text == "[withheld: redact raised]"


def test_the_step_runs_on_the_session_thread_and_on_step_on_the_caller() -> None:
    where: list[str] = []

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        where.append(threading.current_thread().name)
        return Completion(text="done")

    session = start(
        complete,
        "go",
        budget=Budget(max_seconds=30),
        on_step=lambda s, step: where.append(threading.current_thread().name),
    )
    session.run()
    assert where == ["budgetloop-session", threading.current_thread().name]


@pytest.mark.timeout(10)
def test_a_model_still_running_at_the_deadline_is_abandoned_and_its_late_reply_dropped() -> None:
    release = threading.Event()
    returned = threading.Event()

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        release.wait(5)
        returned.set()
        return Completion(text="too late")

    session = start(complete, "go", budget=Budget(max_seconds=0.2))
    began = time.monotonic()
    step = session.step()
    assert time.monotonic() - began < 3
    assert step is not None
    assert (step.error or "").startswith("TimeoutError: the model call was still running")
    release.set()
    assert returned.wait(5)
    time.sleep(0.05)
    assert session.done
    assert session.result.stop == "max_seconds"
    assert len(session.steps) == 1
    assert session.result.answer is None


@pytest.mark.timeout(10)
def test_a_batch_at_the_deadline_keeps_the_calls_that_finished() -> None:
    release = threading.Event()

    @tool
    def hang(n: int) -> str:
        """Hangs."""
        release.wait(5)
        return "late"

    @tool
    def quick(n: int) -> str:
        """Returns at once."""
        return f"quick {n}"

    calls = [ToolCall("quick", {"n": 1}), ToolCall("hang", {"n": 2}), ToolCall("quick", {"n": 3})]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    session = start(model, "go", tools=[hang, quick], budget=Budget(max_seconds=0.3))
    session.step()
    release.set()
    records = session.steps[0].tool_calls
    assert [(r.status, r.result) for r in records] == [
        ("ok", "quick 1"),
        ("error", None),
        ("ok", "quick 3"),
    ]
    assert records[1].error == "abandoned: still running when the max_seconds deadline passed"
    assert session.result.stop == "max_seconds"
