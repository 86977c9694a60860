"""The entry points: ``start``/``run`` for a Session, ``astart``/``arun`` for an AsyncSession."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec

from ._async import AsyncSession
from ._session import Session
from ._trace import Result

P = ParamSpec("P")


def _sync_run(make: Callable[P, Session]) -> Callable[P, Result]:
    @functools.wraps(make)
    def run(*args: P.args, **kwargs: P.kwargs) -> Result:
        return make(*args, **kwargs).run()

    return run


def _async_run(make: Callable[P, AsyncSession]) -> Callable[P, Awaitable[Result]]:
    @functools.wraps(make)
    async def arun(*args: P.args, **kwargs: P.kwargs) -> Result:
        return await make(*args, **kwargs).run()

    return arun


start = Session
astart = AsyncSession
run = _sync_run(Session)
arun = _async_run(AsyncSession)

run.__name__ = run.__qualname__ = "run"
run.__doc__ = """Run the loop until the model answers or a ceiling stops it: ``start(...).run()``.

A stop is a ``Result`` whose ``stop`` names the reason; it never raises. Configuration mistakes
(a cost ceiling without a price, a tool without type hints) raise here, before any call.
"""
arun.__name__ = arun.__qualname__ = "arun"
arun.__doc__ = """``await arun(...)``: ``run`` for an async model and async tools."""
