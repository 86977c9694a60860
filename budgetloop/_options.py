"""``Options``: what ``start()`` was given, read and checked once, kept for ``fresh``/``fork``.

Configuration mistakes fail here, loudly, before anything is sent: a wrong type is a
``TypeError`` and a wrong value a ``ValueError``, each naming the option and what arrived.
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._budget import CountTokens
from ._files import check_trace_path
from ._schema import Tool, tool
from ._trace import RunOptions
from ._types import Budget, Message, Price
from ._valid import check_int, kind

if TYPE_CHECKING:
    from ._session import Session
    from ._trace import Step

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
Clock = Callable[[], float]
Redact = Callable[[str], str]
OnStep = Callable[["Session", "Step | None"], None]

MAX_RESULT_CHARS = 100_000


@dataclass(frozen=True)
class Options:
    """Every keyword option of ``start()``, checked; ``price`` and ``max_output_tokens`` are
    resolved from the model callable's attributes when not given."""

    tools: dict[str, Tool]
    budget: Budget
    price: Price | None
    max_output_tokens: int | None
    count_tokens: CountTokens | None
    system: str | None
    repeat_limit: int | None
    clock: Clock
    max_workers: int | None
    max_result_chars: int | None
    redact: Redact | None
    trace_path: str | os.PathLike[str] | None
    ledger: Any
    on_step: OnStep | None
    finish: bool
    cycle_limit: int | None
    warn_repeats: bool
    budget_note: bool
    given: dict[str, Any] = field(repr=False, compare=False)  # as passed, for ``with_``
    _schemas: list[dict[str, Any]] = field(init=False, repr=False, compare=False)

    @classmethod
    def read(
        cls,
        complete: Model,
        *,
        tools: Sequence[Callable[..., Any]] = (),
        budget: Budget | None = None,
        price: Price | None = None,
        max_output_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
        system: str | None = None,
        repeat_limit: int | None = 3,
        clock: Clock = time.monotonic,
        max_workers: int | None = None,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        redact: Redact | None = None,
        trace_path: str | os.PathLike[str] | None = None,
        ledger: Any = None,
        on_step: OnStep | None = None,
        finish: bool = False,
        cycle_limit: int | None = None,
        warn_repeats: bool = False,
        budget_note: bool = False,
    ) -> Options:
        given = {k: v for k, v in locals().items() if k not in ("cls", "complete")}
        if not callable(complete):
            raise TypeError(
                "run: complete must be a callable (messages, tools) -> Completion, "
                f"got {kind(complete)}."
            )
        budget = Budget() if budget is None else budget
        if not isinstance(budget, Budget):
            raise TypeError(f"run: budget must be a Budget, got {kind(budget)}.")
        price = getattr(complete, "price", None) if price is None else price
        if price is not None and not isinstance(price, Price):
            raise TypeError(f"run: price must be a Price, got {kind(price)}.")
        if max_output_tokens is None:
            max_output_tokens = getattr(complete, "max_output_tokens", None)
        for name, value, least in (
            ("max_output_tokens", max_output_tokens, 0),
            ("repeat_limit", repeat_limit, 2),
            ("cycle_limit", cycle_limit, 2),
            ("max_workers", max_workers, 1),
            ("max_result_chars", max_result_chars, 1),
        ):
            check_int(f"run: {name}", value, least=least, optional=True)
        _check_cost_ceiling(budget, price, max_output_tokens)
        _check_ledger(ledger, price, max_output_tokens)
        if system is not None and not isinstance(system, str):
            raise TypeError(f"run: system must be a str or None, got {kind(system)}.")
        for name, fn in (("count_tokens", count_tokens), ("redact", redact),
                         ("on_step", on_step)):  # fmt: skip
            if fn is not None and not callable(fn):
                raise TypeError(f"run: {name} must be a function or None, got {kind(fn)}.")
        for name, flag in (("finish", finish), ("warn_repeats", warn_repeats),
                           ("budget_note", budget_note)):  # fmt: skip
            if not isinstance(flag, bool):
                raise TypeError(f"run: {name} must be True or False, got {kind(flag)}.")
        _check_clock(clock)
        _check_trace_path(trace_path)
        return cls(
            tools=tool_table(tools),
            budget=budget,
            price=price,
            max_output_tokens=max_output_tokens,
            count_tokens=count_tokens,
            system=system,
            repeat_limit=repeat_limit,
            clock=clock,
            max_workers=max_workers,
            max_result_chars=max_result_chars,
            redact=redact,
            trace_path=trace_path,
            ledger=ledger,
            on_step=on_step,
            finish=finish,
            cycle_limit=cycle_limit,
            warn_repeats=warn_repeats,
            budget_note=budget_note,
            given=given,
        )

    def with_(self, complete: Model, changes: dict[str, Any]) -> Options:
        """These options with some changed, checked again (for ``fork``)."""
        unknown = sorted(set(changes) - set(self.given))
        if unknown:
            raise TypeError(
                f"fork: unknown option {unknown[0]!r}; the options are {', '.join(self.given)}."
            )
        return Options.read(complete, **{**self.given, **changes})

    @property
    def recorded(self) -> RunOptions:
        """The options a trace records (``Result.options``)."""
        return RunOptions(
            finish=self.finish,
            budget_note=self.budget_note,
            warn_repeats=self.warn_repeats,
            repeat_limit=self.repeat_limit,
            cycle_limit=self.cycle_limit,
            max_result_chars=self.max_result_chars,
        )

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools' schemas, as every request sends them (built once)."""
        return self._schemas

    def __post_init__(self) -> None:
        object.__setattr__(self, "_schemas", [t.schema for t in self.tools.values()])


def is_async(complete: Any) -> bool:
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
        getattr(complete, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    )


def tool_table(tools: Sequence[Callable[..., Any]]) -> dict[str, Tool]:
    if isinstance(tools, (str, bytes)) or not isinstance(tools, (list, tuple)):
        raise TypeError(f"run: tools must be a list of functions, got {kind(tools)}.")
    table: dict[str, Tool] = {}
    for fn in tools:
        t = tool(fn)
        if t.name in table:
            raise ValueError(
                f"run: two tools are named {t.name!r}; pass name=... to tell them apart."
            )
        table[t.name] = t
    return table


def initial_messages(prompt: Any, system: str | None) -> list[Message]:
    """The context a run starts from: the system message, then the prompt."""
    messages = [Message("system", system)] if system is not None else []
    if isinstance(prompt, str):
        return [*messages, Message("user", prompt)]
    if not isinstance(prompt, (list, tuple)):
        raise TypeError(f"run: prompt must be a str or a list of Message, got {kind(prompt)}.")
    for i, m in enumerate(prompt):
        if not isinstance(m, Message):
            raise TypeError(f"run: prompt[{i}] is {kind(m)}; pass a str or a list of Message.")
    return [*messages, *prompt]


def _check_cost_ceiling(budget: Budget, price: Price | None, mot: int | None) -> None:
    if budget.max_cost_usd is None:
        return
    if price is None or mot is None:
        missing = [n for n, v in (("price=Price(...)", price), ("max_output_tokens=...", mot))
                   if v is None]  # fmt: skip
        raise ValueError(
            f"run: Budget(max_cost_usd=...) needs {' and '.join(missing)} to project the next "
            "turn's cost before it is sent; pass them to run()/start(), or give the model "
            "callable those attributes."
        )
    if mot == 0:
        raise ValueError(
            "run: max_output_tokens=0 with Budget(max_cost_usd=...): a reply of no tokens "
            "cannot be projected as a worst case; pass the most tokens a reply may have."
        )


def _check_clock(clock: Any) -> None:
    if not callable(clock):
        raise TypeError(f"run: clock must be a function returning seconds, got {kind(clock)}.")
    now = clock()
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise TypeError(f"run: clock() must return a number of seconds, got {kind(now)}.")
    if not math.isfinite(now):
        raise ValueError(f"run: clock() must return a finite number of seconds, got {now!r}.")


def _check_trace_path(path: Any) -> None:
    if path is None:
        return
    try:
        check_trace_path(path)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"run: {exc}") from None


def _check_ledger(ledger: Any, price: Price | None, mot: int | None) -> None:
    if ledger is None:
        return
    if not callable(getattr(ledger, "_reserve_pico", None)):
        raise TypeError(
            "run: ledger must be a budgetloop.ledger ledger (MemoryLedger, SqliteLedger, "
            f"RedisLedger), got {kind(ledger)}."
        )
    if price is None or not mot:
        raise ValueError(
            "run: ledger=... reserves each call's worst case before it is sent, which needs "
            "price=Price(...) and max_output_tokens=... (or a model callable carrying them)."
        )
