"""Imports of runs that end badly (issue 28), each made here by the real pydantic-ai or
openai-agents (``tests/peer_runs.py``): a run that raised or hit the source's limit says so
in ``stop``, ``error`` and ``detail``; a call whose result no model read has none; a structured
answer is the answer; a call's result is what the model was sent; a guardrail's run is not
answered; a handoff is a call with its result; and no file is read as an empty list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Stop, load_trace, load_traces
from tests.peer_runs import PRICE, openai_agents_run, pydantic_ai_run

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim (the dev extra has it)")
pytest.importorskip("agents", reason="openai-agents (the dev extra has it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the dev extra has it")

LOOKUP = ("price", {"isin": "SE0000108656"}, "call_1")


def calls(result: Any) -> list[tuple[str, str, str | None]]:
    """Each call of the run: its name, status, and the result or the error it shows."""
    return [
        (c.name, c.status, c.result if c.status == "ok" else c.error)
        for s in result.steps
        for c in s.tool_calls
    ]


def test_a_pydantic_ai_run_whose_tool_raised_says_so(tmp_path: Path) -> None:
    peer = pydantic_ai_run(
        tmp_path / "spans.json",
        [["Looking it up.", LOOKUP], [("price", {"isin": "BOOM"}, "call_2")]],
    )
    assert str(peer.raised) == "the price feed is down"
    result = load_trace(peer.path)
    said = "RuntimeError: the price feed is down"
    assert (result.stop, result.error, result.answer) == (Stop.MODEL_ERROR, said, None)
    assert result.detail == f"the source's run raised {said}"
    assert calls(result) == [
        ("price", "ok", "118.4"),
        ("price", "error", said),  # it ran: the error it raised, not "skipped"
    ]
    assert "stop=model_error tools=2 failed=1 cost=unknown" in result.format().splitlines()
    # the context is what was sent: no model read the failed call's result
    assert [m.role for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_pydantic_ai_usage_limit_is_the_stop_it_names(tmp_path: Path) -> None:
    from pydantic_ai.usage import UsageLimits

    peer = pydantic_ai_run(
        tmp_path / "spans.json",
        [["Looking it up.", ("price", {"isin": "XX"}, "call_1")], ["never"]],
        usage_limits=UsageLimits(request_limit=1),
    )
    assert type(peer.raised).__name__ == "UsageLimitExceeded"
    result = load_trace(peer.path)
    assert result.stop is Stop.MAX_STEPS
    assert result.error == f"UsageLimitExceeded: {peer.raised}"
    assert result.detail == f"the source's request_limit stopped the run: {result.error}"
    # the tool ran and asked for a retry, but the run stopped before a model read it
    assert calls(result) == [("price", "error", "ToolRetryError: XX is not in the price list")]
    assert not result.answered

    peer = pydantic_ai_run(
        tmp_path / "tools.json",
        [[LOOKUP, ("price", {"isin": "SE0000108656"}, "call_2")], ["never"]],
        usage_limits=UsageLimits(tool_calls_limit=1),
    )
    assert type(peer.raised).__name__ == "UsageLimitExceeded"
    result = load_trace(peer.path)
    assert result.stop is Stop.MAX_TOOL_CALLS
    assert result.detail == f"the source's tool_calls_limit stopped the run: {result.error}"
    # pydantic-ai checks the limit before it runs a batch: neither call ran
    assert [c.status for c in result.steps[0].tool_calls] == ["skipped", "skipped"]

    peer = pydantic_ai_run(
        tmp_path / "retries.json",
        [[("price", {"isin": "XX"}, f"call_{n}")] for n in range(7)],
    )
    assert type(peer.raised).__name__ == "UnexpectedModelBehavior"  # past its 5 retries
    result = load_trace(peer.path)
    assert (result.stop, result.error) == (
        Stop.MODEL_ERROR,
        f"UnexpectedModelBehavior: {peer.raised}",
    )


def test_a_pydantic_ai_call_that_failed_as_the_run_ended_ran(tmp_path: Path) -> None:
    """A tool that asked for retries until pydantic-ai gave up: its last call ran, and its span
    says ERROR with the exception pydantic-ai raised; it failed, it was not skipped."""
    peer = pydantic_ai_run(
        tmp_path / "spans.json",
        [[("price", {"isin": "XX"}, f"call_{n}")] for n in range(7)],
    )
    assert type(peer.raised).__name__ == "UnexpectedModelBehavior"  # past its 5 retries
    result = load_trace(peer.path)
    raised = f"UnexpectedModelBehavior: {peer.raised}"
    assert str(peer.raised).startswith("Tool 'price' exceeded max retries count of 5.")
    assert calls(result) == [
        *[("price", "error", "XX is not in the price list")] * 5,  # what the model read
        ("price", "error", raised),  # what the span's exception event says
    ]
    assert "stop=model_error tools=6 failed=6 cost=unknown" in result.format().splitlines()
    assert (result.stop, result.error) == (Stop.MODEL_ERROR, raised)


def test_a_pydantic_ai_structured_answer_is_the_answer(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Quote(BaseModel):
        isin: str
        price: float

    answer = ("final_result", {"isin": "SE0000108656", "price": 118.4}, "call_2")
    peer = pydantic_ai_run(tmp_path / "spans.json", [[LOOKUP], [answer]], output_type=Quote)
    assert peer.output == Quote(isin="SE0000108656", price=118.4)
    result = load_trace(peer.path)
    assert result.stop is Stop.ANSWERED
    assert result.answer is not None
    assert json.loads(result.answer) == {"isin": "SE0000108656", "price": 118.4}
    assert calls(result) == [
        ("price", "ok", "118.4"),
        ("final_result", "ok", "Final result processed."),  # as pydantic-ai records it
    ]


def test_a_pydantic_ai_retry_is_what_the_model_read(tmp_path: Path) -> None:
    peer = pydantic_ai_run(
        tmp_path / "spans.json",
        [[("price", {"isin": "XX"}, "call_0")], [LOOKUP], ["It is 118.4."]],
    )
    result = load_trace(peer.path)
    assert calls(result) == [
        ("price", "error", "XX is not in the price list"),  # not ToolRetryError: ...
        ("price", "ok", "118.4"),
    ]
    assert result.messages[3].content == "XX is not in the price list"
    assert (result.stop, result.answer) == (Stop.ANSWERED, "It is 118.4.")


def test_pydantic_ai_results_in_tool_response_import(tmp_path: Path) -> None:
    """pydantic-ai's instrumentation version 2 names them tool_arguments and tool_response."""
    peer = pydantic_ai_run(tmp_path / "spans.json", [[LOOKUP], ["It is 118.4."]], version=2)
    spans = peer.path.read_text()
    assert '"tool_response"' in spans
    assert "gen_ai.tool.call.result" not in spans
    result = load_trace(peer.path)
    assert calls(result) == [("price", "ok", "118.4")]


def test_openai_agents_max_turns_is_max_steps(tmp_path: Path) -> None:
    replies = [[LOOKUP], [("price", {"isin": "SE0000108656"}, "call_2")], ["never"]]
    peer = openai_agents_run(tmp_path / "export.json", replies, max_turns=2)
    assert type(peer.raised).__name__ == "MaxTurnsExceeded"
    result = load_trace(peer.path)
    assert result.stop is Stop.MAX_STEPS
    assert result.error == "Max turns exceeded: max_turns=2"
    assert result.detail == f"the source's max_turns stopped the run: {result.error}"
    assert calls(result) == [("price", "ok", "118.4"), ("price", "ok", "118.4")]
    assert result.messages[-1].role == "assistant"  # the last result reached no model


def test_openai_agents_guardrails_end_the_run_unanswered(tmp_path: Path) -> None:
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail

    @input_guardrail
    def on_topic(context: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="off topic", tripwire_triggered=True)

    @output_guardrail
    def no_quotes(context: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="a quote", tripwire_triggered=True)

    peer = openai_agents_run(
        tmp_path / "in.json", [["It is 118.4."]], agent_options={"input_guardrails": [on_topic]}
    )
    assert type(peer.raised).__name__ == "InputGuardrailTripwireTriggered"
    result = load_trace(peer.path)  # no model call: a run all the same, not an empty list
    assert (result.stop, result.steps, result.answer) == (Stop.MODEL_ERROR, (), None)
    assert result.error == "Guardrail tripwire triggered: on_topic"
    assert result.detail == "the source's input guardrail 'on_topic' tripped"

    peer = openai_agents_run(
        tmp_path / "out.json", [["It is 118.4."]], agent_options={"output_guardrails": [no_quotes]}
    )
    assert type(peer.raised).__name__ == "OutputGuardrailTripwireTriggered"
    result = load_trace(peer.path)
    assert (result.stop, result.answer, result.answered) == (Stop.MODEL_ERROR, None, False)
    assert result.steps[0].text == "It is 118.4."  # what the model said, withheld from the user
    assert result.detail == (
        "the source's output guardrail 'no_quotes' tripped; the answer was withheld"
    )


def test_openai_agents_tool_guardrails(tmp_path: Path) -> None:
    from agents.tool_guardrails import (
        ToolGuardrailFunctionOutput,
        tool_input_guardrail,
        tool_output_guardrail,
    )

    @tool_input_guardrail
    def refuse(data: Any) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.reject_content("prices are not given out")

    @tool_output_guardrail
    def stop(data: Any) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.raise_exception(output_info="a leak")

    replies = [[LOOKUP], ["I may not say."]]
    peer = openai_agents_run(
        tmp_path / "in.json", replies, tool_options={"tool_input_guardrails": [refuse]}
    )
    result = load_trace(peer.path)
    assert calls(result) == [("price", "ok", "prices are not given out")]  # what the model read
    assert (result.stop, result.answer) == (Stop.ANSWERED, "I may not say.")

    peer = openai_agents_run(
        tmp_path / "out.json", replies, tool_options={"tool_output_guardrails": [stop]}
    )
    assert type(peer.raised).__name__ == "ToolOutputGuardrailTripwireTriggered"
    result = load_trace(peer.path)
    said = f"Error in agent run: {peer.raised}"
    assert (result.stop, result.error, result.answer) == (Stop.MODEL_ERROR, said, None)
    # the tool ran; the guardrail failed its output
    assert calls(result) == [
        ("price", "error", "Error running tool: Tool output guardrail ToolOutputGuardrail "
                           "triggered tripwire")
    ]  # fmt: skip


def test_an_openai_agents_failure_is_what_the_model_read(tmp_path: Path) -> None:
    replies = [[("price", {"isin": "BOOM"}, "call_1")], ["It is not listed."]]
    peer = openai_agents_run(tmp_path / "export.json", replies)
    result = load_trace(peer.path)
    # what openai-agents sent the model, as its own record of the run says (its words vary
    # by version: "An error occurred while running the tool." and more)
    (read,) = [i["output"] for i in peer.items if i.get("type") == "function_call_output"]
    assert read.startswith("An error occurred while running the tool.")
    assert calls(result) == [("price", "error", read)]  # not "Error details are redacted."
    assert result.messages[-2].content == read


def test_an_openai_agents_handoff_is_a_call_with_its_result(tmp_path: Path) -> None:
    replies = [[("transfer_to_expert", {}, "call_0")], [LOOKUP], ["It is 118.4."]]
    peer = openai_agents_run(
        tmp_path / "export.json",
        replies,
        handoff_to={"name": "expert", "instructions": "You know prices."},
    )
    assert peer.output == "It is 118.4."
    result = load_trace(peer.path)
    assert calls(result) == [
        ("transfer_to_expert", "ok", '{"assistant": "expert"}'),
        ("price", "ok", str(PRICE)),
    ]
    assert (result.stop, result.answer) == (Stop.ANSWERED, "It is 118.4.")


def test_spans_that_hold_no_run_are_an_error_not_an_empty_list(tmp_path: Path) -> None:
    from agents.tracing import custom_span, set_trace_processors, trace

    kept: list[Any] = []

    class Keep:
        def on_trace_start(self, t: Any) -> None: ...
        def on_trace_end(self, t: Any) -> None:
            kept.append(t.export())

        def on_span_start(self, s: Any) -> None: ...
        def on_span_end(self, s: Any) -> None:
            kept.append(s.export())

        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    set_trace_processors([Keep()])
    try:
        with trace("lookups"), custom_span("fetch", {"rows": 3}):
            pass
    finally:
        set_trace_processors([])
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(kept))
    with pytest.raises(ValueError, match="must be") as caught:
        load_traces(path)
    assert str(caught.value) == (
        f"load_traces: {path}: the spans must be a run's: a generation, response or agent span "
        "among them, got openai-agents spans of the types 'custom' only."
    )
    spans = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t1", "spanId": "s1", "name": "GET /prices", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2", "attributes": [{"key": "http.method",
                                                 "value": {"stringValue": "GET"}}]}]}]}]}  # fmt: skip
    path = tmp_path / "http.json"
    path.write_text(json.dumps(spans))
    with pytest.raises(ValueError, match="must be") as caught:
        load_traces(path)
    assert str(caught.value) == (
        f"load_traces: {path}: the spans must be a run's: a GenAI model call or run span "
        "(gen_ai.operation.name chat, text_completion, generate_content or invoke_agent) or an "
        "OpenInference LLM span among them, got 1 span, none of them one of these; the span "
        "names are 'GET /prices'."
    )


def responses_body(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    """A Responses API reply, as OpenAI sends it."""
    inputs, outputs = 1000 + 100 * n, 10 + n
    return {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": "gpt-4o",
            "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": inputs, "output_tokens": outputs,
                      "total_tokens": inputs + outputs, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip


def test_openai_agents_on_its_responses_model(tmp_path: Path) -> None:
    """openai-agents' default model records ``response`` spans (an id and usage, no content):
    the handoff is a step's call, the answer is unknown (not ""), and a replay takes every
    step."""
    import asyncio

    import openai
    from agents import Agent, Runner, function_tool, set_trace_processors
    from agents.models.openai_responses import OpenAIResponsesModel

    from budgetloop import Budget, Price, Usage, replay
    from tests.provider_server import Provider

    def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
        return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
                "name": name, "arguments": json.dumps(arguments), "status": "completed"}  # fmt: skip

    answer = {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "It is 118.4.", "annotations": []}]}  # fmt: skip
    provider = Provider(
        "openai",
        (200, responses_body(0, [call("transfer_to_expert", {}, "call_0")])),
        (200, responses_body(1, [call("price", {"isin": "SE0000108656"}, "call_1")])),
        (200, responses_body(2, [answer])),
    )
    client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    kept: list[Any] = []

    class Keep:
        def on_trace_start(self, t: Any) -> None: ...
        def on_trace_end(self, t: Any) -> None:
            kept.append(t.export())

        def on_span_start(self, s: Any) -> None: ...
        def on_span_end(self, s: Any) -> None:
            kept.append(s.export())

        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    @function_tool
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        return PRICE

    model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    expert = Agent(name="expert", instructions="You know prices.", tools=[price], model=model)
    agent = Agent(name="pricer", instructions="Hand off.", model=model, handoffs=[expert])
    set_trace_processors([Keep()])
    try:
        done = asyncio.run(Runner.run(agent, "What is SE0000108656 worth?"))
    finally:
        set_trace_processors([])
    assert done.final_output == "It is 118.4."
    path = tmp_path / "export.json"
    path.write_text(json.dumps(kept, default=str))
    result = load_trace(path)
    assert calls(result) == [
        ("transfer_to_expert", "ok", '{"assistant": "expert"}'),
        ("price", "ok", str(PRICE)),
    ]
    assert (result.stop, result.answer) == (Stop.ANSWERED, None)  # the export holds no text
    assert [s.response_id for s in result.steps] == ["resp_0", "resp_1", "resp_2"]
    assert [s.usage for s in result.steps] == [Usage(1000, 10), Usage(1100, 11), Usage(1200, 12)]
    replayed = replay(result, budget=Budget(max_cost_usd=1.0), price=Price(2.5, 10.0),
                      max_output_tokens=400)  # fmt: skip
    assert (replayed.stop, len(replayed.steps)) == (Stop.ANSWERED, 3)
