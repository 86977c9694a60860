"""The loop: plan a turn, call the model, commit what happened.

A run's state is one object, ``RunState``: its steps, its context, its money and how it ended.
A turn is written once, as a generator (``Loop._turn``; its protocol is in ``_turn.py``) that
yields what it needs done, a model call and then a tool batch, and is sent back the outcome:

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
import functools
import json
import threading
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from ._approval import APPROVED, Decision, PendingCall, ask
from ._budget import MESSAGE_OVERHEAD, Projection, worst_pico
from ._budget import project as project_cost
from ._ceilings import Now, Used, calls_run
from ._context import ContextTokens, checked
from ._dispatch import Dispatch
from ._finish import budget_note, final_note, last_turn, then_final_answer
from ._guards import Guards
from ._held import Held, Holding, Taken
from ._ledgers import Reservation
from ._money import Money, call_cost
from ._options import (
    ForkOptions,
    Model,
    Options,
    StartOptions,
    check_names,
    initial_messages,
    is_async,
    option_names,
)
from ._output import ASK_AGAIN, FINAL_ANSWER, Answer, final_ask
from ._pool import Workers
from ._redact import WITHHELD, WITHHOLD, Redactor, Said, strict
from ._repeats import Repeats, warning
from ._schema._tool import Tool
from ._state import RunState
from ._trace._fork import context_before, fork_point, message_list
from ._trace._journal import Journal
from ._trace._result import HeldTurn, Result, RunOptions, Status, Step, new_run_id
from ._turn import (
    Batch,
    BatchDone,
    Call,
    Decided,
    Ending,
    Hold,
    ModelCall,
    NextTurn,
    Plan,
    Ran,
    Reply,
    Request,
    interrupted,
    reaches_tool,
    received,
)
from ._types import Budget, Completion, Message, Price, Stop, from_pico, to_pico

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; the annotations are never evaluated on 3.10

L = TypeVar("L", bound="Loop")
# sent a Reply, then a Decided (or None) for a Hold, then a BatchDone
Turn = Generator[Request, Any, Step | None]


class Loop(Holding):
    """The loop's state and its turn; ``Session`` and ``AsyncSession`` drive it."""

    # What most runs never set is a default of the class, not an attribute of each session:
    # CPython reads an object's attributes fastest while its dict shares its keys with the
    # class's other instances, which it does only up to 30 keys (a test keeps them fewer).
    _caller: str | None = None  # the entry point that runs it to the end, which names errors
    forked_from: str | None = None  # the run_id of the run this one was forked from
    edited: tuple[int, ...] = ()  # the messages a fork changed from its context
    _held: Held | None = None  # a batch waiting for a person (a stepped session)
    _hold_tools: frozenset[str] = frozenset()  # breakpoints.before_tool, while running
    _hold_calls: frozenset[tuple[int, str]] = frozenset()  # replay: the recorded holds
    _least: int | None = None  # min_output_tokens: a turn is fitted down to it
    _settings: str | None = None  # the run's settings, as JSON (a copy goes with each call)

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

    def _build(
        self,
        complete: Model,
        options: Options,
        context: Sequence[Message],
        history: Sequence[Step],
        spent: int,
    ) -> None:
        self.complete = complete
        self.options = options
        given = options.values
        self.run_id = new_run_id()  # this run's: its journal, its spans and its Result say it
        self.budget: Budget = options.budget  # these three are read on every turn
        self.price: Price | None = options.price
        self.max_output_tokens: int | None = given["max_output_tokens"]
        if given["min_output_tokens"] is not None:
            self._least = given["min_output_tokens"]
        if given["settings"]:
            self._settings = json.dumps(given["settings"])
        redact = given["redact"]
        self._redactor = Redactor(None if redact is None else strict(redact))
        self._async_model = is_async(complete)
        self._stepping = threading.Lock()  # one step at a time, from any thread or task
        self._count = ContextTokens(self.schemas, given["count_tokens"])
        self._trace_schemas = self._redactor.schemas(self.schemas)
        self._trace_options = self._recorded_options()
        final = options.output  # output=T: the one tool a final-answer turn is sent
        self._final_tools = [] if final is None else [final.schema]
        self.state = RunState(
            steps=[self._redactor.kept(step) for step in history],
            messages=[],
            trace_messages=[],
            money=Money(spent, given["ledger"]),  # the only place spend changes
            executed=calls_run(history),
        )
        self._kept = len(history)  # steps inherited by a fork, already in its journal header
        self._origin = 0.0  # when the time of the step being taken is counted from
        self._committed: list[Step] = []  # the steps the step being taken has recorded
        self._unraised: list[BaseException] = []  # raised while a step was made: see _record
        self._guards = Guards(options.budget)  # the only place a ceiling is checked
        self._repeats = Repeats(
            given["repeat_limit"], given["cycle_limit"], given["warn_repeats"], history, self.tools
        )
        clock = self._clock = given["clock"]
        self._last_clock = clock()
        for message in context:
            self._append(message)
        self._count.count()  # a broken count_tokens fails here, at start()
        self._workers = Workers(given["max_workers"])
        self._dispatch = Dispatch(
            self.tools, clock, self._workers, given["max_result_chars"], self._redactor
        )
        path = given["trace_path"]
        self._journal = None if path is None else Journal(path)
        weakref.finalize(self, self._workers.close)

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

    # -- what a caller reads ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state.ending is not None

    @property
    def tools(self) -> dict[str, Tool]:
        return self.options.tools

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return self.options.schemas

    @property
    def messages(self) -> list[Message]:
        """The context as it stands: what the next model call would be sent."""
        return list(self.state.messages)

    @property
    def message_tokens(self) -> tuple[int, ...]:
        """Each message of ``messages``' estimated tokens, as the session counted it."""
        return self._count.per_message

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self.state.steps)

    @property
    def projection(self) -> Projection:
        """What the next turn would cost at worst, computed without calling the model."""
        return self._project(self._count.count())[0]

    @property
    def used(self) -> Used:
        """What the run has used of each ceiling so far (the meter's figures)."""
        state = self.state
        return Used(len(state.steps), state.elapsed, state.executed)

    @property
    def result(self) -> Result:
        """The run so far; final once ``done``."""
        ending = self.state.ending
        detail = None if ending is None else ending.detail
        assert not isinstance(detail, Said)  # _end_run keeps the text the trace keeps
        return Result(
            stop=None if ending is None else ending.stop,
            answer=self.state.answer,
            steps=tuple(self.state.steps),
            messages=tuple(self.state.trace_messages),
            cost_usd=self.state.money.total_usd(),
            seconds=self.state.elapsed,
            budget=self.budget,
            error=None if ending is None else ending.error,
            detail=detail,
            price=self.price,
            max_output_tokens=self.max_output_tokens,
            tools=tuple(self._trace_schemas),
            options=self._trace_options,
            run_id=self.run_id,
            forked_from=self.forked_from,
            edited=self.edited,
            output=self.state.output,
            held_usd=0.0 if self._held is None else from_pico(self._held.taken.cost),
            **self._held_fields(),
        )

    def _held_fields(self) -> dict[str, Any]:
        """``Result.held``, ``pending`` and ``rules``: the turn and its calls of a batch held
        (the run ended held, or a stepped session waits), and the standing rules made."""
        out: dict[str, Any] = {"rules": self._rules} if self._rules else {}
        held = self._held
        if held is not None:
            assert held.message is not None
            out["held"] = HeldTurn(held.step, held.message)
            out["pending"] = held.shown
        return out

    def _recorded_options(self) -> RunOptions:
        """The options the trace records; ``output``'s schema as the tools' are kept (through
        ``redact=``)."""
        recorded = self.options.recorded
        final = recorded.get("output")
        if final is not None:
            sent = [s for s in self._trace_schemas if s.get("name") == FINAL_ANSWER]
            if sent:
                recorded["output"] = {**final, "parameters": sent[0].get("parameters")}
        return recorded

    # -- the turn ---------------------------------------------------------------------------------

    def _turn(self, started: float) -> Turn:
        """One turn, as the module's text says: plan, call, commit (``_take``). A batch the
        session held is run first (its step recorded), and then the turn goes on."""
        return self._take(started) if self._held is None else self._resume(started)

    def _resume(self, started: float) -> Turn:
        """The held batch, as decided, then the turn; the step it returns is the last one
        recorded (the batch's, when the run ended with it)."""
        assert self._held is not None
        held, self._held = self._held, None
        out = self._reader_refused(held, started)
        if out is not None:
            return out
        resumed = yield from self._batch_turn(held.taken, held.decisions, started, held.seconds)
        if self.done:
            return resumed
        step = yield from self._take(self._restart(started))
        return resumed if step is None else step

    def _reader_refused(self, held: Held, started: float) -> Step | None:
        """Before a held batch runs: a shared ledger is asked for the turn that will read its
        results (its worst case reserved, then let go: that turn reserves its own). A ledger
        that has run out since the batch was held stops the run (``shared_budget``), the batch
        recorded unrun, skipped."""
        money, taken = self.state.money, held.taken
        if money.ledger is None:
            return None
        projected = self._project(self._cheapest_tokens(taken.calls, taken.assistant))[1]
        reservation, ending = money.reserve(projected)
        if reservation is not None:
            with contextlib.suppress(Exception):  # not let go: its lease runs out by itself
                reservation.release()
        if ending is None:
            return None
        stopped = Said("the run stopped before the decided batch ran (", ending.detail, ")")
        records = [self._not_run(c, "skipped", stopped) for c in taken.calls]
        step = self._call_step(
            taken.index, taken.completion, records, taken.cost, taken.plan.projection, started
        )
        step = replace(step, seconds=step.seconds + held.seconds)
        return self._record(step, taken.assistant, records, ending, taken.signature)

    def _take(self, started: float) -> Turn:
        """A turn from its plan: the model call and what it asked for."""
        # 1. plan: its worst case, a final answer or not, and a stop before it
        plan = self._plan(started)
        if plan.seen is not None:
            self.state.final_tokens, self.state.growth = plan.seen
        reservation, ending, left = None, plan.ending, self._left(started)
        if ending is None:
            reservation, ending = self.state.money.reserve(plan.projected, self._refit(plan))
        if ending is not None:
            self._end_run(ending)
            return None
        # 2. call the model: billed the moment it is over, whatever happens next
        reply, cost = yield from self._call(plan, reservation, left, started)
        # 3. commit what happened
        if reply.completion is None:
            return self._commit_failed(plan, reply, cost, started)
        if plan.final is not None:
            return self._commit_final(plan, reply.completion, cost, started)
        return (yield from self._commit_calls(plan, reply.completion, cost, started))

    def _call(
        self, plan: Plan, reservation: Reservation | None, left: float | None, started: float
    ) -> Generator[ModelCall, Reply, tuple[Reply, int]]:
        """The model call: with tools, or without for a final answer. An interrupt while it
        is in flight bills its worst case (it may be billed) and records the step."""
        final = plan.final is not None
        if not final:
            self._count.sending()
        index = len(self.state.steps)
        tools = list(self._final_tools) if final else list(self.schemas)
        takes = self.options.keywords  # those of a request's keywords the model takes
        keywords = self._request_keywords(plan.projection, takes) if takes else {}
        try:
            with self.state.money.renewing(reservation):  # its lease is kept while it runs
                reply = yield ModelCall([*self.state.messages, *plan.extra], tools, left, keywords)
        except GeneratorExit:
            raise
        except BaseException as exc:
            self.state.money.bill(plan.projected or 0, reservation)
            step = self._model_step(index, None, exc, plan.projection, started)
            self._record(replace(step, final_answer=final))
            raise
        cost = call_cost(reply, plan.projected, self.price)
        self.state.money.bill(cost, reservation)
        usage = None if reply.completion is None else reply.completion.usage
        if usage is not None and not final:  # what was sent is now known
            self._count.reported(usage.input_tokens)
        return reply, cost

    def _request_keywords(self, projection: Projection, takes: frozenset[str]) -> dict[str, Any]:
        """What a request passes the model besides its messages and tools, for those it takes:
        the output tokens its turn was projected at, and a copy of the run's settings."""
        keywords: dict[str, Any] = {}
        if "max_output_tokens" in takes:
            keywords["max_output_tokens"] = projection.output_tokens
        if "settings" in takes:
            keywords["settings"] = {} if self._settings is None else json.loads(self._settings)
        return keywords

    def _refit(self, plan: Plan) -> Callable[[int], int | None] | None:
        """With ``min_output_tokens``: how the plan is fitted to a shared ledger's remainder
        (picodollars) when the ledger refuses its worst case; the fitted worst case, or None
        when not even ``min_output_tokens`` fits."""
        if self._least is None:
            return None

        def fit(room: int) -> int | None:
            projection, projected = self._project(plan.projection.input_tokens, room)
            if projection.fitted_from is None:
                return None
            plan.projection, plan.projected = projection, projected
            return projected

        return fit

    def _commit_failed(self, plan: Plan, reply: Reply, cost: int, started: float) -> Step:
        """The call gave no completion (an error, or still running at the deadline)."""
        step = self._model_step(len(self.state.steps), reply, None, plan.projection, started, cost)
        last = plan.final
        if last is None:
            stop = Stop.MAX_SECONDS if reply.abandoned else Stop.MODEL_ERROR
            return self._record(step, end=Ending(stop, None, reply.error))
        stop = Stop.MAX_SECONDS if reply.abandoned else last.stop
        failed = Ending(stop, Said(last.detail, "; the final-answer call failed"), reply.error)
        return self._record(replace(step, final_answer=True), end=failed)

    def _commit_final(self, plan: Plan, completion: Completion, cost: int, started: float) -> Step:
        """The final answer (``finish=True``): the run ends with the stop it came before,
        whatever the model said; tool calls it asked for anyway are recorded, never run."""
        assert plan.final is not None
        index = len(self.state.steps)
        calls = received(completion.tool_calls, index)
        answer = self._answer_in(calls)  # output=T: the final answer is asked for as a T
        why = "the final-answer turn runs no tools"
        records = self._answer_records(calls, answer, why)
        assistant = Message("assistant", completion.text, tuple([c.request for c in calls]))
        step = self._call_step(index, completion, records, cost, plan.projection, started)
        self.state.output = None if answer is None else answer[1].output
        end = Ending(plan.final.stop, plan.final.detail)
        return self._record(
            replace(step, final_answer=True),
            assistant,
            records,
            end,
            told=plan.extra,
            answer=completion.text if answer is None else answer[1].text,
        )

    def _commit_calls(
        self, plan: Plan, completion: Completion, cost: int, started: float
    ) -> Generator[Batch | Hold, Any, Step]:
        """An ordinary reply: an answer, or tool calls to run (unless no model call could
        ever read their results: then they are skipped). Calls held for a person are decided
        before any call of the batch runs (``Hold``); with no one to ask, the session holds the
        batch and this returns the step so far. A turn that breaks while its batch runs is
        recorded, its calls marked, and the exception goes on."""
        index = len(self.state.steps)
        calls = received(completion.tool_calls, index)
        assistant = Message("assistant", completion.text, tuple([c.request for c in calls]))
        signature = self._repeats.signature(calls) if calls else None
        loop = None if signature is None else self._repeats.loop(signature)
        warn = self._repeats.warns(loop)  # warn_repeats=True: the first loop is told, not stopped
        taken = Taken(plan, completion, cost, index, calls, assistant, signature, loop, warn)
        records: list[Ran] = []
        decisions: dict[str, Decision] = {}
        answer = self._answer_in(calls)  # output=T: an answer that fits ends the run
        if answer is not None:
            return self._commit_answer(answer, calls, assistant, completion, plan, cost, started)
        self.state.unanswered = False
        try:
            end: Ending | None = None
            if not calls and self.options.output is not None:
                self.state.unanswered = True  # text, not the answer: the next turn asks again
            elif not calls:
                end = Ending(Stop.ANSWERED)
            elif block := self._guards.before_batch(
                self._before_batch(index, started, calls, assistant), None if warn else loop
            ):
                stopped = Said("the run stopped (", block.detail, ")")
                records = [self._not_run(c, "skipped", stopped) for c in calls]
                end = then_final_answer(self.options.values["finish"], block)
            elif held := self._holding(taken):
                decisions = self._ruled(held)  # the calls a standing rule decides
                waiting = tuple(c for c in held if c.id not in decisions)
                if waiting:
                    decided: Decided | None = yield Hold(waiting, self._asks(waiting))
                    if decided is None:  # no one to ask now: the session holds the batch
                        return self._hold(taken, held, started, decisions)
                    started += decided.waited  # (the driver has moved the step's origin on)
                    decisions.update(decided.decisions)
        except GeneratorExit:
            raise
        except BaseException as exc:  # the turn broke before its batch: record it, then raise
            why = f"the turn broke ({type(exc).__name__}) before its batch started"
            records = [self._not_run(c, "skipped", why) for c in calls]
            step = self._call_step(index, completion, records, cost, plan.projection, started)
            self._record(step, assistant, records, None, signature)
            raise
        if calls and end is None:
            return (yield from self._batch_turn(taken, decisions, started))
        step = self._call_step(index, completion, records, cost, plan.projection, started)
        said = completion.text or "" if end is not None and end.stop is Stop.ANSWERED else None
        return self._record(step, assistant, records, end, signature, answer=said)

    def _before_batch(
        self, index: int, started: float, calls: list[Call], assistant: Message
    ) -> Now:
        """The run as the ceilings read it before a batch: the cheapest turn that could read
        its results is counted only if a ceiling asks, and then once."""
        now = Now(index, self._left(started), self.state.money.spent)
        now.executed, now.asked = self.state.executed, len(calls)
        now.runnable = functools.partial(self._runnable, calls)
        now.reader = functools.partial(self._cheapest_tokens, calls, assistant)
        now.project, now.projection_of = self._least_pico, self._least_projection
        return now

    def _runnable(self, calls: list[Call]) -> int:
        """How many of ``calls`` would reach their tool (``reaches_tool``)."""
        tools = self._dispatch.tools
        return sum(1 for c in calls if reaches_tool(c, tools))

    def _batch_turn(
        self, taken: Taken, decisions: Mapping[str, Decision], started: float, before: float = 0.0
    ) -> Generator[Batch, BatchDone, Step]:
        """Run a turn's batch, as decided (a denied call is not run; an edited one runs with
        the arguments a person gave), and record the step; ``before`` is the seconds the step
        took before its batch was held. A batch that breaks is recorded, then raises."""
        calls, index = taken.calls, taken.index
        fixed, runnable = self._decided_batch(calls, decisions)
        records: list[Ran] = []
        end: Ending | None = None
        try:
            if runnable:
                done = yield Batch(runnable, self._left(started))
            else:  # every call was denied, or edited to arguments that do not fit
                done = BatchDone([])
            records = done.records
            if decisions:  # as decided: the fixed outcomes in their places, each call marked
                ran = iter(records)
                records = [fixed[i] if i in fixed else next(ran) for i in range(len(calls))]
                records = self._marked(calls, records, decisions)
            if done.abandoned:
                end = Ending(Stop.MAX_SECONDS, "a tool was still running at the deadline")
        except GeneratorExit:
            raise
        except BaseException as exc:  # the turn broke after the model call: record it, then raise
            why = interrupted(type(exc).__name__)
            records = [
                fixed[i] if i in fixed and fixed[i].record.status == "denied"
                else self._not_run(c, "error", why)
                for i, c in enumerate(calls)
            ]  # fmt: skip
            step = self._call_step(
                index, taken.completion, records, taken.cost, taken.plan.projection, started
            )
            self._record(replace(step, seconds=step.seconds + before), taken.assistant,
                         records, None, taken.signature)  # fmt: skip
            raise
        # the assistant turn and its results join the context, in request order
        step = self._call_step(
            index, taken.completion, records, taken.cost, taken.plan.projection, started
        )
        step = replace(step, seconds=step.seconds + before) if before else step
        loop, warn = taken.loop, taken.warn
        warned = loop is not None and warn
        note = warning(loop) if loop is not None and warned else None
        return self._record(step, taken.assistant, records, end, taken.signature, warned, note)

    # -- output=T: the final answer -----------------------------------------------------------

    def _answer_in(self, calls: list[Call]) -> tuple[int, Answer] | None:
        """The first call of ``final_answer`` whose arguments fit, and its answer."""
        final = self.options.output
        if final is None:
            return None
        for i, call in enumerate(calls):
            if call.name == FINAL_ANSWER:
                answer = final.accept(call)
                if isinstance(answer, Answer):
                    return i, answer
        return None

    def _answer_records(
        self, calls: list[Call], answer: tuple[int, Answer] | None, why: str
    ) -> list[Ran]:
        """The records of a turn that ends the run: the answer that fits is ``ok`` (its JSON
        the result), every other call skipped for ``why``."""
        records = []
        for i, call in enumerate(calls):
            if answer is not None and i == answer[0]:
                given = answer[1]
                records.append(self._dispatch.outcome(
                    call.request, call.id, given.arguments, given.coerced, given.text, None, None
                ))  # fmt: skip
            else:
                records.append(self._not_run(call, "skipped", why))
        return records

    def _commit_answer(
        self,
        answer: tuple[int, Answer],
        calls: list[Call],
        assistant: Message,
        completion: Completion,
        plan: Plan,
        cost: int,
        started: float,
    ) -> Step:
        """A final answer that fits: the run is answered, its output an instance of T. Other
        calls of the turn are skipped: no model call will read their results."""
        records = self._answer_records(calls, answer, "the run ended with the final answer")
        step = self._call_step(len(self.state.steps), completion, records, cost,
                               plan.projection, started)  # fmt: skip
        self.state.output = answer[1].output
        self.state.unanswered = False
        return self._record(step, assistant, records, Ending(Stop.ANSWERED), answer=answer[1].text)

    # -- planning: what the next turn will do, asked by the turn and by next_turn ---------------

    def _plan(self, started: float | None) -> Plan:
        """The next turn's plan, without changing anything: its request's extra messages, its
        projection, whether it is a final answer (``finish=True``) and the stop before it.
        ``started`` is when the step began (None: a look from outside a step)."""
        state, guards, left = self.state, self._guards, self._left(started)
        taken, spent = len(state.steps), state.money.spent
        now = Now(taken, left, spent)
        extra = budget_note(guards, now) if self.options.values["budget_note"] else []
        if state.unanswered:  # output=T: a reply in plain text is asked for the answer again
            extra = [Message("user", ASK_AGAIN), *extra]
        projection, projected = self._project(self._count.count(extra))
        now.projection, now.projected = projection, projected
        seen = None
        if self.options.values["finish"]:
            now.longest = max((s.seconds for s in state.steps), default=0.0)
            now.project = self._least_pico
            last, seen = last_turn(state, guards, now, self._tool_less_tokens)
            if last is not None:
                told = final_note(last.stop, guards.ceilings)
                note = [Message("user", told if self.options.output is None else final_ask(told))]
                projection, projected = self._project(self._tool_less_tokens(note))
                final = Now(taken, left, spent)
                final.projection, final.projected = projection, projected
                ending = guards.before_final(final, last, last is state.finishing)
                return Plan(note, projection, projected, ending, last, seen)
        ending = guards.before_call(now)
        return Plan(extra, projection, projected, ending, None, seen)

    @property
    def next_turn(self) -> NextTurn:
        """What the next ``step()`` will do, as the loop itself decides it: call the model,
        make the final answer (``finish=True``), or stop before any call (and why). A shared
        ledger's answer is not known until the step asks it."""
        if self.state.ending is not None:
            result = self.result
            return NextTurn("done", result.stop, result.detail, None)
        if self._held is not None:
            first = self._held.pending[0]
            return NextTurn("held", None, self._traced(self._held_detail()), first.projection)
        plan = self._plan(None)
        if plan.ending is not None:
            end = plan.ending
            return NextTurn("stop", end.stop, self._traced(end.detail), plan.projection)
        if plan.final is not None:
            last = plan.final
            return NextTurn("final_answer", last.stop, self._traced(last.detail), plan.projection)
        return NextTurn("call", None, None, plan.projection)

    def _cheapest_next(self, calls: list[Call], assistant: Message) -> Projection:
        """The cheapest turn that could read a batch's results: they are empty, and its reply
        is at ``min_output_tokens`` when a turn may be fitted."""
        return self._least_projection(self._cheapest_tokens(calls, assistant))

    def _cheapest_tokens(self, calls: list[Call], assistant: Message) -> int:
        """That turn's input tokens."""
        if (
            self.options.values["count_tokens"] is None
        ):  # a lower bound: an overhead per result, no text
            tokens = self._count.count([assistant]) + MESSAGE_OVERHEAD * len(calls)
        else:
            empty = [Message("tool", "", tool_call_id=c.id, name=c.name) for c in calls]
            if self.options.values["finish"]:  # the turn that reads them may be the final answer
                tokens = self._tool_less_tokens([assistant, *empty])
            else:
                tokens = self._count.count([assistant, *empty])
        return tokens

    def _tool_less_tokens(self, extra: list[Message]) -> int:
        """The input tokens of the context and ``extra`` sent without tool schemas (but the
        ``final_answer`` tool's, with ``output=``). The
        default estimate keeps the schemas counted: once a provider has reported a count, what
        they took in it is not known, so taking them out could count below the truth."""
        count_tokens = self.options.values["count_tokens"]
        if count_tokens is None:
            return self._count.count(extra)
        return checked(count_tokens([*self.state.messages, *extra], list(self._final_tools)))

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
        finally:
            self._stepping.release()

    def _left(self, started: float | None) -> float | None:
        """Seconds left before ``max_seconds``, counting only time spent inside ``step()``
        (``started``: when this step began; None outside a step)."""
        if self.budget.max_seconds is None:
            return None
        running = 0.0 if started is None else self._since(started)
        return self.budget.max_seconds - self.state.elapsed - running

    def _since(self, started: float) -> float:
        now = self._clock()
        return max(0.0, now - started) if now == now else 0.0

    def _step_seconds(self, started: float) -> float:
        """A billed step's seconds. A clock that raises (a ``KeyboardInterrupt`` in it) must
        not lose the step: it counts 0 seconds, and ``_record`` raises the error once the
        step is recorded."""
        try:
            return self._since(started)
        except BaseException as exc:
            self._unraised.append(exc)
            return 0.0

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

    def _restart(self, started: float) -> float:
        """A held batch's step is recorded and the step goes on to a new turn: the time so
        far is the run's, and the new turn's is counted from now."""
        now = self._clock()
        self.state.elapsed += self._since(self._origin)
        self._origin = now
        return now

    def _hold(
        self,
        taken: Taken,
        pending: tuple[PendingCall, ...],
        started: float,
        ruled: dict[str, Decision],
    ) -> Step:
        """No one to ask now: the session holds the batch, and returns the step so far (the
        model's reply, billed; its calls wait in ``pending``, not yet in its ``tool_calls``).
        It is recorded when its batch runs. With ``approve="hold"`` the run ends held
        (``Stop.HELD``): ``resume`` runs the batch, in this process or another."""
        step = self._call_step(
            taken.index, taken.completion, [], taken.cost, taken.plan.projection, started
        )
        unraised = [*self._unraised]  # what its clock raised
        self._unraised.clear()
        redactor = self._redactor
        try:
            shown = redactor.step(step)
            message = self._traced_message(taken.assistant)
            calls = tuple(redactor.pending(c) for c in pending)
        except Exception:
            shown, message = WITHHOLD.step(step), WITHHOLD.message(taken.assistant)
            calls = tuple(WITHHOLD.pending(c) for c in pending)
        except BaseException as exc:  # an interrupt in redact: withheld, and raised below
            shown, message = WITHHOLD.step(step), WITHHOLD.message(taken.assistant)
            calls = tuple(WITHHOLD.pending(c) for c in pending)
            unraised.append(exc)
        self._held = Held(taken, pending, ruled, step.seconds, shown, message, calls)
        approve = self.options.values["approve"]
        if isinstance(approve, str) and self._asks(pending):  # "hold": the run ends held
            names = ", ".join(f"{c.name} ({c.id})" for c in self._held.undecided())
            self._end_run(Ending(Stop.HELD, f"a batch waits for a decision on {names}"))
        if unraised:  # the step is held, not lost: what interrupted it goes on
            raise unraised[0]
        return shown

    def _project(self, tokens: int, room: int | None = None) -> tuple[Projection, int | None]:
        """A call of ``tokens`` input tokens at its worst, on what the run has spent; with
        ``min_output_tokens``, fitted to what the budget has left (and to ``room``
        picodollars, a shared ledger's remainder, when given)."""
        return project_cost(tokens, self.max_output_tokens, self.price, self.state.money.spent,
                            self.budget, self._least, room)  # fmt: skip

    def _least_pico(self, tokens: int) -> int | None:
        """The least a later call of ``tokens`` input tokens may be made for, at its worst:
        at ``min_output_tokens`` when a turn may be fitted (no projection made)."""
        return worst_pico(tokens, self._least or self.max_output_tokens, self.price)

    def _least_projection(self, tokens: int) -> Projection:
        """``_least_pico``'s projection (for the words of a stop)."""
        output = self._least or self.max_output_tokens
        spent = self.state.money.spent
        return project_cost(tokens, output, self.price, spent, self.budget)[0]

    def _append(self, message: Message) -> None:
        self.state.messages.append(message)
        self._count.append(message)
        self.state.trace_messages.append(self._traced_message(message))

    def _append_recorded(self, message: Message) -> BaseException | None:
        """``_append`` for a turn being recorded: a raising ``redact`` withholds the text."""
        try:
            self._append(message)
        except BaseException as exc:
            if len(self.state.trace_messages) < len(self.state.messages):
                self.state.trace_messages.append(WITHHOLD.message(message))
            return exc
        return None

    def _append_result(self, ran: Ran, note: Said | None = None) -> None:
        """A tool result joins the context; its trace form was redacted before any cut. A
        ``note`` from the loop ends it, in both forms."""
        message, traced = ran.message, ran.trace_message
        if note is not None:
            message = replace(message, content=f"{message.content}\n\n{note.real}")
            traced = replace(traced, content=f"{traced.content}\n\n{self._traced(note)}")
        self.state.messages.append(message)
        self._count.append(message)
        self.state.trace_messages.append(traced)

    def _not_run(self, call: Call, status: Status, why: str | Said) -> Ran:
        return self._dispatch.refuse(call.request, call.id, status, why)

    def _model_step(
        self,
        index: int,
        reply: Reply | None,
        interrupt: BaseException | None,
        projection: Projection,
        started: float,
        cost: int | None = None,
    ) -> Step:
        """A step whose model call gave no completion: failed, abandoned or interrupted. A
        reply that arrived but could not be read keeps the usage it reported, as billed."""
        usage = None
        if reply is not None:
            error = reply.error
            usage = None if reply.unread is None else reply.unread.usage
        else:
            error = f"interrupted ({type(interrupt).__name__}) while the model call was in flight"
        return Step(
            index=index,
            text=None,
            tool_calls=(),
            usage=usage,
            cost_usd=(projection.cost_usd or 0.0) if cost is None else self.state.money.usd(cost),
            projection=projection,
            seconds=self._step_seconds(started),
            error=error,
            traceback=None if reply is None else reply.traceback,
        )

    def _call_step(
        self,
        index: int,
        completion: Completion,
        records: list[Ran],
        cost: int,
        projection: Projection,
        started: float,
    ) -> Step:
        return Step(  # by position, as project() makes a Projection
            index,
            completion.text,  # text
            tuple([r.record for r in records]),  # tool_calls
            completion.usage,  # usage
            self.state.money.usd(cost),  # cost_usd
            projection,
            self._step_seconds(started),  # seconds
            None,  # error
            False,  # final_answer
            None,  # traceback
            completion.model,  # model
            completion.response_id,  # response_id
            completion.finish_reason,  # finish_reason
        )

    def _record(
        self,
        step: Step,
        assistant: Message | None = None,
        results: Sequence[Ran] = (),
        end: Ending | None = None,
        signature: str | None = None,
        warned: bool = False,
        note: Said | None = None,
        told: Sequence[Message] = (),
        answer: str | None = None,
    ) -> Step:
        """Make a finished turn part of the run, all of it at once (its money is already in),
        and return the step as the trace keeps it. ``told`` are messages the call was sent
        that join the context before its reply (the final-answer note); ``note`` ends the last
        tool result the model reads (the repetition warning); ``answer`` is the run's final
        answer.

        A ``redact`` that raises (a ``KeyboardInterrupt`` in it too) withholds the text of what
        it could not redact; the turn is still recorded, and the error is raised after it."""
        failures: list[BaseException] = []
        if self._unraised:
            failures += self._unraised
            self._unraised.clear()
        traced = step  # its calls as the trace keeps them: redacted, when there is a redact
        if self._redactor.fn is not None:  # (without one, each call's trace form is its record)
            redacted = False
            for r in results:  # one pass: what redact raised, and whether it changed any call
                if r.redact_error is not None:
                    failures.append(r.redact_error)
                redacted = redacted or r.trace is not r.record
            if redacted:
                traced = replace(step, tool_calls=tuple([r.trace for r in results]))
        try:  # its text, error and traceback (cut only after it is redacted)
            traced = self._redactor.step(traced)
        except BaseException as exc:
            failures.insert(0, exc)
            traced = WITHHOLD.step(traced)
        if signature is not None:
            self._repeats.add(signature, warned=warned)
        before = len(self.state.trace_messages)
        for message in (*told, assistant) if told else (assistant,):
            if message is not None and (failure := self._append_recorded(message)) is not None:
                failures.append(failure)
        for ran in results[:-1] if note is not None else results:
            self._append_result(ran)
        if note is not None and results:
            self._append_result(results[-1], note)
        self.state.steps.append(traced)
        self._committed.append(traced)
        self.state.executed += calls_run((step,))
        if self._journal is not None:
            self._journal.step(traced, self.state.trace_messages[before:])
        if answer is not None:
            self.state.answer = self._traced(answer, failures)
        if end is not None and end.final_next:
            self.state.finishing = end  # finish=True: the next turn is the final answer
        elif end is not None:
            self._end_run(end, failures)
        if failures:
            raise failures[0]
        return traced

    def _end_run(self, end: Ending, failures: list[BaseException] | None = None) -> None:
        detail, error = self._traced(end.detail, failures), self._traced(end.error, failures)
        self.state.ending = Ending(end.stop, detail, error)

    def _traced(
        self, text: str | Said | None, failures: list[BaseException] | None = None
    ) -> str | None:
        """Text as it may enter the trace: through the session's ``Redactor``. With
        ``failures`` (a turn being recorded), whatever ``redact`` raises is kept there for the
        turn to raise once it is recorded, and the text is withheld."""
        try:
            return self._redactor.text(text)
        except Exception:
            return WITHHELD
        except BaseException as exc:
            if failures is None:
                raise
            failures.append(exc)
            return WITHHELD

    def _traced_message(self, message: Message) -> Message:
        return self._redactor.message(message)


def edited_messages(
    before: Sequence[Message], context: Sequence[Message], already: tuple[int, ...]
) -> tuple[int, ...]:
    """The indexes of ``context`` a fork changed from ``before`` (edited, added, or another
    message where one was), with those an earlier fork changed that this one kept as they were."""
    changed = {i for i, m in enumerate(context) if i >= len(before) or m != before[i]}
    kept = {i for i in already if i < len(context) and i < len(before) and i not in changed}
    return tuple(sorted(changed | kept))
