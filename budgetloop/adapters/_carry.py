"""What an adapter must send back with a turn but the loop's messages do not hold: a reasoning
model's reasoning items (OpenAI) or thinking blocks (Anthropic), kept by the adapter from the
response that made a tool-call turn until that turn is sent again."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from .._engine._types import Completion, Message

# How many tool-call turns an adapter keeps (the oldest dropped first): a run's context holds
# only its own turns, and many runs may share one adapter.
CARRIED_TURNS = 1024


class Carried:
    """Items to send with a tool-call turn, by its first call's id. A turn is found only as
    the model sent it (the same text, calls and arguments): a turn edited in a fork is sent as
    edited, without what the model's own turn carried."""

    def __init__(self) -> None:
        self._turns: OrderedDict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, completion: Completion, items: list[dict[str, Any]]) -> None:
        first = completion.tool_calls[0].id if completion.tool_calls else None
        if first is None or not items:
            return
        with self._lock:
            self._turns[first] = (_turn_key(completion.text, completion), items)
            while len(self._turns) > CARRIED_TURNS:
                self._turns.popitem(last=False)

    def get(self, message: Message) -> list[dict[str, Any]] | None:
        """The items kept for this assistant turn, if it is the turn as the model sent it."""
        first = message.tool_calls[0].id if message.tool_calls else None
        if first is None:
            return None
        with self._lock:
            found = self._turns.get(first)
        if found is None or found[0] != _turn_key(message.content, message):
            return None
        return found[1]


def _turn_key(text: str | None, turn: Completion | Message) -> tuple[Any, ...]:
    calls = tuple((c.id, c.name, c.arguments_text) for c in turn.tool_calls)
    return (text or None, calls)
