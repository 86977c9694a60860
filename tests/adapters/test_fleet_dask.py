"""``run_many`` on a real Dask cluster (``LocalCluster`` of 2 worker processes x 2 threads) with
one budget in a real redis-server on loopback: the executor is ``Client.get_executor()``, the
model, tools and ``RedisLedger`` travel to the workers with cloudpickle, each run is one task.

The runaway model's every step costs $0.00105 and is projected at $0.0011 (see
tests/core/test_fleet.py, which runs the same on a ProcessPoolExecutor with a SqliteLedger)."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, MemoryLedger, Stop, budget_report, load_trace, run_many
from budgetloop.ledger import RedisLedger
from tests.fleet_support import (
    HangsOnce,
    async_answer,
    echo_prompt,
    runaway,
    search,
    thousand,
    worker_pid,
)
from tests.ledger_support import NO_REDIS, redis_server

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = pytest.mark.timeout(300)

STEP_PICO = 1_050_000_000
OPTIONS: dict[str, Any] = {
    "tools": [search],
    "budget": Budget(max_steps=100),
    "repeat_limit": None,
    "count_tokens": thousand,
    "progress": False,
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with redis_server() as found:
        if found is None:
            pytest.skip(NO_REDIS)
        yield found


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """The cluster, its workers in processes of their own; a task whose worker dies is not run
    again elsewhere (allowed-failures 0), so the run's result says it was lost."""
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):  # fmt: skip
        yield dask_client


def test_the_workers_import_this_budgetloop(client: Any) -> None:
    import budgetloop

    files = client.run(lambda: __import__("budgetloop").__file__)
    assert list(files.values()) == [budgetloop.__file__] * 2


def test_200_runaway_runs_share_one_redis_ledger_on_the_cluster(
    client: Any, url: str, tmp_path: Path
) -> None:
    ledger = RedisLedger(url, 0.05, key="fleet")
    results = run_many(
        runaway(), ["go"] * 200, executor=client.get_executor(), ledger=ledger,
        trace_dir=tmp_path / "t", **OPTIONS,
    )  # fmt: skip
    assert len(results) == 200
    assert {r.stop for r in results} <= {Stop.ANSWERED, Stop.SHARED_BUDGET}
    assert {r.stop for r in results} == {Stop.SHARED_BUDGET}  # a runaway never answers
    spent = sum(round(r.cost_usd * 10**12) for r in results)
    assert ledger.spent_pico() == spent
    assert ledger.spent_pico() <= ledger.limit_pico
    assert ledger.spent_pico() > ledger.limit_pico - 4 * 1_100_000_000
    assert ledger.reserved_pico() == 0
    report = budget_report(tmp_path / "t")
    assert report.total_cost_usd == pytest.approx(ledger.spent_usd(), abs=1e-12)
    assert load_trace(tmp_path / "t" / "run-0123.jsonl").steps == results[123].steps


def test_results_in_prompt_order_made_on_the_workers(client: Any) -> None:
    pids = {str(p) for p in client.run(os.getpid).values()}
    prompts = [f"prompt {i}" for i in range(30)]
    results = run_many(echo_prompt, prompts, executor=client.get_executor(), progress=False)
    assert [r.answer.rpartition(" (in ")[0] for r in results] == prompts
    assert {worker_pid(r) for r in results} <= pids


def test_an_async_model_runs_its_loop_on_a_worker(client: Any) -> None:
    pids = {f"pid {p}" for p in client.run(os.getpid).values()}
    results = run_many(async_answer, ["a", "b"], executor=client.get_executor(), progress=False)
    assert [r.stop for r in results] == [Stop.ANSWERED] * 2
    assert {r.answer for r in results} <= pids


def test_cloudpickle_sends_what_pickle_cannot_but_not_a_memory_ledger(client: Any) -> None:
    executor = client.get_executor()
    [result] = run_many(echo_prompt, ["hi"], executor=executor, progress=False,
                        count_tokens=lambda messages, tools: 1000)  # fmt: skip
    assert result.stop is Stop.ANSWERED  # a lambda travels with cloudpickle, as Dask sends it
    with pytest.raises(TypeError) as caught:
        run_many(echo_prompt, ["hi"], executor=executor, ledger=MemoryLedger(1.0))
    assert str(caught.value) == (
        "run_many: ledger must be something cloudpickle can send to ClientExecutor's workers, "
        "got MemoryLedger (TypeError: MemoryLedger: a ledger sent to other processes (pickled) "
        "must be one they can share, got a MemoryLedger, which lives in one process; use "
        "SqliteLedger on one machine or RedisLedger across machines.)."
    )


def test_a_worker_killed_mid_batch_loses_no_billed_spend(
    client: Any, url: str, tmp_path: Path
) -> None:
    ledger = RedisLedger(url, 0.1, key="killed", lease_seconds=10)
    marker = tmp_path / "hung"
    prompts = ["hang", *["go"] * 199]
    results: list[Any] = []
    batch = threading.Thread(
        target=lambda: results.extend(
            run_many(HangsOnce(str(marker), after=2), prompts, executor=client.get_executor(),
                     ledger=ledger, trace_dir=tmp_path / "t", **OPTIONS)
        )
    )  # fmt: skip
    batch.start()
    _wait_for(marker.exists, "the hanging run to reach its hang")
    os.kill(int(marker.read_text()), signal.SIGKILL)
    batch.join(timeout=180)
    assert not batch.is_alive()
    assert len(results) == 200
    hung = results[0]
    assert hung.stop is Stop.MODEL_ERROR
    assert hung.error.startswith("KilledWorker: ")
    assert hung.detail == f"its task did not come back from the executor: {hung.error}"
    assert len(hung.steps) == 1  # the step its worker journaled before it hung
    assert load_trace(tmp_path / "t" / "run-0000.jsonl").stop is Stop.MODEL_ERROR
    assert {r.stop for r in results} <= {Stop.SHARED_BUDGET, Stop.MODEL_ERROR}
    lost = [r for r in results if r.stop is Stop.MODEL_ERROR]
    assert all(r.error.startswith("KilledWorker: ") for r in lost)
    assert len(lost) < 10  # the tasks on the one worker that died, not the batch
    recorded = sum(round(r.cost_usd * 10**12) for r in results)
    assert recorded <= ledger.spent_pico() <= recorded + len(lost) * STEP_PICO
    assert ledger.spent_pico() <= ledger.limit_pico
    _wait_for(lambda: ledger.reserved_pico() == 0, "the killed run's reservation to end")


def _wait_for(condition: Any, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds}s for {what}")
        time.sleep(0.05)


def test_a_task_the_cluster_runs_again_keeps_its_first_tries_trace(
    url: str, tmp_path: Path
) -> None:
    """With retries (Dask's default), a run whose worker died runs again from the start: the
    first try's spend stays in the ledger, and its journal is renamed aside, so the report on
    the folder still counts it."""
    ledger = RedisLedger(url, 0.1, key="retried", lease_seconds=10)
    marker = tmp_path / "hung"
    results: list[Any] = []
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as retrying,
    ):  # fmt: skip
        batch = threading.Thread(
            target=lambda: results.extend(
                run_many(HangsOnce(str(marker), after=2), ["hang", "go"], ledger=ledger,
                         executor=retrying.get_executor(), trace_dir=tmp_path / "t", **OPTIONS)
            )
        )  # fmt: skip
        batch.start()
        _wait_for(marker.exists, "the hanging run to reach its hang")
        os.kill(int(marker.read_text()), signal.SIGKILL)
        batch.join(timeout=180)
        assert not batch.is_alive()
    assert [r.stop for r in results] == [Stop.SHARED_BUDGET] * 2
    first_try = load_trace(tmp_path / "t" / "run-0000.1.jsonl")
    assert (first_try.stop, len(first_try.steps)) == (None, 1)  # still going when it was killed
    assert load_trace(tmp_path / "t" / "run-0000.jsonl").steps == results[0].steps
    recorded = sum(round(r.cost_usd * 10**12) for r in [*results, first_try])
    assert recorded <= ledger.spent_pico() <= recorded + STEP_PICO
    report = budget_report(tmp_path / "t")
    assert report.total_cost_usd == pytest.approx(recorded / 10**12, abs=1e-12)
