"""``run_many``: many prompts through one model and one set of options (a shared ledger among
them), on threads, or as tasks for an async model; results in prompt order."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._engine._options import (
    ManyOptions,
    check_names,
    check_prompt,
    option_names,
    require_approver,
)
from .._engine._session import Session
from .._engine._valid import check_option_int, must, type_name
from .._trace._result import Result
from . import _fleet, _progress
from ._one import Prompt, arun_one, is_async, run_one

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; the annotations are never evaluated on 3.10


def run_many(
    complete: Callable[..., Any],
    prompts: Sequence[Prompt],
    *,
    concurrency: int = 8,
    trace_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    executor: Executor | None = None,
    **options: Unpack[ManyOptions],
) -> list[Result]:
    """Run every prompt with ``run(complete, prompt, **options)``, ``concurrency`` at a time.

    Results come back in prompt order. An exception inside one run becomes that run's result,
    stopped with ``model_error`` and the steps it had taken; it never stops the batch. With
    ``trace_dir`` each run writes its trace there as it goes (``run-0000.jsonl``, ... in
    prompt order). ``progress`` shows a bar (ipywidgets in a notebook, tqdm on a terminal when
    installed, else lines on stderr). Configuration mistakes raise here, before any run starts.

    ``executor``: any ``concurrent.futures.Executor`` (a ``ProcessPoolExecutor``, a Dask
    ``Client.get_executor()``), each run one task on it, ``concurrency`` of them submitted at
    a time. The model, the tools, the options and the ledger travel to its workers pickled
    (see ``budgetloop._features._fleet``); what cannot travel is a ``TypeError`` here, before
    any run.
    """
    prompts = _check(prompts, concurrency, progress, options)
    checked = Session._open("run_many", complete, "", options)  # once, loudly, before any run
    require_approver("run_many", checked.options)
    send = None if executor is None else _fleet.Sender.check(executor, complete, options)
    paths = _trace_paths(trace_dir, len(prompts))
    bar = _progress.choose(progress, len(prompts), options.get("ledger"))
    try:
        if send is not None:
            return _fleet.run_on(send, complete, prompts, paths, concurrency, bar, options)
        if is_async(complete):
            return _run_async(complete, prompts, paths, concurrency, bar, options)
        return _run_threads(complete, prompts, paths, concurrency, bar, options)
    finally:
        if bar is not None:
            bar.close()


_NOT_OPTIONS = {"trace_path": "it names one run's file; pass trace_dir= instead"}


def _check(
    prompts: object, concurrency: object, progress: object, options: ManyOptions
) -> list[Prompt]:
    check_names("run_many", options, option_names(ManyOptions), _NOT_OPTIONS)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, (list, tuple)):
        expected = "a list of prompts (each a str or a list of Message)"
        raise TypeError(must("run_many", "prompts", expected, type_name(prompts)))
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            check_prompt(prompt, "run_many", f"prompts[{i}]")
    check_option_int("run_many", "concurrency", concurrency, least=1)
    if not isinstance(progress, bool):
        raise TypeError(must("run_many", "progress", "True or False", type_name(progress)))
    return list(prompts)


def _trace_paths(trace_dir: str | os.PathLike[str] | None, n: int) -> list[Path | None]:
    if trace_dir is None:
        return [None] * n
    if not isinstance(trace_dir, (str, os.PathLike)):
        expected = "a str or os.PathLike path or None"
        raise TypeError(must("run_many", "trace_dir", expected, type_name(trace_dir)))
    folder = Path(trace_dir)
    folder.mkdir(parents=True, exist_ok=True)
    width = max(4, len(str(n - 1)))
    return [folder / f"run-{i:0{width}d}.jsonl" for i in range(n)]


def _run_threads(
    complete: Callable[..., Any],
    prompts: list[Prompt],
    paths: list[Path | None],
    concurrency: int,
    bar: _progress.Progress | None,
    options: ManyOptions,
) -> list[Result]:
    def one(i: int) -> Result:
        result = run_one(complete, prompts[i], paths[i], options)
        if bar is not None:
            bar.update(result)
        return result

    pool = ThreadPoolExecutor(max_workers=min(concurrency, max(len(prompts), 1)))
    try:
        futures = [pool.submit(one, i) for i in range(len(prompts))]
        results = [f.result() for f in futures]
    except BaseException:  # Ctrl-C: start nothing more; runs in flight finish on their threads
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


def _run_async(
    complete: Callable[..., Any],
    prompts: list[Prompt],
    paths: list[Path | None],
    concurrency: int,
    bar: _progress.Progress | None,
    options: ManyOptions,
) -> list[Result]:
    async def main() -> list[Result]:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> Result:
            async with gate:
                result = await arun_one(complete, prompts[i], paths[i], options)
            if bar is not None:
                bar.update(result)
            return result

        return list(await asyncio.gather(*(one(i) for i in range(len(prompts)))))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside a running event loop (a notebook): run the batch on a loop of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


__all__ = ["run_many"]
