"""What a shared ledger costs: reserve + settle per call for each ledger, runs per second
through ``run_many`` at concurrency 1, 8 and 32 with and without a ledger, and runs per second
through one ``RedisLedger`` from 1, 2 and 4 worker processes (``run_many(executor=...)`` on a
``ProcessPoolExecutor``); the ratios are between figures of one run.

    python benchmarks/bench_ledger.py            # the table (a few minutes on 2 busy cores)
    python benchmarks/bench_ledger.py --quick    # a smoke run: same code paths, few repeats

The Redis row starts its own redis-server on a free loopback port (no persistence) and is left
out, saying so, when there is no redis-server or no redis-py. Every figure is a median of
repeats; the with/without runs alternate, so a noisy neighbour slows both and the ratio stands.
"""

from __future__ import annotations

import argparse
import inspect
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from budgetloop import Completion, MemoryLedger, Price, SqliteLedger, ToolCall, Usage, run_many
from budgetloop import start as start_run
from budgetloop.ledger import Ledger, RedisLedger

now = time.perf_counter


@contextmanager
def redis_url() -> Iterator[str | None]:
    binary = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        redis = None  # type: ignore[assignment]
    if binary is None or redis is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            client = redis.Redis(port=port)
            for _ in range(500):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.01)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait()


def per_call_us(ledger: Ledger, calls: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = now()
        for _ in range(calls):
            r = ledger._reserve_pico(1000)
            if r is None:
                raise RuntimeError("benchmark workload broke: the ledger refused")
            r._settle_pico(900)
        times.append((now() - t) / calls)
    return statistics.median(times) * 1e6


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def model(messages: list[Any], tools: list[dict[str, Any]]) -> Completion:
    """Two tool turns, then an answer; stateless, so runs can share it."""
    turns = sum(1 for m in messages if m.role == "tool")
    if turns < 2:
        return Completion(tool_calls=[ToolCall("echo", {"text": f"t{turns}"})], usage=Usage(50, 5))
    return Completion(text="done", usage=Usage(60, 5))


model.price = Price(1.0, 2.0)  # type: ignore[attr-defined]
model.max_output_tokens = 10  # type: ignore[attr-defined]


def runs_per_second(runs: int, concurrency: int, options: dict[str, Any]) -> float:
    t = now()
    results = run_many(
        model, ["go"] * runs, concurrency=concurrency, progress=False, tools=[echo], **options
    )
    if any(not r.answered for r in results):
        raise RuntimeError(f"benchmark workload broke: {results[0].stop}")
    return runs / (now() - t)


def processes_table(url: str | None, runs: int, repeats: int) -> None:
    """Runs per second through one RedisLedger, each run a task in a worker process."""
    print(f"\nrun_many on worker processes, {runs} runs of 3 turns through one RedisLedger")
    if url is None:
        print("  not measured: no redis-server or no redis-py here")
        return
    if "executor" not in inspect.signature(run_many).parameters:
        print("  (this budgetloop's run_many takes no executor= yet)")
        return
    counts = (1, 2, 4)
    pools = {n: ProcessPoolExecutor(n) for n in counts}
    try:
        for n, pool in pools.items():  # the processes start before anything is timed
            list(pool.map(abs, range(n * 4)))
        rates: dict[int, list[float]] = {n: [] for n in counts}
        for repeat in range(repeats):  # alternating, so a noisy neighbour slows every row
            for n, pool in pools.items():
                ledger = RedisLedger(url, 1e5, key=f"bench-processes-{n}-{repeat}")
                options = {"ledger": ledger, "executor": pool}
                rates[n].append(runs_per_second(runs, 2 * n, options))
        one = statistics.median(rates[1])
        for n in counts:
            rate = statistics.median(rates[n])
            print(f"  {n} worker process{'es' if n > 1 else '  '}: {rate:8.0f} runs/s"
                  f"  ratio to 1 process {rate / one:.2f}")  # fmt: skip
    finally:
        for pool in pools.values():
            pool.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    calls, repeats, runs = (200, 3, 64) if quick else (2000, 7, 400)

    print("reserve + settle, one call, median of repeats")
    with tempfile.TemporaryDirectory() as tmp, redis_url() as url:
        ledgers: list[tuple[str, Callable[[], Ledger] | None]] = [
            ("MemoryLedger", lambda: MemoryLedger(1e5)),
            ("SqliteLedger", lambda: SqliteLedger(Path(tmp) / "bench.db", 1e5)),
            (
                "SqliteLedger(durable=False)",
                lambda: SqliteLedger(Path(tmp) / "fast.db", 1e5, durable=False),
            ),
            ("RedisLedger", None if url is None else lambda: RedisLedger(url, 1e5, key="bench")),
        ]
        for name, make in ledgers:
            if make is None:
                print(f"  {name:<28} not measured: no redis-server or no redis-py here")
                continue
            print(f"  {name:<28} {per_call_us(make(), calls, repeats):10.1f} us")
        processes_table(url, runs, repeats)

    has_ledger = "ledger" in inspect.signature(start_run).parameters
    print(f"\nrun_many, {runs} runs of 3 turns, runs per second (median of {repeats})")
    if not has_ledger:
        print("  (this budgetloop's run() takes no ledger= yet: only the runs without one)")
    for concurrency in (1, 8, 32):
        bare, shared = [], []
        for _ in range(repeats):
            bare.append(runs_per_second(runs, concurrency, {}))
            if has_ledger:
                ledger = MemoryLedger(1e5)
                shared.append(runs_per_second(runs, concurrency, {"ledger": ledger}))
        row = f"  concurrency {concurrency:>2}: {statistics.median(bare):8.0f} without"
        if shared:
            with_ = statistics.median(shared)
            row += (
                f" {with_:8.0f} with a MemoryLedger  ratio {with_ / statistics.median(bare):.2f}"
            )
        print(row)


if __name__ == "__main__":
    main()
