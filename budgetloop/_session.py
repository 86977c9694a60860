"""``Session``: the loop with the ``while`` taken out, driven one turn at a time.

``run()`` is ``start(...).run()``. The model and the tools run on this thread, or on worker
threads when there is a deadline to keep or an ``async def`` to run on a loop of its own.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ._dispatch import describe
from ._loop import ABANDONED_MODEL, Loop, ModelCall, as_completion
from ._trace import Result, Step
from ._types import Completion


class Session(Loop):
    """One run, advanced a turn at a time with ``step()``. Build it with ``start(...)``."""

    def run(self) -> Result:
        """Step until the run stops, and return the result."""
        while not self.done:
            self.step()
        return self.result

    def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it."""
        if self.done:
            return None
        started = self._begin()
        try:
            turn = self._turn(started)
            request = next(turn)
            while True:
                if isinstance(request, ModelCall):
                    request = turn.send(self._call_model(request))
                else:
                    request = turn.send(
                        self._dispatch.run_batch(request.calls, request.parsed, request.timeout)
                    )
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            self._end(started)

    # -- the model, on this thread or a worker ----------------------------------------------------

    def _call_model(self, request: ModelCall) -> tuple[Completion | None, str | None]:
        try:
            if request.timeout is None and not self._async_model:
                value = self.complete(request.messages, request.tools)
            else:
                future = self._workers.submit(self._call_on_worker, request)
                try:
                    value = future.result(timeout=request.timeout)
                except FutureTimeout:
                    return None, ABANDONED_MODEL
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return None, describe(exc)
        return as_completion(value)

    def _call_on_worker(self, request: ModelCall) -> Any:
        value = self.complete(request.messages, request.tools)
        if inspect.isawaitable(value):  # an async model, on a loop of this thread's own
            value = asyncio.run(_awaited(value))
        return value


async def _awaited(value: Any) -> Any:
    return await value
