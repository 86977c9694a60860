"""The commit layer: what a model call's reply does to the run: a failed call, a final answer,
an answer that fits ``output=T``, or tool calls, held for a person or run as a batch (the
driver runs it), each recorded whole."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import Any

from .._features._held import Held, Taken
from .._features._output import FINAL_ANSWER, Answer
from .._forms._redact import WITHHOLD, Said
from .._rules._finish import then_final_answer
from .._rules._repeats import warning
from .._tools._approval import Decision, PendingCall
from .._trace._result import Step
from ._planning import Planning
from ._turn import (
    Batch,
    BatchDone,
    Call,
    Decided,
    Ending,
    Hold,
    Plan,
    Ran,
    Reply,
    interrupted,
    received,
)
from ._types import Completion, Message, Stop


class Committing(Planning):
    """Committing a reply; its batch is yielded to the driver, a hold too."""

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

    def _commit_cut(
        self, plan: Plan, completion: Completion, stop: Stop, cost: int, started: float
    ) -> Step:
        """A streamed reply cut before it ended (``stop``: the deadline, or a person): the
        step keeps what arrived, none of its tool calls runs, and the run ends."""
        index = len(self.state.steps)
        calls = received(completion.tool_calls, index)
        why = f"the reply was cut ({stop.value}) before it ended"
        records = [self._not_run(c, "skipped", why) for c in calls]
        assistant = Message("assistant", completion.text, tuple([c.request for c in calls]))
        step = self._call_step(index, completion, records, cost, plan.projection, started)
        if plan.final is not None:
            step = replace(step, final_answer=True)
        who = "max_seconds passed" if stop is Stop.MAX_SECONDS else "the run was interrupted"
        end = Ending(stop, f"{who} while the model's reply streamed: the reply was cut")
        return self._record(step, assistant, records, end)

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
            elif self._interrupt.is_set():  # session.interrupt(): the batch is not run
                why = "the run was interrupted before the batch ran"
                records = [self._not_run(c, "skipped", why) for c in calls]
                end = Ending(Stop.INTERRUPTED, "interrupted before the tool batch ran")
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
                if self._events is not None:  # the batch's calls start together
                    self._events.tools_started(index, runnable)
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
