"""Leases kept alive: a reservation whose call is still running is renewed until it is let go.

A run keeps its reservation (``Keeper.keep``) while its model call is in flight and lets it go
(``Keeper.let_go``) before settling it. Each ledger object has one ``Keeper`` per process, and
the keeper one thread, started by the first reservation it keeps and ended once it has kept
none for a while (an interval, at most ``IDLE`` seconds). Every third of ``lease_seconds`` the
thread renews each reservation it keeps (``Reservation.renew``), so a lease runs out while its
call runs only when renewing it fails: the store did not answer, or no longer held the
reservation (its lease had ended and another run reserved the money, or someone took it away).
That renewal is the last: why it failed is kept on the ``Kept`` for the run to read when it
lets go, and the run stops before its next call.

The thread renews outside the keeper's lock (a store that is slow to answer holds up no run that
keeps or lets go of another reservation), and ``let_go`` waits for a renewal of its own
reservation in flight, then reads its outcome: a run never settles while its own renewal runs,
and never misses a renewal that failed.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._base import Reservation

IDLE = 1.0  # seconds: the longest a keeper's thread waits at once, and idles before it ends
SOONEST = 0.001  # seconds: the shortest interval, so a lease of microseconds is no busy loop


class Kept:
    """One reservation being kept: when it is next renewed (``time.monotonic``), and why its
    last renewal failed (the store's error, or None when the store no longer held it) once one
    has."""

    __slots__ = ("due", "error", "lapsed", "reservation")

    def __init__(self, reservation: Reservation, due: float) -> None:
        self.reservation = reservation
        self.due = due
        self.lapsed = False  # a renewal failed: the lease may have ended while the call ran
        self.error: Exception | None = None  # the store's error, when it did not answer


class Keeper:
    """Renews the reservations a ledger's runs keep in this process, every ``interval``
    seconds (a millisecond at least), on one thread."""

    def __init__(self, interval: float) -> None:
        self.interval = max(interval, SOONEST)
        self.pid = os.getpid()  # a forked child makes its own: this one's thread is not there
        self._cond = threading.Condition()
        self._kept: dict[str, Kept] = {}  # by reservation id, soonest due first
        self._renewing: Kept | None = None  # the one being renewed, out of ``_kept`` meanwhile
        self._thread: threading.Thread | None = None

    def keep(self, reservation: Reservation) -> Kept:
        """Renew ``reservation`` from one interval from now until it is let go."""
        kept = Kept(reservation, time.monotonic() + self.interval)
        with self._cond:
            self._kept[reservation.id] = kept
            if self._thread is None:
                thread = threading.Thread(
                    target=self._renew_all, name="budgetloop-lease", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError as exc:  # no thread to spare: this lease cannot be kept
                    del self._kept[reservation.id]
                    kept.lapsed, kept.error = True, exc
                    return kept
                self._thread = thread
        return kept

    def let_go(self, kept: Kept) -> None:
        """Stop renewing (after a renewal in flight, whose outcome ``kept`` then holds)."""
        with self._cond:
            while self._renewing is kept:
                self._cond.wait()
            self._kept.pop(kept.reservation.id, None)

    def _renew_all(self) -> None:
        """The thread: renew each kept reservation when it is due; end after a while with none
        kept (a later ``keep`` starts another). It waits without being told of new ones: each
        is due one interval after it was kept, later than any wait already begun ends."""
        idle = False
        with self._cond:
            while True:
                if not self._kept:
                    if idle:
                        break
                    idle = True
                    self._cond.wait(min(self.interval, IDLE))
                    continue
                idle = False
                kept = next(iter(self._kept.values()))
                wait = kept.due - time.monotonic()
                if wait > 0:  # a while at most: a lease of years is a wait no clock can time
                    self._cond.wait(min(wait, IDLE))
                    continue
                del self._kept[kept.reservation.id]
                self._renewing = kept
                self._cond.release()
                try:
                    renewed = self._renewed(kept)
                finally:
                    self._cond.acquire()
                    self._renewing = None
                    self._cond.notify_all()
                if renewed:  # back in line, last: due last (``let_go`` may take it out now)
                    kept.due = time.monotonic() + self.interval
                    self._kept[kept.reservation.id] = kept
            self._thread = None

    @staticmethod
    def _renewed(kept: Kept) -> bool:
        """Renew one reservation; False (and why, on ``kept``) when that was its last."""
        reservation = kept.reservation
        try:
            if reservation.renew():
                return True
        except Exception as exc:
            kept.lapsed, kept.error = True, exc
            return False
        # settled or released meanwhile (nothing left to keep), or the store no longer holds it
        kept.lapsed = reservation.state == "held"
        return False
