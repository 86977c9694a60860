"""anthropic_messages over the real anthropic SDK client, served recorded bodies through httpx's
MockTransport: the requests the SDK sent, the completions parsed, what only Anthropic's API does
(system text, content blocks, cache usage, token counting). What both adapters do alike is in
test_adapters_both.py."""

from __future__ import annotations

import anthropic
import pytest

import budgetloop
from budgetloop import Completion, Message, ToolCall, Usage, tool
from budgetloop.adapters import AnthropicTokenCounter, anthropic_count_tokens, anthropic_messages
from tests.adapter_support import ANTHROPIC, get_elevation, get_weather
from tests.provider_server import Provider, payload

PRICE = ANTHROPIC.price
WEATHER_ID, ELEVATION_ID = ANTHROPIC.call_ids
PROMPT = ANTHROPIC.prompt
SYSTEM = ANTHROPIC.system
ANSWER = ANTHROPIC.answer


def test_a_run_splits_system_and_groups_tool_results_into_one_user_turn() -> None:
    provider = Provider(
        "anthropic",
        (200, payload("anthropic_messages_two_tool_use")),
        (200, payload("anthropic_messages_final_text")),
    )
    result = ANTHROPIC.run(ANTHROPIC.over(provider, stop_sequences=["END"]))

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
    completion = ANTHROPIC.over(provider)([Message("user", "go")], [])

    assert completion == Completion(
        text="I'll get the weather and elevation information for Denver.",
        tool_calls=(
            ToolCall("get_weather", {"city": "Denver"}, WEATHER_ID),
            ToolCall("get_elevation", {"city": "Denver"}, ELEVATION_ID),
        ),
        usage=Usage(612, 101),
        model="claude-sonnet-4-5-20250929",
        response_id="msg_01UaeArcGjaycoQeRPRt5CWw",
        finish_reason="tool_call",  # Anthropic's "tool_use", in the GenAI conventions' word
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
    ANTHROPIC.over(provider)(history, [])

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


def test_a_strict_tool_is_sent_as_its_schema_without_openais_flag() -> None:
    def book(room: str, nights: int = 1) -> str:
        """Book a room."""
        return ""

    provider = Provider("anthropic", (200, payload("anthropic_messages_final_text")))
    strict = tool(book, strict=True)
    ANTHROPIC.over(provider)([Message("user", "go")], [strict.schema])
    assert provider.bodies[0]["tools"] == [
        {
            "name": "book",
            "description": "Book a room.",
            "input_schema": strict.schema["parameters"],
        }
    ]


def test_arguments_that_are_not_a_json_object_cannot_be_sent() -> None:
    provider = Provider("anthropic")
    history = [Message("assistant", None, (ToolCall("get_weather", "[1]", "c1"),))]
    with pytest.raises(ValueError, match=r"must be a JSON object to send as tool_use input, got"):
        ANTHROPIC.over(provider)(history, [])
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
    completion = ANTHROPIC.over(Provider("anthropic", (200, body)))([Message("user", "go")], [])
    assert completion.usage == usage


def test_text_blocks_are_joined() -> None:
    body = payload("anthropic_messages_final_text")
    body["content"] = [{"type": "text", "text": "Sunny "}, {"type": "text", "text": "and dry."}]
    completion = ANTHROPIC.over(Provider("anthropic", (200, body)))([Message("user", "go")], [])
    assert completion.text == "Sunny and dry."


def test_system_cannot_be_passed_as_an_extra_parameter() -> None:
    client = anthropic.Anthropic(api_key="sk-test", http_client=Provider("anthropic").client())
    with pytest.raises(TypeError) as info:
        anthropic_messages(client, "claude-sonnet-4-6", max_tokens=10, system="s")
    assert str(info.value) == (
        "anthropic_messages: extra parameters must be ones the adapter does not set from its "
        "arguments and the loop's messages and tools, got system."
    )


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
    sent = ANTHROPIC.over(Provider("anthropic")).request(messages, schemas)
    assert provider.bodies == [{k: v for k, v in sent.items() if k != "max_tokens"}]
    assert provider.bodies[0]["messages"][1]["content"][0]["input"] == {"city": "Denver"}
    assert repr(counter) == "anthropic_count_tokens(model='claude-sonnet-4-6')"


def test_a_session_projects_with_the_providers_count() -> None:
    provider = Provider("anthropic", (200, {"input_tokens": 97}), (200, {"input_tokens": 97}))
    session = budgetloop.start(
        ANTHROPIC.over(Provider("anthropic")),
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
    with pytest.raises(ValueError, match=r"^anthropic_count_tokens: ") as e:
        counter([Message("user", "go")], [])
    assert str(e.value) == (
        "anthropic_count_tokens: the response's input_tokens must be an int >= 0, "
        f"got {body['input_tokens']!r}."
    )


def test_count_tokens_setup_mistakes_name_the_cause() -> None:
    provider = Provider("anthropic")
    async_client = anthropic.AsyncAnthropic(api_key="sk-test", http_client=provider.async_client())
    with pytest.raises(TypeError) as info:
        anthropic_count_tokens(async_client, "claude-sonnet-4-6")
    assert str(info.value) == (
        "anthropic_count_tokens: client must be an anthropic.Anthropic client (the loop counts "
        "tokens synchronously), got AsyncAnthropic; pass an anthropic.Anthropic client, not an "
        "AsyncAnthropic one."
    )
    with pytest.raises(TypeError) as info:
        anthropic_count_tokens(None, "claude-sonnet-4-6")
    assert str(info.value) == (
        "anthropic_count_tokens: client must be an anthropic.Anthropic client (with "
        "messages.count_tokens), got None."
    )
    with pytest.raises(TypeError, match=r"^anthropic_count_tokens: model must be a non-empty str"):
        anthropic_count_tokens(anthropic.Anthropic(api_key="k", http_client=provider.client()), "")
    with pytest.raises(TypeError) as info:
        counter_over(provider, system="s")
    assert str(info.value) == (
        "anthropic_count_tokens: extra parameters must be ones the adapter does not set from "
        "its arguments and the loop's messages and tools, got system."
    )
    assert provider.bodies == []


def test_a_reply_it_cannot_read_is_billed_at_its_usage() -> None:
    body = payload(ANTHROPIC.tool_turn)
    body["content"][1]["input"] = [1]  # not an object: a reply of a shape the adapter never reads
    ledger = budgetloop.MemoryLedger(1.0)
    model = ANTHROPIC.over(Provider("anthropic", (200, body)))
    result = budgetloop.run(model, ANTHROPIC.prompt, tools=list(ANTHROPIC.tools), ledger=ledger)

    assert result.stop == "model_error"
    assert result.error == (
        "UnreadableReply: anthropic_messages: the response must be of the shape the API "
        "returns, got one that could not be read (TypeError: cannot convert dictionary update "
        "sequence element #0 to a sequence)."
    )
    assert result.steps[0].usage == Usage(612, 101)
    # 612 tokens in x $3 + 101 out x $15, per million
    assert result.cost_usd == result.steps[0].cost_usd == ledger.spent_usd() == 0.003351
