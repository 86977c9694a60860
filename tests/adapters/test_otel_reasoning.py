"""Reasoning tokens and the price's source in the OpenTelemetry export, and reasoning tokens read
back by the importers: budgetloop's own spans (OTLP JSON) and openai-agents' trace export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Completion, ScriptedModel, ToolCall, Usage, load_trace, run, tool
from budgetloop.prices import price_of
from tests.core.test_import import otlp_json, write

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

PEERS = Path(__file__).parents[1] / "fixtures" / "peer-traces"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def thinking_run() -> Any:
    model = ScriptedModel(
        [
            Completion(
                tool_calls=[ToolCall("lookup", {"key": "a"}, "c1")],
                usage=Usage(900, 300, reasoning_tokens=260),
            ),
            Completion(
                "a is 1.", usage=Usage(1000, 40, cache_read_tokens=800, reasoning_tokens=25)
            ),
        ],
        max_output_tokens=400,
    )
    return run(model, "what is a?", tools=[lookup], price="o3", budget=Budget(max_cost_usd=1.0))


def test_reasoning_tokens_and_the_price_source_are_exported_and_read_back(tmp_path: Path) -> None:
    result = thinking_run()
    data = otlp_json(result)
    spans = [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    values = [(s["name"], {a["key"]: a["value"] for a in s["attributes"]}) for s in spans]
    chats = [v for name, v in values if name.startswith("chat")]
    agent = next(v for name, v in values if name.startswith("invoke_agent"))
    assert [c["gen_ai.usage.reasoning.output_tokens"] for c in chats] == [
        {"intValue": "260"},
        {"intValue": "25"},
    ]
    assert agent["gen_ai.usage.reasoning.output_tokens"] == {"intValue": "285"}
    assert agent["budgetloop.price.source"] == {"stringValue": price_of("o3").source}

    back = load_trace(write(tmp_path / "spans.json", data))
    assert [s.usage for s in back.steps] == [s.usage for s in result.steps]
    assert back.steps[0].usage is not None
    assert back.steps[0].usage.reasoning_tokens == 260


def test_a_run_without_reasoning_exports_no_reasoning_attribute() -> None:
    result = run(ScriptedModel([Completion("hi", usage=Usage(10, 2))]), "go")
    data = json.dumps(otlp_json(result))
    assert "gen_ai.usage.reasoning.output_tokens" not in data
    assert "budgetloop.price.source" not in data


def test_openai_agents_reasoning_tokens_are_read_back(tmp_path: Path) -> None:
    data = json.loads((PEERS / "openai_agents_trace_export.json").read_text(encoding="utf-8"))
    generations = [
        item
        for item in (data if isinstance(data, list) else data["data"])
        if isinstance(item, dict) and (item.get("span_data") or {}).get("usage")
    ]
    usage = generations[0]["span_data"]["usage"]
    usage["output_tokens_details"] = {"reasoning_tokens": usage["output_tokens"] - 1}
    back = load_trace(write(tmp_path / "agents.json", data))
    first = back.steps[0].usage
    assert first is not None
    assert first.reasoning_tokens == first.output_tokens - 1
    usage["output_tokens_details"] = {"reasoning_tokens": usage["output_tokens"] + 1}
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(write(tmp_path / "agents.json", data))
    path = next(i for i, item in enumerate(data) if item is generations[0])
    assert str(info.value) == (
        f"load_trace: {tmp_path / 'agents.json'}: [{path}].span_data.usage.output_tokens must be "
        f"at least the {usage['output_tokens'] + 1} tokens spent reasoning, "
        f"got {usage['output_tokens']}."
    )
