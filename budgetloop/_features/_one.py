"""One run of a batch (``run_many``), as a thread, a task or an executor's worker runs it: what
the run raises becomes its result, stopped with ``model_error``, never an exception."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._engine._async import AsyncSession
from .._engine._loop import Loop
from .._engine._options import ManyOptions
from .._engine._session import Session
from .._engine._types import Budget, Message, Stop
from .._forms._redact import Redactor, strict
from .._tools._dispatch import describe
from .._trace._result import Result

Prompt = str | Sequence[Message]


def is_async(complete: object) -> bool:
    call = getattr(complete, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(call)


def failed(
    session: Loop | None, exc: Exception, path: Path | None, options: ManyOptions
) -> Result:
    """The run that raised, as a result: its steps so far, stopped with ``model_error``."""
    journal = None
    if session is not None:
        base, said = session.result, session._traced(describe(exc))
        journal = session._journal
    else:
        budget = options.get("budget")
        redact = options.get("redact")
        said = Redactor(None if redact is None else strict(redact)).text(describe(exc))
        base = Result(
            stop=None, answer=None, steps=(), messages=(), cost_usd=0.0, seconds=0.0,
            budget=budget if isinstance(budget, Budget) else Budget(),
        )  # fmt: skip
    result = replace(
        base, stop=Stop.MODEL_ERROR, error=said, detail=f"the run raised {said}", answer=None
    )
    if path is not None:
        try:
            if journal is not None and journal.started:  # its file ends with what became of it
                journal.end(result)
            else:
                result.save(path)
        except OSError as error:
            note = f" (its trace could not be written: {describe(error)})"
            result = replace(result, detail=f"{result.detail}{note}")
    return result


def run_one(
    complete: Callable[..., Any], prompt: Prompt, path: Path | None, options: ManyOptions
) -> Result:
    """One run of the batch, on this thread; what it raises becomes its result."""
    session = None
    try:
        session = Session._open("run_many", complete, prompt, {**options, "trace_path": path})
        return session.run()
    except Exception as exc:
        return failed(session, exc, path, options)


async def arun_one(
    complete: Callable[..., Any], prompt: Prompt, path: Path | None, options: ManyOptions
) -> Result:
    """One run of the batch for an ``async def`` model, on the running loop."""
    session = None
    try:
        session = AsyncSession._open("run_many", complete, prompt, {**options, "trace_path": path})
        return await session.run()
    except Exception as exc:
        return failed(session, exc, path, options)
