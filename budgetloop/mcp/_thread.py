"""An event loop on a thread of its own, where an MCP client lives.

The MCP client is async and bound to the loop it was opened on. Keeping that loop on its own
thread lets every caller reach it the same way: the sync ``run()`` from the batch's threads
(``call`` blocks that thread only), ``arun()`` from its own loop (``wait`` awaits without
blocking it), both by ``asyncio.run_coroutine_threadsafe``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A running event loop on a daemon thread; ``stop()`` cancels what is left and ends it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop; cancelling the future cancels it there."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro``'s value, from a thread that is not the loop's (it blocks that thread)."""
        return self.submit(coro).result()

    async def wait(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro``'s value, awaited from another event loop; cancelling this cancels it."""
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self) -> None:
        """End the loop (what still runs on it is cancelled) and wait for its thread."""
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in between
            return
        if threading.current_thread() is not self._thread:
            self._thread.join()
