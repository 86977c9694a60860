"""The turn layer: a batch the session held runs first, then a turn from its plan: the
worst case reserved (or a stop), the model call (billed the moment it is over) and its
reply handed to the commit. One sans-IO generator every driver runs (``_turn.py``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator
from dataclasses import replace
from typing import Any

from .._features._held import Held
from .._forms._redact import Said
from .._ledgers import Reservation
from .._rules._budget import Projection
from .._rules._money import call_cost
from .._trace._result import Step
from ..events import TurnStarted
from ._commit import Committing
from ._turn import Ending, ModelCall, Plan, Reply, Request
from ._types import Stop

# sent a Reply, then a Decided (or None) for a Hold, then a BatchDone
Turn = Generator[Request, Any, Step | None]


class Turning(Committing):
    """The turn, as a generator; ``Session`` and ``AsyncSession`` drive it."""

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
        if self._interrupt.is_set():  # session.interrupt(): no further call is sent
            self._end_run(Ending(Stop.INTERRUPTED, "interrupted before the next model call"))
            return None
        # 1. plan: its worst case, a final answer or not, and a stop before it; a context
        # policy's summary is asked for only for a turn that will be taken, and the turn is
        # then planned again on the request it made
        plan = self._plan(started)
        compacts = plan.ending is None and self._compacts
        if compacts and (yield from self._compact(started, plan.projection)):
            plan = self._plan(started)
        if plan.seen is not None:
            self.state.final_tokens, self.state.growth = plan.seen
        reservation, ending, left = None, plan.ending, self._left(started)
        money = self.state.money
        if ending is None and money.ledger is not None:  # no ledger: nothing to reserve
            reservation, ending = money.reserve(plan.projected, self._refit(plan))
        if ending is not None:
            self._end_run(ending)
            return None
        events = self._events
        if events is not None:
            events.put(TurnStarted(len(self.state.steps), plan.projection))
        # 2. call the model: billed the moment it is over, whatever happens next
        reply, cost = yield from self._call(plan, reservation, left, started)
        if reply.completion is None and reply.cut is not None:  # not sent: interrupt() came
            self._end_run(Ending(Stop.INTERRUPTED, "interrupted before the next model call"))
            return None
        if events is not None:
            if reply.first_chunk is not None:  # streamed: its pieces went out as they came
                events.whole(len(self.state.steps))
            elif reply.completion is not None:  # one piece for its text and for each call
                completion = reply.completion
                events.reply(len(self.state.steps), completion.text, completion.tool_calls)
        # 3. commit what happened
        if reply.completion is None:
            return self._commit_failed(plan, reply, cost, started)
        if reply.cut is not None:
            return self._commit_cut(plan, reply.completion, reply.cut, cost, started)
        if plan.final is not None:
            return self._commit_final(plan, reply.completion, cost, started)
        return (yield from self._commit_calls(plan, reply.completion, cost, started))

    def _call(
        self, plan: Plan, reservation: Reservation | None, left: float | None, started: float
    ) -> Generator[ModelCall, Reply, tuple[Reply, int]]:
        """The model call: with tools, or without for a final answer. An interrupt while it
        is in flight bills its worst case (it may be billed) and records the step."""
        final = plan.final is not None
        sent = plan.sent
        if not final and sent is None and self._made is None:
            self._count.sending()  # (a policy's request: its report is not the context's)
        index = len(self.state.steps)
        if self._compacts:  # what the policy made of the request, for the step to record
            edit = self._context_edit(sent, self._made)
            if edit is not None:
                self._edit_for = (index, edit)
        tools = list(self._final_tools) if final else list(self.schemas)
        takes = self.options.keywords  # those of a request's keywords the model takes
        keywords = self._request_keywords(plan.projection, takes) if takes else {}
        context = self.state.messages if sent is None else sent[0]
        request = ModelCall([*context, *plan.extra], tools, left, keywords)
        try:
            if reservation is None:  # no ledger: no lease to keep
                reply = yield request
            else:
                with self.state.money.renewing(reservation):  # its lease is kept while it runs
                    reply = yield request
        except GeneratorExit:
            raise
        except BaseException as exc:
            self.state.money.bill(plan.projected or 0, reservation)
            step = self._model_step(index, None, exc, plan.projection, started)
            self._record(replace(step, final_answer=final))
            raise
        if reply.first_chunk is not None:  # streamed: its step keeps the first chunk's time
            self._first_chunk = (reply.completion, reply.first_chunk)
        cost = call_cost(reply, plan.projected, self.price)
        self.state.money.bill(cost, reservation)
        usage = None if reply.completion is None else reply.completion.usage
        if usage is not None and not final and sent is None and self._made is None:
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
