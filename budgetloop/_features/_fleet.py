"""``run_many(..., executor=...)``: each run one task on any ``concurrent.futures.Executor``.

On a ``ThreadPoolExecutor`` the runs share this process's objects, as ``run_many``'s own threads
do. On any other executor the model, the tools and the options (the ledger among them) travel to
the workers pickled: once per batch, checked here before any run starts, with the standard
``pickle`` for a ``ProcessPoolExecutor`` (as it pickles) and with ``cloudpickle`` for any other
(as Dask does) when it is installed. A worker unpickles them once per batch and its runs share
them; each run's whole ``Result`` is made there and comes back pickled. A task the executor
could not run or lost (a worker that died: ``BrokenProcessPool``, Dask's ``KilledWorker``) is
that run's result, stopped with ``model_error``, with the steps its worker journaled.

Nothing here imports an executor's package: the executor is whatever the caller passes.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import secrets
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Any

from .._engine._options import ManyOptions
from .._engine._valid import must, type_name
from .._tools._dispatch import describe
from .._trace._journal import end_journal, load_trace
from .._trace._result import Result
from . import _one, _progress
from ._output import FinalAnswer

Dumps = Callable[[Any], bytes]
_Stamp = tuple[int, int, int] | None  # a file's inode, mtime and size, or no file
Task = tuple[str, int, _Stamp]  # the batch, the prompt's index, its trace path's stamp when sent
_KEPT_JOBS = 4  # batches a worker keeps unpickled: a new batch is a new copy of everything


@dataclass(frozen=True)
class Sender:
    """How a batch goes to ``executor``: ``payload`` is the model and the options pickled by
    ``pickler`` (None for threads of this process, where nothing travels)."""

    executor: Executor
    pickler: str | None
    payload: bytes

    @classmethod
    def check(cls, executor: object, complete: object, options: ManyOptions) -> Sender:
        """The batch as it will travel; a ``TypeError`` naming what cannot, before any run."""
        if not isinstance(executor, Executor):
            expected = "a concurrent.futures.Executor or None"
            raise TypeError(must("run_many", "executor", expected, type_name(executor)))
        if _in_process(executor):
            return cls(executor, None, b"")
        pickler, dumps = _pickler(executor)
        for name, value in _parts(complete, options):
            try:
                dumps(value)
            except Exception as exc:
                where = f"{type(executor).__name__}'s workers"
                expected = f"something {pickler} can send to {where}"
                raise TypeError(
                    must("run_many", name, expected, f"{_named(value)} ({describe(exc)})")
                    + _hint(value)
                ) from exc
        return cls(executor, pickler, dumps((complete, dict(options))))


# Executors of the standard library that send work pickled with ``pickle`` (Python 3.14's
# interpreter pool is a thread pool's subclass, but its interpreters share no objects).
_PICKLING: tuple[type, ...] = (
    ProcessPoolExecutor,
    *[t for t in [getattr(futures, "InterpreterPoolExecutor", None)] if isinstance(t, type)],
)


def _in_process(executor: Executor) -> bool:
    """Threads of this process, which share its objects: nothing travels."""
    return isinstance(executor, ThreadPoolExecutor) and not isinstance(executor, _PICKLING)


def _pickler(executor: Executor) -> tuple[str, Dumps]:
    if not isinstance(executor, _PICKLING):
        try:
            cloudpickle = import_module("cloudpickle")
        except ImportError:
            pass
        else:
            return "cloudpickle", cloudpickle.dumps
    return "pickle", pickle.dumps


def _parts(complete: object, options: ManyOptions) -> Iterator[tuple[str, object]]:
    """Each thing that travels, by the name an error gives it: each tool on its own."""
    yield "complete", complete
    for name, value in options.items():
        if name == "tools" and isinstance(value, (list, tuple)):
            yield from ((f"tools[{i}]", t) for i, t in enumerate(value))
        else:
            yield name, value


def _named(value: object) -> str:
    qualname = getattr(value, "__qualname__", None)
    if isinstance(qualname, str) and not isinstance(value, type):
        return f"{type_name(value)} {qualname}"
    return type_name(value)


def _hint(value: object) -> str:
    qualname = getattr(value, "__qualname__", "")
    if isinstance(qualname, str) and ("<lambda>" in qualname or "<locals>" in qualname):
        return (
            " A lambda or a function defined inside another is not pickled by its name: "
            "define it at a module's top level."
        )
    return ""


# -- the driver: ``concurrency`` tasks in flight, results in prompt order ------------------------


def run_on(
    send: Sender,
    complete: Callable[..., Any],
    prompts: list[_one.Prompt],
    paths: list[Path | None],
    concurrency: int,
    bar: _progress.Progress | None,
    options: ManyOptions,
) -> list[Result]:
    batch = secrets.token_hex(8)
    results: list[Result | None] = [None] * len(prompts)
    waiting = deque(range(len(prompts)))
    running: dict[Future[Result], tuple[int, _Stamp]] = {}

    def finish(i: int, result: Result) -> None:
        results[i] = result
        if bar is not None:
            bar.update(result)

    try:
        while waiting or running:
            while waiting and len(running) < concurrency:
                i = waiting.popleft()
                stamp = _stamp(paths[i])
                try:
                    future = _submit(
                        send, (batch, i, stamp), complete, prompts[i], paths[i], options
                    )
                except Exception as exc:  # a broken executor: this run's result says so
                    finish(i, _lost(exc, paths[i], stamp, options))
                    continue
                running[future] = (i, stamp)
            if running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    i, stamp = running.pop(future)
                    finish(i, _outcome(future, paths[i], stamp, options))
    except BaseException:  # Ctrl-C: start nothing more; tasks already running finish there
        for future in running:
            future.cancel()
        raise
    return [r for r in results if r is not None]


def _submit(
    send: Sender,
    task: Task,
    complete: Callable[..., Any],
    prompt: _one.Prompt,
    path: Path | None,
    options: ManyOptions,
) -> Future[Result]:
    if send.pickler is None:
        return send.executor.submit(_run_here, complete, prompt, path, options)
    where = None if path is None else os.fspath(path)
    return send.executor.submit(run_task, task, send.payload, prompt, where)


def _outcome(
    future: Future[Result], path: Path | None, stamp: _Stamp, options: ManyOptions
) -> Result:
    try:
        result = future.result()
    except Exception as exc:  # the task never ran, or its worker was lost
        return _lost(exc, path, stamp, options)
    if not isinstance(result, Result):
        failure = TypeError(f"the executor returned {type_name(result)}, not the run's Result")
        return _lost(failure, path, stamp, options)
    return result


# -- on the worker -------------------------------------------------------------------------------

_jobs: OrderedDict[str, tuple[Callable[..., Any], ManyOptions]] = OrderedDict()
_jobs_lock = threading.Lock()


def run_task(task: Task, payload: bytes, prompt: _one.Prompt, path: str | None) -> Result:
    """Run ``task`` (the batch, the prompt's index, the stamp of its trace path before it was
    sent) on a worker: the batch's model and options unpickled once per worker process, the run
    made here (an ``async def`` model on an event loop of its own). The index makes every task
    distinct to an executor that names tasks by their arguments (Dask), even for equal prompts.

    An executor may run a task again after it finished: Dask computes anew a result that was
    lost with its worker before it was gathered. A finished trace at the path, written since the
    task was sent, is that first try: it is the result, and nothing is sent to the model twice."""
    where = None if path is None else Path(path)
    finished = _finished_since(where, task[2])
    complete, options = _job(task[0], payload)
    if finished is not None:
        return _typed(finished, options)
    return _run_here(complete, prompt, where, options)


def _finished_since(path: Path | None, stamp: _Stamp) -> Result | None:
    if path is None or not os.path.exists(path) or _stamp(path) == stamp:
        return None
    try:
        earlier = load_trace(path)
    except (OSError, ValueError):
        return None  # torn or unreadable: not a finished run; the new try sets it aside
    return earlier if earlier.stop is not None else None


def _typed(result: Result, options: ManyOptions) -> Result:
    """A finished run read back from its trace, its ``output`` an instance of the batch's
    ``output=`` type again (a trace keeps it as JSON), as the first try returned it."""
    output = options.get("output")
    if output is None or result.output is None:
        return result
    return replace(result, output=FinalAnswer(output, "run_many").read_back(result.output))


def _job(batch: str, payload: bytes) -> tuple[Callable[..., Any], ManyOptions]:
    with _jobs_lock:
        job = _jobs.get(batch)
        if job is None:
            job = _jobs[batch] = pickle.loads(payload)
            while len(_jobs) > _KEPT_JOBS:
                _jobs.popitem(last=False)
        return job


def _run_here(
    complete: Callable[..., Any], prompt: _one.Prompt, path: Path | None, options: ManyOptions
) -> Result:
    if _one.is_async(complete):
        return asyncio.run(_one.arun_one(complete, prompt, path, options))
    return _one.run_one(complete, prompt, path, options)


# -- a task that did not come back ---------------------------------------------------------------


def _stamp(path: Path | None) -> _Stamp:
    """What is at a run's trace path before its task starts: a file there afterwards with
    another stamp is the one its worker wrote."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _lost(exc: Exception, path: Path | None, stamp: _Stamp, options: ManyOptions) -> Result:
    """The run whose task failed on the executor (it never ran, or its worker died): stopped
    with ``model_error`` and the executor's error, with every step its worker journaled."""
    empty = _one.failed(None, exc, None, options)  # the error, redacted as the run's would be
    said = empty.error
    detail = f"its task did not come back from the executor: {said}"
    journaled = None
    if path is not None and os.path.exists(path) and _stamp(path) != stamp:
        try:
            journaled = load_trace(path)
        except (OSError, ValueError):
            journaled = None
    base = empty if journaled is None else journaled
    result = replace(base, stop=empty.stop, error=said, detail=detail, answer=None)
    if path is None:
        return result
    try:
        if journaled is not None:
            end_journal(path, result)
        else:
            result.save(path)
    except OSError as error:
        result = replace(
            result, detail=f"{detail} (its trace could not be written: {describe(error)})"
        )
    return result


__all__ = ["Sender", "run_on", "run_task"]
