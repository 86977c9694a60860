"""A streamed reply put together: a model may return an iterator of ``Chunk`` (an async
iterator under ``arun``) instead of a ``Completion``, and every driver reads it through one
``Stream``, which makes the ``Completion`` the unstreamed model would have returned.

A ``Stream`` checks between chunks whether the reply must end there: the deadline
(``max_seconds``) passed, or a person interrupted the run. Then it is cut: the text and call
pieces received so far make the step's reply, its ``finish_reason`` is ``"cut"``, and nothing
more is read. A driver that waits for the reply on another thread cuts it from there
(``cut``), and the thread reading it stops at its next chunk. A stream that raises, or yields
something that is not a ``Chunk``, ends the run as a model error with the text received kept.
Each piece of text and each piece of a call goes through ``on_piece`` as it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from typing import Any

from .._rules._money import raised
from ._turn import Reply
from ._types import Chunk, Completion, Stop, ToolCall, Usage
from ._valid import type_name

CUT = "cut"  # the finish_reason of a reply cut before it ended
# Called with each chunk that carries a piece of text or of a tool call, as it arrives (on the
# thread that reads the stream), before the next chunk is read.
OnPiece = Callable[[Chunk], None]


def streams(value: Any) -> bool:
    """Whether a model's return value is a stream of chunks (sync or async iterator)."""
    return hasattr(value, "__next__") or hasattr(value, "__anext__")


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []


class Stream:
    """One streamed reply as it arrives: its pieces, when the first came, and whether it is
    cut. ``clock`` is the run's; ``origin`` is when the step's time is counted from (the
    first chunk's seconds are since then); ``deadline`` is the clock's reading at which
    ``max_seconds`` passes (None: no deadline); ``interrupt`` is set by ``interrupt()``."""

    __slots__ = (
        "_calls",
        "_clock",
        "_deadline",
        "_interrupt",
        "_lock",
        "_on_piece",
        "_origin",
        "_texts",
        "count",
        "cut_by",
        "finish_reason",
        "first",
        "model",
        "response_id",
        "usage",
    )

    def __init__(
        self,
        clock: Callable[[], float],
        origin: float,
        deadline: float | None,
        interrupt: threading.Event,
        on_piece: OnPiece | None = None,
    ) -> None:
        self._clock, self._origin, self._deadline = clock, origin, deadline
        self._interrupt, self._on_piece = interrupt, on_piece
        self._lock = threading.Lock()
        self._texts: list[str] = []
        self._calls: dict[int, _Call] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.response_id: str | None = None
        self.first: float | None = None  # seconds from the step's origin to the first chunk
        self.count = 0  # the items read
        self.cut_by: Stop | None = None  # why the reply was cut (None: not cut)

    # -- reading it ---------------------------------------------------------------------------

    def read(self, items: Iterator[Any]) -> Reply:
        """Read a sync stream to its end, or until it is cut; the reply it makes."""
        try:
            for item in items:
                if not self._took(item):
                    break
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the stream broke off: a model error, the text kept
            return self.broke(exc)
        finally:
            _close(items)
        return self.reply()

    async def aread(self, items: AsyncIterator[Any]) -> Reply:
        """Read an async stream to its end, or until it is cut; the reply it makes."""
        try:
            async for item in items:
                if not self._took(item):
                    break
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the stream broke off (a cancel goes on: the caller's)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return self.broke(exc)
        finally:
            closing = getattr(items, "aclose", None)
            if callable(closing):
                with contextlib.suppress(Exception):  # the reply is what arrived
                    await closing()
        return self.reply()

    def _took(self, item: Any) -> bool:
        """One item arrived: kept, unless the reply ends before it (False: read no more)."""
        now = self._clock()
        with self._lock:
            if self.cut_by is not None:  # cut from the waiting thread
                return False
            if self._interrupt.is_set():
                self.cut_by = Stop.INTERRUPTED
                return False
            if self._deadline is not None and now >= self._deadline:
                self.cut_by = Stop.MAX_SECONDS
                return False
            if self.first is None:
                self.first = max(0.0, now - self._origin)
            self.count += 1
            if type(item) is not Chunk:
                raise TypeError(
                    f"the model's stream: item {self.count} must be a Chunk, got "
                    f"{type_name(item)}."
                )
            self._add(item)
        return True

    def _add(self, chunk: Chunk) -> None:
        if chunk.text:
            self._texts.append(chunk.text)
        index = chunk.index
        if index is not None:
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = _Call()
            if chunk.id is not None:
                call.id = chunk.id
            if chunk.name is not None:
                call.name = chunk.name
            if chunk.arguments:
                call.arguments.append(chunk.arguments)
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.model is not None:
            self.model = chunk.model
        if chunk.response_id is not None:
            self.response_id = chunk.response_id
        if self._on_piece is not None and (chunk.text or index is not None):
            self._on_piece(chunk)

    # -- what it makes ------------------------------------------------------------------------

    def cut(self, stop: Stop) -> Reply:
        """Cut from another thread (the deadline's): the reply as received so far; the thread
        reading the stream reads no more."""
        with self._lock:
            if self.cut_by is None:
                self.cut_by = stop
            return self.reply()

    def completion(self) -> Completion:
        """The completion the chunks received so far make (``finish_reason`` ``"cut"`` when
        it was cut)."""
        calls = tuple(
            ToolCall(call.name or "", "".join(call.arguments), call.id)
            for _, call in sorted(self._calls.items())
        )
        return Completion(
            text="".join(self._texts) if self._texts else None,
            tool_calls=calls,
            usage=self.usage,
            model=self.model,
            response_id=self.response_id,
            finish_reason=CUT if self.cut_by is not None else self.finish_reason,
        )

    def reply(self) -> Reply:
        return Reply(self.completion(), cut=self.cut_by, first_chunk=self.first)

    def broke(self, exc: BaseException) -> Reply:
        """The stream raised ``exc``: a model error, billed by what arrived (its final usage,
        else the projection), its text kept."""
        reply, reported = raised(exc), None
        with self._lock:
            reply.unread, reported = self.completion(), reply.unread
        if reported is not None:  # an ``UnreadableReply``: what it reported bills the call
            usage = reported.usage or reply.unread.usage
            reply.unread = replace(reply.unread, usage=usage, cost_usd=reported.cost_usd)
        reply.first_chunk = self.first
        return reply


def _close(items: Iterator[Any]) -> None:
    """A generator left before its end is closed, so its ``finally`` runs now."""
    closing = getattr(items, "close", None)
    if callable(closing):
        with contextlib.suppress(Exception):  # the reply is what arrived
            closing()
