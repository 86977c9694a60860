"""Reading a saved run back as what its model said: completions, and errors that describe alike.

Shared by ``ScriptedModel.from_trace``, ``replay`` and ``first_divergence``.
"""

from __future__ import annotations

import builtins
import functools
import math

from .._engine._types import Completion, Price, ToolCall, UnreadableReply, Usage, to_pico
from .._trace._result import Step


class RecordedError(Exception):
    """An error played back from a trace. It is described (``describe``, as the loop writes a
    tool's or a model's error) as the recorded text, word for word: that is what the model
    read, whether or not it had the loop's ``Type: message`` shape (an imported run's error
    is the source's own words)."""

    def __init__(self, message: str, recorded: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.recorded = message if recorded is None else recorded

    def __str__(self) -> str:
        return self.message


class PlayedUnreadable(RecordedError, UnreadableReply):
    """A model error played back from a trace whose call was billed (the model raised
    ``UnreadableReply``, or the call was otherwise charged): described as the recorded text,
    and billed again by the usage and cost it carries, as it was."""

    def __init__(
        self, recorded: str, usage: Usage | None = None, cost_usd: float | None = None
    ) -> None:
        _, sep, message = recorded.partition(": ")
        super().__init__(message if sep else recorded, recorded)
        self.usage = usage
        self.cost_usd = cost_usd


@functools.lru_cache(maxsize=256)
def _error_class(name: str) -> type[RecordedError]:
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        try:  # a recorded ConnectionError is still caught by ``except ConnectionError``
            kind = type(name, (RecordedError, builtin), {"__module__": __name__})
            kind("")
            return kind
        except TypeError:  # a builtin that cannot be built from one message
            pass
    return type(name, (RecordedError,), {"__module__": __name__})


def recorded_error(text: str) -> RecordedError:
    """An exception described as ``text``; when ``text`` has the shape ``Type: message`` (every
    error the loop records from an exception does), its ``f"{type(exc).__name__}: {exc}"`` is
    ``text`` too. Named after a builtin exception, it is one (a subclass), so the same
    ``except`` catches it."""
    name, sep, message = text.partition(": ")
    if not sep:
        return RecordedError(text)
    return _error_class(name)(message, text)


def billed_error(step: Step, price: Price | None, where: str) -> Completion | None:
    """What a step that was a model error was billed by, to bill it again when it is played
    back: its usage, and its cost where the loop would not derive it (``played_cost``). None
    for a call that cost nothing (one the provider refused: an HTTP error bills no tokens)."""
    if step.usage is None and not step.cost_usd:
        return None
    return Completion(usage=step.usage, cost_usd=played_cost(step, price, where))


def played_error(text: str, billed: Completion | None) -> RecordedError:
    """The exception a recorded model error is played back as: described as ``text`` (see
    ``recorded_error``), and an ``UnreadableReply`` carrying what it was billed by when it was
    billed (``billed_error``)."""
    if billed is None:
        return recorded_error(text)
    return PlayedUnreadable(text, billed.usage, billed.cost_usd)


def played_cost(step: Step, price: Price | None, where: str) -> float | None:
    """The ``cost_usd`` a played-back completion reports: None where the loop derives the
    recorded cost itself (usage at ``price``, or the projection when no usage was reported),
    so a replay under a new price re-prices it; the recorded cost where it was reported."""
    cost = step.cost_usd
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost)
    ):
        raise ValueError(f"{where}: step {step.index}: cost_usd must be a number, got {cost!r}.")
    if cost is None:  # an imported step of unknown cost: the loop derives it
        return None
    if step.usage is not None:  # priced as the loop prices it: each kind of token at its price
        derived = 0 if price is None else price.usage_pico(step.usage)
    else:
        projected = None if step.projection is None else step.projection.cost_usd
        derived = 0 if projected is None else to_pico(projected)
    return None if derived == to_pico(cost) else float(cost)


def completion_of(step: Step, price: Price | None, where: str) -> Completion:
    """What the model returned at a step that was not a model error, as it returned it: the
    text, each call with its raw arguments and the id it was recorded with, the usage and
    (where it was reported) the cost."""
    return Completion(
        text=step.text,
        tool_calls=tuple(ToolCall(c.name, c.raw_arguments, c.id) for c in step.tool_calls),
        usage=step.usage,
        cost_usd=played_cost(step, price, where),
        model=step.model,
        response_id=step.response_id,
        finish_reason=step.finish_reason,
    )
