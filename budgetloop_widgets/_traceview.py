"""``TraceView``: the RunPanel's picture of a saved run, read-only, a page of steps at a time."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from html import escape
from typing import Any

import ipywidgets as widgets

from budgetloop import Result

from ._views import (
    Used,
    as_result,
    charts_html,
    context_html,
    meter_html,
    page_bounds,
    step_html,
    steps_list_html,
    stop_html,
    stylesheet,
)

Source = Result | Mapping[str, Any] | str | os.PathLike[str]


class TraceView(widgets.VBox):  # type: ignore[misc]
    """A saved run, step by step: a slider picks the step; one page of the step list, the
    chosen step, the meter before it and the context it was sent are drawn, nothing more, so a
    trace of thousands of steps opens at once."""

    def __init__(
        self,
        source: Source,
        *,
        page_size: int = 20,
        context_shown: int = 40,
        title: str = "budgetloop trace",
    ) -> None:
        if page_size < 1:
            raise ValueError(f"TraceView: page_size must be >= 1, got {page_size!r}.")
        self.result = as_result(source)
        self.page_size = page_size
        self.context_shown = context_shown
        steps = self.result.steps
        appended = [1 + len(s.tool_calls) if s.error is None else 0 for s in steps]
        first = max(len(self.result.messages) - sum(appended), 0)
        # before step k: messages sent, seconds spent, tool calls run
        self._sent = list(itertools.accumulate(appended[:-1], initial=first))
        self._seconds = list(itertools.accumulate((s.seconds for s in steps[:-1]), initial=0.0))
        runs = (sum(c.status != "skipped" for c in s.tool_calls) for s in steps[:-1])
        self._calls = list(itertools.accumulate(runs, initial=0))
        self.slider = widgets.IntSlider(
            value=0,
            min=0,
            max=max(len(steps) - 1, 0),
            description="step",
            continuous_update=False,
            disabled=not steps,
        )
        self.previous_page = widgets.Button(description="◀ page")
        self.next_page = widgets.Button(description="page ▶")
        self.page_label = widgets.HTML()
        self.summary = widgets.HTML(stop_html(self.result))
        self.charts = widgets.HTML(charts_html(steps, self.result.budget))
        self.steps_list = widgets.HTML()
        self.meter = widgets.HTML()
        self.detail = widgets.HTML()
        self.context = widgets.HTML()
        self.slider.observe(self._on_slide, names="value")
        self.previous_page.on_click(lambda _b: self._turn_page(-1))
        self.next_page.on_click(lambda _b: self._turn_page(1))
        header = widgets.HTML(stylesheet() + f'<div class="bl-title">{escape(title)}</div>')
        controls = widgets.HBox([self.slider, self.previous_page, self.next_page, self.page_label])
        super().__init__(
            [
                header,
                self.summary,
                self.charts,
                controls,
                self.steps_list,
                self.meter,
                self.detail,
                _section("Context sent to this step"),
                self.context,
            ]
        )
        self.add_class("bl-root")
        self.add_class("bl-traceview")
        self.show(0)

    def _on_slide(self, change: dict[str, Any]) -> None:
        self.show(change["new"])

    def _turn_page(self, delta: int) -> None:
        target = (self.slider.value // self.page_size + delta) * self.page_size
        self.slider.value = min(max(target, 0), self.slider.max)

    def show(self, index: int) -> None:
        """Draw step ``index``, its page of the step list, its meter and its context."""
        steps = self.result.steps
        if not steps:
            self.steps_list.value = '<div class="bl-muted">this trace has no steps</div>'
            self.context.value = context_html(self.result.messages, shown=self.context_shown)
            for b in (self.previous_page, self.next_page):
                b.disabled = True
            return
        index = min(max(index, 0), len(steps) - 1)
        if self.slider.value != index:
            self.slider.value = index  # observed: calls show() again with the same index
            return
        start, stop = page_bounds(index, len(steps), self.page_size)
        pages = -(-len(steps) // self.page_size)
        self.page_label.value = (
            f"page {start // self.page_size + 1} of {pages} · steps {start}–{stop - 1} "
            f"of {len(steps)}"
        )
        self.previous_page.disabled = start == 0
        self.next_page.disabled = stop >= len(steps)
        self.steps_list.value = steps_list_html(steps, start, stop, index)
        step = steps[index]
        used = Used(index, self._seconds[index], self._calls[index])
        self.meter.value = meter_html(
            step.projection, used, self.result.budget, done=True, label=f"Before step {index}"
        )
        self.detail.value = step_html(step, selected=True)
        sent = self.result.messages[: self._sent[index]]
        self.context.value = context_html(sent, shown=self.context_shown)


def _section(title: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="bl-section">{escape(title)}</div>')
