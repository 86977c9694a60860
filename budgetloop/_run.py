"""The entry points: ``start``/``run`` for a Session, ``astart``/``arun`` for an AsyncSession,
and ``resume`` for a saved run."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._async import AsyncSession
from ._budget import CountTokens
from ._fork import context_before, fork_point
from ._journal import load_trace
from ._options import MAX_RESULT_CHARS, Clock, Model, OnStep, Redact
from ._session import Session
from ._trace import Result
from ._types import Budget, Message, Price


def start(
    complete: Model,
    prompt: str | Sequence[Message],
    *,
    tools: Sequence[Callable[..., Any]] = (),
    budget: Budget | None = None,
    price: Price | None = None,
    max_output_tokens: int | None = None,
    count_tokens: CountTokens | None = None,
    system: str | None = None,
    repeat_limit: int | None = 3,
    clock: Clock = time.monotonic,
    max_workers: int | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    redact: Redact | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    ledger: Any = None,
    on_step: OnStep | None = None,
    finish: bool = False,
    cycle_limit: int | None = None,
    warn_repeats: bool = False,
    budget_note: bool = False,
) -> Session:
    """A ``Session`` that has called nothing yet: ``step()`` takes one turn, ``run()`` them all.

    Configuration mistakes (a cost ceiling without a price, a tool without type hints, an
    option of the wrong type) raise here, before any call.
    """
    return Session(complete, prompt, **_options(locals()))


def run(
    complete: Model,
    prompt: str | Sequence[Message],
    *,
    tools: Sequence[Callable[..., Any]] = (),
    budget: Budget | None = None,
    price: Price | None = None,
    max_output_tokens: int | None = None,
    count_tokens: CountTokens | None = None,
    system: str | None = None,
    repeat_limit: int | None = 3,
    clock: Clock = time.monotonic,
    max_workers: int | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    redact: Redact | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    ledger: Any = None,
    on_step: OnStep | None = None,
    finish: bool = False,
    cycle_limit: int | None = None,
    warn_repeats: bool = False,
    budget_note: bool = False,
) -> Result:
    """Run the loop until the model answers or a ceiling stops it: ``start(...).run()``.

    A stop is a ``Result`` whose ``stop`` names the reason; it never raises. Configuration
    mistakes raise here, before any call.
    """
    return Session(complete, prompt, **_options(locals())).run()


def astart(
    complete: Model,
    prompt: str | Sequence[Message],
    *,
    tools: Sequence[Callable[..., Any]] = (),
    budget: Budget | None = None,
    price: Price | None = None,
    max_output_tokens: int | None = None,
    count_tokens: CountTokens | None = None,
    system: str | None = None,
    repeat_limit: int | None = 3,
    clock: Clock = time.monotonic,
    max_workers: int | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    redact: Redact | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    ledger: Any = None,
    on_step: OnStep | None = None,
    finish: bool = False,
    cycle_limit: int | None = None,
    warn_repeats: bool = False,
    budget_note: bool = False,
) -> AsyncSession:
    """``start`` for an async model and async tools: ``await session.step()``."""
    return AsyncSession(complete, prompt, **_options(locals()))


async def arun(
    complete: Model,
    prompt: str | Sequence[Message],
    *,
    tools: Sequence[Callable[..., Any]] = (),
    budget: Budget | None = None,
    price: Price | None = None,
    max_output_tokens: int | None = None,
    count_tokens: CountTokens | None = None,
    system: str | None = None,
    repeat_limit: int | None = 3,
    clock: Clock = time.monotonic,
    max_workers: int | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    redact: Redact | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    ledger: Any = None,
    on_step: OnStep | None = None,
    finish: bool = False,
    cycle_limit: int | None = None,
    warn_repeats: bool = False,
    budget_note: bool = False,
) -> Result:
    """``await arun(...)``: ``run`` for an async model and async tools."""
    return await AsyncSession(complete, prompt, **_options(locals())).run()


def resume(
    trace: Result | dict[str, Any] | str | os.PathLike[str],
    complete: Model,
    *,
    tools: Sequence[Callable[..., Any]],
    at: int | None = None,
    messages: Sequence[Message] | None = None,
    **options: Any,
) -> Session:
    """A ``Session`` that goes on from a saved run, as ``Session.fork`` does from a live one.

    The functions are not in the trace, so ``complete`` and ``tools`` are passed again; the
    budget, price, ``max_output_tokens`` and the options the trace records (``Result.options``)
    default to the trace's. The context is the trace's messages (as the trace kept them:
    redacted, if the run was) before step ``at``; a trace that holds fewer messages than its
    steps from ``at`` on appended is a ValueError.
    """
    result = _as_result(trace)
    options = {
        **result.options,
        "budget": result.budget,
        "price": result.price,
        "max_output_tokens": result.max_output_tokens,
        **options,
    }
    if messages is None:
        context_before(result.messages, result.steps, fork_point(result.steps, at), "resume")
    saved = Session.restore(result, complete, tools=tools, **options)
    return saved.fork(at, messages=messages)


def _as_result(trace: Result | dict[str, Any] | str | os.PathLike[str]) -> Result:
    if isinstance(trace, Result):
        return trace
    if isinstance(trace, dict):
        return Result.from_dict(trace)
    if isinstance(trace, (str, os.PathLike)):
        return load_trace(trace)
    raise TypeError(
        f"resume: trace must be a Result, a dict or a path, got {type(trace).__name__}."
    )


def _options(given: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in given.items() if k not in ("complete", "prompt")}
