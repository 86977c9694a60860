"""Shared budgets: one spending limit for many runs, threads, processes or machines.

A run given ``ledger=`` reserves the worst case of each model call before making it and settles
the actual cost after it; a refused reservation stops the run with ``shared_budget``.

- ``MemoryLedger(limit_usd)``: threads in one process.
- ``SqliteLedger(path, limit_usd)``: processes on one machine (standard library ``sqlite3``).
- ``RedisLedger(url_or_client, limit_usd, key=...)``: many machines (``pip install
  'budgetloop[redis]'``).

Each takes ``period=None | "hour" | "day"`` (UTC; spend starts from zero in each new period, and
a reservation is settled into the period it was made in), ``lease_seconds`` (a reservation not
settled, released or renewed by then, say because its process was killed, stops counting;
settling it later still records the spend; a run renews its reservation every third of it for
as long as the call runs, and stops with ``shared_budget`` before its next call when a renewal
fails) and ``clock`` (seconds since the epoch; ``time.time``).
"""

from __future__ import annotations

from ._ledgers import Ledger, LedgerError, MemoryLedger, RedisLedger, Reservation, SqliteLedger

__all__ = [
    "Ledger",
    "LedgerError",
    "MemoryLedger",
    "RedisLedger",
    "Reservation",
    "SqliteLedger",
]
