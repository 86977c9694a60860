"""``Session``: the loop with the ``while`` taken out, driven one turn at a time.

The model and the tools run on the calling thread, or on other threads when there is a
deadline to keep, an ``async def`` model to run on a loop of its own, or several calls in one
batch to overlap. With a deadline the model call, and each tool batch, is handed to the
session's own thread (one wake-up each way) while this thread waits until the deadline.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from ._dispatch import describe
from ._loop import Loop, Turn, as_reply
from ._pool import Slots
from ._trace import Result, Step
from ._tracebacks import own_traceback
from ._turn import ModelCall, Reply

Until = Callable[["Session"], bool]


class Session(Loop):
    """One run, advanced a turn at a time with ``step()``. Build it with ``start(...)``."""

    def run(self, until: Until | None = None) -> Result:
        """Step until the run stops, and return the result.

        ``until(session)`` is checked after every step; when it returns True the run pauses
        (``done`` stays False) and the next ``run()`` or ``step()`` goes on from there.
        """
        while not self.done:
            self.step()
            if until is not None and not self.done and until(self):
                break
        return self.result

    def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it."""
        if self.done:
            return None
        started = self._begin()
        try:
            step = self._drive(self._turn(started))
        finally:
            self._end(started)
        if self.options.on_step is not None:
            self.options.on_step(self, step)
        return step

    def _drive(self, turn: Turn) -> Step | None:
        """Do what the turn asks, send back the outcome, until it returns its step."""
        try:
            request = next(turn)
            while True:
                try:
                    if isinstance(request, ModelCall):
                        outcome: Any = self._call_model(request)
                    else:
                        outcome = self._dispatch.run_batch(request.calls, request.timeout)
                except BaseException as exc:  # the turn records what it knows, and re-raises
                    request = turn.throw(exc)
                else:
                    request = turn.send(outcome)
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            turn.close()

    # -- the model, on this thread or a worker ----------------------------------------------------

    def _call_model(self, request: ModelCall) -> Reply:
        try:
            if request.timeout is None and not self._async_model:
                value = self.complete(request.messages, request.tools)
            else:
                slots = Slots(1)
                self._workers.hand(self._call_on_worker, slots, request)
                if not slots.wait(request.timeout):
                    return abandoned()
                value, failure = slots.values[0]
                if failure is not None:
                    raise failure
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return Reply(None, describe(exc), traceback=own_traceback(exc))
        return as_reply(value)

    def _call_on_worker(self, slots: Slots, request: ModelCall) -> None:
        """The model call on the session's own thread: (value, None) or (None, what it raised)
        into ``slots``."""
        try:
            value = self.complete(request.messages, request.tools)
            if inspect.isawaitable(value):  # an async model, on a loop of this thread's own
                value = asyncio.run(_awaited(value))
        except BaseException as exc:  # handed to the waiting side, which decides
            slots.put(0, (None, exc))
        else:
            slots.put(0, (value, None))


def abandoned() -> Reply:
    """The reply for a model call still running when ``max_seconds`` passed."""
    return Reply(
        None, "TimeoutError: the model call was still running when max_seconds passed", True
    )


async def _awaited(value: Any) -> Any:
    return await value
