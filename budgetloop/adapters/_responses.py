"""The OpenAI Responses API: our messages and tool schemas to ``input`` items, the response's
output items back (or its stream of events read as ``Chunk``s), and a reasoning model's
reasoning carried from one turn to the next."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._engine._types import Chunk, Completion, Message, Price, ToolCall, UnreadableReply
from .._engine._valid import type_name
from ._carry import Carried
from ._model import (
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

_RESERVED = ("input", "model", "tools", "max_output_tokens", "stream")
# The common settings the Responses API takes (it has no seed and no stop sequences).
_SETTINGS = ("temperature", "top_p", "tool_choice", "parallel_tool_calls")
_ENCRYPTED = "reasoning.encrypted_content"
# Why a response was cut short, in the OpenTelemetry GenAI conventions' words.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
# What a reply to a function-tool loop holds, all the adapter reads, and what goes back with a
# turn: its text, calls and reasoning. Any other output item (a custom or hosted tool's call)
# or message part is refused, never taken for an empty answer.
_ITEMS = ("message", "function_call", "reasoning")
_PARTS = ("output_text", "refusal")
# The statuses of a response that has ended without failing.
_ENDED = ("completed", "incomplete")


# The events that end a streamed response: each carries the whole response, its usage with it.
_LAST = ("response.completed", "response.incomplete", "response.failed")


def openai_responses(
    client: Any,
    model: str,
    *,
    max_tokens: int,
    price: Price | None = None,
    stream: bool = False,
    **params: Any,
) -> ChatModel | AsyncChatModel:
    """A model callable over ``client.responses.create`` (``openai.OpenAI`` or
    ``openai.AsyncOpenAI``; the async client gives an awaitable callable).

    ``max_tokens`` is read by the loop as the output ceiling of every turn, and each request
    sends the figure its turn was projected at as ``max_output_tokens``. Requests are sent
    with ``store=False`` unless ``params`` say otherwise, so the conversation lives in the
    loop, not on OpenAI's servers. Give a reasoning model's
    options as ``reasoning={...}``: the request then asks for ``reasoning.encrypted_content``,
    and each tool-call turn's reasoning items go back with the next request, as the API needs
    for a reasoning model's tool loop. ``params`` (``temperature=...``, ``reasoning=...``,
    ``include=[...]``, ``store=True``) are passed through on every call; a run's ``settings``
    (``temperature``, ``top_p``, ``tool_choice``, ``parallel_tool_calls``) over them.

    With ``stream=True`` each request is sent with ``stream: true``, and a call returns the
    reply as an iterator of ``budgetloop.Chunk`` (an async iterator from the async client)
    rather than a ``Completion``: pieces of text and of each function call's arguments as they
    arrive, then the finish reason and the usage, read from the response that the stream's
    last event (``response.completed``) carries, as the unstreamed reply is read (a
    ``failed`` response, or an output item it does not read, raises ``UnreadableReply`` then).
    A stream that breaks off, sends an ``error`` event, or ends before its last event raises
    ``UnreadableReply`` once the chunks that came are yielded.
    """
    check_params("openai_responses", params, _RESERVED)
    stored = params.get("store") is True
    request_params = {"store": False, **params}
    include = list(params.get("include") or ())
    if "reasoning" in params and not stored and _ENCRYPTED not in include:
        include.append(_ENCRYPTED)
    if include:
        request_params["include"] = include
    carried = Carried()

    def build(
        messages: Sequence[Message], tools: Sequence[dict[str, Any]], most: int
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": model,
            "input": _input(messages, carried),
            "max_output_tokens": most,
        }
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        request.update(request_params)
        if stream:
            request["stream"] = True
        return request

    def parse(raw: Any) -> Completion:
        with reading("openai_responses", lambda: None):  # no JSON: no usage to read
            body = raw.http_response.json()  # the JSON as sent: no SDK model is built
        return ended(body)

    def ended(body: dict[str, Any]) -> Completion:
        completion = completion_from_responses(body)
        carried.keep(completion, _reasoning_turn(body, stored))
        return completion

    def open_stream(raw: Any) -> tuple[Any, StreamReader]:
        return raw.parse(), _ResponsesStream(ended)

    return make_model(
        "openai_responses",
        client.responses.with_raw_response.create,
        build,
        parse,
        model=model,
        max_tokens=max_tokens,
        price=price,
        settings=(_SETTINGS, same_settings),
        reserved=_RESERVED,
        stream=stream,
        open_stream=open_stream,
    )


class _ResponsesStream(Naming):
    """A Responses API stream's events as ``Chunk``s: the text and refusal deltas, each
    function call (its ``call_id`` and name when its item is added, then its arguments'
    deltas), and at the last event the response it carries read as the unstreamed reply is
    (``ended``), for its usage and why it ended."""

    def __init__(self, ended: Callable[[dict[str, Any]], Completion]) -> None:
        super().__init__()
        self._ended = ended
        self._calls: dict[int, int] = {}  # an output item's index -> its call's index
        self._streamed: set[int] = set()  # the calls whose arguments came in deltas
        self._done = False

    def read(self, event: Any) -> list[Chunk]:
        kind = event.type
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            return [self.chunk(event.delta)] if event.delta else []
        if kind == "response.function_call_arguments.delta":
            index = self._calls[event.output_index]
            self._streamed.add(index)
            return [self.chunk(index=index, arguments=event.delta)] if event.delta else []
        if kind == "response.output_item.added" and event.item.type == "function_call":
            index = self._calls[event.output_index] = len(self._calls)
            item = event.item
            if item.arguments:
                self._streamed.add(index)
            return [self.chunk(index=index, id=item.call_id, name=item.name,
                               arguments=item.arguments or "")]  # fmt: skip
        if kind == "response.output_item.done" and event.item.type == "function_call":
            index = self._calls[event.output_index]  # arguments sent whole, not in deltas
            if index in self._streamed or not event.item.arguments:
                return []
            self._streamed.add(index)
            return [self.chunk(index=index, arguments=event.item.arguments)]
        if kind == "response.created":
            self.model = _text(getattr(event.response, "model", None))
            self.response_id = _text(getattr(event.response, "id", None))
        elif kind in _LAST:
            self._done = True
            body = _body(event.response)
            self.usage = openai_usage(body.get("usage"))
            completion = self._ended(body)
            return [self.chunk(usage=completion.usage, finish_reason=completion.finish_reason)]
        elif kind == "error":
            raise UnreadableReply(
                "openai_responses: the stream must be one that did not fail, got an error "
                f"event ({getattr(event, 'code', None)}: {getattr(event, 'message', None)})."
            )
        return []

    def end(self) -> list[Chunk]:
        if not self._done:
            raise UnreadableReply(
                "openai_responses: the stream must be read to its response.completed event, "
                "got one that ended before it."
            )
        return []


def _reasoning_turn(body: dict[str, Any], stored: bool) -> list[dict[str, Any]]:
    """A turn's output items as the API wrote them, to send back with it, when it holds
    reasoning that can go back: with its encrypted content, or stored by OpenAI. Reasoning
    sent by an id that nothing stored would be refused, so then nothing is kept."""
    output = [item for item in body.get("output") or () if isinstance(item, dict)]
    reasoning = [item for item in output if item.get("type") == "reasoning"]
    if not reasoning or not all(stored or r.get("encrypted_content") for r in reasoning):
        return []
    return [item for item in output if item.get("type") in _ITEMS]


def _input(messages: Sequence[Message], carried: Carried) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content or "",
                }
            )
        elif message.role == "assistant":
            recorded = carried.get(message)
            if recorded is not None:
                items.extend(recorded)
                continue
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            items.extend(_call(c) for c in message.tool_calls)
        else:
            items.append({"role": message.role, "content": message.content or ""})
    return items


def _call(call: ToolCall) -> dict[str, Any]:
    if not call.id:
        raise ValueError(
            f"openai_responses: the id of the tool call to {call.name!r} must be a non-empty "
            f"str, got {call.id!r}; the Responses API pairs each tool result with its call by "
            "call_id."
        )
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments_text,
    }


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool as the Responses API takes it: flat, and strict only for a ``@tool(strict=True)``
    (the API makes a function strict when nothing is said, so every other says false)."""
    out: dict[str, Any] = {"type": "function", "name": schema["name"]}
    if "description" in schema:
        out["description"] = schema["description"]
    out["parameters"] = schema.get("parameters")
    out["strict"] = schema.get("strict") is True
    return out


def completion_from_responses(response: Any) -> Completion:
    """A ``Completion`` from a Responses API body (the JSON object, or the SDK's ``Response``):
    the text of its message items (a refusal as its text), its ``function_call`` items as tool
    calls with their ``call_id``s and JSON-string arguments as sent, its usage (cached input as
    cache reads, reasoning as part of the output; None when it cannot be read, so the call is
    billed at its worst case: see ``budgetloop.adapters._usage``), and the model, id and why it
    ended: ``length`` for a reply cut at ``max_output_tokens``, ``tool_call`` for calls, else
    ``stop``. Only a response that has ended is read: one whose status is ``completed`` or
    ``incomplete`` (or that gives none, as some compatible servers do). A ``failed``,
    ``cancelled``, ``queued`` or ``in_progress`` response, an output item other than a
    message, a function call or reasoning (``custom_tool_call``, a hosted tool's call), a
    message part other than text or a refusal, or a body not of this shape raises
    ``UnreadableReply`` (a ``ValueError``) naming what arrived, so the run ends as a
    ``model_error`` rather than take what it could not read for an empty answer; it carries
    the usage the body reports (read as above), and the call is billed at it, or at its worst
    case when there is none (the provider billed it: a background response keeps running and
    billing)."""
    with reading("openai_responses", lambda: None):  # not an object: no usage to read
        body = _body(response)
    with reading("openai_responses", lambda: openai_usage(body.get("usage"))):
        return _completion(body)


def _completion(body: dict[str, Any]) -> Completion:
    status = body.get("status")
    if status == "failed":
        error = body.get("error")
        said = (
            f"{error.get('code')}: {error.get('message')}"
            if isinstance(error, dict)
            else "no error given"
        )
        raise UnreadableReply(
            f"openai_responses: the response must be one that did not fail, got status "
            f"'failed' ({said})."
        )
    if status is not None and status not in _ENDED:
        raise UnreadableReply(
            "openai_responses: the response's status must be 'completed' or 'incomplete' (a "
            f"response that has ended), got {_said(status)}."
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, item in enumerate(_list(body, "output", "the response")):
        kind = _kind(item, f"output[{i}]", _ITEMS)
        if kind == "function_call":
            where = f"output[{i}]"
            calls.append(
                ToolCall(
                    _str(item, "name", where), _str(item, "arguments", where),
                    _str(item, "call_id", where),
                )
            )  # fmt: skip
        elif kind == "message":
            for j, part in enumerate(_list(item, "content", f"output[{i}]")):
                part_kind = _kind(part, f"output[{i}].content[{j}]", _PARTS)
                if part_kind == "output_text":
                    texts.append(_str(part, "text", f"output[{i}].content"))
                elif part_kind == "refusal":
                    texts.append(_str(part, "refusal", f"output[{i}].content"))
    if status == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = _INCOMPLETE.get(reason, reason) if isinstance(reason, str) else "incomplete"
    else:
        finish = "tool_call" if calls else "stop"
    return Completion(
        text="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=openai_usage(body.get("usage")),
        model=_text(body.get("model")),
        response_id=_text(body.get("id")),
        finish_reason=finish,
    )


def _body(response: Any) -> dict[str, Any]:
    if isinstance(response, dict):
        return response
    to_dict = getattr(response, "to_dict", None)  # the SDK's Response
    if callable(to_dict):
        body = to_dict()
        if isinstance(body, dict):
            return body
    raise UnreadableReply(
        f"openai_responses: the response must be a JSON object, got {type_name(response)}."
    )


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnreadableReply(
            f"openai_responses: {where}.{key} must be a list, got {type_name(value)}."
        )
    return value


def _str(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise UnreadableReply(
            f"openai_responses: {where}.{key} must be a string, got {type_name(value)}."
        )
    return value


def _kind(item: Any, where: str, known: tuple[str, ...]) -> str:
    """The type of an output item or message part, when it is one the adapter reads."""
    if not isinstance(item, dict):
        raise UnreadableReply(
            f"openai_responses: {where} must be a JSON object, got {type_name(item)}."
        )
    kind = item.get("type")
    if kind not in known:
        raise UnreadableReply(
            f"openai_responses: {where}.type must be one of {', '.join(map(repr, known))}, "
            f"got {_said(kind)}."
        )
    return str(kind)


def _said(value: Any) -> str:
    """A value that arrived where a name was expected: the text itself, else its type."""
    return repr(value) if isinstance(value, str) else type_name(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
