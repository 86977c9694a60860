"""``on_event=fn``: the one emitter of a run's events (``budgetloop.events``).

The loop puts events in order (``put``, and ``text`` and ``call`` for a reply's pieces); the
driver hands them to ``fn`` (``flush``, or ``aflush`` under ``arun``, where an ``async def`` fn
is awaited) before each request of a turn (a model call, a question for a person, a batch), and
once the step is over. So ``fn`` is called on the thread or task that drives the run, one event
at a time, never from a tool's worker thread, and in the order the loop put them.

Listeners added with ``session.on_event(listener)`` are handed each event after ``fn`` (the
run's own, when it has one), in the order they were added, as ``fn`` is.

``fn`` never stops the run: what it raises is kept in ``errors`` (``Result.event_errors``), as
``"<Event>: <Type>: <message>"`` through ``redact=``. A ``KeyboardInterrupt`` or ``SystemExit``
from it (or a cancelled task under ``arun``) is kept as ``interrupt``: no event reaches ``fn``
after it, and the driver raises it as soon as nothing is lost by it, before a model call (so
nothing is sent) or once the step is recorded (a batch not started yet is not started).

With ``redact=`` a reply's pieces are held back until the reply is whole (``whole``), then
handed out redacted: one ``TextDelta`` of its text, and one ``ToolCallDelta`` per call with its
arguments; a secret split over two pieces is never in either.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from .._forms._redact import WITHHELD, Redactor
from .._tools._dispatch import describe
from .._trace._result import Step
from ..events import Event, StepEnded, TextDelta, ToolCallDelta, ToolEnded, ToolStarted
from ._options import is_async
from ._turn import Call
from ._types import Chunk, ToolCall, arguments_text

OnEvent = Callable[[Event], Any]


class Emitter:
    """A run's events on their way to ``fn``, in order (the module's text says how)."""

    __slots__ = (
        "_calls",
        "_names",
        "_text",
        "errors",
        "fn",
        "fns",
        "interrupt",
        "live",
        "queue",
        "redactor",
        "started",
    )

    def __init__(self, fn: OnEvent | None, redactor: Redactor) -> None:
        self.fn = fn  # the run's ``on_event=`` (None: only listeners hear the events)
        # fn, then each listener, in the order added: a tuple replaced whole, so a flush on
        # the run's thread calls the ones it read while another thread adds or removes one
        self.fns: tuple[OnEvent, ...] = () if fn is None else (fn,)
        self.redactor = redactor  # with a redact function, a reply's pieces wait for ``whole``
        self.queue: deque[Event | Callable[[], Event]] = deque()  # a callable: made when handed
        self.errors: list[str] = []  # what fn raised, redacted
        self.interrupt: BaseException | None = None  # a KeyboardInterrupt from fn, to raise
        self.started: set[str] = set()  # the ids of the calls given a ToolStarted this step
        self._text: list[str] = []  # with redact: the reply's text so far
        self._calls: dict[int, tuple[str | None, list[str]]] = {}  # and its calls', by index
        self._names: dict[int, str] = {}  # a streamed reply's calls' names, as first given
        # a streamed reply's pieces reach fn as they arrive (else at the driver's next flush):
        # a plain function does; an ``async def`` one is awaited by the driver
        self.live = True
        self._heard()

    def listen(self, listener: OnEvent) -> None:
        """Hand every later event to ``listener`` too, after the ones added before it."""
        self.fns = (*self.fns, listener)
        self._heard()

    def unlisten(self, listener: OnEvent) -> None:
        """``listener`` hears no later event (it was added with ``listen``)."""
        kept = list(self.fns[self.fn is not None :])
        if listener in kept:
            kept.remove(listener)
        self.fns = (*self.fns[: self.fn is not None], *kept)
        self._heard()

    def _heard(self) -> None:
        self.live = not any(is_async(fn) for fn in self.fns)

    # -- what the loop puts -----------------------------------------------------------------------

    def put(self, event: Event | Callable[[], Event]) -> None:
        if self.interrupt is None:
            self.queue.append(event)

    def text(self, step: int, piece: str) -> None:
        """A piece of step ``step``'s reply text (held back until ``whole`` with ``redact=``)."""
        if not piece:
            return
        if self.redactor.fn is None:
            self.put(TextDelta(step, piece))
        else:
            self._text.append(piece)

    def call(self, step: int, index: int, name: str | None, fragment: str) -> None:
        """A piece of step ``step``'s tool call ``index``: its name when known (None when not,
        or not yet), and a fragment of its arguments' JSON text (held back until ``whole`` with
        ``redact=``)."""
        if self.redactor.fn is None:
            self.put(ToolCallDelta(step, index, name, fragment))
            return
        known, pieces = self._calls.get(index, (None, []))
        pieces.append(fragment)
        self._calls[index] = (known if name is None else name, pieces)

    def reply(self, step: int, text: str | None, calls: Sequence[ToolCall]) -> None:
        """A reply that did not stream: one piece for its text and one for each call."""
        if text:
            self.text(step, text)
        for index, call in enumerate(calls):
            name = call.name if isinstance(call.name, str) else None
            self.call(step, index, name, arguments_text(call.arguments))
        self.whole(step)

    def streamed(self, step: int, chunk: Chunk) -> None:
        """A chunk of a streamed reply that carries a piece: its text, or its piece of a call
        (named as an earlier piece of that call named it); handed to a plain ``fn`` at once,
        on the thread reading the stream (the driver waits for it meanwhile)."""
        if chunk.text:
            self.text(step, chunk.text)
        index = chunk.index
        if index is not None:
            names = self._names
            if chunk.name is not None:
                names[index] = chunk.name
            self.call(step, index, names.get(index), chunk.arguments)
        if self.live:
            self.flush()

    def whole(self, step: int) -> None:
        """Step ``step``'s reply is whole: with ``redact=``, its pieces, redacted, are put now
        (its text as one ``TextDelta``, then each call's arguments as one ``ToolCallDelta``)."""
        self._names.clear()
        if self.redactor.fn is None:
            return
        text, calls = "".join(self._text), sorted(self._calls.items())
        self._text, self._calls = [], {}
        if text:
            self.put(TextDelta(step, self._redacted(text)))
        for index, (name, pieces) in calls:
            shown = None if name is None else self._redacted(name)
            self.put(ToolCallDelta(step, index, shown, self._arguments("".join(pieces))))

    def tools_started(self, step: int, calls: Sequence[Call]) -> None:
        """A batch is handed over to run: a ``ToolStarted`` for each of its calls, in request
        order (they run at once, on threads; each ends in ``step_ended``)."""
        for call in calls:
            self.started.add(call.id)
            self.put(ToolStarted(step, self._redacted(call.id), self._redacted(call.name)))

    def step_ended(self, step: Step, traced: Step) -> None:
        """Step ``step`` is recorded (``traced``: as the trace keeps it): a ``ToolEnded`` for
        each call given a ``ToolStarted``, in request order, then ``StepEnded``."""
        started = self.started
        if started:
            for real, kept in zip(step.tool_calls, traced.tool_calls, strict=True):
                if real.id in started:
                    self.put(ToolEnded(step.index, kept))
            started.clear()
        self.put(StepEnded(traced))

    def _redacted(self, text: str) -> str:
        try:
            return self.redactor.text(text)
        except Exception:
            return WITHHELD
        except BaseException as exc:  # an interrupt in redact: withheld, raised by the driver
            self._interrupted(exc)
            return WITHHELD

    def _arguments(self, text: str) -> str:
        """Arguments' JSON text as the trace keeps a call's (``Redactor.arguments_text``)."""
        try:
            return self.redactor.arguments_text(text)
        except Exception:
            return WITHHELD
        except BaseException as exc:
            self._interrupted(exc)
            return WITHHELD

    # -- what the driver does ---------------------------------------------------------------------

    def flush(self) -> bool:
        """Hand every event put so far to ``fn``, in order, on this thread (an ``async def``
        fn run on a loop of its own); True when ``fn`` has interrupted the run."""
        queue = self.queue
        while queue and self.interrupt is None:
            event = self._made(queue.popleft())
            for fn in self.fns:
                try:
                    value = fn(event)
                    if inspect.isawaitable(value):
                        asyncio.run(_awaited(value))
                except Exception as exc:
                    self._failed(event, exc)
                except BaseException as exc:
                    self._interrupted(exc)
                    break
        return self.interrupt is not None

    async def aflush(self) -> bool:
        """``flush`` under ``arun``: an ``async def`` fn is awaited on the run's own loop."""
        queue = self.queue
        while queue and self.interrupt is None:
            event = self._made(queue.popleft())
            for fn in self.fns:
                try:
                    value = fn(event)
                    if inspect.isawaitable(value):
                        await value
                except Exception as exc:
                    self._failed(event, exc)
                except BaseException as exc:  # a KeyboardInterrupt, or the task cancelled
                    self._interrupted(exc)
                    break
        return self.interrupt is not None

    def take(self) -> BaseException:
        """The interrupt ``fn`` raised, for the driver to raise; events flow again after it."""
        interrupt = self.interrupt
        assert interrupt is not None
        self.interrupt = None
        return interrupt

    def _made(self, event: Event | Callable[[], Event]) -> Event:
        return event() if callable(event) else event

    def _failed(self, event: Event, exc: Exception) -> None:
        said = f"{type(event).__name__}: {describe(exc)}"
        self.errors.append(self._redacted(said))

    def _interrupted(self, exc: BaseException) -> None:
        if self.interrupt is None:
            self.interrupt = exc
        self.queue.clear()
        self._text, self._calls = [], {}


async def _awaited(value: Any) -> Any:
    return await value
