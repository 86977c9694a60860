"""anthropic_messages over the real anthropic SDK client, served recorded bodies through httpx's
MockTransport: the requests the SDK sent, the completions parsed, whole runs."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest

import budgetloop
from budgetloop import Budget, Completion, Message, Price, ToolCall, Usage, tool
from budgetloop.adapters import (
    AnthropicTokenCounter,
    AsyncChatModel,
    ChatModel,
    anthropic_count_tokens,
    anthropic_messages,
)
from tests.provider_server import Provider, payload

PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)  # assumed rates for the tests
WEATHER_ID = "toolu_01BBTvQnxdxk7vPHD1ytXyGs"
ELEVATION_ID = "toolu_017Q9pGQ9Hx126pyyLLnVqJV"
PROMPT = "What is the weather and the elevation in Denver?"
SYSTEM = "Use the tools."
ANSWER = (
    "The weather in Denver is **Sunny** with a temperature of **22°C** (about 72°F).\n\n"
    "Denver's elevation is **650 meters above sea level** (approximately 2,133 feet)."
)


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    return f"Sunny, 22°C in {city}"


def get_elevation(city: str) -> int:
    """A city's elevation in meters.

    Args:
        city: the city's name
    """
    return 650


def model_over(provider: Provider, **options: object) -> ChatModel:
    client = anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=provider.client())
    model = anthropic_messages(client, "claude-sonnet-4-6", max_tokens=512, price=PRICE, **options)
    assert isinstance(model, ChatModel)
    return model


def run_weather(model: ChatModel, budget: Budget | None = None) -> budgetloop.Result:
    return budgetloop.run(
        model, PROMPT, system=SYSTEM, tools=[get_weather, get_elevation], budget=budget
    )


def test_a_run_splits_system_and_groups_tool_results_into_one_user_turn() -> None:
    provider = Provider(
        "anthropic",
        (200, payload("anthropic_messages_two_tool_use")),
        (200, payload("anthropic_messages_final_text")),
    )
    result = run_weather(model_over(provider, stop_sequences=["END"]))

    assert (result.stop, result.answer) == ("answered", ANSWER)
    assert provider.paths == ["/v1/messages", "/v1/messages"]
    first, second = provider.bodies
    tools = [
        {
            "name": s["name"],
            "description": s["description"],
            "input_schema": s["parameters"],
        }
        for s in (tool(get_weather).schema, tool(get_elevation).schema)
    ]
    user = {"role": "user", "content": [{"type": "text", "text": PROMPT}]}
    assert first == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "messages": [user],
        "system": SYSTEM,
        "tools": tools,
        "stop_sequences": ["END"],
    }
    weather, elevation = result.steps[0].tool_calls
    assert second == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "messages": [
            user,
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "I'll get the weather and elevation information for Denver.",
                    },
                    {
                        "type": "tool_use",
                        "id": WEATHER_ID,
                        "name": "get_weather",
                        "input": {"city": "Denver"},
                    },
                    {
                        "type": "tool_use",
                        "id": ELEVATION_ID,
                        "name": "get_elevation",
                        "input": {"city": "Denver"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": WEATHER_ID,
                        "content": weather.content,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": ELEVATION_ID,
                        "content": elevation.content,
                    },
                ],
            },
        ],
        "system": SYSTEM,
        "tools": tools,
        "stop_sequences": ["END"],
    }
    assert (weather.content, elevation.content) == ("Sunny, 22°C in Denver", "650")
    assert [s.usage for s in result.steps] == [Usage(612, 101), Usage(798, 50)]
    assert result.cost_usd == PRICE.cost(612 + 798, 101 + 50)


def test_text_and_two_tool_use_blocks_parse_with_ids_and_dict_input() -> None:
    provider = Provider("anthropic", (200, payload("anthropic_messages_two_tool_use")))
    completion = model_over(provider)([Message("user", "go")], [])

    assert completion == Completion(
        text="I'll get the weather and elevation information for Denver.",
        tool_calls=(
            ToolCall("get_weather", {"city": "Denver"}, WEATHER_ID),
            ToolCall("get_elevation", {"city": "Denver"}, ELEVATION_ID),
        ),
        usage=Usage(612, 101),
    )
    assert set(provider.bodies[0]) == {"model", "max_tokens", "messages"}


def test_history_from_another_provider_is_sent_as_blocks() -> None:
    provider = Provider("anthropic", (200, payload("anthropic_messages_final_text")))
    history = [
        Message("system", "One."),
        Message("user", "hi"),
        Message("system", "Two."),
        Message("assistant", None, (ToolCall("get_weather", '{"city": "Oslo"}', "c1"),)),
        Message("tool", "", tool_call_id="c1", name="get_weather"),
        Message("user", "and now?"),
    ]
    model_over(provider)(history, [])

    assert provider.bodies[0]["system"] == "One.\n\nTwo."
    assert provider.bodies[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": ""},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_arguments_that_are_not_a_json_object_cannot_be_sent() -> None:
    provider = Provider("anthropic")
    history = [Message("assistant", None, (ToolCall("get_weather", "[1]", "c1"),))]
    with pytest.raises(ValueError, match=r"must be a JSON object to send as tool_use input, got"):
        model_over(provider)(history, [])
    assert provider.bodies == []


@pytest.mark.parametrize(
    ("cache", "usage"),
    [
        (
            {"cache_creation_input_tokens": 100, "cache_read_input_tokens": 20},
            Usage(918, 50, 20, 100),
        ),
        ({"cache_creation_input_tokens": None, "cache_read_input_tokens": None}, Usage(798, 50)),
        ({"cache_creation_input_tokens": None, "cache_read_input_tokens": 7}, Usage(805, 50, 7)),
    ],
)
def test_cache_writes_and_reads_count_as_input(cache: dict[str, int | None], usage: Usage) -> None:
    body = payload("anthropic_messages_final_text")
    body["usage"].update(cache)
    completion = model_over(Provider("anthropic", (200, body)))([Message("user", "go")], [])
    assert completion.usage == usage


def test_an_empty_turn_is_an_empty_answer() -> None:
    body = payload("anthropic_messages_final_text")
    body.update(content=[], stop_reason="refusal")
    completion = model_over(Provider("anthropic", (200, body)))([Message("user", "go")], [])
    assert completion == Completion(text=None, usage=Usage(798, 50))

    result = run_weather(model_over(Provider("anthropic", (200, body))))
    assert (result.stop, result.answer) == ("answered", "")


def test_text_blocks_are_joined() -> None:
    body = payload("anthropic_messages_final_text")
    body["content"] = [{"type": "text", "text": "Sunny "}, {"type": "text", "text": "and dry."}]
    completion = model_over(Provider("anthropic", (200, body)))([Message("user", "go")], [])
    assert completion.text == "Sunny and dry."


def test_a_404_raises_the_sdk_error_and_ends_a_run_as_model_error() -> None:
    provider = Provider("anthropic", (404, payload("anthropic_messages_error_404")))
    with pytest.raises(anthropic.NotFoundError) as raised:
        model_over(provider)([Message("user", "go")], [])
    assert raised.value.status_code == 404
    assert str(raised.value) == (
        "Error code: 404 - {'error': {'message': 'model: claude-sonet-4-5', "
        "'type': 'not_found_error'}, 'request_id': 'req_011CdufXo8Y2LVfY2veyuQWG', "
        "'type': 'error'}"
    )

    provider = Provider("anthropic", (404, payload("anthropic_messages_error_404")))
    result = run_weather(model_over(provider))
    assert result.stop == "model_error"
    assert result.error == "NotFoundError: " + str(raised.value)
    assert len(provider.bodies) == 1
    assert result.cost_usd == 0


def test_a_cost_ceiling_stops_the_run_after_an_exact_number_of_requests() -> None:
    model = model_over(Provider("anthropic"))
    assert (model.price, model.max_output_tokens) == (PRICE, 512)
    start = budgetloop.start(model, PROMPT, system=SYSTEM, tools=[get_weather, get_elevation])
    first_turn = start.projection.cost_usd
    assert first_turn is not None

    # the first turn's worst case fits exactly; after it, no turn to read the results can
    provider = Provider(
        "anthropic",
        (200, payload("anthropic_messages_two_tool_use")),
        (200, payload("anthropic_messages_final_text")),
    )
    result = run_weather(model_over(provider), Budget(max_cost_usd=first_turn))
    assert result.stop == "max_cost_usd"
    assert len(provider.bodies) == 1
    assert result.cost_usd == PRICE.cost(612, 101)

    provider = Provider("anthropic", (200, payload("anthropic_messages_two_tool_use")))
    result = run_weather(model_over(provider), Budget(max_cost_usd=first_turn - 0.000001))
    assert result.stop == "max_cost_usd"
    assert provider.bodies == []

    # room for both turns' worst case: the run answers in two requests
    provider = Provider(
        "anthropic",
        (200, payload("anthropic_messages_two_tool_use")),
        (200, payload("anthropic_messages_final_text")),
    )
    result = run_weather(model_over(provider), Budget(max_cost_usd=1.0))
    assert (result.stop, len(provider.bodies)) == ("answered", 2)


def test_an_async_client_gives_an_awaitable_model() -> None:
    provider = Provider("anthropic", (200, payload("anthropic_messages_two_tool_use")))
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = anthropic_messages(client, "claude-sonnet-4-6", max_tokens=64, price=PRICE)

    assert isinstance(model, AsyncChatModel)
    assert inspect.iscoroutinefunction(model.__call__)
    completion = asyncio.run(model([Message("system", "s"), Message("user", "go")], []))
    assert [c.id for c in completion.tool_calls] == [WEATHER_ID, ELEVATION_ID]
    assert provider.bodies[0]["max_tokens"] == 64
    assert provider.bodies[0]["system"] == "s"


def test_an_async_404_raises_the_sdk_error() -> None:
    provider = Provider("anthropic", (404, payload("anthropic_messages_error_404")))
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = anthropic_messages(client, "claude-sonet-4-5", max_tokens=64)
    with pytest.raises(anthropic.NotFoundError) as raised:
        asyncio.run(model([Message("user", "go")], []))
    assert raised.value.status_code == 404


def test_system_cannot_be_passed_as_an_extra_parameter() -> None:
    client = anthropic.Anthropic(api_key="sk-test", http_client=Provider("anthropic").client())
    with pytest.raises(TypeError, match=r"^anthropic_messages: system cannot be passed"):
        anthropic_messages(client, "claude-sonnet-4-6", max_tokens=10, system="s")


def test_the_example_exits_with_a_clear_message_without_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    example = Path(__file__).parent.parent / "examples" / "anthropic_example.py"
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr
        == "examples/anthropic_example.py: set ANTHROPIC_API_KEY to run it against Anthropic.\n"
    )


def test_an_async_run_through_the_adapter_answers() -> None:
    provider = Provider(
        "anthropic",
        (200, payload("anthropic_messages_two_tool_use")),
        (200, payload("anthropic_messages_final_text")),
    )
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = anthropic_messages(client, "claude-sonnet-4-6", max_tokens=512, price=PRICE)
    tools = [get_weather, get_elevation]
    result = asyncio.run(
        budgetloop.arun(model, PROMPT, tools=tools, budget=Budget(max_cost_usd=1))
    )
    assert (result.stop, result.answer, len(provider.bodies)) == ("answered", ANSWER, 2)
    assert result.cost_usd == PRICE.cost(612 + 798, 101 + 50)


# -- anthropic_count_tokens: the provider's token-counting endpoint -------------------------------


def counter_over(provider: Provider, **params: object) -> AnthropicTokenCounter:
    client = anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=provider.client())
    return anthropic_count_tokens(client, "claude-sonnet-4-6", **params)


def test_count_tokens_sends_the_request_as_the_model_would_and_returns_the_count() -> None:
    provider = Provider("anthropic", (200, {"input_tokens": 421}))
    counter = counter_over(provider)
    schemas = [tool(get_weather).schema]
    messages = [
        Message("system", SYSTEM),
        Message("user", PROMPT),
        Message("assistant", None, (ToolCall("get_weather", '{"city": "Denver"}', WEATHER_ID),)),
        Message("tool", "Sunny", tool_call_id=WEATHER_ID, name="get_weather"),
    ]
    assert counter(messages, schemas) == 421
    assert provider.paths == ["/v1/messages/count_tokens"]
    sent = model_over(Provider("anthropic")).request(messages, schemas)
    assert provider.bodies == [{k: v for k, v in sent.items() if k != "max_tokens"}]
    assert provider.bodies[0]["messages"][1]["content"][0]["input"] == {"city": "Denver"}
    assert repr(counter) == "anthropic_count_tokens(model='claude-sonnet-4-6')"


def test_a_session_projects_with_the_providers_count() -> None:
    provider = Provider("anthropic", (200, {"input_tokens": 97}), (200, {"input_tokens": 97}))
    session = budgetloop.start(
        model_over(Provider("anthropic")),
        PROMPT,
        system=SYSTEM,
        tools=[get_weather, get_elevation],
        count_tokens=counter_over(provider, thinking={"type": "disabled"}),
    )
    # start() counts once, so a broken counter fails there; each projection is one request more
    projection = session.projection
    assert (projection.input_tokens, projection.cost_usd) == (97, PRICE.cost(97, 512))
    assert provider.paths == ["/v1/messages/count_tokens"] * 2
    assert provider.bodies[0]["system"] == SYSTEM
    assert provider.bodies[0]["thinking"] == {"type": "disabled"}
    assert [t["name"] for t in provider.bodies[0]["tools"]] == ["get_weather", "get_elevation"]


def test_a_count_the_provider_refuses_raises_the_sdk_error() -> None:
    provider = Provider("anthropic", (404, payload("anthropic_messages_error_404")))
    with pytest.raises(anthropic.NotFoundError):
        counter_over(provider)([Message("user", "go")], [])


@pytest.mark.parametrize(
    "body", [{"input_tokens": -1}, {"input_tokens": 1.5}, {"input_tokens": True}]
)
def test_a_count_that_is_not_a_token_count_is_refused(body: dict[str, object]) -> None:
    counter = counter_over(Provider("anthropic", (200, body)))
    with pytest.raises(
        ValueError, match=r"^anthropic_count_tokens: expected the response's "
    ) as e:
        counter([Message("user", "go")], [])
    assert str(e.value).endswith(f"int >= 0, got {body['input_tokens']!r}.")


def test_count_tokens_setup_mistakes_name_the_cause() -> None:
    provider = Provider("anthropic")
    async_client = anthropic.AsyncAnthropic(api_key="sk-test", http_client=provider.async_client())
    with pytest.raises(TypeError, match=r"^anthropic_count_tokens: the loop counts tokens "):
        anthropic_count_tokens(async_client, "claude-sonnet-4-6")
    with pytest.raises(
        TypeError,
        match=r"^anthropic_count_tokens: expected an anthropic\.Anthropic client .*got object\.$",
    ):
        anthropic_count_tokens(object(), "claude-sonnet-4-6")
    with pytest.raises(TypeError, match=r"^anthropic_count_tokens: model must be a non-empty str"):
        anthropic_count_tokens(anthropic.Anthropic(api_key="k", http_client=provider.client()), "")
    with pytest.raises(TypeError, match=r"^anthropic_count_tokens: system cannot be passed"):
        counter_over(provider, system="s")
    assert provider.bodies == []
