"""What every ledger shares: checked amounts, periods, leases and the ``Reservation``.

Money is whole picodollars (``_types.to_pico``), so a reservation that exactly fills the limit
fits and sums never drift. A store keeps, per period, the settled spend and the live
reservations; ``reserve`` refuses when spent + reserved + the new amount would pass the limit.
"""

from __future__ import annotations

import abc
import math
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .._engine._types import format_usd, from_pico, to_pico
from .._engine._valid import must, type_name
from ._lease import Keeper, Kept

PERIODS: dict[str | None, int] = {None: 0, "hour": 3600, "day": 86400}
MAX_USD = 1_000_000  # the largest limit or settled amount, so every store's int64 holds the sum
MAX_PICO = to_pico(MAX_USD)
# The most one settle records (about $4.6M): any larger cost is past every limit already, and
# what a store adds up stays within a signed 64-bit integer. The run itself keeps the exact sum.
SETTLE_MAX_PICO = 2**62
DEFAULT_LEASE = 600.0
Clock = Callable[[], float]


def _must(where: str, expected: str, got: str) -> str:
    """The one error grammar, for ``where`` written as ``Owner.name``."""
    owner, _, name = where.rpartition(".")
    return must(owner, name, expected, got)


def said(exc: BaseException) -> str:
    """A store's error as a message quotes it: its type, and its words when it has some."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def check_usd(where: str, value: object, *, maximum: bool = True) -> int:
    """A dollar amount as picodollars: a finite number >= 0 (at most ``MAX_USD``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(_must(where, "a number of dollars", type_name(value)))
    if not math.isfinite(value) or value < 0:
        raise ValueError(_must(where, "a finite number >= 0", repr(value)))
    if maximum and value > MAX_USD:
        raise ValueError(_must(where, f"at most {MAX_USD} dollars", repr(value)))
    return to_pico(value)


def check_pico(where: str, value: object, *, maximum: bool = True) -> int:
    """Picodollars: an int >= 0 (at most ``MAX_PICO``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(_must(where, "an int of picodollars", type_name(value)))
    if value < 0:
        raise ValueError(_must(where, "picodollars >= 0", repr(value)))
    if maximum and value > MAX_PICO:
        raise ValueError(_must(where, f"at most {MAX_PICO} picodollars", repr(value)))
    return value


def check_period(where: str, period: object) -> str | None:
    if period is not None and not isinstance(period, str):
        raise TypeError(f"{where}: period must be 'hour', 'day' or None, got {type_name(period)}.")
    if period not in PERIODS:
        raise ValueError(f"{where}: period must be 'hour', 'day' or None, got {period!r}.")
    return period


def check_lease(where: str, lease: object) -> float:
    if isinstance(lease, bool) or not isinstance(lease, (int, float)):
        raise TypeError(f"{where}: lease_seconds must be a number, got {type_name(lease)}.")
    if not math.isfinite(lease) or lease <= 0:
        raise ValueError(f"{where}: lease_seconds must be a finite number > 0, got {lease!r}.")
    return float(lease)


def check_clock(where: str, clock: object) -> Clock:
    if not callable(clock):
        raise TypeError(
            f"{where}: clock must be a callable returning seconds, got {type_name(clock)}."
        )
    return clock


def period_index(period: str | None, now: float) -> int:
    """Which period ``now`` (seconds since the epoch) falls in: UTC hours and days start at
    whole multiples of 3600 and 86400 seconds since the epoch. 0 when there is no period."""
    length = PERIODS[period]
    return 0 if length == 0 else int(now // length)


class LedgerError(RuntimeError):
    """A ledger's store did not answer (a locked SQLite file, a lost Redis connection).

    Money is never forgotten on its account: a settle the store did not take is kept pending
    in the ``Ledger`` object and applied by its next operation that reaches the store."""


class Reservation:
    """Money set aside before a call: ``settle`` it at the actual cost, or ``release`` it;
    ``renew`` its lease while the call runs (a run does, every third of ``lease_seconds``).

    ``settle`` may be called once; it records the spend even after ``release`` or after the
    lease ended (money spent is never forgotten), and a second ``settle`` is a ``ValueError``.
    When the store does not answer, the spend is kept pending in the ledger (``state`` is
    ``pending``), ``settle`` raises ``LedgerError``, and the ledger's next operation that
    reaches the store records it. ``release`` is idempotent: a no-op once the reservation is
    settled, pending or released.
    """

    def __init__(self, ledger: Ledger, ident: str, pico: int, period: int, expires: float) -> None:
        self._ledger = ledger
        self.id = ident
        self.pico = pico
        self.period = period
        self.expires = expires  # seconds since the epoch, on the ledger's clock
        self._state = "held"
        self._lock = threading.Lock()

    @property
    def usd(self) -> float:
        """The amount reserved, in dollars."""
        return from_pico(self.pico)

    @property
    def state(self) -> str:
        """``held``, ``settled``, ``pending`` (spent, not yet recorded by the store) or
        ``released``."""
        return self._state

    def settle(self, actual_usd: float) -> None:
        """Record ``actual_usd`` as spent and free the reservation."""
        pico = check_usd("Reservation.settle.actual_usd", actual_usd, maximum=False)
        failure = self._settle_pico(pico)
        if failure is not None:
            raise LedgerError(
                f"Reservation.settle: the ${actual_usd} settled must be recorded by the store, "
                f"got {said(failure)}; it is kept pending and recorded by the ledger's next "
                "operation that reaches the store."
            ) from failure

    def _settle_pico(self, pico: int) -> Exception | None:
        """Record ``pico`` spent: at once, or kept pending in the ledger when the store does
        not answer (then the store's error is returned). Never raises for the store."""
        check_pico("Reservation.settle.pico", pico, maximum=False)
        with self._lock:
            if self._state in ("settled", "pending"):
                raise ValueError(
                    f"Reservation.settle: reservation {self.id} must be open, got one already "
                    "settled."
                )
            failure = self._ledger._record(self, pico)
            self._state = "settled" if failure is None else "pending"
            return failure

    def renew(self) -> bool:
        """Extend the lease to ``lease_seconds`` from now, for a call that is still running
        (a run renews its reservation every third of the lease while its call is in flight).
        False when there is nothing to renew: the reservation is settled, pending or released,
        or the store no longer holds it (its lease ended and another reserve dropped it, or it
        was deleted), so its money may be another's. ``LedgerError`` when the store does not
        answer."""
        with self._lock:
            if self._state != "held":
                return False
            ledger = self._ledger
            expires = ledger._now() + ledger.lease_seconds
            try:
                held = ledger._renew(self, expires)
            except Exception as exc:
                raise LedgerError(
                    f"Reservation.renew: the lease of reservation {self.id} must be renewed by "
                    f"the store, got {said(exc)}."
                ) from exc
            if held:
                self.expires = expires
            return held

    @contextmanager
    def _running(self) -> Iterator[Kept]:
        """Renewed while the block runs (its call is in flight), by its ledger's keeper; the
        ``Kept`` says, once the block is over, whether a renewal failed."""
        keeper = self._ledger._keeper_here()
        kept = keeper.keep(self)
        try:
            yield kept
        finally:
            keeper.let_go(kept)

    def _recorded(self) -> None:
        """A pending settle reached the store."""
        self._state = "settled"

    def release(self) -> None:
        """Free the reservation without spending anything (a no-op if already done)."""
        with self._lock:
            if self._state != "held":
                return
            self._ledger._release(self)
            self._state = "released"

    def __repr__(self) -> str:
        return f"Reservation(id={self.id!r}, usd={self.usd!r}, state={self._state!r})"


class Ledger(abc.ABC):
    """A budget shared by many runs: reserve before a call, settle after it."""

    limit_usd: float
    period: str | None
    lease_seconds: float

    def _configure(
        self, where: str, limit_usd: object, period: object, lease_seconds: object, clock: object
    ) -> None:
        self._limit = check_usd(f"{where}.limit_usd", limit_usd)
        self.limit_usd = from_pico(self._limit)
        self.period = check_period(where, period)
        self.lease_seconds = check_lease(where, lease_seconds)
        self._clock = check_clock(where, clock)
        self._pending: dict[str, tuple[Reservation, int]] = {}  # settles the store did not take
        self._pending_lock = threading.Lock()
        self._keeper: Keeper | None = None

    def _keeper_here(self) -> Keeper:
        """The keeper that renews this process's running reservations, every third of the
        lease (made on first use, and again in a forked child)."""
        keeper = self._keeper
        if keeper is None or keeper.pid != os.getpid():
            keeper = self._keeper = Keeper(self.lease_seconds / 3)
        return keeper

    @property
    def limit_pico(self) -> int:
        return self._limit

    def reserve(self, usd: float) -> Reservation | None:
        """Set ``usd`` aside, or None when spent + reserved + ``usd`` would pass the limit."""
        return self._reserve_pico(
            check_usd(f"{type(self).__name__}.reserve.usd", usd, maximum=False)
        )

    def _reserve_pico(self, pico: int) -> Reservation | None:
        check_pico(f"{type(self).__name__}.reserve.pico", pico, maximum=False)
        self._flush_or_raise("reserve")
        if pico > self._limit:
            return None
        now = self._now()
        period = period_index(self.period, now)
        ident = secrets.token_hex(12)
        expires = now + self.lease_seconds
        if not self._try_reserve(ident, pico, period, now, expires):
            return None
        return Reservation(self, ident, pico, period, expires)

    def spent_usd(self) -> float:
        """Settled spend in the current period."""
        return from_pico(self.spent_pico())

    def reserved_usd(self) -> float:
        """Live reservations in the current period (leases not yet ended)."""
        return from_pico(self.reserved_pico())

    def spent_pico(self) -> int:
        self._flush_or_raise("spent_usd")
        return self._totals(self._now())[0]

    def reserved_pico(self) -> int:
        self._flush_or_raise("reserved_usd")
        return self._totals(self._now())[1]

    # -- settles: one path, and what happens when the store does not answer -------------------

    def pending_usd(self) -> float:
        """Spend settled by this process that its store has not recorded yet (it did not
        answer); recorded by the next operation that reaches it, or by ``flush()``."""
        with self._pending_lock:
            return from_pico(sum(pico for _, pico in self._pending.values()))

    def flush(self) -> float:
        """Try again to record every pending settle; return the dollars still pending."""
        self._flush()
        return self.pending_usd()

    def _record(self, reservation: Reservation, pico: int) -> Exception | None:
        """Record a settle in the store (earlier pending ones first), or keep it pending.
        Returns the store's error when it is kept; never raises for the store."""
        self._flush()
        try:
            self._settle(reservation, min(pico, SETTLE_MAX_PICO))
        except Exception as exc:
            with self._pending_lock:
                self._pending[reservation.id] = (reservation, pico)
            return exc
        return None

    def _flush(self) -> Exception | None:
        """Record pending settles, oldest first; the store's error if one is still pending."""
        with self._pending_lock:
            waiting = list(self._pending.items())
        for ident, (reservation, pico) in waiting:
            try:
                self._settle(reservation, min(pico, SETTLE_MAX_PICO))
            except Exception as exc:
                return exc
            with self._pending_lock:
                self._pending.pop(ident, None)
            reservation._recorded()
        return None

    def _flush_or_raise(self, where: str) -> None:
        failure = self._flush()
        if failure is not None:
            raise LedgerError(
                f"{type(self).__name__}.{where}: the {format_usd(self.pending_usd())} of settled "
                "spend not recorded yet must be recorded by the store before the ledger can "
                f"answer, got {said(failure)}."
            ) from failure

    def _now(self) -> float:
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
            got = repr(now) if isinstance(now, (int, float)) else type_name(now)
            raise TypeError(
                f"{type(self).__name__}: what clock returns must be a finite number of seconds, "
                f"got {got}."
            )
        return float(now)

    @abc.abstractmethod
    def _try_reserve(self, ident: str, pico: int, period: int, now: float, expires: float) -> bool:
        """Atomically: drop ended leases, then hold ``pico`` if it fits."""

    @abc.abstractmethod
    def _settle(self, reservation: Reservation, pico: int) -> None:
        """Atomically: drop the reservation (if still held) and add ``pico`` to its period,
        once: a retried settle of a reservation the store has already recorded adds nothing."""

    @abc.abstractmethod
    def _renew(self, reservation: Reservation, expires: float) -> bool:
        """Atomically: if the store still holds the reservation, move its lease's end to
        ``expires`` and return True; False when it holds it no longer."""

    @abc.abstractmethod
    def _release(self, reservation: Reservation) -> None:
        """Drop the reservation if still held."""

    @abc.abstractmethod
    def _totals(self, now: float) -> tuple[int, int]:
        """(spent, reserved by live leases) in picodollars, for the period of ``now``."""

    def _same_limit(self, pico: int) -> None:
        """Take the exact limit of the ledger this one was pickled from (dollars as a float
        may not come back to the same picodollars)."""
        self._limit = check_pico(f"{type(self).__name__}.limit_usd", pico)
        self.limit_usd = from_pico(pico)

    def __repr__(self) -> str:
        head = f"{type(self).__name__}(limit_usd={self.limit_usd!r}, period={self.period!r}"
        try:
            totals = f"spent_usd={self.spent_usd()!r}, reserved_usd={self.reserved_usd()!r}"
        except Exception as exc:  # a store that does not answer: the repr says so, not raises
            totals = f"store not answering: {type(exc).__name__}"
        return f"{head}, {totals}, pending_usd={self.pending_usd()!r})"
