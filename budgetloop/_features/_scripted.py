"""``ScriptedModel``: a model that plays back completions, for tests, examples and notebooks."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, overload

from .._engine._types import Chunk, Completion, Message, Price, Usage
from .._engine._valid import type_name
from .._rules._budget import (
    REQUEST_OVERHEAD,
    CountTokens,
    estimate_message,
    estimate_text,
    estimate_tokens,
    estimate_tools,
)
from .._trace._journal import Trace, as_result
from .._trace._result import Request
from ._recorded import billed_error, completion_of, played_error

Scripted = Completion | str | Callable[[list[Message], list[dict[str, Any]]], Completion]
_ENTRY = "a Completion, a str or a function (messages, tools) -> Completion"


class ScriptedModel:
    """Plays back ``script`` one completion per call and records every request.

    Each entry is a ``Completion``, a str (a text answer) or a callable
    ``(messages, tools) -> Completion``. An entry without ``usage`` is given counted usage: its
    input is the request counted with ``count_tokens`` (the loop's default estimate,
    ``estimate_tokens``, unless given), so usage grows with the context as a real model's does;
    its output is the completion counted the same way, at most the ``max_output_tokens`` the
    request asks for (its own when a call gives none); with
    ``count_usage=False`` it is played back without usage, as from a model that reports none.
    The default estimate is counted for the new messages only (the request's earlier messages
    were counted on an earlier call), so a run of 10,000 steps is as quick to play as any
    other; a ``count_tokens`` of your own counts each whole request. With ``repeat_last`` the
    last entry plays forever (a runaway model); otherwise a call past the end raises
    ``IndexError``. ``delay`` makes each call take that many seconds (a slow model, to pause in
    a notebook).

    With ``stream=True`` each call returns an iterator of ``Chunk`` instead, as a streaming
    model does: the reply's text in pieces of ``chunk_chars`` characters, then each tool call's
    arguments (as JSON text) in pieces of as many, its first piece carrying its id and name,
    and last a chunk with the usage, the ``finish_reason``, the ``model`` and the
    ``response_id``; ``chunk_seconds`` apart (``time.sleep``; ``delay`` comes before the
    first). The loop puts the same completion together, so the run's trace is the unstreamed
    one's, its timings aside; but a chunk carries no ``cost_usd`` (the usage is priced
    instead), arguments given as a dict arrive as their JSON text, and an empty text as none.

    ``price`` and ``max_output_tokens`` are read by ``run()`` when it is not given them.
    ``ScriptedModel.from_trace(trace)`` plays back a saved run.

    It pickles with the standard ``pickle`` (so ``run_many(..., executor=...)`` can send it to
    worker processes) when its entries and ``count_tokens`` do: a copy goes on from where this
    one was, and records its own requests.
    """

    def __init__(
        self,
        script: Sequence[Scripted],
        *,
        price: Price | None = None,
        max_output_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
        repeat_last: bool = False,
        count_usage: bool = True,
        delay: float = 0.0,
        stream: bool = False,
        chunk_chars: int = 8,
        chunk_seconds: float = 0.0,
    ) -> None:
        if isinstance(script, (str, bytes, Mapping)) or not isinstance(script, Iterable):
            raise TypeError(
                f"ScriptedModel: script must be a list of entries (each {_ENTRY}), got "
                f"{type_name(script)}."
            )
        self.script = list(script)
        for i, entry in enumerate(self.script):
            if not (isinstance(entry, (str, Completion)) or callable(entry)):
                raise TypeError(
                    f"ScriptedModel: script[{i}] must be {_ENTRY}, got {type_name(entry)}."
                )
        if repeat_last and not self.script:
            raise ValueError(
                "ScriptedModel: script must be at least one entry when repeat_last=True (the "
                "entry to repeat), got none."
            )
        self.delay = _seconds("delay", delay)
        if not isinstance(stream, bool):
            raise TypeError(f"ScriptedModel: stream must be a bool, got {type_name(stream)}.")
        if type(chunk_chars) is not int:
            raise TypeError(
                f"ScriptedModel: chunk_chars must be an int >= 1, got {type_name(chunk_chars)}."
            )
        if chunk_chars < 1:
            raise ValueError(f"ScriptedModel: chunk_chars must be an int >= 1, got {chunk_chars}.")
        self.stream = stream
        self.chunk_chars = chunk_chars
        self.chunk_seconds = _seconds("chunk_seconds", chunk_seconds)
        self.price = price
        self.max_output_tokens = max_output_tokens
        self.count_tokens: CountTokens = count_tokens or estimate_tokens
        self.repeat_last = repeat_last
        self.count_usage = count_usage
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._last: list[Message] = []  # the last request's messages, its tools and its context
        self._last_tools: tuple[dict[str, Any], ...] = ()
        self._last_context: Context | None = None
        self._tokens: list[int] = [0]  # the default estimate of each prefix of ``_last``
        self._past_end = "add entries or pass repeat_last=True"

    @classmethod
    def from_trace(cls, trace: Trace) -> ScriptedModel:
        """A model that plays back a saved run's completions, one per recorded step.

        ``trace`` is a ``Result``, ``Result.to_dict()`` data or a path ``load_trace`` reads.
        Each step plays back its text, its tool calls with their raw arguments and recorded
        ids, and its usage as reported (none where none was); its cost is reported where the
        model reported it, and otherwise left to the loop to derive as it did (usage at the
        run's price, or the projection), so a run at another price is re-priced. A step that
        was a model error raises an exception whose ``Type: message`` is the recorded error; one
        whose call was billed (a reply that could not be read, ``UnreadableReply``) raises it
        as an ``UnreadableReply`` with the recorded usage, so it is billed again as it was.
        The model carries the trace's ``price`` and ``max_output_tokens``. A call past the
        last recorded step raises ``IndexError``: what the model said next was never recorded.
        """
        result = as_result(trace, "ScriptedModel.from_trace")
        script: list[Scripted] = []
        for step in result.steps:
            if step.error is not None:
                billed = billed_error(step, result.price, "ScriptedModel.from_trace")
                script.append(_Raiser(step.error, billed))
            else:
                script.append(completion_of(step, result.price, "ScriptedModel.from_trace"))
        model = cls(
            script,
            price=result.price,
            max_output_tokens=result.max_output_tokens,
            count_usage=False,
        )
        stop = "was still going" if result.stop is None else f"stopped: {result.stop.value}"
        model._past_end = (
            f"the trace ends after {len(result.steps)} steps (the recorded run {stop}), so what "
            "the model said next was never recorded"
        )
        return model

    def reset(self) -> None:
        """Forget every request, so the script plays again from its first entry."""
        with self._lock:
            self.requests.clear()
            self._last, self._last_tools, self._last_context = [], (), None
            self._tokens = [0]

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:  # a lock belongs to its process: a copy makes its own
            return {
                name: list(value) if isinstance(value, list) else value
                for name, value in self.__dict__.items()
                if name != "_lock"
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """How many times the model has been called."""
        return len(self.requests)

    def __call__(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        max_output_tokens: int | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Completion | Iterator[Chunk]:
        """The next entry's completion (streamed in chunks with ``stream=True``).
        ``max_output_tokens`` (what the loop asks for: its turn's projection's) caps the
        counted usage's output, as a provider caps a reply; it and ``settings`` are recorded
        with the request."""
        asked = self.max_output_tokens if max_output_tokens is None else max_output_tokens
        with self._lock:
            index = len(self.requests)
            self.requests.append(self._record(messages, tools, asked, settings))
        if self.delay:
            time.sleep(self.delay)
        if index >= len(self.script) and not self.repeat_last:
            raise IndexError(
                f"ScriptedModel: each call must be one of the script's {len(self.script)} "
                f"entries, got call {index + 1}; {self._past_end}."
            )
        entry = self.script[min(index, len(self.script) - 1)]
        if isinstance(entry, str):
            completion = Completion(text=entry)
        elif isinstance(entry, Completion):
            completion = entry
        else:
            completion = entry(messages, tools)
            if not isinstance(completion, Completion):
                return completion  # let the loop report what a broken model returns
        if completion.usage is None and self.count_usage:
            usage = self._usage(messages, tools, completion, asked)
            completion = replace(completion, usage=usage)
        return self._chunks(completion) if self.stream else completion

    def _chunks(self, completion: Completion) -> Iterator[Chunk]:
        """``completion`` in chunks of ``chunk_chars`` characters, ``chunk_seconds`` apart."""
        n, pause = self.chunk_chars, self.chunk_seconds
        text = completion.text or ""
        pieces = [Chunk(text=text[i : i + n]) for i in range(0, len(text), n)]
        for index, call in enumerate(completion.tool_calls):
            arguments = call.arguments_text
            pieces.append(Chunk(index=index, id=call.id, name=call.name, arguments=arguments[:n]))
            pieces += [Chunk(index=index, arguments=arguments[i : i + n])
                       for i in range(n, len(arguments), n)]  # fmt: skip
        c = completion
        pieces.append(Chunk(usage=c.usage, finish_reason=c.finish_reason, model=c.model,
                            response_id=c.response_id))  # fmt: skip
        for i, chunk in enumerate(pieces):
            if i and pause:
                time.sleep(pause)
            yield chunk

    def _usage(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        completion: Completion,
        asked: int | None,
    ) -> Usage:
        out = estimate_text(completion.text or "")
        for call in completion.tool_calls:  # a malformed call is counted, not raised on
            name = call.name if isinstance(call.name, str) else repr(call.name)
            out += estimate_text(name) + estimate_text(call.arguments_text)
        if asked is not None:
            out = min(out, asked)
        return Usage(self._input_tokens(messages, tools), out)

    def _record(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        asked: int | None,
        settings: dict[str, Any] | None,
    ) -> Request:
        """The request as recorded, sharing what it has in common with the last one (the lock
        held). A loop's requests each begin with the last one's context, so only the messages
        past that are kept: a run of n steps is recorded in memory that grows with n, not n²."""
        last = self._last
        shared = len(last)
        if len(messages) < shared or messages[:shared] != last:  # not the last request grown
            shared = _common_prefix(messages, last)  # and what followed that is dropped
            del last[shared:], self._tokens[shared + 1 :]
        own = tuple(messages[shared:])
        last.extend(own)
        context = self._last_context = Context(self._last_context, shared, own)
        if tuple(tools) != self._last_tools:
            self._last_tools = tuple(tools)
        if not settings:
            return Request(context, self._last_tools, asked)
        return Request(context, self._last_tools, asked, dict(settings))

    def _input_tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """The request's input tokens. With the default estimate, only the messages past what
        it has in common with the last request are estimated (each prefix's count is kept)."""
        if self.count_tokens is not estimate_tokens:
            return self.count_tokens(messages, tools)
        with self._lock:
            if self._last == messages:  # still the last request recorded (compared in C)
                counts = self._tokens
                total = counts[-1]
                for message in messages[len(counts) - 1 :]:
                    total += estimate_message(message)
                    counts.append(total)
            else:  # another thread's request came between: count this one whole
                total = sum(estimate_message(message) for message in messages)
        return REQUEST_OVERHEAD + estimate_tools(tools) + total


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"ScriptedModel: {name} must be a number of seconds, got {type_name(value)}."
        )
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"ScriptedModel: {name} must be >= 0 seconds, got {value!r}.")
    return float(value)


def _common_prefix(messages: Sequence[Message], last: list[Message]) -> int:
    """How many of ``messages`` begin as ``last`` does, compared in C (by identity first).
    A loop's request is the last one grown (the whole of ``last`` shared) or the last one less
    the note the loop added at its end; anything else is found by a binary search."""
    if len(messages) >= len(last) and messages[: len(last)] == last:
        return len(last)
    m = min(len(last), len(messages))
    for k in (m, m - 1):
        if k >= 0 and messages[:k] == last[:k]:
            return k
    low, high = 0, m - 1  # the first ``low`` are shared, the first ``high`` are not
    while high - low > 1:
        middle = (low + high) // 2
        if messages[:middle] == last[:middle]:
            low = middle
        else:
            high = middle
    return low


class Context(Sequence[Message]):
    """The messages of one recorded request: the first ``shared`` of the request before it,
    then its own. Reads like the tuple it stands for (index, slice, iterate, compare)."""

    __slots__ = ("_len", "_own", "_parent", "_shared")

    def __init__(self, parent: Context | None, shared: int, own: tuple[Message, ...]) -> None:
        self._parent, self._shared, self._own = parent, shared, own
        self._len = shared + len(own)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = index + self._len if index < 0 else index
        if not 0 <= i < self._len:
            raise IndexError(f"Request.messages: index must be below {self._len}, got {index}.")
        node = self
        while i < node._shared:
            assert node._parent is not None
            node = node._parent
        return node._own[i - node._shared]

    def __iter__(self) -> Iterator[Message]:
        parts: list[tuple[Message, ...]] = []
        node: Context | None = self
        upto = self._len
        while node is not None and upto > 0:
            if upto > node._shared:
                parts.append(node._own[: upto - node._shared])
                upto = node._shared
            node = node._parent
        for part in reversed(parts):
            yield from part

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Context | tuple | list):
            return len(other) == self._len and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


class _Raiser:
    """A script entry that raises the recorded ``Type: message``, billed as it was (a class,
    so it pickles)."""

    def __init__(self, error: str, billed: Completion | None = None) -> None:
        self.error = error
        self.billed = billed

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise played_error(self.error, self.billed)
