"""``RunPanel``: Step, Run and Reset buttons over a ``budgetloop.Session``, and what it shows."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from html import escape

import ipywidgets as widgets

from budgetloop import Projection, ScriptedModel, Session

from ._text import count, plural
from ._views import (
    IGNORE_MATH,
    charts_html,
    context_html,
    error_html,
    meter_html,
    steps_html,
    stop_html,
    stopped_by_cost,
    stylesheet,
    used_by,
)

Factory = Callable[[], Session]


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
    """

    def __init__(
        self,
        source: Session | Factory,
        *,
        steps_shown: int = 20,
        context_shown: int = 40,
        chart_points: int = 30,
        title: str = "budgetloop run",
    ) -> None:
        if isinstance(source, Session):
            self._factory, session = source.fresh, source
        elif callable(source):
            self._factory, session = source, _built(source)
        else:
            raise TypeError(
                "RunPanel: source must be a Session or a function returning one, "
                f"got {type(source).__name__}."
            )
        self.session: Session = session
        self.steps_shown = steps_shown
        self.context_shown = context_shown
        self.chart_points = chart_points
        self._folded: dict[int, str] = {}  # this session's folded step cards, by index
        self._rows: dict[tuple[int, bool], str] = {}  # its context rows, by position
        self.step_button = widgets.Button(description="Step", tooltip="take one turn")
        self.run_button = widgets.Button(description="Run", tooltip="step until the run stops")
        self.reset_button = widgets.Button(description="Reset", tooltip="a fresh session")
        self.step_button.add_class("bl-step-button")
        self.run_button.add_class("bl-run-button")
        self.reset_button.add_class("bl-reset-button")
        self.status = widgets.HTML()
        self.error = widgets.HTML()
        self.meter = widgets.HTML()
        self.charts = widgets.HTML()
        self.steps_view = widgets.HTML()
        self.context = widgets.HTML()
        self.step_button.on_click(self._on_step)
        self.run_button.on_click(self._on_run)
        self.reset_button.on_click(self._on_reset)
        header = widgets.HTML(stylesheet() + f'<div class="bl-title">{escape(title)}</div>')
        buttons = widgets.HBox([self.step_button, self.run_button, self.reset_button])
        super().__init__(
            [
                header,
                buttons,
                self.status,
                self.error,
                self.meter,
                self.charts,
                _section("Steps, newest first (click a step to unfold it)"),
                self.steps_view,
                _section("Context"),
                self.context,
            ]
        )
        self.add_class("bl-root")
        self.add_class("bl-panel")
        for name in IGNORE_MATH.split():
            self.add_class(name)
        self.refresh()

    @property
    def buttons(self) -> tuple[widgets.Button, widgets.Button, widgets.Button]:
        return self.step_button, self.run_button, self.reset_button

    # -- the buttons -------------------------------------------------------------------------

    def _on_step(self, _button: object = None) -> None:
        self._drive("Step", self.session.step)

    def _on_run(self, _button: object = None) -> None:
        def run() -> None:
            while not self.session.done:
                self.session.step()
                self.status.value = stop_html(self.session.result)

        self._drive("Run", run)

    def _on_reset(self, _button: object = None) -> None:
        def reset() -> None:
            session = _built(self._factory)
            rewind(session.complete)
            self.session = session
            self._folded, self._rows = {}, {}

        self._drive("Reset", reset)

    def _drive(self, name: str, action: Callable[[], object]) -> None:
        self._set_busy(True)
        self.error.value = ""
        try:
            action()
        except Exception as exc:  # shown in the panel, never lost in a callback's log
            self.show_error(f"{name} raised {type(exc).__name__}: {exc}", traceback.format_exc())
        finally:
            self.refresh()
            self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        done = self.session.done
        self.step_button.disabled = busy or done
        self.run_button.disabled = busy or done
        self.reset_button.disabled = busy

    # -- what it shows -----------------------------------------------------------------------

    def show_error(self, title: str, detail: str) -> None:
        self.error.value += error_html(title, detail)

    def refresh(self) -> None:
        """Redraw everything from the session."""
        session = self.session
        result = session.result
        projection: Projection | None = None
        missing = "no projection"
        try:
            projection = session.projection
        except Exception as exc:  # a broken count_tokens: say so where the numbers would be
            missing = f"the projection failed: {type(exc).__name__}: {exc}"
            self.show_error(f"Projecting the next turn raised {type(exc).__name__}: {exc}",
                            traceback.format_exc())  # fmt: skip
        label = "Before the next step" if not session.done else "After the run: the next step"
        self.status.value = stop_html(result)
        self.meter.value = meter_html(
            projection, used_by(result), session.budget, done=session.done, label=label,
            missing=missing,
        )  # fmt: skip
        self.steps_view.value = steps_html(
            result.steps, shown=self.steps_shown, folded=self._folded
        )
        # after a cost stop, the projection that stopped the run is still the crossing point
        drawn = projection if not session.done or stopped_by_cost(result) else None
        self.charts.value = charts_html(
            result.steps, session.budget, drawn, max_points=self.chart_points
        )
        messages = result.messages  # as the trace holds them: through redact= when given
        head = plural(len(messages), "message")
        if projection is not None:
            head += (
                f"; next request: {count(projection.input_tokens)} input tokens projected "
                "(messages, tool schemas and request overhead)"
            )
        self.context.value = context_html(
            messages,
            shown=self.context_shown,
            tokens=session.message_tokens,
            head=head,
            rows_cache=self._rows,
        )
        self._set_busy(False)


def _built(factory: Factory) -> Session:
    session = factory()
    if not isinstance(session, Session):
        raise TypeError(
            "RunPanel: the factory must return a budgetloop Session, "
            f"got {type(session).__name__}."
        )
    return session
