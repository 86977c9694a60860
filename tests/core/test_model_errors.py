"""A model that raises, returns something other than a Completion, runs out of script, or reports
an impossible cost or usage: each ends the run as model_error with the steps so far kept."""

from __future__ import annotations

from typing import Any

import pytest

from budgetloop import (
    Completion,
    Message,
    ScriptedModel,
    ToolCall,
    Usage,
    run,
)
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
