"""The model callable both adapters return: a request builder and a response parser around an
SDK's ``create`` method, carrying ``price`` and ``max_output_tokens`` for the loop to read."""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._dispatch import describe
from .._types import Completion, Message, Price, UnreadableReply, Usage

# Each adapter's provider, as the OpenTelemetry GenAI conventions name it (gen_ai.provider.name).
PROVIDER_NAMES = {
    "openai_chat": "openai",
    "openai_responses": "openai",
    "anthropic_messages": "anthropic",
}
BuildRequest = Callable[[Sequence[Message], Sequence[dict[str, Any]]], dict[str, Any]]
ParseResponse = Callable[[Any], Completion]


class _Adapter:
    def __init__(
        self,
        provider: str,
        create: Callable[..., Any],
        build: BuildRequest,
        parse: ParseResponse,
        *,
        model: str,
        max_tokens: int,
        price: Price | None,
    ) -> None:
        self.provider = provider
        self.provider_name = PROVIDER_NAMES.get(provider, provider)  # as the GenAI conventions
        self.model = model
        self.max_output_tokens = max_tokens
        self.price = price
        self._create = create
        self._build = build
        self._parse = parse

    def request(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """The keyword arguments the SDK's ``create`` is called with, for these messages."""
        return self._build(messages, tools)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.provider}, model={self.model!r}, "
            f"max_tokens={self.max_output_tokens}, price={self.price!r})"
        )


class ChatModel(_Adapter):
    """``(messages, tools) -> Completion`` over a provider's synchronous client."""

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return self._parse(self._create(**self._build(messages, tools)))


class AsyncChatModel(_Adapter):
    """``await model(messages, tools) -> Completion`` over a provider's asynchronous client."""

    async def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return self._parse(await self._create(**self._build(messages, tools)))


def make_model(
    caller: str,
    create: Callable[..., Any],
    build: BuildRequest,
    parse: ParseResponse,
    *,
    model: str,
    max_tokens: int,
    price: Price | None,
) -> ChatModel | AsyncChatModel:
    """A sync or async model callable, as ``create`` is (an async client's is a coroutine)."""
    if not isinstance(model, str) or not model:
        raise TypeError(f"{caller}: model must be a non-empty str, got {model!r}.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"{caller}: max_tokens must be an int >= 1, got {max_tokens!r}.")
    if price is not None and not isinstance(price, Price):
        raise TypeError(f"{caller}: price must be a Price or None, got {type(price).__name__}.")
    if price is None:
        price = catalog_price(model, PROVIDER_NAMES.get(caller))
    cls = AsyncChatModel if inspect.iscoroutinefunction(inspect.unwrap(create)) else ChatModel
    return cls(caller, create, build, parse, model=model, max_tokens=max_tokens, price=price)


def catalog_price(model: str, provider: str | None) -> Price | None:
    """The model's price from genai-prices when it is installed (``budgetloop[prices]``) and
    knows the model; else None, and a cost ceiling then asks for a price at ``run()``."""
    if importlib.util.find_spec("genai_prices") is None:
        return None
    from ..prices import price_of

    try:
        return price_of(model, provider)
    except LookupError:
        return None


def check_params(caller: str, params: dict[str, Any], reserved: Sequence[str]) -> None:
    """Refuse extra parameters the adapter sets itself."""
    clash = sorted(set(params) & set(reserved))
    if clash:
        raise TypeError(
            f"{caller}: extra parameters must be ones the adapter does not set from its "
            f"arguments and the loop's messages and tools, got {', '.join(clash)}."
        )


@contextmanager
def reading(caller: str, usage: Callable[[], Usage | None]) -> Iterator[None]:
    """A reply the provider sent, and billed, being read: what cannot be read raises an
    ``UnreadableReply`` carrying the usage the reply reports (``usage()``, through the adapter's
    usage reader; None when that cannot be read either), so the call is billed, never taken
    for one that cost nothing. The adapter's own refusals (an ``UnreadableReply`` naming what
    arrived) keep their words; anything else reading the reply raised is named as such."""
    try:
        yield
    except Exception as exc:
        try:
            reported = usage()
        except Exception:
            reported = None
        if isinstance(exc, UnreadableReply):
            if exc.usage is None:
                exc.usage = reported
            raise
        raise UnreadableReply(
            f"{caller}: the response must be of the shape the API returns, got one that could "
            f"not be read ({describe(exc)}).",
            reported,
        ) from exc
