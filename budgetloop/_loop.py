"""The loop: project the next turn, dispatch it, record it, run its tools, append the results.

A turn is written once, as a generator (``Loop._turn``; its protocol is in ``_turn.py``) that
yields what it needs done, a model call and then a tool batch, and is sent back the outcome.
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

import threading
import weakref
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ._budget import MESSAGE_OVERHEAD, Projection
from ._budget import project as project_cost
from ._context import ContextTokens
from ._dispatch import WITHHELD, Dispatch, withhold
from ._finish import (
    budget_note,
    final_note,
    final_turn,
    last_turn,
    then_final_answer,
    tool_less_tokens,
)
from ._fork import context_before, fork_point, message_list
from ._guards import Guards
from ._journal import Journal
from ._money import Money, call_cost
from ._options import Model, Options, initial_messages, is_async
from ._pool import Workers
from ._redact import redact_message, redact_schemas, redact_text, strict
from ._repeats import Repeats, signature_of, warning
from ._schema import Tool
from ._trace import Result, Status, Step, new_run_id
from ._turn import (
    Batch,
    BatchDone,
    Call,
    Ending,
    ModelCall,
    NextTurn,
    Plan,
    Ran,
    Reply,
    interrupted,
    received,
)
from ._types import PICO, Budget, Completion, Message, Price, Stop, to_pico

L = TypeVar("L", bound="Loop")
Turn = Generator[ModelCall | Batch, Any, Step | None]  # sent a Reply, then a BatchDone


class Loop:
    """The loop's state and its turn; ``Session`` and ``AsyncSession`` drive it."""

    def __init__(self, complete: Model, prompt: str | Sequence[Message], **options: Any) -> None:
        opts = Options.read(complete, **options)
        self._build(complete, opts, initial_messages(prompt, opts.system), (), 0)
        self._prompt = prompt

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
        self.run_id = new_run_id()  # this run's: its journal, its spans and its Result say it
        self.forked_from: str | None = None  # the run_id of the run this one was forked from
        self.budget: Budget = options.budget  # these three are read on every turn
        self.price: Price | None = options.price
        self.max_output_tokens: int | None = options.max_output_tokens
        self._redact = None if options.redact is None else strict(options.redact)
        self._async_model = is_async(complete)
        self._stepping = threading.Lock()  # one step at a time, from any thread or task
        self._messages: list[Message] = []  # the real context
        self._trace_messages: list[Message] = []  # the context as the trace keeps it
        self._count = ContextTokens(self.schemas, options.count_tokens)
        schemas = self.schemas
        self._trace_schemas = (
            schemas if self._redact is None else redact_schemas(schemas, self._redact)
        )
        self._steps: list[Step] = list(history)
        self._kept = len(self._steps)  # steps inherited by a fork, already in its journal header
        self._money = Money(spent, options.ledger)  # the only place spend changes
        self._guards = Guards(options.budget)  # the only place a ceiling is checked
        self._elapsed = 0.0
        self._executed = sum(1 for s in history for r in s.tool_calls if r.status != "skipped")
        self._repeats = Repeats(
            options.repeat_limit, options.cycle_limit, options.warn_repeats, history
        )
        self._ending: Ending | None = None
        self._finishing: Ending | None = None  # finish=True: the stop a final answer comes before
        self._final_tokens: int | None = None  # finish=True: the last final answer's tokens
        self._growth = 0  # finish=True: the most those grew in a turn
        self._answer: str | None = None
        self._last_clock = options.clock()
        for message in context:
            self._append(message)
        self._count.count()  # a broken count_tokens fails here, at start()
        self._workers = Workers(options.max_workers)
        self._dispatch = Dispatch(
            options.tools, options.clock, self._workers, options.max_result_chars, self._redact
        )
        self._journal = None if options.trace_path is None else Journal(options.trace_path)
        weakref.finalize(self, self._workers.close)

    @classmethod
    def restore(cls: type[L], result: Result, complete: Model, **options: Any) -> L:
        """A session holding a saved run's context, steps and spend, to ``fork`` from."""
        session = cls.__new__(cls)
        opts = Options.read(complete, **options)
        spent = to_pico(result.cost_usd or 0.0)  # an imported run of unknown cost: none known
        session._build(complete, opts, result.messages, result.steps, spent)
        session._prompt = list(result.messages)
        session.run_id = result.run_id  # the saved run itself, so a fork from it names it
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
        **options: Any,
    ) -> L:
        """A new session that goes on from before step ``at`` (default: now).

        Its context is the messages as they stood before step ``at``, or ``messages`` (an
        edited context) when given; every ``start()`` option is kept unless given here
        (``complete=`` for another model). Money spent stays spent: the fork starts at all
        this session has spent; its steps and tool calls count those before ``at``; its
        ``max_seconds`` counts only its own steps' time.
        """
        at = fork_point(self._steps, at)
        complete = options.pop("complete", self.complete)
        opts = self.options.with_(complete, options)
        if messages is None:
            context = self._messages[: context_before(self._messages, self._steps, at)]
        else:
            context = message_list(messages)
        forked = type(self).__new__(type(self))
        forked._build(complete, opts, context, self._steps[:at], self._money.spent)
        forked._prompt = list(context)
        forked.forked_from = self.run_id
        return forked

    # -- what a caller reads ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._ending is not None

    @property
    def tools(self) -> dict[str, Tool]:
        return self.options.tools

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return self.options.schemas

    @property
    def messages(self) -> list[Message]:
        """The context as it stands: what the next model call would be sent."""
        return list(self._messages)

    @property
    def message_tokens(self) -> tuple[int, ...]:
        """Each message of ``messages``' estimated tokens, as the session counted it."""
        return self._count.per_message

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    @property
    def projection(self) -> Projection:
        """What the next turn would cost at worst, computed without calling the model."""
        return self._project(self._count.count())[0]

    @property
    def result(self) -> Result:
        """The run so far; final once ``done``."""
        ending = self._ending
        return Result(
            stop=None if ending is None else ending.stop,
            answer=self._answer,
            steps=tuple(self._steps),
            messages=tuple(self._trace_messages),
            cost_usd=self._money.spent / PICO,
            seconds=self._elapsed,
            budget=self.budget,
            error=None if ending is None else ending.error,
            detail=None if ending is None else ending.detail,
            price=self.price,
            max_output_tokens=self.max_output_tokens,
            tools=tuple(self._trace_schemas),
            run_id=self.run_id,
            forked_from=self.forked_from,
        )

    # -- the turn ---------------------------------------------------------------------------------

    def _turn(self, started: float) -> Turn:
        # 1. plan: project this turn's worst case (with finish=True it may be the run's last,
        #    a call without tools for a final answer), and stop before it if a ceiling says so
        plan = self._plan(started)
        if plan.seen is not None:
            self._final_tokens, self._growth = plan.seen
        if plan.final is not None:
            return (yield from final_turn(self, started, plan))
        projection, projected = plan.projection, plan.projected
        reservation, ending = None, plan.ending
        if ending is None:
            reservation, ending = self._money.reserve(projected)
        if ending is not None:
            self._end_run(ending)
            return None
        # 2. call the model
        self._count.sending()
        index = len(self._steps)
        try:
            request = ModelCall([*self._messages, *plan.extra], list(self.schemas),
                                self._left(started))  # fmt: skip
            reply = yield request
        except GeneratorExit:
            raise
        except BaseException as exc:  # interrupted in flight: it may be billed, so bill the worst
            self._money.bill(projected or 0, reservation)
            self._record(self._model_step(index, None, exc, projection, started))
            raise
        # 3. record what the model said and what it cost: billed at once, whatever comes next
        cost = call_cost(reply, projected, self.price)
        self._money.bill(cost, reservation)
        completion = reply.completion
        if completion is not None and completion.usage is not None:  # what was sent is now known
            self._count.reported(completion.usage.input_tokens)
        if completion is None:
            stop = Stop.MAX_SECONDS if reply.abandoned else Stop.MODEL_ERROR
            step = self._model_step(index, reply, None, projection, started, cost)
            return self._record(step, end=Ending(stop, None, reply.error))
        calls = received(completion.tool_calls, index)
        assistant = Message("assistant", completion.text, tuple(c.request for c in calls))
        signature = signature_of(calls) if calls else None
        loop = None if signature is None else self._repeats.loop(signature)
        warn = self._repeats.warns(loop)  # warn_repeats=True: the first loop is told, not stopped
        records: list[Ran] = []
        dispatched = False
        try:
            # 4. run the batch, unless no model call could ever read its results
            end: Ending | None = None
            if not calls:
                end = Ending(Stop.ANSWERED)
            elif block := self._guards.before_batch(
                index,
                self._left(started),
                self._executed,
                len(calls),
                None if warn else loop,
                lambda: self._cheapest_next(calls, assistant),
            ):
                records = [self._not_run(c, "skipped", f"the run stopped ({block.detail})")
                           for c in calls]  # fmt: skip
                end = then_final_answer(self, block)
            else:
                dispatched = True
                done: BatchDone = yield Batch(calls, self._left(started))
                records = done.records
                if done.abandoned:
                    end = Ending(Stop.MAX_SECONDS, "a tool was still running at the deadline")
        except GeneratorExit:
            raise
        except BaseException as exc:  # the turn broke after the model call: record it, then raise
            why = f"{type(exc).__name__}"
            records = [
                self._not_run(c, "error", interrupted(why))
                if dispatched
                else self._not_run(
                    c, "skipped", f"the turn broke ({why}) before its batch started"
                )
                for c in calls
            ]
            step = self._call_step(index, completion, records, cost, projection, started)
            self._record(step, assistant, records, None, signature)
            raise
        # 5. append the assistant turn and its results, in request order
        step = self._call_step(index, completion, records, cost, projection, started)
        if end is not None and end.stop is Stop.ANSWERED:
            self._answer = self._traced(completion.text or "")
        warned = loop is not None and warn and dispatched
        note = warning(loop) if loop is not None and warned else None
        return self._record(step, assistant, records, end, signature, warned, note)

    # -- planning: what the next turn will do, asked by the turn and by next_turn ---------------

    def _plan(self, started: float | None) -> Plan:
        """The next turn's plan, without changing anything: its request's extra messages, its
        projection, whether it is a final answer (``finish=True``) and the stop before it.
        ``started`` is when the step began (None: a look from outside a step)."""
        extra = budget_note(self, started)  # budget_note=True: sent with the request, not kept
        projection, projected = self._project(self._count.count(extra))
        taken, left = len(self._steps), self._left(started)
        seen = None
        if self.options.finish:
            last, seen = last_turn(self, started, projected)
            if last is not None:
                note = [Message("user", final_note(last.stop, self.budget))]
                projection, projected = self._project(tool_less_tokens(self, note))
                pending = last is self._finishing
                ending = self._guards.before_final(taken, left, projection, last, pending)
                return Plan(note, projection, projected, ending, last, seen)
        ending = self._guards.before_call(taken, left, projection)
        return Plan(extra, projection, projected, ending, None, seen)

    @property
    def next_turn(self) -> NextTurn:
        """What the next ``step()`` will do, as the loop itself decides it: call the model,
        make the final answer (``finish=True``), or stop before any call (and why). A shared
        ledger's answer is not known until the step asks it."""
        ending = self._ending
        if ending is not None:
            return NextTurn("done", ending.stop, ending.detail, None)
        plan = self._plan(None)
        if plan.ending is not None:
            end = plan.ending
            return NextTurn("stop", end.stop, self._traced(end.detail), plan.projection)
        if plan.final is not None:
            last = plan.final
            return NextTurn("final_answer", last.stop, self._traced(last.detail), plan.projection)
        return NextTurn("call", None, None, plan.projection)

    def _cheapest_next(self, calls: list[Call], assistant: Message) -> Projection:
        """The cheapest turn that could read a batch's results: they are empty."""
        if self.options.count_tokens is None:  # a lower bound: an overhead per result, no text
            tokens = self._count.count([assistant]) + MESSAGE_OVERHEAD * len(calls)
        else:
            empty = [Message("tool", "", tool_call_id=c.id, name=c.name) for c in calls]
            if self.options.finish:  # the turn that reads them may be the final answer
                tokens = tool_less_tokens(self, [assistant, *empty])
            else:
                tokens = self._count.count([assistant, *empty])
        return self._project(tokens)[0]

    def _out_of_time(self, started: float | None) -> bool:
        left = self._left(started)
        return left is not None and left <= 0

    # -- bookkeeping ------------------------------------------------------------------------------

    def _begin(self) -> float:
        """A step starts: one at a time, on a clock that does not run backwards."""
        if not self._stepping.acquire(blocking=False):
            raise RuntimeError(
                "Session.step: another step of this session is running; a session takes one "
                "turn at a time (use fork() or another session to run in parallel)."
            )
        try:
            now = self.options.clock()
            if not now >= self._last_clock:  # also NaN
                raise ValueError(
                    f"run: clock went backwards or returned NaN ({self._last_clock!r} then "
                    f"{now!r}); pass a monotonic clock such as time.monotonic."
                )
            self._last_clock = now
            if self._journal is not None and not self._journal.started:
                self._journal.header(self.result)
                for kept in self._steps[: self._kept]:  # a fork's history: its context is above
                    self._journal.step(kept, [])
        except BaseException:
            self._stepping.release()
            raise
        return now

    def _end(self, started: float) -> None:
        try:
            self._elapsed += self._since(started)
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
        return self.budget.max_seconds - self._elapsed - running

    def _since(self, started: float) -> float:
        now = self.options.clock()
        return max(0.0, now - started) if now == now else 0.0

    def _project(self, tokens: int) -> tuple[Projection, int | None]:
        return project_cost(
            tokens, self.max_output_tokens, self.price, self._money.spent, self.budget
        )

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        self._count.append(message)
        self._trace_messages.append(self._traced_message(message))

    def _append_recorded(self, message: Message) -> BaseException | None:
        """``_append`` for a turn being recorded: a raising ``redact`` withholds the text."""
        try:
            self._append(message)
        except Exception as exc:
            if len(self._trace_messages) < len(self._messages):
                self._trace_messages.append(redact_message(message, withhold))
            return exc
        return None

    def _append_result(self, ran: Ran, note: str | None = None) -> None:
        """A tool result joins the context; its trace form was redacted before any cut. A
        ``note`` from the loop ends it, in both forms."""
        message, traced = ran.message, ran.trace_message
        if note is not None:
            message = replace(message, content=f"{message.content}\n\n{note}")
            traced = replace(traced, content=f"{traced.content}\n\n{self._traced(note)}")
        self._messages.append(message)
        self._count.append(message)
        self._trace_messages.append(traced)

    def _not_run(self, call: Call, status: Status, why: str) -> Ran:
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
        """A step whose model call gave no completion: failed, abandoned or interrupted."""
        if reply is not None:
            error = reply.error
        else:
            error = f"interrupted ({type(interrupt).__name__}) while the model call was in flight"
        return Step(
            index=index,
            text=None,
            tool_calls=(),
            usage=None,
            cost_usd=(projection.cost_usd or 0.0) if cost is None else cost / PICO,
            projection=projection,
            seconds=self._since(started),
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
        return Step(
            index=index,
            text=completion.text,
            tool_calls=tuple(r.record for r in records),
            usage=completion.usage,
            cost_usd=cost / PICO,
            projection=projection,
            seconds=self._since(started),
            model=completion.model,
            response_id=completion.response_id,
            finish_reason=completion.finish_reason,
        )

    def _record(
        self,
        step: Step,
        assistant: Message | None = None,
        results: Sequence[Ran] = (),
        end: Ending | None = None,
        signature: str | None = None,
        warned: bool = False,
        note: str | None = None,
        told: Sequence[Message] = (),
    ) -> Step:
        """Make a finished turn part of the run, all of it at once (its money is already in),
        and return the step as the trace keeps it. ``told`` are messages the call was sent
        that join the context before its reply (the final-answer note); ``note`` ends the last
        tool result the model reads (the repetition warning).

        A ``redact`` that raises withholds the text of what it could not redact; the turn is
        still recorded, and the error is raised after it."""
        failures: list[BaseException] = [r.redact_error for r in results if r.redact_error]
        traced = step  # its calls as the trace keeps them: redacted, when there is a redact
        if any(r.trace is not r.record for r in results):
            traced = replace(step, tool_calls=tuple(r.trace for r in results))
        if self._redact is not None:
            try:
                traced = replace(traced, text=redact_text(step.text, self._redact),
                                 error=redact_text(step.error, self._redact),
                                 traceback=redact_text(step.traceback, self._redact))  # fmt: skip
            except Exception as exc:
                failures.insert(0, exc)
                traced = replace(traced, text=redact_text(step.text, withhold),
                                 error=redact_text(step.error, withhold),
                                 traceback=redact_text(step.traceback, withhold))  # fmt: skip
        if signature is not None:
            self._repeats.add(signature, warned=warned)
        before = len(self._trace_messages)
        for message in [*told, *([assistant] if assistant is not None else [])]:
            failure = self._append_recorded(message)
            failures += [failure] if failure is not None else []
        for i, ran in enumerate(results):
            self._append_result(ran, note if i == len(results) - 1 else None)
        self._steps.append(traced)
        self._executed += sum(1 for r in step.tool_calls if r.status != "skipped")
        if self._journal is not None:
            self._journal.step(traced, self._trace_messages[before:])
        if end is not None and end.final_next:
            self._finishing = end  # finish=True: the next turn is the final answer
        elif end is not None:
            self._end_run(end)
        if failures:
            raise failures[0]
        return traced

    def _end_run(self, end: Ending) -> None:
        self._ending = Ending(end.stop, self._traced(end.detail), self._traced(end.error))

    def _traced(self, text: str | None) -> str | None:
        """Text as it may enter the trace: through ``redact`` when there is one."""
        if text is None or self._redact is None:
            return text
        try:
            return self._redact(text)
        except Exception:
            return WITHHELD

    def _traced_message(self, message: Message) -> Message:
        return message if self._redact is None else redact_message(message, self._redact)
