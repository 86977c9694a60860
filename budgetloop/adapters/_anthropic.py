"""Anthropic Messages: system split out, tool calls and results as content blocks, and back."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._engine._types import Completion, Message, Price, ToolCall
from .._engine._valid import type_name
from ._carry import Carried
from ._model import AsyncChatModel, ChatModel, check_params, make_model, reading
from ._usage import anthropic_usage

_RESERVED = ("messages", "model", "tools", "max_tokens", "system")
_COUNT_RESERVED = ("messages", "model", "tools", "system")
# The common settings the Messages API takes (it has no seed).
_SETTINGS = ("temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls")
# A common tool_choice, as the Messages API says it.
_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def anthropic_messages(
    client: Any, model: str, *, max_tokens: int, price: Price | None = None, **params: Any
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
    """
    check_params("anthropic_messages", params, _RESERVED)
    carried = Carried()

    def build(
        messages: Sequence[Message], tools: Sequence[dict[str, Any]], most: int
    ) -> dict[str, Any]:
        request = _content(messages, tools, carried)
        return {"model": model, "max_tokens": most, **request, **params}

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
    )


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
    stop = _text(getattr(response, "stop_reason", None))
    return Completion(
        text="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=anthropic_usage(getattr(response, "usage", None)),
        model=_text(getattr(response, "model", None)),
        response_id=_text(getattr(response, "id", None)),
        finish_reason=None if stop is None else _FINISH.get(stop, stop),
    )


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
