"""Anthropic Messages: system split out, tool calls and results as content blocks, and back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._types import Completion, Message, Price, ToolCall, Usage
from ._model import AsyncChatModel, ChatModel, check_params, make_model

_RESERVED = ("messages", "model", "tools", "max_tokens", "system")


def anthropic_messages(
    client: Any, model: str, *, max_tokens: int, price: Price | None = None, **params: Any
) -> ChatModel | AsyncChatModel:
    """A model callable over ``client.messages.create`` (``anthropic.Anthropic`` or
    ``anthropic.AsyncAnthropic``; the async client gives an awaitable callable).

    System messages are joined into ``system=``; consecutive tool results go back in one user
    turn, as the API requires. ``max_tokens`` is sent as is and read by the loop as the output
    ceiling of every turn; ``price`` is read by the loop to price usage and project cost.
    """
    check_params("anthropic_messages", params, _RESERVED)

    def build(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        system = [m.content for m in messages if m.role == "system" and m.content]
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": _turns(m for m in messages if m.role != "system"),
        }
        if system:
            request["system"] = "\n\n".join(system)
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        return {**request, **params}

    return make_model(
        "anthropic_messages",
        client.messages.create,
        build,
        completion_from_anthropic,
        model=model,
        max_tokens=max_tokens,
        price=price,
    )


def _turns(messages: Any) -> list[dict[str, Any]]:
    """Messages as turns of content blocks; neighbours of the same role share one turn."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
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
    calls with their ids, and its usage with cache reads and writes counted as input and kept
    apart as ``cache_read_tokens`` / ``cache_write_tokens``."""
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
        usage=_usage(response.usage),
    )


def _usage(usage: Any) -> Usage | None:
    """Anthropic's usage: ``input_tokens`` counts only the input after the last cache
    breakpoint, so the whole input is it plus ``cache_read_input_tokens`` (read from the cache)
    plus ``cache_creation_input_tokens`` (written to it)."""
    if usage is None:
        return None
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    write = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(
        usage.input_tokens + read + write,
        usage.output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
