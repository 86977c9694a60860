"""``SqliteLedger``: a ledger in an SQLite file, shared by the processes of one machine.

Every change is one ``BEGIN IMMEDIATE`` transaction (the write lock is taken before the spend is
read, so two processes cannot both see room for the same money), in WAL mode so readers never
wait. Amounts are INTEGER picodollars.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._engine._types import from_pico
from .._engine._valid import type_name
from ._base import DEFAULT_LEASE, Clock, Ledger, LedgerError, Reservation, period_index, said

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS spend ("
    " kind TEXT NOT NULL, period INTEGER NOT NULL, pico INTEGER NOT NULL,"
    " PRIMARY KEY (kind, period))",
    "CREATE TABLE IF NOT EXISTS held ("
    " id TEXT PRIMARY KEY, kind TEXT NOT NULL, period INTEGER NOT NULL,"
    " pico INTEGER NOT NULL, expires REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS settled (id TEXT PRIMARY KEY, at REAL NOT NULL)",
)
_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
SETTLED_KEPT = 86400.0  # a settle retried within a day of the first is recognised and not re-added


class SqliteLedger(Ledger):
    """A ledger in the SQLite file at ``path`` (created if missing), for many processes.

    Spend is kept per period kind, so a daily and an hourly ledger on one file do not mix.
    Each process checks its own ``limit_usd``: give them all the same one.

    ``durable=True`` syncs every commit to disk (``synchronous=FULL``): a settled spend survives
    a power cut, at the price of a disk sync per reserve and per settle. ``durable=False``
    (``synchronous=NORMAL``) still survives any process being killed, but a power cut or an
    operating-system crash can lose the last commits.

    Opening waits up to ``timeout`` seconds for a file another connection holds locked, then
    raises ``LedgerError`` saying another connection held its lock all that time; a path it
    cannot open or write is a ValueError.

    It pickles as what it points at (the path, the limit, the period, the lease, the clock, the
    timeout and ``durable``): a copy in another process opens the same file and shares its spend
    and reservations. Settles still pending in this object stay with it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        limit_usd: float,
        *,
        period: str | None = None,
        lease_seconds: float = DEFAULT_LEASE,
        clock: Clock = time.time,
        timeout: float = 30.0,
        durable: bool = True,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"SqliteLedger: timeout must be seconds > 0, got {timeout!r}.")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"SqliteLedger: path must be a str or path, got {type_name(path)}.")
        self._configure("SqliteLedger", limit_usd, period, lease_seconds, clock)
        self.path = os.fspath(path)
        self._kind = self.period or "all"
        self._timeout = timeout
        if not isinstance(durable, bool):
            raise TypeError(f"SqliteLedger: durable must be True or False, got {durable!r}.")
        self.durable = durable
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        try:
            with self._transaction() as db:
                for statement in SCHEMA:
                    db.execute(statement)
        except sqlite3.Error as exc:
            self.close()
            if _busy(exc):  # not a wrong path: another connection held it for the whole timeout
                raise LedgerError(
                    f"SqliteLedger: the file {self.path!r} must be free within the timeout of "
                    f"{self._timeout:g} s, got another connection holding its lock all that "
                    f"time ({said(exc)}); try again, or give a longer timeout."
                ) from exc
            raise ValueError(
                f"SqliteLedger: path must be an SQLite file this process can write, "
                f"got {self.path!r} ({said(exc)})."
            ) from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # a forked child opens its own
            conn = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _spent(self, db: sqlite3.Connection, period: int) -> int:
        row = db.execute(
            "SELECT pico FROM spend WHERE kind = ? AND period = ?", (self._kind, period)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _reserved(self, db: sqlite3.Connection, period: int, now: float) -> int:
        row = db.execute(
            "SELECT COALESCE(SUM(pico), 0) FROM held"
            " WHERE kind = ? AND period = ? AND expires > ?",
            (self._kind, period, now),
        ).fetchone()
        return int(row[0])

    def _try_reserve(self, ident: str, pico: int, period: int, now: float, expires: float) -> bool:
        with self._transaction() as db:
            db.execute("DELETE FROM held WHERE expires <= ?", (now,))
            if self._spent(db, period) + self._reserved(db, period, now) + pico > self._limit:
                return False
            db.execute(
                "INSERT INTO held (id, kind, period, pico, expires) VALUES (?, ?, ?, ?, ?)",
                (ident, self._kind, period, pico, expires),
            )
            return True

    def _settle(self, reservation: Reservation, pico: int) -> None:
        now = self._now()
        with self._transaction() as db:
            db.execute("DELETE FROM settled WHERE at < ?", (now - SETTLED_KEPT,))
            added = db.execute(
                "INSERT OR IGNORE INTO settled (id, at) VALUES (?, ?)", (reservation.id, now)
            )
            if added.rowcount == 0:  # a retry of a settle the file already has
                return
            db.execute("DELETE FROM held WHERE id = ?", (reservation.id,))
            db.execute(
                "INSERT INTO spend (kind, period, pico) VALUES (?, ?, ?)"
                " ON CONFLICT (kind, period) DO UPDATE SET pico = pico + excluded.pico",
                (self._kind, reservation.period, pico),
            )

    def _renew(self, reservation: Reservation, expires: float) -> bool:
        with self._transaction() as db:
            renewed = db.execute(
                "UPDATE held SET expires = ? WHERE id = ?", (expires, reservation.id)
            )
            return renewed.rowcount == 1

    def _release(self, reservation: Reservation) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM held WHERE id = ?", (reservation.id,))

    def _totals(self, now: float) -> tuple[int, int]:
        period = period_index(self.period, now)
        with self._lock:
            db = self._connection()
            db.execute("BEGIN")  # one snapshot for both reads
            try:
                return self._spent(db, period), self._reserved(db, period, now)
            finally:
                db.execute("COMMIT")

    def __reduce__(self) -> tuple[Any, ...]:
        options = {
            "period": self.period,
            "lease_seconds": self.lease_seconds,
            "clock": self._clock,
            "timeout": self._timeout,
            "durable": self.durable,
        }
        return (_reopen, (self.path, self._limit, options))

    def close(self) -> None:
        """Close this process's connection (it reopens on the next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for a lock (the error code is there from Python 3.11)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY
    return str(exc) in ("database is locked", "database table is locked")


def _reopen(path: str, limit: int, options: dict[str, Any]) -> SqliteLedger:
    """An ``SqliteLedger`` unpickled: the same file, the same exact limit."""
    ledger = SqliteLedger(path, from_pico(limit), **options)
    ledger._same_limit(limit)
    return ledger
