"""Daemon worker threads for a session's tool batches and deadline-bound model calls.

A hung tool cannot be killed, only abandoned; on daemon threads an abandoned call never holds
the interpreter at exit, which the standard ThreadPoolExecutor's workers would.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = None


class Workers:
    """Threads started on demand up to ``limit``, reused across batches, ended by ``close()``."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = 0
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            elif self.limit is None or self._threads < self.limit:
                self._threads += 1
                threading.Thread(target=self._work, daemon=True, name="budgetloop-worker").start()
        self._tasks.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is _STOP:
                return
            future, fn, args = task
            if not future.set_running_or_notify_cancel():
                continue  # taken back by ``cancel``, which counted this worker idle again
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the waiting side, which decides
                future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def cancel(self, future: Future[Any]) -> bool:
        """Take back a task no worker has started; its worker is free again at once."""
        if not future.cancel():
            return False
        with self._lock:
            self._idle += 1
        return True

    def close(self) -> None:
        """Let every worker finish what it is running and end."""
        with self._lock:
            count, self._threads, self._idle = self._threads, 0, 0
        for _ in range(count):
            self._tasks.put(_STOP)
