"""The per-step figures the charts draw, kept across a panel's refreshes.

A refresh after a step passes over the new steps only: the figures of the last few runs drawn
are kept and extended, so a refresh's cost does not grow with the run's length.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from budgetloop import Step


@dataclass(frozen=True)
class Series:
    """Per-step figures of a run, as the charts draw them."""

    tokens: tuple[int, ...]  # input tokens each step reported (0 when it reported none)
    points: tuple[tuple[float, float], ...]  # (step.index + 1, cost so far), after (0, carried)


class _Growing:
    """The figures of one run's steps, extended as the run grows."""

    def __init__(self, carried: float) -> None:
        self.carried = carried
        self.steps: tuple[Step, ...] = ()
        self.tokens: list[int] = []
        self.points: list[tuple[float, float]] = []
        self.total = carried

    def extend(self, steps: tuple[Step, ...]) -> None:
        for step in steps[len(self.steps) :]:
            self.tokens.append(step.usage.input_tokens if step.usage else 0)
            self.total += step.cost_usd or 0.0  # an imported step of unknown cost adds none
            self.points.append((step.index + 1, self.total))
        self.steps = steps


_GROWING: list[_Growing] = []  # the runs drawn last, newest first
_KEPT = 4
_LOCK = threading.Lock()


def series_of(steps: Sequence[Step], carried: float = 0.0) -> Series:
    """The figures of ``steps``, the cost starting from ``carried`` (``Result.carried_usd``:
    what a forked run's source spent that none of its steps accounts for). A refresh after a
    step passes over the new steps only: the figures of the last few runs drawn are kept, and
    reused for any steps that begin with the same steps (equal ones: the comparison is by
    identity first, so it costs little)."""
    steps = tuple(steps)
    with _LOCK:
        for i, growing in enumerate(_GROWING):
            n = len(growing.steps)
            if growing.carried == carried and n <= len(steps) and steps[:n] == growing.steps:
                del _GROWING[i]
                break
        else:
            growing = _Growing(carried)
        growing.extend(steps)
        _GROWING.insert(0, growing)
        del _GROWING[_KEPT:]
        return Series(
            tuple(growing.tokens),
            ((0, carried), *growing.points) if steps or carried else (),
        )
