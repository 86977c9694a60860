"""The ledger family: one budget shared by many runs. Each store is a module of its own over
``_base`` (checked amounts, periods, leases, reservations and settles kept pending while a store
does not answer); ``budgetloop.ledger`` is the public face."""

from ._base import Ledger, LedgerError, Reservation
from ._memory import MemoryLedger
from ._redis import RedisLedger
from ._sqlite import SqliteLedger

__all__ = ["Ledger", "LedgerError", "MemoryLedger", "RedisLedger", "Reservation", "SqliteLedger"]
