"""The ledgers under load: threads and processes through one ledger never take settled spend
past the limit, and a SIGKILLed process's reservation is held until its lease ends, not after.
Also a property: any sequence of honest operations matches a plain reference model."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop.ledger import Ledger, MemoryLedger, Reservation, SqliteLedger
from tests.ledger_support import NO_REDIS, open_ledger, redis_server, start_worker
from tests.strategies import ledger_ops

LIMIT_PICO = 10**9  # $0.001
AMOUNT = 7_000_001


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str | None]:
    with redis_server() as url:
        yield url


def spec_for(kind: str, tmp_path: Path, redis_url: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": kind, "limit": LIMIT_PICO / 10**12}
    if kind == "sqlite":
        spec["path"] = str(tmp_path / "ledger.db")
    if kind == "redis":
        if redis_url is None:
            warnings.warn(NO_REDIS, stacklevel=1)
            pytest.skip(NO_REDIS)
        spec.update(url=redis_url, key=f"stress-{uuid.uuid4().hex}")
    return spec


def spend(ledger: Ledger, settled: list[int], rng: random.Random, errors: list[str]) -> None:
    refusals = 0
    while refusals < 20:
        reservation = ledger._reserve_pico(rng.randrange(1, AMOUNT))
        if reservation is None:
            refusals += 1
            continue
        seen = ledger.spent_pico() + ledger.reserved_pico()
        if seen > LIMIT_PICO:
            errors.append(f"spent + reserved = {seen} > {LIMIT_PICO}")
        if rng.random() < 0.1:
            reservation.release()
            continue
        actual = rng.randrange(0, reservation.pico + 1)
        reservation._settle_pico(actual)
        settled.append(actual)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_threads_never_settle_past_the_limit(
    kind: str, tmp_path: Path, redis_url: str | None
) -> None:
    spec = spec_for(kind, tmp_path, redis_url)
    ledger = open_ledger(spec)
    settled: list[int] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=spend, args=(ledger, settled, random.Random(i), errors))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ledger.spent_pico() == sum(settled) <= LIMIT_PICO
    assert ledger.reserved_pico() == 0
    assert len(settled) > 100  # the threads really did contend


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_processes_and_threads_never_settle_past_the_limit(
    kind: str, tmp_path: Path, redis_url: str | None
) -> None:
    spec = spec_for(kind, tmp_path, redis_url)
    ledger = open_ledger(spec)  # creates the schema before the workers race for it
    workers = [start_worker({**spec, "pico": AMOUNT, "refusals": 30}, "spend") for _ in range(3)]
    settled: list[int] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=spend, args=(ledger, settled, random.Random(i), errors))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        settled.extend(json.loads(out)["settled"])
    assert errors == []
    assert ledger.spent_pico() == sum(settled) <= LIMIT_PICO
    assert ledger.spent_pico() > LIMIT_PICO - 8 * AMOUNT  # the budget was used, not stranded
    assert ledger.reserved_pico() == 0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def killed_holder(spec: dict[str, Any], amount: float, lease: float) -> float:
    """A process that reserved ``amount`` and was SIGKILLed; returns its lease's end."""
    proc = start_worker({**spec, "amount": amount, "lease": lease}, "hold")
    assert proc.stdout is not None
    line = proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    expires: float = json.loads(line)["expires"]
    return expires


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_killed_process_holds_its_reservation_until_the_lease_ends(
    kind: str, tmp_path: Path, redis_url: str | None
) -> None:
    spec = spec_for(kind, tmp_path, redis_url)
    spec["limit"] = 1.0
    expires = killed_holder(spec, 0.75, 600.0)
    clock = Clock(expires - 0.001)
    ledger = open_ledger(spec, clock=clock)
    assert ledger.reserved_usd() == 0.75
    assert ledger.reserve(0.5) is None  # not released before its lease ends
    clock.now = expires
    assert ledger.reserved_usd() == 0.0  # nor held after it
    assert ledger.reserve(1.0) is not None


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_killed_process_is_released_in_real_time(
    kind: str, tmp_path: Path, redis_url: str | None
) -> None:
    spec = spec_for(kind, tmp_path, redis_url)
    spec["limit"] = 1.0
    expires = killed_holder(spec, 0.75, 1.0)
    ledger = open_ledger(spec)
    assert ledger.reserve(0.5) is None
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    assert ledger.reserved_usd() == 0.0
    assert ledger.reserve(1.0) is not None


@given(limit=st.integers(0, 5_000), ops=ledger_ops, sqlite=st.booleans())
def test_any_honest_sequence_matches_the_reference(
    limit: int, ops: list[tuple[Any, ...]], sqlite: bool
) -> None:
    clock = Clock(1_700_000_000.0)
    options: dict[str, Any] = {"period": "hour", "lease_seconds": 60, "clock": clock}
    ledger: Ledger = (
        SqliteLedger(":memory:", limit / 10**12, **options)
        if sqlite
        else MemoryLedger(limit / 10**12, **options)
    )
    held: list[Reservation] = []
    spent: dict[int, int] = {}
    live: dict[str, tuple[int, int, float]] = {}  # id -> (pico, hour, lease end)
    for op in ops:
        hour = int(clock.now // 3600)
        live = {i: v for i, v in live.items() if v[2] > clock.now}
        if op[0] == "reserve":
            want = spent.get(hour, 0) + sum(p for p, h, _ in live.values() if h == hour) + op[1]
            r = ledger._reserve_pico(op[1])
            assert (r is not None) == (want <= limit)
            if r is not None:
                held.append(r)
                live[r.id] = (op[1], hour, clock.now + 60)
        elif op[0] == "settle" and held:
            r = held.pop(op[1] % len(held))
            actual = int(r.pico * Fraction(op[2]))
            r._settle_pico(actual)
            spent[r.period] = spent.get(r.period, 0) + actual
            live.pop(r.id, None)
        elif op[0] == "release" and held:
            r = held.pop(op[1] % len(held))
            r.release()
            live.pop(r.id, None)
        elif op[0] == "wait":
            clock.now += op[1]
        hour = int(clock.now // 3600)
        live = {i: v for i, v in live.items() if v[2] > clock.now}
        assert ledger.spent_pico() == spent.get(hour, 0) <= limit
        assert ledger.reserved_pico() == sum(p for p, h, _ in live.values() if h == hour)
