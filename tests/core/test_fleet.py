"""``run_many(..., executor=...)`` on the standard library's ``ProcessPoolExecutor`` with a
``SqliteLedger``: each run one task in a worker process, the model, tools, options and ledger
pickled there; what cannot travel is an error before any run; a worker killed mid-batch is a
``model_error`` result and loses no billed spend. The same on a Dask cluster with a
``RedisLedger``: tests/adapters/test_fleet_dask.py.

The runaway model's every step costs $0.00105 (1,000 tokens in, 50 out, at $1 per million) and is
projected at $0.0011 (100 tokens out at most), so a run alone would pass the shared limit."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    ScriptedModel,
    SqliteLedger,
    Stop,
    ToolCall,
    UnreadableReply,
    Usage,
    budget_report,
    load_trace,
    run,
    run_many,
    tool,
)
from budgetloop.ledger import RedisLedger
from tests.fleet_support import (
    PRICE,
    STEP,
    HangsOnce,
    async_answer,
    echo_prompt,
    runaway,
    search,
    thousand,
    unreadable,
    worker_pid,
)
from tests.ledger_support import NO_REDIS, redis_server

pytestmark = pytest.mark.timeout(180)

STEP_PICO = 1_050_000_000  # a step's cost: $0.00105
OPTIONS: dict[str, Any] = {
    "tools": [search],
    "budget": Budget(max_steps=100),
    "repeat_limit": None,
    "count_tokens": thousand,
    "progress": False,
}


@contextmanager
def processes(n: int) -> Iterator[ProcessPoolExecutor]:
    """``n`` worker processes, started fresh (spawn), so they import budgetloop themselves;
    whatever happens, none is left behind (one still hanging is killed, not waited for)."""
    executor = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield executor
    finally:
        for process in list(executor._processes.values()):
            if process.is_alive():
                process.kill()
        executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    with processes(2) as executor:
        yield executor


def test_workers_import_this_budgetloop(pool: ProcessPoolExecutor) -> None:
    import budgetloop

    assert pool.submit(_budgetloop_file).result(timeout=60) == budgetloop.__file__


def _budgetloop_file() -> str:
    import budgetloop

    return budgetloop.__file__


def test_200_runaway_runs_through_one_sqlite_ledger(
    pool: ProcessPoolExecutor, tmp_path: Path
) -> None:
    ledger = SqliteLedger(tmp_path / "spend.db", 0.05)
    results = run_many(
        runaway(), ["go"] * 200, executor=pool, ledger=ledger, trace_dir=tmp_path / "t", **OPTIONS
    )
    assert len(results) == 200
    assert {r.stop for r in results} == {Stop.SHARED_BUDGET}
    spent = sum(round(r.cost_usd * 10**12) for r in results)
    assert ledger.spent_pico() == spent
    assert ledger.spent_pico() <= ledger.limit_pico
    assert ledger.spent_pico() > ledger.limit_pico - 4 * 1_100_000_000  # refused near the end
    assert ledger.reserved_pico() == 0
    for i in (0, 99, 199):
        assert load_trace(tmp_path / "t" / f"run-{i:04d}.jsonl").steps == results[i].steps
    assert budget_report(tmp_path / "t").total_cost_usd == pytest.approx(
        ledger.spent_usd(), abs=1e-12
    )


def test_a_worker_renews_its_reservation_while_its_call_runs(
    pool: ProcessPoolExecutor, tmp_path: Path
) -> None:
    # the worker's one call outlasts its lease five times over: the money stays held meanwhile
    ledger = SqliteLedger(tmp_path / "spend.db", 0.01, lease_seconds=0.6)
    model = ScriptedModel([Completion(text="done", usage=Usage(1000, 6500))], delay=3.0)
    options: dict[str, Any] = {"price": PRICE, "max_output_tokens": 6500, "progress": False}
    done: list[Any] = []

    def batch() -> None:  # its worst case: 7,500 tokens at $1 per million
        done.extend(
            run_many(model, ["go"], executor=pool, ledger=ledger, count_tokens=thousand, **options)
        )

    thread = threading.Thread(target=batch)
    thread.start()
    deadline = time.monotonic() + 60
    while ledger.reserved_usd() == 0.0:  # the worker reserved and sent its call
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(1.5)  # two and a half leases in
    assert ledger.reserved_usd() == 0.0075
    assert ledger.reserve(0.005) is None  # no other run can take what it still holds
    thread.join(60)
    assert [r.stop for r in done] == [Stop.ANSWERED]
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0075, 0.0)


def test_results_come_back_in_prompt_order_each_made_on_a_worker(
    pool: ProcessPoolExecutor, tmp_path: Path
) -> None:
    prompts = [f"prompt {i}" for i in range(40)]
    results = run_many(echo_prompt, prompts, executor=pool, trace_dir=tmp_path, progress=False)
    assert [r.answer for r in results] == [
        f"{p} (in {worker_pid(r)})" for p, r in zip(prompts, results, strict=True)
    ]
    assert {worker_pid(r) for r in results} <= {str(p) for p in pool._processes}
    assert str(os.getpid()) not in {worker_pid(r) for r in results}
    # each run's journal is written by its worker, named by prompt index
    assert load_trace(tmp_path / "run-0017.jsonl").answer == results[17].answer


def test_an_async_model_runs_its_event_loop_on_the_worker(pool: ProcessPoolExecutor) -> None:
    results = run_many(async_answer, ["a", "b", "c"], executor=pool, progress=False)
    assert [r.stop for r in results] == [Stop.ANSWERED] * 3
    pids = {r.answer for r in results}
    assert f"pid {os.getpid()}" not in pids
    assert pids <= {f"pid {p}" for p in pool._processes}


def test_a_reply_a_worker_could_not_read_is_billed_in_the_shared_ledger(
    pool: ProcessPoolExecutor, tmp_path: Path
) -> None:
    ledger = SqliteLedger(tmp_path / "spend.db", 1.0)
    results = run_many(
        unreadable, ["a", "b", "c"], executor=pool, ledger=ledger, trace_dir=tmp_path / "t",
        progress=False,
    )  # fmt: skip
    assert [r.stop for r in results] == [Stop.MODEL_ERROR] * 3
    assert {(r.error or "").rpartition(" in ")[0] for r in results} == {
        "UnreadableReply: not read"
    }
    assert [(r.steps[0].usage, r.cost_usd) for r in results] == [(STEP, 0.00105)] * 3
    assert (ledger.spent_pico(), ledger.reserved_pico()) == (3 * STEP_PICO, 0)
    assert load_trace(tmp_path / "t" / "run-0001.jsonl").steps == results[1].steps


def test_the_progress_bar_advances_as_tasks_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "hung"
    prompts = ["hang", *[str(i) for i in range(19)]]
    with processes(2) as pool:
        batch = threading.Thread(
            target=run_many, args=(HangsOnce(str(marker), after=1, answer=True), prompts),
            kwargs={"executor": pool, "progress": True},
        )  # fmt: skip
        batch.start()
        seen: list[str] = []
        # the 19 other runs are counted while the first still runs
        _wait_for(lambda: "18/20 runs" in _read(capsys, seen), "the bar to count 18 runs")
        _kill_when_hung(marker)
        batch.join(timeout=120)
    lines = "".join([*seen, capsys.readouterr().err]).splitlines()
    assert [line.split(" runs")[0] for line in lines] == [
        "1/20",
        *[f"{n}/20" for n in range(2, 21, 2)],
    ]
    assert lines[-1] == "20/20 runs · answered 19 · model_error 1 · spent $0.01995"


def _read(capsys: pytest.CaptureFixture[str], seen: list[str]) -> str:
    seen.append(capsys.readouterr().err)
    return "".join(seen)


def test_a_worker_killed_mid_batch_loses_no_billed_spend(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "spend.db", 0.1, lease_seconds=10)
    marker = tmp_path / "hung"
    prompts = ["hang", *["go"] * 199]
    results: list[Any] = []
    with processes(2) as pool:
        batch = threading.Thread(
            target=lambda: results.extend(
                run_many(HangsOnce(str(marker), after=2), prompts, executor=pool, ledger=ledger,
                         trace_dir=tmp_path / "t", **OPTIONS)
            )
        )  # fmt: skip
        batch.start()
        _kill_when_hung(marker)
        batch.join(timeout=120)
        assert not batch.is_alive()
    assert len(results) == 200
    hung = results[0]
    assert hung.stop is Stop.MODEL_ERROR
    assert hung.error.startswith("BrokenProcessPool: ")
    assert hung.detail == f"its task did not come back from the executor: {hung.error}"
    assert len(hung.steps) == 1  # the step its worker journaled before it hung
    assert load_trace(tmp_path / "t" / "run-0000.jsonl").stop is Stop.MODEL_ERROR
    assert {r.stop for r in results} <= {Stop.SHARED_BUDGET, Stop.MODEL_ERROR}
    lost = [r for r in results if r.stop is Stop.MODEL_ERROR]
    assert all(r.error.startswith("BrokenProcessPool: ") for r in lost)
    recorded = sum(round(r.cost_usd * 10**12) for r in results)
    # every step a result records is in the ledger; a process killed between its settle and
    # its journal line has at most one step more there
    assert recorded <= ledger.spent_pico() <= recorded + len(lost) * STEP_PICO
    assert ledger.spent_pico() <= ledger.limit_pico
    _wait_for(
        lambda: ledger.reserved_pico() == 0, "the killed run's reservation to end with its lease"
    )


class RunsEachTaskTwice(Executor):
    """An executor that runs each task a second time after it finished and returns the second
    try's result, as Dask does when the worker holding a finished result dies before the
    result is gathered."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        fn(*args, **kwargs)
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_a_finished_task_run_again_returns_its_trace_and_spends_nothing_more(
    tmp_path: Path,
) -> None:
    ledger = SqliteLedger(tmp_path / "spend.db", 0.0105)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "run-0001.jsonl").write_text("an earlier batch's file\n")
    results = run_many(
        runaway(), ["a", "b"], executor=RunsEachTaskTwice(), ledger=ledger,
        trace_dir=tmp_path / "t", **OPTIONS,
    )  # fmt: skip
    assert [r.stop for r in results] == [Stop.SHARED_BUDGET] * 2
    assert [len(r.steps) for r in results] == [9, 0]  # the first run took the whole budget
    assert ledger.spent_pico() == 9 * STEP_PICO  # the second tries sent nothing
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        "run-0000.jsonl", "run-0001.1.jsonl", "run-0001.jsonl"
    ]  # fmt: skip
    assert load_trace(tmp_path / "t" / "run-0000.jsonl").steps == results[0].steps
    assert budget_report(tmp_path / "t").total_cost_usd == pytest.approx(9 * 0.00105)


@dataclass(frozen=True)
class Verdict:
    """A typed answer (module level, so a worker unpickles the batch's ``output=``)."""

    label: str
    score: int


def test_a_typed_answer_run_again_comes_back_an_instance_not_its_json(tmp_path: Path) -> None:
    answer = Completion(
        tool_calls=[ToolCall("final_answer", {"label": "ok", "score": "3"})], usage=STEP
    )  # "3": coerced to 3 as it was checked, and checked the same way when read back
    model = ScriptedModel([answer], repeat_last=True, price=PRICE, max_output_tokens=100)
    results = run_many(
        model, ["a", "b"], executor=RunsEachTaskTwice(), trace_dir=tmp_path / "t",
        output=Verdict, progress=False,
    )  # fmt: skip
    assert [r.output for r in results] == [Verdict("ok", 3), Verdict("ok", 3)]
    assert [r.stop for r in results] == [Stop.ANSWERED, Stop.ANSWERED]
    assert [len(r.steps) for r in results] == [1, 1]  # each second try sent nothing
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        "run-0000.jsonl", "run-0001.jsonl"
    ]  # fmt: skip


def _kill_when_hung(marker: Path) -> None:
    _wait_for(marker.exists, f"{marker} (the hanging run never reached its hang)")
    os.kill(int(marker.read_text()), signal.SIGKILL)


def _wait_for(condition: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds}s for {what}")
        time.sleep(0.05)


# -- what cannot travel is an error before any run ------------------------------------------------


def test_a_lambda_to_a_process_pool_is_an_error_before_any_run(
    pool: ProcessPoolExecutor, tmp_path: Path
) -> None:
    with pytest.raises(TypeError) as caught:
        run_many(
            lambda m, t: Completion(text="hi"), ["a"], executor=pool, trace_dir=tmp_path / "t"
        )
    message = str(caught.value)
    assert message.startswith(
        "run_many: complete must be something pickle can send to ProcessPoolExecutor's workers, "
        "got function test_a_lambda_to_a_process_pool_is_an_error_before_any_run.<locals>.<lambda> ("  # then pickle's own words, which vary by Python
    )
    assert message.endswith(
        " A lambda or a function defined inside another is not pickled by its name: define it at "
        "a module's top level."
    )
    assert not (tmp_path / "t").exists()


def test_a_memory_ledger_is_an_error_naming_the_ledgers_that_travel(
    pool: ProcessPoolExecutor,
) -> None:
    model = runaway()
    with pytest.raises(TypeError) as caught:
        run_many(model, ["a"], executor=pool, ledger=MemoryLedger(1.0), **OPTIONS)
    assert str(caught.value) == (
        "run_many: ledger must be something pickle can send to ProcessPoolExecutor's workers, "
        "got MemoryLedger (TypeError: MemoryLedger: a ledger sent to other processes (pickled) "
        "must be one they can share, got a MemoryLedger, which lives in one process; use "
        "SqliteLedger on one machine or RedisLedger across machines.)."
    )
    assert model.calls == 0


def test_a_tool_made_inside_a_function_is_named_by_its_place(pool: ProcessPoolExecutor) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look it up."""
        return key

    with pytest.raises(TypeError) as caught:
        run_many(runaway(), ["a"], executor=pool, tools=[search, lookup], progress=False)
    assert str(caught.value).startswith(
        "run_many: tools[1] must be something pickle can send to ProcessPoolExecutor's workers, "
        "got Tool test_a_tool_made_inside_a_function_is_named_by_its_place.<locals>.lookup ("
    )


def test_a_redis_ledger_made_from_a_client_says_to_make_it_from_a_url(
    pool: ProcessPoolExecutor,
) -> None:
    redis = pytest.importorskip("redis")
    ledger = RedisLedger(redis.Redis(port=1), 1.0, key="k")  # never connected: nothing is sent
    with pytest.raises(TypeError) as caught:
        run_many(runaway(), ["a"], executor=pool, ledger=ledger, **OPTIONS)
    assert str(caught.value) == (
        "run_many: ledger must be something pickle can send to ProcessPoolExecutor's workers, "
        "got RedisLedger (TypeError: RedisLedger: a ledger sent to other processes (pickled) "
        "must be made from a redis:// URL, got one made from a redis.Redis client, whose "
        "connections belong to this process; make it from a redis:// URL to send it to other "
        "processes.)."
    )


def test_executor_must_be_an_executor() -> None:
    with pytest.raises(TypeError) as caught:
        run_many(runaway(), ["a"], executor="dask", **OPTIONS)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "run_many: executor must be a concurrent.futures.Executor or None, got str."
    )


def test_a_thread_pool_shares_this_process_objects_a_memory_ledger_too() -> None:
    ledger = MemoryLedger(0.01)
    model = runaway()
    with ThreadPoolExecutor(3) as threads:
        results = run_many(model, ["go"] * 12, executor=threads, ledger=ledger, **OPTIONS)
    assert {r.stop for r in results} == {Stop.SHARED_BUDGET}
    assert model.calls == sum(len(r.steps) for r in results) == 9  # one model, shared
    assert ledger.spent_pico() == 9 * STEP_PICO


# -- what pickles ---------------------------------------------------------------------------------


def test_a_runaway_scripted_model_and_a_module_level_tool_pickle_with_pickle() -> None:
    model = runaway()
    model([], [])
    copy = pickle.loads(pickle.dumps(model))
    assert (copy.script, copy.repeat_last, copy.price, copy.calls) == (
        model.script, True, model.price, 1
    )  # fmt: skip
    copy([], [])
    assert (copy.calls, model.calls) == (2, 1)  # each records its own requests
    assert pickle.loads(pickle.dumps(search)) is search


def test_a_model_playing_back_a_failed_step_pickles_and_still_raises() -> None:
    def fails(messages: Any, tools: Any) -> Completion:
        raise ValueError("no route")

    asked = Completion(tool_calls=[ToolCall("search", {"query": "x"})])
    recorded = run(ScriptedModel([asked, fails]), "x", tools=[search])
    assert [s.error for s in recorded.steps] == [None, "ValueError: no route"]
    copy = pickle.loads(pickle.dumps(ScriptedModel.from_trace(recorded)))
    copy([], [])
    with pytest.raises(ValueError, match=r"^no route$"):
        copy([], [])


def test_a_model_playing_back_a_billed_failed_step_pickles_and_bills_it_again() -> None:
    recorded = run(ScriptedModel([unreadable]), "x", price=PRICE, max_output_tokens=100)
    copy = pickle.loads(pickle.dumps(ScriptedModel.from_trace(recorded)))
    with pytest.raises(UnreadableReply) as raised:
        copy([], [])
    assert raised.value.usage == STEP
    copy.reset()
    again = run(copy, "x", price=PRICE, max_output_tokens=100)
    assert (again.error, again.cost_usd) == (recorded.error, 0.00105)


@pytest.mark.parametrize("dumps", ["pickle", "cloudpickle"])
def test_a_sqlite_ledger_pickles_as_its_file_and_shares_spend_and_reservations(
    dumps: str, tmp_path: Path
) -> None:
    pickler: Any = pickle if dumps == "pickle" else pytest.importorskip("cloudpickle")
    ledger = SqliteLedger(tmp_path / "l.db", 0.3, period="day", lease_seconds=42, durable=False)
    held = ledger.reserve(0.1)
    copy = pickle.loads(pickler.dumps(ledger))
    assert (copy.path, copy.limit_pico, copy.period, copy.lease_seconds, copy.durable) == (
        ledger.path, ledger.limit_pico, "day", 42.0, False
    )  # fmt: skip
    assert copy.reserved_usd() == 0.1
    assert copy.reserve(0.25) is None  # the original's reservation counts in the copy
    assert held is not None
    held.settle(0.05)
    theirs = copy.reserve(0.25)
    assert theirs is not None
    theirs.settle(0.2)
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.25, 0.0)


@pytest.mark.parametrize("dumps", ["pickle", "cloudpickle"])
def test_a_redis_ledger_pickles_as_its_url_and_key_and_shares_spend(dumps: str) -> None:
    pickler: Any = pickle if dumps == "pickle" else pytest.importorskip("cloudpickle")
    with redis_server() as url:
        if url is None:
            pytest.skip(NO_REDIS)
        ledger = RedisLedger(url, 0.3, key="travels", period="hour", lease_seconds=42)
        held = ledger.reserve(0.1)
        copy = pickle.loads(pickler.dumps(ledger))
        assert (copy.key, copy.limit_pico, copy.period, copy.lease_seconds) == (
            "travels", ledger.limit_pico, "hour", 42.0
        )  # fmt: skip
        assert copy.reserve(0.25) is None  # the original's reservation counts in the copy
        assert held is not None
        held.settle(0.05)
        theirs = copy.reserve(0.25)
        assert theirs is not None
        theirs.settle(0.2)
        assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.25, 0.0)
        other = RedisLedger(url, 0.3, key="another")
        assert pickle.loads(pickler.dumps(other)).spent_usd() == 0.0  # its own key


def test_a_sqlite_ledger_in_another_process_shares_the_limit(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "l.db", 0.3)
    with processes(1) as one:
        assert one.submit(_spend, ledger, 0.2).result(timeout=60) is True
        assert one.submit(_spend, ledger, 0.2).result(timeout=60) is False
    assert ledger.spent_usd() == 0.2


def _spend(ledger: SqliteLedger, usd: float) -> bool:
    reservation = ledger.reserve(usd)
    if reservation is None:
        return False
    reservation.settle(usd)
    return True


def test_nothing_in_the_core_imports_dask() -> None:
    code = (
        "import sys\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from budgetloop import run_many\n"
        "from tests.fleet_support import echo_prompt\n"
        "if __name__ == '__main__':\n"
        "    with ProcessPoolExecutor(1) as pool:\n"
        "        [r] = run_many(echo_prompt, ['hi'], executor=pool, progress=False)\n"
        "    print(r.stop.value, sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )
    assert done.stdout == "answered []\n", done.stderr
