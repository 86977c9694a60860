"""What ``Session.fork``, ``resume``, ``replay`` and the trace views need to know about a run's
history: where a fork may start, the context as it stood before a step, and how many messages
each step's model call was sent (``context_starts``, which ``Result.request`` reads)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn

from .._engine._types import Message
from .._engine._valid import must, type_name

if TYPE_CHECKING:
    from ._result import Step


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


def context_before(
    messages: Sequence[Message], steps: Sequence[Step], at: int, where: str = "fork"
) -> int:
    """How many of ``messages`` the context had before step ``at``. The messages the steps
    from ``at`` on appended are the last ones, and are checked to be there (so many, each of
    the role its step appended): anything else is a ValueError, as no context can be rebuilt."""
    _enough(messages, steps, at, where)
    end = len(messages)
    for before in _walk(messages, steps, at, where):
        end = before
    return end


def context_starts(
    messages: Sequence[Message], steps: Sequence[Step], where: str
) -> tuple[list[int | None], str | None]:
    """``context_before`` of every step, in one pass: None for the steps from which on back
    the messages are not the ones the steps appended, and what is wrong there (else None)."""
    starts: list[int | None] = [None] * len(steps)
    try:
        walk = _walk(messages, steps, 0, where)
        for k, before in zip(reversed(range(len(steps))), walk, strict=True):
            starts[k] = before
    except ValueError as exc:
        return starts, str(exc)
    return starts, None


def _walk(
    messages: Sequence[Message], steps: Sequence[Step], at: int, where: str
) -> Iterator[int]:
    """Back from the last step to step ``at``: how many messages there were before each, the
    messages each appended checked (its results, its assistant message, a final answer's note)."""
    end = len(messages)
    for step in reversed(steps[at:]):
        if step.error is None:  # a failed model call appended nothing
            start = end - appended(step)
            if start < 0:  # these steps alone appended more than there are: this raises
                _enough(messages, steps, at, where)
            results = end - len(step.tool_calls)
            for i in range(results, end):
                if messages[i].role != "tool":
                    _not_appended(where, messages, i, "tool", step)
            if messages[results - 1].role != "assistant":
                _not_appended(where, messages, results - 1, "assistant", step)
            if step.final_answer and messages[start].role != "user":
                _not_appended(where, messages, start, "user", step)
            end = start
        yield end


def _enough(messages: Sequence[Message], steps: Sequence[Step], at: int, where: str) -> None:
    added = sum(appended(s) for s in steps[at:])
    if added > len(messages):
        raise ValueError(
            f"{where}: messages must be at least the {added} messages that steps {at} to "
            f"{len(steps) - 1} appended, got {len(messages)}; the messages are not this run's."
        )


def _not_appended(
    where: str, messages: Sequence[Message], i: int, role: str, step: Step
) -> NoReturn:
    raise ValueError(
        f"{where}: messages[{i}] must be {_a(role)} message (step {step.index} appended it), "
        f"got {_a(messages[i].role)} message; the messages are not this run's."
    )


def _a(role: str) -> str:
    return f"an {role}" if role[:1] in ("a", "e", "i", "o", "u") else f"a {role}"


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
