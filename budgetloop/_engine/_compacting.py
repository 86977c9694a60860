"""The context layer: what of the context each request is sent (``context=``, see
``budgetloop.context``). A policy's request is checked before anything is sent, counted for the
projection (the guard projects what is sent), and recorded in its step (``Step.context``).
``Summarize``'s summary is a model call of the run, made here before the turn's own: projected
with the cheapest turn that could follow it, checked against the cost ceiling, the time left
and the shared ledger, billed the moment it is over; when it would not fit, the turns it would
have replaced are dropped instead. A replay sends each step the request its trace recorded,
and bills a recorded summary as recorded, without calling the summarizer."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace

from .._rules._budget import Projection, cost_fits, estimate_tokens, project, worst_pico
from .._rules._context import checked
from .._rules._money import call_cost
from .._trace._result import ContextEdit, Step, Summary
from ..context import (
    SUMMARY_PREFIX,
    Summarize,
    checked_request,
    head_end,
    last_turns_start,
    policy_name,
    summary_message,
)
from ._reading import model_keywords
from ._records import Records
from ._turn import ModelCall, Reply
from ._types import Message, format_usd, from_pico, to_pico

Sent = tuple[list[Message], tuple[int | None, ...]]


class Compacting(Records):
    """The request a context policy makes of the context, and a summary's call."""

    # Summarize: what stands for the context's messages from the head up to an index (a
    # summary, or None when they were dropped); None: nothing yet
    _summary: tuple[Message | None, int] | None = None
    _summary_read = False  # a restored run's standing summary was read from its steps
    _recorded_edits: Mapping[int, ContextEdit] | None = None  # replay: each step's request
    _made: tuple[Summary | None, str | None] | None = None  # this step's summary, or fallback

    def _compacting(self, recorded: Mapping[int, ContextEdit] | None = None) -> None:
        """Requests are made by the ``context=`` policy (read from the options), or, for a
        replay, are the ``recorded`` ones."""
        if recorded:
            self._recorded_edits = recorded
        self._compacts = self.options.values["context"] is not None or bool(self._recorded_edits)

    def _sent(self, context: Sequence[Message], index: int | None = None) -> Sent | None:
        """What step ``index`` (default: the next) would be sent of ``context``, checked; None
        when it is the whole context."""
        if not self._compacts:
            return None
        index = len(self.state.steps) if index is None else index
        policy = self.options.values["context"]
        if policy is None:
            recorded = self._recorded_edits
            edit = None if recorded is None else recorded.get(index)
            if edit is None:
                return None
            pairs = [(x, None) if isinstance(x, Message) else (context[x], x) for x in edit.sent
                     if isinstance(x, Message) or x < len(context)]  # fmt: skip
            return [m for m, _ in pairs], tuple(j for _, j in pairs)
        returned = (
            self._summarized(context) if isinstance(policy, Summarize) else policy(list(context))
        )
        request, at = checked_request(policy, context, returned)
        if len(at) == len(context) and all(j == i for i, j in enumerate(at)):
            return None
        return request, at

    def _sent_tokens(self, sent: Sent | None, extra: Sequence[Message] = ()) -> int:
        """The input tokens of a request: ``sent`` (the whole context when None) and ``extra``."""
        if sent is None:
            return self._count.count(extra)
        return self._count.count_sent(sent[0], sent[1], extra)

    # -- Summarize ------------------------------------------------------------------------------

    def _standing(self) -> tuple[Message | None, int] | None:
        """The summary standing for the head's next messages: this run's, or for a restored
        run (fork, resume) the one its last step was sent."""
        if self._summary is None and not self._summary_read:
            self._summary_read = True
            self._summary = standing(self.state.steps, self.state.messages)
        return self._summary

    def _summarized(self, context: Sequence[Message]) -> list[Message]:
        """The context with the standing summary in place of what it stands for."""
        head = head_end(context)
        held = self._standing()
        if held is None:
            return list(context)
        message, upto = held
        return [*context[:head], *([] if message is None else [message]), *context[upto:]]

    def _compact(self, started: float, turn: Projection) -> Generator[ModelCall, Reply, bool]:
        """Before a turn's call (projected ``turn``): a replay's recorded summary billed, or
        ``Summarize``'s summary made, or the turns dropped instead. True when the request
        changed (the turn is planned again). A summary call interrupted while in flight is
        billed at its worst and recorded in the turn's step, its model call not sent."""
        if self._made is not None:  # (set on the session only once a policy made something)
            self._made = None
        policy = self.options.values["context"]
        if policy is None:
            return self._recorded_summary()
        if not isinstance(policy, Summarize):
            return False
        context = self.state.messages
        base = self._sent(context)
        if self._sent_tokens(base) <= policy.when_input_tokens_over:
            return False
        head, cut = head_end(context), last_turns_start(context, policy.keep_last)
        held = self._standing()
        upto = head if held is None else held[1]
        if cut <= upto:  # nothing older than the last turns is sent as it was
            return False
        older = [*([] if held is None or held[0] is None else [held[0]]), *context[upto:cut]]
        asked = policy.request(older)
        count_tokens = self.options.values["count_tokens"]
        tokens = (
            estimate_tokens(asked) if count_tokens is None else checked(count_tokens(asked, []))
        )
        most, price, money = policy.max_output_tokens, policy.price, self.state.money
        projection, worst = project(tokens, most, price, money.spent, self.budget)
        worst = worst or 0
        kept = list(range(head)) + list(range(cut, len(context)))
        after = self._count.count_sent([context[j] for j in kept], tuple(kept))
        reader = worst_pico(after, self._least or self.max_output_tokens, self.price) or 0
        left = self._left(started)
        why = None
        if not cost_fits(self.budget, money.spent, worst + reader):
            why = (
                f"a summary projected {format_usd(from_pico(worst))} "
                f"({projection.tokens_text}) and the turn after it would not fit "
                f"max_cost_usd={format_usd(projection.limit_usd)}"
            )
        elif left is not None and left <= 0:
            why = "no time was left for a summary before max_seconds"
        reservation = None
        if why is None:
            reservation, ending = money.reserve(worst)
            if ending is not None:
                why = f"{ending.detail}, so no summary was asked for"
        if why is not None:
            self._summary = (None, cut)
            self._made = (
                None,
                f"{why}: the turns before the last {policy.keep_last} were dropped",
            )
            return True
        keywords = (
            {"max_output_tokens": most}
            if "max_output_tokens" in model_keywords(policy.model)
            else {}
        )
        try:
            with money.renewing(reservation):
                reply = yield ModelCall(asked, [], left, keywords, policy.model)
        except GeneratorExit:
            raise
        except BaseException as exc:
            money.bill(worst, reservation)  # it may be billed: at its worst
            self._summary = (None, cut)
            made = Summary(tuple(range(head, cut)), from_pico(worst), None, projection)
            why = f"the summary call was interrupted ({type(exc).__name__})"
            self._made = (
                made,
                f"{why}: the turns before the last {policy.keep_last} were dropped",
            )
            index = len(self.state.steps)
            edit = self._context_edit(self._sent(context), self._made)
            self._edit_for = None if edit is None else (index, edit)
            step = self._model_step(index, None, exc, turn, started, cost=0)
            self._record(replace(step, error=f"interrupted ({type(exc).__name__}) while the "
                                 "context policy's summary call was in flight; the model call "
                                 "was not sent"))  # fmt: skip
            raise
        cost = call_cost(reply, worst, price)
        money.bill(cost, reservation)
        completion = reply.completion
        usage = completion.usage if completion is not None else None
        made = Summary(tuple(range(head, cut)), from_pico(cost), usage, projection)
        text = None if completion is None else completion.text
        if text:
            message = summary_message(text)
            read = [*[context[j] for j in range(head)], message, *context[cut:]]
            reading = self._count.count_sent(read, (*range(head), None, *range(cut, len(context))))
            fits = worst_pico(reading, self._least or self.max_output_tokens, self.price) or 0
            if cost_fits(self.budget, money.spent, fits):
                self._summary = (message, cut)
                self._made = (made, None)
                return True
            self._summary = (None, cut)  # a summary too long for the turn that would read it
            self._made = (made, f"the summary written was too long for the turn after it to fit "
                                f"max_cost_usd: the turns before the last {policy.keep_last} "
                                "were dropped")  # fmt: skip
        else:
            self._summary = (None, cut)
            failed = reply.error or "it wrote no text"
            self._made = (made, f"the summary call failed ({failed}): the turns before the last "
                                f"{policy.keep_last} were dropped")  # fmt: skip
        return True

    def _recorded_summary(self) -> bool:
        """A replay: the summary the trace recorded for this step, billed as it was."""
        recorded = self._recorded_edits
        edit = None if recorded is None else recorded.get(len(self.state.steps))
        if edit is None or edit.summary is None:
            return False
        self.state.money.bill(to_pico(edit.summary.cost_usd), None)
        self._made = (edit.summary, edit.fallback)
        return False

    @property
    def next_context(self) -> ContextEdit | None:
        """What the context policy (``context=``) makes of the next request, as its step would
        record it: which messages it leaves out or cuts, and how many tokens that saves; None
        when the next request is the whole context. A summary the next turn may ask for is not
        made here (no model is called): the request is the one that stands."""
        if not self._compacts:
            return None
        sent = self._sent(self.state.messages)
        return None if sent is None else self._context_edit(sent, None)

    def _context_edit(
        self, sent: Sent | None, made: tuple[Summary | None, str | None] | None
    ) -> ContextEdit | None:
        """What the policy made of the next step's request, as its step records it (``made``:
        the summary asked for it, or why the turns were dropped instead)."""
        if sent is None and made is None:
            return None
        policy = self.options.values["context"]
        recorded = self._recorded_edits
        if policy is None and recorded is not None:
            edit = recorded.get(len(self.state.steps))
            if edit is not None:
                return edit  # a replay's request is the recorded one, as it was recorded
        context = self.state.messages
        request, at = sent if sent is not None else (list(context), tuple(range(len(context))))
        kept = {j for j in at if j is not None}
        items = tuple(
            self._traced_message(m) if j is None else j for m, j in zip(request, at, strict=True)
        )
        summary, fallback = (None, None) if made is None else made
        return ContextEdit(
            policy_name(policy),
            items,
            tuple(j for j in range(len(context)) if j not in kept),
            self._count.count() - self._sent_tokens(sent),
            summary,
            fallback,
        )


def standing(
    steps: Sequence[Step], messages: Sequence[Message]
) -> tuple[Message | None, int] | None:
    """The summary (or drop) a run's last step with a context edit was sent: what stood for
    the messages after the head, up to the first one sent as it was after it."""
    for step in reversed(steps):
        edit = step.context
        if edit is None:
            continue
        head = head_end(messages)
        rest = list(edit.sent[head:])
        first = rest[0] if rest else None
        summary = None
        if isinstance(first, Message) and (first.content or "").startswith(SUMMARY_PREFIX):
            summary = first
        upto = next((x for x in rest if isinstance(x, int)), len(messages))
        return (summary, upto) if summary is not None or upto > head else None
    return None
