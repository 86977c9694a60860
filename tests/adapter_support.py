"""The two provider adapters set up alike for the tests: for each, the SDK and its clients, the
recorded turns of one run (two tool calls, then a final text) with what they report, and that
run's tools, prompt and system text. Used by the provider files and by test_adapters_both.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anthropic
import openai

import budgetloop
from budgetloop import Budget, Price, Usage
from budgetloop.adapters import AsyncChatModel, ChatModel, anthropic_messages, openai_chat
from tests.provider_server import Provider, payload


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


@dataclass(frozen=True)
class Case:
    """One provider's adapter and the recorded run it is tested against."""

    name: str  # the Provider's sdk name and the test id
    sdk: ModuleType
    adapter: Callable[..., ChatModel | AsyncChatModel]
    client_class: Callable[..., Any]
    async_client_class: Callable[..., Any]
    model: str
    max_tokens: int
    max_tokens_field: str  # where the request body carries max_tokens
    price: Price
    tools: tuple[Callable[..., Any], ...]
    prompt: str
    system: str
    tool_turn: str  # the recorded payloads: two tool calls, then the final text
    final_turn: str
    call_ids: tuple[str, str]  # the ids of the tool turn's two calls
    usages: tuple[Usage, Usage]  # what the tool turn and the final turn report
    answer: str  # the final turn's text
    error_404: str  # the recorded payload of a 404 for a model that does not exist
    missing_model: str
    sdk_call: Callable[[Any, str], Any]  # the SDK's own request for a model, without the adapter
    error_fields: dict[str, Any]  # more of that error's attributes
    system_sent: Callable[[dict[str, Any]], list[str]]  # the system texts a request body carries
    example: str  # the example script, and what it prints when its API key is not set
    key_variable: str
    no_key_message: str

    def client(self, provider: Provider) -> Any:
        return self.client_class(api_key="sk-test", max_retries=0, http_client=provider.client())

    def async_client(self, provider: Provider) -> Any:
        return self.async_client_class(
            api_key="sk-test", max_retries=0, http_client=provider.async_client()
        )

    def error_text(self) -> str:
        """str() of the error the SDK itself raises for the recorded 404, asked without the
        adapter: its wording is the installed SDK's (anthropic 2.x words it anew)."""
        provider = Provider(self.name, (404, payload(self.error_404)))
        try:
            self.sdk_call(self.client(provider), self.missing_model)
        except self.sdk.NotFoundError as error:
            return str(error)
        raise AssertionError(f"{self.name}: the SDK raised no NotFoundError for a 404")

    def over(self, provider: Provider, **options: object) -> ChatModel:
        """The adapter over ``provider`` through the SDK's client, with the test price and
        max_tokens; ``options`` are the adapter's extra request parameters."""
        client = self.client(provider)
        model = self.adapter(
            client, self.model, max_tokens=self.max_tokens, price=self.price, **options
        )
        assert isinstance(model, ChatModel)
        return model

    def run(self, model: ChatModel, budget: Budget | None = None) -> budgetloop.Result:
        """The recorded run's prompt, system text and tools, run on ``model``."""
        return budgetloop.run(
            model, self.prompt, system=self.system, tools=list(self.tools), budget=budget
        )

    def cost(self, *usages: Usage) -> float:
        """The price of these usages together, none of the input cached."""
        return self.price.cost(
            sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages)
        )


OPENAI = Case(
    name="openai",
    sdk=openai,
    adapter=openai_chat,
    client_class=openai.OpenAI,
    async_client_class=openai.AsyncOpenAI,
    model="gpt-4o",
    max_tokens=256,
    max_tokens_field="max_completion_tokens",
    price=Price(input_per_mtok=2.5, output_per_mtok=10.0),  # assumed rates for the tests
    tools=(delete_file, create_file),
    prompt="Delete `.env` and create `test.txt`.",
    system="Just call tools without asking for confirmation.",
    tool_turn="openai_chat_two_tool_calls",
    final_turn="openai_chat_final_text",
    call_ids=("call_jYdIdRZHxZTn5bWCq5jlMrJi", "call_TmlTVWQbzrXCZ4jNsCVNbNqu"),
    usages=(Usage(71, 46), Usage(133, 19)),
    answer="The file `.env` has been deleted and `test.txt` has been created successfully.",
    error_404="openai_chat_error_404",
    missing_model="gpt-5.2-proo",
    sdk_call=lambda client, model: client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "go"}]
    ),
    error_fields={"code": "model_not_found"},
    system_sent=lambda body: [m["content"] for m in body["messages"] if m["role"] == "system"],
    example="examples/openai_example.py",
    key_variable="OPENAI_API_KEY",
    no_key_message="examples/openai_example.py: set OPENAI_API_KEY to run it against OpenAI.\n",
)

ANTHROPIC = Case(
    name="anthropic",
    sdk=anthropic,
    adapter=anthropic_messages,
    client_class=anthropic.Anthropic,
    async_client_class=anthropic.AsyncAnthropic,
    model="claude-sonnet-4-6",
    max_tokens=512,
    max_tokens_field="max_tokens",
    price=Price(input_per_mtok=3.0, output_per_mtok=15.0),  # assumed rates for the tests
    tools=(get_weather, get_elevation),
    prompt="What is the weather and the elevation in Denver?",
    system="Use the tools.",
    tool_turn="anthropic_messages_two_tool_use",
    final_turn="anthropic_messages_final_text",
    call_ids=("toolu_01BBTvQnxdxk7vPHD1ytXyGs", "toolu_017Q9pGQ9Hx126pyyLLnVqJV"),
    usages=(Usage(612, 101), Usage(798, 50)),
    answer=(
        "The weather in Denver is **Sunny** with a temperature of **22°C** (about 72°F).\n\n"
        "Denver's elevation is **650 meters above sea level** (approximately 2,133 feet)."
    ),
    error_404="anthropic_messages_error_404",
    missing_model="claude-sonet-4-5",
    sdk_call=lambda client, model: client.messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "go"}]
    ),
    error_fields={},
    system_sent=lambda body: [body["system"]],
    example="examples/anthropic_example.py",
    key_variable="ANTHROPIC_API_KEY",
    no_key_message=(
        "examples/anthropic_example.py: set ANTHROPIC_API_KEY to run it against Anthropic.\n"
    ),
)

CASES = [OPENAI, ANTHROPIC]
