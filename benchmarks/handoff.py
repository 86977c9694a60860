"""What one thread hand-off costs on this machine: the floor under a step with a deadline.

    python benchmarks/handoff.py

A task given to another thread and its result waited for, 20,000 times: through the session's
worker pool (``Workers.submit`` and a ``Future``), through a bare pair of locks (the least a
hand-off can cost in CPython), and called inline for scale. Medians of 3 runs, in one process.
On a virtual machine the figure depends on whether the other vCPU is idle (a wake-up there is
dear) or busy.
"""

from __future__ import annotations

import statistics
import threading
import time

from budgetloop._tools._pool import Workers

N = 20_000


def task(x: int) -> int:
    return x


def pooled() -> float:
    workers = Workers()
    started = time.perf_counter()
    for i in range(N):
        workers.submit(task, i).result(timeout=100)
    took = time.perf_counter() - started
    workers.close()
    return took / N


def lock_pair() -> float:
    go, done = threading.Lock(), threading.Lock()
    go.acquire()
    done.acquire()
    box: list[object] = [None]

    def work() -> None:
        while True:
            go.acquire()
            if box[0] is None:
                return
            done.release()

    threading.Thread(target=work, daemon=True).start()
    started = time.perf_counter()
    for i in range(N):
        box[0] = i
        go.release()
        done.acquire(timeout=100)
    took = time.perf_counter() - started
    box[0] = None
    go.release()
    return took / N


def inline() -> float:
    started = time.perf_counter()
    for i in range(N):
        task(i)
    return (time.perf_counter() - started) / N


def main() -> None:
    rows = {
        "Workers.submit + Future.result": pooled,
        "a pair of locks": lock_pair,
        "inline": inline,
    }
    for name, measure in rows.items():
        us = statistics.median(measure() for _ in range(3)) * 1e6
        print(f"{name:>32}: {us:6.2f} us a round trip")


if __name__ == "__main__":
    main()
