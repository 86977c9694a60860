"""Support for the ledger tests: a real redis-server on a free loopback port, ledgers of each
kind by name, and a worker process (``python -m tests.ledger_support ...``) that spends through
a ledger it opens itself, as another process on the machine would."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from budgetloop.ledger import Ledger, MemoryLedger, RedisLedger, SqliteLedger

NO_REDIS = (
    "\n*** redis-server is not installed and could not be: the RedisLedger tests are SKIPPED. "
    "Install it (apt-get install redis-server; .ci/run does) to run them. ***\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A redis-server of our own (no persistence, files in a temp dir); yields its URL, or None
    when there is no redis-server binary."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    import redis

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp, "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        url = f"redis://127.0.0.1:{port}/0"
        try:
            client = redis.Redis.from_url(url)
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError(f"redis-server on port {port} did not start") from None
                    time.sleep(0.01)
            client.close()
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def open_ledger(spec: dict[str, Any], **options: Any) -> Ledger:
    """A ledger from ``{"kind": ..., "limit": ..., "path"/"url"/"key": ...}``."""
    kind, limit = spec["kind"], spec["limit"]
    if kind == "memory":
        return MemoryLedger(limit, **options)
    if kind == "sqlite":
        return SqliteLedger(spec["path"], limit, **options)
    return RedisLedger(spec["url"], limit, key=spec["key"], **options)


def worker(spec: dict[str, Any], mode: str) -> None:
    """``spend``: reserve and settle ``spec["amount"]`` until refused ``spec["refusals"]`` times,
    printing each settled amount in picodollars. ``hold``: reserve once, print the lease end,
    then sleep until killed."""
    ledger = open_ledger(spec, lease_seconds=spec.get("lease", 600.0))
    if mode == "hold":
        reservation = ledger.reserve(spec["amount"])
        print(json.dumps({"expires": None if reservation is None else reservation.expires}))
        sys.stdout.flush()
        time.sleep(600)
        return
    settled = []
    refusals = 0
    while refusals < spec["refusals"]:
        reservation = ledger._reserve_pico(spec["pico"])
        if reservation is None:
            refusals += 1
            continue
        actual = spec["pico"] - (len(settled) % 3)  # honest: at most what was reserved
        reservation._settle_pico(actual)
        settled.append(actual)
    print(json.dumps({"settled": settled}))


def start_worker(spec: dict[str, Any], mode: str) -> subprocess.Popen[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ledger_support", mode, json.dumps(spec)],
        stdout=subprocess.PIPE, text=True, cwd=root, env=env,
    )  # fmt: skip


if __name__ == "__main__":
    worker(json.loads(sys.argv[2]), sys.argv[1])
