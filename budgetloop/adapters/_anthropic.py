"""Anthropic Messages: system split out, tool calls and results as content blocks, and back
(or the stream of events read as ``Chunk``s)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._engine._types import Chunk, Completion, Message, Price, ToolCall, UnreadableReply
from .._engine._valid import type_name
from ._carry import Carried
from ._model import (
    AsyncChatModel,
    ChatModel,
    Naming,
    check_params,
    make_model,
    reading,
)
from ._usage import anthropic_usage

_RESERVED = ("messages", "model", "tools", "max_tokens", "system", "stream")
_COUNT_RESERVED = ("messages", "model", "tools", "system")
# The common settings the Messages API takes (it has no seed).
_SETTINGS = ("temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls")
# A common tool_choice, as the Messages API says it.
_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def anthropic_messages(
    client: Any,
    model: str,
    *,
    max_tokens: int,
    price: Price | None = None,
    stream: bool = False,
    **params: Any,
) -> ChatModel | AsyncChatModel:
    """A model callable over ``client.messages.create`` (``anthropic.Anthropic`` or
    ``anthropic.AsyncAnthropic``; the async client gives an awaitable callable).

    System messages are joined into ``system=``; consecutive tool results go back in one user
    turn, as the API requires. ``max_tokens`` is read by the loop as the output ceiling of
    every turn, and each request sends the figure its turn was projected at as ``max_tokens``;
    ``price`` is read by the loop to price usage and project cost. A run's ``settings`` map
    to the API's words: ``stop`` to ``stop_sequences``, ``tool_choice`` ``"auto"``,
    ``"required"`` or ``"none"`` to ``{"type": ...}`` (``"required"`` is ``"any"``),
    ``parallel_tool_calls=False`` to ``disable_parallel_tool_use``; ``temperature`` and
    ``top_p`` go in ``extra_body`` where the SDK's ``create`` does not name them.
    With extended thinking on (``thinking={"type": "enabled", "budget_tokens": ...}`` in
    ``params``), each tool-use turn goes back with its thinking and redacted-thinking blocks
    first, unchanged and in order, as the API requires; the adapter keeps them between calls.

    With ``stream=True`` each request is sent with ``stream: true``, and a call returns the
    reply as an iterator of ``budgetloop.Chunk`` (an async iterator from the async client)
    rather than a ``Completion``: pieces of text and of each ``tool_use`` block's input JSON as
    they arrive, then the stop reason and the usage from ``message_delta``, which carries the
    reply's final output count (with the input counts ``message_start`` gave, which alone are
    not final and make no chunk). A stream that breaks off (an ``error`` event among them) or
    ends before ``message_delta`` raises ``UnreadableReply`` once the chunks that came are
    yielded.
    """
    check_params("anthropic_messages", params, _RESERVED)
    carried = Carried()

    def build(
        messages: Sequence[Message], tools: Sequence[dict[str, Any]], most: int
    ) -> dict[str, Any]:
        request = {"model": model, "max_tokens": most, **_content(messages, tools, carried)}
        request.update(params)
        if stream:
            request["stream"] = True
        return request

    def parse(response: Any) -> Completion:
        completion = completion_from_anthropic(response)
        with reading("anthropic_messages", lambda: completion.usage):
            thinking = _thinking(response)
        carried.keep(completion, thinking)
        return completion

    return make_model(
        "anthropic_messages",
        client.messages.create,
        build,
        parse,
        model=model,
        max_tokens=max_tokens,
        price=price,
        settings=(_SETTINGS, _settings),
        reserved=_RESERVED,
        stream=stream,
        open_stream=lambda events: (events, _MessagesStream(carried)),
    )


class _MessagesStream(Naming):
    """A Messages API stream's events as ``Chunk``s: text deltas, each ``tool_use`` block (its
    id and name at its start, then its ``partial_json`` pieces), and at ``message_delta`` the
    stop reason and the usage: ``message_start``'s counts with ``message_delta``'s over them.
    Thinking blocks are kept, with the turn's text and calls, for the next request."""

    def __init__(self, carried: Carried) -> None:
        super().__init__()
        self._carried = carried
        self._started: dict[str, Any] = {}  # message_start's usage: not final
        self._calls: dict[int, int] = {}  # a content block's index -> its call's index
        self._turn: list[Any] = []  # the calls' (id, name, pieces), for a turn with thinking
        self._texts: list[str] = []
        self._thinking: dict[int, dict[str, Any]] = {}  # by block index, as they grow
        self._done = False

    def read(self, event: Any) -> list[Chunk]:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return self._text(delta.text)
            if delta.type == "input_json_delta":
                return self._arguments(self._calls[event.index], delta.partial_json)
            if delta.type == "thinking_delta":
                self._thinking[event.index]["thinking"] += delta.thinking
            elif delta.type == "signature_delta":
                self._thinking[event.index]["signature"] += delta.signature
            return []
        if kind == "content_block_start":
            return self._start(event.index, event.content_block)
        if kind == "content_block_stop":
            index = self._calls.get(event.index)
            if index is not None and not self._turn[index][2]:  # a call with no input
                return self._arguments(index, "{}")
            return []
        if kind == "message_start":
            message = event.message
            self.model = _text(getattr(message, "model", None))
            self.response_id = _text(getattr(message, "id", None))
            self._started = _counts(getattr(message, "usage", None))
            return []
        if kind == "message_delta":
            return self._ended(event)
        return []

    def _start(self, block_index: int, block: Any) -> list[Chunk]:
        if block.type == "text":
            return self._text(block.text)
        if block.type == "tool_use":
            index = self._calls[block_index] = len(self._calls)
            self._turn.append((block.id, block.name, []))
            given = json.dumps(block.input) if block.input else ""  # usually sent in pieces
            chunks = [self.chunk(index=index, id=block.id, name=block.name)]
            return chunks + self._arguments(index, given) if given else chunks
        if block.type == "thinking":
            self._thinking[block_index] = {"type": "thinking", "thinking": block.thinking,
                                           "signature": block.signature}  # fmt: skip
        elif block.type == "redacted_thinking":
            self._thinking[block_index] = {"type": "redacted_thinking", "data": block.data}
        return []

    def _text(self, text: str) -> list[Chunk]:
        if not text:
            return []
        if self._thinking:
            self._texts.append(text)
        return [self.chunk(text)]

    def _arguments(self, index: int, piece: str) -> list[Chunk]:
        if not piece:
            return []
        self._turn[index][2].append(piece)
        return [self.chunk(index=index, arguments=piece)]

    def _ended(self, event: Any) -> list[Chunk]:
        self._done = True
        self.usage = anthropic_usage({**self._started, **_counts(getattr(event, "usage", None))})
        if self._thinking:
            calls = tuple(ToolCall(name, "".join(pieces), id) for id, name, pieces in self._turn)
            turn = Completion("".join(self._texts) or None, calls)
            self._carried.keep(turn, [self._thinking[i] for i in sorted(self._thinking)])
        return [self.chunk(usage=self.usage, finish_reason=_finish(event.delta.stop_reason))]

    def end(self) -> list[Chunk]:
        if not self._done:
            raise UnreadableReply(
                "anthropic_messages: the stream must be read to its message_delta event, got one "
                "that ended before it."
            )
        return []


def _counts(usage: Any) -> dict[str, Any]:
    """The counts a stream's usage gives (the SDK's object as its JSON), those it leaves
    out or null left out, so a later event's counts go over an earlier one's."""
    if usage is None:
        return {}
    said = usage.to_dict() if hasattr(usage, "to_dict") else usage
    return {k: v for k, v in said.items() if v is not None} if isinstance(said, dict) else {}


def _settings(settings: Mapping[str, Any], tools: bool) -> dict[str, Any]:
    """The common settings in the Messages API's words (the tool settings only for a request
    with tools)."""
    out = {key: settings[key] for key in ("temperature", "top_p") if key in settings}
    stop = settings.get("stop")
    if stop is not None:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if not tools:
        return out
    choice = settings.get("tool_choice")
    parallel = settings.get("parallel_tool_calls")
    if choice is None and parallel is None:
        return out
    if isinstance(choice, str):
        choice = {"type": _CHOICES.get(choice, choice)}
    choice = dict(choice or {"type": "auto"})
    if parallel is not None and choice.get("type") != "none":
        choice["disable_parallel_tool_use"] = not parallel
    out["tool_choice"] = choice
    return out


def _thinking(response: Any) -> list[dict[str, Any]]:
    """A response's thinking and redacted-thinking blocks, each as the API wrote it."""
    kept: list[dict[str, Any]] = []
    for block in response.content:
        if block.type == "thinking":
            kept.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block.type == "redacted_thinking":
            kept.append({"type": "redacted_thinking", "data": block.data})
    return kept


def _content(
    messages: Sequence[Message], tools: Sequence[dict[str, Any]], carried: Carried | None = None
) -> dict[str, Any]:
    """The request's messages, system and tools, as the Messages API takes them."""
    system = [m.content for m in messages if m.role == "system" and m.content]
    turns = (m for m in messages if m.role != "system")
    request: dict[str, Any] = {"messages": _turns(turns, carried)}
    if system:
        request["system"] = "\n\n".join(system)
    if tools:
        request["tools"] = [_tool(t) for t in tools]
    return request


class AnthropicTokenCounter:
    """``count_tokens(messages, tools) -> int`` over ``client.messages.count_tokens``: the
    provider's own count of a request, its tool definitions included (Anthropic documents it
    as an estimate that can differ slightly from the input tokens billed). Each call is one
    request to the API."""

    def __init__(self, count: Callable[..., Any], model: str, params: dict[str, Any]) -> None:
        self.model = model
        self._count = count
        self._params = params

    def request(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """The keyword arguments ``client.messages.count_tokens`` is called with."""
        return {"model": self.model, **_content(messages, tools), **self._params}

    def __call__(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        tokens = getattr(self._count(**self.request(messages, tools)), "input_tokens", None)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(
                "anthropic_count_tokens: the response's input_tokens must be an int >= 0, "
                f"got {tokens!r}."
            )
        return tokens

    def __repr__(self) -> str:
        return f"anthropic_count_tokens(model={self.model!r})"


def anthropic_count_tokens(client: Any, model: str, **params: Any) -> AnthropicTokenCounter:
    """An exact ``count_tokens`` for Claude: each request counted by the provider's
    token-counting endpoint (``client.messages.count_tokens``), sent the messages, system and
    tools exactly as ``anthropic_messages`` sends them. ``client`` is a synchronous
    ``anthropic.Anthropic``; extra ``params`` (``thinking=...``) are sent with every count.
    """
    check_params("anthropic_count_tokens", params, _COUNT_RESERVED)
    if not isinstance(model, str) or not model:
        raise TypeError(f"anthropic_count_tokens: model must be a non-empty str, got {model!r}.")
    count = getattr(getattr(client, "messages", None), "count_tokens", None)
    if not callable(count):
        raise TypeError(
            "anthropic_count_tokens: client must be an anthropic.Anthropic client (with "
            f"messages.count_tokens), got {type_name(client)}."
        )
    if inspect.iscoroutinefunction(inspect.unwrap(count)):
        raise TypeError(
            "anthropic_count_tokens: client must be an anthropic.Anthropic client (the loop "
            f"counts tokens synchronously), got {type_name(client)}; pass an anthropic.Anthropic "
            "client, not an AsyncAnthropic one."
        )
    return AnthropicTokenCounter(count, model, params)


def _turns(messages: Any, carried: Carried | None) -> list[dict[str, Any]]:
    """Messages as turns of content blocks; neighbours of the same role share one turn. An
    assistant turn the model made with thinking starts with its thinking blocks."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        thinking = carried.get(message) if carried is not None and role == "assistant" else None
        if thinking:
            blocks = [*thinking, *blocks]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content or "",
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
        )
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    args = call.arguments
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args) if args.strip() else {}
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f"anthropic_messages: the arguments of the tool call to {call.name!r} must be a "
            f"JSON object to send as tool_use input, got {args!r}."
        )
    return value


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: schema[k] for k in ("name", "description") if k in schema}
    out["input_schema"] = schema.get("parameters", {"type": "object", "properties": {}})
    return out


def completion_from_anthropic(response: Any) -> Completion:
    """A ``Completion`` from a ``Message``: its text blocks joined, its ``tool_use`` blocks as
    calls with their ids, its usage with cache reads and writes counted as input and kept
    apart as ``cache_read_tokens`` / ``cache_write_tokens`` (None when it cannot be read, so
    the call is billed at its worst case), and the model, id and stop reason the response
    names. A response not of this shape raises ``UnreadableReply`` (a ``ValueError``) naming
    what could not be read, with the usage it reports, so the run ends as a ``model_error`` and
    the call, which the provider billed, is billed at that usage, or at its worst case."""
    with reading("anthropic_messages", lambda: anthropic_usage(getattr(response, "usage", None))):
        return _completion(response)


def _completion(response: Any) -> Completion:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in response.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(block.name, dict(block.input), block.id))
    return Completion(
        text="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=anthropic_usage(getattr(response, "usage", None)),
        model=_text(getattr(response, "model", None)),
        response_id=_text(getattr(response, "id", None)),
        finish_reason=_finish(getattr(response, "stop_reason", None)),
    )


def _finish(reason: Any) -> str | None:
    stop = _text(reason)
    return None if stop is None else _FINISH.get(stop, stop)


# Anthropic's stop_reason in the OpenTelemetry GenAI conventions' words.
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def _text(value: Any) -> str | None:
    """A string the response holds, or None for anything else (a field a server left out)."""
    return value if isinstance(value, str) and value else None
