"""``RunPanel``: Step, Run (in the background, with Pause and a breakpoint), Reset and Fork
over a ``budgetloop.Session``, or over a run that ended held (its batch decided here, then taken
and run). It holds the session and lays the views out; ``_panel_view`` draws them,
``_panel_run`` runs in the background, ``_source`` tells its source apart."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

import ipywidgets as widgets

from budgetloop import Budget, ScriptedModel, Session

from ._approvals import PendingCalls
from ._fork import ForkEditor, context_before
from ._live import LiveReply
from ._panel_run import PanelRun
from ._source import Factory, HeldRun, built, opened
from ._steplist import StepList
from ._until import UntilControl
from ._views import IGNORE_MATH, stylesheet


def rewind(model: object) -> None:
    """Send a ``ScriptedModel`` back to its first entry."""
    if isinstance(model, ScriptedModel):
        model.reset()


def _section(title: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="bl-section">{escape(title)}</div>')


class RunPanel(PanelRun):
    """Step a run a turn at a time and see, before each turn, what it is about to cost.

    ``source`` is a ``Session`` (from ``budgetloop.start``) or a zero-argument function that
    returns a new one. Reset builds a fresh session: by calling the function, or, for a bare
    session, with ``session.fresh()`` (the same model, prompt, tools, budget and options). A
    ``ScriptedModel`` is rewound on Reset so that it plays its script from the first entry.

    ``source`` may instead be a run that ended held (``approve="hold"``): its ``Result``
    (``load_trace(path)``) or the path of its trace, with ``complete=`` and ``tools=`` to go on
    with (and ``resume``'s options: ``redact=``, ``ledger=``, ...). The panel opens it holding its
    batch, as a live session holds one (``budgetloop.display.open_held``); once Approve, Edit or
    Deny has decided every call, Step or Run takes the batch, as ``resume`` does, and runs it:
    from a path, once, whichever process tries (a batch taken already is shown as the error, and
    nothing runs); a ``Result`` passed as an object is the caller's to go on from once. Reset
    opens the held run again while this panel has not run it.

    Run steps on a worker thread and returns at once; the panel redraws after every step.
    Pause ends the Run after the turn in flight, and a breakpoint (the "Run until" control)
    ends it when its predicate holds; either way the run is paused, not ended, and Run or Step
    goes on. ``wait()`` blocks until a Run is over.

    From code (a test, a demo, a notebook cell), each button has a method that does what a
    click does: ``step()``, ``run()``, ``pause()``, ``stop()`` and ``reset()``;
    ``wait(timeout)`` blocks until a Run is over, and ``session`` is the session the panel
    shows (a new one after Reset or a fork), with its ``result``::

        panel = RunPanel(start(model, "go", tools=[search], budget=Budget(max_steps=8)))
        panel.step()               # one turn, drawn
        panel.run(); panel.wait()  # the rest, in the background, then wait for it
        panel.session.result.stop  # what the banner says

    Like the buttons, these show an error in the panel rather than raise it, and do nothing
    while a Run is going (a Step) or after the run has ended.
    """

    def __init__(
        self,
        source: Session | Factory | HeldRun,
        *,
        context_shown: int = 40,
        chart_points: int = 30,
        title: str = "budgetloop run",
        complete: Any = None,
        tools: Sequence[Callable[..., Any]] = (),
        **options: Any,
    ) -> None:
        self._factory, session, self._opening = opened(source, complete, tools, options)
        self.session: Session = session
        self.context_shown = context_shown
        self.chart_points = chart_points
        self._lock = threading.RLock()  # the session, the caches and every redraw
        self._pause = threading.Event()
        self._idle = threading.Event()  # set while no Run is going
        self._idle.set()
        self._running = False  # a Run is going on the worker thread
        self._busy = False  # a Step, Reset or Continue is going on the calling thread
        self._stepping = False  # a Step is going on the calling thread (Stop can cut it)
        self._paused_by: str | None = None  # why the last Run paused, until the next action
        self._held: str | None = None  # why the last Run took no step, until the next action
        self._pause_reason = "Pause pressed"  # what asked the Run in flight to pause
        self.step_button = widgets.Button(description="Step", tooltip="take one turn")
        self.run_button = widgets.Button(
            description="Run", tooltip="step in the background until the run stops or pauses"
        )
        self.pause_button = widgets.Button(
            description="Pause", tooltip="end the Run after the turn in flight", disabled=True
        )
        self.reset_button = widgets.Button(description="Reset", tooltip="a fresh session")
        self.stop_button = widgets.Button(
            description="Stop", disabled=True,
            tooltip="cut the reply streaming now (session.interrupt()): the run ends interrupted",
        )  # fmt: skip
        for button, name in (
            (self.step_button, "step"),
            (self.run_button, "run"),
            (self.pause_button, "pause"),
            (self.stop_button, "stop"),
            (self.reset_button, "reset"),
        ):
            button.add_class(f"bl-{name}-button")
        # a decision made in code, on any thread, redraws the held batch and Step at once
        self._unlisten = session.on_decision(self._on_decision)
        # the reply streaming now, drawn from the session's events at most once a frame
        self.live = LiveReply(self._lock, self._seconds)
        self._unhear = session.on_event(self.live.listener)
        self.until = UntilControl(session.tools)
        # the batch held for a person: its turn, Approve, Edit, Deny, and what was decided
        self.pending = PendingCalls(self._after_decision)
        self.status = widgets.HTML()
        self.error = widgets.HTML()
        self.meter = widgets.HTML()
        self.charts = widgets.HTML()
        # every step, the chosen one in detail with Fork here, and the context now: the viewer
        self.steps = StepList(
            session, self.open_fork, self._on_hello, context_shown=context_shown,
            context_head=self._context_head(), held=self._held_note(),
        )  # fmt: skip
        self.fork_area = widgets.VBox()
        self.editor: ForkEditor | None = None
        self.step_button.on_click(self._on_step)
        self.run_button.on_click(self._on_run)
        self.pause_button.on_click(self._on_pause)
        self.stop_button.on_click(self._on_stop)
        self.reset_button.on_click(self._on_reset)
        header = widgets.HTML(stylesheet() + f'<div class="bl-title">{escape(title)}</div>')
        buttons = widgets.HBox(
            [
                self.step_button,
                self.run_button,
                self.pause_button,
                self.stop_button,
                self.reset_button,
            ]
        )
        super().__init__(
            [
                header,
                buttons,
                self.until,
                self.status,
                self.error,
                self.pending,
                self.live,
                self.meter,
                self.charts,
                _section("Steps (a click or j/k chooses one; its detail has Fork here)"),
                self.steps,
                self.fork_area,  # under the steps, where Fork here was pressed
            ]
        )
        self.add_class("bl-root")
        self.add_class("bl-panel")
        for name in IGNORE_MATH.split():
            self.add_class(name)
        self.refresh()

    # -- from code: what each button does ------------------------------------------------------

    def step(self) -> None:
        """Take one turn, as the Step button does (the session as it is now: a held batch
        decided in code with ``session.approve``/``deny`` runs; the panel drew the decision
        when it was made)."""
        self.refresh()
        if not self.step_button.disabled:
            self._on_step()

    def run(self) -> None:
        """Run in the background until the run stops, Pause, or the "Run until" breakpoint, as
        the Run button does; returns at once (``wait()`` blocks until it is over). Like
        ``step()``, it goes on from the session as it is now."""
        self.refresh()
        if not self.run_button.disabled:
            self._on_run()

    def stop(self) -> None:
        """Cut the reply streaming now, as the Stop button does (``session.interrupt()``):
        its text is kept, its calls are not run, and the run ends ``interrupted``; with no
        reply streaming, the Run or Step sends no further model call. Nothing while no Run or
        Step is going."""
        with self._lock:
            if self._running or self._stepping:
                self.session.interrupt()
                self.stop_button.disabled = True

    def reset(self) -> None:
        """Start again on a fresh session, as the Reset button does."""
        if not self.reset_button.disabled:
            self._on_reset()

    @property
    def buttons(self) -> tuple[widgets.Button, widgets.Button, widgets.Button]:
        return self.step_button, self.run_button, self.reset_button

    @property
    def running(self) -> bool:
        """True while a Run is going on the worker thread."""
        return self._running

    # -- Step, Reset, Fork -------------------------------------------------------------------

    def _on_step(self, _button: object = None) -> None:
        session = self.session

        def step() -> None:
            if self._taken():
                session.step()

        self._drive("Step", step, stoppable=True)
        self._focus_next()

    def _on_reset(self, _button: object = None) -> None:
        def reset() -> None:
            session = built(self._factory)
            rewind(session.complete)
            self._adopt(session)

        self._drive("Reset", reset)
        self._focus_next()

    def _on_stop(self, _button: object = None) -> None:
        self.stop()

    def _seconds(self) -> tuple[float, Budget]:
        """The run's seconds counted so far, and its budget (the live reply's clock)."""
        session = self.session
        return session.used.seconds, session.budget

    def _after_decision(self) -> None:
        """A call was decided in the panel: redrawn, and the focus moved on."""
        self.refresh()
        self._focus_next()

    def _on_decision(self, session: Session) -> None:
        """A call of the held batch was decided, by a card or in code (``session.approve``,
        ``deny``), on whatever thread decided it: the cards and Step drawn again. An error in
        the redraw is shown in the panel, never raised into the code that decided."""
        if session is not self.session:  # a session the panel no longer shows
            return
        try:
            self.refresh()
        except Exception as exc:
            self.show_error(f"Redrawing after a decision raised {type(exc).__name__}: {exc}",
                            traceback.format_exc())  # fmt: skip

    def close(self) -> None:
        """Close the panel's widgets; its session no longer tells it of decisions."""
        # ipywidgets closes a panel whose __init__ failed too (its __del__), before it listened
        unlisten: Callable[[], None] | None = getattr(self, "_unlisten", None)
        if unlisten is not None:
            unlisten()
        unhear: Callable[[], None] | None = getattr(self, "_unhear", None)
        if unhear is not None:
            unhear()
            self.live.finish()
        super().close()

    def _focus_next(self) -> None:
        """Where the keyboard goes after a button it pressed is gone or disabled: the next
        call waiting for a decision (its Approve), else Step, else Reset."""
        with self._lock:
            if self.pending.focus_first():
                return
            for button in (self.step_button, self.reset_button):
                if not button.disabled:
                    button.focus()
                    return

    def _adopt(self, session: Session) -> None:
        with self._lock:
            self._unlisten()
            self.session = session
            self._unlisten = session.on_decision(self._on_decision)
            self._unhear()
            self._unhear = session.on_event(self.live.listener)
            self.steps.reset(session, self._context_head(), self._held_note())
            self.until.set_tools(session.tools)
            self.close_fork()

    def open_fork(self, at: int) -> ForkEditor | None:
        """Open the editor on the context as it stood before step ``at`` (what "Fork here"
        on that step's card does); None if it could not be opened (the error is shown)."""
        with self._lock:
            if self._running or self._busy:
                return None
            self.error.value = ""
            try:
                real, shown = context_before(self.session, at)
            except Exception as exc:
                self.show_error(f"Fork here raised {type(exc).__name__}: {exc}",
                                traceback.format_exc())  # fmt: skip
                return None
            editor = ForkEditor(at, real, shown)
            editor.continue_button.on_click(lambda _b: self._continue(editor))
            editor.cancel_button.on_click(lambda _b: self.close_fork())
            self.editor = editor
            self.fork_area.children = (editor,)
            return editor

    def close_fork(self) -> None:
        with self._lock:
            self.editor = None
            self.fork_area.children = ()

    def _continue(self, editor: ForkEditor) -> None:
        def go_on() -> None:
            fork = self.session.fork(editor.at, messages=editor.messages())
            self._adopt(fork)

        self._drive("Continue", go_on)

    def _drive(self, name: str, action: Callable[[], object], stoppable: bool = False) -> None:
        with self._lock:
            if self._running or self._busy:
                return
            self._busy = True
            self._stepping = stoppable
            self._paused_by = self._held = None
            self._set_busy()
            self.error.value = ""
        try:
            action()
        except BaseException as exc:  # an interrupt too: shown in the panel, never lost
            self.show_error(f"{name} raised {type(exc).__name__}: {exc}", traceback.format_exc())
        finally:
            self.live.finish()  # a step that raised may have left its turn drawn as streaming
            with self._lock:
                self._busy = self._stepping = False
                self.refresh()
