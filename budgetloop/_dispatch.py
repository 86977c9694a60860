"""Running a turn's tool calls: check the arguments, call the tools at once, keep request order.

Every outcome becomes a ``CallRecord``, never an exception: a tool that raises, arguments that
do not fit, a tool that is not there, a call still running when the deadline passes.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ._check import ArgumentError, check_arguments
from ._pool import Workers
from ._schema import Tool
from ._trace import CallRecord, Status
from ._turn import BatchDone, Call, Parsed
from ._types import ToolCall

Clock = Callable[[], float]

ABANDONED = "abandoned: still running when the max_seconds deadline passed"


class Dispatch:
    """What a session runs its tools with: the tools, a clock, workers and the result limit."""

    def __init__(
        self, tools: dict[str, Tool], clock: Clock, workers: Workers, max_result_chars: int | None
    ) -> None:
        self.tools = tools
        self.clock = clock
        self.workers = workers
        self.max_result_chars = max_result_chars

    # -- one call -------------------------------------------------------------------------------

    def prepare(
        self, call: ToolCall, call_id: str, parsed: Parsed
    ) -> tuple[Tool, dict[str, Any], tuple[str, ...]] | CallRecord:
        """The tool and its checked arguments, or the error record the model reads instead."""
        name = call.name
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            available = ", ".join(self.tools) or "none"
            what = f"unknown tool {name!r}" if name else "a tool call needs a name"
            return not_run(call, call_id, "error", f"{what}; available tools: {available}.")
        if isinstance(parsed, ArgumentError):
            return not_run(call, call_id, "error", str(parsed))
        try:
            args, coerced = check_arguments(tool, parsed)
        except ArgumentError as exc:
            return not_run(call, call_id, "error", str(exc))
        except Exception as exc:  # a check that broke must still not take the run down
            return not_run(call, call_id, "error", f"{call.name}: arguments could not be "
                           f"checked ({type(exc).__name__}: {exc}).")  # fmt: skip
        return tool, args, tuple(coerced)

    def outcome(
        self,
        call: ToolCall,
        call_id: str,
        args: dict[str, Any],
        coerced: tuple[str, ...],
        value: Any,
        failure: BaseException | None,
        started: float,
    ) -> CallRecord:
        fields: dict[str, Any] = {}
        if failure is None:
            try:
                content = to_content(value)
            except Exception as exc:  # a value whose repr raises, say: the model hears why
                failure = ValueError(f"the result could not be encoded as text ({describe(exc)})")
        if failure is not None:
            fields = {"status": "error", "error": describe(failure)}
        else:
            limit = self.max_result_chars
            if limit is not None and len(content) > limit:
                fields["truncated"] = len(content)
                content = (
                    f"{content[:limit]}\n[truncated: the result had {len(content)} characters; "
                    f"the first {limit} are shown]"
                )
            fields.update(status="ok", result=content)
        return CallRecord(
            name=call.name,
            id=call_id,
            raw_arguments=call.arguments,
            arguments=args,
            coerced=coerced,
            seconds=self.clock() - started,
            **fields,
        )

    def run_call(self, job: Call) -> CallRecord:
        """Check and run one call on this thread (an ``async def`` tool on a loop of its own)."""
        call, call_id, parsed = job.request, job.id, job.parsed
        started = self.clock()
        prepared = self.prepare(call, call_id, parsed)
        if isinstance(prepared, CallRecord):
            return prepared
        tool, args, coerced = prepared
        value, failure = None, None
        try:
            value = tool.fn(**args)
            if tool.is_async:
                value = asyncio.run(value)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a tool's failure is a result the model reads
            failure = exc
        return self.outcome(call, call_id, args, coerced, value, failure, started)

    async def arun_call(self, job: Call) -> CallRecord:
        """Check and run one call: awaited if the tool is async, else on a worker thread."""
        call, call_id, parsed = job.request, job.id, job.parsed
        started = self.clock()
        prepared = self.prepare(call, call_id, parsed)
        if isinstance(prepared, CallRecord):
            return prepared
        tool, args, coerced = prepared
        if not tool.is_async:
            future = self.workers.submit(self.run_call, job)
            return await asyncio.wrap_future(future)
        value, failure = None, None
        try:
            value = await tool.fn(**args)
        except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except BaseException as exc:
            failure = exc
        return self.outcome(call, call_id, args, coerced, value, failure, started)

    # -- a batch --------------------------------------------------------------------------------

    def run_batch(self, calls: Sequence[Call], timeout: float | None) -> BatchDone:
        """Run the calls at once and return their records in request order.

        Every call is offered to the workers. Without a deadline this thread works too: it runs
        the first call, then takes back any call no worker has started yet, so trivial tools
        cost no thread hand-off while slow ones still overlap. With a ``timeout`` every call
        runs on a worker, and a call still running when it passes is abandoned.
        """
        if not calls:
            return BatchDone([])
        inline = timeout is None and not any(self._is_async(c) for c in calls)
        if inline and (len(calls) == 1 or self.workers.limit == 1):  # nothing to overlap
            return BatchDone([self.run_call(c) for c in calls])
        started = self.clock()
        offered = calls[1:] if inline else calls
        futures = [self.workers.submit(self.run_call, c) for c in offered]
        records = [self.run_call(calls[0])] if inline else []
        abandoned = False
        for future, job in zip(futures, offered, strict=True):
            if inline and self.workers.cancel(future):  # no worker started it: run it here
                records.append(self.run_call(job))
                continue
            left = None if timeout is None else max(0.0, timeout - (self.clock() - started))
            try:
                records.append(future.result(timeout=left))
            except FutureTimeout:
                self.workers.cancel(future)
                abandoned = True
                records.append(
                    not_run(job.request, job.id, "error", ABANDONED, self.clock() - started)
                )
        return BatchDone(records, abandoned)

    def _is_async(self, call: Call) -> bool:
        name = call.request.name
        tool = self.tools.get(name) if isinstance(name, str) else None
        return tool is not None and tool.is_async

    async def arun_batch(self, calls: Sequence[Call], timeout: float | None) -> BatchDone:
        """The async batch: every call a task; at the deadline, what is in flight is cancelled."""
        if not calls:
            return BatchDone([])
        started = self.clock()
        tasks = [asyncio.ensure_future(self.arun_call(c)) for c in calls]
        try:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise
        for task in pending:
            task.cancel()
        records = [
            not_run(c.request, c.id, "error", ABANDONED, self.clock() - started)
            if task in pending
            else task.result()
            for task, c in zip(tasks, calls, strict=True)
        ]
        return BatchDone(records, bool(pending))


def describe(exc: BaseException) -> str:
    """``Type: message``; a message that itself cannot be shown is said to be so."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: (its message could not be shown)"


def to_content(value: Any) -> str:
    """A tool's return value as the text the model reads: a str as is, else JSON."""
    if isinstance(value, str):
        return value
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return repr(value)  # what json.dumps writes, without the encoder
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # circular structures and the like
        return repr(value)


def not_run(
    call: ToolCall, call_id: str, status: Status, error: str, seconds: float = 0.0
) -> CallRecord:
    """A call that produced no result: refused, skipped because the run stopped, or abandoned."""
    return CallRecord(
        name=call.name,
        id=call_id,
        raw_arguments=call.arguments,
        arguments=None,
        status=status,
        error=error,
        seconds=seconds,
    )
