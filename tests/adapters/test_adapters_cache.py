"""Cached input through the adapters: the real openai and anthropic SDK clients, served recorded
bodies with their cache fields set, give the right ``Usage``, and a run bills each kind of token
at its price."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import openai
import pytest

import budgetloop
from budgetloop import Message, Price, Usage
from budgetloop.adapters import (
    AsyncChatModel,
    ChatModel,
    anthropic_messages,
    completion_from_anthropic,
    completion_from_openai,
    openai_chat,
)
from tests.adapter_support import create_file, delete_file, get_elevation, get_weather
from tests.provider_server import Provider, payload

# Assumed rates for the tests, not quoted prices: cache reads below the input price, writes above.
OPENAI_PRICE = Price(2.5, 10.0, cache_read_per_mtok=1.25)
ANTHROPIC_PRICE = Price(3.0, 15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)


def openai_cached(name: str, prompt: int, cached: int | None, completion: int) -> dict[str, Any]:
    """A recorded Chat Completions body with its usage replaced: ``cached`` of the ``prompt``
    tokens read from the cache (None: the field is null, as some responses send it)."""
    body = payload(name)
    usage = body["usage"]
    usage["prompt_tokens"] = prompt
    usage["completion_tokens"] = completion
    usage["total_tokens"] = prompt + completion
    usage["prompt_tokens_details"]["cached_tokens"] = cached
    return body


def anthropic_cached(
    name: str, uncached: int, read: int | None, write: int | None, output: int
) -> dict[str, Any]:
    """A recorded Messages body with its usage replaced, in Anthropic's own terms:
    ``input_tokens`` is only the input after the cache breakpoint."""
    body = payload(name)
    usage = body["usage"]
    usage["input_tokens"] = uncached
    usage["output_tokens"] = output
    usage["cache_read_input_tokens"] = read
    usage["cache_creation_input_tokens"] = write
    if write:
        usage["cache_creation"] = {
            "ephemeral_1h_input_tokens": 0,
            "ephemeral_5m_input_tokens": write,
        }
    return body


def openai_model(provider: Provider) -> ChatModel:
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=provider.client())
    model = openai_chat(client, "gpt-4o", max_tokens=256, price=OPENAI_PRICE)
    assert isinstance(model, ChatModel)
    return model


def anthropic_model(provider: Provider) -> ChatModel:
    client = anthropic.Anthropic(api_key="sk-test", max_retries=0, http_client=provider.client())
    model = anthropic_messages(client, "claude-sonnet-4-6", max_tokens=512, price=ANTHROPIC_PRICE)
    assert isinstance(model, ChatModel)
    return model


# -- OpenAI: cached tokens are inside prompt_tokens ---------------------------------------------


def test_openai_cached_prompt_tokens_are_cache_reads_inside_the_input() -> None:
    provider = Provider("openai", (200, openai_cached("openai_chat_final_text", 2006, 1920, 19)))
    completion = openai_model(provider)([Message("user", "go")], [])

    assert completion.usage == Usage(2006, 19, cache_read_tokens=1920, cache_write_tokens=0)
    assert completion.usage.uncached_input_tokens == 86


@pytest.mark.parametrize("cached", [0, None])
def test_openai_no_cached_tokens_is_no_cache_read(cached: int | None) -> None:
    provider = Provider("openai", (200, openai_cached("openai_chat_final_text", 133, cached, 19)))
    completion = openai_model(provider)([Message("user", "go")], [])

    assert completion.usage == Usage(133, 19)


def test_openai_usage_without_prompt_tokens_details_has_no_cache_read() -> None:
    body = payload("openai_chat_final_text")
    del body["usage"]["prompt_tokens_details"]
    completion = openai_model(Provider("openai", (200, body)))([Message("user", "go")], [])

    assert completion.usage == Usage(133, 19)


def test_an_openai_run_bills_cache_reads_at_their_price_exactly() -> None:
    provider = Provider(
        "openai",
        (200, openai_cached("openai_chat_two_tool_calls", 1100, 1024, 46)),
        (200, openai_cached("openai_chat_final_text", 1162, 1152, 19)),
    )
    result = budgetloop.run(
        openai_model(provider),
        "Delete `.env` and create `test.txt`.",
        tools=[delete_file, create_file],
    )

    assert result.stop == "answered"
    usages = [s.usage for s in result.steps]
    assert usages == [Usage(1100, 46, 1024), Usage(1162, 19, 1152)]
    # by hand, in picodollars: uncached input at $2.50, cache reads at $1.25, output at $10
    # per million tokens (76 * 2.5 + 1024 * 1.25 + 46 * 10, then 10 * 2.5 + 1152 * 1.25 + 19 * 10)
    picos = [OPENAI_PRICE.usage_pico(u) for u in usages]
    assert picos == [1_930_000_000, 1_655_000_000]
    assert [s.cost_usd for s in result.steps] == [OPENAI_PRICE.usage_cost(u) for u in usages]
    assert result.cost_usd == sum(picos) / 10**12
    # the same usage without the cache would have cost more: the discount is real
    assert result.cost_usd < OPENAI_PRICE.cost(1100 + 1162, 46 + 19)


def test_completion_from_openai_reads_cached_tokens_from_the_sdk_object() -> None:
    body = openai_cached("openai_chat_two_tool_calls", 1100, 1024, 46)
    response = openai.types.chat.ChatCompletion.model_validate(body)

    assert completion_from_openai(response).usage == Usage(1100, 46, cache_read_tokens=1024)


# -- Anthropic: cache reads and writes are outside input_tokens ---------------------------------


def test_anthropic_cache_reads_and_writes_are_added_to_the_input() -> None:
    body = anthropic_cached("anthropic_messages_final_text", 798, 1500, 300, 50)
    completion = anthropic_model(Provider("anthropic", (200, body)))([Message("user", "go")], [])

    assert completion.usage == Usage(2598, 50, cache_read_tokens=1500, cache_write_tokens=300)
    assert completion.usage.uncached_input_tokens == 798


@pytest.mark.parametrize(("read", "write"), [(0, 0), (None, None)])
def test_anthropic_no_cache_fields_is_no_cache(read: int | None, write: int | None) -> None:
    body = anthropic_cached("anthropic_messages_final_text", 798, read, write, 50)
    completion = anthropic_model(Provider("anthropic", (200, body)))([Message("user", "go")], [])

    assert completion.usage == Usage(798, 50)


def test_anthropic_usage_without_cache_fields_has_no_cache() -> None:
    body = payload("anthropic_messages_final_text")
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"):
        del body["usage"][key]
    completion = anthropic_model(Provider("anthropic", (200, body)))([Message("user", "go")], [])

    assert completion.usage == Usage(798, 50)


def test_an_anthropic_run_bills_reads_and_writes_at_their_prices_exactly() -> None:
    provider = Provider(
        "anthropic",
        # the first turn writes the prefix to the cache, the second reads it back
        (200, anthropic_cached("anthropic_messages_two_tool_use", 12, 0, 2048, 91)),
        (200, anthropic_cached("anthropic_messages_final_text", 140, 2048, 0, 50)),
    )
    result = budgetloop.run(
        anthropic_model(provider),
        "What is the weather and the elevation in Denver?",
        tools=[get_weather, get_elevation],
    )

    assert result.stop == "answered"
    usages = [s.usage for s in result.steps]
    assert usages == [Usage(2060, 91, 0, 2048), Usage(2188, 50, 2048, 0)]
    # by hand, in picodollars: input $3, cache reads $0.30, cache writes $3.75, output $15 per
    # million tokens (12 * 3 + 2048 * 3.75 + 91 * 15, then 140 * 3 + 2048 * 0.3 + 50 * 15)
    picos = [ANTHROPIC_PRICE.usage_pico(u) for u in usages]
    assert picos == [9_081_000_000, 1_784_400_000]
    assert [s.cost_usd for s in result.steps] == [ANTHROPIC_PRICE.usage_cost(u) for u in usages]
    assert result.cost_usd == sum(picos) / 10**12


def test_an_async_anthropic_client_reads_the_cache_fields_too() -> None:
    body = anthropic_cached("anthropic_messages_final_text", 798, 1500, 300, 50)
    provider = Provider("anthropic", (200, body))
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", max_retries=0, http_client=provider.async_client()
    )
    model = anthropic_messages(client, "claude-sonnet-4-6", max_tokens=512, price=ANTHROPIC_PRICE)
    assert isinstance(model, AsyncChatModel)

    completion = asyncio.run(model([Message("user", "go")], []))

    assert completion.usage == Usage(2598, 50, cache_read_tokens=1500, cache_write_tokens=300)


def test_completion_from_anthropic_reads_the_cache_fields_from_the_sdk_object() -> None:
    body = anthropic_cached("anthropic_messages_two_tool_use", 12, 64, 2048, 91)
    response = anthropic.types.Message.model_validate(body)

    assert completion_from_anthropic(response).usage == Usage(2124, 91, 64, 2048)


def test_the_projection_stays_a_worst_case_with_cache_prices() -> None:
    """Which input a provider will cache is not known before the call: the guard projects every
    input token at the dearest of the three input rates (here the cache write)."""
    provider = Provider(
        "anthropic", (200, anthropic_cached("anthropic_messages_final_text", 798, 1500, 300, 50))
    )
    session = budgetloop.start(anthropic_model(provider), "go")
    projection = session.projection
    assert projection.cost_usd == ANTHROPIC_PRICE.worst_pico(projection.input_tokens, 512) / 10**12
    dearest = Price(3.75, 15.0)  # every input token at the cache-write rate
    assert projection.cost_usd == dearest.cost(projection.input_tokens, 512)


def test_openai_cached_tokens_above_the_prompt_are_billed_at_the_worst_case() -> None:
    """A server (a proxy, a compatible API) that reports more cached tokens than prompt tokens
    has given counts that cannot all be true: the call is billed at its worst case, as one that
    reported no usage, never at the cheapest reading (all of the prompt cached)."""
    provider = Provider("openai", (200, openai_cached("openai_chat_final_text", 133, 500, 19)))
    result = budgetloop.run(openai_model(provider), "go")

    assert result.stop == "answered"
    step = result.steps[0]
    assert step.usage is None
    assert step.projection is not None
    assert result.cost_usd == step.projection.cost_usd > OPENAI_PRICE.usage_cost(Usage(133, 19))
