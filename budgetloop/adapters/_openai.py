"""OpenAI Chat Completions: our messages and tool schemas to the request, the response back,
or its stream of chunks read as ``Chunk``s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._engine._types import Chunk, Completion, Message, Price, ToolCall, UnreadableReply
from ._model import (
    COMMON_SETTINGS,
    AsyncChatModel,
    ChatModel,
    Naming,
    StreamReader,
    check_params,
    make_model,
    reading,
    same_settings,
)
from ._usage import openai_usage

_RESERVED = ("messages", "model", "tools", "max_tokens", "max_completion_tokens", "stream")


def openai_chat(
    client: Any,
    model: str,
    *,
    max_tokens: int,
    price: Price | None = None,
    stream: bool = False,
    **params: Any,
) -> ChatModel | AsyncChatModel:
    """A model callable over ``client.chat.completions.create`` (``openai.OpenAI`` or
    ``openai.AsyncOpenAI``; the async client gives an awaitable callable).

    ``max_tokens`` is read by the loop as the output ceiling of every turn, and each request
    sends the figure its turn was projected at as ``max_completion_tokens``; ``price`` is read
    by the loop to price usage and project cost. ``params`` (``temperature=...``,
    ``tool_choice=...``) are passed through on every call; a run's ``settings`` (every common
    key, under its own name) over them.

    With ``stream=True`` each request is sent with ``stream: true`` and
    ``stream_options: {"include_usage": true}`` (so the usage comes, in the stream's last
    chunk), and a call returns the reply as an iterator of ``budgetloop.Chunk`` (an async
    iterator from the async client) rather than a ``Completion``: pieces of text and of each
    tool call's arguments as they arrive, then the finish reason and the usage, read as the
    unstreamed reply is. A stream that breaks off, or ends before its finish reason, raises
    ``UnreadableReply`` once the chunks that came are yielded.
    """
    check_params("openai_chat", params, _RESERVED)

    def build(
        messages: Sequence[Message], tools: Sequence[dict[str, Any]], most: int
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": model,
            "messages": [_message(m) for m in messages],
            "max_completion_tokens": most,
        }
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        request.update(params)
        if stream:
            request["stream"] = True
            request["stream_options"] = {**(params.get("stream_options") or {}),
                                         "include_usage": True}  # fmt: skip
        return request

    return make_model(
        "openai_chat",
        client.chat.completions.create,
        build,
        completion_from_openai,
        model=model,
        max_tokens=max_tokens,
        price=price,
        settings=(COMMON_SETTINGS, same_settings),
        reserved=_RESERVED,
        stream=stream,
        open_stream=_open_stream,
    )


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content or "",
        }
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [_call(c) for c in message.tool_calls]
        return out
    out = {"role": message.role, "content": message.content or ""}
    if message.name:
        out["name"] = message.name
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    if not call.id:
        raise ValueError(
            f"openai_chat: the id of the tool call to {call.name!r} must be a non-empty str, "
            f"got {call.id!r}; OpenAI pairs each tool result with its call by id."
        )
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_text},
    }


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool as OpenAI takes it: a ``@tool(strict=True)`` with ``"strict": true``, so the
    model's arguments are held to the schema."""
    function: dict[str, Any] = {
        k: schema[k] for k in ("name", "description", "parameters") if k in schema
    }
    if schema.get("strict") is True:
        function["strict"] = True
    return {"type": "function", "function": function}


# OpenAI's finish_reason in the OpenTelemetry GenAI conventions' words.
_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call"}


def completion_from_openai(response: Any) -> Completion:
    """A ``Completion`` from a ``ChatCompletion``: the first choice's text (or refusal), its
    function tool calls with their ids and JSON-string arguments as sent, its usage (cached
    prompt tokens as cache reads; None when it cannot be read, so the call is billed at its
    worst case), and the model, id and finish reason the response names. A response with no
    choice, a tool call that is not a function's (a custom tool's), or one not of this shape
    raises ``UnreadableReply`` (a ``ValueError``) naming what arrived, with the usage it
    reports, so the run ends as a ``model_error`` and the call, which the provider billed, is
    billed at that usage, or at its worst case when there is none."""
    with reading("openai_chat", lambda: openai_usage(getattr(response, "usage", None))):
        return _completion(response)


def _completion(response: Any) -> Completion:
    if not response.choices:
        raise UnreadableReply(
            "openai_chat: the response's choices must be a non-empty list, "
            f"got {response.choices!r}."
        )
    choice = response.choices[0]
    message = choice.message
    text = message.refusal if getattr(message, "refusal", None) else message.content
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:
            raise _not_function(call)
        calls.append(ToolCall(function.name, function.arguments, call.id))
    return Completion(
        text=text,
        tool_calls=tuple(calls),
        usage=openai_usage(getattr(response, "usage", None)),
        model=_text(getattr(response, "model", None)),
        response_id=_text(getattr(response, "id", None)),
        finish_reason=_finish(getattr(choice, "finish_reason", None)),
    )


def _not_function(call: Any) -> UnreadableReply:
    return UnreadableReply(
        f"openai_chat: the type of tool call {call.id!r} must be 'function' (only "
        f"function tool calls are supported), got {call.type!r}."
    )


def _finish(reason: Any) -> str | None:
    said = _text(reason)
    return None if said is None else _FINISH.get(said, said)


def _open_stream(stream: Any) -> tuple[Any, StreamReader]:
    return stream, _ChatStream()


class _ChatStream(Naming):
    """A Chat Completions stream's chunks (``ChatCompletionChunk``s) as ``Chunk``s: the first
    choice's text (or refusal) and tool-call fragments keyed by their index, its finish reason
    as the unstreamed reply's, and the usage of the last chunk (which has no choice)."""

    def __init__(self) -> None:
        super().__init__()
        self._finished = False

    def read(self, event: Any) -> list[Chunk]:
        if not self._named:
            self.model = _text(getattr(event, "model", None))
            self.response_id = _text(getattr(event, "id", None))
        out: list[Chunk] = []
        for choice in event.choices or ():
            if choice.index == 0:  # the first choice, as the unstreamed reply's
                self._choice(choice, out)
        usage = getattr(event, "usage", None)
        if usage is not None:
            self.usage = openai_usage(usage)
            if self.usage is not None:
                out.append(self.chunk(usage=self.usage))
        return out

    def _choice(self, choice: Any, out: list[Chunk]) -> None:
        delta = choice.delta
        if delta is not None:
            text = getattr(delta, "refusal", None) or delta.content
            if text:
                out.append(self.chunk(text))
            for call in delta.tool_calls or ():
                function = call.function
                if function is None:
                    if call.type not in (None, "function"):
                        raise _not_function(call)
                    out.append(self.chunk(index=call.index, id=call.id))
                else:
                    arguments = function.arguments or ""
                    out.append(self.chunk(index=call.index, id=call.id, name=function.name,
                                          arguments=arguments))  # fmt: skip
        finish = _finish(choice.finish_reason)
        if finish is not None:
            self._finished = True
            out.append(self.chunk(finish_reason=finish))

    def end(self) -> list[Chunk]:
        if not self._finished:
            raise UnreadableReply(
                "openai_chat: the stream must be read to its finish_reason, got one "
                "that ended before it."
            )
        return []


def _text(value: Any) -> str | None:
    """A string the response holds, or None for anything else (a field a server left out)."""
    return value if isinstance(value, str) and value else None
