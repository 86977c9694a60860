"""A ledger whose store does not answer loses no money and no step (issue #17, holes 1 and 3).

A settle the store did not take is kept pending in the ledger and recorded by its next
operation that reaches the store; the step it billed is recorded first, in the result and the
trace file; the run stops with ``shared_budget`` and the store's error before its next call,
never sending the same context again. The stores here are real: an SQLite file another
connection holds locked, a redis-server killed and started again on its append-only file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Price,
    SqliteLedger,
    Stop,
    ToolCall,
    Usage,
    load_trace,
    run,
    run_many,
    start,
)
from budgetloop.ledger import LedgerError, RedisLedger
from tests.ledger_support import free_port

PRICE = Price(1.0, 1.0)  # $1 a million tokens: a 1,000-in 50-out turn costs $0.00105


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


class Counting:
    """A model that asks for ``turns`` echo calls, then answers; ``during(n)`` runs inside call
    n (1-based), as whatever happens to the store while the provider is thinking."""

    def __init__(self, turns: int, during: dict[int, Any] | None = None) -> None:
        self.turns, self.during, self.calls = turns, during or {}, 0
        self.sent: list[int] = []  # how many messages each call was sent

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        self.calls += 1
        self.sent.append(len(messages))
        if self.calls in self.during:
            self.during[self.calls]()
        if self.calls <= self.turns:
            call = ToolCall("echo", {"text": f"t{self.calls}"})
            return Completion(tool_calls=[call], usage=Usage(1000, 50))
        return Completion(text="done", usage=Usage(1000, 50))


OPTIONS: dict[str, Any] = {
    "tools": [echo],
    "price": PRICE,
    "max_output_tokens": 100,
    "count_tokens": lambda m, t: 1000,
}
TURN = 0.00105


class Lock:
    """Another connection that holds the SQLite file's write lock until released."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)

    def take(self) -> None:
        self.db.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.db.execute("COMMIT")


def test_a_locked_sqlite_file_at_settle_keeps_the_step_and_stops_before_resending(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path, 1.0, timeout=0.05)
    lock = Lock(path)
    model = Counting(5, {2: lock.take})  # locked while call 2 runs: its settle fails
    result = run(model, "go", ledger=ledger, trace_path=tmp_path / "run.jsonl", **OPTIONS)
    # the billed call is a step, in the result and in the file
    assert model.calls == 2
    assert len(result.steps) == 2
    assert result.cost_usd == pytest.approx(2 * TURN)
    assert sum(s.cost_usd for s in result.steps) == pytest.approx(result.cost_usd)
    saved = load_trace(tmp_path / "run.jsonl")
    assert len(saved.steps) == 2
    assert saved.cost_usd == pytest.approx(2 * TURN)
    # it stopped before a third call, with the store's error, and said what is unrecorded
    assert result.stop is Stop.SHARED_BUDGET
    assert result.error is not None
    assert result.error == (
        "LedgerError: SqliteLedger.reserve: the $0.00105 of settled spend not recorded yet must "
        "be recorded by the store before the ledger can answer, got OperationalError: database "
        "is locked."
    )
    assert result.detail == (
        "the shared ledger did not answer, so no further call was sent ($0.00105 billed here "
        "is still to be recorded in it)"
    )
    # the store answers again: the pending settle is recorded, never below what was billed
    assert ledger.pending_usd() == pytest.approx(TURN)
    lock.release()
    assert ledger.spent_usd() == pytest.approx(2 * TURN)
    assert ledger.pending_usd() == 0.0
    assert ledger.reserved_usd() == 0.0


def test_a_store_that_answers_again_before_the_next_step_lets_the_run_go_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path, 1.0, timeout=0.05)
    lock = Lock(path)
    session = start(Counting(2, {1: lock.take}), "go", ledger=ledger, **OPTIONS)
    session.step()  # its settle found the file locked
    assert (len(session.steps), ledger.pending_usd()) == (1, pytest.approx(TURN))
    lock.release()
    result = session.run()
    assert (result.stop, len(result.steps)) == (Stop.ANSWERED, 3)
    assert ledger.spent_usd() == pytest.approx(result.cost_usd)
    assert ledger.pending_usd() == 0.0


def test_a_settle_retried_after_the_store_took_it_is_not_added_twice(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db", 1.0)
    r = ledger.reserve(0.5)
    assert r is not None
    r.settle(0.25)
    ledger._settle(r, 250_000_000_000)  # the store already has it: a lost reply's retry
    assert ledger.spent_usd() == 0.25


def test_settle_says_when_the_store_kept_it_pending(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path, 1.0, timeout=0.05)
    r = ledger.reserve(0.5)
    assert r is not None
    lock = Lock(path)
    lock.take()
    with pytest.raises(LedgerError) as info:
        r.settle(0.25)
    assert str(info.value) == (
        "Reservation.settle: the $0.25 settled must be recorded by the store, got "
        "OperationalError: database is locked; it is kept pending and recorded by the ledger's "
        "next operation that reaches the store."
    )
    assert r.state == "pending"
    r.release()  # spent is spent: a pending settle is not released
    assert repr(ledger) == (  # a repr never raises, and shows what waits for the store
        "SqliteLedger(limit_usd=1.0, period=None, store not answering: LedgerError, "
        "pending_usd=0.25)"
    )
    lock.release()
    assert ledger.flush() == 0.0
    assert (r.state, ledger.spent_usd()) == ("settled", 0.25)


@pytest.fixture
def restartable_redis() -> Iterator[Any]:
    """A redis-server with an append-only file, which a test may kill and start again."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs it)")
    import redis

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs: list[subprocess.Popen[bytes]] = []

        def up() -> None:
            args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "yes", "--appendfsync", "always", "--dir", tmp]  # fmt: skip
            procs.append(
                subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            client = redis.Redis(port=port)
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)

        def down() -> None:
            procs[-1].kill()
            procs[-1].wait()

        up()
        try:
            yield f"redis://127.0.0.1:{port}/0", up, down
        finally:
            for p in procs:
                p.kill()
                p.wait()


def test_redis_killed_mid_run_loses_no_step_and_no_money(restartable_redis: Any) -> None:
    url, up, down = restartable_redis
    ledger = RedisLedger(url, 1.0, key="killed")
    model = Counting(5, {3: down})  # the server dies while call 3 runs
    result = run(model, "go", ledger=ledger, **OPTIONS)
    assert (model.calls, len(result.steps), result.stop) == (3, 3, Stop.SHARED_BUDGET)
    assert result.cost_usd == pytest.approx(3 * TURN)
    assert result.error is not None
    assert result.error.startswith(  # then redis-py's words, which name the port
        "LedgerError: RedisLedger.reserve: the $0.00105 of settled spend not recorded yet must be "
        "recorded by the store before the ledger can answer, got ConnectionError: "
    )
    assert "ConnectionError" in result.error
    up()
    assert ledger.spent_usd() == pytest.approx(3 * TURN)
    assert (ledger.pending_usd(), ledger.reserved_usd()) == (0.0, 0.0)


def test_a_reported_cost_over_a_million_dollars_is_billed_not_raised() -> None:
    # hole 3: a cost is money spent, never a reason to crash
    ledger = MemoryLedger(1.0)

    def dear(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls=[ToolCall("echo", {"text": "x"})], cost_usd=2e6)

    result = run(dear, "go", ledger=ledger, budget=Budget(max_cost_usd=0.5), **OPTIONS)
    assert (result.stop, len(result.steps), result.cost_usd) == (Stop.MAX_COST_USD, 1, 2e6)
    assert result.steps[0].tool_calls[0].status == "skipped"
    assert ledger.spent_usd() == 2e6


class FlakyStore(MemoryLedger):
    """A store that does not answer where a schedule says (each reserve or settle takes the
    next entry; ``True``: it raises before applying anything), as a network store does."""

    def __init__(self, schedule: list[bool]) -> None:
        super().__init__(1.0)
        self.schedule = schedule

    def _answer(self) -> None:
        if self.schedule and self.schedule.pop(0):
            raise ConnectionError("the store went away")

    def _try_reserve(self, ident: str, pico: int, period: int, now: float, expires: float) -> bool:
        self._answer()
        return super()._try_reserve(ident, pico, period, now, expires)

    def _settle(self, reservation: Any, pico: int) -> None:
        self._answer()
        super()._settle(reservation, pico)


@settings(max_examples=60, deadline=None)
@given(
    schedule=st.lists(st.booleans(), max_size=12),
    turns=st.integers(0, 6),
)
def test_a_store_failing_at_random_never_leaves_the_ledger_below_billed_spend(
    schedule: list[bool], turns: int
) -> None:
    ledger = FlakyStore(list(schedule))
    model = Counting(turns)
    result = run(model, "go", ledger=ledger, **OPTIONS)
    # every billed call is a step, and no context was sent twice
    assert model.calls == len(result.steps)
    assert len(set(model.sent)) == len(model.sent)
    assert result.cost_usd == pytest.approx(TURN * len(result.steps))
    if result.stop is Stop.SHARED_BUDGET:
        assert result.error is not None
    ledger.schedule.clear()  # the store answers again
    assert ledger.spent_usd() == pytest.approx(result.cost_usd)
    assert ledger.reserved_usd() == 0.0


def test_costs_past_a_float_are_a_number_not_an_overflow() -> None:
    def dearest(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls=[ToolCall("echo", {"text": "x"})], cost_usd=1e308)

    result = run(dearest, "go", budget=Budget(max_steps=2), **OPTIONS)
    assert (result.stop, len(result.steps)) == (Stop.MAX_STEPS, 2)
    assert result.cost_usd == sys.float_info.max  # 2e308 does not fit a float
    assert load_trace_dict(result) == result


def load_trace_dict(result: Any) -> Any:
    from budgetloop import Result

    return Result.from_dict(json.loads(json.dumps(result.to_dict(), allow_nan=False)))


class RefusesThenGoesAway(MemoryLedger):
    """A store that answers a reserve (refusing it: its limit is below a turn) and then does
    not answer when asked its totals, as a network store that went away in between."""

    def _totals(self, now: float) -> tuple[int, int]:
        raise ConnectionError("the store went away")


def test_a_ledger_that_refuses_and_then_goes_away_is_a_shared_budget_stop() -> None:
    model = Counting(3)
    ledger = RefusesThenGoesAway(0.001)  # below the first turn's worst case
    result = run(model, "go", ledger=ledger, **OPTIONS)
    assert (result.stop, result.steps, model.calls) == (Stop.SHARED_BUDGET, (), 0)
    assert result.error == "ConnectionError: the store went away"
    assert result.detail == (
        "the shared ledger refused the next turn's worst case $0.0011, then did not answer "
        "for its totals (ConnectionError: the store went away)"
    )
    # run_many records it as what it is, not as a model_error
    many = run_many(model, ["a", "b"], ledger=ledger, progress=False, **OPTIONS)
    assert [r.stop for r in many] == [Stop.SHARED_BUDGET] * 2
    assert [r.detail for r in many] == [result.detail] * 2
    assert model.calls == 0


# -- a lease that could not be renewed while its call ran ----------------------------------------

LEASE = 0.6  # renewed every 0.2 s while a call runs


def test_a_lease_redis_could_not_renew_stops_the_run_before_its_next_call(
    restartable_redis: Any,
) -> None:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    url, up, down = restartable_redis
    client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))  # fails at once, no retries

    def outage() -> None:  # the server is away for five renewals of call 2, then back
        down()
        time.sleep(1.0)
        up()

    ledger = RedisLedger(client, 1.0, key="renewal", lease_seconds=LEASE)
    model = Counting(5, {2: outage})
    result = run(model, "go", ledger=ledger, **OPTIONS)
    assert (model.calls, len(result.steps), result.stop) == (2, 2, Stop.SHARED_BUDGET)
    assert result.detail == (
        "the shared ledger did not answer when the last call's lease was renewed, so another "
        "run may have reserved that money, and no further call was sent"
    )
    assert result.error is not None
    assert result.error.startswith("LedgerError: Reservation.renew: the lease of reservation ")
    assert "must be renewed by the store, got ConnectionError: " in result.error
    # the call's spend is recorded all the same: the server was back when it was settled
    assert result.cost_usd == pytest.approx(2 * TURN)
    assert ledger.spent_usd() == pytest.approx(2 * TURN)
    assert (ledger.pending_usd(), ledger.reserved_usd()) == (0.0, 0.0)


def test_a_reservation_taken_from_the_store_mid_call_stops_the_run_before_its_next_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"

    def taken_away() -> None:  # someone clears the file's reservations while call 2 runs
        with closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("DELETE FROM held")
        time.sleep(1.0)  # five renewals fall due

    ledger = SqliteLedger(path, 1.0, lease_seconds=LEASE)
    model = Counting(5, {2: taken_away})
    result = run(model, "go", ledger=ledger, trace_path=tmp_path / "run.jsonl", **OPTIONS)
    assert (model.calls, len(result.steps), result.stop) == (2, 2, Stop.SHARED_BUDGET)
    said = (
        "the shared ledger no longer held the last call's reservation when its lease was "
        "renewed, so another run may have reserved that money, and no further call was sent"
    )
    assert (result.detail, result.error) == (said, None)
    saved = load_trace(tmp_path / "run.jsonl")
    assert (saved.stop, saved.detail, len(saved.steps)) == (Stop.SHARED_BUDGET, said, 2)
    assert ledger.spent_usd() == pytest.approx(2 * TURN) == result.cost_usd
    assert ledger.reserved_usd() == 0.0
