"""What a ``RunPanel`` shows: its status line, meter, charts, step list and held batch, each
drawn from its session (``refresh``), and which buttons a click can press now. ``RunPanel``
(``_panel``) holds the session and the widgets and drives the run."""

from __future__ import annotations

import threading
import traceback
from typing import Any

import ipywidgets as widgets

from budgetloop import ContextEdit, NextTurn, Projection, Session
from budgetloop.display import HeldBatch, held_batch

from ._approvals import PendingCalls
from ._fork import ForkEditor
from ._live import LiveReply
from ._status import (
    error_html,
    held_html,
    held_note,
    held_words,
    idle_html,
    ledger_html,
    paused_html,
    running_html,
    spent_words,
    stop_html,
    stop_lines,
    waiting_html,
)
from ._steplist import StepList, next_context
from ._text import count, plural, text
from ._until import UntilControl
from ._views import charts_html, meter_html, stopped_by_projection


class PanelView(widgets.VBox):  # type: ignore[misc]
    """The drawing of a ``RunPanel``: every widget it shows, redrawn from the session."""

    session: Session
    chart_points: int
    _lock: threading.RLock  # the session, the caches and every redraw
    _pause: threading.Event
    _running: bool  # a Run is going on the worker thread
    _busy: bool  # a Step, Reset or Continue is going on the calling thread
    _stepping: bool  # a Step is going on the calling thread (Stop can cut it)
    _paused_by: str | None  # why the last Run paused, until the next action
    _held: str | None  # why the last Run took no step, until the next action
    step_button: widgets.Button
    run_button: widgets.Button
    pause_button: widgets.Button
    reset_button: widgets.Button
    stop_button: widgets.Button
    until: UntilControl
    pending: PendingCalls
    status: widgets.HTML
    live: LiveReply
    error: widgets.HTML
    meter: widgets.HTML
    charts: widgets.HTML
    steps: StepList
    editor: ForkEditor | None

    def summary(self) -> str:
        """Where the run is, in one line of plain text (what a notebook shows without the
        widget: a saved notebook before it is run, nbviewer, GitHub)."""
        result = self.session.result
        if result.stop is not None:
            return f"RunPanel: {stop_lines(result)[0][1]}"
        batch = held_batch(self.session)
        if batch is not None and not self._running:
            words = held_words(len(result.steps), batch, spent_words(result), for_you=False)
            return f"RunPanel: {words}"
        if self._running:
            state = f"running: {plural(len(result.steps), 'step')} taken"
        elif result.steps:
            state = f"paused after {plural(len(result.steps), 'step')}"
        else:
            state = "not started"
        return f"RunPanel: {state} · {spent_words(result)}"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle = super()._repr_mimebundle_(**kwargs)
        data: dict[str, Any] = bundle[0] if isinstance(bundle, tuple) else dict(bundle)
        meta: dict[str, Any] = bundle[1] if isinstance(bundle, tuple) else {}
        data["text/plain"] = self.summary()
        data["text/html"] = f'<div class="blv-fallback">{text(self.summary())}</div>'
        return data, meta

    def __repr__(self) -> str:
        return f"<{self.summary()}>"

    def _set_busy(self) -> None:
        busy = self._running or self._busy
        done = self.session.done
        waiting = bool(self.session.pending)  # Step and Run wait until every call is decided
        self.step_button.disabled = busy or done or waiting
        self.run_button.disabled = busy or done or waiting
        self.reset_button.disabled = busy
        self.pause_button.disabled = not self._running or self._pause.is_set()
        self.stop_button.disabled = not (self._running or self._stepping)
        self.until.set_disabled(busy)
        self.steps.busy = busy
        if self.editor is not None:
            self.editor.continue_button.disabled = busy

    # -- what it shows ---------------------------------------------------------------------

    def show_error(self, title: str, detail: str) -> None:
        with self._lock:
            self.error.value += error_html(title, detail)

    def refresh(self) -> None:
        """Redraw everything from the session."""
        with self._lock:
            self._redraw()

    def _context_head(
        self, projection: Projection | None = None, ahead: ContextEdit | None = None
    ) -> str:
        """The line above the context now: its messages, and the next request's tokens (after
        the context policy, where it edits the request: ``ahead``)."""
        head = plural(len(self.session.result.messages), "message")
        if projection is not None:
            after = "" if ahead is None else " after the context policy"
            head += (
                f"; next request: {count(projection.input_tokens)} input tokens projected{after} "
                "(messages, tool schemas and request overhead)"
            )
        return head

    def _held_note(self, batch: HeldBatch | None = None) -> str:
        """What the step list says of a held turn ("": none is held)."""
        batch = held_batch(self.session) if batch is None else batch
        return "" if batch is None else held_note(batch)

    def _on_hello(self) -> None:
        """A page drawn after the first asks for the run: every page gets it whole."""
        with self._lock:
            self.steps.reset(self.session, self.steps.head, self.steps.held)

    def _redraw(self) -> None:
        session = self.session
        result = session.result
        projection: Projection | None = None
        nxt: NextTurn | None = None
        missing = "no projection"
        try:
            nxt = session.next_turn  # what the loop will do: the panel says the loop's words
            projection = session.projection if nxt.projection is None else nxt.projection
        except Exception as exc:  # a broken count_tokens: say so where the numbers would be
            missing = f"the projection failed: {type(exc).__name__}: {exc}"
            self.show_error(f"Projecting the next turn raised {type(exc).__name__}: {exc}",
                            traceback.format_exc())  # fmt: skip
        label = "Before the next step"
        if session.done and stopped_by_projection(result):  # the turn the ceiling refused
            label = "After the run: the step that did not fit"
        elif session.done:  # an ended run has no next step: nothing to project or to fit
            label, projection, nxt = "After the run", None, None
            missing = "the run has ended: there is no next step"
        batch = held_batch(session)
        if batch is not None and not self._running:
            self.status.value = waiting_html(len(result.steps), batch, spent_words(result))
        elif self._running:
            self.status.value = running_html(len(result.steps))
        elif self._paused_by is not None and not session.done:
            self.status.value = paused_html(len(result.steps), self._paused_by)
        elif self._held is not None and not session.done:
            self.status.value = held_html(self._held)
        elif not session.done:
            self.status.value = idle_html(len(result.steps))
        else:
            self.status.value = stop_html(result)
        ahead = next_context(session) if projection is not None else None
        meter = meter_html(
            projection, session.used, session.budget, done=session.done, label=label,
            missing=missing, next_turn=nxt, carried=result.carried_usd, price=result.price,
            context=ahead,
        )  # fmt: skip
        ledger = session.options.values["ledger"]
        self.meter.value = meter + ("" if ledger is None else ledger_html(ledger))
        # after a stop a projection made, the projection that stopped the run is still the
        # crossing point
        drawn = projection if not session.done or stopped_by_projection(result) else None
        # a held turn was taken and billed: the charts draw it, though the list records it
        # once its batch runs
        steps = result.steps if batch is None else (*result.steps, batch.step)
        self.charts.value = charts_html(
            steps, session.budget, drawn, max_points=self.chart_points,
            carried=result.carried_usd, refused=session.done and drawn is not None,
            ledger_limit=None if ledger is None else ledger.limit_usd, price=result.price,
        )  # fmt: skip
        self.steps.update(session, self._context_head(projection, ahead), self._held_note(batch))
        self.pending.update(session, batch, self._running or self._busy)
        self._set_busy()
