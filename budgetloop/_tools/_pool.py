"""Daemon threads for a session's tool batches and deadline-bound calls.

A hung tool cannot be killed, only abandoned; on daemon threads an abandoned call never holds
the interpreter at exit, which the standard ThreadPoolExecutor's workers would.

Two kinds of thread. A pool started on demand, where a batch's calls overlap: ``Workers.offer``
gives it a task that reports through what it is given (no ``Future``); ``Workers.submit`` gives
it a task whose result a ``Future`` carries (for an event loop to await). ``Workers.hand``
gives a task to the session's own thread, one task at a time, for work that must be abandoned
at a deadline (with ``max_seconds``, a whole step): the caller waits on what the task fills
(``Slots``, or a lock of the task's own), one wake-up each way and no ``Future``. A task whose
``Slots`` were not filled (abandoned) may still be running when the next is handed: that thread
is retired, to end when the task returns, and a new one takes over.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = None


class Slots:
    """Values that other threads put, awaited up to a deadline. After the deadline (or an
    interrupt while waiting) the slots are closed: a value put later is dropped."""

    def __init__(self, count: int) -> None:
        self.values: list[Any] = [None] * count
        self.begun: set[int] = set()  # the slots whose work began before the wait ended
        self._left = count
        self._lock = threading.Lock()
        self._full = threading.Lock()
        self._full.acquire()
        self.closed = False

    def put(self, index: int, value: Any) -> None:
        """Fill slot ``index`` (never None), unless the wait is over."""
        with self._lock:
            if self.closed:
                return
            self.values[index] = value
            self._left -= 1
            if self._left == 0:
                self._full.release()

    def begin(self, index: int) -> bool:
        """Whether slot ``index``'s work may start: not once the wait is over (then it never
        starts); if it may, it is counted as begun, so the deadline can tell it from one that
        never started."""
        with self._lock:
            if self.closed:
                return False
            self.begun.add(index)
            return True

    @property
    def filled(self) -> bool:
        return self._left == 0

    def filled_within(self, seconds: float) -> bool:
        """True if every slot is filled within ``seconds``; the slots stay open either way."""
        if not self._wait(seconds):
            return False
        self._full.release()  # for ``wait``, which takes it again at once
        return True

    def _wait(self, timeout: float | None) -> bool:
        try:
            if timeout is None:
                return self._full.acquire()
            return self._full.acquire(timeout=min(max(timeout, 0.0), threading.TIMEOUT_MAX))
        except BaseException:  # an interrupt while waiting: nothing more is taken
            with self._lock:
                self.closed = True
            raise

    def close(self) -> bool:
        """End the wait now: values put later are dropped, and a thread in ``wait`` returns.
        True if every slot was filled."""
        with self._lock:
            if not self.closed:
                self.closed = True
                if self._left:
                    self._full.release()  # wakes the waiter, which finds the slots not filled
            return self._left == 0

    def wait(self, timeout: float | None) -> bool:
        """True once every slot is filled; False if ``timeout`` seconds pass first, and then
        the slots are closed, with the values put so far kept."""
        if self._wait(timeout):
            return self._left == 0  # filled, or woken by ``close``
        with self._lock:
            self.closed = True
            return self._left == 0  # the last value arrived with the deadline


def _own_thread(tasks: queue.SimpleQueue[Any]) -> None:
    """The session's own thread: runs each task it is given, until told to stop."""
    while True:
        task = tasks.get()
        if task is _STOP:
            return
        fn, slots, args = task
        fn(slots, *args)  # it reports through its Slots, and never raises


class Workers:
    """Threads started on demand up to ``limit``, reused across batches, and the session's own
    thread; all ended by ``close()``."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = 0
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False  # offers are dropped from then on
        self._own: queue.SimpleQueue[Any] | None = None  # the session's own thread's tasks
        self._handed: Slots | None = None  # what the last task handed to it fills

    def hand(self, fn: Callable[..., None], slots: Slots, *args: Any) -> None:
        """Run ``fn(slots, *args)`` on the session's own thread; the caller waits on ``slots``.
        ``fn`` must not raise. If the last task handed there did not fill its slots (it was
        abandoned at a deadline, or its wait interrupted) that thread may still be in it: it is
        retired, to end when the task returns, and a new one takes this task."""
        own, last = self._own, self._handed
        if own is None or (last is not None and not last.filled):
            if own is not None:
                own.put(_STOP)
            own = self._own = queue.SimpleQueue()
            threading.Thread(
                target=_own_thread, args=(own,), daemon=True, name="budgetloop-session"
            ).start()
        self._handed = slots
        own.put((fn, slots, args))

    def offer(self, fn: Callable[..., None], *args: Any) -> None:
        """Give ``fn(*args)`` to a worker; ``fn`` must not raise (it reports through its
        arguments). Once the pool is closed an offer is dropped: a worker helping a batch may
        still offer after the run has ended, and no thread may be started then."""
        if self._engage(optional=True):
            self._tasks.put((None, fn, args))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Give ``fn(*args)`` to a worker; its result, or what it raised, in a ``Future``."""
        future: Future[Any] = Future()
        self._engage()
        self._tasks.put((future, fn, args))
        return future

    def _engage(self, optional: bool = False) -> bool:
        """Count an idle worker busy for the task about to be queued, or start one (up to
        ``limit``; past it the task waits for a worker to be free). False, for an ``optional``
        task, once the pool is closed."""
        with self._lock:
            if optional and self._closed:
                return False
            if self._idle > 0:
                self._idle -= 1
            elif self.limit is None or self._threads < self.limit:
                self._threads += 1
                threading.Thread(target=self._work, daemon=True, name="budgetloop-worker").start()
            return True

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is _STOP:
                return
            future, fn, args = task
            if future is None:  # offered
                fn(*args)
            elif future.set_running_or_notify_cancel():  # submitted (and not cancelled since)
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # handed to the waiting side, which decides
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """Let every thread finish what it is running and end."""
        with self._lock:
            count, self._threads, self._idle = self._threads, 0, 0
            self._closed = True
            own, self._own, self._handed = self._own, None, None
        for _ in range(count):
            self._tasks.put(_STOP)
        if own is not None:
            own.put(_STOP)
