"""Each importer on runs the real frameworks make here, offline: pydantic-ai with a
``FunctionModel``, instrumented into the OpenTelemetry SDK and written as OTLP JSON; openai-agents
with a fake ``Model`` and a ``TracingProcessor`` collecting every trace and span's ``export()``,
and that run's items converted by openai-agents itself to a Chat Completions message log. Each run
looks something up, has one tool fail, and answers; reported usage includes cached input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Price, Stop, Usage, load_trace, replay

pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim (the dev extra has it)")
agents = pytest.importorskip("agents", reason="openai-agents (the dev extra has it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the dev extra has it")

PRICE = Price(2.5, 10.0, cache_read_per_mtok=1.25)  # assumed rates for the tests
EXPECTED = "\n".join(
    [
        "step 0: Looking it up.",
        '  - price({"isin": "SE0000108656"}) -> 118.4',
        "step 1:",
        '  x price({"isin": "XX"}) -> error: {error}',
        "step 2: It is 118.4.",
        "",
        "stop=answered tools=2 failed=1 cost=unknown",
    ]
)
USAGES = [Usage(1200, 60), Usage(1300, 20, cache_read_tokens=1000), Usage(1400, 10, 1200)]


def pydantic_ai_spans(path: Path) -> Path:
    """A pydantic-ai agent run, its spans written as an OTLP exporter sends them, as JSON."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.usage import RequestUsage

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if m.kind == "response")
        usage = USAGES[turn]
        counted = RequestUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
        )
        if turn == 0:
            parts: list[Any] = [
                TextPart("Looking it up."),
                ToolCallPart("price", {"isin": "SE0000108656"}, tool_call_id="call_1"),
            ]
        elif turn == 1:
            parts = [ToolCallPart("price", {"isin": "XX"}, tool_call_id="call_2")]
        else:
            parts = [TextPart("It is 118.4.")]
        return ModelResponse(parts=parts, usage=counted)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(FunctionModel(script, model_name="scripted"), name="pricer",
                  system_prompt="You are a careful pricing assistant.")  # fmt: skip
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        if isin == "XX":
            raise ModelRetry("XX is not in the price list")
        return 118.4

    assert agent.run_sync("What is SE0000108656 worth?").output == "It is 118.4."
    provider.shutdown()
    path.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    return path


def test_pydantic_ai_spans_import_as_the_run(tmp_path: Path) -> None:
    result = load_trace(pydantic_ai_spans(tmp_path / "spans.json"))
    assert result.format() == EXPECTED.replace("{error}", "XX is not in the price list")
    assert result.imported is not None
    assert result.imported.source.startswith("pydantic-ai ")
    assert [s.usage for s in result.steps] == USAGES
    assert [c.id for c in result.tool_calls] == ["call_1", "call_2"]  # paired by call id
    assert result.tools[0]["description"] == "Look up the last price for an instrument."
    assert result.messages[0].content == "You are a careful pricing assistant."
    assert (result.cost_usd, result.steps[0].model) == (None, "scripted")
    stopped = replay(result, budget=Budget(max_cost_usd=0.009), price=PRICE, max_output_tokens=400)
    assert (stopped.stop, len(stopped.steps)) == (Stop.MAX_COST_USD, 1)


def openai_agents_run() -> tuple[list[dict[str, Any]], list[Any]]:
    """An openai-agents run on a fake ``Model``: the exported traces and spans, and its items."""
    from agents import Agent, ModelResponse, Runner, function_tool
    from agents import Usage as AgentsUsage
    from agents.models.interface import Model
    from agents.tracing import TracingProcessor, generation_span, set_trace_processors
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    def said(text: str, n: int) -> Any:
        content = [ResponseOutputText(annotations=[], text=text, type="output_text")]
        return ResponseOutputMessage(id=f"msg_{n}", content=content, role="assistant",
                                     status="completed", type="message")  # fmt: skip

    def call(arguments: dict[str, Any], call_id: str) -> Any:
        return ResponseFunctionToolCall(arguments=json.dumps(arguments), call_id=call_id,
                                        name="price", type="function_call", id=f"fc_{call_id}",
                                        status="completed")  # fmt: skip

    replies = [
        [said("Looking it up.", 0), call({"isin": "SE0000108656"}, "call_1")],
        [call({"isin": "XX"}, "call_2")],
        [said("It is 118.4.", 2)],
    ]

    class Fake(Model):  # type: ignore[misc]
        """Replies from the script, with a generation span as a model integration records."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> Any:  # fmt: skip
            turn = 3 - len(replies)
            output, usage = replies.pop(0), USAGES[turn]
            sent = [{"role": "system", "content": system_instructions}]
            sent += [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            with generation_span(input=sent, model="fake-gpt",
                                 model_config={"max_tokens": 400}) as span:  # fmt: skip
                span.span_data.output = [item.model_dump() for item in output]
                span.span_data.usage = {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
                }
            details = InputTokensDetails(
                cached_tokens=usage.cache_read_tokens, cache_write_tokens=0
            )
            return ModelResponse(
                output=output,
                usage=AgentsUsage(
                    requests=1,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    total_tokens=usage.input_tokens + usage.output_tokens,
                    input_tokens_details=details,
                    output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                ),
                response_id=None,
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    class Collect(TracingProcessor):  # type: ignore[misc]
        """Keeps each trace's and span's ``export()``, as the README of the shared files says."""

        def __init__(self) -> None:
            self.items: list[dict[str, Any]] = []

        def on_trace_start(self, trace: Any) -> None:
            pass

        def on_trace_end(self, trace: Any) -> None:
            self.items.append(trace.export())

        def on_span_start(self, span: Any) -> None:
            pass

        def on_span_end(self, span: Any) -> None:
            self.items.append(span.export())

        def shutdown(self) -> None:
            pass

        def force_flush(self) -> None:
            pass

    collect = Collect()
    set_trace_processors([collect])

    @function_tool
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        if isin == "XX":
            raise LookupError("XX is not in the price list")
        return 118.4

    agent = Agent(name="pricer", instructions="You are a careful pricing assistant.",
                  tools=[price], model=Fake())  # fmt: skip
    result = asyncio.run(Runner.run(agent, "What is SE0000108656 worth?"))
    assert result.final_output == "It is 118.4."
    set_trace_processors([])
    return collect.items, result.to_input_list()


def test_an_openai_agents_export_and_its_message_log_import_as_the_run(tmp_path: Path) -> None:
    from agents.models.chatcmpl_converter import Converter

    exported, items = openai_agents_run()
    path = tmp_path / "export.json"
    path.write_text(json.dumps(exported, default=str))
    result = load_trace(path)
    # what the model read, as openai-agents' own record of the run says (its words vary by
    # version: "An error occurred while running the tool." and more)
    error = [i["output"] for i in items if i.get("type") == "function_call_output"][1]
    assert error.startswith("An error occurred while running the tool.")
    assert result.format() == EXPECTED.replace("{error}", error)
    assert result.imported is not None
    assert result.imported.format == "openai-agents"
    assert [s.usage for s in result.steps] == USAGES
    assert [c.id for c in result.tool_calls] == ["call_1", "call_2"]  # by order and name
    assert result.max_output_tokens == 400  # the generation's model_config
    assert result.run_id.startswith("trace_")
    stopped = replay(result, budget=Budget(max_cost_usd=0.009), price=PRICE)
    assert (stopped.stop, len(stopped.steps)) == (Stop.MAX_COST_USD, 1)

    log = Converter.items_to_messages(items)  # openai-agents' own Chat Completions form
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log, default=str))
    chat = load_trace(path)
    assert chat.imported is not None
    assert chat.imported.format == "chat"
    assert [(s.text, [(c.name, c.id) for c in s.tool_calls]) for s in chat.steps] == [
        ("Looking it up.", [("price", "call_1")]),
        (None, [("price", "call_2")]),
        ("It is 118.4.", []),
    ]
    assert chat.stop is Stop.ANSWERED
    assert [s.usage for s in chat.steps] == [None] * 3  # a log holds none
