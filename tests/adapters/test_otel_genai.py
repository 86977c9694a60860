"""What the trace viewers read from budgetloop's spans (issue 20): why each reply ended, on the
span and on each output message (Phoenix drops output messages without it); the response's model
and id; one conversation id per run on every span; tool descriptions and definitions; the
provider where the conventions require it; the run's status and error.type; the prompt and the
answer on the run span. In-memory exporter; the real Phoenix is tests/adapters/test_phoenix.py."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import budgetloop
from budgetloop import Completion, ScriptedModel, ToolCall, load_trace
from tests.adapter_support import CASES, Case
from tests.otel_support import MODEL, PROMPT, SYSTEM, ceiling_run
from tests.provider_server import Provider, payload

HAVE_OTEL = importlib.util.find_spec("opentelemetry.sdk") is not None
pytestmark = pytest.mark.skipif(
    not HAVE_OTEL,
    reason="opentelemetry-sdk is not installed (pip install 'budgetloop[otel]'; the dev extra has it)",
)
if HAVE_OTEL:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from budgetloop.otel import OtelHook, export_trace

SECRET = "sk-live-0123456789"


@pytest.fixture
def spans() -> Iterator[tuple[Any, Any]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def kinds(finished: Any, operation: str) -> list[ReadableSpan]:
    return [s for s in finished if attrs(s)["gen_ai.operation.name"] == operation]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_adapters_run_names_its_provider_model_response_and_reasons_with_no_arguments(
    case: Case, spans: Any
) -> None:
    provider, exporter = spans
    served = Provider(case.name, (200, payload(case.tool_turn)), (200, payload(case.final_turn)))
    model = case.over(served)
    result = budgetloop.run(
        model, case.prompt, system=case.system, tools=list(case.tools),
        on_step=OtelHook(provider, content=True),
    )  # fmt: skip
    assert result.answered

    finished = exporter.get_finished_spans()
    chats = kinds(finished, "chat")
    expected = [payload(case.tool_turn), payload(case.final_turn)]
    assert [
        (a["gen_ai.provider.name"], a["gen_ai.request.model"], a["gen_ai.response.model"],
         a["gen_ai.response.id"], a["gen_ai.response.finish_reasons"])
        for a in map(attrs, chats)
    ] == [
        (case.name, case.model, body["model"], body["id"], (reason,))
        for body, reason in zip(expected, ["tool_call", "stop"], strict=True)
    ]  # fmt: skip
    outputs = [json.loads(attrs(c)["gen_ai.output.messages"]) for c in chats]
    assert [[m["finish_reason"] for m in out] for out in outputs] == [["tool_call"], ["stop"]]
    assert [s.name for s in chats] == [f"chat {case.model}"] * 2
    agent = kinds(finished, "invoke_agent")[0]
    assert attrs(agent)["gen_ai.provider.name"] == case.name
    assert {attrs(s)["gen_ai.conversation.id"] for s in finished} == {result.run_id}
    descriptions = [attrs(s)["gen_ai.tool.description"] for s in kinds(finished, "execute_tool")]
    assert descriptions == [t.__doc__.split("\n")[0] for t in case.tools]  # type: ignore[union-attr]
    assert agent.status.status_code is StatusCode.OK


def test_a_run_a_ceiling_stopped_is_an_error_whose_type_is_the_stop(spans: Any) -> None:
    provider, exporter = spans
    result = ceiling_run().run()
    assert (result.stop, len(result.failed), len(result.skipped)) == ("max_cost_usd", 1, 1)
    export_trace(result, provider)

    finished = exporter.get_finished_spans()
    agent = kinds(finished, "invoke_agent")[0]
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.status.description is None  # the stop's detail is content: off by default
    assert attrs(agent)["error.type"] == "max_cost_usd"
    assert attrs(agent)["gen_ai.provider.name"] == "_OTHER"  # a model that names none
    chats = kinds(finished, "chat")
    assert [attrs(c)["gen_ai.response.finish_reasons"] for c in chats] == [("tool_call",)] * 4
    assert [attrs(c)["gen_ai.response.id"] for c in chats] == [f"chatcmpl-{i}" for i in range(4)]
    assert {attrs(c)["gen_ai.response.model"] for c in chats} == {MODEL}
    costs = [json.loads(attrs(c)["mlflow.llm.cost"]) for c in chats]
    assert [c["total_cost"] for c in costs] == [s.cost_usd for s in result.steps]
    assert all(c["input_cost"] + c["output_cost"] == pytest.approx(c["total_cost"]) for c in costs)
    assert [c["output_cost"] for c in costs] == [
        result.price.cost(0, s.usage.output_tokens)
        for s in result.steps
        if s.usage is not None and result.price is not None
    ]
    run_cost = json.loads(attrs(agent)["mlflow.llm.cost"])  # MLflow's trace cost is the top's
    assert run_cost["total_cost"] == result.cost_usd
    assert run_cost["output_cost"] == pytest.approx(sum(c["output_cost"] for c in costs))
    assert sum(s.cost_usd or 0.0 for s in result.steps) == pytest.approx(result.cost_usd)
    for chat in chats:  # no content: neither the offered tools nor a skip's reason
        assert "gen_ai.tool.definitions" not in attrs(chat)
        assert "budgetloop.step.skipped_tool_calls.reasons" not in attrs(chat)
    failed = [
        s for s in kinds(finished, "execute_tool") if s.status.status_code is StatusCode.ERROR
    ]
    assert [attrs(s)["gen_ai.tool.call.id"] for s in failed] == ["call_2"]

    exporter.clear()
    export_trace(result, provider, content=True)
    agent = kinds(exporter.get_finished_spans(), "invoke_agent")[0]
    assert agent.status.description == result.detail
    assert attrs(agent)["input.value"] == PROMPT
    assert "output.value" not in attrs(agent)  # it did not answer


def test_with_content_the_offered_tools_and_skip_reasons_pass_through_redact(spans: Any) -> None:
    provider, exporter = spans
    result = ceiling_run().run()
    export_trace(result, provider, content=True, redact=lambda s: s.replace("price", "p***"))

    chats = kinds(exporter.get_finished_spans(), "chat")
    offered = json.loads(attrs(chats[0])["gen_ai.tool.definitions"])
    assert [(d["type"], d["name"], d["description"]) for d in offered] == [
        ("function", "p***", "Look up the last p*** for an instrument."),
        ("function", "convert", "Convert an amount of money at an exchange rate."),
    ]
    assert offered[1]["parameters"]["required"] == ["amount", "rate"]
    assert attrs(chats[3])["budgetloop.step.skipped_tool_calls.reasons"] == (
        result.steps[3].tool_calls[0].error,
    )
    assert "budgetloop.step.skipped_tool_calls.reasons" not in attrs(chats[2])
    system = json.loads(attrs(chats[0])["gen_ai.system_instructions"])
    assert system == [{"type": "text", "content": SYSTEM}]


def test_cache_writes_are_exported_under_both_names(spans: Any) -> None:
    provider, exporter = spans
    model = ScriptedModel(
        [
            Completion(
                "ok",
                usage=budgetloop.Usage(1000, 5, cache_read_tokens=100, cache_write_tokens=700),
            )
        ]
    )
    export_trace(budgetloop.run(model, "go"), provider)
    for span in exporter.get_finished_spans():
        values = attrs(span)
        assert (
            values["gen_ai.usage.cache_write.input_tokens"],  # the conventions' name (MLflow)
            values["gen_ai.usage.cache_creation.input_tokens"],  # the one before (Phoenix)
            values["gen_ai.usage.cache_read.input_tokens"],
        ) == (700, 700, 100)


def test_the_journal_the_result_and_the_spans_name_one_run(spans: Any, tmp_path: Path) -> None:
    provider, exporter = spans
    session = ceiling_run(trace_path=tmp_path / "run.jsonl", on_step=OtelHook(provider))
    result = session.run()
    assert load_trace(tmp_path / "run.jsonl").run_id == result.run_id
    finished = exporter.get_finished_spans()
    assert len(finished) == 1 + 4 + 4  # the run, four model calls, four calls that ran
    assert {attrs(s)["gen_ai.conversation.id"] for s in finished} == {result.run_id}
    fork = session.fork(at=2, on_step=OtelHook(provider))
    exporter.clear()
    fork.run()
    ids = {attrs(s)["gen_ai.conversation.id"] for s in exporter.get_finished_spans()}
    assert ids == {fork.result.run_id} != {result.run_id}


def test_a_reply_that_ended_at_its_length_says_so(spans: Any) -> None:
    provider, exporter = spans
    model = ScriptedModel(
        [
            Completion(None, (ToolCall("missing", {}, "c1"),), finish_reason="tool_call"),
            Completion("cut shor", finish_reason="length"),
        ]
    )
    result = budgetloop.run(model, "go")
    export_trace(result, provider, content=True, redact=lambda s: s.replace(SECRET, "***"))
    chats = kinds(exporter.get_finished_spans(), "chat")
    assert [attrs(c)["gen_ai.response.finish_reasons"] for c in chats] == [
        ("tool_call",),
        ("length",),
    ]
    assert json.loads(attrs(chats[1])["gen_ai.output.messages"])[0]["finish_reason"] == "length"
    assert [s.finish_reason for s in result.steps] == ["tool_call", "length"]


def test_every_added_text_goes_through_redact(spans: Any) -> None:
    provider, exporter = spans
    model = ScriptedModel(
        [
            Completion(
                f"calling {SECRET}",
                (ToolCall("echo", {"text": SECRET}, f"id-{SECRET}"),),
                model=f"m-{SECRET}",
                response_id=f"r-{SECRET}",
                finish_reason=f"f-{SECRET}",
            ),
            f"done {SECRET}",
        ]
    )

    def echo(text: str) -> str:
        return text

    echo.__doc__ = f"Echo {SECRET}."  # a description with a secret in it
    result = budgetloop.run(model, f"use {SECRET}", tools=[echo], system=f"key {SECRET}")
    export_trace(result, provider, content=True, redact=lambda s: s.replace(SECRET, "***"))
    finished = exporter.get_finished_spans()
    for span in finished:
        shown = json.dumps([dict(span.attributes or {}), span.status.description], default=str)
        assert SECRET not in shown, span.name
    chat = kinds(finished, "chat")[0]
    assert (attrs(chat)["gen_ai.response.model"], attrs(chat)["gen_ai.response.id"]) == (
        "m-***",
        "r-***",
    )
    assert attrs(kinds(finished, "execute_tool")[0])["gen_ai.tool.description"] == "Echo ***."
    agent = attrs(kinds(finished, "invoke_agent")[0])
    assert (agent["input.value"], agent["output.value"]) == ("use ***", "done ***")


def test_mlflow_cost_splits_a_tiered_bill_at_its_tier(spans: Any) -> None:
    """A long-context call billed at its tier: MLflow's output part is at the tier's rate, and
    a cost the model reported is all input past its output tokens at that rate."""
    provider, exporter = spans
    price = budgetloop.Price(3.0, 15.0, tiers={200_000: budgetloop.Price(6.0, 22.5)})
    model = ScriptedModel(
        [
            Completion(tool_calls=[budgetloop.ToolCall("look", {}, "c1")],
                       usage=budgetloop.Usage(250_000, 1_000)),
            Completion("ok", usage=budgetloop.Usage(1_000, 10), cost_usd=0.5),
        ]
    )  # fmt: skip

    def look() -> str:
        """Look."""
        return "seen"

    result = budgetloop.run(model, "go", tools=[look], price=price)
    export_trace(result, provider)
    costs = [json.loads(attrs(c)["mlflow.llm.cost"]) for c in kinds(exporter.get_finished_spans(),
                                                                     "chat")]  # fmt: skip
    assert costs == [
        {"input_cost": 1.5, "output_cost": 0.0225, "total_cost": 1.5225},  # $6 and $22.50 a M
        {"input_cost": 0.49985, "output_cost": 0.00015, "total_cost": 0.5},  # 10 at $15 a M
    ]
    run = json.loads(
        attrs(kinds(exporter.get_finished_spans(), "invoke_agent")[0])["mlflow.llm.cost"]
    )
    assert run == {"input_cost": 1.99985, "output_cost": 0.02265, "total_cost": result.cost_usd}
