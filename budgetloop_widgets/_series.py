"""The per-step figures the charts draw, kept across a panel's refreshes.

The figures are the core's (``budgetloop.display.Tally``: money summed in picodollars). A
refresh after a step passes over the new steps only: the figures of the last few runs drawn
are kept and extended, so a refresh's cost does not grow with the run's length.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from budgetloop import Price, Step
from budgetloop.display import Tally


class _Growing:
    """The figures of one run's steps, extended as the run grows."""

    def __init__(self, carried: float, price: Price | None) -> None:
        self.steps: tuple[Step, ...] = ()
        self.figures = Tally(carried, price)

    def extend(self, steps: tuple[Step, ...]) -> None:
        self.figures.extend(steps[len(self.steps) :])
        self.steps = steps


_GROWING: list[_Growing] = []  # the runs drawn last, newest first
_KEPT = 4
_LOCK = threading.Lock()


def series_of(steps: Sequence[Step], carried: float = 0.0, price: Price | None = None) -> Tally:
    """The figures of ``steps``, the cost starting from ``carried`` (``Result.carried_usd``:
    what a forked run's source spent that none of its steps accounts for), the steps without
    their context policy priced at ``price`` (the run's). A refresh after a
    step passes over the new steps only: the figures of the last few runs drawn are kept, and
    reused for any steps that begin with the same steps (equal ones: the comparison is by
    identity first, so it costs little)."""
    steps = tuple(steps)
    with _LOCK:
        for i, growing in enumerate(_GROWING):
            n = len(growing.steps)
            if (
                growing.figures.carried == carried
                and growing.figures.price == price
                and n <= len(steps)
                and steps[:n] == growing.steps
            ):
                del _GROWING[i]
                break
        else:
            growing = _Growing(carried, price)
        growing.extend(steps)
        _GROWING.insert(0, growing)
        del _GROWING[_KEPT:]
        return growing.figures.copy()
