"""Each driver answers a turn's requests through one table of request type to handler: every
request a turn yields is in every table, and a new kind of request is one entry in each."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from budgetloop import AsyncSession, Budget, Completion, ScriptedModel, Session, ToolCall, tool
from budgetloop._engine._session import Handed
from budgetloop._engine._turn import REQUESTS


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


def script() -> ScriptedModel:
    return ScriptedModel([Completion(tool_calls=[ToolCall("echo", {"text": "a"})]), "done"])


def test_every_driver_answers_every_request_a_turn_yields() -> None:
    assert set(Session._answers) == set(REQUESTS)
    assert set(Session._handed) == set(REQUESTS)
    assert set(AsyncSession._answers) == set(REQUESTS)


@dataclass
class Ask:
    """A request of the kind a new feature would add: asked before each model call."""

    question: str


def asking(base: type[Any]) -> Any:
    """``base`` with ``Ask`` yielded before each turn: one entry in each of its tables."""

    class Asking(base):  # type: ignore[misc, valid-type]
        heard: list[str]

        def _turn(self, started: float) -> Generator[Any, Any, Any]:
            answer = yield Ask(f"step {len(self.state.steps)}?")
            self.heard.append(answer)
            return (yield from super()._turn(started))

    return Asking


def answer(session: Any, request: Ask) -> str:
    return f"yes to {request.question}"


async def answer_async(session: Any, request: Ask) -> str:
    return f"awaited {request.question}"


def test_a_new_request_is_one_entry_in_the_session_table() -> None:
    cls = asking(Session)
    cls._answers = {**Session._answers, Ask: answer}
    session = cls(script(), "hi", tools=[echo])
    session.heard = []
    result = session.run()
    assert result.stop == "answered"
    assert session.heard == ["yes to step 0?", "yes to step 1?"]
    assert result.steps[0].tool_calls[0].content == "a"


def test_a_new_request_is_one_entry_in_the_deadline_table() -> None:
    cls = asking(Session)
    cls._handed = {
        **Session._handed,
        Ask: Handed(lambda s, r, slots, since: answer(s, r), lambda *_: "cut"),
    }
    session = cls(script(), "hi", tools=[echo], budget=Budget(max_seconds=30))
    session.heard = []
    result = session.run()
    assert result.stop == "answered"
    assert session.heard == ["yes to step 0?", "yes to step 1?"]


def test_a_new_request_in_flight_at_the_deadline_is_answered_by_its_cut() -> None:
    release = threading.Event()

    def hold(session: Any, request: Ask, slots: Any, since: float) -> str:
        release.wait(10)  # a person who does not decide before the deadline
        return "decided"

    cls = asking(Session)
    cls._handed = {**Session._handed, Ask: Handed(hold, lambda *_: "cut at the deadline")}
    session = cls(script(), "hi", tools=[echo], budget=Budget(max_seconds=0.2))
    session.heard = []
    try:
        result = session.run()
    finally:
        release.set()
    assert session.heard == ["cut at the deadline"]
    assert result.stop == "max_seconds"
    assert result.detail == "max_seconds=0.2 passed"  # the turn then stopped before its call
    assert result.steps == ()


def test_a_new_request_is_one_entry_in_the_async_table() -> None:
    cls = asking(AsyncSession)
    cls._answers = {**AsyncSession._answers, Ask: answer_async}
    session = cls(script(), "hi", tools=[echo])
    session.heard = []
    result = asyncio.run(session.run())
    assert result.stop == "answered"
    assert session.heard == ["awaited step 0?", "awaited step 1?"]


@tool(needs_approval=True)
def send(text: str) -> str:
    """Send it."""
    return text


def test_a_session_keeps_few_enough_attributes_for_cpython_to_share_its_dict_keys() -> None:
    """The loop reads its session's attributes many times a turn, which CPython does fastest
    while the session's dict shares its keys with the class's other instances: only up to 30
    keys. What most runs never set (a fork's lineage, a held batch, breakpoints' and replay's
    holds, the entry point that names errors) is a default of the class until it is set."""
    limit = 30
    model = ScriptedModel([Completion(tool_calls=[ToolCall("send", {"text": "a"})]), "done"])
    session = Session(model, "go", tools=[send], budget=Budget(max_steps=5))
    session.step()
    assert [c.name for c in session.pending] == ["send"]  # a held batch
    session.approve(session.pending[0].id)
    session.run()
    assert session.result.answer == "done"
    assert len(vars(session)) <= limit, sorted(vars(session))
    fork = session.fork(1, complete=ScriptedModel(["again"]))
    fork.run()
    assert len(vars(fork)) <= limit, sorted(vars(fork))
