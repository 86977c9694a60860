"""A failure keeps its traceback in the trace: the tool's or model's own frames, redacted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Completion, Message, Result, ScriptedModel, ToolCall, arun, run, tool
from budgetloop._tools._tracebacks import MAX_TRACEBACK_CHARS


def parse_price(text: str) -> float:
    return float(text)  # the frame that raises


@tool
def lookup(isin: str) -> float:
    """Look up a price."""
    return parse_price(f"price of {isin}")


def broken_adapter(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    return Completion(text=messages[5].content)  # an adapter bug: IndexError


def test_a_raising_tool_keeps_its_own_frames_and_not_the_loops() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("lookup", {"isin": "SE0"})]), "ok"])
    record = run(model, "go", tools=[lookup]).steps[0].tool_calls[0]
    assert record.error == "ValueError: could not convert string to float: 'price of SE0'"
    tb = record.traceback
    assert tb is not None
    assert tb.startswith("Traceback (most recent call last):\n")
    assert "in lookup\n" in tb
    assert "in parse_price\n" in tb
    assert tb.endswith("ValueError: could not convert string to float: 'price of SE0'\n")
    assert "_dispatch.py" not in tb
    assert "_session.py" not in tb
    assert "_pool.py" not in tb


def test_a_model_error_keeps_the_adapters_frames_and_both_drivers_agree() -> None:
    sync = run(broken_adapter, "go")

    async def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return broken_adapter(messages, tools)

    a = asyncio.run(arun(broken_adapter, "go"))
    b = asyncio.run(arun(model, "go"))
    assert sync.stop == a.stop == b.stop == "model_error"
    tb = sync.steps[0].traceback
    assert tb is not None
    assert "in broken_adapter\n" in tb
    assert tb.endswith("IndexError: list index out of range\n")
    assert "_session.py" not in tb
    assert "asyncio" not in tb
    assert a.steps[0].traceback == tb  # the same frames from the sync model on a worker


def test_tracebacks_are_redacted_bounded_and_ignored_by_equality() -> None:
    @tool
    def leak(n: int) -> str:
        """Raises with the key in a deep stack."""
        if n:
            return leak.fn(n - 1)
        raise RuntimeError("x" * 20_000 + " key sk-123 rejected")

    model = ScriptedModel([Completion(tool_calls=[ToolCall("leak", {"n": 3})]), "ok"])
    result = run(model, "go", tools=[leak], redact=lambda s: s.replace("sk-123", "***"))
    record = result.steps[0].tool_calls[0]
    assert record.traceback is not None
    assert "sk-123" not in record.traceback
    assert "key *** rejected" in record.traceback
    assert len(record.traceback) <= MAX_TRACEBACK_CHARS + len("[…cut]\n")
    assert record.traceback.startswith("[…cut]\n")
    data = result.to_dict()
    assert "sk-123" not in str(data)
    del data["steps"][0]["tool_calls"][0]["traceback"]
    assert Result.from_dict(data) == result


STRADDLING = "sk-live-4fQ9zStraddlesTheCut"


def _straddling_failure() -> RuntimeError:
    """An error whose traceback's cut (its last ``MAX_TRACEBACK_CHARS`` characters, the message
    and its newline at the end) falls in the middle of the key."""
    tail = "x" * (MAX_TRACEBACK_CHARS - 1 - len(STRADDLING) // 2)
    return RuntimeError(STRADDLING + tail)


@pytest.mark.parametrize("where", ["tool", "model"])
def test_a_traceback_is_redacted_before_it_is_cut(tmp_path: Path, where: str) -> None:
    @tool
    def fail() -> str:
        """Fails with the key in its message."""
        raise _straddling_failure()

    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise _straddling_failure()

    first: Any = Completion(tool_calls=[ToolCall("fail", {}, "c1")]) if where == "tool" else broken
    journal = tmp_path / "run.jsonl"
    result = run(
        ScriptedModel([first, "ok"]),
        "go",
        tools=[fail],
        redact=lambda s: s.replace(STRADDLING, "[key]"),
        trace_path=journal,
    )
    step = result.steps[0]
    tb = step.tool_calls[0].traceback if where == "tool" else step.traceback
    assert tb is not None
    assert tb.startswith("[…cut]\n")
    assert len(tb) == MAX_TRACEBACK_CHARS + len("[…cut]\n")
    assert tb.endswith("x" * 100 + "\n")
    saved = tmp_path / "run.json"
    result.save(saved)
    half = STRADDLING[len(STRADDLING) // 2 :]  # what a cut before redact would have kept
    for path in (saved, journal):
        assert half not in path.read_text(encoding="utf-8"), path.name
