"""The session's own thread and the slots a caller waits on up to a deadline."""

from __future__ import annotations

import threading
import time

import pytest

from budgetloop import Budget, Completion, ScriptedModel, ToolCall, run, tool
from budgetloop._tools._pool import Slots, Workers


def test_slots_filled_before_the_deadline_are_all_returned() -> None:
    slots = Slots(2)
    slots.put(1, "b")
    slots.put(0, "a")
    assert slots.wait(5.0) is True
    assert slots.values == ["a", "b"]
    assert slots.filled
    assert not slots.closed


def test_at_the_deadline_the_slots_close_and_a_late_value_is_dropped() -> None:
    slots = Slots(2)
    slots.put(0, "a")
    assert slots.wait(0.01) is False
    assert slots.closed
    assert not slots.filled
    slots.put(1, "late")  # dropped
    assert slots.values == ["a", None]


def test_a_negative_or_huge_timeout_is_a_wait_of_zero_or_of_the_longest_possible() -> None:
    slots = Slots(1)
    assert slots.wait(-1.0) is False
    full = Slots(1)
    full.put(0, "x")
    assert full.wait(1e300) is True


@pytest.mark.timeout(10)
def test_a_task_still_running_retires_the_thread_and_the_next_gets_a_new_one() -> None:
    workers = Workers()
    release = threading.Event()

    def hang(slots: Slots) -> None:
        slots.put(0, threading.current_thread())
        release.wait(5)

    def name(slots: Slots) -> None:
        slots.put(0, threading.current_thread())

    first = Slots(2)  # the second slot is never filled: the task is abandoned
    workers.hand(hang, first)
    assert first.wait(0.05) is False
    second = Slots(1)
    workers.hand(name, second)
    assert second.wait(5) is True
    third = Slots(1)
    workers.hand(name, third)
    assert third.wait(5) is True
    hung, fresh = first.values[0], second.values[0]
    assert hung is not fresh
    assert third.values[0] is fresh  # a filled task leaves its thread to the next
    release.set()
    workers.close()
    hung.join(5)
    fresh.join(5)
    assert not hung.is_alive()
    assert not fresh.is_alive()


@pytest.mark.timeout(10)
def test_a_call_not_started_by_the_deadline_is_never_started() -> None:
    release = threading.Event()
    ran: list[str] = []

    @tool
    def hang(query: str) -> str:
        """Never returns on its own."""
        release.wait(5)
        return "late"

    @tool
    def quick(query: str) -> str:
        """Returns at once."""
        ran.append(query)
        return "fast"

    model = ScriptedModel(
        [
            Completion(
                tool_calls=[ToolCall("hang", {"query": "a"}), ToolCall("quick", {"query": "b"})]
            )
        ]
    )
    result = run(model, "go", tools=[hang, quick], budget=Budget(max_seconds=0.2), max_workers=1)
    time.sleep(0.05)
    release.set()
    time.sleep(0.1)  # the hung call returns; the call behind it must still not run
    assert result.stop == "max_seconds"
    assert [(c.status, c.error) for c in result.steps[0].tool_calls] == [
        ("error", "abandoned: still running when the max_seconds deadline passed"),
        ("skipped", "not started: the max_seconds deadline passed before it could start"),
    ]  # the call behind it never started: not "still running"
    assert ran == []


@pytest.mark.timeout(10)
def test_with_a_deadline_slow_calls_still_run_at_once_in_request_order() -> None:
    barrier = threading.Barrier(3, timeout=5)  # passes only if all three calls run together
    threads: set[tuple[str, int | None]] = set()

    @tool
    def meet(label: str) -> str:
        """Wait for the others, then answer."""
        here = threading.current_thread()
        threads.add((here.name, here.ident))
        barrier.wait()
        return label

    calls = [ToolCall("meet", {"label": x}, f"id{x}") for x in "abc"]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    result = run(model, "go", tools=[meet], budget=Budget(max_seconds=30))
    assert result.stop == "answered"
    assert [(c.status, c.result) for c in result.steps[0].tool_calls] == [
        ("ok", "a"),
        ("ok", "b"),
        ("ok", "c"),
    ]
    assert len(threads) == 3
    assert {name for name, _ in threads} <= {"budgetloop-session", "budgetloop-worker"}
