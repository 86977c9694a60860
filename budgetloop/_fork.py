"""What ``Session.fork`` and ``resume`` need to know about a run's history: where a fork may
start, and the context as it stood before a step."""

from __future__ import annotations

from collections.abc import Sequence

from ._trace import Step
from ._types import Message
from ._valid import must, type_name


def fork_point(steps: Sequence[Step], at: int | None, where: str) -> int:
    """``at`` checked: a step index from 0 to the number of steps (None: after the last)."""
    if at is None:
        return len(steps)
    expected = f"a step index from 0 to {len(steps)}"
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(must(where, "at", expected + " or None", type_name(at)))
    if not 0 <= at <= len(steps):
        raise ValueError(must(where, "at", expected, repr(at)))
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


def message_list(messages: Sequence[Message], where: str) -> list[Message]:
    """An edited context, checked: a list of ``Message``."""
    if not isinstance(messages, (list, tuple)):
        expected = "a list of Message or None"
        raise TypeError(must(where, "messages", expected, type_name(messages)))
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(must(where, f"messages[{i}]", "a Message", type_name(m)))
    return list(messages)
