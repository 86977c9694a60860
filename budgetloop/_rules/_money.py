"""The run's money, kept in one place: what a call may cost, what it did cost, and the shared
ledger's part in both.

``Money`` is the only code that changes what a run has spent. A turn asks it to ``reserve`` the
worst case before a model call (a shared ledger may refuse, or not answer: either stops the run
before the call), keeps the reservation's lease ``renewing`` while the call runs (a renewal that
failed stops the run at its next ``reserve``), then asks it to ``bill`` the call the moment it
is over. Billing adds to the run's spend first and settles the ledger second; a store that does
not answer keeps the settle pending in the ledger (see ``budgetloop._ledgers``), never raises
into the turn, and the run's next ``reserve`` stops it, with the store's error, rather than
send anything more. So a call that was billed is always recorded as a step, and the ledger
never ends below what was billed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .._engine._turn import Ending, Reply
from .._engine._types import (
    Completion,
    Price,
    Stop,
    UnreadableReply,
    Usage,
    format_usd,
    from_pico,
    to_pico,
)
from .._engine._valid import check_number
from .._ledgers import Ledger, Reservation
from .._ledgers._lease import Kept
from .._tools._dispatch import describe
from .._tools._tracebacks import own_traceback


class Money:
    """What the run has spent (whole picodollars) and its reservations in a shared ledger."""

    __slots__ = ("known", "lapsed", "ledger", "spent", "unrecorded")

    def __init__(self, spent: int, ledger: Ledger | None) -> None:
        self.spent = spent
        self.ledger = ledger
        self.unrecorded: Exception | None = None  # the store's error when a settle was kept
        self.lapsed: Kept | None = None  # a call's lease that could not be renewed
        self.known = True  # False: the run goes on from spend no one knows (an imported run's)

    def usd(self, pico: int) -> float | None:
        """A step's or the run's cost as the trace says it: unknown (None) in a run whose spend
        is not known, when nothing about it was known either."""
        return from_pico(pico) if self.known or pico else None

    def total_usd(self) -> float | None:
        """What the run has spent, or None when it goes on from spend no one knows."""
        return from_pico(self.spent) if self.known else None

    def reserve(
        self, projected: int | None, fit: Callable[[int], int | None] | None = None
    ) -> tuple[Reservation | None, Ending | None]:
        """Hold the next call's worst case in the shared ledger, if there is one; or the stop
        that comes instead: a refusal, or a store that does not answer. When the ledger
        refuses, ``fit(room)`` (``min_output_tokens``) may make the call smaller, to fit the
        ``room`` picodollars the ledger has left: that worst case is then asked for instead."""
        ledger = self.ledger
        if ledger is None:
            return None, None
        if self.lapsed is not None:
            return None, self._lapsed_ending(self.lapsed)
        amount = projected or 0
        try:
            reservation = ledger._reserve_pico(amount)
        except Exception as exc:
            return None, self._no_answer(exc)
        if reservation is None and fit is not None:
            smaller = self._fitted(ledger, fit)
            if smaller is not None:
                amount = smaller
                try:
                    reservation = ledger._reserve_pico(amount)
                except Exception as exc:
                    return None, self._no_answer(exc)
        if reservation is not None:
            return reservation, None
        refused = (
            f"the shared ledger refused the next turn's worst case {format_usd(from_pico(amount))}"
        )
        try:  # its totals, for the sentence: asked again, so the store may not answer now
            spent, reserved = ledger.spent_usd(), ledger.reserved_usd()
        except Exception as exc:
            error = describe(exc)
            return None, Ending(
                Stop.SHARED_BUDGET,
                f"{refused}, then did not answer for its totals ({error})",
                error,
            )
        return None, Ending(
            Stop.SHARED_BUDGET,
            f"{refused}: {format_usd(spent)} spent and {format_usd(reserved)}"
            f" reserved of {format_usd(ledger.limit_usd)}",
        )

    def _no_answer(self, exc: Exception) -> Ending:
        return Ending(
            Stop.SHARED_BUDGET,
            f"the shared ledger did not answer, so no further call was sent"
            f"{self._pending_words()}",
            describe(exc),
        )

    @staticmethod
    def _fitted(ledger: Ledger, fit: Callable[[int], int | None]) -> int | None:
        """The worst case ``fit`` makes of what the ledger has left; None when it cannot, or
        the store does not say what it has left (the refusal then stands)."""
        try:
            room = ledger.limit_pico - ledger.spent_pico() - ledger.reserved_pico()
        except Exception:
            return None
        return fit(room) if room > 0 else None

    @contextmanager
    def renewing(self, reservation: Reservation | None) -> Iterator[None]:
        """The reservation's lease renewed while its call is in flight (the block), and stopped
        before the call is billed; a renewal that failed stops the run at its next ``reserve``."""
        if reservation is None:
            yield
            return
        kept = None
        try:
            with reservation._running() as kept:
                yield
        finally:
            if kept is not None and kept.lapsed:
                self.lapsed = kept

    def _lapsed_ending(self, kept: Kept) -> Ending:
        """The stop after a call whose lease could not be renewed while it ran."""
        if kept.error is None:
            why = "no longer held the last call's reservation when its lease was renewed"
        else:
            why = "did not answer when the last call's lease was renewed"
        return Ending(
            Stop.SHARED_BUDGET,
            f"the shared ledger {why}, so another run may have reserved that money, and no "
            f"further call was sent{self._pending_words()}",
            None if kept.error is None else describe(kept.error),
        )

    def carry(self, spent: int) -> None:
        """Spend made before this run by the run it stands for (a replayed fork's source
        after the fork point): spent here too, and never a ledger's to settle again."""
        self.spent += spent

    def bill(self, cost: int, reservation: Reservation | None) -> None:
        """A model call is over: its cost is spent, then settled in the ledger. Never raises
        for the store: a settle it did not take is kept pending (see the module's text)."""
        self.spent += cost
        if reservation is not None:
            failure = reservation._settle_pico(cost)
            if failure is not None:
                self.unrecorded = failure

    def _pending_words(self) -> str:
        ledger = self.ledger
        if ledger is None or self.unrecorded is None:
            return ""
        return f" ({format_usd(ledger.pending_usd())} billed here is still to be recorded in it)"


def call_cost(reply: Reply, projected: int | None, price: Price | None) -> int:
    """A model call's cost in picodollars: as reported, else priced usage, else projected
    (no usage reported: the worst case it was allowed). A reply that arrived but could not be
    read (``UnreadableReply``) was billed by the provider, so it costs the same way, from what
    it reported. Any other failed call returned nothing, and costs nothing (the provider
    refused it: an HTTP error bills no tokens); one abandoned at the deadline may have been
    billed, so it costs the worst."""
    reported = reply.completion if reply.completion is not None else reply.unread
    if reported is None:
        return (projected or 0) if reply.abandoned else 0
    if reported.cost_usd is not None:
        return to_pico(reported.cost_usd)
    if reported.usage is not None and price is not None:
        return price.usage_pico(reported.usage)
    return projected or 0


def raised(exc: BaseException) -> Reply:
    """The reply of a model call that raised ``exc``: its error (and traceback), and for an
    ``UnreadableReply`` what the reply it could not read reported, to bill it by (a usage that
    is not a ``Usage``, or a cost that is not a finite number >= 0, is none)."""
    reply = Reply(None, describe(exc), traceback=own_traceback(exc))
    if isinstance(exc, UnreadableReply):
        try:  # a subclass of the user's may not set them, or may read them in a property
            usage, cost = getattr(exc, "usage", None), getattr(exc, "cost_usd", None)
        except Exception:
            usage, cost = None, None
        try:
            check_number("UnreadableReply", "cost_usd", cost, optional=True)
        except (TypeError, ValueError):
            cost = None
        reply.unread = Completion(usage=usage if isinstance(usage, Usage) else None, cost_usd=cost)
    return reply


def cost_parts(cost_usd: float, usage: Usage | None, price: Price | None) -> tuple[int, int]:
    """A billed cost split into its input and output parts, in picodollars, for viewers that
    show both (MLflow): the output's part is its tokens at ``price``'s output rate (of the tier
    its whole input falls in; never more than the cost), the input's the rest. Exact for a call
    billed from its usage; a cost the model reported, or a projection billed for a call with no
    usage, is split by the same rule (all of it input when there is no usage or no price)."""
    total = to_pico(cost_usd)
    output = 0
    if usage is not None and price is not None:
        output = min(total, price.at(usage.input_tokens).pico(0, usage.output_tokens))
    return total - output, output
