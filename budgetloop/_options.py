"""``Options``: what ``start()`` was given, read and checked once, kept for ``fresh``/``fork``.

The options are written once, as the ``TypedDict``s below, which type the ``**options`` of
``fork``, ``resume``, ``replay`` and ``run_many``; ``Options.read`` takes the same names (a test
holds them, and ``start``/``run``/``astart``/``arun``, to one list).

Configuration mistakes fail here, loudly, before anything is sent: a wrong type is a
``TypeError`` and a wrong value a ``ValueError``, each in one grammar that names the entry point
the caller called, the option and what arrived: ``fork: budget must be a Budget or None, got
dict.``
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ._approval import Approve
from ._budget import CountTokens
from ._files import check_trace_path
from ._schema import Tool, tool
from ._trace import RunOptions
from ._types import Budget, Message, Price
from ._valid import check_option_int, must, type_name
from .ledger import Ledger

if TYPE_CHECKING:
    from ._session import Session
    from ._trace import Step

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
Clock = Callable[[], float]
Redact = Callable[[str], str]
OnStep = Callable[["Session", "Step | None"], None]

MAX_RESULT_CHARS = 100_000


class ReplayOptions(TypedDict, total=False):
    """The options ``replay`` takes: every ``start()`` option but the model, tools, clock and
    trace path, which the replay brings (the recorded ones) or has none of."""

    budget: Budget | None
    price: Price | None
    max_output_tokens: int | None
    count_tokens: CountTokens | None
    system: str | None
    repeat_limit: int | None
    max_workers: int | None
    max_result_chars: int | None
    redact: Redact | None
    ledger: Ledger | None
    on_step: OnStep | None
    finish: bool
    cycle_limit: int | None
    warn_repeats: bool
    budget_note: bool
    approve: Approve | None


class ManyOptions(ReplayOptions, total=False):
    """The options ``run_many`` passes to each run (each run's trace path is its own)."""

    tools: Sequence[Callable[..., Any]]
    clock: Clock


class ResumeOptions(ReplayOptions, total=False):
    """The options ``resume`` takes besides ``tools``, ``at`` and ``messages``."""

    clock: Clock
    trace_path: str | os.PathLike[str] | None


class StartOptions(ResumeOptions, total=False):
    """Every keyword option of ``start()``, ``run()``, ``astart()`` and ``arun()``."""

    tools: Sequence[Callable[..., Any]]


class ForkOptions(StartOptions, total=False):
    """What ``fork`` may change: any ``start()`` option, and ``complete`` for another model."""

    complete: Model


def option_names(options: type) -> tuple[str, ...]:
    """The keys of one of the option ``TypedDict``s, in the order they are written."""
    return tuple(options.__annotations__)


def check_names(
    where: str,
    given: Collection[str],
    names: Sequence[str],
    hints: Mapping[str, str] | None = None,
) -> None:
    """Every name in ``given`` is one of ``names``; else a TypeError in the options' grammar,
    with the hint for that name when there is one."""
    for name in given:
        if name not in names:
            hint = f" ({hints[name]})" if hints and name in hints else ""
            raise TypeError(
                must(where, "each option", f"one of {', '.join(names)}", f"{name!r}{hint}")
            )


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
    ledger: Ledger | None
    on_step: OnStep | None
    finish: bool
    cycle_limit: int | None
    warn_repeats: bool
    budget_note: bool
    approve: Approve | None
    given: dict[str, Any] = field(repr=False, compare=False)  # as passed, for ``with_``
    _schemas: list[dict[str, Any]] = field(init=False, repr=False, compare=False)

    @classmethod
    def read(
        cls,
        complete: Model,
        *,
        where: str,
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
        ledger: Ledger | None = None,
        on_step: OnStep | None = None,
        finish: bool = False,
        cycle_limit: int | None = None,
        warn_repeats: bool = False,
        budget_note: bool = False,
        approve: Approve | None = None,
    ) -> Options:
        """The options checked; an error names ``where``, the entry point the caller called."""
        given = {k: v for k, v in locals().items() if k not in ("cls", "complete", "where")}
        if not callable(complete):
            expected = "a function (messages, tools) -> Completion"
            raise TypeError(must(where, "complete", expected, type_name(complete)))
        budget = Budget() if budget is None else budget
        if not isinstance(budget, Budget):
            raise TypeError(must(where, "budget", "a Budget or None", type_name(budget)))
        price = getattr(complete, "price", None) if price is None else price
        if price is not None and not isinstance(price, Price):
            raise TypeError(must(where, "price", "a Price or None", type_name(price)))
        if max_output_tokens is None:
            max_output_tokens = getattr(complete, "max_output_tokens", None)
        for name, value, least in (
            ("max_output_tokens", max_output_tokens, 0),
            ("repeat_limit", repeat_limit, 2),
            ("cycle_limit", cycle_limit, 2),
            ("max_workers", max_workers, 1),
            ("max_result_chars", max_result_chars, 1),
        ):
            check_option_int(where, name, value, least=least, optional=True)
        _check_cost_ceiling(where, budget, price, max_output_tokens)
        _check_ledger(where, ledger, price, max_output_tokens)
        if system is not None and not isinstance(system, str):
            raise TypeError(must(where, "system", "a str or None", type_name(system)))
        for name, fn in (("count_tokens", count_tokens), ("redact", redact),
                         ("on_step", on_step), ("approve", approve)):  # fmt: skip
            if fn is not None and not callable(fn):
                raise TypeError(must(where, name, "a function or None", type_name(fn)))
        for name, flag in (("finish", finish), ("warn_repeats", warn_repeats),
                           ("budget_note", budget_note)):  # fmt: skip
            if not isinstance(flag, bool):
                raise TypeError(must(where, name, "True or False", type_name(flag)))
        _check_clock(where, clock)
        _check_trace_path(where, trace_path)
        return cls(
            tools=tool_table(tools, where),
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
            approve=approve,
            given=given,
        )

    def with_(self, complete: Model, changes: Mapping[str, Any], where: str) -> Options:
        """These options with some changed (``start()`` options, by name: the caller checks the
        names), checked again; an error names ``where`` (for ``fork``)."""
        return Options.read(complete, where=where, **{**self.given, **changes})

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


def require_approver(where: str, options: Options) -> None:
    """A run that goes to its end by itself (``run``, ``arun``, ``run_many``) has someone to ask
    about each call held for a person: ``approve=``. Else a ValueError, before anything is
    sent, saying what to do instead."""
    if options.approve is not None:
        return
    marked = [name for name, t in options.tools.items() if t.needs_approval is not False]
    if not marked:
        return
    expected = f"a function (call) -> decision, since {', '.join(marked)} needs approval"
    raise ValueError(
        must(where, "approve", expected, "None")
        + " Pass approve=..., or step the run with start() and decide each held call with "
        "session.approve(call_id) or session.deny(call_id, reason)."
    )


def is_async(complete: Any) -> bool:
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
        getattr(complete, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    )


def tool_table(tools: Sequence[Callable[..., Any]], where: str) -> dict[str, Tool]:
    """The tools by name. A tool's own definition (its hints, its docstring) is checked by
    ``tool()``, whose errors name the tool and its parameter."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, (list, tuple)):
        raise TypeError(must(where, "tools", "a list of functions", type_name(tools)))
    table: dict[str, Tool] = {}
    for i, fn in enumerate(tools):
        if not callable(fn):
            raise TypeError(must(where, f"tools[{i}]", "a function", type_name(fn)))
        t = tool(fn)
        if t.name in table:
            raise ValueError(
                must(where, "tools", "functions of distinct names", f"two named {t.name!r}")
                + " Pass @tool(name=...) to tell them apart."
            )
        table[t.name] = t
    return table


def initial_messages(prompt: Any, system: str | None, where: str) -> list[Message]:
    """The context a run starts from: the system message, then the prompt."""
    messages = [Message("system", system)] if system is not None else []
    if isinstance(prompt, str):
        return [*messages, Message("user", prompt)]
    return [*messages, *check_prompt(prompt, where, "prompt")]


def check_prompt(prompt: Any, where: str, name: str) -> list[Message]:
    """A prompt given as messages: a list of ``Message``."""
    if not isinstance(prompt, (list, tuple)):
        expected = "a str or a list of Message"
        raise TypeError(must(where, name, expected, type_name(prompt)))
    for i, m in enumerate(prompt):
        if not isinstance(m, Message):
            raise TypeError(must(where, f"{name}[{i}]", "a Message", type_name(m)))
    return list(prompt)


def _check_cost_ceiling(where: str, budget: Budget, price: Price | None, mot: int | None) -> None:
    if budget.max_cost_usd is not None:
        _needs(where, price, mot, "Budget(max_cost_usd=...), which projects each turn's")


def _needs(where: str, price: Price | None, mot: int | None, given: str) -> None:
    """A price and a reply's most tokens, which ``given`` needs to know a call's worst case."""
    needed = (("price", "a Price", price), ("max_output_tokens", "an int >= 1", mot))
    wrong = [(name, expected, value) for name, expected, value in needed if not value]
    if not wrong:
        return
    names, expected, got = (" and ".join(str(w[i]) for w in wrong) for i in range(3))
    expected += f" with {given} worst case before it is sent"
    them = "them here, or give the model callable those attributes"
    it = "it here, or give the model callable that attribute"
    raise ValueError(must(where, names, expected, got) + f" Pass {them if wrong[1:] else it}.")


def _check_clock(where: str, clock: Any) -> None:
    if not callable(clock):
        raise TypeError(must(where, "clock", "a function returning seconds", type_name(clock)))
    now = clock()
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise TypeError(must(where, "clock()", "a number of seconds", type_name(now)))
    if not math.isfinite(now):
        raise ValueError(must(where, "clock()", "a finite number of seconds", repr(now)))


def _check_trace_path(where: str, path: Any) -> None:
    if path is not None:
        check_trace_path(path, where)


def _check_ledger(where: str, ledger: Any, price: Price | None, mot: int | None) -> None:
    if ledger is None:
        return
    if not isinstance(ledger, Ledger):
        expected = "a Ledger (MemoryLedger, SqliteLedger, RedisLedger) or None"
        raise TypeError(must(where, "ledger", expected, type_name(ledger)))
    _needs(where, price, mot, "ledger=..., which reserves each call's")
