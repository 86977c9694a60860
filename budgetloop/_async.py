"""``AsyncSession``: the same turn as ``Session``, with the model and async tools awaited.

The deadline cancels what is in flight. Cancelling the task that runs a step leaves the trace
as it was after the previous step: a turn is committed whole or not at all.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._dispatch import describe
from ._loop import ABANDONED_MODEL, Loop, ModelCall, as_completion
from ._trace import Result, Step


class AsyncSession(Loop):
    """One run for an async model or async tools. Build it with ``astart(...)``."""

    async def run(self) -> Result:
        """Step until the run stops, and return the result."""
        while not self.done:
            await self.step()
        return self.result

    async def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it."""
        if self.done:
            return None
        started = self._begin()
        try:
            turn = self._turn(started)
            request = next(turn)
            while True:
                if isinstance(request, ModelCall):
                    request = turn.send(await self._call_model(request))
                else:
                    records = await self._dispatch.arun_batch(
                        request.calls, request.parsed, request.timeout
                    )
                    request = turn.send(records)
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            self._end(started)

    async def _call_model(self, request: ModelCall) -> tuple[Any, str | None]:
        if self._async_model:
            pending: Any = self.complete(request.messages, request.tools)
        else:
            submitted = self._workers.submit(self.complete, request.messages, request.tools)
            pending = asyncio.wrap_future(submitted)
        task = asyncio.ensure_future(pending)
        try:
            done, _ = await asyncio.wait({task}, timeout=request.timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            return None, ABANDONED_MODEL
        try:
            value = task.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return None, describe(exc)
        return as_completion(value)
