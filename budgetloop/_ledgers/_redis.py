"""``RedisLedger``: a ledger on a Redis server, shared by processes on many machines.

Reserve, settle, release and renew are each one Lua script, which Redis runs without interleaving.
Amounts are integer picodollars handled by ``INCRBY``/``DECRBY`` (exact in 64 bits) and compared
as decimal strings, never as Lua's doubles. Keys, with ``{key}`` as a hash tag so that a cluster
keeps them in one slot, per period P: ``{key}:spent:P`` (settled), ``{key}:used:P`` (settled plus
held), ``{key}:held:P`` (hash: reservation -> amount), ``{key}:lease:P`` (sorted set:
reservation -> lease end) and ``{key}:settled:P`` (sorted set: reservation -> when settled, kept
a day, so a settle retried after a lost reply is not added twice). Leases are on the clients'
clock (``clock=``): keep the machines' clocks in step (NTP), since a skew between them moves
lease ends by as much.
"""

from __future__ import annotations

import time
from typing import Any

from .._engine._types import from_pico
from .._engine._valid import type_name
from ._base import DEFAULT_LEASE, Clock, Ledger, Reservation, period_index

SETTLED_KEPT = 86400.0  # a settle retried within a day of the first is recognised

# Drop ended leases of one period: the amount they held leaves ``used``.
_EXPIRE = """
local ended = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[1])
for _, id in ipairs(ended) do
  local amount = redis.call('HGET', KEYS[3], id)
  if amount then
    redis.call('DECRBY', KEYS[2], amount)
    redis.call('HDEL', KEYS[3], id)
  end
  redis.call('ZREM', KEYS[4], id)
end
"""

# Decimal strings of integers >= 0 without leading zeros compare by length, then text.
_GREATER = """
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
"""

RESERVE = (
    _EXPIRE
    + _GREATER
    + """
redis.call('INCRBY', KEYS[2], ARGV[3])
local used = redis.call('GET', KEYS[2])
if greater(used, ARGV[4]) then
  redis.call('DECRBY', KEYS[2], ARGV[3])
  return 0
end
redis.call('HSET', KEYS[3], ARGV[5], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[5])
return 1
"""
)

SETTLE = """
if redis.call('ZSCORE', KEYS[5], ARGV[1]) then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[4])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
local amount = redis.call('HGET', KEYS[3], ARGV[1])
if amount then
  redis.call('DECRBY', KEYS[2], amount)
  redis.call('HDEL', KEYS[3], ARGV[1])
end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('INCRBY', KEYS[2], ARGV[2])
return 1
"""

RELEASE = """
local amount = redis.call('HGET', KEYS[3], ARGV[1])
if amount then
  redis.call('DECRBY', KEYS[2], amount)
  redis.call('HDEL', KEYS[3], ARGV[1])
end
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
"""

RENEW = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
"""

TOTALS = (
    _EXPIRE
    + """
return {redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[2]) or '0'}
"""
)


class RedisLedger(Ledger):
    """A ledger on Redis under ``key``: ``url_or_client`` is a ``redis://`` URL or a
    ``redis.Redis`` client. Needs redis-py (``pip install 'budgetloop[redis]'``).

    One made from a URL pickles as what it points at (the URL, the key, the limit, the period,
    the lease and the clock): a copy in another process, on any machine, connects to the same
    server and shares its spend and reservations. One made from a client does not pickle (the
    client's connections belong to its process). Settles still pending in this object stay
    with it.
    """

    def __init__(
        self,
        url_or_client: Any,
        limit_usd: float,
        *,
        key: str,
        period: str | None = None,
        lease_seconds: float = DEFAULT_LEASE,
        clock: Clock = time.time,
    ) -> None:
        if not isinstance(key, str) or not key:
            raise TypeError(f"RedisLedger: key must be a non-empty str, got {key!r}.")
        self._configure("RedisLedger", limit_usd, period, lease_seconds, clock)
        self.key = key
        self._kind = self.period or "all"
        self._url = url_or_client if isinstance(url_or_client, str) else None
        if isinstance(url_or_client, str):
            try:
                import redis
            except ImportError:
                raise ImportError(
                    "RedisLedger: redis-py must be installed, got none; "
                    "pip install 'budgetloop[redis]'."
                ) from None
            self.client: Any = redis.Redis.from_url(url_or_client)
        elif callable(getattr(url_or_client, "register_script", None)):
            self.client = url_or_client
        else:
            raise TypeError(
                "RedisLedger: url_or_client must be a redis:// URL or a redis.Redis client, "
                f"got {type_name(url_or_client)}."
            )
        self._reserve = self.client.register_script(RESERVE)
        self._settle_script = self.client.register_script(SETTLE)
        self._release_script = self.client.register_script(RELEASE)
        self._renew_script = self.client.register_script(RENEW)
        self._totals_script = self.client.register_script(TOTALS)

    def __reduce__(self) -> tuple[Any, ...]:
        if self._url is None:
            raise TypeError(
                "RedisLedger: a ledger sent to other processes (pickled) must be made from a "
                "redis:// URL, got one made from a redis.Redis client, whose connections belong "
                "to this process; make it from a redis:// URL to send it to other processes."
            )
        options = {
            "key": self.key,
            "period": self.period,
            "lease_seconds": self.lease_seconds,
            "clock": self._clock,
        }
        return (_reopen, (self._url, self._limit, options))

    def _keys(self, period: int) -> list[str]:
        base = f"{{{self.key}}}:{self._kind}"
        names = ("spent", "used", "held", "lease", "settled")
        return [f"{base}:{name}:{period}" for name in names]

    def _try_reserve(self, ident: str, pico: int, period: int, now: float, expires: float) -> bool:
        args = [repr(now), repr(expires), str(pico), str(self._limit), ident]
        return bool(self._reserve(keys=self._keys(period), args=args))

    def _settle(self, reservation: Reservation, pico: int) -> None:
        now = self._now()
        args = [reservation.id, str(pico), repr(now), repr(now - SETTLED_KEPT)]
        self._settle_script(keys=self._keys(reservation.period), args=args)

    def _renew(self, reservation: Reservation, expires: float) -> bool:
        lease = self._keys(reservation.period)[3]
        return bool(self._renew_script(keys=[lease], args=[reservation.id, repr(expires)]))

    def _release(self, reservation: Reservation) -> None:
        self._release_script(keys=self._keys(reservation.period), args=[reservation.id])

    def _totals(self, now: float) -> tuple[int, int]:
        keys = self._keys(period_index(self.period, now))
        spent, used = self._totals_script(keys=keys, args=[repr(now)])
        spent, used = int(spent), int(used)
        return spent, used - spent


def _reopen(url: str, limit: int, options: dict[str, Any]) -> RedisLedger:
    """A ``RedisLedger`` unpickled: the same server and key, the same exact limit."""
    ledger = RedisLedger(url, from_pico(limit), **options)
    ledger._same_limit(limit)
    return ledger
