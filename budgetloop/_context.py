"""The next request's input tokens, counted as messages join the context, calibrated by usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._budget import REQUEST_OVERHEAD, CountTokens, estimate_message, estimate_tools
from ._types import Message
from ._valid import check_int


class ContextTokens:
    """Counts the context incrementally: each message is estimated once, when it joins.

    With ``count_tokens`` the whole request is counted by it instead, and what it returns is
    checked. Once a model reports a request's input tokens, everything sent with that request
    is taken as exact and only the messages appended since are estimated.
    """

    def __init__(
        self, schemas: Sequence[dict[str, Any]], count_tokens: CountTokens | None
    ) -> None:
        self._schemas = list(schemas)
        self._count_tokens = count_tokens
        self._messages: list[Message] = []
        self._each: list[int] = []
        self._total = REQUEST_OVERHEAD + estimate_tools(self._schemas)
        self._offset = 0  # the true input of the last reported request minus our count of it
        self._sent = 0  # our count of the request in flight
        self._pending: dict[int, tuple[Message, int]] = {}  # estimates of extra messages

    def append(self, message: Message) -> None:
        """A message joins the context."""
        tokens = self._estimate(message)
        self._pending.pop(id(message), None)
        self._messages.append(message)
        self._each.append(tokens)
        self._total += tokens

    def count(self, extra: Sequence[Message] = ()) -> int:
        """The next request's input tokens, with ``extra`` messages appended."""
        if self._count_tokens is not None:
            value = self._count_tokens([*self._messages, *extra], self._schemas)
            check_int("count_tokens", value)
            return int(value)
        return self._total + self._offset + sum(self._estimate(m) for m in extra)

    def sending(self) -> None:
        """The context as it stands is being sent: remember its count."""
        self._sent = self._total

    def reported(self, input_tokens: int) -> None:
        """The provider's input tokens for the request last sent: what was sent is now exact."""
        self._offset = input_tokens - self._sent

    @property
    def per_message(self) -> tuple[int, ...]:
        """Each message's estimated tokens, in context order (for display; no re-counting)."""
        return tuple(self._each)

    def _estimate(self, message: Message) -> int:
        key = id(message)
        if key not in self._pending:
            self._pending[key] = (message, estimate_message(message))
        return self._pending[key][1]
