"""The model callable every adapter returns: a request builder and a response parser around an
SDK's ``create`` method, carrying ``price`` and ``max_output_tokens`` for the loop to read; and,
for an adapter made with ``stream=True``, the reader of the SDK's stream of events into chunks."""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from .._engine._types import Chunk, Completion, Message, Price, UnreadableReply, Usage
from .._engine._valid import must, type_name
from .._tools._dispatch import describe

# Each adapter's provider, as the OpenTelemetry GenAI conventions name it (gen_ai.provider.name).
PROVIDER_NAMES = {
    "openai_chat": "openai",
    "openai_responses": "openai",
    "anthropic_messages": "anthropic",
}
# (messages, tools, max_tokens) -> the keyword arguments of the SDK's create
BuildRequest = Callable[[Sequence[Message], Sequence[dict[str, Any]], int], dict[str, Any]]
ParseResponse = Callable[[Any], Completion]
# The common settings (``settings=`` of a run), as a provider's request keys; ``tools``: whether
# the request sends tools (a tool setting means nothing to a request without them).
MapSettings = Callable[[Mapping[str, Any], bool], dict[str, Any]]
COMMON_SETTINGS = ("temperature", "top_p", "seed", "stop", "tool_choice", "parallel_tool_calls")
TOOL_SETTINGS = ("tool_choice", "parallel_tool_calls")


class StreamReader(Protocol):
    """Reads one streamed reply's events, in order, into chunks. ``usage`` is the reply's
    final usage once it has arrived (None until then, and when it cannot be read)."""

    usage: Usage | None

    def read(self, event: Any) -> Sequence[Chunk]:
        """The chunks one event of the SDK's stream makes (often none)."""
        ...

    def end(self) -> Sequence[Chunk]:
        """The chunks left when the stream has ended; an ``UnreadableReply`` when it ended
        before the event that says the reply is whole."""
        ...


# What ``create`` returned for a streamed request -> the SDK's stream of events, and a new
# reader for it.
OpenStream = Callable[[Any], tuple[Any, StreamReader]]


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
        settings: tuple[tuple[str, ...], MapSettings],
        reserved: Sequence[str],
        stream: OpenStream | None = None,
    ) -> None:
        self.provider = provider
        self.provider_name = PROVIDER_NAMES.get(provider, provider)  # as the GenAI conventions
        self.model = model
        self.max_output_tokens = max_tokens
        self.price = price
        self._create = create
        self._build = build
        self._parse = parse
        self.settings_keys, self._map = settings  # the common settings it knows, and how
        self._reserved = reserved
        self._named = named_parameters(create)
        self._stream = stream
        self.stream = stream is not None  # whether a call returns chunks, not a Completion

    def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_output_tokens: int | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments the SDK's ``create`` is called with, for these messages:
        ``max_output_tokens`` output tokens (None: the adapter's ``max_tokens``), and the run's
        ``settings`` as the provider names them (a key ``create`` does not name goes in
        ``extra_body``)."""
        most = self.max_output_tokens if max_output_tokens is None else max_output_tokens
        request = self._build(messages, tools, most)
        if settings:
            sent = {**self._map(settings, bool(tools)), **settings.get(self.provider_name, {})}
            extra = dict(request.get("extra_body") or {})
            for key, value in sent.items():
                if key in self._named:
                    request[key] = value
                else:
                    extra[key] = value
            if extra:
                request["extra_body"] = extra
        return request

    def check_settings(self, settings: Mapping[str, Any], where: str) -> None:
        """Each key of a run's ``settings`` is one this adapter maps, or a provider's name
        (its value a dict of the provider's own request keys; another provider's is left for
        that provider's adapter); else a ValueError naming ``where``, at ``run()``."""
        providers = sorted(set(PROVIDER_NAMES.values()))
        for key, value in settings.items():
            if key in providers:
                if not isinstance(value, dict):
                    expected = f"a dict of {key}'s own request keys"
                    raise TypeError(must(where, f"settings[{key!r}]", expected, type_name(value)))
                clash = (
                    sorted(set(value) & set(self._reserved)) if key == self.provider_name else []
                )
                if clash:
                    expected = f"keys {self.provider} does not set itself"
                    raise ValueError(must(where, f"settings[{key!r}]", expected, ", ".join(clash)))
            elif key not in self.settings_keys:
                known = ", ".join((*self.settings_keys, *providers))
                expected = f"keys {self.provider} knows ({known})"
                raise ValueError(must(where, "settings", expected, repr(key)))

    def __repr__(self) -> str:
        streamed = ", stream=True" if self.stream else ""
        return (
            f"{type(self).__name__}({self.provider}, model={self.model!r}, "
            f"max_tokens={self.max_output_tokens}, price={self.price!r}{streamed})"
        )


class ChatModel(_Adapter):
    """``(messages, tools) -> Completion`` over a provider's synchronous client; the loop also
    passes ``max_output_tokens`` and ``settings`` (``request`` says how they are sent). Made
    with ``stream=True``, a call returns the reply as an iterator of ``Chunk`` (a
    ``ChunkStream``) once the provider has answered."""

    def __call__(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        max_output_tokens: int | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Completion | ChunkStream:
        request = self.request(
            messages, tools, max_output_tokens=max_output_tokens, settings=settings
        )
        if self._stream is None:
            return self._parse(self._create(**request))
        events, reader = self._stream(self._create(**request))
        return ChunkStream(_chunks(self.provider, events, reader), events)


class AsyncChatModel(_Adapter):
    """``await model(messages, tools) -> Completion`` over a provider's asynchronous client;
    the loop also passes ``max_output_tokens`` and ``settings``. Made with ``stream=True``,
    the awaited call gives the reply as an async iterator of ``Chunk`` (an
    ``AsyncChunkStream``) once the provider has answered."""

    async def __call__(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        max_output_tokens: int | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Completion | AsyncChunkStream:
        request = self.request(
            messages, tools, max_output_tokens=max_output_tokens, settings=settings
        )
        if self._stream is None:
            return self._parse(await self._create(**request))
        events, reader = self._stream(await self._create(**request))
        return AsyncChunkStream(_achunks(self.provider, events, reader), events)


class ChunkStream:
    """One streamed reply's chunks, read from the SDK's stream as they are asked for.
    ``close()`` closes the SDK's stream too (its HTTP response: the provider then stops
    generating), also before the first chunk was asked for."""

    def __init__(self, chunks: Iterator[Chunk], events: Any) -> None:
        self._chunks = chunks
        self._events = events

    def __iter__(self) -> ChunkStream:
        return self

    def __next__(self) -> Chunk:
        return next(self._chunks)

    def close(self) -> None:
        try:
            self._chunks.close()  # type: ignore[attr-defined]
        finally:
            self._events.close()


class AsyncChunkStream:
    """One streamed reply's chunks from an async client; ``aclose()`` closes the SDK's stream
    too, also before the first chunk was asked for."""

    def __init__(self, chunks: AsyncIterator[Chunk], events: Any) -> None:
        self._chunks = chunks
        self._events = events

    def __aiter__(self) -> AsyncChunkStream:
        return self

    async def __anext__(self) -> Chunk:
        return await anext(self._chunks)

    async def aclose(self) -> None:
        try:
            await self._chunks.aclose()  # type: ignore[attr-defined]
        finally:
            await self._events.close()


def _chunks(caller: str, events: Any, reader: StreamReader) -> Iterator[Chunk]:
    """The reader's chunks of each event the SDK's stream gives. An SDK's error while the
    stream runs (a connection that broke off, an error event) comes after the provider
    answered, and billed the call: it raises an ``UnreadableReply``, as does a stream that
    ended before its reply was whole; each carries the final usage when it has arrived."""
    iterator = iter(events)
    with reading(caller, lambda: reader.usage):
        while True:
            try:
                event = next(iterator)
            except StopIteration:
                break
            except Exception as exc:
                raise broke_off(caller, exc, reader.usage) from exc
            yield from reader.read(event)
        yield from reader.end()


async def _achunks(caller: str, events: Any, reader: StreamReader) -> AsyncIterator[Chunk]:
    """``_chunks`` of an async SDK stream."""
    iterator = aiter(events)
    with reading(caller, lambda: reader.usage):
        while True:
            try:
                event = await anext(iterator)
            except StopAsyncIteration:
                break
            except Exception as exc:
                raise broke_off(caller, exc, reader.usage) from exc
            for chunk in reader.read(event):
                yield chunk
        for chunk in reader.end():
            yield chunk


def broke_off(caller: str, exc: Exception, usage: Usage | None) -> UnreadableReply:
    """A stream the SDK stopped with an error, after the provider had answered."""
    return UnreadableReply(
        f"{caller}: the stream must be read to its end, got one that broke off ({describe(exc)}).",
        usage,
    )


class Naming:
    """What a reader shares: the final usage once read, and the model and response id the
    provider named, carried by the first chunk a reply yields."""

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.model: str | None = None
        self.response_id: str | None = None
        self._named = False

    def chunk(
        self,
        text: str = "",
        index: int | None = None,
        id: str | None = None,
        name: str | None = None,
        arguments: str = "",
        usage: Usage | None = None,
        finish_reason: str | None = None,
    ) -> Chunk:
        if self._named:
            return Chunk(text, index, id, name, arguments, usage, finish_reason)
        self._named = True
        return Chunk(text, index, id, name, arguments, usage, finish_reason, self.model,
                     self.response_id)  # fmt: skip


def named_parameters(create: Callable[..., Any]) -> frozenset[str] | _Every:
    """The keyword parameters ``create`` names (every one, for a ``create`` whose signature
    cannot be read or that takes ``**kwargs``): a setting it does not name goes in the
    SDK's ``extra_body``."""
    try:
        parameters = inspect.signature(create).parameters.values()
    except (TypeError, ValueError):
        return _Every()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return _Every()
    return frozenset(p.name for p in parameters)


class _Every:
    def __contains__(self, name: object) -> bool:
        return True


def make_model(
    caller: str,
    create: Callable[..., Any],
    build: BuildRequest,
    parse: ParseResponse,
    *,
    model: str,
    max_tokens: int,
    price: Price | None,
    settings: tuple[tuple[str, ...], MapSettings],
    reserved: Sequence[str],
    stream: bool = False,
    open_stream: OpenStream | None = None,
) -> ChatModel | AsyncChatModel:
    """A sync or async model callable, as ``create`` is (an async client's is a coroutine);
    ``settings`` are the common settings it knows and how it maps them, ``reserved`` the
    request keys it sets itself. With ``stream``, ``open_stream`` reads what ``create``
    returns for each (streamed) request; else ``parse`` reads each reply."""
    if not isinstance(model, str) or not model:
        raise TypeError(f"{caller}: model must be a non-empty str, got {model!r}.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"{caller}: max_tokens must be an int >= 1, got {max_tokens!r}.")
    if not isinstance(stream, bool):
        raise TypeError(f"{caller}: stream must be True or False, got {type_name(stream)}.")
    if price is not None and not isinstance(price, Price):
        raise TypeError(f"{caller}: price must be a Price or None, got {type(price).__name__}.")
    if price is None:
        price = catalog_price(model, PROVIDER_NAMES.get(caller))
    cls = AsyncChatModel if inspect.iscoroutinefunction(inspect.unwrap(create)) else ChatModel
    return cls(caller, create, build, parse, model=model, max_tokens=max_tokens, price=price,
               settings=settings, reserved=reserved,
               stream=open_stream if stream else None)  # fmt: skip


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


def same_settings(settings: Mapping[str, Any], tools: bool) -> dict[str, Any]:
    """The common settings under their own names (OpenAI's), the tool settings only for a
    request with tools (the API refuses them without)."""
    return {
        key: value
        for key, value in settings.items()
        if key in COMMON_SETTINGS and (tools or key not in TOOL_SETTINGS)
    }


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
