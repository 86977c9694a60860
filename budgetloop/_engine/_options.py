"""The run options, declared once: each is one line that says its name, its type, its default
and its check, and every entry point, ``Options.read``, ``fork`` and ``resume`` go by them.

An option is declared in the group of the entry points that take it (``ReplayOptions`` for
every one; ``ToolsOption``, ``ClockOption`` and ``TracePathOption`` for those that take those)::

    repeat_limit: Annotated[int | None, Option(3, int_at_least(2))]

``Option(default, check, across=...)``: ``check(value, reading)`` returns the value the run
keeps, or raises in the options' grammar; ``across(values, reading)``, when given, checks it
against the other options once every option is read. The checks below (``instance``,
``int_at_least``, ``function``, ``flag``, ``or_from_model``) cover most options. To add an
option, write its line, and read it in the loop as ``options.values["name"]``: ``start``,
``run``, ``astart``, ``arun`` (whose signatures list every option with its default, made from
these lines), ``fork``, ``resume``, ``replay``, ``run_many`` and the unknown-name check take it
from there. A ``TypedDict`` types the ``**options`` of each entry point for editors and mypy.

Configuration mistakes fail here, loudly, before anything is sent: a wrong type is a
``TypeError`` and a wrong value a ``ValueError``, each in one grammar that names the entry point
the caller called, the option and what arrived: ``fork: budget must be a Budget or None, got
dict.``
"""

# Not ``from __future__ import annotations``: the declarations below are read at run time.

import inspect
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict, TypeVar, cast, get_args

from .._features._output import FINAL_ANSWER, FinalAnswer
from .._rules._budget import CountTokens
from .._schema._tool import Tool, tool
from .._tools._approval import Approve
from .._trace._result import RECORDED_OPTIONS, RunOptions
from ..context import Policy, Summarize
from ..events import Event
from ..ledger import Ledger
from ._types import Budget, Message, Price
from ._valid import must, type_name

if TYPE_CHECKING:
    from .._trace._result import Step
    from ._session import Session
from ._reading import (
    Model,
    Option,
    Reading,
    _approve,
    _budget,
    _clock,
    _context,
    _cost_needs_price,
    _least_output,
    _ledger,
    _ledger_needs_price,
    _output,
    _output_bound,
    _output_name_free,
    _price,
    _settings,
    _settings_taken,
    _tools,
    _trace_path,
    flag,
    function,
    instance,
    int_at_least,
    model_keywords,
    or_from_model,
)

Clock = Callable[[], float]
Redact = Callable[[str], str]
OnStep = Callable[["Session", "Step | None"], None]
OnEvent = Callable[[Event], Any]

MAX_RESULT_CHARS = 100_000


# -- the options, each declared once -----------------------------------------------------------


class ReplayOptions(TypedDict, total=False):
    """The options every entry point takes (``replay`` takes only these: it brings the model,
    the tools and the clock, the recorded ones, and writes no trace file)."""

    budget: Annotated[Budget | None, Option(None, _budget, across=_cost_needs_price)]
    """The run's ceilings; None is ``Budget()`` (ten steps)."""
    price: Annotated[Price | str | None, Option(None, _price)]
    """Dollars per million tokens, or a model name priced from genai-prices
    (``budgetloop.prices.price_of``); None is the model callable's ``price``, if it has one."""
    max_output_tokens: Annotated[
        int | None, Option(None, or_from_model(int_at_least(0)), across=_output_bound)
    ]
    """The most tokens a reply may be; None is the model callable's, if it has one. Each
    request asks for the figure its turn was projected at."""
    count_tokens: Annotated[CountTokens | None, Option(None, function)]
    """Counts a request's input tokens; None is the built-in estimate."""
    system: Annotated[str | None, Option(None, instance(str, "a str or None"))]
    """A system message put before the prompt."""
    repeat_limit: Annotated[int | None, Option(3, int_at_least(2))]
    """The same tool calls this many turns running stop the run (``repeated``)."""
    max_workers: Annotated[int | None, Option(None, int_at_least(1))]
    """Threads a batch's calls may run on at once; None: as many as the batch has calls."""
    max_result_chars: Annotated[int | None, Option(MAX_RESULT_CHARS, int_at_least(1))]
    """A tool result longer than this is cut for the model (the trace says so)."""
    redact: Annotated[Redact | None, Option(None, function)]
    """Applied to every text the trace, the journal and the spans keep."""
    ledger: Annotated[Ledger | None, Option(None, _ledger, across=_ledger_needs_price)]
    """A shared budget: each call's worst case is reserved in it before the call."""
    on_step: Annotated[OnStep | None, Option(None, function)]
    """Called as ``on_step(session, step)`` after every step."""
    on_event: Annotated[OnEvent | None, Option(None, function)]
    """Called as ``on_event(event)`` with each of the run's events (``budgetloop.events``), in
    order; an ``async def`` one is awaited under ``arun``. What it raises is kept in
    ``Result.event_errors`` and never stops the run. Each run calls it on the thread or task
    that drives it (``run_many``'s runs, each on its own thread, may call it at once)."""
    finish: Annotated[bool, Option(False, flag)]
    """The last call a ceiling allows is made without tools, for a final answer."""
    cycle_limit: Annotated[int | None, Option(None, int_at_least(2))]
    """A cycle of turns repeated this many times stops the run (``repeated``)."""
    warn_repeats: Annotated[bool, Option(False, flag)]
    """The first loop found is told to the model instead of stopping the run."""
    budget_note: Annotated[bool, Option(False, flag)]
    """Each request ends with a line saying what the budget has left."""
    approve: Annotated[Approve | Literal["hold"] | None, Option(None, _approve)]
    """Asked as ``approve(call)`` about each call held for a person (``needs_approval``);
    ``"hold"`` ends the run held instead (``Stop.HELD``), for ``resume`` to decide later."""
    output: Annotated[Any, Option(None, _output, across=_output_name_free)]
    """A type: the model answers by calling ``final_answer`` with a value of it
    (``Result.output``); a reply in text is asked again."""
    min_output_tokens: Annotated[int | None, Option(None, int_at_least(1), across=_least_output)]
    """A turn whose worst case does not fit what the budget has left asks for the most output
    tokens that fit, down to this; None: such a turn stops the run."""
    settings: Annotated[dict[str, Any] | None, Option(None, _settings, across=_settings_taken)]
    """The model's settings (``temperature``, ``top_p``, ``seed``, ``stop``, ``tool_choice``,
    ``parallel_tool_calls``; a provider's own under its name), sent with every request."""
    context: Annotated[Policy | Summarize | None, Option(None, _context)]
    """What of the context each request is sent (``budgetloop.context``): a policy's request
    is checked, projected and recorded; None sends the whole context."""


class ToolsOption(TypedDict, total=False):
    tools: Annotated[Sequence[Callable[..., Any]], Option((), _tools)]
    """The functions the model may call (each made a ``Tool``)."""


class ClockOption(TypedDict, total=False):
    clock: Annotated[Clock, Option(time.monotonic, _clock)]
    """A monotonic clock in seconds, for ``max_seconds`` and each step's time."""


class TracePathOption(TypedDict, total=False):
    trace_path: Annotated[str | os.PathLike[str] | None, Option(None, _trace_path)]
    """A JSON Lines file the run is written to as it goes."""


class ManyOptions(ReplayOptions, ToolsOption, ClockOption, total=False):
    """The options ``run_many`` passes to each run (each run's trace path is its own)."""


class ResumeOptions(ReplayOptions, ClockOption, TracePathOption, total=False):
    """The options ``resume`` takes besides ``tools``, ``at`` and ``messages``."""


class StartOptions(ResumeOptions, ToolsOption, total=False):
    """Every keyword option of ``start()``, ``run()``, ``astart()`` and ``arun()``."""


class ForkOptions(StartOptions, total=False):
    """What ``fork`` may change: any ``start()`` option, and ``complete`` for another model."""

    complete: Model


def _declared(options: type) -> dict[str, tuple[Any, Option]]:
    """Each option of a group by name: its type and how it is read, in declaration order."""
    out = {}
    for name, hint in options.__annotations__.items():
        kind, *meta = get_args(hint)
        out[name] = (kind, next(m for m in meta if isinstance(m, Option)))
    return out


OPTIONS = _declared(StartOptions)  # every option of start(), with its type and how it is read


def option_names(options: type) -> tuple[str, ...]:
    """The keys of one of the option ``TypedDict``s, in the order they are written."""
    return tuple(options.__annotations__)


F = TypeVar("F", bound=Callable[..., Any])
KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY


def takes_options(fn: F) -> F:
    """``fn``'s signature (what ``help()``, ``inspect`` and a notebook's tooltip show) with
    its ``**options`` written out: every option, keyword-only, with its type and default."""
    signature = inspect.signature(fn)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [
        inspect.Parameter(name, KEYWORD_ONLY, default=option.default, annotation=kind)
        for name, (kind, option) in OPTIONS.items()
    ]
    fn.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return fn


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


class Options:
    """Every option of a run, read and checked once (``read``), and kept for ``fresh`` and
    ``fork``: ``values`` has every option (its default when not given) as the run keeps it,
    ``given`` the options as they were passed."""

    __slots__ = ("budget", "given", "keywords", "output", "price", "schemas", "tools", "values")

    def __init__(
        self, values: StartOptions, given: Mapping[str, Any], keywords: frozenset[str]
    ) -> None:
        self.values = values
        self.keywords = keywords  # the request's keywords the model takes (model_keywords)
        self.given = dict(given)
        budget = values["budget"]
        self.budget: Budget = Budget() if budget is None else budget
        price = values["price"]  # a model name was read as its Price
        self.price: Price | None = price if isinstance(price, Price) else None
        self.tools: dict[str, Tool] = {t.name: t for t in map(tool, values["tools"])}
        self.output: FinalAnswer | None = values["output"]  # output=T: also in ``tools``
        if self.output is not None:
            self.tools[FINAL_ANSWER] = self.output
        self.schemas: list[dict[str, Any]] = [t.schema for t in self.tools.values()]

    @classmethod
    def read(cls, complete: Model, where: str, given: Mapping[str, Any]) -> "Options":
        """The options ``given`` (names of ``StartOptions``: the caller checks them), each
        read as it is declared, then checked against each other; an error names ``where``,
        the entry point the caller called."""
        if not callable(complete):
            expected = "a function (messages, tools) -> Completion"
            raise TypeError(must(where, "complete", expected, type_name(complete)))
        values: dict[str, Any] = {}
        for name, (_, option) in OPTIONS.items():
            value = given.get(name, option.default)
            values[name] = option.check(value, Reading(where, name, complete))
        for name, (_, option) in OPTIONS.items():
            if option.across is not None:
                option.across(values, Reading(where, name, complete))
        return cls(cast(StartOptions, values), given, model_keywords(complete))

    def with_(self, complete: Model, changes: Mapping[str, Any], where: str) -> "Options":
        """These options with some changed (``start()`` options, by name: the caller checks the
        names), checked again; an error names ``where`` (for ``fork``)."""
        return Options.read(complete, where, {**self.given, **changes})

    @property
    def recorded(self) -> RunOptions:
        """The options a trace records (``Result.options``)."""
        values = cast(Mapping[str, Any], self.values)
        recorded = {name: values[name] for name in RECORDED_OPTIONS if name not in _WHEN_SET}
        for name in _WHEN_SET[1:]:  # only when set: the traces of other runs are as they were
            if values[name]:
                recorded[name] = values[name]
        if self.output is not None:  # only then: the traces of other runs are as they were
            recorded["output"] = self.output.recorded
        return cast(RunOptions, recorded)


_WHEN_SET = ("output", "min_output_tokens", "settings")  # recorded only when set


def require_approver(where: str, options: Options) -> None:
    """A run that goes to its end by itself (``run``, ``arun``, ``run_many``) has someone to ask
    about each call held for a person: ``approve=``. Else a ValueError, before anything is
    sent, saying what to do instead."""
    if options.values["approve"] is not None:
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
