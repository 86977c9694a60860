"""The records layer: a finished turn made part of the run at once (its step, the messages
that join the context, its stop), the steps as the trace keeps them, and text through
``redact=``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .._forms._redact import WITHHELD, WITHHOLD, Said
from .._rules._budget import Projection
from .._rules._ceilings import calls_run
from .._trace._result import ContextEdit, Status, Step
from ._setup import Setup
from ._turn import Call, Ending, Ran, Reply
from ._types import Completion, Message


class Records(Setup):
    """Recording a turn; the layers above call ``_record`` once a turn is over."""

    _edit_for: tuple[int, ContextEdit] | None = None  # a policy's edit of the request of a step

    def _step_seconds(self, started: float) -> float:
        """A billed step's seconds. A clock that raises (a ``KeyboardInterrupt`` in it) must
        not lose the step: it counts 0 seconds, and ``_record`` raises the error once the
        step is recorded."""
        try:
            return self._since(started)
        except BaseException as exc:
            self._unraised.append(exc)
            return 0.0

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
            tool_calls=(),
            usage=usage,
            cost_usd=(projection.cost_usd or 0.0) if cost is None else self.state.money.usd(cost),
            projection=projection,
            seconds=self._step_seconds(started),
            error=error,
            traceback=None if reply is None else reply.traceback,
            text=None if reply is None or reply.unread is None else reply.unread.text,
            first_chunk_seconds=None if reply is None else reply.first_chunk,
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
        streamed = self._first_chunk  # the first chunk's time, of a streamed completion
        first = streamed[1] if streamed is not None and streamed[0] is completion else None
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
            first,  # first_chunk_seconds
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
        made = self._edit_for  # what a context policy made of this step's request
        if made is not None:
            self._edit_for = None
            if made[0] == step.index and step.context is None:
                step = replace(step, context=made[1])
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
        if self._events is not None:
            self._events.step_ended(step, traced)
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
