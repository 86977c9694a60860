"""Running a turn's tool calls: check the arguments, call the tools at once, keep request order.

Every outcome becomes a ``CallRecord``, never an exception: a tool that raises, arguments that
do not fit, a tool that is not there, a call still running when the deadline passes.

Each call comes back as a ``Ran``: its record as the model reads it, and its record as the trace
keeps it, made by the session's ``Redactor`` from the values before anything is cut or encoded
(the result redacted, then encoded and cut at ``max_result_chars``; a traceback redacted, then
cut; an argument error written from redacted parts). Without ``redact`` the two are the same
object.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .._engine._turn import BatchDone, Call, Ran, checked
from .._engine._types import ToolCall
from .._features._recorded import RecordedError
from .._forms._redact import PLAIN, WITHHOLD, Redactor, Said, cut_result, to_content
from .._schema._check import ArgumentError, Name
from .._schema._tool import Tool
from .._trace._result import CallRecord, Status
from ._pool import Slots, Workers
from ._tracebacks import own_traceback

Clock = Callable[[], float]
Fill = Callable[[Slots, int, Call], None]  # run one call of a batch into its slot

OFFER_AFTER = 0.001  # seconds a batch runs on the session's thread alone before others help
_PLAIN = frozenset({str, int, float, bool, type(None), dict, list, tuple})  # never awaitable
ABANDONED = "abandoned: still running when the max_seconds deadline passed"
NOT_STARTED = "not started: the max_seconds deadline passed before it could start"


class Dispatch:
    """What a session runs its tools with: the tools, a clock, workers, the result limit and
    the ``Redactor`` that makes each record's trace form."""

    def __init__(
        self,
        tools: dict[str, Tool],
        clock: Clock,
        workers: Workers,
        max_result_chars: int | None,
        redactor: Redactor = PLAIN,
    ) -> None:
        self.tools = tools
        self._async = frozenset(name for name, tool in tools.items() if tool.is_async)
        self._servers = {name: t.server for name, t in tools.items() if t.server is not None}
        self.any_marked = any(t.needs_approval is not False for t in tools.values())
        self.clock = clock
        self.workers = workers
        self.max_result_chars = max_result_chars
        self.redactor = redactor
        # The batch being run on the calling thread now (see _share), and whether a worker has
        # been offered to help it, or whichever batch runs when that offer is taken up.
        self._sharing: tuple[Slots, Sequence[Call], deque[int]] | None = None
        self._offered = False

    # -- records --------------------------------------------------------------------------------

    def refuse(
        self,
        call: ToolCall,
        call_id: str,
        status: Status,
        error: str | Said | ArgumentError,
        seconds: float = 0.0,
    ) -> Ran:
        """A call that produced no result: refused, skipped because the run stopped, or
        abandoned. ``error`` is budgetloop's own words (a ``Said`` when they quote calls), or an
        ``ArgumentError``; the trace form of each is written from its parts."""
        said = error.real if isinstance(error, Said) else str(error)
        record = not_run(call, call_id, status, said, seconds)
        if self._servers and isinstance(call.name, str) and call.name in self._servers:
            record = replace(record, server=self._servers[call.name])
        redactor = self.redactor
        fn = redactor.fn
        if fn is None:
            return Ran(record, record)
        try:
            why = error.redacted(fn) if isinstance(error, ArgumentError) else redactor.text(error)
            trace = replace(redactor.request(record), error=why)
        except BaseException as exc:  # the loop records the step withheld, then raises this
            return Ran(record, WITHHOLD.call(record), exc)
        return Ran(record, trace)

    def _ran(self, record: CallRecord, value: Any, traceback: str | None) -> Ran:
        """The record and its trace form, made from the tool's ``value`` and the failure's
        whole ``traceback``: redacted before they are encoded or cut."""
        redactor = self.redactor
        if redactor.fn is None:
            return Ran(record, record)
        try:
            trace = redactor.request(record)
            if record.status != "ok":  # a tool's failure: its error was never cut
                error = redactor.text(record.error)
                trace = replace(trace, error=error, traceback=redactor.traceback(traceback))
                return Ran(record, trace)
        except Exception as exc:  # the loop records the step withheld, then raises this
            return Ran(record, WITHHOLD.call(record), exc)
        try:  # redacted before it is encoded, so no escape can hide a secret
            text = redactor.result(value, self.max_result_chars, record.truncated)
        except Exception:  # nothing safe to keep but the fact
            text = (
                f"[a result of {len(record.result or '')} characters that could not be redacted]"
            )
        return Ran(record, replace(trace, result=text))

    # -- one call -------------------------------------------------------------------------------

    def prepare(
        self, job: Call
    ) -> tuple[Tool, dict[str, Any], tuple[str, ...], dict[str, Any]] | Ran:
        """The tool, its checked arguments (JSON, as the trace keeps them; checked once per
        call: the repetition guard may have asked first), the coerced paths and what the
        function is called with (each value as its hint's type); or the error record the model
        reads instead."""
        call, call_id, parsed = job.request, job.id, job.parsed
        name = call.name
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            available = Name(", ".join(self.tools)) if self.tools else "none"
            what: tuple[Any, ...] = (
                ("unknown tool ", Name(name, quoted=True))
                if name
                else ("a tool call needs a name",)
            )
            error = ArgumentError(*what, "; available tools: ", available)
            return self.refuse(call, call_id, "error", error)
        if isinstance(parsed, ArgumentError):
            return self.refuse(call, call_id, "error", parsed)
        outcome = checked(job, tool)
        if not isinstance(outcome, Exception):
            args, coerced, choices = outcome
            try:
                return tool, args, coerced, tool.arguments_for(args, choices)
            except Exception as exc:  # the conversion refused (a model's validator) or broke
                outcome = exc
        if isinstance(outcome, ArgumentError):
            return self.refuse(call, call_id, "error", outcome)
        # a check that broke must still not take the run down
        broken = ArgumentError(Name(name), ": arguments could not be checked (",
                               Name(describe(outcome)), ")")  # fmt: skip
        return self.refuse(call, call_id, "error", broken)

    def outcome(
        self,
        call: ToolCall,
        call_id: str,
        args: dict[str, Any],
        coerced: tuple[str, ...],
        value: Any,
        failure: BaseException | None,
        started: float | None,
    ) -> Ran:
        """The record of a call that ran (``started``: when; None for the loop's own
        ``final_answer``, which runs nothing and takes no time)."""
        if failure is None:
            try:
                content = to_content(value)
            except Exception as exc:  # a value whose repr raises, say: the model hears why
                failure = ValueError(f"the result could not be encoded as text ({describe(exc)})")
        if failure is not None:
            traceback = own_traceback(failure)  # whole: cut only after it is redacted
            record = CallRecord(
                name=call.name,
                id=call_id,
                raw_arguments=call.arguments,
                arguments=args,
                status="error",
                error=describe(failure),
                seconds=0.0 if started is None else self.clock() - started,
                coerced=coerced,
                traceback=PLAIN.traceback(traceback),
                server=self._servers.get(call.name) if self._servers else None,
            )
            return self._ran(record, value, traceback)
        limit, truncated = self.max_result_chars, None
        if limit is not None and len(content) > limit:
            truncated = len(content)
            content = cut_result(content, limit, truncated)
        record = CallRecord(  # by position, as project() makes a Projection
            call.name,  # name
            call_id,  # id
            call.arguments,  # raw_arguments
            args,  # arguments
            "ok",  # status
            content,  # result
            None,  # error
            0.0 if started is None else self.clock() - started,  # seconds
            coerced,
            truncated,
            None,  # traceback
            None,  # approval
            self._servers.get(call.name) if self._servers else None,  # server
        )
        return self._ran(record, value, None)

    def run_one(self, job: Call) -> Ran:
        """Check and run one call on this thread (an ``async def`` tool on a loop of its own)."""
        call, call_id = job.request, job.id
        started = self.clock()
        prepared = self.prepare(job)
        if isinstance(prepared, Ran):
            return prepared
        tool, args, coerced, call_args = prepared
        value: Any = None
        failure: BaseException | None = None
        try:
            if tool.is_async:  # settled inside its loop, so its own CancelledError keeps its words
                value, failure = asyncio.run(_settled(tool.fn, call_args))
            else:
                value = tool.fn(**call_args)
                if type(value) not in _PLAIN and inspect.isawaitable(value):
                    failure = _unawaited(value)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a tool's failure is a result the model reads
            failure = exc
        return self.outcome(call, call_id, args, coerced, value, failure, started)

    async def arun_one(self, job: Call) -> Ran:
        """Check and run one call: awaited if the tool is async, else on a worker thread."""
        call, call_id = job.request, job.id
        started = self.clock()
        prepared = self.prepare(job)
        if isinstance(prepared, Ran):
            return prepared
        tool, args, coerced, call_args = prepared
        if not tool.is_async:
            future = self.workers.submit(self.run_one, job)
            return await asyncio.wrap_future(future)
        # On a task of its own, so that a CancelledError the tool raises (a result) is told
        # apart from this call being cancelled (at the deadline, or with the run's task).
        task = asyncio.ensure_future(_settled(tool.fn, call_args))
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        value, failure = task.result()
        return self.outcome(call, call_id, args, coerced, value, failure, started)

    # -- a batch --------------------------------------------------------------------------------

    def run_batch(self, calls: Sequence[Call], timeout: float | None) -> BatchDone:
        """Run the calls at once and return their outcomes in request order.

        Without a deadline this thread runs the calls in request order while a worker is
        offered those not started yet (``_share``): trivial tools are done here before any
        worker wakes, slow ones overlap. With a ``timeout`` (or an ``async def`` tool, which
        gets a loop of its own) the batch is handed to the session's own thread while this one
        waits (see ``_handed``); a call still running when the timeout passes is abandoned,
        and a call not started by then is not started.
        """
        if not calls:
            return BatchDone([])
        if timeout is not None or (self._async and any(c.name in self._async for c in calls)):
            return self._handed(calls, timeout)
        if len(calls) == 1 or self.workers.limit == 1:  # nothing to overlap
            return BatchDone([self.run_one(c) for c in calls])
        slots = Slots(len(calls))
        self._share(calls, slots, self._put)
        slots.wait(None)  # an interrupt here closes the slots: no call is started after it
        done = []
        for value in slots.values:
            if isinstance(value, BaseException):  # an interrupt raised inside a tool
                raise value
            done.append(value)
        return BatchDone(done)

    def _handed(self, calls: Sequence[Call], timeout: float | None) -> BatchDone:
        """The batch on the session's own thread, awaited here up to ``timeout``. That thread
        runs the calls in order; if they are not all done ``OFFER_AFTER`` seconds on, the ones
        not yet started are offered to the workers too, so slow calls overlap while a batch of
        trivial ones costs one hand-off."""
        started = self.clock()
        slots = Slots(len(calls))
        pending = deque(range(len(calls)))  # calls no thread has claimed yet
        self.workers.hand(self._claiming, slots, calls, pending)
        if (
            len(calls) > 1
            and self.workers.limit != 1
            and (timeout is None or timeout > OFFER_AFTER)
            and not slots.filled_within(OFFER_AFTER)
        ):
            for _ in range(len(pending)):
                self.workers.offer(self._claiming, slots, calls, pending)
        left = None if timeout is None else timeout - (self.clock() - started)
        slots.wait(left)
        return self.settled(calls, slots, started)

    def fill(self, calls: Sequence[Call], slots: Slots) -> None:
        """Run the calls from this thread (with no deadline of its own: another thread keeps
        it, and may ``close`` the slots), each outcome into its slot, as ``run_batch`` runs
        them. Returns once every slot is filled or the slots are closed."""
        if len(calls) == 1 or self.workers.limit == 1:
            for i, job in enumerate(calls):
                self._fill(slots, i, job)
        else:
            self._share(calls, slots, self._fill)
        slots.wait(None)

    def _share(self, calls: Sequence[Call], slots: Slots, run: Fill) -> None:
        """Run the calls on this thread in request order, each with ``run`` into its slot,
        while a worker is offered the calls not started yet. The offer stands until a worker
        takes it up, for whichever batch is running by then: a worker gets the interpreter
        when this thread waits (a tool blocked on I/O or asleep) or has run past the switch
        interval, so it finds calls still waiting only in a batch that is not done by then
        (``_help``), and a run of trivial batches costs one offer, not one each. An interrupt
        here closes the slots, so no call is started after it. Returns when this thread finds
        no call left to start (others may be running)."""
        pending = deque(range(1, len(calls)))  # calls no thread has started yet
        sharing = self._sharing = (slots, calls, pending)
        if not self._offered:  # looked at after _sharing is set, and set before the offer is
            self._offered = True  # made: see _standing
            try:
                self.workers.offer(self._standing)
            except BaseException:
                self._offered = False
                raise
        try:
            index = 0
            while not slots.closed:
                run(slots, index, calls[index])
                try:
                    index = pending.popleft()  # atomic: each call is started by one thread
                except IndexError:
                    break
        except BaseException:
            slots.close()
            pending.clear()  # nothing for a worker to take up
            raise
        finally:
            if self._sharing is sharing:  # (an abandoned batch's thread may end after the next)
                self._sharing = None

    def _standing(self) -> None:
        """The standing offer, taken up by a worker: it helps the batch running now, if any.
        It withdraws itself first, so that a batch started from then on is offered again
        (``_share`` sets the batch before it looks whether an offer stands)."""
        self._offered = False
        sharing = self._sharing
        if sharing is not None:
            self._help(*sharing)

    def _help(self, slots: Slots, calls: Sequence[Call], pending: deque[int]) -> None:
        """A worker's part of a batch that is not a trivial one (calls are still waiting when
        a worker gets to run): a worker is offered for each call still waiting, and this one
        takes calls no thread has started, as they do."""
        try:
            for _ in range(len(pending) - 1):
                self.workers.offer(self._claiming, slots, calls, pending)
        except Exception:  # no thread to be had: the waiting calls are taken by those running
            pass
        self._claiming(slots, calls, pending)

    def _put(self, slots: Slots, index: int, job: Call) -> None:
        """Run one call into ``slots[index]``; an interrupt raised in it goes on here."""
        slots.put(index, self.run_one(job))

    def settled(self, calls: Sequence[Call], slots: Slots, started: float) -> BatchDone:
        """The batch's outcomes from its slots, once they are filled or closed: a call with no
        outcome was still running at the deadline, and is abandoned; one that never started is
        skipped, saying so."""
        finished = slots.close()
        done = []
        for i, (job, value) in enumerate(zip(calls, slots.values, strict=True)):
            if isinstance(value, BaseException):  # an interrupt raised inside a tool
                raise value
            if value is None and i not in slots.begun:  # it never started: it did not run
                value = self.refuse(job.request, job.id, "skipped", NOT_STARTED)
            elif value is None:  # still running at the deadline
                seconds = self.clock() - started
                value = self.refuse(job.request, job.id, "error", ABANDONED, seconds)
            done.append(value)
        return BatchDone(done, not finished)

    def _claiming(self, slots: Slots, calls: Sequence[Call], pending: deque[int]) -> None:
        """Run the calls no thread has claimed yet, one at a time, each into its slot."""
        while True:
            try:
                index = pending.popleft()  # atomic: each call is claimed by one thread
            except IndexError:
                return
            self._fill(slots, index, calls[index])

    def _fill(self, slots: Slots, index: int, job: Call) -> None:
        """Run one call into ``slots[index]``, unless the wait for them is over."""
        if not slots.begin(index):  # past the deadline: a call not started by then is not
            return  # started
        try:
            outcome: Ran | BaseException = self.run_one(job)
        except BaseException as exc:  # KeyboardInterrupt or SystemExit: the waiting side raises
            outcome = exc
        slots.put(index, outcome)

    async def arun_batch(self, calls: Sequence[Call], timeout: float | None) -> BatchDone:
        """The async batch: every call a task; at the deadline, what is in flight is cancelled."""
        if not calls:
            return BatchDone([])
        started = self.clock()
        tasks = [asyncio.ensure_future(self.arun_one(c)) for c in calls]
        try:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise
        for task in pending:
            task.cancel()
        done = [
            self.refuse(c.request, c.id, "error", ABANDONED, self.clock() - started)
            if task in pending
            else task.result()
            for task, c in zip(tasks, calls, strict=True)
        ]
        return BatchDone(done, bool(pending))


async def _settled(
    fn: Callable[..., Any], args: dict[str, Any]
) -> tuple[Any, BaseException | None]:
    """An async tool's value, or what it raised (``CancelledError`` too), as a pair."""
    try:
        return await fn(**args), None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a tool's failure is a result the model reads
        return None, exc


def _unawaited(value: Any) -> TypeError:
    """The failure of a tool that is not ``async def`` but returned something to await."""
    if inspect.iscoroutine(value):
        value.close()  # never to be awaited: closed, so Python does not warn about it later
        kind = "a coroutine"
    else:
        kind = f"an awaitable {type(value).__name__}"
    return TypeError(f"the tool returned {kind}, which nothing awaits: declare it with async def")


def describe(exc: BaseException) -> str:
    """``Type: message``; a message that itself cannot be shown is said to be so. An error
    played back from a trace is the recorded text, as the model read it then."""
    if isinstance(exc, RecordedError):
        return exc.recorded
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: (its message could not be shown)"


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
