"""What ``Session.fork``, ``resume``, ``replay`` and the trace views need to know about a run's
history: where a fork may start, the context as it stood before a step, and what a step's model
call was sent."""

from __future__ import annotations

from collections.abc import Sequence

from ._trace import Request, Result, Step
from ._types import Message


def fork_point(steps: Sequence[Step], at: int | None) -> int:
    """``at`` checked: a step index from 0 to the number of steps (None: after the last)."""
    if at is None:
        return len(steps)
    if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(steps):
        raise ValueError(f"fork: at must be a step index from 0 to {len(steps)}, got {at!r}.")
    return at


def context_before(
    messages: Sequence[Message], steps: Sequence[Step], at: int, where: str = "fork"
) -> int:
    """How many of ``messages`` the context had before step ``at``. The messages the steps
    from ``at`` on appended are the last ones, and are checked to be there (so many, each of
    the role its step appended): anything else is a ValueError, as no context can be rebuilt."""
    added = sum(appended(s) for s in steps[at:])
    if added > len(messages):
        raise ValueError(
            f"{where}: messages must hold the {added} messages that steps {at} to "
            f"{len(steps) - 1} appended, got {len(messages)}; the messages are not this run's."
        )
    end = len(messages)
    for step in reversed(steps[at:]):
        if step.error is not None:
            continue  # a failed model call appended nothing
        note = ["user"] if step.final_answer else []  # the final answer's note came first
        roles = [*note, "assistant", *["tool"] * len(step.tool_calls)]
        start = end - len(roles)
        for i, role in enumerate(roles, start):
            if messages[i].role != role:
                raise ValueError(
                    f"{where}: messages[{i}] must be {_a(role)} message (step {step.index} "
                    f"appended it), got {_a(messages[i].role)} message; the messages are not "
                    "this run's."
                )
        end = start
    return end


def _a(role: str) -> str:
    return f"an {role}" if role[:1] in ("a", "e", "i", "o", "u") else f"a {role}"


def appended(step: Step) -> int:
    """How many messages a step added to the context: its assistant turn and each result, and
    a final answer's note before them."""
    if step.error is not None:
        return 0
    return 1 + len(step.tool_calls) + (1 if step.final_answer else 0)


def request_of(result: Result, index: int, where: str = "Result.request") -> Request:
    """What step ``index``'s model call was sent, as the trace holds it: the context before the
    step, and for a final-answer step the note that asked for the answer, with no tools."""
    steps = result.steps
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"{where}: index must be an int, got {type(index).__name__}.")
    if not 0 <= index < len(steps):
        which = f"from 0 to {len(steps) - 1}" if steps else "of a run with steps (it has none)"
        raise ValueError(f"{where}: index must be a step index {which}, got {index}.")
    step = steps[index]
    sent = context_before(result.messages, steps, index, where)
    if not step.final_answer:
        return Request(tuple(result.messages[:sent]), tuple(result.tools))
    told = 1 if step.error is None else 0  # a failed call's note was not kept
    return Request(tuple(result.messages[: sent + told]), ())


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
