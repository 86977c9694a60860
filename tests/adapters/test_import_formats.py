"""The formats users bring (issue 28), each made here by the real package that writes it: an
Anthropic Messages log kept by a program driving the real ``anthropic`` client (over a mock
transport); the Responses input items of an openai-agents run (``to_input_list()``); a
pydantic-ai run's own ``all_messages_json()``. A format that is not read (OpenLLMetry spans, a
LangSmith export, smolagents' memory), and content a reader does not know, is an error that
says what was found, never a run misread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Stop, Usage, load_trace, load_traces
from tests.peer_runs import PRICE, openai_agents_run, pydantic_ai_run, usage
from tests.provider_server import Provider, payload

LOOKUP = ("price", {"isin": "SE0000108656"}, "call_1")
TOOLS = [
    {"name": "get_weather", "description": "The weather in a city.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]}},
    {"name": "get_elevation", "description": "A city's elevation.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]}},
]  # fmt: skip


def calls(result: Any) -> list[tuple[str, str, str | None]]:
    return [
        (c.name, c.status, c.result if c.status == "ok" else c.error)
        for s in result.steps
        for c in s.tool_calls
    ]


def anthropic_log(whole: bool) -> tuple[dict[str, Any], Provider]:
    """A program's conversation with the real anthropic client: a turn with two tool uses (one
    failing), then the answer; each reply kept as its content blocks, or (``whole``) as the
    whole API response."""
    anthropic = pytest.importorskip("anthropic", reason="the dev extra has it")
    provider = Provider("anthropic", (200, payload("anthropic_messages_two_tool_use")),
                        (200, payload("anthropic_messages_final_text")))  # fmt: skip
    client = anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=provider.client())
    request: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 400,
                               "system": "Answer briefly.", "tools": TOOLS}  # fmt: skip
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather and elevation?"}]
    for _ in range(2):
        reply = client.messages.create(**request, messages=messages)
        kept = reply.model_dump(mode="json", exclude_none=True)
        if not whole:
            kept = {"role": "assistant", "content": kept["content"]}
        messages.append(kept)
        uses = [b for b in reply.content if b.type == "tool_use"]
        if uses:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": uses[0].id, "content": "Sunny, 21 C"},
                {"type": "tool_result", "tool_use_id": uses[1].id, "is_error": True,
                 "content": [{"type": "text", "text": "no elevation data"}]},
            ]})  # fmt: skip
    return {**request, "messages": messages}, provider


def test_an_anthropic_messages_log_imports(tmp_path: Path) -> None:
    log, provider = anthropic_log(whole=False)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    result = load_trace(path)
    assert result.imported is not None
    assert result.imported.format == "anthropic"
    assert [s.text for s in result.steps] == [
        "I'll get the weather and elevation information for Denver.",
        payload("anthropic_messages_final_text")["content"][0]["text"],
    ]
    assert calls(result) == [
        ("get_weather", "ok", "Sunny, 21 C"),
        ("get_elevation", "error", "no elevation data"),
    ]
    assert [c.id for c in result.tool_calls] == [
        "toolu_01BBTvQnxdxk7vPHD1ytXyGs",
        "toolu_017Q9pGQ9Hx126pyyLLnVqJV",
    ]
    assert (result.stop, result.answer) == (Stop.ANSWERED, result.steps[1].text)
    assert [s["name"] for s in result.tools] == ["get_weather", "get_elevation"]
    assert result.max_output_tokens == 400
    # the context it rebuilt is what the second request sent: its user, assistant and results
    sent = provider.bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [(m.role, m.content) for m in result.messages[:5]] == [
        ("system", "Answer briefly."),
        ("user", "Weather and elevation?"),
        ("assistant", "I'll get the weather and elevation information for Denver."),
        ("tool", "Sunny, 21 C"),
        ("tool", "no elevation data"),
    ]
    assert load_trace(path, format="anthropic") == result


def test_an_anthropic_log_of_whole_responses_has_their_usage(tmp_path: Path) -> None:
    log, _ = anthropic_log(whole=True)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log["messages"]))  # the messages alone: a JSON array
    result = load_trace(path)
    final = payload("anthropic_messages_final_text")
    assert [s.usage for s in result.steps] == [
        Usage(612, 101),
        Usage(final["usage"]["input_tokens"], final["usage"]["output_tokens"]),
    ]
    assert [s.model for s in result.steps] == ["claude-sonnet-4-5-20250929", final["model"]]
    assert [s.finish_reason for s in result.steps] == ["tool_use", "end_turn"]


def test_an_anthropic_log_is_never_read_as_a_chat_log(tmp_path: Path) -> None:
    log, _ = anthropic_log(whole=False)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    with pytest.raises(ValueError, match="tool_use") as caught:
        load_trace(path, format="chat")
    assert str(caught.value) == (
        f"load_trace: {path}: messages[1].content[1].type must be one of text, input_text, "
        "output_text, refusal, image_url, input_image, input_audio, file, got 'tool_use'. An "
        "Anthropic Messages log is read with format='anthropic'."
    )


def test_openai_responses_input_items_import(tmp_path: Path) -> None:
    replies = [["Looking it up.", LOOKUP], [("price", {"isin": "XX"}, "call_2")], ["It is 118.4."]]
    peer = openai_agents_run(tmp_path / "export.json", replies)
    path = tmp_path / "items.json"
    path.write_text(json.dumps(peer.items, default=str))
    result = load_trace(path)
    assert result.imported is not None
    assert result.imported.format == "responses"
    assert [s.text for s in result.steps] == ["Looking it up.", None, "It is 118.4."]
    # what openai-agents sent the model for the call that raised (its words vary by version)
    failed = [i["output"] for i in peer.items if i.get("type") == "function_call_output"][1]
    assert failed.startswith("An error occurred while running the tool.")
    # the items have no flag for a failed call: it shows what the model read, as ok, and
    # imported.lacks says the status cannot be told
    assert calls(result) == [("price", "ok", str(PRICE)), ("price", "ok", failed)]
    assert result.imported.lacks == (
        "cost", "token usage", "projections", "price", "budget", "max_output_tokens",
        "tool schemas", "timing", "tool error flags",
    )  # fmt: skip
    assert result.imported.describe().endswith(", timing, tool error flags")
    assert [c.id for c in result.tool_calls] == ["call_1", "call_2"]
    assert (result.stop, result.answer) == (Stop.ANSWERED, "It is 118.4.")
    assert [m.role for m in result.messages[:1]] == ["user"]


def test_pydantic_ai_messages_json_imports(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Quote(BaseModel):
        isin: str
        price: float

    answer = ("final_result", {"isin": "SE0000108656", "price": 118.4}, "call_3")
    replies = [["Looking it up.", LOOKUP], [("price", {"isin": "XX"}, "call_2")], [answer]]
    peer = pydantic_ai_run(tmp_path / "spans.json", replies, output_type=Quote)
    assert peer.messages is not None
    path = tmp_path / "messages.json"
    path.write_bytes(peer.messages)
    result = load_trace(path)
    assert result.imported is not None
    assert result.imported.format == "pydantic-ai"
    assert calls(result) == [
        ("price", "ok", str(PRICE)),
        ("price", "error", "XX is not in the price list"),
        ("final_result", "ok", "Final result processed."),
    ]
    assert [s.usage for s in result.steps] == [Usage(*usage(n)) for n in range(3)]
    assert result.stop is Stop.ANSWERED
    assert result.answer is not None
    assert json.loads(result.answer) == {"isin": "SE0000108656", "price": 118.4}
    assert [(m.role, m.content) for m in result.messages[:2]] == [
        ("system", "You are a careful pricing assistant."),
        ("user", "What is SE0000108656 worth?"),
    ]


def test_a_pydantic_ai_structured_answer_reads_as_the_model_wrote_it(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Quote(BaseModel):
        isin: str
        price: float

    answer = ("final_result", {"isin": "Örebro Öst", "price": 1.5}, "call_1")
    peer = pydantic_ai_run(tmp_path / "spans.json", [[answer]], output_type=Quote)
    assert peer.messages is not None
    path = tmp_path / "messages.json"
    path.write_bytes(peer.messages)
    result = load_trace(path)
    assert (result.stop, result.answer) == (
        Stop.ANSWERED, '{"isin": "Örebro Öst", "price": 1.5}'
    )  # fmt: skip


TRACES = (  # what a file load_trace reads must be, as its error says
    "the file must be a budgetloop trace (with 'format': 'budgetloop-trace') or a run "
    "load_trace imports: OTLP JSON (an object with resourceSpans, or JSON Lines of them), an "
    "openai-agents trace export, pydantic-ai's messages JSON, an Anthropic Messages log, OpenAI "
    "Responses input items, or a Chat Completions message log (a list of messages, or an object "
    "with messages), got "
)


def unread(tmp_path: Path, document: Any) -> str:
    path = tmp_path / "file.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="load_trace does not read") as caught:
        load_traces(path)
    return str(caught.value).removeprefix(f"load_traces: {path}: ")


def test_formats_not_read_are_named(tmp_path: Path) -> None:
    attribute = {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "Hi"}}
    openllmetry = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t1", "spanId": "s1", "name": "openai.chat", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2", "attributes": [attribute]}]}]}]}  # fmt: skip
    assert unread(tmp_path, openllmetry) == (
        "the spans must follow the OpenTelemetry GenAI conventions, got 1 span in OpenLLMetry's "
        "format (gen_ai.prompt.N / gen_ai.completion.N attributes), which load_trace does not "
        "read; export with the OpenTelemetry GenAI conventions' gen_ai.input.messages and "
        "gen_ai.output.messages instead."
    )
    langsmith = [{"id": "r1", "name": "ChatOpenAI", "run_type": "llm", "trace_id": "r0",
                  "inputs": {"messages": []}, "outputs": {"generations": []}}]  # fmt: skip
    assert unread(tmp_path, langsmith) == TRACES + (
        "a LangSmith run export (runs with run_type, inputs and outputs), which load_trace "
        "does not read."
    )
    smolagents = [{"system_prompt": "You are an agent."},
                  {"task": "Price it."},
                  {"step_number": 1, "model_output": "...", "observations": "118.4",
                   "tool_calls": []}]  # fmt: skip
    assert unread(tmp_path, smolagents) == TRACES + (
        "smolagents' memory steps (step_number, model_output, observations), which load_trace "
        "does not read."
    )


def test_openinference_spans_import(tmp_path: Path) -> None:
    """A program's own loop over the real openai client, traced by OpenInference's OpenAI
    instrumentation inside an AGENT span, as it would send to Phoenix: each LLM span a step,
    the tool results the second call was sent the calls' results."""
    openai = pytest.importorskip("openai", reason="the dev extra has it")
    instrumentation = pytest.importorskip(
        "openinference.instrumentation.openai", reason="the dev extra has it"
    )
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                "parameters": t["input_schema"]}}
             for t in TOOLS]  # fmt: skip
    server = Provider("openai", (200, payload("openai_chat_two_tool_calls")),
                      (200, payload("openai_chat_final_text")))  # fmt: skip
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=server.client())
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = provider.get_tracer("my-agent")
        with tracer.start_as_current_span(
            "agent", attributes={"openinference.span.kind": "AGENT"}
        ):
            messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer briefly."},
                                              {"role": "user", "content": "Tidy up."}]  # fmt: skip
            reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
            asked = reply.choices[0].message
            messages.append(asked.model_dump(exclude_none=True))
            for n, call in enumerate(asked.tool_calls or []):
                messages.append({"role": "tool", "tool_call_id": call.id, "content": f"done {n}"})
            client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    finally:
        instrumentor.uninstrument()
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    result = load_trace(path)
    assert result.imported is not None
    assert result.imported.source.endswith("spans (OpenInference)")
    first = payload("openai_chat_two_tool_calls")
    final = payload("openai_chat_final_text")
    assert calls(result) == [
        (c["function"]["name"], "ok", f"done {n}")
        for n, c in enumerate(first["choices"][0]["message"]["tool_calls"])
    ]
    assert [c.id for c in result.tool_calls] == [
        c["id"] for c in first["choices"][0]["message"]["tool_calls"]
    ]
    assert [s.usage for s in result.steps] == [
        Usage(p["usage"]["prompt_tokens"], p["usage"]["completion_tokens"]) for p in (first, final)
    ]
    assert (result.stop, result.answer) == (
        Stop.ANSWERED,
        final["choices"][0]["message"]["content"],
    )
    assert [s["name"] for s in result.tools] == ["get_weather", "get_elevation"]
    assert [(m.role, m.content) for m in result.messages[:2]] == [
        ("system", "Answer briefly."),
        ("user", "Tidy up."),
    ]


def openinference_spans(path: Path, program: Any, *replies: tuple[int, dict[str, Any]]) -> Path:
    """``program(client, tracer)`` run with the real openai client over ``replies``, traced by
    OpenInference's OpenAI instrumentation, its spans written to ``path`` as OTLP JSON."""
    openai = pytest.importorskip("openai", reason="the dev extra has it")
    instrumentation = pytest.importorskip(
        "openinference.instrumentation.openai", reason="the dev extra has it"
    )
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = openai.OpenAI(
        api_key="sk-test", max_retries=0, http_client=Provider("openai", *replies).client()
    )
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        program(client, provider.get_tracer("my-agent"))
    finally:
        instrumentor.uninstrument()
    path.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    return path


def test_an_openinference_error_is_its_exception_with_the_traceback_apart(tmp_path: Path) -> None:
    """A failed OpenInference span's error is its exception event's type and message, as a
    native run says an error; the event's stacktrace is kept apart, as the call's or the step's
    ``traceback``. The status message is not the error: OpenInference's LangChain tracer writes
    the exception's repr and its whole traceback there, as the tool and agent spans here do."""
    import traceback

    from opentelemetry.trace import Status, StatusCode

    def failed_as_langchain_records_it(span: Any, exc: BaseException) -> None:
        span.record_exception(exc)
        said = repr(exc) + "".join(traceback.format_exception(exc))  # LangChain's run.error
        span.set_status(Status(StatusCode.ERROR, said))

    def tool(tracer: Any, name: str, call_id: str, fails: bool) -> str:
        attributes = {"openinference.span.kind": "TOOL", "tool.name": name,
                      "tool_call.id": call_id}  # fmt: skip
        with tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                          set_status_on_exception=False) as span:  # fmt: skip
            try:
                if fails:
                    raise PermissionError("test.txt is read-only")
                span.set_attribute("output.value", "deleted")
                return "deleted"
            except PermissionError as exc:
                failed_as_langchain_records_it(span, exc)
                raise

    def program(client: Any, tracer: Any) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy up."}]
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"},
                                          record_exception=False,
                                          set_status_on_exception=False) as agent:  # fmt: skip
            try:
                asked = client.chat.completions.create(model="gpt-4o", messages=messages)
                for n, call in enumerate(asked.choices[0].message.tool_calls):
                    tool(tracer, call.function.name, call.id, fails=n == 1)
            except PermissionError as exc:
                failed_as_langchain_records_it(agent, exc)

    first = payload("openai_chat_two_tool_calls")["choices"][0]["message"]["tool_calls"]
    path = openinference_spans(
        tmp_path / "tool.json", program, (200, payload("openai_chat_two_tool_calls"))
    )
    assert "Traceback (most recent call last)" in path.read_text()  # in the status messages
    result = load_trace(path)
    said = "PermissionError: test.txt is read-only"
    assert calls(result) == [
        (first[0]["function"]["name"], "ok", "deleted"),
        (first[1]["function"]["name"], "error", said),  # it ran: not skipped
    ]
    assert (result.stop, result.error) == (Stop.MODEL_ERROR, said)
    assert result.detail == f"the source's run raised {said}"
    kept = result.steps[0].tool_calls[1].traceback
    assert kept is not None
    assert kept.startswith("Traceback (most recent call last):\n")
    assert kept.endswith("\nPermissionError: test.txt is read-only\n")
    assert 'in tool\n    raise PermissionError("test.txt is read-only")' in kept
    assert result.steps[0].tool_calls[0].traceback is None

    def model_fails(client: Any, tracer: Any) -> None:
        with tracer.start_as_current_span(
            "agent", attributes={"openinference.span.kind": "AGENT"}
        ):
            messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy up."}]
            client.chat.completions.create(model="gpt-4o", messages=messages)

    def program_raised(client: Any, tracer: Any) -> None:
        with pytest.raises(Exception, match="overloaded"):
            model_fails(client, tracer)

    overloaded = {"error": {"message": "the model is overloaded", "type": "server_error"}}
    path = openinference_spans(tmp_path / "model.json", program_raised, (500, overloaded))
    result = load_trace(path)
    said = "InternalServerError: Error code: 500 - the model is overloaded"
    assert [s.error for s in result.steps] == [said]
    assert (result.stop, result.error) == (Stop.MODEL_ERROR, said)
    kept = result.steps[0].traceback
    assert kept is not None
    assert kept.startswith("Traceback (most recent call last):\n")
    assert kept.endswith(f"\nopenai.{said}\n")
