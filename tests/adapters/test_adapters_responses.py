"""openai_responses over the real openai SDK client, served bodies of the shapes the Responses
API returns through httpx's MockTransport: the input items and tools the SDK sent, parallel
calls paired by call_id, reasoning carried with its encrypted content, cached and reasoning
tokens billed, a refusal, an incomplete reply, and setup mistakes caught before any request."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Stop,
    ToolCall,
    Usage,
    arun,
    run,
    start,
    tool,
)
from budgetloop.adapters import AsyncChatModel, ChatModel, openai_responses
from budgetloop.display import step_head
from budgetloop.ledger import MemoryLedger
from tests.adapter_support import create_file, delete_file
from tests.provider_server import Provider
from tests.responses_bodies import MODEL, function_call, message, reasoning, response
from tests.strategies import usage_reports

PRICE = Price(0.25, 2.0, cache_read_per_mtok=0.025)
PROMPT = "Delete `.env` and create `test.txt`."
SYSTEM = "Just call tools without asking for confirmation."


def client(provider: Provider) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=provider.client())


def model_over(provider: Provider, price: Price = PRICE, **params: Any) -> ChatModel:
    model = openai_responses(client(provider), MODEL, max_tokens=256, price=price, **params)
    assert isinstance(model, ChatModel)
    return model


def two_calls(
    *, with_reasoning: str | None = None, encrypted: str | None = None
) -> dict[str, Any]:
    output = [
        function_call("delete_file", '{"path": ".env"}', "call_A", "fc_A"),
        function_call("create_file", '{"path": "test.txt"}', "call_B", "fc_B"),
    ]
    if with_reasoning is not None:
        output.insert(0, reasoning(with_reasoning, encrypted=encrypted, summary="Two files."))
    return response(output, usage=(120, 60, 0, 40 if with_reasoning else 0), response_id="resp_1")


FINAL = response(
    [message("Deleted `.env` and created `test.txt`.")],
    usage=(210, 15, 100, 0),
    response_id="resp_2",
)
TOOLS = [tool(delete_file), tool(create_file)]


def flat_tool(t: Any, *, strict: bool = False) -> dict[str, Any]:
    s = t.schema
    return {
        "type": "function",
        "name": s["name"],
        "description": s["description"],
        "parameters": s["parameters"],
        "strict": strict,
    }


def test_a_run_sends_input_items_and_tools_and_pairs_results_by_call_id() -> None:
    provider = Provider("openai", (200, two_calls()), (200, FINAL))
    result = run(model_over(provider, temperature=0), PROMPT, system=SYSTEM, tools=TOOLS)

    assert result.stop == "answered"
    assert result.answer == "Deleted `.env` and created `test.txt`."
    assert provider.paths == ["/v1/responses", "/v1/responses"]
    first, second = provider.bodies
    tools = [flat_tool(t) for t in TOOLS]  # strict false: the API would make them strict
    system = {"role": "system", "content": SYSTEM}
    user = {"role": "user", "content": PROMPT}
    assert first == {
        "model": MODEL,
        "input": [system, user],
        "max_output_tokens": 256,
        "tools": tools,
        "store": False,
        "temperature": 0,
    }
    assert second["input"] == [
        system,
        user,
        {"type": "function_call", "call_id": "call_A", "name": "delete_file",
         "arguments": '{"path": ".env"}'},
        {"type": "function_call", "call_id": "call_B", "name": "create_file",
         "arguments": '{"path": "test.txt"}'},
        {"type": "function_call_output", "call_id": "call_A", "output": "deleted .env"},
        {"type": "function_call_output", "call_id": "call_B", "output": "created test.txt"},
    ]  # fmt: skip
    assert [c.id for c in result.steps[0].tool_calls] == ["call_A", "call_B"]
    assert [s.usage for s in result.steps] == [
        Usage(120, 60),
        Usage(210, 15, cache_read_tokens=100),
    ]
    assert [s.finish_reason for s in result.steps] == ["tool_call", "stop"]
    # the cached 100 at $0.025 a million, the rest at $0.25 and $2
    assert result.cost_usd == (120 * 0.25 + 60 * 2 + 110 * 0.25 + 100 * 0.025 + 15 * 2) / 1e6


def test_a_strict_tool_says_strict_true_and_every_other_strict_false() -> None:
    def book(room: str, nights: int = 1) -> str:
        """Book a room."""
        return ""

    provider = Provider("openai", (200, FINAL))
    strict, plain = tool(book, strict=True), tool(create_file)
    model_over(provider)([Message("user", "go")], [strict.schema, plain.schema])

    sent = provider.bodies[0]["tools"]
    assert sent == [flat_tool(strict, strict=True), flat_tool(plain, strict=False)]
    assert sent[0]["parameters"]["additionalProperties"] is False


def test_a_reasoning_model_gets_its_reasoning_items_back_in_order_with_their_encrypted_content() -> (
    None
):
    provider = Provider(
        "openai",
        (200, two_calls(with_reasoning="rs_1", encrypted="gAAAAB-secret-blob")),
        (200, FINAL),
    )
    model = model_over(provider, reasoning={"effort": "low"})
    result = run(model, PROMPT, tools=TOOLS)

    assert result.stop == "answered"
    first, second = provider.bodies
    assert first["store"] is False
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "low"}
    # the turn goes back as the API wrote it: reasoning first, each call with its item id
    assert second["input"][1:4] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Two files."}],
            "encrypted_content": "gAAAAB-secret-blob",
        },
        function_call("delete_file", '{"path": ".env"}', "call_A", "fc_A"),
        function_call("create_file", '{"path": "test.txt"}', "call_B", "fc_B"),
    ]
    assert [i.get("type") for i in second["input"][4:]] == ["function_call_output"] * 2
    # 40 of the 60 output tokens were reasoning, billed as output
    assert result.steps[0].usage == Usage(120, 60, reasoning_tokens=40)
    assert result.steps[0].cost_usd == (120 * 0.25 + 60 * 2) / 1e6


def test_reasoning_without_encrypted_content_is_not_sent_back_by_a_dangling_id() -> None:
    # store=False and no include: OpenAI keeps nothing, so "rs_1" alone would be a 404
    provider = Provider("openai", (200, two_calls(with_reasoning="rs_1")), (200, FINAL))
    run(model_over(provider), PROMPT, tools=TOOLS)

    second = provider.bodies[1]["input"]
    assert "include" not in provider.bodies[0]
    assert [i.get("type") for i in second] == [
        None,
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert all("id" not in i for i in second)


def test_with_storage_on_the_reasoning_goes_back_as_it_came() -> None:
    provider = Provider("openai", (200, two_calls(with_reasoning="rs_1")), (200, FINAL))
    run(model_over(provider, store=True, reasoning={"effort": "low"}), PROMPT, tools=TOOLS)

    first, second = provider.bodies
    assert first["store"] is True
    assert "include" not in first  # stored items are found by id: nothing to ask for
    assert second["input"][1]["id"] == "rs_1"


def test_a_turn_edited_in_a_fork_is_sent_as_edited_without_the_old_reasoning() -> None:
    provider = Provider(
        "openai",
        (200, two_calls(with_reasoning="rs_1", encrypted="blob")),
        (200, FINAL),
        (200, FINAL),
    )
    model = model_over(provider, reasoning={"effort": "low"})
    session = start(model, PROMPT, tools=TOOLS)
    session.step()
    edited = list(session.messages)
    edited[1] = Message(
        "assistant", None, (ToolCall("create_file", '{"path": "b.txt"}', "call_A"),)
    )
    edited[2:4] = [Message("tool", "created b.txt", tool_call_id="call_A")]
    fork = session.fork(at=1, messages=edited)
    fork.step()

    sent = provider.bodies[-1]["input"]
    assert sent[1:] == [
        {"type": "function_call", "call_id": "call_A", "name": "create_file",
         "arguments": '{"path": "b.txt"}'},
        {"type": "function_call_output", "call_id": "call_A", "output": "created b.txt"},
    ]  # fmt: skip


def test_a_refusal_becomes_the_text() -> None:
    body = response([message("I can't help with that.", refusal=True)])
    result = run(model_over(Provider("openai", (200, body))), PROMPT, tools=TOOLS)

    assert result.stop == "answered"
    assert result.answer == "I can't help with that."


def test_an_incomplete_reply_is_billed_and_says_length() -> None:
    body = response(
        [reasoning("rs_9", encrypted="blob"), message("The answer is")],
        usage=(80, 256, 0, 200),
        status="incomplete",
        incomplete="max_output_tokens",
    )
    result = run(
        model_over(Provider("openai", (200, body))), PROMPT, budget=Budget(max_cost_usd=1)
    )

    assert result.answer == "The answer is"
    step = result.steps[0]
    assert step.finish_reason == "length"
    assert step.usage == Usage(80, 256, reasoning_tokens=200)
    assert result.cost_usd == (80 * 0.25 + 256 * 2) / 1e6
    assert result.to_dict()["steps"][0]["finish_reason"] == "length"


def test_a_failed_response_is_a_model_error_naming_the_cause() -> None:
    body = response([], status="failed")
    body["error"] = {"code": "server_error", "message": "The model crashed."}
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.stop is Stop.MODEL_ERROR
    assert result.error == (
        "UnreadableReply: openai_responses: the response must be one that did not fail, got "
        "status 'failed' (server_error: The model crashed.)."
    )


# -- a usage that cannot be read: billed at the call's worst case, as a missing one ------------

# Assumed rates: cache reads below the input price, writes above it, output dearest.
CACHED_PRICE = Price(2.0, 8.0, cache_read_per_mtok=0.5, cache_write_per_mtok=2.5)
UNREADABLE = {
    "empty": {},
    "a string count": {"input_tokens": "120", "output_tokens": 60},
    "a float count": {"input_tokens": 120.0, "output_tokens": 60},
    "a negative count": {"input_tokens": 120, "output_tokens": -1},
    "a bool count": {"input_tokens": 120, "output_tokens": True},
    "no output": {"input_tokens": 120},
    "a string cached part": {
        "input_tokens": 120,
        "output_tokens": 60,
        "input_tokens_details": {"cached_tokens": "100"},
    },
    "cached above the input": {
        "input_tokens": 120,
        "output_tokens": 60,
        "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 30},
    },
    "details not an object": {
        "input_tokens": 120,
        "output_tokens": 60,
        "input_tokens_details": "cached",
    },
    "two vocabularies that differ": {
        "input_tokens": 120,
        "output_tokens": 60,
        "prompt_tokens": 9000,
        "completion_tokens": 60,
    },
    "not an object": "120 in, 60 out",
}


@pytest.mark.parametrize("usage", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_usage_that_cannot_be_read_is_billed_at_the_calls_worst_case(usage: Any) -> None:
    body = response([message("Done.")])
    body["usage"] = usage
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.stop == "answered"
    step = result.steps[0]
    assert step.usage is None  # the step says no usage was read: charged at the projection
    assert step.projection is not None
    assert result.cost_usd == step.projection.cost_usd
    assert result.cost_usd >= PRICE.usage_cost(Usage(120, 60))


def test_chat_style_usage_names_are_read_as_what_they_mean() -> None:
    body = response([message("Done.")])
    body["usage"] = {
        "prompt_tokens": 120,
        "completion_tokens": 60,
        "total_tokens": 180,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 40},
    }
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.steps[0].usage == Usage(120, 60, cache_read_tokens=100, reasoning_tokens=40)
    assert result.cost_usd == PRICE.usage_cost(Usage(120, 60, cache_read_tokens=100))


def tool_turns(n: int) -> list[tuple[int, dict[str, Any]]]:
    """``n`` replies, each asking for a new file, each with a usage that cannot be read."""
    turns = []
    for i in range(n):
        body = response([function_call("create_file", f'{{"path": "{i}.txt"}}', f"c{i}", f"f{i}")])
        body["usage"] = {}
        turns.append((200, body))
    return turns


def test_a_run_whose_usage_cannot_be_read_stops_at_its_cost_ceiling() -> None:
    provider = Provider("openai", *tool_turns(20))
    model = model_over(provider, price=Price(10.0, 40.0))
    budget = Budget(max_steps=None, max_cost_usd=0.05)
    result = run(model, PROMPT, tools=TOOLS, budget=budget)

    assert result.stop is Stop.MAX_COST_USD
    assert len(provider.bodies) == len(result.steps) == 3  # about $0.013 each, at the worst
    assert all(s.usage is None for s in result.steps)
    assert [s.cost_usd for s in result.steps] == [
        s.projection.cost_usd for s in result.steps if s.projection is not None
    ]
    assert 0.04 < result.cost_usd <= 0.05
    # the context estimate grows with the run, never reset by a usage of nothing
    sent = [s.projection.input_tokens for s in result.steps if s.projection is not None]
    assert sent == sorted(sent)
    assert sent[0] < sent[-1]


def test_a_shared_ledger_records_the_worst_case_of_a_usage_that_cannot_be_read() -> None:
    provider = Provider("openai", *tool_turns(20))
    ledger = MemoryLedger(0.03)
    model = model_over(provider, price=Price(10.0, 40.0))
    result = run(model, PROMPT, tools=TOOLS, budget=Budget(max_steps=None), ledger=ledger)

    assert result.stop is Stop.SHARED_BUDGET
    assert len(provider.bodies) == len(result.steps) == 2
    assert result.cost_usd is not None
    assert ledger.spent_pico() == round(result.cost_usd * 10**12) > 0.02 * 10**12
    assert ledger.reserved_pico() == 0


def most_input() -> int:
    """The input the loop projects for the property's request: its worst case holds them."""
    session = start(model_over(Provider("openai"), price=CACHED_PRICE), PROMPT, system=SYSTEM)
    projection = session.projection
    assert projection is not None
    return projection.input_tokens


@given(data=st.data())
def test_a_reply_with_any_usage_shape_is_never_billed_below_what_the_provider_billed(
    data: st.DataObject,
) -> None:
    report = data.draw(usage_reports(most_input(), 256))
    body = response([message("Done.")])
    body["usage"] = report.said
    model = model_over(Provider("openai", (200, body)), price=CACHED_PRICE)
    result = run(model, PROMPT, system=SYSTEM, budget=Budget(max_cost_usd=1))

    assert result.stop == "answered"
    step = result.steps[0]
    assert step.projection is not None
    assert result.cost_usd is not None
    assert result.cost_usd >= CACHED_PRICE.usage_cost(report.true)
    if step.usage is None:  # not read: the worst case
        assert result.cost_usd == step.projection.cost_usd
    else:  # read: the very counts the provider billed, at their prices
        assert step.usage == report.true
        assert result.cost_usd == CACHED_PRICE.usage_cost(report.true)
    if report.faithful:
        assert step.usage == report.true


@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
def test_a_response_that_has_not_ended_is_a_model_error_naming_its_status(status: str) -> None:
    body = response([], status=status)  # what a background response says before it ends
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.stop is Stop.MODEL_ERROR
    assert result.answer is None
    assert result.error == (
        "UnreadableReply: openai_responses: the response's status must be 'completed' or "
        f"'incomplete' (a response that has ended), got '{status}'."
    )


CUSTOM = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "call_id": "call_C",
    "name": "shell",
    "input": "rm -rf /",
    "status": "completed",
}


def test_an_output_item_the_adapter_does_not_read_is_a_model_error_naming_it() -> None:
    body = response([reasoning("rs_1", encrypted="blob"), CUSTOM])
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.stop is Stop.MODEL_ERROR
    assert result.answer is None
    assert result.error == (
        "UnreadableReply: openai_responses: output[1].type must be one of 'message', "
        "'function_call', 'reasoning', got 'custom_tool_call'."
    )


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (["Done."], "output[0] must be a JSON object, got str."),
        ([{"id": "x"}], "output[0].type must be one of 'message', 'function_call', "
         "'reasoning', got None."),
        ([{"type": "message", "content": [{"type": "output_audio", "data": "..."}]}],
         "output[0].content[0].type must be one of 'output_text', 'refusal', "
         "got 'output_audio'."),
    ],
)  # fmt: skip
def test_output_the_adapter_cannot_read_is_never_an_empty_answer(
    output: list[Any], said: str
) -> None:
    body = response([])
    body["output"] = output
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert result.stop is Stop.MODEL_ERROR
    assert result.error == f"UnreadableReply: openai_responses: {said}"


# -- a reply the provider answered, and billed, that the adapter cannot read: billed ------------

# 2,000 input tokens x $0.25 + 1,000 cached x $0.025 + 400 output x $2, per million
READ = Usage(3_000, 400, cache_read_tokens=1_000, reasoning_tokens=100)
READ_USD = 0.001325
# the worst case projected for PROMPT: 24 tokens in (estimated) x $0.25 + 256 out x $2, per million
PROJECTED_USD = 0.000518


def test_a_custom_tool_call_reply_is_billed_at_its_usage() -> None:
    body = response([reasoning("rs_1", encrypted="blob"), CUSTOM], usage=(3_000, 400, 1_000, 100))
    ledger = MemoryLedger(1.0)
    result = run(model_over(Provider("openai", (200, body))), PROMPT, ledger=ledger)

    step = result.steps[0]
    assert (result.stop, result.error) == (
        Stop.MODEL_ERROR,
        "UnreadableReply: openai_responses: output[1].type must be one of 'message', "
        "'function_call', 'reasoning', got 'custom_tool_call'.",
    )
    assert step.usage == READ
    assert result.cost_usd == step.cost_usd == READ_USD
    assert ledger.spent_usd() == READ_USD
    assert ledger.reserved_usd() == 0


def test_an_async_client_bills_a_reply_it_cannot_read_too() -> None:
    body = response([CUSTOM], usage=(3_000, 400, 1_000, 100))
    provider = Provider("openai", (200, body))
    async_client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = openai_responses(async_client, MODEL, max_tokens=256, price=PRICE)
    result = asyncio.run(arun(model, PROMPT))

    assert (result.stop, result.steps[0].usage, result.cost_usd) == (
        Stop.MODEL_ERROR,
        READ,
        READ_USD,
    )


def test_a_queued_reply_without_usage_is_billed_at_the_projection() -> None:
    body = response([], status="queued")  # a background response: it runs on, and bills
    body["usage"] = None
    ledger = MemoryLedger(1.0)
    result = run(model_over(Provider("openai", (200, body))), PROMPT, ledger=ledger)

    step = result.steps[0]
    assert result.stop is Stop.MODEL_ERROR
    assert step.usage is None
    assert step.projection is not None
    assert step.projection.cost_usd == PROJECTED_USD
    assert result.cost_usd == step.cost_usd == ledger.spent_usd() == PROJECTED_USD
    assert step_head(step).startswith("Step 0 · $0.000518 charged at the projection")


def test_a_body_that_is_not_json_is_billed_at_the_projection() -> None:
    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>Bad gateway</html>")

    http = httpx.Client(transport=httpx.MockTransport(html))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=http)
    result = run(openai_responses(client, MODEL, max_tokens=256, price=PRICE), PROMPT)

    assert result.error == (
        "UnreadableReply: openai_responses: the response must be of the shape the API returns, "
        "got one that could not be read (JSONDecodeError: Expecting value: line 1 column 1 "
        "(char 0))."
    )
    assert result.cost_usd == PROJECTED_USD


def test_an_http_error_is_a_call_the_provider_refused_and_costs_nothing() -> None:
    refused = {"error": {"message": "The server had an error.", "type": "server_error"}}
    ledger = MemoryLedger(1.0)
    result = run(model_over(Provider("openai", (500, refused))), PROMPT, ledger=ledger)

    assert (result.stop, (result.error or "").split(":")[0]) == (
        Stop.MODEL_ERROR,
        "InternalServerError",
    )
    assert (result.cost_usd, result.steps[0].cost_usd, ledger.spent_usd()) == (0, 0, 0)


def test_a_response_without_a_status_is_read_as_one_that_ended() -> None:
    body = response([message("Done.")])
    del body["status"]  # as some compatible servers send it
    result = run(model_over(Provider("openai", (200, body))), PROMPT)

    assert (result.stop, result.answer) == ("answered", "Done.")


def test_a_completion_carries_the_model_id_and_why_it_ended() -> None:
    provider = Provider("openai", (200, two_calls()))
    completion = model_over(provider)([Message("user", "go")], [])

    assert completion == Completion(
        text=None,
        tool_calls=(
            ToolCall("delete_file", '{"path": ".env"}', "call_A"),
            ToolCall("create_file", '{"path": "test.txt"}', "call_B"),
        ),
        usage=Usage(120, 60),
        model=MODEL,
        response_id="resp_1",
        finish_reason="tool_call",
    )
    assert "tools" not in provider.bodies[0]


def test_an_async_client_runs_the_loop_with_arun() -> None:
    provider = Provider("openai", (200, two_calls()), (200, FINAL))
    async_client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = openai_responses(async_client, MODEL, max_tokens=256, price=PRICE)
    assert isinstance(model, AsyncChatModel)
    result = asyncio.run(arun(model, PROMPT, tools=TOOLS, budget=Budget(max_cost_usd=1)))

    assert result.stop == "answered"
    assert len(provider.bodies) == 2
    assert provider.bodies[1]["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_B",
        "output": "created test.txt",
    }


@pytest.mark.parametrize("name", ["input", "tools", "max_output_tokens"])
def test_options_the_adapter_sets_are_refused_when_it_is_made(name: str) -> None:
    provider = Provider("openai")
    with pytest.raises(
        TypeError,
        match=r"^openai_responses: extra parameters must be ones the adapter does not set from "
        rf"its arguments and the loop's messages and tools, got {name}\.$",
    ):
        openai_responses(client(provider), MODEL, max_tokens=10, **{name: 1})
    assert provider.bodies == []


def test_the_adapter_carries_its_price_and_output_ceiling() -> None:
    model = model_over(Provider("openai"))
    assert (model.price, model.max_output_tokens, model.provider_name) == (PRICE, 256, "openai")
    request = model.request([Message("user", "hi")], [])
    assert json.loads(json.dumps(request)) == {
        "model": MODEL,
        "input": [{"role": "user", "content": "hi"}],
        "max_output_tokens": 256,
        "store": False,
    }


class _Served:
    """OpenAI on a loopback port: answers each POST with the next body, keeps what was sent."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.received: list[dict[str, Any]] = []
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                served.received.append(json.loads(self.rfile.read(length)))
                out = json.dumps(served.bodies.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_example_runs_a_reasoning_tool_loop_against_a_loopback_server() -> None:
    calls = [
        reasoning("rs_1", encrypted="blob-1", summary="Look both up."),
        function_call("population", '{"city": "Stockholm"}', "call_S", "fc_S"),
        function_call("population", '{"city": "Oslo"}', "call_O", "fc_O"),
    ]
    answer = message("Stockholm has more people than Oslo.")
    served = _Served(
        response(calls, usage=(150, 90, 0, 64)),
        response([reasoning("rs_2", encrypted="blob-2"), answer], usage=(260, 30, 128, 12)),
    )
    with served as url:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url}
        example = Path(__file__).parents[2] / "examples" / "openai_responses_example.py"
        done = subprocess.run(
            [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "reasoning tokens: 76"
    assert "stop=answered tools=2 failed=0" in done.stdout
    assert "Stockholm has more people than Oslo." in done.stdout
    first, second = served.received
    assert first["include"] == ["reasoning.encrypted_content"]
    assert second["input"][1:4] == calls  # the reasoning first, as the model wrote the turn
    assert [i["output"] for i in second["input"][4:]] == ["984748", "717710"]


def test_the_example_exits_with_a_clear_message_without_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    example = Path(__file__).parents[2] / "examples" / "openai_responses_example.py"
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "examples/openai_responses_example.py: set OPENAI_API_KEY to run it against OpenAI.\n"
    )


def test_a_request_carries_the_turns_output_tokens_and_the_runs_settings() -> None:
    provider = Provider("openai", (200, two_calls()), (200, FINAL))
    settings = {"temperature": 0.2, "top_p": 0.5, "tool_choice": "required",
                "parallel_tool_calls": False, "openai": {"service_tier": "flex"}}  # fmt: skip
    result = run(model_over(provider), PROMPT, tools=[delete_file, create_file],
                 max_output_tokens=100, settings=settings)  # fmt: skip
    assert result.stop == "answered"
    sent = {"max_output_tokens": 100, "temperature": 0.2, "top_p": 0.5,
            "tool_choice": "required", "parallel_tool_calls": False, "service_tier": "flex"}  # fmt: skip
    for body in provider.bodies:
        assert {key: body.get(key) for key in sent} == sent


def test_a_turn_is_fitted_to_a_shared_ledgers_remainder() -> None:
    provider = Provider("openai", (200, FINAL))
    session = start(model_over(Provider("openai")), PROMPT)
    tokens = session.projection.input_tokens
    ledger = MemoryLedger(PRICE.cost(tokens, 40))  # room for 40 of the 256 output tokens
    result = run(model_over(provider), PROMPT, ledger=ledger, min_output_tokens=10)
    assert result.stop == "answered"
    assert provider.bodies[0]["max_output_tokens"] == 40
    step = result.steps[0].projection
    assert step is not None
    assert (step.output_tokens, step.fitted_from) == (40, 256)
    # below min_output_tokens the ledger's refusal stands: nothing is sent
    provider = Provider("openai", (200, FINAL))
    stopped = run(model_over(provider), PROMPT, ledger=ledger, min_output_tokens=50)
    assert (stopped.stop, provider.bodies) == (Stop.SHARED_BUDGET, [])


def test_a_setting_the_responses_api_does_not_take_is_refused() -> None:
    provider = Provider("openai")
    with pytest.raises(ValueError, match="must be") as caught:
        run(model_over(provider), PROMPT, settings={"seed": 7})
    assert str(caught.value) == (
        "run: settings must be keys openai_responses knows (temperature, top_p, tool_choice, "
        "parallel_tool_calls, anthropic, openai), got 'seed'."
    )
    assert provider.bodies == []
