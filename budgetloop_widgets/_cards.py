"""The panel's step list: a card per shown step, newest first and the only one open, each with
a "Fork here" button. A step never changes once taken, so a card is drawn once, and again when
it folds; a card that scrolls out of the list is closed, so a long run keeps no widget per step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets as widgets

from budgetloop import Step

from ._views import step_html


@dataclass
class _Card:
    """One step's card in the list: its markup, its Fork here button, and whether it is open."""

    html: widgets.HTML
    fork: widgets.Button
    box: widgets.VBox
    open: bool


class StepCards:
    """The cards of one session's latest steps; ``on_fork(index)`` is what Fork here calls."""

    def __init__(self, on_fork: Callable[[int], object]) -> None:
        self.on_fork = on_fork
        self.cards: dict[int, _Card] = {}
        self.box = widgets.VBox()
        self.box.add_class("bl-steps-box")
        self._disabled = False

    def draw(self, steps: Sequence[Step], shown: int) -> None:
        """The latest ``shown`` steps, newest first and the only one unfolded."""
        latest = list(steps[-shown:])[::-1] if shown > 0 else []
        children = []
        for k, step in enumerate(latest):
            card = self.cards.get(step.index)
            if card is None:
                card = self._card(step, open_=k == 0)
                self.cards[step.index] = card
            elif card.open != (k == 0):
                card.html.value = step_html(step, open_=k == 0)
                card.open = k == 0
            children.append(card.box)
        if tuple(children) != tuple(self.box.children):
            self.box.children = tuple(children)
        kept = {step.index for step in latest}
        for index in [i for i in self.cards if i not in kept]:  # scrolled out: never back
            _close(self.cards.pop(index))

    def clear(self) -> None:
        """Drop every card (another session is coming)."""
        self.box.children = ()
        for card in self.cards.values():
            _close(card)
        self.cards = {}

    def set_disabled(self, disabled: bool) -> None:
        self._disabled = disabled
        for card in self.cards.values():
            card.fork.disabled = disabled

    def _card(self, step: Step, *, open_: bool) -> _Card:
        html = widgets.HTML(step_html(step, open_=open_))
        fork = widgets.Button(
            description="Fork here",
            tooltip=f"edit the context as it stood before step {step.index} and go on from it",
            disabled=self._disabled,
        )
        fork.add_class("bl-fork-button")
        at = step.index
        fork.on_click(lambda _b: self.on_fork(at))
        box = widgets.VBox([html, fork])
        box.add_class("bl-step-card")
        return _Card(html, fork, box, open_)


def _close(card: _Card) -> None:
    """Close a card's widgets, so the kernel and the page let them go."""
    for widget in (card.box, card.html, card.fork):
        widget.close()
