"""openai_chat over the real openai SDK client, served recorded bodies through httpx's
MockTransport: the requests the SDK sent, the completions parsed, what only OpenAI's API does
(refusals, choices). What both adapters do alike is in test_adapters_both.py."""

from __future__ import annotations

import openai
import pytest

from budgetloop import (
    Completion,
    MemoryLedger,
    Message,
    ToolCall,
    UnreadableReply,
    Usage,
    run,
    tool,
)
from budgetloop.adapters import openai_chat
from tests.adapter_support import OPENAI, create_file, delete_file
from tests.provider_server import Provider, payload

PRICE = OPENAI.price
FIRST_ID, SECOND_ID = OPENAI.call_ids


def test_a_run_sends_messages_tools_and_results_paired_by_id() -> None:
    provider = Provider(
        "openai",
        (200, payload("openai_chat_two_tool_calls")),
        (200, payload("openai_chat_final_text")),
    )
    result = OPENAI.run(OPENAI.over(provider, temperature=0))

    assert result.stop == "answered"
    assert result.answer == (
        "The file `.env` has been deleted and `test.txt` has been created successfully."
    )
    assert provider.paths == ["/v1/chat/completions", "/v1/chat/completions"]
    first, second = provider.bodies
    tools = [
        {"type": "function", "function": tool(delete_file).schema},
        {"type": "function", "function": tool(create_file).schema},
    ]
    system = {"role": "system", "content": "Just call tools without asking for confirmation."}
    user = {"role": "user", "content": "Delete `.env` and create `test.txt`."}
    assert first == {
        "model": "gpt-4o",
        "messages": [system, user],
        "max_completion_tokens": 256,
        "tools": tools,
        "temperature": 0,
    }
    assert second == {
        "model": "gpt-4o",
        "messages": [
            system,
            user,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": FIRST_ID,
                        "type": "function",
                        "function": {"name": "delete_file", "arguments": '{"path": ".env"}'},
                    },
                    {
                        "id": SECOND_ID,
                        "type": "function",
                        "function": {"name": "create_file", "arguments": '{"path": "test.txt"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": FIRST_ID, "content": "deleted .env"},
            {"role": "tool", "tool_call_id": SECOND_ID, "content": "created test.txt"},
        ],
        "max_completion_tokens": 256,
        "tools": tools,
        "temperature": 0,
    }
    assert [s.usage for s in result.steps] == [Usage(71, 46), Usage(133, 19)]
    assert result.cost_usd == PRICE.cost(71 + 133, 46 + 19)


def test_two_parallel_tool_calls_parse_with_ids_and_arguments_as_sent() -> None:
    provider = Provider("openai", (200, payload("openai_chat_two_tool_calls")))
    completion = OPENAI.over(provider)([Message("user", "go")], [])

    assert completion == Completion(
        text=None,
        tool_calls=(
            ToolCall("delete_file", '{"path": ".env"}', FIRST_ID),
            ToolCall("create_file", '{"path": "test.txt"}', SECOND_ID),
        ),
        usage=Usage(71, 46),
        model="gpt-4o-2024-08-06",
        response_id="chatcmpl-C9f7f1SbHRzcwlJwrYKdSonTRWPvV",
        finish_reason="tool_call",  # OpenAI's "tool_calls", in the GenAI conventions' word
    )
    assert "tools" not in provider.bodies[0]  # no tools: the field is left out, not sent empty


def test_dict_arguments_and_a_name_are_sent_as_openai_expects() -> None:
    provider = Provider("openai", (200, payload("openai_chat_final_text")))
    history = [
        Message("user", "hi", name="ada"),
        Message("assistant", "On it.", (ToolCall("create_file", {"path": "é.txt"}, "c1"),)),
        Message("tool", "", tool_call_id="c1", name="create_file"),
    ]
    OPENAI.over(provider)(history, [])

    assert provider.bodies[0]["messages"] == [
        {"role": "user", "content": "hi", "name": "ada"},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "create_file", "arguments": '{"path": "é.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]


def test_a_strict_tool_is_sent_with_strict_true() -> None:
    # OpenAI holds a strict tool's arguments to its schema; a plain one is sent without the key.
    def book(room: str, nights: int = 1) -> str:
        """Book a room."""
        return ""

    provider = Provider("openai", (200, payload("openai_chat_final_text")))
    strict, plain = tool(book, strict=True), tool(create_file)
    OPENAI.over(provider)([Message("user", "go")], [strict.schema, plain.schema])

    sent = provider.bodies[0]["tools"]
    assert sent[0] == {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book a room.",
            "parameters": {
                "type": "object",
                "properties": {
                    "room": {"type": "string"},
                    "nights": {
                        "type": ["integer", "null"],
                        "description": "(default: 1; null means the default)",
                    },
                },
                "required": ["room", "nights"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    assert sent[1] == {"type": "function", "function": plain.schema}
    assert "strict" not in sent[1]["function"]


def test_a_refusal_becomes_the_text() -> None:
    body = payload("openai_chat_final_text")
    body["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
    result = OPENAI.run(OPENAI.over(Provider("openai", (200, body))))

    assert result.stop == "answered"
    assert result.answer == "I can't help with that."


def test_no_choices_is_an_error_naming_the_cause() -> None:
    body = payload("openai_chat_final_text")
    body["choices"] = []
    with pytest.raises(
        UnreadableReply,
        match=r"^openai_chat: the response's choices must be a non-empty list, got \[\]\.$",
    ) as raised:
        OPENAI.over(Provider("openai", (200, body)))([Message("user", "go")], [])
    assert raised.value.usage == OPENAI.usages[1]  # billed: the usage it reported


def test_a_tool_call_that_is_not_a_function_call_is_an_error_naming_its_type() -> None:
    body = payload("openai_chat_two_tool_calls")
    custom = {"id": "call_X", "type": "custom", "custom": {"name": "grep", "input": "x"}}
    body["choices"][0]["message"]["tool_calls"] = [custom]
    with pytest.raises(
        UnreadableReply,
        match=r"^openai_chat: the type of tool call 'call_X' must be 'function' \(only function "
        r"tool calls are supported\), got 'custom'\.$",
    ) as raised:
        OPENAI.over(Provider("openai", (200, body)))([Message("user", "go")], [])
    assert raised.value.usage == OPENAI.usages[0]


def test_a_reply_it_cannot_read_is_billed_at_its_usage() -> None:
    body = payload("openai_chat_two_tool_calls")
    custom = {"id": "call_X", "type": "custom", "custom": {"name": "grep", "input": "x"}}
    body["choices"][0]["message"]["tool_calls"] = [custom]
    ledger = MemoryLedger(1.0)
    model = OPENAI.over(Provider("openai", (200, body)))
    result = run(model, OPENAI.prompt, tools=list(OPENAI.tools), ledger=ledger)

    assert result.stop == "model_error"
    assert (result.error or "").startswith("UnreadableReply: openai_chat: the type of tool call")
    assert result.steps[0].usage == Usage(71, 46)
    # 71 tokens in x $2.50 + 46 out x $10, per million
    assert result.cost_usd == result.steps[0].cost_usd == ledger.spent_usd() == 0.0006375


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_tokens": 0}, ValueError, r"^openai_chat: max_tokens must be an int >= 1, got 0\.$"),
        (
            {"max_tokens": 10, "price": 2.5},
            TypeError,
            r"^openai_chat: price must be a Price or None, got float\.$",
        ),
        (
            {"max_tokens": 10, "messages": []},
            TypeError,
            r"^openai_chat: extra parameters must be ones the adapter does not set from its "
            r"arguments and the loop's messages and tools, got messages\.$",
        ),
    ],
)
def test_setup_mistakes_raise_before_any_request(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    provider = Provider("openai")
    client = openai.OpenAI(api_key="sk-test", http_client=provider.client())
    with pytest.raises(error, match=message):
        openai_chat(client, "gpt-4o", **options)  # type: ignore[arg-type]
    assert provider.bodies == []


def test_a_call_without_an_id_cannot_be_sent() -> None:
    provider = Provider("openai")
    history = [Message("assistant", None, (ToolCall("delete_file", "{}"),))]
    with pytest.raises(
        ValueError,
        match=r"^openai_chat: the id of the tool call to 'delete_file' must be a non-empty str, "
        r"got None; OpenAI pairs each tool result with its call by id\.$",
    ):
        OPENAI.over(provider)(history, [])
    assert provider.bodies == []


def test_reasoning_tokens_are_read_as_part_of_the_output() -> None:
    body = payload("openai_chat_final_text")
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 12}
    completion = OPENAI.over(Provider("openai", (200, body)))([Message("user", "go")], [])
    assert completion.usage is not None
    assert completion.usage.reasoning_tokens == 12
    assert completion.usage.output_tokens == body["usage"]["completion_tokens"]
