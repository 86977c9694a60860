"""Running a turn's tool calls: check the arguments, call the tools at once, keep request order."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ._check import ArgumentError, check_arguments
from ._pool import Workers
from ._schema import Tool
from ._trace import CallRecord
from ._types import ToolCall

Clock = Callable[[], float]


def to_content(value: Any) -> str:
    """A tool's return value as the text the model reads: a str as is, else JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # circular structures, NaN keys and the like
        return repr(value)


def run_call(tools: dict[str, Tool], call: ToolCall, call_id: str, clock: Clock) -> CallRecord:
    """Check and run one call; whatever happens becomes a record, never an exception."""
    started = clock()

    def record(status: str, **fields: Any) -> CallRecord:
        return CallRecord(
            name=call.name,
            id=call_id,
            raw_arguments=call.arguments,
            status=status,
            seconds=clock() - started,
            **fields,
        )

    tool = tools.get(call.name) if isinstance(call.name, str) else None
    if tool is None:
        available = ", ".join(tools) or "none"
        return record(
            "error",
            arguments=None,
            error=f"unknown tool {call.name!r}; available tools: {available}.",
        )
    try:
        args, coerced = check_arguments(tool, call.arguments)
    except ArgumentError as exc:
        return record("error", arguments=None, error=str(exc))
    try:
        value = tool.fn(**args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a tool's failure is a result the model reads
        return record(
            "error", arguments=args, coerced=tuple(coerced), error=f"{type(exc).__name__}: {exc}"
        )
    return record("ok", arguments=args, coerced=tuple(coerced), result=to_content(value))


ABANDONED = "abandoned: still running when the max_seconds deadline passed"


def not_run(
    call: ToolCall, call_id: str, status: str, error: str, seconds: float = 0.0
) -> CallRecord:
    """A call that produced no result: skipped because the run stopped, or abandoned."""
    return CallRecord(
        name=call.name,
        id=call_id,
        raw_arguments=call.arguments,
        arguments=None,
        status=status,
        error=error,
        seconds=seconds,
    )


def run_batch(
    tools: dict[str, Tool],
    calls: Sequence[tuple[ToolCall, str]],
    clock: Clock,
    workers: Workers,
    timeout: float | None,
) -> list[CallRecord]:
    """Run the calls at once and return their records in request order.

    With a ``timeout`` every call runs on a worker and a call still running when it passes is
    abandoned (recorded as an error); without one, the first call runs on this thread.
    """
    if not calls:
        return []
    if timeout is None and len(calls) == 1:
        call, call_id = calls[0]
        return [run_call(tools, call, call_id, clock)]
    started = clock()
    inline = calls[0] if timeout is None else None
    futures: list[Future[CallRecord] | None] = [None] if inline else []
    for call, call_id in calls[1:] if inline else calls:
        futures.append(workers.submit(run_call, tools, call, call_id, clock))
    records: list[CallRecord] = []
    if inline:
        records.append(run_call(tools, inline[0], inline[1], clock))
    for future, (call, call_id) in zip(futures, calls, strict=True):
        if future is None:
            continue
        left = None if timeout is None else max(0.0, timeout - (clock() - started))
        try:
            records.append(future.result(timeout=left))
        except FutureTimeout:
            future.cancel()
            records.append(not_run(call, call_id, "error", ABANDONED, clock() - started))
    return records
