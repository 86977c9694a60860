"""openai_chat over the real openai SDK client, served recorded bodies through httpx's
MockTransport: the requests the SDK sent, the completions parsed, whole runs."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest

import budgetloop
from budgetloop import Budget, Completion, Message, Price, ToolCall, Usage, tool
from budgetloop.adapters import AsyncChatModel, ChatModel, openai_chat
from tests.provider_server import Provider, payload

PRICE = Price(input_per_mtok=2.5, output_per_mtok=10.0)  # assumed rates for the tests
FIRST_ID = "call_jYdIdRZHxZTn5bWCq5jlMrJi"
SECOND_ID = "call_TmlTVWQbzrXCZ4jNsCVNbNqu"
ERROR_404 = (
    "Error code: 404 - The model `gpt-5.2-proo` does not exist or you do not have access to it."
)


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the file to delete
    """
    return f"deleted {path}"


def create_file(path: str) -> str:
    """Create an empty file.

    Args:
        path: the file to create
    """
    return f"created {path}"


def model_over(provider: Provider, **options: object) -> ChatModel:
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=provider.client())
    model = openai_chat(client, "gpt-4o", max_tokens=256, price=PRICE, **options)
    assert isinstance(model, ChatModel)
    return model


def run_files(model: ChatModel, budget: Budget | None = None) -> budgetloop.Result:
    return budgetloop.run(
        model,
        "Delete `.env` and create `test.txt`.",
        system="Just call tools without asking for confirmation.",
        tools=[delete_file, create_file],
        budget=budget,
    )


def test_a_run_sends_messages_tools_and_results_paired_by_id() -> None:
    provider = Provider(
        "openai",
        (200, payload("openai_chat_two_tool_calls")),
        (200, payload("openai_chat_final_text")),
    )
    result = run_files(model_over(provider, temperature=0))

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
    completion = model_over(provider)([Message("user", "go")], [])

    assert completion == Completion(
        text=None,
        tool_calls=(
            ToolCall("delete_file", '{"path": ".env"}', FIRST_ID),
            ToolCall("create_file", '{"path": "test.txt"}', SECOND_ID),
        ),
        usage=Usage(71, 46),
    )
    assert "tools" not in provider.bodies[0]  # no tools: the field is left out, not sent empty


def test_dict_arguments_and_a_name_are_sent_as_openai_expects() -> None:
    provider = Provider("openai", (200, payload("openai_chat_final_text")))
    history = [
        Message("user", "hi", name="ada"),
        Message("assistant", "On it.", (ToolCall("create_file", {"path": "é.txt"}, "c1"),)),
        Message("tool", "", tool_call_id="c1", name="create_file"),
    ]
    model_over(provider)(history, [])

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


def test_a_refusal_becomes_the_text() -> None:
    body = payload("openai_chat_final_text")
    body["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
    result = run_files(model_over(Provider("openai", (200, body))))

    assert result.stop == "answered"
    assert result.answer == "I can't help with that."


@pytest.mark.parametrize(("content", "text", "answer"), [(None, None, ""), ("", "", "")])
def test_an_empty_turn_is_an_empty_answer(
    content: str | None, text: str | None, answer: str
) -> None:
    body = payload("openai_chat_final_text")
    body["choices"][0]["message"]["content"] = content
    completion = model_over(Provider("openai", (200, body)))([Message("user", "go")], [])
    assert completion == Completion(text=text, usage=Usage(133, 19))

    result = run_files(model_over(Provider("openai", (200, body))))
    assert (result.stop, result.answer) == ("answered", answer)


def test_no_choices_is_an_error_naming_the_cause() -> None:
    body = payload("openai_chat_final_text")
    body["choices"] = []
    with pytest.raises(ValueError, match=r"^openai_chat: the response has no choices\.$"):
        model_over(Provider("openai", (200, body)))([Message("user", "go")], [])


def test_a_404_raises_the_sdk_error_and_ends_a_run_as_model_error() -> None:
    provider = Provider("openai", (404, payload("openai_chat_error_404")))
    with pytest.raises(openai.NotFoundError) as raised:
        model_over(provider)([Message("user", "go")], [])
    assert (str(raised.value), raised.value.status_code) == (ERROR_404, 404)
    assert raised.value.code == "model_not_found"

    provider = Provider("openai", (404, payload("openai_chat_error_404")))
    result = run_files(model_over(provider))
    assert result.stop == "model_error"
    assert result.error == "NotFoundError: " + ERROR_404
    assert len(provider.bodies) == 1
    assert result.cost_usd == 0


def test_the_model_carries_price_and_max_tokens_for_the_cost_guard() -> None:
    model = model_over(Provider("openai"))
    assert (model.price, model.max_output_tokens) == (PRICE, 256)
    # limit at exactly the first turn's worst case: it fits (equality fits), the second cannot
    first_turn = budgetloop.start(
        model,
        "Delete `.env` and create `test.txt`.",
        system="Just call tools without asking for confirmation.",
        tools=[delete_file, create_file],
        budget=Budget(max_cost_usd=1.0),
    ).projection.cost_usd
    assert first_turn is not None

    provider = Provider(
        "openai",
        (200, payload("openai_chat_two_tool_calls")),
        (200, payload("openai_chat_final_text")),
    )
    result = run_files(model_over(provider), Budget(max_cost_usd=first_turn))
    assert result.stop == "max_cost_usd"
    assert len(provider.bodies) == 1
    assert result.cost_usd == PRICE.cost(71, 46)

    provider = Provider("openai", (200, payload("openai_chat_two_tool_calls")))
    result = run_files(model_over(provider), Budget(max_cost_usd=first_turn - 0.000001))
    assert result.stop == "max_cost_usd"
    assert provider.bodies == []


def test_an_async_client_gives_an_awaitable_model() -> None:
    provider = Provider("openai", (200, payload("openai_chat_two_tool_calls")))
    client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = openai_chat(client, "gpt-4o", max_tokens=64, price=PRICE)

    assert isinstance(model, AsyncChatModel)
    assert inspect.iscoroutinefunction(model.__call__)
    completion = asyncio.run(model([Message("user", "go")], []))
    assert [c.id for c in completion.tool_calls] == [FIRST_ID, SECOND_ID]
    assert provider.bodies[0]["max_completion_tokens"] == 64
    assert (model.price, model.max_output_tokens) == (PRICE, 64)


def test_an_async_404_raises_the_sdk_error() -> None:
    provider = Provider("openai", (404, payload("openai_chat_error_404")))
    client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = openai_chat(client, "gpt-5.2-proo", max_tokens=64)
    with pytest.raises(openai.NotFoundError) as raised:
        asyncio.run(model([Message("user", "go")], []))
    assert (str(raised.value), raised.value.status_code) == (ERROR_404, 404)


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
            r"^openai_chat: messages cannot be passed as extra parameters",
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
    with pytest.raises(ValueError, match=r"the tool call to 'delete_file' has no id"):
        model_over(provider)(history, [])
    assert provider.bodies == []


def test_the_example_exits_with_a_clear_message_without_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    example = Path(__file__).parent.parent / "examples" / "openai_example.py"
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr == "examples/openai_example.py: set OPENAI_API_KEY to run it against OpenAI.\n"
    )


def test_an_async_run_through_the_adapter_answers() -> None:
    provider = Provider(
        "openai",
        (200, payload("openai_chat_two_tool_calls")),
        (200, payload("openai_chat_final_text")),
    )
    client = openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = openai_chat(client, "gpt-4o", max_tokens=256, price=PRICE)
    result = asyncio.run(
        budgetloop.arun(
            model, "go", tools=[delete_file, create_file], budget=Budget(max_cost_usd=1)
        )
    )
    assert (result.stop, len(provider.bodies)) == ("answered", 2)
    assert result.cost_usd == PRICE.cost(71 + 133, 46 + 19)
