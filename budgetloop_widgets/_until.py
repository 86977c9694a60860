"""The "Run until" control beside Run: which breakpoint a Run pauses at.

Each choice is built from ``budgetloop.breakpoints``: the next call of a tool (``on_tool``), a
call of a tool held before it runs, for your decision (``before_tool``), the next error
(``on_error``), spend that would pass an amount (``on_cost``) or a number of steps taken
(``on_step``).
"""

from __future__ import annotations

from collections.abc import Iterable

import ipywidgets as widgets

from budgetloop import Session
from budgetloop.breakpoints import (
    Breakpoint,
    before_tool,
    check,
    on_cost,
    on_error,
    on_step,
    on_tool,
)

from ._text import plural, usd

END, TOOL, BEFORE, ERROR, COST, STEP = "end", "tool", "before", "error", "cost", "step"
CHOICES = (
    ("the run ends", END),
    ("the next call of", TOOL),
    ("before a call of", BEFORE),
    ("the next error", ERROR),
    ("spend would pass USD", COST),
    ("steps taken reach", STEP),
)


class UntilControl(widgets.HBox):  # type: ignore[misc]
    """A choice of breakpoint and its one value: a tool, an amount in dollars, a step count."""

    def __init__(self, tools: Iterable[str] = ()) -> None:
        self.kind = widgets.Dropdown(
            options=CHOICES,
            value=END,
            description="Run until",
            layout=widgets.Layout(width="260px"),
        )
        self.tool = widgets.Dropdown(options=(), layout=widgets.Layout(width="160px"))
        self.usd = widgets.FloatText(value=0.01, step=0.01, layout=widgets.Layout(width="100px"))
        self.steps = widgets.BoundedIntText(
            value=1, min=0, max=10**9, layout=widgets.Layout(width="90px")
        )
        self.kind.add_class("bl-until-kind")
        self.tool.add_class("bl-until-tool")
        self.usd.add_class("bl-until-usd")
        self.steps.add_class("bl-until-steps")
        self.set_tools(tools)
        self.kind.observe(lambda _change: self._show(), names="value")
        super().__init__([self.kind, self.tool, self.usd, self.steps])
        self.add_class("bl-until")
        self._show()

    def set_tools(self, tools: Iterable[str]) -> None:
        """The tools to choose from (the session's, after a Reset or a fork)."""
        names = tuple(sorted(tools))
        if tuple(self.tool.options) != names:
            kept = self.tool.value
            self.tool.options = names
            self.tool.value = kept if kept in names else (names[0] if names else None)

    def set_disabled(self, disabled: bool) -> None:
        for box in (self.kind, self.tool, self.usd, self.steps):
            box.disabled = disabled

    def _show(self) -> None:
        kind = self.kind.value
        for box, wanted in ((self.usd, COST), (self.steps, STEP)):
            box.layout.display = None if kind == wanted else "none"
        self.tool.layout.display = None if kind in (TOOL, BEFORE) else "none"

    def breakpoint(self, session: Session) -> tuple[Breakpoint | None, str]:
        """The chosen predicate and how the panel says it; ``ValueError`` when the choice
        cannot hold for this session: no tool to pick, or what the core's
        ``breakpoints.check`` says (no price to project, a step count already passed)."""
        kind = self.kind.value
        if kind == TOOL:
            if self.tool.value is None:
                raise ValueError(
                    "the next call of a tool: the session must be given tools, got none."
                )
            return on_tool(self.tool.value), f"the model called {self.tool.value}"
        if kind == BEFORE:
            if self.tool.value is None:
                raise ValueError(
                    "before a call of a tool: the session must be given tools, got none."
                )
            name = self.tool.value
            return before_tool(name), f"a call of {name} waits for your decision"
        if kind == ERROR:
            return on_error(), "the step went wrong (breakpoints.on_error)"
        if kind == COST:
            amount = float(self.usd.value)
            until = on_cost(amount)
            check(until, session)  # the core says why it cannot hold (no price)
            return until, f"the next turn's worst case would pass {usd(amount)}"
        if kind == STEP:
            n = int(self.steps.value)
            until = on_step(n)
            check(until, session)  # the core says why it cannot hold (taken already)
            return until, f"{plural(n, 'step')} taken"
        return None, ""
