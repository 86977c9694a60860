"""``AsyncSession``: the same turn as ``Session``, with the model and async tools awaited.

The deadline cancels what is in flight. Cancelling the task that runs a step before its model
call returns leaves the trace as it was; after it, the step is recorded with its money and its
unfinished calls marked, as for ``Session``.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from .._rules._money import raised
from .._tools._approval import aask
from .._trace._result import Result, Step
from ._loop import Loop
from ._options import is_async
from ._session import abandoned
from ._stream import streams
from ._turn import Batch, BatchDone, Decided, Hold, ModelCall, Reply, as_reply, unsent
from ._turning import Turn
from ._types import Completion, Stop
from ._valid import must, type_name

AsyncUntil = Callable[["AsyncSession"], bool]
_POLL = 0.05  # how often a reply streaming is checked for interrupt() while it is awaited


class AsyncSession(Loop):
    """One run for an async model or async tools. Build it with ``astart(...)``."""

    async def run(self, until: AsyncUntil | None = None) -> Result:
        """Step until the run stops (or ``until(session)`` is True after a step: a pause)."""
        where = self._named("run")
        if until is not None and not callable(until):
            expected = "a function (session) -> bool"
            raise TypeError(must(where, "until", expected, type_name(until)))
        with self._stopping_before(until):
            while not self.done:
                await self._step(where)
                if self._held is not None:  # a batch waits for a person: the run pauses
                    break
                if until is not None and not self.done and until(self):
                    break
        return self.result

    async def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it."""
        return await self._step(self._named("step"))

    async def _step(self, where: str) -> Step | None:
        """``step()``, a refusal naming ``where``: the entry point the user called."""
        if self.done:
            return None
        started = self._begin(where)
        events = self._events
        if events is not None:
            events.interrupt = None  # one kept by a step that raised anyway is gone with it
        try:
            step = await self._drive(self._turn(started))
        finally:
            if events is None:
                self._end()
            else:  # the step's events, then the run's end (RunEnded) once it is over
                try:
                    await events.aflush()
                finally:
                    self._end()
                    await events.aflush()
        if events is not None and events.interrupt is not None:  # the step is recorded
            raise events.take()
        self._stepped(step)
        return step

    async def _drive(self, turn: Turn) -> Step | None:
        """Do what the turn asks (each request by its entry in ``_answers``), send back the
        outcome, until it returns its step. The events the turn put are handed to
        ``on_event`` (awaited) before each request is answered."""
        answers, events = self._answers, self._events
        try:
            request = next(turn)
            while True:
                if events is not None and await events.aflush():  # on_event interrupted it
                    request = turn.send(self._cut_by_event(request))
                    continue
                try:
                    outcome = await answers[type(request)](self, request)
                except BaseException as exc:  # the turn records what it knows, and re-raises
                    request = turn.throw(exc)
                else:
                    request = turn.send(outcome)
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            turn.close()

    async def _call_model(self, request: ModelCall) -> Reply:
        if self._interrupt.is_set():  # interrupt() came before it was sent: it is not
            return unsent()
        model = request.model or self.complete
        if self._async_model if request.model is None else is_async(model):
            pending: Any = model(request.messages, request.tools, **request.keywords)
        else:
            submitted = self._workers.submit(
                functools.partial(model, **request.keywords),
                request.messages,
                request.tools,
            )
            pending = asyncio.wrap_future(submitted)
        task = asyncio.ensure_future(pending)
        try:
            done, _ = await asyncio.wait({task}, timeout=request.timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            return abandoned()
        try:
            value = task.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return raised(exc)
        if isinstance(value, Completion):
            return Reply(value)
        if not streams(value):
            return as_reply(value)
        return await self._read(value, request)

    async def _read(self, value: Any, request: ModelCall) -> Reply:
        """A stream of chunks read to its end, or until it is cut: an async one on this
        loop, a sync one on the session's own thread. At the deadline it is cut here, and
        the reading stops at its next chunk."""
        stream = self._opened(request, kept=False)
        if hasattr(value, "__anext__"):
            pending: Any = stream.aread(value)
        else:
            pending = asyncio.wrap_future(self._workers.submit(stream.read, value))
        task = asyncio.ensure_future(pending)
        left = self._left(self._origin)
        end = None if left is None else time.monotonic() + left
        try:
            while True:  # until it is read, the deadline, or interrupt(), seen in slices
                wait = _POLL if end is None else min(end - time.monotonic(), _POLL)
                done, _ = await asyncio.wait({task}, timeout=max(wait, 0.0))
                if done:
                    read: Reply = task.result()
                    return read
                if end is not None and time.monotonic() >= end:
                    stop = Stop.MAX_SECONDS
                    break
                if self._interrupt.is_set():  # cut now, not at a next chunk that may not come
                    stop = Stop.INTERRUPTED
                    break
        except asyncio.CancelledError:
            stream.cut(Stop.INTERRUPTED)
            task.cancel()
            raise
        reply = stream.cut(stop)
        task.cancel()
        return reply

    async def _adecide(self, hold: Hold) -> Decided | None:
        """A held batch's decisions: ``approve`` asked about each call in turn (an ``async
        def`` one awaited), or None when there is no one to ask now."""
        approve = self.options.values["approve"]
        if approve is None or isinstance(approve, str) or not hold.ask:  # "hold": ends held
            return None
        began = self._clock()
        decisions = {call.id: await aask(approve, call) for call in hold.pending}
        return self._waited(decisions, began)

    async def _run_batch(self, request: Batch) -> BatchDone:
        return await self._dispatch.arun_batch(request.calls, request.timeout)

    # -- the table: what each request of a turn (``_turn.REQUESTS``) is awaited as ---------------

    _answers: ClassVar[Mapping[type, Callable[[AsyncSession, Any], Awaitable[Any]]]] = {
        ModelCall: _call_model,
        Hold: _adecide,
        Batch: _run_batch,
    }
