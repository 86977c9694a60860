"""The loop: plan a turn, call the model, commit what happened.

A run's state is one object, ``RunState``: its steps, its context, its money and how it ended.
A turn is written once, as a generator (``Turning._turn``; its protocol is in ``_turn.py``)
that yields what it needs done, a model call and then a tool batch, and is sent back the
outcome. ``Loop`` is built in layers, one module each, every layer owning one concern and
calling the one below it (docs/architecture.md draws them):

- ``Loop`` (here): a run started, restored or forked, and each step begun and ended;
- ``Turning`` (``_turning``): a held batch first, then plan, reserve, call, commit;
- ``Committing`` (``_commit``): what a reply does: a failure, a final answer, a batch, a hold;
- ``Planning`` (``_planning``): the next turn's projection, final answer and stop;
- ``Compacting`` (``_compacting``): what a ``context=`` policy sends of the context, and a
  summary's call;
- ``Records`` (``_records``): a finished turn made part of the run, and the trace's text;
- ``Setup`` (``_setup``): the run's state from its options, its clock, what a caller reads.

A turn's three parts:

1. plan: the turn's worst case, whether it is the final answer (``finish=True``), and the stop
   before it if a ceiling says so (``Guards``, the policies of ``_finish``);
2. call: reserve the worst case, call the model (its lease renewed while it runs), bill the
   call the moment it is over (``Money``), interrupts included;
3. commit: the call failed, or it was the final answer, or its tool batch ran, or was skipped
   because no later call could read the results.

``Session.step`` calls the model on the calling thread (on a worker thread when there is a
deadline to keep or an ``async def`` model to run) and runs the batch as ``Dispatch.run_batch``
says; ``AsyncSession.step`` awaits both. Both drivers run this one turn, so they obey the same
guards by construction.

A turn is committed whole at its end (step, messages, stop). The one exception is money: a model
call that returned is billed at once, so a turn that breaks after it (an interrupt in a tool, a
cancelled task, a raising ``redact``) still records its step, with the calls that never finished
marked, and the context stays a valid conversation.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._features._held import Held, Taken
from .._tools._approval import APPROVED, Decision, ask
from .._trace._fork import context_before, fork_point, message_list
from .._trace._result import Result, Step
from ..events import RunEnded
from ._events import Emitter, OnEvent
from ._options import (
    ForkOptions,
    Options,
    StartOptions,
    check_names,
    initial_messages,
    option_names,
)
from ._reading import Model
from ._stream import Stream
from ._turn import Batch, BatchDone, Decided, Hold, ModelCall, Plan, Request, received
from ._types import Completion, Message, to_pico
from ._valid import must, type_name

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; the annotations are never evaluated on 3.10

from ._turning import Turning

L = TypeVar("L", bound="Loop")

_LISTENING = threading.Lock()  # a session's on_event listeners, added or removed


class Loop(Turning):
    """The loop's state and its turn; ``Session`` and ``AsyncSession`` drive it. A run is
    started, restored or forked here, and each step begins and ends here."""

    def __init__(
        self, complete: Model, prompt: str | Sequence[Message], **options: Unpack[StartOptions]
    ) -> None:
        self._start(type(self).__name__, complete, prompt, options)

    @classmethod
    def _open(
        cls: type[L],
        where: str,
        complete: Model,
        prompt: str | Sequence[Message],
        options: Mapping[str, Any],
    ) -> L:
        """A session started by the entry point ``where`` (``run``, ``start``, ``run_many``...),
        which a configuration error names."""
        session = cls.__new__(cls)
        session._start(where, complete, prompt, options)
        return session

    def _start(
        self,
        where: str,
        complete: Model,
        prompt: str | Sequence[Message],
        options: Mapping[str, Any],
    ) -> None:
        check_names(where, options, option_names(StartOptions))
        opts = Options.read(complete, where, options)
        context = initial_messages(prompt, opts.values["system"], where)
        self._build(complete, opts, context, (), 0)
        self._prompt = prompt
        if where in ("run", "arun", "run_many", "replay"):  # else the user steps it
            self._caller = where  # the entry point that runs it to the end names its errors

    @classmethod
    def restore(
        cls: type[L], result: Result, complete: Model, where: str, options: Mapping[str, Any]
    ) -> L:
        """A session holding a saved run's context, steps and spend, to ``fork`` from; an
        error in ``options`` names ``where``."""
        session = cls.__new__(cls)
        opts = Options.read(complete, where, options)
        spent = to_pico(result.cost_usd or 0.0)  # an imported run of unknown cost: none known
        session._build(complete, opts, result.messages, result.steps, spent)
        session._prompt = list(result.messages)
        session.run_id = result.run_id  # the saved run itself, so a fork from it names it
        session.state.money.known = result.cost_usd is not None  # unknown stays unknown
        return session

    @classmethod
    def restore_held(
        cls: type[L], result: Result, complete: Model, where: str, options: Mapping[str, Any]
    ) -> L:
        """The run that ended held (``result``), holding its batch again, as it stood: the same
        run id, spend, time and steps, its standing rules, and its calls undecided but for
        those a rule decides. ``options`` as ``restore`` takes them."""
        session = cls.restore(result, complete, where, options)
        session.forked_from, session.edited = result.forked_from, result.edited
        session.state.elapsed = result.seconds  # the time held is not the run's
        session._rules = result.rules
        turn = result.held
        assert turn is not None
        step, message = turn.step, turn.message
        calls = received(message.tool_calls, step.index)
        signature = session._repeats.signature(calls) if calls else None
        loop = None if signature is None else session._repeats.loop(signature)
        completion = Completion(
            step.text, message.tool_calls, step.usage, model=step.model,
            response_id=step.response_id, finish_reason=step.finish_reason,
        )  # fmt: skip
        assert step.projection is not None  # budgetloop's own steps have one
        plan = Plan([], step.projection, None, None, None)
        cost = to_pico(step.cost_usd or 0.0)
        warn = session._repeats.warns(loop)
        taken = Taken(plan, completion, cost, step.index, calls, message, signature, loop, warn)
        pending = result.pending
        held = Held(taken, pending, {}, step.seconds, step, message, pending, recorded=True)
        held.decisions.update(
            (key, decision)
            for key, decision in session._ruled(pending).items()
            if decision is not APPROVED or not next(c for c in pending if c.id == key).redacted
        )  # a rule does not run a call recorded with marks: it waits for its arguments
        session._held = held
        return session

    def fresh(self: L) -> L:
        """A new session with this one's model, prompt, tools, budget and every option, at
        its first step: what a notebook's Reset needs. (A scripted model keeps its place:
        ``ScriptedModel.reset()`` rewinds it.)"""
        return type(self)(self.complete, self._prompt, **self.options.given)

    def fork(
        self: L,
        at: int | None = None,
        *,
        messages: Sequence[Message] | None = None,
        **options: Unpack[ForkOptions],
    ) -> L:
        """A new session that goes on from before step ``at`` (default: now).

        Its context is the messages as they stood before step ``at``, or ``messages`` (an
        edited context) when given; every ``start()`` option is kept unless given here
        (``complete=`` for another model). Money spent stays spent: the fork starts at all
        this session has spent; its steps and tool calls count those before ``at``; its
        ``max_seconds`` counts only its own steps' time.
        """
        return self._fork(f"{type(self).__name__}.fork", at, messages, options)

    def _fork(
        self: L,
        where: str,
        at: int | None,
        messages: Sequence[Message] | None,
        options: Mapping[str, Any],
    ) -> L:
        """``fork``, its errors naming ``where`` (``Session.fork``, ``resume``, ``replay``)."""
        check_names(where, options, option_names(ForkOptions))
        at = fork_point(self.state.steps, at, where)
        changes = dict(options)
        complete = changes.pop("complete", self.complete)
        opts = self.options.with_(complete, changes, where)
        if messages is None:
            context = self.state.messages[
                : context_before(self.state.messages, self.state.steps, at)
            ]
            before: Sequence[Message] = context
        else:
            context = message_list(messages, where)
            try:
                at_fork = context_before(self.state.messages, self.state.steps, at)
                before = self.state.messages[:at_fork]
            except ValueError:  # the run's messages do not say: every message is the fork's
                before = ()
        forked = type(self).__new__(type(self))
        forked._build(complete, opts, context, self.state.steps[:at], self.state.money.spent)
        forked._prompt = list(context)
        forked.forked_from = self.run_id
        forked.state.money.known = self.state.money.known
        forked._rules = self._rules
        forked.edited = edited_messages(before, context, self.edited)
        return forked

    def interrupt(self) -> None:
        """Stop the run as a person would, from any thread (or task): a reply streaming now
        is cut at its next chunk, or at once where the run waits on it from another thread
        (with ``max_seconds``, or under ``arun``), even one that sends nothing more (its text
        kept, its ``finish_reason`` ``"cut"``, its tool calls recorded ``skipped``); with no
        reply streaming, a tool batch not begun is not
        run and no further model call is sent. The run ends with ``Stop.INTERRUPTED``; a
        reply that is not streamed is awaited to its end (and billed) first."""
        self._interrupt.set()

    def on_event(self, listener: OnEvent) -> Callable[[], None]:
        """Call ``listener(event)`` with each later event of the run (``budgetloop.events``),
        as the run option ``on_event=fn`` is called: after ``fn`` when the run has one, then
        the listeners in the order added, on the thread (or task) that drives the run, a
        streamed reply's pieces as they arrive (while no listener nor ``fn`` is an ``async
        def``), redacted with ``redact=``. What a listener raises is kept in
        ``Result.event_errors`` and never stops the run; a ``KeyboardInterrupt`` is raised
        as ``fn``'s is. Returns a function that removes it. A listener is this session's
        only (a ``fresh()`` or ``fork`` session has none). One added between steps hears all
        of the next; one added while a step is being taken may miss that step's first events.
        """
        where = f"{type(self).__name__}.on_event"
        if not callable(listener):
            raise TypeError(must(where, "listener", "a function (event)", type_name(listener)))
        with _LISTENING:
            events = self._events
            if events is None:  # no on_event=: the run's events are made from now on
                events = self._events = Emitter(None, self._redactor)
                self._on_piece = self._piece
            events.listen(listener)

        def remove() -> None:
            with _LISTENING:
                events.unlisten(listener)

        return remove

    def _opened(self, request: ModelCall | None = None, *, kept: bool = True) -> Stream:
        """A stream for the reply of the step being taken, cut at the deadline and by an
        interrupt; kept as ``request``'s (for the waiting thread to cut) when given and
        ``kept``. A summarizer's reply (``request.model``) is no step's: its pieces are no
        events."""
        deadline = self._deadline()
        own = request is None or request.model is None
        on_piece = self._on_piece if own else None
        stream = Stream(self._clock, self._origin, deadline, self._interrupt, on_piece)
        if request is not None and kept:
            self._streaming = (request, stream)
        return stream

    # -- bookkeeping ------------------------------------------------------------------------------

    def _named(self, method: str) -> str:
        """Who a step's refusal names: the entry point that runs the session to its end
        (``run``, ``arun``, ``run_many``, ``replay``), else the session's ``method`` the user
        called (``Session.run``, ``AsyncSession.step``)."""
        return self._caller or f"{type(self).__name__}.{method}"

    def _begin(self, where: str) -> float:
        """A step starts: no call waits for a decision, one step at a time, on a clock that
        does not run backwards. A refusal names ``where`` (``_named``)."""
        if self._held is not None:
            self._check_decided(where)
        if not self._stepping.acquire(blocking=False):
            raise RuntimeError(
                f"{where}: the session must be idle, got another step running; a session "
                "takes one turn at a time (use fork() or another session to run in parallel)."
            )
        try:
            now = self._clock()
            if not now >= self._last_clock:  # also NaN
                raise ValueError(
                    f"{where}: clock must be monotonic, got {self._last_clock!r} then {now!r} "
                    "(backwards, or NaN); pass a monotonic clock such as time.monotonic."
                )
            self._last_clock = now
            self._origin = now
            self._committed = []
            if self._journal is not None and not self._journal.started:
                self._journal.header(self.result)
                for kept in self.state.steps[
                    : self._kept
                ]:  # a fork's history: its context is above
                    self._journal.step(kept, [])
        except BaseException:
            self._stepping.release()
            raise
        return now

    def _end(self) -> None:
        try:
            try:
                self.state.elapsed += self._since(self._origin)
            finally:  # a clock that raises still leaves an ended run's file ended
                if self.done:
                    self._workers.close()
                    if self._journal is not None:
                        self._journal.end(self.result)
                        self._journal = None
                    if self._events is not None:  # made when it is handed: the final result
                        self._events.put(lambda: RunEnded(self.result))
        finally:
            self._stepping.release()

    def _cut_by_event(self, request: Request) -> Any:
        """What a request is answered with once ``on_event``'s function has interrupted the
        run (a ``KeyboardInterrupt``), for the driver to raise it once the step is recorded: a
        model call is not sent (the interrupt is raised now, nothing recorded), a batch is not
        started (each call skipped), and a held batch stays held (no one is asked)."""
        events = self._events
        assert events is not None
        assert events.interrupt is not None
        if isinstance(request, ModelCall):
            raise events.take()
        if isinstance(request, Batch):
            why = (
                f"not started: the run was interrupted ({type(events.interrupt).__name__}) "
                "in on_event before the batch started"
            )
            return BatchDone([self._not_run(c, "skipped", why) for c in request.calls])
        return None

    def _decide(self, hold: Hold) -> Decided | None:
        """A held batch's decisions, on this thread: ``approve`` asked about each call in turn,
        or None when there is no one to ask now (the session holds the batch)."""
        approve = self.options.values["approve"]
        if approve is None or isinstance(approve, str) or not hold.ask:  # "hold": ends held
            return None
        began = self._clock()
        decisions = {call.id: ask(approve, call) for call in hold.pending}
        return self._waited(decisions, began)

    def _waited(self, decisions: dict[str, Decision], began: float) -> Decided:
        """The decisions, and the time spent waiting for them since ``began``: not counted
        against ``max_seconds`` nor in the step's time (the step's origin moves on by it; the
        turn moves its own start on when it is sent them)."""
        waited = self._since(began)
        self._origin += waited
        return Decided(decisions, waited)

    def _stepped(self, step: Step | None) -> None:
        """``on_step``, for each step the step just taken recorded (a held batch's, then its
        own), or with None when it recorded none and holds nothing (the run stopped)."""
        hook = self.options.values["on_step"]
        if hook is None:
            return
        if self._committed:
            for each in self._committed:
                hook(self, each)  # type: ignore[arg-type]
        elif self._held is None:
            hook(self, None)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def _stopping_before(self, until: object) -> Iterator[None]:
        """While ``run(until=...)`` runs: the tools a breakpoint stops before
        (``breakpoints.before_tool``) hold their calls' batches."""
        tools = getattr(until, "before_tools", None)
        if not isinstance(tools, frozenset):
            yield
            return
        was = self._hold_tools
        self._hold_tools = was | tools
        try:
            yield
        finally:
            self._hold_tools = was


def edited_messages(
    before: Sequence[Message], context: Sequence[Message], already: tuple[int, ...]
) -> tuple[int, ...]:
    """The indexes of ``context`` a fork changed from ``before`` (edited, added, or another
    message where one was), with those an earlier fork changed that this one kept as they were."""
    changed = {i for i, m in enumerate(context) if i >= len(before) or m != before[i]}
    kept = {i for i in already if i < len(context) and i < len(before) and i not in changed}
    return tuple(sorted(changed | kept))
