"""Runs of the real pydantic-ai and openai-agents made offline for the importers' tests, each
from a script of replies: pydantic-ai with a ``FunctionModel``, its spans written as OTLP JSON;
openai-agents with a fake ``Model`` (recording a generation span per call, as its model
integrations do) and a ``TracingProcessor`` keeping every trace and span's ``export()``.

A reply is a list of parts: a string is text, a tuple ``(name, arguments, call_id)`` a tool call.
Each model call reports ``usage(n)`` for its index ``n``. The ``price`` tool returns 118.4,
asks the model to retry for ``"XX"`` and raises for ``"BOOM"``."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Reply = list[Any]
PRICE = 118.4


def usage(n: int) -> tuple[int, int]:
    """Input and output tokens the ``n``-th model call reports."""
    return 1000 + 100 * n, 10 + n


@dataclass
class PeerRun:
    """A run as the peer itself records it, and where its trace was written."""

    path: Path
    raised: BaseException | None = None
    output: Any = None
    messages: bytes | None = None  # pydantic-ai's all_messages_json()
    items: list[Any] = field(default_factory=list)  # openai-agents' to_input_list()
    responses: list[Any] = field(default_factory=list)  # openai-agents' raw_responses
    max_turns: int | None = None


def pydantic_ai_run(
    path: Path,
    replies: list[Reply],
    *,
    output_type: Any = None,
    usage_limits: Any = None,
    version: int | None = None,
) -> PeerRun:
    """A pydantic-ai agent run on ``replies``, its spans written to ``path`` as OTLP JSON."""
    import warnings

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
        parts: list[Any] = [
            TextPart(p) if isinstance(p, str) else ToolCallPart(p[0], p[1], tool_call_id=p[2])
            for p in replies[turn]
        ]
        inputs, outputs = usage(turn)
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=inputs,
                                                             output_tokens=outputs))  # fmt: skip

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    options: dict[str, Any] = {} if output_type is None else {"output_type": output_type}
    agent = Agent(FunctionModel(script, model_name="scripted"), name="pricer",
                  system_prompt="You are a careful pricing assistant.", **options)  # fmt: skip
    settings: dict[str, Any] = {} if version is None else {"version": version}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an older instrumentation version is deprecated
        agent.instrument = InstrumentationSettings(tracer_provider=provider, **settings)

    @agent.tool_plain(retries=5)
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        if isin == "XX":
            raise ModelRetry("XX is not in the price list")
        if isin == "BOOM":
            raise RuntimeError("the price feed is down")
        return PRICE

    run = PeerRun(path)
    try:
        done = agent.run_sync("What is SE0000108656 worth?", usage_limits=usage_limits)
        run.output, run.messages = done.output, done.all_messages_json()
    except Exception as exc:  # the run's end, as the test expects it
        run.raised = exc
    provider.shutdown()
    path.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    return run


def openai_agents_run(
    path: Path,
    replies: list[Reply],
    *,
    agent_options: dict[str, Any] | None = None,
    tool_options: dict[str, Any] | None = None,
    handoff_to: dict[str, Any] | None = None,
    max_turns: int = 10,
) -> PeerRun:
    """An openai-agents run on ``replies``, its trace export written to ``path`` as JSON.
    ``handoff_to``: options of a second agent (``name`` among them) the first can hand off to."""
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

    def item(part: Any, n: int) -> Any:
        if isinstance(part, str):
            content = [ResponseOutputText(annotations=[], text=part, type="output_text")]
            return ResponseOutputMessage(id=f"msg_{n}", content=content, role="assistant",
                                         status="completed", type="message")  # fmt: skip
        name, arguments, call_id = part
        return ResponseFunctionToolCall(arguments=json.dumps(arguments), call_id=call_id,
                                        name=name, type="function_call", id=f"fc_{call_id}",
                                        status="completed")  # fmt: skip

    script = list(replies)
    made = [0]

    class Fake(Model):  # type: ignore[misc]
        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> Any:  # fmt: skip
            turn = made[0]
            made[0] += 1
            output = [item(p, turn) for p in script[turn]]
            inputs, outputs = usage(turn)
            sent = [{"role": "system", "content": system_instructions}]
            sent += [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            with generation_span(input=sent, model="fake-gpt") as span:
                span.span_data.output = [o.model_dump() for o in output]
                span.span_data.usage = {"input_tokens": inputs, "output_tokens": outputs}
            details = InputTokensDetails(cached_tokens=0, cache_write_tokens=0)
            return ModelResponse(
                output=output,
                usage=AgentsUsage(requests=1, input_tokens=inputs, output_tokens=outputs,
                                  total_tokens=inputs + outputs, input_tokens_details=details,
                                  output_tokens_details=OutputTokensDetails(reasoning_tokens=0)),
                response_id=None,
            )  # fmt: skip

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    class Collect(TracingProcessor):  # type: ignore[misc]
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

    @function_tool(**(tool_options or {}))
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        if isin in ("XX", "BOOM"):
            raise LookupError(f"{isin} is not in the price list")
        return PRICE

    handoffs = []
    if handoff_to is not None:
        handoffs.append(Agent(tools=[price], model=Fake(), **handoff_to))
    agent = Agent(name="pricer", instructions="You are a careful pricing assistant.",
                  tools=[price], model=Fake(), handoffs=handoffs,
                  **(agent_options or {}))  # fmt: skip
    run = PeerRun(path, max_turns=max_turns)
    try:
        done = asyncio.run(Runner.run(agent, "What is SE0000108656 worth?", max_turns=max_turns))
        run.output, run.items = done.final_output, done.to_input_list()
        run.responses = done.raw_responses
    except Exception as exc:  # the run's end, as the test expects it
        run.raised = exc
    finally:
        set_trace_processors([])
    path.write_text(json.dumps(collect.items, default=str))
    return run
