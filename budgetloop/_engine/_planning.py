"""The planning layer: what the next turn will do, asked by the turn and by ``next_turn``:
its projection (fitted with ``min_output_tokens``), a final answer or not (``finish=True``),
the stop before it, and the run as the ceilings read it before a batch."""

from __future__ import annotations

import functools
from collections.abc import Callable

from .._features._output import ASK_AGAIN, final_ask
from .._rules._budget import MESSAGE_OVERHEAD, Projection, worst_pico
from .._rules._budget import project as project_cost
from .._rules._ceilings import Now
from .._rules._context import checked
from .._rules._finish import budget_note, final_note, last_turn
from ._compacting import Compacting
from ._turn import Call, NextTurn, Plan, reaches_tool
from ._types import Message


class Planning(Compacting):
    """The plan of a turn and its projections; nothing here changes the run."""

    @property
    def projection(self) -> Projection:
        """What the next turn would cost at worst, computed without calling the model, on
        what it would be sent (a context policy's request; before any summary it may ask)."""
        return self._project(self._sent_tokens(self._sent(self.state.messages)))[0]

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
        sent = self._sent(self.state.messages) if self._compacts else None  # a policy's, checked
        tokens = self._count.count(extra) if sent is None else self._sent_tokens(sent, extra)
        projection, projected = self._project(tokens)
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
                return Plan(note, projection, projected, ending, last, seen, sent)
        ending = guards.before_call(now)
        return Plan(extra, projection, projected, ending, None, seen, sent)

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
        if self._compacts:
            empty = [Message("tool", "", tool_call_id=c.id, name=c.name) for c in calls]
            later = [*self.state.messages, assistant, *empty]
            sent = self._sent(later, len(self.state.steps) + 1)
            if sent is not None:  # what a context policy would send of it
                return self._sent_tokens(sent)
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
        sent = self._sent(self.state.messages) if self._compacts else None
        if count_tokens is None:
            return self._sent_tokens(sent, extra)
        request = self.state.messages if sent is None else sent[0]
        return checked(count_tokens([*request, *extra], list(self._final_tools)))

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
