"""The panel's step list and context: the viewer component fed a live session.

The first draw sends the session's run whole; each refresh after a step sends only what is new
(the new steps, their calls and messages, the texts not sent yet), so a refresh costs the same
at step 10 and at step 10,000. A page drawn later (a reload, a second view) asks for the whole
run once. Fork here in the page calls back into the panel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import traitlets

from budgetloop import ContextEdit, Result, Session
from budgetloop.display import Tally, Used, used_after

from ._data import (
    Strings,
    call_columns,
    calls_of,
    document,
    marks_data,
    message_columns,
    run_data,
    step_columns,
    step_texts,
)
from ._log import Jumps
from ._traceview import Viewer
from ._wire import encode


class StepList(Viewer):
    """Every step of a session in the viewer (a row each, the chosen one in detail with a Fork
    here button) and the context now. ``update(session, head)`` sends what is new;
    ``reset(session, head)`` sends a run whole. ``on_fork(at)`` is what Fork here calls;
    ``on_hello()`` what a page drawn after the first asks for (the panel answers with a reset,
    so that every page has the same string table again)."""

    busy = traitlets.Bool(False).tag(sync=True)

    def __init__(
        self,
        session: Session,
        on_fork: Callable[[int], object],
        on_hello: Callable[[], object],
        *,
        context_shown: int = 40,
        context_head: str = "",
        held: str = "",
    ) -> None:
        self.on_fork = on_fork
        self.on_hello = on_hello
        self.context_shown = context_shown
        data, strings = self._start(session, context_head, held)
        super().__init__(data, strings, binary=False)  # the page appends to its columns
        self.add_class("bl-steplist")

    def _start(self, session: Session, head: str, held: str) -> tuple[dict[str, Any], Strings]:
        """A fresh string table and the session's run whole, as the page's first data."""
        result = session.result
        strings = Strings()
        self._jumps = Jumps()
        self._steps = len(result.steps)
        self._messages = len(result.messages)
        self._calls = sum(len(s.tool_calls) for s in result.steps)
        self._used = used_after(Used(0, 0.0, 0), result.steps)
        run = run_data(result, strings, tokens=session.message_tokens)
        self._figures = Tally()  # the core's count of the steps sent (money in picodollars)
        self._figures.extend(result.steps)
        self._stopped = result.stop is not None
        self._jumps.extend(run["steps"]["cost"], run["steps"]["fl"], stopped=self._stopped)
        self._next_sent = _next_sent(result, run["sent"])
        self._head = head
        self._held = held
        self._ahead = next_context(session)
        data = document(
            "panel", "", [run], strings, context_head=head, context_shown=self.context_shown,
            held=held, next_context=marks_data(self._ahead, strings.id, NEXT_REQUEST),
        )  # fmt: skip
        return data, strings

    @property
    def head(self) -> str:
        """The line above the context now, as last sent."""
        return self._head

    @property
    def held(self) -> str:
        """What the list says of a held turn not recorded yet, as last sent ("": none)."""
        return self._held

    def reset(self, session: Session, head: str = "", held: str = "") -> None:
        """Another session (a Reset, a fork), or a page that asked: every page gets the run
        whole, with a new string table."""
        data, self._strings = self._start(session, head, held)
        self.data = encode(data)

    def update(self, session: Session, head: str = "", held: str = "") -> None:
        """Send the page what the session has that it does not: one message per refresh.
        ``held`` is what the list says beside its count while the session holds a turn whose
        step is not recorded yet ("": it holds none)."""
        ahead = next_context(session)
        delta = self.delta(session.result, session.message_tokens, head, held, ahead)
        if delta is not None:
            self.send(delta)

    def delta(
        self,
        result: Result,
        tokens: Sequence[int],
        head: str = "",
        held: str = "",
        ahead: ContextEdit | None = None,
    ) -> dict[str, Any] | None:
        """What is new since the last draw or delta, as the page appends it; None when nothing
        is (the same steps, messages, head, held turn and next request's context edit
        ``ahead``)."""
        steps = result.steps[self._steps :]
        messages = result.messages[self._messages :]
        stopped = result.stop is not None
        if (
            not steps
            and not messages
            and head == self._head
            and stopped == self._stopped
            and held == self._held
            and ahead == self._ahead
        ):
            return None
        self._stopped = stopped
        self._ahead = ahead
        self._held = held
        sid = self._strings.id
        columns = step_columns(steps, sid, first_call=self._calls)
        columns.update(step_texts(steps, result.budget, sid, self._used, self._figures))
        self._used = used_after(self._used, steps)
        sent = []
        for step in steps:
            sent.append(self._next_sent)
            self._next_sent += 1 + len(step.tool_calls) if step.error is None else 0
        base, base_messages = self._steps, self._messages
        self._steps += len(steps)
        self._messages += len(messages)
        self._calls += sum(len(s.tool_calls) for s in steps)
        self._head = head
        calls = call_columns(calls_of(steps), sid)
        added = message_columns(messages, sid)
        marks = marks_data(ahead, sid, NEXT_REQUEST)
        start, strings = self._strings.take()
        return {
            "type": "append",
            "base": base,
            "strings_from": start,
            "strings": strings,
            "cut": self._strings.cut_lengths(start),
            "steps": columns,
            "calls": calls,
            "messages": added,
            "sent": sent,
            "tokens": list(tokens[base_messages : self._messages]),
            "jumps": self._jumps.extend(columns["cost"], columns["fl"], stopped=stopped),
            "context_head": head,
            "held": held,
            "next_context": marks,
        }

    def answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        kind = content.get("type")
        if kind == "fork":
            at = content.get("at")
            if isinstance(at, int) and not isinstance(at, bool) and not self.busy:
                self.on_fork(at)
            return None
        if kind == "hello":
            self.on_hello()
            return None
        return super().answer(content)


NEXT_REQUEST = "the next request"


def next_context(session: Session) -> ContextEdit | None:
    """What the context policy makes of the next request (``Session.next_context``), for the
    context now to mark; None when the run has ended, or the policy raised (the panel shows the
    error where it projects the next turn, on the same request)."""
    if session.done:
        return None
    try:
        return session.next_context
    except Exception:
        return None


def _next_sent(result: Result, sent: Sequence[int]) -> int:
    """How many messages the step after the last one will have been sent."""
    steps = result.steps
    if not steps:
        return len(result.messages)
    last = steps[-1]
    return sent[-1] + (1 + len(last.tool_calls) if last.error is None else 0)
