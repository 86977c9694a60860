"""The trace: plain data that round-trips, a file that loads, and the README's text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Completion, Result, ScriptedModel, ToolCall, load_trace, run, tool
from tests.conftest import PRICE, FakeClock


def sample() -> Result:
    clock = FakeClock()

    @tool
    def lookup(key: str, n: int = 1) -> dict[str, Any]:
        """Look up."""
        clock.advance(0.5)
        if key == "missing":
            raise KeyError(key)
        return {"key": key, "n": n}

    model = ScriptedModel(
        [
            Completion(
                text="Looking.",
                tool_calls=[ToolCall("lookup", '{"key": "a", "n": "2"}', "c1"), ToolCall("lookup", {"key": "missing"}, "c2")],
            ),
            "Found a.",
        ],
        price=PRICE,
        max_output_tokens=200,
    )  # fmt: skip
    return run(model, "find a", tools=[lookup], budget=Budget(max_cost_usd=0.5), clock=clock)


def test_to_dict_is_json_and_records_every_step_and_call() -> None:
    data = sample().to_dict()
    assert json.loads(json.dumps(data)) == data
    assert (data["format"], data["version"]) == ("budgetloop-trace", 1)
    assert (data["stop"], data["answered"], data["answer"]) == ("answered", True, "Found a.")
    assert data["totals"]["steps"] == 2
    assert data["totals"]["tool_calls"] == 2
    assert data["totals"]["failed"] == 1
    step = data["steps"][0]
    assert set(step) == {
        "index",
        "text",
        "usage",
        "cost_usd",
        "projection",
        "seconds",
        "error",
        "tool_calls",
    }
    assert step["seconds"] == 1.0
    assert set(step["projection"]) == {
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "spent_usd",
        "limit_usd",
        "fits",
    }
    assert step["tool_calls"][0] == {
        "name": "lookup",
        "id": "c1",
        "raw_arguments": '{"key": "a", "n": "2"}',
        "arguments": {"key": "a", "n": 2},
        "coerced": ["lookup.n"],
        "status": "ok",
        "result": '{"key": "a", "n": 2}',
        "error": None,
        "seconds": 0.5,
        "truncated": None,
    }
    assert step["tool_calls"][1]["status"] == "error"
    assert step["tool_calls"][1]["error"] == "KeyError: 'missing'"
    assert data["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in data["steps"]))
    assert data["messages"][1]["tool_calls"][0] == {
        "name": "lookup",
        "arguments": '{"key": "a", "n": "2"}',
        "id": "c1",
    }


def test_round_trip_through_from_dict_and_a_file(tmp_path: Path) -> None:
    result = sample()
    again = Result.from_dict(result.to_dict())
    assert again == result
    path = tmp_path / "trace.json"
    result.save(path)
    assert load_trace(path) == result
    assert load_trace(str(path)).format() == result.format()


def test_bad_and_future_traces_are_told_apart(tmp_path: Path) -> None:
    data = sample().to_dict()
    with pytest.raises(ValueError, match="not a budgetloop trace"):
        Result.from_dict({"steps": []})
    with pytest.raises(
        ValueError,
        match="trace format version 99 is not supported; this budgetloop reads version 1",
    ):
        Result.from_dict({**data, "version": 99})
    with pytest.raises(ValueError, match="not a budgetloop trace: KeyError"):
        Result.from_dict({k: v for k, v in data.items() if k != "steps"})
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    with pytest.raises(ValueError, match=r"broken\.json: not valid JSON"):
        load_trace(broken)


def test_format_is_the_readable_account() -> None:
    assert sample().format().splitlines() == [
        "step 0: Looking.",
        '  - lookup({"key": "a", "n": "2"}) -> {"key": "a", "n": 2}',
        '  x lookup({"key": "missing"}) -> error: KeyError: \'missing\'',
        "step 1: Found a.",
        "",
        f"stop=answered tools=2 failed=1 cost=${sample().cost_usd:.4f}",
    ]


def test_format_shows_skips_stops_and_neutralises_control_characters() -> None:
    model = ScriptedModel(
        [Completion(text="\x1b[31mred\x00", tool_calls=[ToolCall("t", {"x": "a\nb"})])]
    )

    @tool
    def t(x: str) -> str:
        """T."""
        return x

    text = run(model, "go", tools=[t], budget=Budget(max_steps=1)).format()
    assert "\x1b" not in text
    assert "\x00" not in text
    assert text.splitlines() == [
        "step 0: \\x1b[31mred\\x00",
        '  . t({"x": "a\\nb"}) -> skipped: the run stopped (max_steps=1: no step is left to read results)',
        "",
        "stop=max_steps tools=0 failed=0 cost=$0.0000",
        "max_steps=1: no step is left to read results",
    ]


def test_format_survives_a_call_without_a_name() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall(None, {})]), "done"])  # type: ignore[arg-type]
    assert run(model, "go").format().splitlines()[1] == (
        "  x ({}) -> error: a tool call needs a name; available tools: none"
    )
