"""``AsyncSession``: the same turn as ``Session``, with the model and async tools awaited.

The deadline cancels what is in flight. Cancelling the task that runs a step before its model
call returns leaves the trace as it was; after it, the step is recorded with its money and its
unfinished calls marked, as for ``Session``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from .._rules._money import raised
from .._tools._approval import aask
from .._trace._result import Result, Step
from ._loop import Loop
from ._options import is_async
from ._session import abandoned
from ._turn import Batch, BatchDone, Decided, Hold, ModelCall, Reply, as_reply
from ._turning import Turn
from ._valid import must, type_name

AsyncUntil = Callable[["AsyncSession"], bool]


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
        try:
            step = await self._drive(self._turn(started))
        finally:
            self._end()
        self._stepped(step)
        return step

    async def _drive(self, turn: Turn) -> Step | None:
        """Do what the turn asks (each request by its entry in ``_answers``), send back the
        outcome, until it returns its step."""
        answers = self._answers
        try:
            request = next(turn)
            while True:
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
        return as_reply(value)

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
