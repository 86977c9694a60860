"""``TraceView``: a saved run as a log viewer, read-only, that opens 100,000 steps at once."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from html import escape
from typing import Any

import ipywidgets as widgets

from budgetloop import Request, Result, printable

from ._log import JUMPS, ROW_HEAD, STATUSES, jump_target, matches, request_html, row_label
from ._status import stop_html
from ._text import count, plural
from ._views import (
    IGNORE_MATH,
    Used,
    as_result,
    charts_html,
    context_html,
    meter_html,
    step_html,
    stylesheet,
)

Source = Result | Mapping[str, Any] | str | os.PathLike[str]
ANY = "any"


class TraceView(widgets.VBox):  # type: ignore[misc]
    """A saved run, step by step, as a log: a list of steps to click (a page at a time),
    buttons that jump to the first error, the first skipped call, the first under-projected
    step, the most expensive step and the stop, filters by tool and status, a text search over
    model text, arguments and results, and the chosen step's meter, card, context and exact
    request. Only one page of rows and one step are drawn, so a long trace opens at once."""

    def __init__(
        self,
        source: Source,
        *,
        page_size: int = 200,
        context_shown: int = 40,
        title: str = "budgetloop trace",
    ) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int):
            raise TypeError(
                f"TraceView: page_size must be an int, got {type(page_size).__name__}."
            )
        if page_size < 1:
            raise ValueError(f"TraceView: page_size must be >= 1, got {page_size!r}.")
        self.result = as_result(source)
        self.page_size = page_size
        self.context_shown = context_shown
        steps = self.result.steps
        # before step k: seconds spent, tool calls run (counts)
        self._seconds = list(itertools.accumulate((s.seconds for s in steps[:-1]), initial=0.0))
        runs = (sum(c.status != "skipped" for c in s.tool_calls) for s in steps[:-1])
        self._calls = list(itertools.accumulate(runs, initial=0))
        self._matching: list[int] = list(range(len(steps)))
        self._page = 0
        self._quiet = False
        self.index = 0
        tools = sorted({c.name for s in steps for c in s.tool_calls})
        self.tool_filter = widgets.Dropdown(
            options=[(ANY, ANY), *((printable(t), t) for t in tools)],
            value=ANY,
            description="tool",
        )
        self.status_filter = widgets.Dropdown(
            options=[ANY, *STATUSES], value=ANY, description="status"
        )
        self.search = widgets.Text(
            placeholder="search text, arguments, results", continuous_update=False
        )
        self.rows = widgets.Select(options=[], rows=12, layout=widgets.Layout(width="100%"))
        self.rows.add_class("bl-rows")
        self.previous_page = widgets.Button(description="◀ rows")
        self.next_page = widgets.Button(description="rows ▶")
        self.step_box = widgets.BoundedIntText(
            value=0, min=0, max=max(len(steps) - 1, 0), description="step"
        )
        self.jumps = {name: widgets.Button(description=name) for name in JUMPS}
        self.show_request = widgets.ToggleButton(description="request as sent", value=False)
        self.page_label = widgets.HTML()
        self.summary = widgets.HTML(stop_html(self.result))
        self.charts = widgets.HTML(
            charts_html(steps, self.result.budget, carried=self.result.carried_usd)
        )
        self.meter = widgets.HTML()
        self.detail = widgets.HTML()
        self.request = widgets.HTML()
        self.context = widgets.HTML()
        self.rows.observe(self._on_row, names="value")
        self.step_box.observe(lambda c: self.show(c["new"]), names="value")
        for box in (self.tool_filter, self.status_filter, self.search):
            box.observe(lambda _c: self.apply_filters(), names="value")
        self.previous_page.on_click(lambda _b: self.turn_page(-1))
        self.next_page.on_click(lambda _b: self.turn_page(1))
        for name, button in self.jumps.items():
            button.on_click(lambda _b, name=name: self.jump(name))
            button.disabled = jump_target(steps, name) is None
        self.show_request.observe(lambda _c: self._draw_request(), names="value")
        header = widgets.HTML(stylesheet() + f'<div class="bl-title">{escape(title)}</div>')
        super().__init__(
            [
                header,
                self.summary,
                self.charts,
                widgets.HBox(list(self.jumps.values())),
                widgets.HBox([self.tool_filter, self.status_filter, self.search]),
                widgets.HTML(f"<pre>{escape(ROW_HEAD)}</pre>"),
                self.rows,
                widgets.HBox([self.previous_page, self.next_page, self.page_label, self.step_box]),
                self.meter,
                self.detail,
                self.show_request,
                self.request,
                _section("Context sent to this step"),
                self.context,
            ]
        )
        for name in ("bl-root", "bl-traceview", *IGNORE_MATH.split()):
            self.add_class(name)
        self._draw_page()
        self.show(0)

    # -- the list ------------------------------------------------------------------------------

    def apply_filters(self) -> None:
        """Keep the steps that pass the tool, status and search filters; show the first page."""
        tool = None if self.tool_filter.value == ANY else self.tool_filter.value
        status = None if self.status_filter.value == ANY else self.status_filter.value
        search = self.search.value.strip()
        steps = self.result.steps
        if tool is None and status is None and not search:
            self._matching = list(range(len(steps)))
        else:
            self._matching = [i for i, s in enumerate(steps) if matches(s, tool, status, search)]
        self._page = 0
        self._draw_page()

    @property
    def matching(self) -> tuple[int, ...]:
        """The step numbers the filters keep, in order."""
        return tuple(self._matching)

    def turn_page(self, delta: int) -> None:
        pages = max(-(-len(self._matching) // self.page_size), 1)
        self._page = min(max(self._page + delta, 0), pages - 1)
        self._draw_page()

    def _draw_page(self) -> None:
        start = self._page * self.page_size
        shown = self._matching[start : start + self.page_size]
        steps = self.result.steps
        self._quiet = True
        try:
            self.rows.options = [(row_label(steps[i]), i) for i in shown]
            self.rows.value = self.index if self.index in shown else None
        finally:
            self._quiet = False
        total = len(self._matching)
        if total:
            self.page_label.value = (
                f"rows {count(start + 1)}–{count(start + len(shown))} of "
                f"{plural(total, 'matching step')} ({plural(len(steps), 'step')} in all)"
            )
        else:
            self.page_label.value = (
                "no step matches" if steps else '<span class="bl-muted">no steps</span>'
            )
        self.previous_page.disabled = start == 0
        self.next_page.disabled = start + self.page_size >= total

    def _on_row(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] is not None:
            self.show(change["new"])

    # -- the chosen step ------------------------------------------------------------------------

    def jump(self, name: str) -> None:
        """Go to a place named in ``JUMPS``; its row is listed if the filters keep it."""
        target = jump_target(self.result.steps, name)
        if target is not None:
            self.show(target)

    def show(self, index: int) -> None:
        """Draw step ``index`` (0-based, as ``Step.index``): its meter, card, context, request."""
        steps = self.result.steps
        if not steps:
            self.detail.value = '<div class="bl-muted">this trace has no steps</div>'
            self.context.value = context_html(self.result.messages, shown=self.context_shown)
            return
        index = min(max(index, 0), len(steps) - 1)
        self.index = index
        if self.step_box.value != index:
            self.step_box.value = index  # observed: calls show() again, which stops here
            return
        if index in self._matching and self.rows.value != index:
            position = self._matching.index(index)
            if position // self.page_size != self._page:
                self._page = position // self.page_size
                self._draw_page()
            else:
                self._quiet = True
                self.rows.value = index
                self._quiet = False
        step = steps[index]
        used = Used(index, self._seconds[index], self._calls[index])
        self.meter.value = meter_html(
            step.projection, used, self.result.budget, done=True, label=f"Before step {index}"
        )
        self.detail.value = step_html(step, selected=True)
        request = self._request(index)
        if request is None:
            self.context.value = (
                '<div class="bl-muted">the trace holds fewer messages than its steps appended, '
                "so the context this step was sent cannot be shown</div>"
            )
            self._draw_request()
            return
        sent = request.messages
        head = plural(len(sent), "message")
        if step.projection is not None:
            head += f"; {count(step.projection.input_tokens)} input tokens projected"
        if step.usage is not None:
            head += f", {count(step.usage.input_tokens)} reported"
        self.context.value = context_html(sent, shown=self.context_shown, head=head)
        self._draw_request()

    def _request(self, index: int) -> Request | None:
        """What step ``index`` was sent, as the core reads it from the trace (None: the trace's
        messages are too few to say)."""
        try:
            return self.result.request(index)
        except ValueError:
            return None

    def _draw_request(self) -> None:
        shown = self.show_request.value and self.result.steps
        request = self._request(self.index) if shown else None
        if request is None:
            self.request.value = ""
            return
        note = bool(self.result.options.get("budget_note"))
        final = self.result.steps[self.index].final_answer
        self.request.value = request_html(self.index, request, note and not final)


def _section(title: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="bl-section">{escape(title)}</div>')
