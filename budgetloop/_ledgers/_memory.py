"""``MemoryLedger``: a ledger for the threads of one process."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ._base import DEFAULT_LEASE, Clock, Ledger, Reservation, period_index


@dataclass
class _Held:
    pico: int
    period: int
    expires: float


class MemoryLedger(Ledger):
    """A ledger for the threads of one process, behind one lock. It does not pickle: a copy in
    another process would be a second budget, not this one."""

    def __init__(
        self,
        limit_usd: float,
        *,
        period: str | None = None,
        lease_seconds: float = DEFAULT_LEASE,
        clock: Clock = time.time,
    ) -> None:
        self._configure("MemoryLedger", limit_usd, period, lease_seconds, clock)
        self._lock = threading.Lock()
        self._spent: dict[int, int] = {}
        self._held: dict[str, _Held] = {}

    def _expire(self, now: float) -> None:
        for ident in [i for i, h in self._held.items() if h.expires <= now]:
            del self._held[ident]

    def _reserved(self, period: int) -> int:
        return sum(h.pico for h in self._held.values() if h.period == period)

    def _try_reserve(self, ident: str, pico: int, period: int, now: float, expires: float) -> bool:
        with self._lock:
            self._expire(now)
            if self._spent.get(period, 0) + self._reserved(period) + pico > self._limit:
                return False
            self._held[ident] = _Held(pico, period, expires)
            return True

    def _settle(self, reservation: Reservation, pico: int) -> None:
        with self._lock:
            self._held.pop(reservation.id, None)
            self._spent[reservation.period] = self._spent.get(reservation.period, 0) + pico

    def _renew(self, reservation: Reservation, expires: float) -> bool:
        with self._lock:
            held = self._held.get(reservation.id)
            if held is None:
                return False
            held.expires = expires
            return True

    def _release(self, reservation: Reservation) -> None:
        with self._lock:
            self._held.pop(reservation.id, None)

    def _totals(self, now: float) -> tuple[int, int]:
        period = period_index(self.period, now)
        with self._lock:
            self._expire(now)
            return self._spent.get(period, 0), self._reserved(period)

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(
            "MemoryLedger: a ledger sent to other processes (pickled) must be one they can "
            "share, got a MemoryLedger, which lives in one process; use SqliteLedger on one "
            "machine or RedisLedger across machines."
        )
