"""``Session``: the loop with the ``while`` taken out, driven one turn at a time.

The model and the tools run on the calling thread, or on other threads when there is a
deadline to keep, an ``async def`` model to run on a loop of its own, or several calls in one
batch to overlap. With a deadline (``max_seconds``) the whole step, the turn's own bookkeeping
with its model call and tool batch, runs on the session's own thread while the calling thread
waits until the deadline: one hand-off each way a step. At the deadline the calling thread takes
the turn back, records what was in flight as abandoned, and returns.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from .._rules._money import raised
from .._tools._pool import Slots
from .._trace._result import Result, Step
from ._loop import Loop
from ._options import is_async
from ._stream import Stream, streams
from ._turn import (
    Batch,
    BatchDone,
    Decided,
    Hold,
    ModelCall,
    Reply,
    Request,
    as_reply,
    unsent,
)
from ._turning import Turn
from ._types import Completion, Stop
from ._valid import must, type_name

Until = Callable[["Session"], bool]


class Handed(NamedTuple):
    """How the deadline's driver (``max_seconds``) answers one kind of request: ``here`` on
    the session's own thread, and ``cut`` when the waiting thread takes the turn back at the
    deadline; ``slots`` are what ``here`` fills and the deadline closes (None: nothing to
    close), made before it starts. Each is called as ``(session, request, slots, since)``,
    ``since`` being when the request started. A request ``back`` is handed back and answered
    on the waiting thread instead, with no deadline running (a person deciding a held batch),
    and then the turn is handed on again."""

    here: Callable[[Session, Any, Any, float], Any]
    cut: Callable[[Session, Any, Any, float], Any]
    slots: Callable[[Any], Slots | None] = lambda request: None
    back: bool = False


def _batch_slots(request: Batch) -> Slots:
    return Slots(len(request.calls))


class Session(Loop):
    """One run, advanced a turn at a time with ``step()``. Build it with ``start(...)``."""

    def run(self, until: Until | None = None) -> Result:
        """Step until the run stops, and return the result.

        ``until(session)`` is checked after every step; when it returns True the run pauses
        (``done`` stays False) and the next ``run()`` or ``step()`` goes on from there.
        """
        where = self._named("run")
        if until is not None and not callable(until):
            expected = "a function (session) -> bool"
            raise TypeError(must(where, "until", expected, type_name(until)))
        with self._stopping_before(until):
            while not self.done:
                self._step(where)
                if self._held is not None:  # a batch waits for a person: the run pauses
                    break
                if until is not None and not self.done and until(self):
                    break
        return self.result

    def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it.

        A batch with calls held for a person (``needs_approval``, no ``approve=``) is held:
        this returns the step with the model's reply (its calls wait in ``pending``, not yet in
        its ``tool_calls``), and the next ``step()`` runs the batch once each call is decided,
        then takes its own turn (returning the last step it recorded)."""
        return self._step(self._named("step"))

    def _step(self, where: str) -> Step | None:
        """``step()``, a refusal naming ``where``: the entry point the user called."""
        if self.done:
            return None
        started = self._begin(where)
        events = self._events
        if events is not None:
            events.interrupt = None  # one kept by a step that raised anyway is gone with it
        try:
            if self.budget.max_seconds is None:
                step = self._drive(self._turn(started))
            else:
                step = self._drive_handed(self._turn(started))
        finally:
            if events is None:
                self._end()
            else:  # the step's events, then the run's end (RunEnded) once it is over
                try:
                    events.flush()
                finally:
                    self._end()
                    events.flush()
        if events is not None and events.interrupt is not None:  # the step is recorded
            raise events.take()
        self._stepped(step)
        return step

    def _drive(self, turn: Turn) -> Step | None:
        """Do what the turn asks (each request by its entry in ``_answers``), send back the
        outcome, until it returns its step. The events the turn put are handed to
        ``on_event`` before each request is answered."""
        answers, events = self._answers, self._events
        try:
            request = next(turn)
            while True:
                if events is not None and events.flush():  # on_event interrupted the run
                    request = turn.send(self._cut_by_event(request))
                    continue
                try:
                    outcome = answers[type(request)](self, request)
                except BaseException as exc:  # the turn records what it knows, and re-raises
                    request = turn.throw(exc)
                else:
                    request = turn.send(outcome)
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            turn.close()

    # -- with a deadline: the whole turn on the session's own thread -----------------------------

    def _drive_handed(self, turn: Turn) -> Step | None:
        """``_drive`` on the session's own thread while this one waits until the deadline: one
        hand-off a step. At the deadline (or an interrupt) this thread takes the turn back:
        what is in flight is abandoned, and the turn records it here. A request handed
        ``back`` is answered here, with no deadline running, and the turn is handed on."""
        first: Any = _START
        while True:
            shared = _Shared()
            self._workers.hand(self._drive_there, Slots(1), turn, shared, first)
            try:
                ended = self._wait_there(shared, _seconds(self._left(self._origin)))
            except BaseException as exc:  # an interrupt while waiting
                return self._take_over(turn, shared, exc)
            if not ended:
                return self._take_over(turn, shared, None)
            back = shared.back
            if back is None:
                return self._ended(turn, shared)
            try:
                first = self._handed[type(back)].here(self, back, None, self._clock())
            except BaseException as exc:  # an interrupt while a person decides
                try:
                    turn.throw(exc)  # the turn records what it knows, and re-raises
                finally:
                    turn.close()
                raise

    def _wait_there(self, shared: _Shared, timeout: float) -> bool:
        """Wait ``timeout`` seconds (-1: no end) for the turn driven there to let go of it:
        True when it did; False at the deadline, or when ``interrupt()`` came while a reply
        streams there (it is cut now, not at its next chunk, which may never come)."""
        end = None if timeout < 0 else time.monotonic() + timeout
        while True:
            left = _INTERRUPT_POLL if end is None else min(end - time.monotonic(), _INTERRUPT_POLL)
            if shared.done.acquire(timeout=max(left, 0.0)):
                return True
            if end is not None and time.monotonic() >= end:
                return False
            if self._interrupt.is_set():
                with shared.lock:
                    request = shared.request
                streaming = self._streaming
                if streaming is not None and streaming[0] is request:
                    return False

    def _drive_there(self, finished: Slots, turn: Turn, shared: _Shared, first: Any) -> None:
        """On the session's own thread: ``_drive`` (each request by its entry in ``_handed``),
        handing the turn back between requests if the waiting thread has taken it over, or
        for a request answered there (``back``). ``first`` is what the turn is sent to go on
        (``_START``: it starts). ``finished`` is filled when this returns."""
        handed = self._handed
        try:
            request = next(turn) if first is _START else turn.send(first)
            events = self._events
            while True:
                if events is not None and events.flush():  # on_event interrupted the run
                    request = turn.send(self._cut_by_event(request))
                    continue
                answer = handed[type(request)]
                with shared.lock:
                    if shared.taken:  # the deadline passed while the turn ran: not performed
                        shared.parked = request
                        return
                    if answer.back:  # answered on the waiting thread
                        shared.back = request
                        return
                    shared.since = None  # until it is read: a clock may raise
                    shared.request = request
                    slots = shared.slots = answer.slots(request)
                failure: BaseException | None = None
                outcome: Any = None
                try:
                    since = shared.since = self._clock()
                    outcome = answer.here(self, request, slots, since)
                except BaseException as exc:  # the turn records what it knows, and re-raises
                    failure = exc
                with shared.lock:
                    if shared.taken:  # abandoned at the deadline: the waiting thread has it
                        return
                    shared.request = None
                request = turn.send(outcome) if failure is None else turn.throw(failure)
        except StopIteration as stop:
            shared.ending = (stop.value, None)
        except BaseException as exc:  # raised out of the turn: the waiting thread raises it
            shared.ending = (None, exc)
        finally:
            shared.done.release()
            finished.put(0, True)

    def _take_over(
        self, turn: Turn, shared: _Shared, interrupt: BaseException | None
    ) -> Step | None:
        """The deadline passed (or ``interrupt`` came): end the turn on this thread, each
        request left answered by its entry in ``_handed`` as cut off at the deadline."""
        with shared.lock:
            shared.taken = True
            request = shared.request
            slots = shared.slots
        if request is None:  # the turn's own code is running there: it stops at its next request
            shared.done.acquire()
            if shared.ending is not None:  # the turn ended first
                if interrupt is not None:
                    raise interrupt
                return self._ended(turn, shared)
            request, slots = shared.parked, None
        try:
            if interrupt is not None:
                if slots is not None:
                    slots.close()
                elif self._streaming is not None:  # a stream read there is read no more
                    self._streaming[1].cut(Stop.INTERRUPTED)
                request = turn.throw(interrupt)
            while True:
                try:
                    since = shared.since if shared.since is not None else self._clock()
                except BaseException as exc:  # the turn records what it knows, and re-raises
                    request = turn.throw(exc)
                    continue
                outcome = self._handed[type(request)].cut(self, request, slots, since)
                slots = None
                request = turn.send(outcome)
        except StopIteration as stop:
            step: Step | None = stop.value
            return step
        finally:
            turn.close()

    def _ended(self, turn: Turn, shared: _Shared) -> Step | None:
        turn.close()
        step, failure = shared.ending or (None, None)
        if failure is not None:
            raise failure
        return step

    def _call_model_here(self, request: ModelCall, slots: None, since: float) -> Reply:
        """The model call on this thread, with no deadline of its own (another thread keeps
        it); an ``async def`` model on a loop of this thread's own."""
        if self._interrupt.is_set():  # interrupt() came before it was sent: it is not
            return unsent()
        try:
            value = self._called(request)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return raised(exc)
        if isinstance(value, Completion):
            return Reply(value)
        return self._streamed(value, request)

    # -- the model, on this thread or a worker ----------------------------------------------------

    def _call_model(self, request: ModelCall) -> Reply:
        if self._interrupt.is_set():  # interrupt() came before it was sent: it is not
            return unsent()
        try:
            model_async = self._async_model if request.model is None else is_async(request.model)
            if request.timeout is None and not model_async:
                value = (request.model or self.complete)(
                    request.messages, request.tools, **request.keywords
                )
            else:
                slots = Slots(1)
                self._workers.hand(self._call_on_worker, slots, request)
                if not slots.wait(request.timeout):
                    return abandoned()
                value, failure = slots.values[0]
                if failure is not None:
                    raise failure
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return raised(exc)
        if isinstance(value, Completion):
            return Reply(value)
        return self._streamed(value, request)

    def _called(self, request: ModelCall) -> Any:
        """What the model (a summarizer's for its request, else the run's) returned for
        ``request``: an ``async def`` model's awaited on a loop of this thread's own, and a
        stream it returns read there."""
        value = (request.model or self.complete)(
            request.messages, request.tools, **request.keywords
        )
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value, lambda: self._opened(request)))
        return value

    def _streamed(self, value: Any, request: ModelCall) -> Reply:
        """What a model returned that is not a ``Completion``: a stream of chunks read to its
        end (or until it is cut), here; else why it is not one."""
        if isinstance(value, Reply):  # an async model's stream, read on its own loop
            return value
        if hasattr(value, "__next__"):
            return self._opened(request).read(value)
        if streams(value):  # an async stream of a sync model: read on a loop of its own
            return asyncio.run(self._opened(request).aread(value))
        return as_reply(value)

    def _call_on_worker(self, slots: Slots, request: ModelCall) -> None:
        """The model call on the session's own thread: (value, None) or (None, what it raised)
        into ``slots``."""
        try:
            value = self._called(request)
        except BaseException as exc:  # handed to the waiting side, which decides
            slots.put(0, (None, exc))
        else:
            slots.put(0, (value, None))

    def _run_batch(self, request: Batch) -> BatchDone:
        return self._dispatch.run_batch(request.calls, request.timeout)

    # -- with a deadline: a batch on the session's own thread, and each request cut off -------

    def _batch_here(self, request: Batch, slots: Slots, since: float) -> BatchDone:
        self._dispatch.fill(request.calls, slots)
        return self._dispatch.settled(request.calls, slots, since)

    def _batch_cut(self, request: Batch, slots: Slots | None, since: float) -> BatchDone:
        """A batch at the deadline: a call not finished is abandoned, one not started is not
        started (``slots`` None: the batch was not begun)."""
        slots = slots or Slots(len(request.calls))
        slots.close()
        return self._dispatch.settled(request.calls, slots, since)

    def _model_cut(self, request: ModelCall, slots: None, since: float) -> Reply:
        """A model call at the deadline (or ``interrupt()``): a reply streaming is cut there
        (what arrived is kept, and its stream is read no more); any other call is abandoned."""
        streaming = self._streaming
        if streaming is None or streaming[0] is not request:
            return abandoned()
        stop = Stop.INTERRUPTED if self._interrupt.is_set() else Stop.MAX_SECONDS
        return streaming[1].cut(stop)

    def _hold_here(self, request: Hold, slots: None, since: float) -> Decided | None:
        return self._decide(request)

    def _hold_cut(self, request: Hold, slots: None, since: float) -> Decided:
        """A held batch at the deadline: no one is asked, and its batch is then cut off (its
        calls not started)."""
        return Decided({})

    # -- the tables: what each request of a turn (``_turn.REQUESTS``) is answered with ----------

    _answers: ClassVar[Mapping[type, Callable[[Session, Any], Any]]] = {
        ModelCall: _call_model,
        Hold: Loop._decide,
        Batch: _run_batch,
    }
    _handed: ClassVar[Mapping[type, Handed]] = {
        ModelCall: Handed(_call_model_here, _model_cut),
        Hold: Handed(_hold_here, _hold_cut, back=True),
        Batch: Handed(_batch_here, _batch_cut, _batch_slots),
    }


class _Shared:
    """A turn driven on the session's own thread, as the waiting thread sees it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Lock()  # released when that thread lets go of the turn
        self.done.acquire()
        self.taken = False  # the waiting thread has taken the turn back
        self.request: Request | None = None  # in flight there (None: turn code runs)
        self.slots: Slots | None = None  # the in-flight batch's outcomes
        self.since: float | None = None  # when the in-flight request started
        self.parked: Any = None  # the request the turn asked for after it was taken back
        self.back: Request | None = None  # a request handed back, to answer on that thread
        self.ending: tuple[Step | None, BaseException | None] | None = None


_INTERRUPT_POLL = 0.05  # how often a thread waiting on a reply streaming sees interrupt()
_START = object()  # what _drive_there is given to start a turn rather than go on with it


def _seconds(left: float | None) -> float:
    return -1 if left is None else min(max(left, 0.0), threading.TIMEOUT_MAX)


def abandoned() -> Reply:
    """The reply for a model call still running when ``max_seconds`` passed."""
    return Reply(
        None, "TimeoutError: the model call was still running when max_seconds passed", True
    )


async def _awaited(value: Any, opened: Callable[[], Stream]) -> Any:
    """An async model's value; an async stream it returned is read on the same loop (the
    reply it makes)."""
    value = await value
    if hasattr(value, "__anext__"):
        return await opened().aread(value)
    return value
