"""The adapters made with stream=True, over the real openai and anthropic SDK clients, served
server-sent events through httpx's MockTransport: the exact chunks, that they put together the
Completion the unstreamed adapter makes of the same reply, the request sent, and the streams
that go wrong (broken off, no usage, an error event, a failed or cut response). The SSE
bodies of Chat Completions and Messages are the recorded replies of tests/fixtures streamed as
the APIs stream them (tests/adapters/sse/); the Responses API's are built from
tests/responses_bodies.py's shapes, each event checked against the SDK's own type."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from budgetloop import Chunk, Completion, Message, ToolCall, UnreadableReply, Usage, tool
from budgetloop.adapters import (
    AsyncChatModel,
    AsyncChunkStream,
    ChatModel,
    ChunkStream,
    anthropic_messages,
    openai_chat,
    openai_responses,
)
from tests.adapter_support import ANTHROPIC, OPENAI, Case
from tests.provider_server import Provider, payload
from tests.responses_bodies import MODEL, function_call, message, response
from tests.stream_support import BROKEN, Streamer, recorded, time_chat_stream


def streamed(case: Case, server: Streamer, **options: Any) -> ChatModel:
    client = case.client_class(api_key="sk-test", max_retries=0, http_client=server.client())
    model = case.adapter(
        client, case.model, max_tokens=case.max_tokens, price=case.price, stream=True, **options
    )
    assert isinstance(model, ChatModel)
    return model


def async_streamed(case: Case, server: Streamer) -> AsyncChatModel:
    client = case.async_client_class(
        api_key="sk-test", max_retries=0, http_client=server.async_client()
    )
    model = case.adapter(client, case.model, max_tokens=case.max_tokens, stream=True)
    assert isinstance(model, AsyncChatModel)
    return model


def unstreamed(case: Case, body: dict[str, Any]) -> Completion:
    """What the unstreamed adapter makes of the same reply, sent whole."""
    provider = Provider(case.name, (200, body))
    model = case.over(provider)
    completion = model(turn(case), tools(case))
    assert isinstance(completion, Completion)
    return completion


def turn(case: Case) -> list[Message]:
    return [Message("system", case.system), Message("user", case.prompt)]


def tools(case: Case) -> list[dict[str, Any]]:
    return [tool(t).schema for t in case.tools]


def chunks_of(model: ChatModel, case: Case) -> list[Chunk]:
    stream = model(turn(case), tools(case))
    assert isinstance(stream, Iterator)
    return list(stream)


def until_raised(stream: Iterable[Chunk]) -> tuple[list[Chunk], UnreadableReply]:
    """The chunks a stream yielded before it raised, and what it raised."""
    came: list[Chunk] = []
    try:
        for chunk in stream:
            came.append(chunk)
    except UnreadableReply as error:
        return came, error
    raise AssertionError(f"the stream ended after {len(came)} chunks, raising nothing")


def assemble(chunks: Iterable[Chunk]) -> Completion:
    """The completion chunks make: texts joined, each call's pieces joined by index, the
    first model and id named, the last usage and finish reason given."""
    texts: list[str] = []
    calls: dict[int, list[Any]] = {}
    usage = finish = model = response_id = None
    for chunk in chunks:
        texts.append(chunk.text)
        if chunk.index is not None:
            call = calls.setdefault(chunk.index, [None, None, []])
            call[0] = call[0] or chunk.id
            call[1] = call[1] or chunk.name
            call[2].append(chunk.arguments)
        usage = chunk.usage or usage
        finish = chunk.finish_reason or finish
        model = model or chunk.model
        response_id = response_id or chunk.response_id
    return Completion(
        text="".join(texts) or None,
        tool_calls=tuple(ToolCall(n, "".join(a), i) for i, n, a in calls.values()),
        usage=usage,
        model=model,
        response_id=response_id,
        finish_reason=finish,
    )


def as_sent(completion: Completion) -> Completion:
    """The completion with each call's arguments as their JSON text (Anthropic's unstreamed
    reply gives them as a dict; its stream gives the text)."""
    calls = tuple(ToolCall(c.name, c.arguments_text, c.id) for c in completion.tool_calls)
    return Completion(
        completion.text, calls, completion.usage, completion.cost_usd, completion.model,
        completion.response_id, completion.finish_reason,
    )  # fmt: skip


# Chat Completions ---------------------------------------------------------------------------

CHAT_MODEL, CHAT_ID = "gpt-4o-2024-08-06", "chatcmpl-C9f7f1SbHRzcwlJwrYKdSonTRWPvV"
FIRST_ID, SECOND_ID = OPENAI.call_ids
CHAT_CHUNKS = [
    Chunk(index=0, id=FIRST_ID, name="delete_file", model=CHAT_MODEL, response_id=CHAT_ID),
    Chunk(index=0, arguments='{"pa'),
    Chunk(index=0, arguments='th": ".'),
    Chunk(index=0, arguments='env"}'),
    Chunk(index=1, id=SECOND_ID, name="create_file"),
    Chunk(index=1, arguments='{"path"'),
    Chunk(index=1, arguments=': "test'),
    Chunk(index=1, arguments='.txt"}'),
    Chunk(finish_reason="tool_call"),
    Chunk(usage=Usage(71, 46)),
]


def test_chat_streams_two_calls_in_fragments_as_the_unstreamed_reply_reads_them() -> None:
    server = Streamer("openai", recorded("openai_chat_two_tool_calls"))
    chunks = chunks_of(streamed(OPENAI, server, temperature=0), OPENAI)

    assert chunks == CHAT_CHUNKS
    assert assemble(chunks) == unstreamed(OPENAI, payload("openai_chat_two_tool_calls"))
    assert server.bodies == [
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": OPENAI.system},
                {"role": "user", "content": OPENAI.prompt},
            ],
            "max_completion_tokens": 256,
            "tools": [{"type": "function", "function": s} for s in tools(OPENAI)],
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ]


def test_chat_keeps_the_users_stream_options_and_asks_for_the_usage_chunk() -> None:
    server = Streamer("openai", recorded("openai_chat_final_text"))
    model = streamed(OPENAI, server, stream_options={"include_obfuscation": False})
    chunks_of(model, OPENAI)

    options = {"include_obfuscation": False, "include_usage": True}
    assert server.bodies[0]["stream_options"] == options
    assert repr(model) == (
        f"ChatModel(openai_chat, model='gpt-4o', max_tokens=256, price={OPENAI.price!r}, "
        "stream=True)"
    )


def test_chat_streams_text_through_the_async_client() -> None:
    server = Streamer("openai", recorded("openai_chat_final_text"))
    model = async_streamed(OPENAI, server)

    async def collect() -> list[Chunk]:
        stream = await model(turn(OPENAI), [])
        assert isinstance(stream, AsyncIterator)
        return [chunk async for chunk in stream]

    chunks = asyncio.run(collect())
    pieces = ["The file", " `.env", "` has been", " deleted and", " `test.txt`",
              " has been created", " successfully."]  # fmt: skip
    assert [c.text for c in chunks[:-2]] == pieces
    assert chunks[0].model == CHAT_MODEL
    assert chunks[0].response_id == "chatcmpl-C9f7iBeeNNBazDCMa7RSx3EFtiZoR"
    assert chunks[-2:] == [Chunk(finish_reason="stop"), Chunk(usage=Usage(133, 19))]
    assert assemble(chunks) == unstreamed(OPENAI, payload("openai_chat_final_text"))
    assert server.bodies[0]["stream"] is True


def test_chat_stream_without_a_usage_chunk_yields_no_usage() -> None:
    events = [e for e in recorded("openai_chat_two_tool_calls") if b'"choices":[]' not in e]
    chunks = chunks_of(streamed(OPENAI, Streamer("openai", events)), OPENAI)

    assert chunks == CHAT_CHUNKS[:-1]  # the finish reason, and no usage: billed as projected
    assert assemble(chunks).usage is None


def test_chat_stream_with_a_usage_it_cannot_read_yields_no_usage() -> None:
    events = recorded("openai_chat_two_tool_calls")
    events[-2] = events[-2].replace(b'"prompt_tokens":71', b'"prompt_tokens":-71')
    chunks = chunks_of(streamed(OPENAI, Streamer("openai", events)), OPENAI)

    assert chunks == CHAT_CHUNKS[:-1]


def test_chat_stream_that_breaks_off_raises_after_what_came() -> None:
    server = Streamer("openai", recorded("openai_chat_two_tool_calls"), broken=6)
    came, error = until_raised(streamed(OPENAI, server)(turn(OPENAI), tools(OPENAI)))

    assert came == CHAT_CHUNKS[:6]
    cause = error.__cause__
    assert isinstance(cause, openai.APIConnectionError)  # the SDK's word for a broken stream
    assert str(error) == (
        "openai_chat: the stream must be read to its end, got one that broke off "
        f"(APIConnectionError: {cause})."
    )
    assert error.usage is None
    assert type(cause.__cause__).__name__ == "RemoteProtocolError"


def test_chat_stream_broken_off_after_its_usage_carries_that_usage() -> None:
    server = Streamer("openai", recorded("openai_chat_two_tool_calls"), broken=10)
    came, error = until_raised(streamed(OPENAI, server)(turn(OPENAI), tools(OPENAI)))

    assert came == CHAT_CHUNKS  # every chunk came; the connection broke before [DONE]
    assert isinstance(error, UnreadableReply)
    assert error.usage == Usage(71, 46)


def test_chat_stream_that_ends_before_its_finish_reason_raises() -> None:
    events = recorded("openai_chat_two_tool_calls")[:5]  # cut cleanly, no error
    came, error = until_raised(streamed(OPENAI, Streamer("openai", events))(turn(OPENAI), []))

    assert came == CHAT_CHUNKS[:5]
    assert str(error) == (
        "openai_chat: the stream must be read to its finish_reason, got one that ended before it."
    )


def test_chat_stream_refuses_a_custom_tool_call_as_the_unstreamed_reply_does() -> None:
    custom = recorded("openai_chat_two_tool_calls")[0].replace(
        b'"type":"function","function":{"name":"delete_file","arguments":""}',
        b'"type":"custom","custom":{"name":"delete_file","input":""}',
    )
    events = [custom, *recorded("openai_chat_two_tool_calls")[1:]]
    came, error = until_raised(streamed(OPENAI, Streamer("openai", events))(turn(OPENAI), []))

    assert came == []
    assert str(error) == (
        f"openai_chat: the type of tool call '{FIRST_ID}' must be 'function' (only function "
        "tool calls are supported), got 'custom'."
    )


def test_a_stream_closed_before_its_first_chunk_closes_the_response() -> None:
    server = Streamer("openai", recorded("openai_chat_two_tool_calls"))
    stream = streamed(OPENAI, server)(turn(OPENAI), [])
    assert isinstance(stream, ChunkStream)
    assert not server.closed
    stream.close()

    assert server.closed  # the provider sees the connection closed, and stops generating
    assert list(stream) == []
    assert server.sent == 0


def test_a_stream_closed_mid_reply_closes_the_response() -> None:
    server = Streamer("anthropic", recorded("anthropic_messages_two_tool_use"))
    model = async_streamed(ANTHROPIC, server)

    async def two_then_close() -> list[Chunk]:
        stream = await model(turn(ANTHROPIC), [])
        assert isinstance(stream, AsyncChunkStream)
        came = [await anext(stream), await anext(stream)]
        await stream.aclose()
        return came

    assert asyncio.run(two_then_close()) == CLAUDE_CHUNKS[:2]
    assert server.closed
    assert server.sent < len(server.events)


def test_stream_must_be_a_bool() -> None:
    client = openai.OpenAI(api_key="sk-test")
    with pytest.raises(TypeError) as raised:
        openai_chat(client, "gpt-4o", max_tokens=10, stream="yes")  # type: ignore[arg-type]
    assert str(raised.value) == "openai_chat: stream must be True or False, got str."


@pytest.mark.parametrize("adapter", [openai_chat, openai_responses, anthropic_messages])
def test_a_runs_settings_cannot_turn_streaming_on_or_off(adapter: Callable[..., Any]) -> None:
    sdk = anthropic.Anthropic if adapter is anthropic_messages else openai.OpenAI
    model = adapter(sdk(api_key="sk-test"), "m", max_tokens=10)
    provider = model.provider_name
    with pytest.raises(ValueError, match="does not set itself") as raised:
        model.check_settings({provider: {"stream": True}}, "run()")
    assert str(raised.value) == (
        f"run(): settings[{provider!r}] must be keys {model.provider} does not set itself, "
        "got stream."
    )


# Anthropic Messages --------------------------------------------------------------------------

CLAUDE = "claude-sonnet-4-5-20250929"
WEATHER_ID, ELEVATION_ID = ANTHROPIC.call_ids
CLAUDE_CHUNKS = [
    Chunk("I'll get the weather", model=CLAUDE, response_id="msg_01UaeArcGjaycoQeRPRt5CWw"),
    Chunk(" and elevation information for Denver."),
    Chunk(index=0, id=WEATHER_ID, name="get_weather"),
    Chunk(index=0, arguments='{"city": '),
    Chunk(index=0, arguments='"Denver"}'),
    Chunk(index=1, id=ELEVATION_ID, name="get_elevation"),
    Chunk(index=1, arguments='{"ci'),
    Chunk(index=1, arguments='ty": "Den'),
    Chunk(index=1, arguments='ver"}'),
    Chunk(usage=Usage(612, 101), finish_reason="tool_call"),
]


def test_messages_streams_text_and_two_calls_with_the_final_usage_of_message_delta() -> None:
    server = Streamer("anthropic", recorded("anthropic_messages_two_tool_use"))
    chunks = chunks_of(streamed(ANTHROPIC, server), ANTHROPIC)

    assert chunks == CLAUDE_CHUNKS  # input from message_start, output from message_delta
    whole = unstreamed(ANTHROPIC, payload("anthropic_messages_two_tool_use"))
    assert assemble(chunks) == as_sent(whole)
    assert server.bodies == [
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 512,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": ANTHROPIC.prompt}]}
            ],
            "system": ANTHROPIC.system,
            "tools": [
                {
                    "name": s["name"],
                    "description": s["description"],
                    "input_schema": s["parameters"],
                }
                for s in tools(ANTHROPIC)
            ],
            "stream": True,
        }
    ]


def test_messages_streams_text_through_the_async_client() -> None:
    server = Streamer("anthropic", recorded("anthropic_messages_final_text"))
    model = async_streamed(ANTHROPIC, server)

    async def collect() -> list[Chunk]:
        stream = await model(turn(ANTHROPIC), [])
        assert isinstance(stream, AsyncIterator)
        return [chunk async for chunk in stream]

    chunks = asyncio.run(collect())
    assert len(chunks) == 5
    assert chunks[-1] == Chunk(usage=Usage(798, 50), finish_reason="stop")
    assert assemble(chunks) == unstreamed(ANTHROPIC, payload("anthropic_messages_final_text"))


def test_messages_usage_of_message_start_alone_makes_no_chunk() -> None:
    server = Streamer("anthropic", recorded("anthropic_messages_two_tool_use"), broken=1)
    came, error = until_raised(streamed(ANTHROPIC, server)(turn(ANTHROPIC), []))

    assert came == []
    assert isinstance(error, UnreadableReply)
    assert error.usage is None


def test_messages_stream_that_breaks_off_mid_call_raises_after_what_came() -> None:
    server = Streamer("anthropic", recorded("anthropic_messages_two_tool_use"), broken=10)
    came, error = until_raised(streamed(ANTHROPIC, server)(turn(ANTHROPIC), tools(ANTHROPIC)))

    assert came == CLAUDE_CHUNKS[:5]
    assert isinstance(error.__cause__, anthropic.APIConnectionError)
    assert str(error) == (
        "anthropic_messages: the stream must be read to its end, got one that broke off "
        f"(APIConnectionError: Connection to api.anthropic.com failed: {BROKEN})."
    )


def test_messages_error_event_mid_stream_raises_an_unreadable_reply() -> None:
    overloaded = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    events = recorded("anthropic_messages_final_text")
    came, error = until_raised(
        streamed(ANTHROPIC, Streamer("anthropic", [*events[:4], overloaded]))(turn(ANTHROPIC), [])
    )

    assert [c.text for c in came] == [
        "The weather in Denver is **Sunny** with a",
        " temperature of **22°C** (about 72°F).\n\n",
    ]
    assert str(error).startswith(
        "anthropic_messages: the stream must be read to its end, got one that broke off "
        "(APIStatusError: Overloaded"
    )
    assert isinstance(error.__cause__, anthropic.APIStatusError)


def test_messages_stream_that_ends_before_message_delta_raises() -> None:
    events = recorded("anthropic_messages_final_text")[:-2]
    came, error = until_raised(
        streamed(ANTHROPIC, Streamer("anthropic", events))(turn(ANTHROPIC), [])
    )

    assert len(came) == 4
    assert str(error) == (
        "anthropic_messages: the stream must be read to its message_delta event, got one that "
        "ended before it."
    )


def test_messages_stop_reason_maps_as_the_unstreamed_reply_maps_it() -> None:
    events = [
        e.replace(b'"stop_reason":"end_turn"', b'"stop_reason":"max_tokens"')
        for e in recorded("anthropic_messages_final_text")
    ]
    chunks = chunks_of(streamed(ANTHROPIC, Streamer("anthropic", events)), ANTHROPIC)
    body = payload("anthropic_messages_final_text")
    body["stop_reason"] = "max_tokens"

    assert chunks[-1].finish_reason == "length"
    assert assemble(chunks) == unstreamed(ANTHROPIC, body)


# The Responses API ---------------------------------------------------------------------------

EVENT = TypeAdapter(ResponseStreamEvent)


def responses_events(body: dict[str, Any], size: int = 6) -> list[bytes]:
    """``body`` streamed as the Responses API streams it: created, each output item added,
    its text or arguments in pieces of ``size`` characters, done, then the last event with the
    whole response (``response.completed``, or the one its status names)."""
    said: list[dict[str, Any]] = []
    begun = {**body, "status": "in_progress", "output": [], "usage": None}
    said.append({"type": "response.created", "response": begun})
    for i, item in enumerate(body["output"]):
        if item["type"] == "function_call":
            said.append({"type": "response.output_item.added", "output_index": i,
                         "item": {**item, "arguments": "", "status": "in_progress"}})  # fmt: skip
            text = item["arguments"]
            for at in range(0, len(text), size):
                said.append({"type": "response.function_call_arguments.delta", "output_index": i,
                             "item_id": item["id"], "delta": text[at : at + size]})  # fmt: skip
        else:
            said.append({"type": "response.output_item.added", "output_index": i,
                         "item": {**item, "content": [], "status": "in_progress"}})  # fmt: skip
            text = item["content"][0]["text"]
            for at in range(0, len(text), size):
                said.append({"type": "response.output_text.delta", "output_index": i,
                             "item_id": item["id"], "content_index": 0, "logprobs": [],
                             "delta": text[at : at + size]})  # fmt: skip
        said.append({"type": "response.output_item.done", "output_index": i, "item": item})
    last = {"completed": "response.completed", "incomplete": "response.incomplete"}
    said.append({"type": last.get(body["status"], "response.failed"), "response": body})
    out = []
    for number, event in enumerate(said):
        event["sequence_number"] = number
        EVENT.validate_python(event)  # the shape the SDK reads, or the test is wrong
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return out


def responses_model(server: Streamer) -> ChatModel:
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=server.client())
    model = openai_responses(client, MODEL, max_tokens=256, stream=True)
    assert isinstance(model, ChatModel)
    return model


def responses_unstreamed(body: dict[str, Any]) -> Completion:
    provider = Provider("openai", (200, body))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=provider.client())
    completion = openai_responses(client, MODEL, max_tokens=256)(turn(OPENAI), tools(OPENAI))
    assert isinstance(completion, Completion)
    return completion


TWO_CALLS = response(
    [
        function_call("delete_file", '{"path": ".env"}', "call_A", "fc_A"),
        function_call("create_file", '{"path": "test.txt"}', "call_B", "fc_B"),
    ],
    usage=(120, 60, 20, 0),
    response_id="resp_1",
)


def test_responses_streams_two_calls_and_reads_usage_from_response_completed() -> None:
    server = Streamer("openai", responses_events(TWO_CALLS))
    chunks = chunks_of(responses_model(server), OPENAI)

    assert chunks == [
        Chunk(index=0, id="call_A", name="delete_file", model=MODEL, response_id="resp_1"),
        Chunk(index=0, arguments='{"path'),
        Chunk(index=0, arguments='": ".e'),
        Chunk(index=0, arguments='nv"}'),
        Chunk(index=1, id="call_B", name="create_file"),
        Chunk(index=1, arguments='{"path'),
        Chunk(index=1, arguments='": "te'),
        Chunk(index=1, arguments="st.txt"),
        Chunk(index=1, arguments='"}'),
        Chunk(usage=Usage(120, 60, cache_read_tokens=20), finish_reason="tool_call"),
    ]
    assert assemble(chunks) == responses_unstreamed(TWO_CALLS)
    sent = server.bodies[0]
    assert (sent["stream"], sent["store"], sent["max_output_tokens"]) == (True, False, 256)


def test_responses_streams_text_through_the_async_client() -> None:
    body = response([message("Deleted `.env` and created `test.txt`.")], response_id="resp_2")
    server = Streamer("openai", responses_events(body, size=9))
    client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=server.async_client()
    )
    model = openai_responses(client, MODEL, max_tokens=256, stream=True)

    async def collect() -> list[Chunk]:
        stream = await model(turn(OPENAI), [])  # type: ignore[misc]
        return [chunk async for chunk in stream]

    chunks = asyncio.run(collect())
    assert [c.text for c in chunks] == [
        "Deleted `",
        ".env` and",
        " created ",
        "`test.txt",
        "`.",
        "",
    ]
    assert assemble(chunks) == responses_unstreamed(body)


def test_responses_incomplete_stream_is_cut_at_the_limit_and_billed() -> None:
    body = response([message("Deleted `.env` and")], status="incomplete",
                    incomplete="max_output_tokens", usage=(90, 256, 0, 0))  # fmt: skip
    chunks = chunks_of(responses_model(Streamer("openai", responses_events(body))), OPENAI)

    assert chunks[-1] == Chunk(usage=Usage(90, 256), finish_reason="length")
    assert assemble(chunks) == responses_unstreamed(body)


def test_responses_failed_stream_raises_with_the_usage_it_reports() -> None:
    body = response([message("Deleted")], status="failed", usage=(90, 3, 0, 0))
    body["error"] = {"code": "server_error", "message": "The model failed."}
    came, error = until_raised(responses_model(Streamer("openai", responses_events(body)))(
        turn(OPENAI), []
    ))  # fmt: skip

    assert [c.text for c in came] == ["Delete", "d"]
    assert str(error) == (
        "openai_responses: the response must be one that did not fail, got status 'failed' "
        "(server_error: The model failed.)."
    )
    assert isinstance(error, UnreadableReply)
    assert error.usage == Usage(90, 3)


def test_responses_error_event_raises() -> None:
    events = responses_events(TWO_CALLS)[:3]
    events.append(
        b'event: error\ndata: {"type":"error","code":"rate_limit_exceeded",'
        b'"message":"Slow down.","param":null,"sequence_number":3}\n\n'
    )
    came, error = until_raised(responses_model(Streamer("openai", events))(turn(OPENAI), []))

    assert [c.arguments for c in came] == ["", '{"path']
    assert str(error) == (
        "openai_responses: the stream must be one that did not fail, got an error event "
        "(rate_limit_exceeded: Slow down.)."
    )


def test_responses_stream_that_breaks_off_raises_after_what_came() -> None:
    server = Streamer("openai", responses_events(TWO_CALLS), broken=4)
    came, error = until_raised(responses_model(server)(turn(OPENAI), []))

    assert len(came) == 3
    assert error.usage is None
    assert str(error).startswith("openai_responses: the stream must be read to its end, got one")


def test_the_timing_helper_for_bench_py_reads_the_stream_alone_and_through_the_loop() -> None:
    alone, adapted = time_chat_stream(50)

    assert alone > 0
    assert adapted > 0
