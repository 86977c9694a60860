"""The next request's input tokens: counted as the context grows, calibrated by reported usage.

Without a ``count_tokens``, each message is estimated once, when it joins the context, so a long
run does not re-count its whole context every turn. Once a provider reports the input tokens of
a request, that number is taken as exact for everything the request carried, and only what was
appended since is estimated. And the estimate learns: when a report shows that what was
appended between two reports was undercounted (a tool returning hashes or random letters
tokenizes up to three times denser than the estimate assumes), everything appended from then on
is estimated at the highest such ratio seen, never below 1.0. The ratio is taken between two
reports, so a fixed amount a provider adds to every request (a system prompt for tools) does
not inflate it.

With a ``count_tokens``, each count is what it returns for the whole request, checked to be an
int >= 0.
"""

from __future__ import annotations

import math
import operator
import reprlib
from collections.abc import Sequence
from typing import Any

from .._engine._types import Message
from .._engine._valid import type_name
from ._budget import REQUEST_OVERHEAD, CountTokens, estimate_message, estimate_tools


class ContextTokens:
    """Counts the input tokens of the next request as messages join the context.

    The loop calls ``append`` for each message of the context, ``count`` to project a request,
    ``sending`` when it sends one and ``reported`` with the input tokens the provider reported
    for it.
    """

    def __init__(
        self, schemas: Sequence[dict[str, Any]], count_tokens: CountTokens | None
    ) -> None:
        if count_tokens is not None and not callable(count_tokens):
            raise TypeError(
                "count_tokens must be a callable (messages, tools) -> int or None, "
                f"got {type_name(count_tokens)}."
            )
        self._schemas = list(schemas)
        self._count_tokens = count_tokens
        self._messages: list[Message] = []
        self._counted: list[int] = []  # each message's tokens, as counted when it was appended
        self._counted_sum = 0
        self._base = REQUEST_OVERHEAD + estimate_tools(self._schemas)
        self._raw_sum = self._base  # the request's estimate with no ratio applied
        self._ratio = 1.0
        self._memo: dict[int, tuple[Message, int]] = {}  # extra messages' estimates, by identity
        # At the last sending(): messages sent, the raw estimate and the count of the request.
        self._sent: tuple[int, int, int] | None = None
        # At the last reported(): the raw estimate and the true tokens of the request, and how
        # many messages that count covers with their counted total.
        self._report: tuple[int, int] | None = None
        self._exact: tuple[int, int, int] | None = None  # (messages, true tokens, counted sum)

    # -- the context grows ------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """``message`` joins the context."""
        entry = self._memo.pop(id(message), None)
        raw = entry[1] if entry is not None and entry[0] is message else estimate_message(message)
        counted = raw if self._ratio == 1.0 else self._scaled(raw)
        self._messages.append(message)
        self._counted.append(counted)
        self._counted_sum += counted
        self._raw_sum += raw

    # -- counting ---------------------------------------------------------------------------------

    def count(self, extra: Sequence[Message] = ()) -> int:
        """The input tokens of the next request, with ``extra`` messages appended to it.

        An extra message's estimate is remembered (by identity) until it is appended, so a
        message projected before it joins the context is estimated once.
        """
        if self._count_tokens is not None:
            return checked(self._count_tokens([*self._messages, *extra], list(self._schemas)))
        added = sum(self._scaled(self._estimate(m)) for m in extra) if extra else 0
        if self._exact is None:
            return self._base + self._counted_sum + added
        _, tokens, counted_then = self._exact
        return tokens + self._counted_sum - counted_then + added

    def count_sent(
        self,
        request: Sequence[Message],
        at: Sequence[int | None],
        extra: Sequence[Message] = (),
    ) -> int:
        """The input tokens of ``request`` (a context policy's: ``at`` is each message's index
        in the context, None for one the policy wrote), with ``extra`` appended: with a
        ``count_tokens``, what it counts; else each context message as it was counted when it
        joined, and each other one estimated, so the count is the estimate of the request sent
        (a provider's report of an earlier request, which held other messages, is not taken
        for it)."""
        if self._count_tokens is not None:
            return checked(self._count_tokens([*request, *extra], list(self._schemas)))
        counted, held = self._counted, len(self._counted)
        total = self._base
        for message, index in zip(request, at, strict=True):
            if index is not None and index < held:
                total += counted[index]
            else:
                total += self._scaled(estimate_message(message))
        return total + sum(self._scaled(self._estimate(m)) for m in extra)

    def sending(self) -> None:
        """The context as it stands is being sent: its report, when one comes, is about it."""
        self._sent = (len(self._messages), self._raw_sum, self._counted_sum)
        self._memo.clear()

    def reported(self, input_tokens: int) -> None:
        """The provider counted ``input_tokens`` for the request last sent: take it as exact for
        everything that request carried, and learn how dense what was appended since the
        previous report is."""
        if isinstance(input_tokens, bool) or not isinstance(input_tokens, int):
            raise TypeError(
                "ContextTokens.reported: input_tokens must be an int >= 0, "
                f"got {type_name(input_tokens)}."
            )
        if input_tokens < 0:
            raise ValueError(
                f"ContextTokens.reported: input_tokens must be an int >= 0, got {input_tokens}."
            )
        if self._sent is None:
            raise RuntimeError(
                "ContextTokens.reported: a request must be sent first, got none; call sending()."
            )
        sent, raw, counted = self._sent
        if self._report is not None:
            new_raw = raw - self._report[0]
            new_true = input_tokens - self._report[1]
            if new_raw > 0 and new_true > new_raw * self._ratio:
                self._ratio = new_true / new_raw
        self._report = (raw, input_tokens)
        self._exact = (sent, input_tokens, counted)

    # -- what a caller reads ----------------------------------------------------------------------

    @property
    def per_message(self) -> tuple[int, ...]:
        """Each message's tokens as counted when it was appended: its estimate times the ratio
        in force then (the default estimate even when a ``count_tokens`` is given)."""
        return tuple(self._counted)

    @property
    def ratio(self) -> float:
        """What new content's estimate is multiplied by: the highest density reports have
        shown, 1.0 until a report shows an undercount."""
        return self._ratio

    # -- inside -----------------------------------------------------------------------------------

    def _estimate(self, message: Message) -> int:
        entry = self._memo.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        raw = estimate_message(message)
        self._memo[id(message)] = (message, raw)
        return raw

    def _scaled(self, raw: int) -> int:
        return raw if self._ratio == 1.0 else math.ceil(raw * self._ratio)


def checked(value: object) -> int:
    """What a ``count_tokens`` returned, if it is a token count."""
    index: int | None = None
    if not isinstance(value, bool):  # an int, or what converts to one losslessly (numpy's)
        try:
            index = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            index = None
    if index is None:
        got = "None" if value is None else f"{type(value).__name__} {reprlib.repr(value)}"
        raise TypeError(
            "count_tokens: what count_tokens(messages, tools) returns must be an int >= 0, "
            f"got {got}."
        )
    if index < 0:
        raise ValueError(
            "count_tokens: what count_tokens(messages, tools) returns must be an int >= 0, "
            f"got {index}."
        )
    return index
