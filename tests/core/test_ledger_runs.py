"""Runs sharing a ledger, end to end: each model call's worst case is reserved before it is sent
and settled at its actual cost after; a refused reservation stops the run with
``shared_budget``; settled spend never passes the ledger's limit, across run_many's threads too,
and a reservation's lease is renewed for as long as its call runs, whatever drives the run.

The fixture's turns are sent 1,000 tokens and write 50 of at most 100, at $1 per million: a turn
is projected at $0.0011 and costs $0.00105."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Price,
    Result,
    ScriptedModel,
    SqliteLedger,
    Stop,
    ToolCall,
    Usage,
    arun,
    load_trace,
    run,
    run_many,
    start,
)
from budgetloop._engine._types import to_pico
from budgetloop.ledger import Ledger, RedisLedger
from tests import held_support
from tests.ledger_support import NO_REDIS, open_ledger, redis_server

PRICE = Price(1.0, 1.0)


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def turns_model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    """Answers after as many tool turns as the prompt's number: stateless, shareable."""
    wanted = int(messages[-1 if messages[-1].role == "user" else 0].content or "0")
    done = sum(1 for m in messages if m.role == "tool")
    if done < wanted:
        return Completion(
            tool_calls=[ToolCall("echo", {"text": f"t{done}"})], usage=Usage(1000, 50)
        )
    return Completion(text=f"done after {done}", usage=Usage(1000, 50))


OPTIONS: dict[str, Any] = {
    "tools": [echo],
    "price": PRICE,
    "max_output_tokens": 100,
    "count_tokens": lambda m, t: 1000,
}


def test_the_second_run_stops_with_shared_budget_where_the_ledger_runs_out() -> None:
    ledger = MemoryLedger(0.0044)
    first = run(turns_model, "1", ledger=ledger, **OPTIONS)
    assert first.stop is Stop.ANSWERED
    assert ledger.spent_usd() == 0.0021
    second = run(turns_model, "2", ledger=ledger, **OPTIONS)
    # turn 0: 0.0021 + 0.0011 fits; turn 1: 0.00315 + 0.0011 = 0.00425 fits; turn 2 would not
    assert second.stop is Stop.SHARED_BUDGET
    assert second.stop == "shared_budget"
    assert len(second.steps) == 2
    assert second.to_dict()["stop"] == "shared_budget"
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0042, 0.0)
    assert second.cost_usd == 0.0021


def test_equality_fits_in_the_ledger() -> None:
    ledger = MemoryLedger(0.0011)
    result = run(turns_model, "0", ledger=ledger, **OPTIONS)
    assert result.stop is Stop.ANSWERED
    assert ledger.spent_usd() == 0.00105
    again = run(turns_model, "0", ledger=ledger, **OPTIONS)
    assert again.stop is Stop.SHARED_BUDGET
    assert again.steps == ()


def test_the_runs_own_ceiling_still_applies() -> None:
    ledger = MemoryLedger(1.0)
    result = run(turns_model, "5", ledger=ledger, budget=Budget(max_cost_usd=0.0022), **OPTIONS)
    assert result.stop is Stop.MAX_COST_USD
    assert ledger.spent_usd() == result.cost_usd == 0.0021
    assert ledger.reserved_usd() == 0.0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_run_many_through_one_ledger_never_settles_past_it(kind: str, tmp_path: Path) -> None:
    limit = 0.05
    ledger = MemoryLedger(limit) if kind == "memory" else SqliteLedger(tmp_path / "l.db", limit)
    prompts = [str(i % 4) for i in range(60)]  # 1 to 4 turns each: about 0.15 wanted in all
    results = run_many(
        turns_model, prompts, concurrency=8, ledger=ledger, trace_dir=tmp_path / "t",
        progress=False, **OPTIONS,
    )  # fmt: skip
    stops = {r.stop for r in results}
    assert stops == {Stop.ANSWERED, Stop.SHARED_BUDGET}
    spent = sum(r.cost_usd for r in results)
    assert ledger.spent_usd() == pytest.approx(spent, abs=1e-12)
    assert ledger.spent_pico() <= ledger.limit_pico
    assert ledger.spent_usd() > limit - 8 * 0.0011  # refused only when nearly all was used
    assert ledger.reserved_usd() == 0.0
    for i, result in enumerate(results):
        assert load_trace(tmp_path / "t" / f"run-{i:04d}.jsonl").stop == result.stop


# A call that outlasts its lease three times over, and runs started further apart than a lease: a
# lease that lapsed mid-call let the second and third runs reserve money the first still held
# (three $0.0075 calls through a $0.01 ledger settled $0.0225).
# A renewal (every 0.4 s) may be late by up to 0.8 s on a busy machine and the lease still hold.
LEASE, CALL, APART = 1.2, 3.6, 1.4
LONG_CALL: dict[str, Any] = {  # 1,000 tokens in and 6,500 out at most: $0.0075 projected
    "price": PRICE,
    "max_output_tokens": 6500,
    "count_tokens": lambda m, t: 1000,
}
ANSWER = Completion(text="done", usage=Usage(1000, 6500))  # costs its whole $0.0075


def slow_model() -> ScriptedModel:
    return ScriptedModel([ANSWER], repeat_last=True, delay=CALL)


async def slow_async_model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    await asyncio.sleep(CALL)
    return ANSWER


def by_run(ledger: Ledger) -> Result:
    return run(slow_model(), "go", ledger=ledger, **LONG_CALL)


def by_session(ledger: Ledger) -> Result:
    session = start(slow_model(), "go", ledger=ledger, **LONG_CALL)
    while session.step() is not None:
        pass
    return session.result


def by_arun(ledger: Ledger) -> Result:
    return asyncio.run(arun(slow_async_model, "go", ledger=ledger, **LONG_CALL))


def runs_apart(ledger: Ledger, drive: Callable[[Ledger], Result]) -> list[Result]:
    """Three runs through ``ledger``, each started ``APART`` seconds after the last."""
    results: list[Result | None] = [None, None, None]

    def one(i: int) -> None:
        results[i] = drive(ledger)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
        time.sleep(APART)
    for thread in threads:
        thread.join(30)
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


@pytest.mark.parametrize(
    ("kind", "drive"),
    [("memory", by_run), ("sqlite", by_session), ("redis", by_arun), ("memory", by_arun)],
)
def test_a_call_that_outlasts_its_lease_keeps_its_money_held(
    kind: str, drive: Callable[[Ledger], Result], tmp_path: Path
) -> None:
    with redis_server() if kind == "redis" else nullcontext() as url:
        if kind == "redis" and url is None:
            warnings.warn(NO_REDIS, stacklevel=1)
            pytest.skip(NO_REDIS)
        ledger: Ledger
        if kind == "memory":
            ledger = MemoryLedger(0.01, lease_seconds=LEASE)
        elif kind == "sqlite":
            ledger = SqliteLedger(tmp_path / "l.db", 0.01, lease_seconds=LEASE)
        else:
            ledger = RedisLedger(url, 0.01, key=uuid.uuid4().hex, lease_seconds=LEASE)
        results = runs_apart(ledger, drive)
        assert [r.stop for r in results] == [Stop.ANSWERED, Stop.SHARED_BUDGET, Stop.SHARED_BUDGET]
        assert results[1].detail == (  # the first call, three leases in, still holds its money
            "the shared ledger refused the next turn's worst case $0.0075: $0.00 spent and "
            "$0.0075 reserved of $0.01"
        )
        assert [r.cost_usd for r in results] == [0.0075, 0.0, 0.0]
        assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0075, 0.0)


def test_an_interrupted_or_cancelled_call_is_billed_and_its_lease_let_go() -> None:
    ledger = MemoryLedger(0.02, lease_seconds=LEASE)
    held: list[float] = []

    def interrupted(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        time.sleep(2 * LEASE)
        held.append(ledger.reserved_usd())  # renewed: still held two leases in
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(interrupted, "go", ledger=ledger, **LONG_CALL)

    async def cancelled() -> None:
        task = asyncio.ensure_future(arun(slow_async_model, "go", ledger=ledger, **LONG_CALL))
        await asyncio.sleep(2 * LEASE)
        held.append(ledger.reserved_usd())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert held == [0.0075, 0.0075]
    # each call may have been billed: its worst case is settled, and nothing is held
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.015, 0.0)
    # nothing renews them any more: the keeper's thread ends once it has nothing to keep
    deadline = time.monotonic() + 10
    while any(t.name == "budgetloop-lease" for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.05)


# -- a run held for a person elsewhere: worker, killed, resumers racing, one shared ledger -----


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str | None]:
    with redis_server() as url:
        yield url


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_held_run_is_resumed_once_across_processes_with_its_money_exact(
    kind: str, tmp_path: Path, redis_url: str | None
) -> None:
    spec: dict[str, Any] = {"kind": kind, "limit": 1.0, "path": str(tmp_path / "ledger.db")}
    if kind == "redis":
        if redis_url is None:
            warnings.warn(NO_REDIS, stacklevel=1)
            pytest.skip(NO_REDIS)
        spec.update(url=redis_url, key=f"held-{uuid.uuid4().hex}")
    trace, ran = tmp_path / "run.jsonl", tmp_path / "ran.jsonl"
    base = {"ledger": spec, "trace": str(trace), "ran": str(ran)}
    worker = held_support.start("worker", {**base, "linger": True})
    assert worker.stdout is not None
    held = json.loads(worker.stdout.readline())
    worker.kill()  # killed between the hold and the resume
    worker.wait(timeout=60)
    assert held["stop"] == "held"
    assert held["pending"] == ["c2", "c3"]
    ledger = open_ledger(spec)
    # while it waits: its spend settled, nothing reserved
    assert ledger.spent_pico() == to_pico(held["cost"])
    assert ledger.reserved_pico() == 0
    assert load_trace(trace).pending[0].id == "c2"
    assert not ran.exists()
    refused = held_support.done(held_support.start("resume", {**base, "decisions": {"c2": True}}))
    assert "got none for transfer (c3)" in refused["refused"]  # and it took nothing
    decisions = {"c2": {"to": "bob", "amount": 5000}, "c3": "over the limit"}
    racing = [held_support.start("resume", {**base, "decisions": decisions}) for _ in range(3)]
    outcomes = [held_support.done(p) for p in racing]
    won = [o for o in outcomes if "refused" not in o]
    assert len(won) == 1
    assert won[0]["stop"] == "answered"
    assert won[0]["answer"] == "paid"
    for lost in (o for o in outcomes if "refused" in o):
        assert " must be waiting for a decision, got taken at " in lost["refused"]
    lines = ran.read_text().splitlines()
    # the batch's calls run on threads of their own, so they log in any order; c3 never
    assert sorted(json.loads(line) for line in lines) == [["ann", 50.0], ["bob", 5000.0]]
    result = load_trace(trace)
    assert result.cost_usd == won[0]["cost"]
    assert to_pico(result.cost_usd) == sum(to_pico(s.cost_usd) for s in result.steps)
    assert ledger.spent_pico() == to_pico(result.cost_usd)
    assert ledger.reserved_pico() == 0


def test_a_ledger_run_out_while_held_stops_the_resume_before_the_batch(tmp_path: Path) -> None:
    spec = {"kind": "sqlite", "limit": 1.0, "path": str(tmp_path / "ledger.db")}
    trace, ran = tmp_path / "run.jsonl", tmp_path / "ran.jsonl"
    base = {"ledger": spec, "trace": str(trace), "ran": str(ran)}
    held = held_support.done(held_support.start("worker", base))
    ledger = open_ledger(spec)
    others = ledger._reserve_pico(ledger.limit_pico - ledger.spent_pico())  # another run's
    assert others is not None
    others._settle_pico(ledger.limit_pico - to_pico(held["cost"]))
    out = held_support.done(
        held_support.start("resume", {**base, "decisions": {"c2": True, "c3": True}})
    )
    assert out["stop"] == "shared_budget"
    assert not ran.exists()
    assert out["detail"].startswith("the shared ledger refused the next turn's worst case $")
    result = load_trace(trace)
    assert [c.status for c in result.steps[0].tool_calls] == ["skipped"] * 3
    assert result.steps[0].tool_calls[1].content == (
        "skipped: the run stopped before the decided batch ran (" + out["detail"] + ")"
    )
    assert result.cost_usd == held["cost"]  # nothing more was spent
