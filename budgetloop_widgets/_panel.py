"""``RunPanel``: Step, Run (in the background, with Pause and a breakpoint), Reset and Fork
over a ``budgetloop.Session``, or over a run that ended held (its batch decided here, then taken
and run), and what it shows."""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

import ipywidgets as widgets

from budgetloop import NextTurn, Projection, Result, ScriptedModel, Session
from budgetloop.breakpoints import Breakpoint
from budgetloop.display import HeldBatch, held_batch, open_held, take_held, type_name

from ._approvals import PendingCalls
from ._fork import ForkEditor, context_before
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
from ._steplist import StepList
from ._text import count, plural, text
from ._until import COST, UntilControl
from ._views import (
    IGNORE_MATH,
    charts_html,
    meter_html,
    stopped_by_projection,
    stylesheet,
)

Factory = Callable[[], Session]
HeldRun = Result | str | os.PathLike[str]  # a run that ended held, or the path of its trace


def rewind(model: object) -> None:
    """Send a ``ScriptedModel`` back to its first entry."""
    if isinstance(model, ScriptedModel):
        model.reset()


def _section(title: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="bl-section">{escape(title)}</div>')


class RunPanel(widgets.VBox):  # type: ignore[misc]
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
    click does: ``step()``, ``run()``, ``pause()`` and ``reset()``; ``wait(timeout)`` blocks
    until a Run is over, and ``session`` is the session the panel shows (a new one after Reset
    or a fork), with its ``result``::

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
        # a held run opened here, until its batch is taken (Step or Run): where it came from
        self._held_from: HeldRun | None = None
        self._untaken: Session | None = None  # the opened session whose batch is not taken yet
        self._gone_on = False  # this panel took the held run's batch: Reset opens it no more
        if isinstance(source, (Result, str, os.PathLike)):
            if complete is None:
                raise TypeError(
                    "RunPanel: complete must be the model to go on with (a held run's model is "
                    "not in its trace), got None."
                )
            self._held_from = source
            held: HeldRun = source

            def reopen() -> Session:
                if self._gone_on:
                    raise ValueError(
                        "RunPanel: the held run must be one this panel has not gone on from, got "
                        "one it ran. A held batch runs once."
                    )
                opened = open_held(held, complete, tools=tools, where="RunPanel", **options)
                self._untaken = opened
                return opened

            self._factory, session = reopen, reopen()
        elif complete is not None or tools or options:
            given = ", ".join(
                (["complete"] if complete is not None else [])
                + (["tools"] if tools else [])
                + list(options)
            )
            raise TypeError(
                "RunPanel: complete, tools and resume's options must be given only with a held "
                f"run (its Result or the path of its trace), got {given} with "
                f"{type_name(source)}."
            )
        elif isinstance(source, Session):
            self._factory, session = source.fresh, source
        elif callable(source):
            self._factory, session = source, _built(source)
        else:
            raise TypeError(
                "RunPanel: source must be a Session, a function returning one, or a held run "
                f"(its Result or the path of its trace), got {type(source).__name__}."
            )
        self.session: Session = session
        self.context_shown = context_shown
        self.chart_points = chart_points
        self._lock = threading.RLock()  # the session, the caches and every redraw
        self._pause = threading.Event()
        self._idle = threading.Event()  # set while no Run is going
        self._idle.set()
        self._running = False  # a Run is going on the worker thread
        self._busy = False  # a Step, Reset or Continue is going on the calling thread
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
        for button, name in (
            (self.step_button, "step"),
            (self.run_button, "run"),
            (self.pause_button, "pause"),
            (self.reset_button, "reset"),
        ):
            button.add_class(f"bl-{name}-button")
        # a decision made in code, on any thread, redraws the held batch and Step at once
        self._unlisten = session.on_decision(self._on_decision)
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
        self.reset_button.on_click(self._on_reset)
        header = widgets.HTML(stylesheet() + f'<div class="bl-title">{escape(title)}</div>')
        buttons = widgets.HBox(
            [self.step_button, self.run_button, self.pause_button, self.reset_button]
        )
        super().__init__(
            [
                header,
                buttons,
                self.until,
                self.status,
                self.error,
                self.pending,
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

    # -- Run in the background ---------------------------------------------------------------

    def _on_run(self, _button: object = None) -> None:
        with self._lock:
            if self._running or self._busy or self.session.done:
                return
            self.error.value = ""
            session = self.session
            self._paused_by = self._held = None  # a line about the last Run no longer holds
            try:
                until, why = self.until.breakpoint(session)
            except (TypeError, ValueError) as exc:
                self.show_error(f"Run until: {exc}", "")
                self.refresh()
                return
            self._pause.clear()
            self._pause_reason = "Pause pressed"
            if self.until.kind.value == COST and until is not None and _holds(until, session):
                # the next turn would already pass the amount: not one dollar more
                self._held = why
                self.refresh()
                return
            if not self._taken():
                self.refresh()
                return
            self._running = True
            self._idle.clear()
            thread = threading.Thread(
                target=self._background, args=(session, until, why), name="RunPanel.run",
                daemon=True,
            )  # fmt: skip
            self.refresh()
        thread.start()

    def _background(self, session: Session, until: Breakpoint | None, why: str) -> None:
        """The Run, on the worker thread: the core's ``Session.run(until=...)``, asked after
        each step to redraw, then whether Pause was pressed or the breakpoint holds. A batch
        held for a person pauses it (a breakpoint may hold one: ``before_tool``)."""
        stop_here = _StopHere(self, until, why)
        paused: list[str] = []
        try:
            if self._pause.is_set():  # pressed before the first step
                paused.append(self._pause_reason)
            else:
                session.run(until=stop_here)
                if stop_here.paused is not None:
                    paused.append(stop_here.paused)
                elif not session.done and session.pending:
                    paused.append("a batch waits for your decisions")
                    if until is not None and until(session):
                        paused.append(f"Run until: {why}")
        except BaseException as exc:  # reported in the panel, never lost on a worker thread
            paused.append(f"the Run raised {type(exc).__name__}")
            self.show_error(f"Run raised {type(exc).__name__}: {exc}", traceback.format_exc())
        finally:
            with self._lock:
                self._running = False
                self._paused_by = None if session.done or not paused else paused[-1]
                self.refresh()
                self._idle.set()

    def _on_pause(self, _button: object = None) -> None:
        self.pause()

    def pause(self) -> None:
        """Ask a Run to end after the turn in flight (what the Pause button does)."""
        self._ask_pause("Pause pressed")

    def _ask_pause(self, reason: str) -> None:
        with self._lock:
            if self._running:
                self._pause_reason = reason
                self._pause.set()
                self.status.value = (
                    '<div class="bl-running bl-live">pausing: the turn in flight finishes '
                    "first</div>"
                )
                self.pause_button.disabled = True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the Run in the background is over; True if it is (or none was going),
        False if ``timeout`` seconds passed first. An interrupt while waiting (the kernel's
        Interrupt, Ctrl-C) asks the Run to pause, says so in the panel, and is raised again."""
        try:
            return self._idle.wait(timeout)
        except KeyboardInterrupt:
            self._ask_pause("interrupted while waiting in panel.wait()")
            self.show_error(
                "Interrupted (KeyboardInterrupt) while waiting for the Run: it pauses after "
                "the turn in flight",
                "",
            )
            raise

    # -- Step, Reset, Fork -------------------------------------------------------------------

    def _on_step(self, _button: object = None) -> None:
        session = self.session

        def step() -> None:
            if self._taken():
                session.step()

        self._drive("Step", step)
        self._focus_next()

    def _taken(self) -> bool:
        """Before a held run opened here runs its batch: the batch taken, as ``resume`` takes
        it (from a path, once); False, with the refusal shown, when it cannot be (taken
        already, by this or another process): nothing runs, and the decisions stay."""
        session = self.session
        if session is not self._untaken or self._held_from is None:
            return True
        try:
            take_held(session, self._held_from, "RunPanel")
        except ValueError as exc:
            self.show_error(str(exc), "")
            return False
        self._untaken = None
        # a Result is the caller's to go on from once; a path says itself what it holds now
        self._gone_on = isinstance(self._held_from, Result)
        return True

    def _on_reset(self, _button: object = None) -> None:
        def reset() -> None:
            session = _built(self._factory)
            rewind(session.complete)
            self._adopt(session)

        self._drive("Reset", reset)
        self._focus_next()

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

    def _drive(self, name: str, action: Callable[[], object]) -> None:
        with self._lock:
            if self._running or self._busy:
                return
            self._busy = True
            self._paused_by = self._held = None
            self._set_busy()
            self.error.value = ""
        try:
            action()
        except BaseException as exc:  # an interrupt too: shown in the panel, never lost
            self.show_error(f"{name} raised {type(exc).__name__}: {exc}", traceback.format_exc())
        finally:
            with self._lock:
                self._busy = False
                self.refresh()

    def _set_busy(self) -> None:
        busy = self._running or self._busy
        done = self.session.done
        waiting = bool(self.session.pending)  # Step and Run wait until every call is decided
        self.step_button.disabled = busy or done or waiting
        self.run_button.disabled = busy or done or waiting
        self.reset_button.disabled = busy
        self.pause_button.disabled = not self._running or self._pause.is_set()
        self.until.set_disabled(busy)
        self.steps.busy = busy
        if self.editor is not None:
            self.editor.continue_button.disabled = busy

    # -- what it shows -----------------------------------------------------------------------

    def show_error(self, title: str, detail: str) -> None:
        with self._lock:
            self.error.value += error_html(title, detail)

    def refresh(self) -> None:
        """Redraw everything from the session."""
        with self._lock:
            self._redraw()

    def _context_head(self, projection: Projection | None = None) -> str:
        """The line above the context now: its messages, and the next request's tokens."""
        head = plural(len(self.session.result.messages), "message")
        if projection is not None:
            head += (
                f"; next request: {count(projection.input_tokens)} input tokens projected "
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
        meter = meter_html(
            projection, session.used, session.budget, done=session.done, label=label,
            missing=missing, next_turn=nxt, carried=result.carried_usd, price=result.price,
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
            ledger_limit=None if ledger is None else ledger.limit_usd,
        )  # fmt: skip
        self.steps.update(session, self._context_head(projection), self._held_note(batch))
        self.pending.update(session, batch, self._running or self._busy)
        self._set_busy()


class _StopHere:
    """What a Run gives ``Session.run(until=...)``: after each step, a redraw, then a pause if
    Pause was pressed or the breakpoint holds (``paused`` says which); it holds each batch that
    calls a tool the chosen breakpoint stops before (``breakpoints.before_tool``)."""

    def __init__(self, panel: RunPanel, until: Breakpoint | None, why: str) -> None:
        self.panel, self.until, self.why = panel, until, why
        self.before_tools: frozenset[str] = getattr(until, "before_tools", frozenset())
        self.paused: str | None = None

    def __call__(self, session: Session) -> bool:
        self.panel.refresh()
        if self.panel._pause.is_set():
            self.paused = self.panel._pause_reason
        elif self.until is not None and self.until(session):
            self.paused = f"Run until: {self.why}"
        return self.paused is not None


def _holds(until: Breakpoint, session: Session) -> bool:
    """Whether a breakpoint holds already; one that cannot be asked does not (the Run will
    report why when it asks after the first step)."""
    try:
        return until(session)
    except Exception:
        return False


def _built(factory: Factory) -> Session:
    session = factory()
    if not isinstance(session, Session):
        raise TypeError(
            f"RunPanel: factory's result must be a budgetloop Session, got {type_name(session)}."
        )
    return session
