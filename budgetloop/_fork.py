"""What ``Session.fork`` and ``resume`` need to know about a run's history: where a fork may
start, and the context as it stood before a step."""

from __future__ import annotations

from collections.abc import Sequence

from ._trace import Step
from ._types import Message


def fork_point(steps: Sequence[Step], at: int | None) -> int:
    """``at`` checked: a step index from 0 to the number of steps (None: after the last)."""
    if at is None:
        return len(steps)
    if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(steps):
        raise ValueError(f"fork: at must be a step index from 0 to {len(steps)}, got {at!r}.")
    return at


def context_before(messages: Sequence[Message], steps: Sequence[Step], at: int) -> int:
    """How many of ``messages`` the context had before step ``at``."""
    return len(messages) - sum(appended(s) for s in steps[at:])


def appended(step: Step) -> int:
    """How many messages a step added to the context: its assistant turn and each result, and
    a final answer's note before them."""
    if step.error is not None:
        return 0
    return 1 + len(step.tool_calls) + (1 if step.final_answer else 0)


def message_list(messages: Sequence[Message]) -> list[Message]:
    """An edited context, checked: a list of ``Message``."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, (list, tuple)):
        raise TypeError(
            f"fork: messages must be a list of Message, got {type(messages).__name__}."
        )
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(f"fork: messages[{i}] is {type(m).__name__}, expected Message.")
    return list(messages)
