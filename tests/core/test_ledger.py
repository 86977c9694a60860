"""The ledgers, each kind through the same tests: reserve against the limit (equality fits),
settle and release, leases, periods, and errors for bad input. Redis runs on a real server."""

from __future__ import annotations

import math
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetloop._engine._types import to_pico
from budgetloop.ledger import (
    Ledger,
    LedgerError,
    MemoryLedger,
    RedisLedger,
    Reservation,
    SqliteLedger,
)
from tests.extras_support import printed_without
from tests.ledger_support import NO_REDIS, redis_server

KINDS = ["memory", "sqlite", "redis"]


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str | None]:
    with redis_server() as url:
        yield url


MakeLedger = Callable[..., Ledger]


@pytest.fixture(params=KINDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> MakeLedger:
    kind = request.param
    if kind == "redis":
        url = request.getfixturevalue("redis_url")
        if url is None:
            warnings.warn(NO_REDIS, stacklevel=1)
            pytest.skip(NO_REDIS)
        key = f"test-{uuid.uuid4().hex}"
        return lambda limit, **kw: RedisLedger(url, limit, key=key, **kw)
    if kind == "sqlite":
        path = tmp_path / "ledger.db"
        return lambda limit, **kw: SqliteLedger(path, limit, **kw)
    return lambda limit, **kw: MemoryLedger(limit, **kw)


def test_reserve_up_to_the_limit_and_equality_fits(make: MakeLedger) -> None:
    ledger = make(0.9)
    assert ledger.limit_usd == 0.9
    first = ledger.reserve(0.3)
    second = ledger.reserve(0.6)
    assert isinstance(first, Reservation)
    assert isinstance(second, Reservation)
    assert ledger.reserved_usd() == 0.9
    assert ledger.reserve(1e-12) is None  # one picodollar past the limit
    first.settle(0.3)
    second.settle(0.6)
    assert ledger.spent_usd() == 0.9
    assert ledger.reserved_usd() == 0.0
    assert ledger.reserve(0.0) is not None  # nothing more fits, but nothing fits


def test_decimal_amounts_add_up_exactly(make: MakeLedger) -> None:
    ledger = make(0.3)
    for usd in (0.1, 0.2):
        r = ledger.reserve(usd)
        assert r is not None
        r.settle(usd)
    assert ledger.spent_usd() == 0.3  # 0.1 + 0.2 in floats is 0.30000000000000004
    assert ledger.spent_pico() == to_pico(0.3)
    assert ledger.reserve(1e-12) is None


def test_settle_below_the_reservation_frees_the_rest(make: MakeLedger) -> None:
    ledger = make(1.0)
    r = ledger.reserve(0.8)
    assert r is not None
    assert ledger.reserve(0.5) is None
    r.settle(0.25)
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.25, 0.0)
    assert ledger.reserve(0.75) is not None
    assert ledger.reserve(1e-12) is None


def test_release_frees_without_spending_and_is_idempotent(make: MakeLedger) -> None:
    ledger = make(1.0)
    r = ledger.reserve(1.0)
    assert r is not None
    assert ledger.reserve(0.1) is None
    r.release()
    r.release()
    assert r.state == "released"
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0, 0.0)
    assert ledger.reserve(1.0) is not None


def test_settle_twice_is_an_error_and_release_after_settle_a_no_op(make: MakeLedger) -> None:
    ledger = make(1.0)
    r = ledger.reserve(0.5)
    assert r is not None
    r.settle(0.5)
    with pytest.raises(
        ValueError,
        match=rf"^Reservation\.settle: reservation {r.id} must be open, got one already settled\.$",
    ):
        r.settle(0.5)
    r.release()
    assert r.state == "settled"
    assert ledger.spent_usd() == 0.5


def test_settle_after_release_still_records_the_spend(make: MakeLedger) -> None:
    ledger = make(1.0)
    r = ledger.reserve(0.4)
    assert r is not None
    r.release()
    r.settle(0.3)
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.3, 0.0)


def test_pico_api_round_trips_no_float(make: MakeLedger) -> None:
    ledger = make(1.0)
    r = ledger._reserve_pico(10**12 - 1)
    assert r is not None
    assert r.pico == 10**12 - 1
    assert ledger._reserve_pico(2) is None
    assert ledger._reserve_pico(1) is not None
    r._settle_pico(123_456_789)
    assert ledger.spent_pico() == 123_456_789
    assert ledger.reserved_pico() == 1


def test_a_lease_counts_until_it_ends_then_is_released(make: MakeLedger) -> None:
    clock = Clock()
    ledger = make(1.0, lease_seconds=60, clock=clock)
    r = ledger.reserve(0.7)
    assert r is not None
    assert r.expires == clock.now + 60
    clock.now += 59.999
    assert ledger.reserved_usd() == 0.7
    assert ledger.reserve(0.5) is None
    clock.now += 0.001  # the lease's end
    assert ledger.reserved_usd() == 0.0
    late = ledger.reserve(0.5)
    assert late is not None
    r.settle(0.6)  # the call did finish after all: the money is still recorded
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.6, 0.5)
    assert ledger.reserve(1e-12) is None


def test_renew_moves_the_lease_end_while_the_store_still_holds_it(make: MakeLedger) -> None:
    clock = Clock()
    ledger = make(1.0, lease_seconds=60, clock=clock)
    r = ledger.reserve(0.7)
    assert r is not None
    clock.now += 50
    assert r.renew() is True
    assert r.expires == clock.now + 60
    clock.now += 59.999  # past the first lease's end, inside the renewed one
    assert ledger.reserved_usd() == 0.7
    assert ledger.reserve(0.5) is None
    clock.now += 0.001  # the renewed lease's end
    assert ledger.reserved_usd() == 0.0
    assert ledger.reserve(0.5) is not None  # the money went to another, so r's lease is over
    assert r.renew() is False
    assert (r.state, ledger.reserved_usd()) == ("held", 0.5)
    r.settle(0.6)  # its spend is still recorded
    assert r.renew() is False  # nothing left to renew
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.6, 0.5)


def test_renew_after_settle_or_release_holds_nothing_again(make: MakeLedger) -> None:
    ledger = make(1.0)
    settled, released = ledger.reserve(0.3), ledger.reserve(0.3)
    assert settled is not None
    assert released is not None
    settled.settle(0.2)
    released.release()
    assert (settled.renew(), released.renew()) == (False, False)
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.2, 0.0)


def test_a_period_starts_from_zero_and_settles_into_its_own_period(make: MakeLedger) -> None:
    day = 86400
    clock = Clock(19_000 * day + day - 1)  # one second before a UTC midnight
    ledger = make(1.0, period="day", clock=clock)
    spent = ledger.reserve(0.4)
    open_ = ledger.reserve(0.6)
    assert spent is not None
    assert open_ is not None
    spent.settle(0.4)
    assert ledger.reserve(0.1) is None
    clock.now += 1  # midnight
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0, 0.0)
    open_.settle(0.6)  # reserved yesterday: counted against yesterday
    assert ledger.spent_usd() == 0.0
    r = ledger.reserve(1.0)
    assert r is not None
    r.settle(1.0)
    clock.now -= 1
    assert ledger.spent_usd() == 1.0  # yesterday's 0.4 + 0.6


def test_hourly_periods_are_utc_hours(make: MakeLedger) -> None:
    clock = Clock(3600 * 500_000 + 3599.5)
    ledger = make(1.0, period="hour", clock=clock)
    r = ledger.reserve(1.0)
    assert r is not None
    r.settle(1.0)
    assert ledger.reserve(0.5) is None
    clock.now += 0.5
    assert ledger.reserve(0.5) is not None


def test_a_reservation_larger_than_the_limit_is_refused_not_an_error(make: MakeLedger) -> None:
    ledger = make(1.0)
    assert ledger.reserve(1e30) is None
    assert ledger._reserve_pico(10**40) is None


def test_a_zero_limit_refuses_everything_but_zero(make: MakeLedger) -> None:
    ledger = make(0)
    assert ledger.reserve(1e-12) is None
    assert ledger.reserve(0) is not None


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("1",), TypeError, "{name}: limit_usd must be a number of dollars, got str."),
        ((True,), TypeError, "{name}: limit_usd must be a number of dollars, got bool."),
        ((None,), TypeError, "{name}: limit_usd must be a number of dollars, got None."),
        ((math.nan,), ValueError, "{name}: limit_usd must be a finite number >= 0, got nan."),
        ((math.inf,), ValueError, "{name}: limit_usd must be a finite number >= 0, got inf."),
        ((-1.0,), ValueError, "{name}: limit_usd must be a finite number >= 0, got -1.0."),
        ((2e6,), ValueError, "{name}: limit_usd must be at most 1000000 dollars, got 2000000.0."),
    ],
)
def test_bad_limits(
    make: MakeLedger, args: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    name = type(make(1.0)).__name__
    with pytest.raises(error) as info:
        make(*args)
    assert str(info.value) == message.format(name=name)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"period": "week"},
            ValueError,
            "{name}: period must be 'hour', 'day' or None, got 'week'.",
        ),
        (
            {"period": "Day"},
            ValueError,
            "{name}: period must be 'hour', 'day' or None, got 'Day'.",
        ),
        ({"period": 86400}, TypeError, "{name}: period must be 'hour', 'day' or None, got int."),
        (
            {"lease_seconds": 0},
            ValueError,
            "{name}: lease_seconds must be a finite number > 0, got 0.",
        ),
        (
            {"lease_seconds": math.nan},
            ValueError,
            "{name}: lease_seconds must be a finite number > 0, got nan.",
        ),
        ({"lease_seconds": "60"}, TypeError, "{name}: lease_seconds must be a number, got str."),
        ({"clock": 5}, TypeError, "{name}: clock must be a callable returning seconds, got int."),
    ],
)
def test_bad_options(
    make: MakeLedger, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    name = type(make(1.0)).__name__
    with pytest.raises(error) as info:
        make(1.0, **options)
    assert str(info.value) == message.format(name=name)


@pytest.mark.parametrize(("now", "got"), [(math.nan, "nan"), ("12", "str"), (None, "None")])
def test_a_clock_that_returns_no_finite_seconds_is_named(
    make: MakeLedger, now: object, got: str
) -> None:
    name = type(make(1.0)).__name__
    with pytest.raises(TypeError) as info:
        make(1.0, clock=lambda: now).reserve(0.5)
    assert str(info.value) == (
        f"{name}: what clock returns must be a finite number of seconds, got {got}."
    )


def test_without_redis_py_the_import_error_names_the_extra() -> None:
    code = (
        "from budgetloop.ledger import RedisLedger\n"
        "try:\n    RedisLedger('redis://127.0.0.1:1/0', 1.0, key='k')\nexcept ImportError as e:\n"
        "    print(e)\n"
    )
    assert printed_without("redis", code) == (
        "RedisLedger: redis-py must be installed, got none; pip install 'budgetloop[redis]'."
    )


@pytest.mark.parametrize(
    ("usd", "error", "message"),
    [
        ("0.1", TypeError, "{name}.reserve: usd must be a number of dollars, got str."),
        (math.nan, ValueError, "{name}.reserve: usd must be a finite number >= 0, got nan."),
        (-0.5, ValueError, "{name}.reserve: usd must be a finite number >= 0, got -0.5."),
        (False, TypeError, "{name}.reserve: usd must be a number of dollars, got bool."),
    ],
)
def test_bad_reserve(make: MakeLedger, usd: Any, error: type[Exception], message: str) -> None:
    ledger = make(1.0)
    with pytest.raises(error) as info:
        ledger.reserve(usd)
    assert str(info.value) == message.format(name=type(ledger).__name__)
    assert ledger.reserved_usd() == 0.0


@pytest.mark.parametrize(
    ("usd", "error", "message"),
    [
        (
            None,
            TypeError,
            "Reservation.settle: actual_usd must be a number of dollars, got None.",
        ),
        (
            math.inf,
            ValueError,
            "Reservation.settle: actual_usd must be a finite number >= 0, got inf.",
        ),
        (
            -1e-12,
            ValueError,
            "Reservation.settle: actual_usd must be a finite number >= 0, got -1e-12.",
        ),
    ],
)
def test_bad_settle_leaves_the_reservation_held(
    make: MakeLedger, usd: Any, error: type[Exception], message: str
) -> None:
    ledger = make(1.0)
    r = ledger.reserve(0.5)
    assert r is not None
    with pytest.raises(error) as info:
        r.settle(usd)
    assert str(info.value) == message
    assert (r.state, ledger.reserved_usd(), ledger.spent_usd()) == ("held", 0.5, 0.0)
    r.settle(0.5)
    assert ledger.spent_usd() == 0.5


def test_a_cost_past_any_limit_is_recorded_not_refused(make: MakeLedger) -> None:
    # Money spent is never a reason to crash: $2M reported against a $1 ledger is recorded.
    ledger = make(1.0)
    r = ledger.reserve(0.5)
    assert r is not None
    r.settle(2e6)
    assert (r.state, ledger.spent_usd(), ledger.reserved_usd()) == ("settled", 2e6, 0.0)
    assert ledger.reserve(0.0) is None  # spent is past the limit: nothing more fits


def test_bad_pico_amounts(make: MakeLedger) -> None:
    ledger = make(1.0)
    name = type(ledger).__name__
    with pytest.raises(
        TypeError, match=rf"^{name}.reserve: pico must be an int of picodollars, got float.$"
    ):
        ledger._reserve_pico(1.0)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=rf"^{name}.reserve: pico must be picodollars >= 0, got -1.$"
    ):
        ledger._reserve_pico(-1)
    r = ledger._reserve_pico(5)
    assert r is not None
    with pytest.raises(
        TypeError, match=r"^Reservation.settle: pico must be an int of picodollars, got bool.$"
    ):
        r._settle_pico(True)


def test_sqlite_and_redis_constructor_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"^SqliteLedger: path must be a str or path, got int.$"):
        SqliteLedger(3, 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^RedisLedger: key must be a non-empty str, got ''.$"):
        RedisLedger("redis://127.0.0.1:1", 1.0, key="")
    with pytest.raises(
        TypeError,
        match=r"^RedisLedger: url_or_client must be a redis:// URL or a redis.Redis client, got dict.$",
    ):
        RedisLedger({}, 1.0, key="k")
    with pytest.raises(TypeError, match=r"^SqliteLedger: path must be a str or path, got None\.$"):
        SqliteLedger(None, 1.0)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError,
        match=r"^RedisLedger: url_or_client must be a redis:// URL or a redis\.Redis client, "
        r"got None\.$",
    ):
        RedisLedger(None, 1.0, key="k")


def test_sqlite_ledgers_on_one_file_share_the_budget(tmp_path: Path) -> None:
    a = SqliteLedger(tmp_path / "l.db", 1.0)
    b = SqliteLedger(str(tmp_path / "l.db"), 1.0)
    r = a.reserve(0.75)
    assert r is not None
    assert b.reserved_usd() == 0.75
    assert b.reserve(0.5) is None
    r.settle(0.5)
    assert b.spent_usd() == 0.5
    hourly = SqliteLedger(tmp_path / "l.db", 1.0, period="hour")
    assert hourly.spent_usd() == 0.0  # a period kind keeps its own spend


def test_redis_ledgers_on_one_key_share_the_budget(redis_url: str | None) -> None:
    if redis_url is None:
        warnings.warn(NO_REDIS, stacklevel=1)
        pytest.skip(NO_REDIS)
    import redis

    key = f"share-{uuid.uuid4().hex}"
    a = RedisLedger(redis_url, 1.0, key=key)
    b = RedisLedger(redis.Redis.from_url(redis_url), 1.0, key=key)
    other = RedisLedger(redis_url, 1.0, key=key + "-other")
    r = a.reserve(0.75)
    assert r is not None
    assert b.reserve(0.5) is None
    assert other.reserve(1.0) is not None
    r.settle(0.5)
    assert (b.spent_usd(), b.reserved_usd()) == (0.5, 0.0)
    assert sorted(k.decode() for k in b.client.keys(f"{{{key}}}:*")) == [
        f"{{{key}}}:all:settled:0",
        f"{{{key}}}:all:spent:0",
        f"{{{key}}}:all:used:0",
    ]


def test_redis_amounts_past_lua_doubles_stay_exact(redis_url: str | None) -> None:
    if redis_url is None:
        warnings.warn(NO_REDIS, stacklevel=1)
        pytest.skip(NO_REDIS)
    ledger = RedisLedger(redis_url, 1_000_000, key=f"big-{uuid.uuid4().hex}")
    limit = ledger.limit_pico  # 10**18, past 2**53
    r = ledger._reserve_pico(limit - 1)
    assert r is not None
    assert ledger._reserve_pico(2) is None
    assert ledger._reserve_pico(1) is not None
    r._settle_pico(limit - 1)
    assert ledger.spent_pico() == limit - 1
    assert ledger.reserved_pico() == 1


def test_repr_names_the_numbers() -> None:
    ledger = MemoryLedger(2.5, period="day")
    r = ledger.reserve(1.0)
    assert r is not None
    assert (
        repr(ledger)
        == "MemoryLedger(limit_usd=2.5, period='day', spent_usd=0.0, reserved_usd=1.0, pending_usd=0.0)"
    )
    assert repr(r) == f"Reservation(id={r.id!r}, usd=1.0, state='held')"


def test_sqlite_durability_is_the_synchronous_pragma(tmp_path: Path) -> None:
    durable = SqliteLedger(tmp_path / "a.db", 1.0)
    fast = SqliteLedger(tmp_path / "a.db", 1.0, durable=False)
    assert durable._connection().execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert fast._connection().execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert fast._connection().execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with pytest.raises(TypeError, match=r"^SqliteLedger: durable must be True or False, got 1.$"):
        SqliteLedger(tmp_path / "a.db", 1.0, durable=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^SqliteLedger: timeout must be seconds > 0, got nan.$"):
        SqliteLedger(tmp_path / "a.db", 1.0, timeout=math.nan)


def test_an_sqlite_file_another_process_holds_locked_is_busy_after_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    SqliteLedger(path, 1.0).close()
    holder = subprocess.Popen(  # another process takes the write lock and keeps it
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        began = time.monotonic()
        with pytest.raises(LedgerError) as info:
            SqliteLedger(path, 1.0, timeout=0.3)
        assert time.monotonic() - began >= 0.3  # it waited as its timeout says
        assert str(info.value) == (
            f"SqliteLedger: the file {str(path)!r} must be free within the timeout of 0.3 s, "
            "got another connection holding its lock all that time (OperationalError: "
            "database is locked); try again, or give a longer timeout."
        )
    finally:
        holder.kill()
        holder.wait()
    assert SqliteLedger(path, 1.0).spent_usd() == 0.0  # free again: the same path opens


HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""


def test_an_sqlite_path_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing" / "ledger.db"):
        with pytest.raises(ValueError, match=r"^SqliteLedger: path must be") as info:
            SqliteLedger(path, 1.0)
        assert str(info.value) == (
            f"SqliteLedger: path must be an SQLite file this process can write, got "
            f"{str(path)!r} (OperationalError: unable to open database file)."
        )
