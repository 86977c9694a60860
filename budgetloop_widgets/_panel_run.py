"""A ``RunPanel``'s Run: steps on a worker thread until the run stops, Pause is pressed or the
"Run until" breakpoint holds, redrawn after every step; ``wait`` blocks until it is over."""

from __future__ import annotations

import threading
import traceback

from budgetloop import Session
from budgetloop.breakpoints import Breakpoint

from ._panel_view import PanelView
from ._source import HeldOpening
from ._until import COST


class PanelRun(PanelView):
    """Run, Pause and ``wait`` of a ``RunPanel``, and the taking of a held run's batch before
    any step goes on (``_taken``)."""

    _idle: threading.Event  # set while no Run is going
    _pause_reason: str  # what asked the Run in flight to pause
    _opening: HeldOpening | None  # a held run opened in the panel: where it came from

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
            self.live.finish()  # a step that raised may have left its turn drawn as streaming
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

    def _taken(self) -> bool:
        """Before a held run opened here runs its batch: the batch taken, as ``resume`` takes
        it (from a path, once); False, with the refusal shown, when it cannot be (taken
        already, by this or another process): nothing runs, and the decisions stay."""
        if self._opening is None:
            return True
        try:
            self._opening.take(self.session)
        except ValueError as exc:
            self.show_error(str(exc), "")
            return False
        return True


class _StopHere:
    """What a Run gives ``Session.run(until=...)``: after each step, a redraw, then a pause if
    Pause was pressed or the breakpoint holds (``paused`` says which); it holds each batch that
    calls a tool the chosen breakpoint stops before (``breakpoints.before_tool``)."""

    def __init__(self, panel: PanelRun, until: Breakpoint | None, why: str) -> None:
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
