"""The data types: validation that names the field, what was expected and what arrived."""

from __future__ import annotations

import pytest

from budgetloop import Budget, Completion, Message, Stop, ToolCall, Usage


def test_stop_is_a_string_enum() -> None:
    assert Stop.MAX_COST_USD == "max_cost_usd"
    assert str(Stop.REPEATED) == "repeated"
    assert {s.value for s in Stop} == {
        "answered", "max_steps", "max_seconds", "max_cost_usd", "max_tool_calls", "repeated", "model_error",
    }  # fmt: skip


def test_budget_defaults_and_validation() -> None:
    assert Budget() == Budget(
        max_steps=10, max_seconds=None, max_cost_usd=None, max_tool_calls=None
    )
    with pytest.raises(
        ValueError, match=r"Budget.max_steps: expected an int >= 0 or None, got -1"
    ):
        Budget(max_steps=-1)
    with pytest.raises(
        ValueError, match=r"Budget.max_cost_usd: expected a number >= 0 or None, got 'a'"
    ):
        Budget(max_cost_usd="a")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"Budget.max_seconds: expected a number >= 0 or None, got nan"
    ):
        Budget(max_seconds=float("nan"))


def test_message_and_completion_validation() -> None:
    with pytest.raises(
        ValueError, match=r"Message.role: expected one of system, user, assistant, tool, got 'bot'"
    ):
        Message("bot", "hi")
    assert Message("assistant", None, [ToolCall("f")]).tool_calls == (ToolCall("f", "{}"),)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"Completion.tool_calls: expected a list of ToolCall, got str"
    ):
        Completion(tool_calls="f")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"Completion.tool_calls\[0\]: expected ToolCall, got dict"
    ):
        Completion(tool_calls=[{"name": "f"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"Completion.text: expected str or None, got int"):
        Completion(text=3)  # type: ignore[arg-type]


def test_usage_and_reported_cost_are_validated() -> None:
    with pytest.raises(ValueError, match=r"Usage.input_tokens: expected an int >= 0, got 'a'"):
        Usage("a", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Usage.output_tokens: expected an int >= 0, got -1"):
        Usage(1, -1)
    for bad in (float("nan"), -0.01, float("inf"), "0.1", True):
        with pytest.raises(
            ValueError, match=r"Completion.cost_usd: expected a number >= 0 or None"
        ):
            Completion(text="x", cost_usd=bad)  # type: ignore[arg-type]
