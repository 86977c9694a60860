"""A ``RunPanel``'s live reply: the reply streaming now, its text and each call's arguments as
they arrive, and the seconds elapsed against ``max_seconds``, drawn from the session's events
(``session.on_event``), so from what the core hands out (redacted with ``redact=``), never the
raw chunks.

The events arrive on the thread reading the stream, as fast as the chunks come; they are only
gathered there. A timer thread draws what was gathered at most once every ``FRAME`` seconds
(the browser's frame), while a turn is going, and the step's end draws it a last time: so the
browser gets at most one message per frame however fast the chunks come."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from html import escape

import ipywidgets as widgets

from budgetloop import Budget
from budgetloop.display import clock_text
from budgetloop.events import Event, RunEnded, StepEnded, TextDelta, ToolCallDelta, TurnStarted

from ._text import text

FRAME = 0.016  # seconds: at most one message to the browser per frame


class LiveReply(widgets.HTML):  # type: ignore[misc]
    """The reply streaming now (``listener`` hears the session's events); the last one stays
    shown once its step has ended, until the next turn starts. ``elapsed()`` gives the run's
    seconds counted so far and its budget (the core's ``clock_text`` says it against
    ``max_seconds``)."""

    def __init__(self, lock: threading.RLock, elapsed: Callable[[], tuple[float, Budget]]):
        super().__init__()
        self.add_class("bl-reply-view")
        self._lock = lock  # the panel's: every widget write is under it
        self._elapsed = elapsed  # the run's seconds so far, and its budget
        self._gather = threading.Lock()  # what the event thread gathers, between two draws
        self._step: int | None = None
        self._text: list[str] = []
        self._calls: dict[int, tuple[str | None, list[str]]] = {}
        self._ended = True
        self._changed = False
        self._since = 0.0  # when the turn shown started (time.monotonic)
        self._before = 0.0  # the run's seconds before it
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self.drawn = 0  # how many times the view was sent to the browser

    @property
    def reply_text(self) -> str:
        """The text of the reply shown, so far."""
        with self._gather:
            return "".join(self._text)

    @property
    def call_arguments(self) -> dict[int, str]:
        """Each call of the reply shown, by index: its arguments' text so far."""
        with self._gather:
            return {index: "".join(pieces) for index, (_, pieces) in self._calls.items()}

    def listener(self, event: Event) -> None:
        """An event of the session, on the thread driving the run: gathered, drawn later."""
        if isinstance(event, TurnStarted):
            before = self._elapsed()[0]
            with self._gather:
                self._step, self._text, self._calls = event.step, [], {}
                self._ended, self._changed = False, True
                self._since, self._before = time.monotonic(), before
            self._start_timer()
        elif isinstance(event, TextDelta):
            with self._gather:
                self._text.append(event.text)
                self._changed = True
        elif isinstance(event, ToolCallDelta):
            with self._gather:
                name, pieces = self._calls.get(event.index, (None, []))
                pieces.append(event.arguments)
                self._calls[event.index] = (name if event.name is None else event.name, pieces)
                self._changed = True
        elif isinstance(event, (StepEnded, RunEnded)):
            self.finish()

    def finish(self) -> None:
        """The turn is over: the timer stopped, and the reply drawn a last time."""
        self._stop_timer()
        with self._gather:
            self._changed = self._changed or not self._ended
            self._ended = True
        self.draw()

    def draw(self) -> None:
        """Send the reply to the browser if anything changed since it was last sent."""
        with self._lock:
            with self._gather:
                if not self._changed:
                    return
                self._changed = False
                html = self._html()
            self.value = html
            self.drawn += 1

    def _html(self) -> str:
        if self._step is None:
            return ""
        state = "ended" if self._ended else "streaming"
        seconds, budget = self._elapsed()
        if not self._ended:  # the step is not counted yet: its seconds so far
            seconds = self._before + time.monotonic() - self._since
        clock = clock_text(seconds, budget)
        parts = [
            f'<div class="bl-reply-head">step {self._step} reply: {state} · {escape(clock)}</div>',
            f'<pre class="bl-reply-text">{text("".join(self._text))}</pre>',
        ]
        for index, (name, pieces) in sorted(self._calls.items()):
            called = "(name not yet known)" if name is None else text(name)
            parts.append(
                f'<div class="bl-reply-call">call {index}: {called}</div>'
                f'<pre class="bl-reply-args">{text("".join(pieces))}</pre>'
            )
        return f'<div class="bl-reply">{"".join(parts)}</div>'

    # -- the timer thread ---------------------------------------------------------------------

    def _start_timer(self) -> None:
        self._stop_timer()
        stop = self._stop = threading.Event()
        timer = self._timer = threading.Thread(
            target=self._tick, args=(stop,), name="RunPanel.live", daemon=True
        )
        timer.start()

    def _stop_timer(self) -> None:
        timer, self._timer = self._timer, None
        self._stop.set()
        if timer is not None and timer is not threading.current_thread():
            timer.join()

    def _tick(self, stop: threading.Event) -> None:
        """While a turn is going: a draw a frame at most, and the clock ticked each tenth of
        a second even while no chunk arrives."""
        shown = -1
        while not stop.wait(FRAME):
            tenth = int(time.monotonic() * 10)
            if tenth != shown:
                shown = tenth
                with self._gather:
                    self._changed = True
            self.draw()
