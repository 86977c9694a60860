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
import json
import math
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict, TypeVar, cast, get_args

from .._features._output import FINAL_ANSWER, FinalAnswer
from .._rules._budget import CountTokens
from .._schema._tool import Tool, tool
from .._tools._approval import Approve
from .._trace._files import check_trace_path
from .._trace._result import RECORDED_OPTIONS, RunOptions
from ..ledger import Ledger
from ._types import Budget, Message, Price
from ._valid import check_option_int, must, type_name

if TYPE_CHECKING:
    from .._trace._result import Step
    from ._session import Session

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
# The keywords a request passes to a model whose signature takes them (or ``**kwargs``).
REQUEST_KEYWORDS = frozenset({"max_output_tokens", "settings"})
Clock = Callable[[], float]
Redact = Callable[[str], str]
OnStep = Callable[["Session", "Step | None"], None]

MAX_RESULT_CHARS = 100_000


# -- reading one option -----------------------------------------------------------------------


@dataclass(slots=True)
class Reading:
    """One option being read: the entry point the caller called, the option's name, and the
    model callable (whose attributes some options default to). Made for each option of each
    run, so not frozen: a frozen dataclass sets each field with a call."""

    where: str
    name: str
    complete: Model

    def must(self, expected: str, got: str) -> str:
        """The options' grammar: ``where: name must be expected, got got.``"""
        return must(self.where, self.name, expected, got)


Check = Callable[[Any, Reading], Any]  # (value, reading) -> the value the run keeps
Across = Callable[[Mapping[str, Any], Reading], None]  # (every option read, reading)


def _kept(value: Any, reading: Reading) -> Any:
    return value


@dataclass(frozen=True)
class Option:
    """How one option is read: its ``default``, its ``check`` (returns the value the run
    keeps, or raises), and ``across``, a check against the other options once all are read."""

    default: Any = None
    check: Check = _kept
    across: Across | None = None


# -- the checks options are declared with ------------------------------------------------------


def instance(cls: type, expected: str) -> Check:
    """None, or an instance of ``cls`` (``expected`` says so in the error)."""

    def check(value: Any, reading: Reading) -> Any:
        if value is not None and not isinstance(value, cls):
            raise TypeError(reading.must(expected, type_name(value)))
        return value

    return check


def int_at_least(least: int) -> Check:
    """None, or an int (not a bool) at or above ``least``."""

    def check(value: Any, reading: Reading) -> Any:
        check_option_int(reading.where, reading.name, value, least=least, optional=True)
        return value

    return check


def _approve(value: Any, reading: Reading) -> Any:
    """None, a function, or ``"hold"``."""
    if value is None or callable(value) or (isinstance(value, str) and value == "hold"):
        return value
    got = repr(value) if isinstance(value, str) else type_name(value)
    raise TypeError(reading.must("a function, 'hold' or None", got))


def function(value: Any, reading: Reading) -> Any:
    """None, or something callable."""
    if value is not None and not callable(value):
        raise TypeError(reading.must("a function or None", type_name(value)))
    return value


def flag(value: Any, reading: Reading) -> Any:
    """True or False."""
    if not isinstance(value, bool):
        raise TypeError(reading.must("True or False", type_name(value)))
    return value


def or_from_model(check: Check) -> Check:
    """None is the model callable's attribute of the option's name (None without one); the
    value is then checked with ``check``."""

    def read(value: Any, reading: Reading) -> Any:
        if value is None:
            value = getattr(reading.complete, reading.name, None)
        return check(value, reading)

    return read


def _budget(value: Any, reading: Reading) -> Any:
    if value is not None and not isinstance(value, Budget):
        raise TypeError(reading.must("a Budget or None", type_name(value)))
    return value


def _cost_needs_price(values: Mapping[str, Any], reading: Reading) -> None:
    budget = values["budget"]
    if budget is not None and budget.max_cost_usd is not None:
        _needs(reading.where, values, "Budget(max_cost_usd=...), which projects each turn's")


def model_keywords(complete: Any) -> frozenset[str]:
    """The request's keywords (``REQUEST_KEYWORDS``) the model callable takes: each its
    signature names, every one with ``**kwargs``; none when no signature can be read."""
    try:
        parameters = inspect.signature(complete).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    named = set()
    for p in parameters:
        if p.kind is p.VAR_KEYWORD:
            return REQUEST_KEYWORDS
        if p.name in REQUEST_KEYWORDS and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            named.add(p.name)
    return frozenset(named)


def _output_bound(values: Mapping[str, Any], reading: Reading) -> None:
    """The figure a turn is projected at binds its request: a model that cannot be told it
    (no ``max_output_tokens`` keyword) but asks for its own figure must be run at that one."""
    complete, mot = reading.complete, values["max_output_tokens"]
    own = getattr(complete, "max_output_tokens", None)
    if own is None or own == mot or "max_output_tokens" in model_keywords(complete):
        return
    expected = (
        f"the model's own max_output_tokens={own!r}, since the model takes no "
        "max_output_tokens keyword and so asks for that many whatever the run projects"
    )
    raise ValueError(
        reading.must(expected, repr(mot))
        + f" Pass max_output_tokens={own!r}, or give the model a max_output_tokens keyword."
    )


def _least_output(values: Mapping[str, Any], reading: Reading) -> None:
    """``min_output_tokens`` fits a request only where the model can be asked for fewer
    tokens, below ``max_output_tokens``."""
    least, most = values["min_output_tokens"], values["max_output_tokens"]
    if least is None:
        return
    if "max_output_tokens" not in model_keywords(reading.complete):
        raise ValueError(
            reading.must("None for a model that takes no max_output_tokens keyword", repr(least))
            + " A turn is fitted by asking for fewer output tokens, which such a model cannot be"
            " asked (the adapters and ScriptedModel can)."
        )
    if most is None or least > most:
        expected = f"at most max_output_tokens ({'not set' if most is None else most})"
        raise ValueError(reading.must(expected, repr(least)))


def _settings(value: Any, reading: Reading) -> Any:
    """None (no settings), or a dict of JSON values by name, kept as a copy."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(reading.must("a dict or None", type_name(value)))
    for key in value:
        if not isinstance(key, str):
            raise TypeError(
                reading.must("a dict with str keys", f"a key that is {type_name(key)}")
            )
    try:
        return json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        expected = "a dict of JSON values (numbers, strings, lists, dicts), which the trace keeps"
        raise TypeError(reading.must(expected, repr(dict(value)))) from None


def _settings_taken(values: Mapping[str, Any], reading: Reading) -> None:
    """Settings go to a model that takes them, and that knows each key (an adapter says)."""
    settings = values["settings"]
    if not settings:
        return
    complete = reading.complete
    if "settings" not in model_keywords(complete):
        raise ValueError(
            reading.must("empty for a model that takes no settings keyword", ", ".join(settings))
            + " Give the model a settings keyword (the adapters and ScriptedModel take one)."
        )
    check = getattr(complete, "check_settings", None)
    if callable(check):
        check(settings, reading.where)


def _ledger(value: Any, reading: Reading) -> Any:
    if value is not None and not isinstance(value, Ledger):
        expected = "a Ledger (MemoryLedger, SqliteLedger, RedisLedger) or None"
        raise TypeError(reading.must(expected, type_name(value)))
    return value


def _ledger_needs_price(values: Mapping[str, Any], reading: Reading) -> None:
    if values["ledger"] is not None:
        _needs(reading.where, values, "ledger=..., which reserves each call's")


def _needs(where: str, values: Mapping[str, Any], given: str) -> None:
    """A price and a reply's most tokens, which ``given`` needs to know a call's worst case."""
    price, mot = values["price"], values["max_output_tokens"]
    needed = (("price", "a Price", price), ("max_output_tokens", "an int >= 1", mot))
    wrong = [(name, expected, value) for name, expected, value in needed if not value]
    if not wrong:
        return
    names, expected, got = (" and ".join(str(w[i]) for w in wrong) for i in range(3))
    expected += f" with {given} worst case before it is sent"
    them = "them here, or give the model callable those attributes"
    it = "it here, or give the model callable that attribute"
    if where == "replay":  # the model is the recording's own: only the call can give them
        them, it = "them to replay: the trace records none", "it to replay: the trace records none"
    by_name = (
        " A price by model name: price='gpt-4o-mini', from genai-prices"
        " (pip install 'budgetloop[prices]', with which the adapters price their model)."
        if price is None
        else ""
    )
    raise ValueError(
        must(where, names, expected, got) + f" Pass {them if wrong[1:] else it}.{by_name}"
    )


def _price(value: Any, reading: Reading) -> Any:
    """A Price; a model name, priced from genai-prices; None, the model callable's price."""
    if isinstance(value, str):
        return price_of_name(value, reading.where)
    return or_from_model(instance(Price, "a Price, a model name or None"))(value, reading)


def price_of_name(model: str, where: str) -> Price:
    """``price="gpt-4o"``: the model's price from genai-prices (``budgetloop[prices]``)."""
    from ..prices import price_of

    try:
        return price_of(model)
    except LookupError as exc:
        closest = ", ".join(getattr(exc, "closest", ())) or "none"
        expected = "a Price, or a model name genai-prices knows"
        raise ValueError(
            must(where, "price", expected, repr(model)) + f" The closest names: {closest}."
        ) from None
    except ImportError:
        expected = "a Price, or a model name with budgetloop[prices] installed"
        raise ValueError(
            must(where, "price", expected, repr(model))
            + " pip install 'budgetloop[prices]', or pass price=Price(...)."
        ) from None


def _clock(value: Any, reading: Reading) -> Any:
    if not callable(value):
        raise TypeError(reading.must("a function returning seconds", type_name(value)))
    now = value()
    where = reading.where
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise TypeError(must(where, "clock()", "a number of seconds", type_name(now)))
    if not math.isfinite(now):
        raise ValueError(must(where, "clock()", "a finite number of seconds", repr(now)))
    return value


def _trace_path(value: Any, reading: Reading) -> Any:
    if value is not None:
        check_trace_path(value, reading.where)
    return value


def _output(value: Any, reading: Reading) -> Any:
    """None, or the ``final_answer`` tool for the type ``value`` (or a trace's record of it)."""
    return None if value is None else FinalAnswer(value, reading.where)


def _output_name_free(values: Mapping[str, Any], reading: Reading) -> None:
    if values["output"] is not None and any(t.name == FINAL_ANSWER for t in values["tools"]):
        expected = f"free of the name {FINAL_ANSWER!r} with output= given"
        raise ValueError(
            must(reading.where, "tools", expected, f"a tool named {FINAL_ANSWER!r}")
            + " The model gives its answer by calling that tool; rename yours."
        )


def _tools(value: Any, reading: Reading) -> Any:
    """Functions of distinct names, each made a ``Tool`` (whose own definition, its hints and
    docstring, ``tool()`` checks, naming the tool and its parameter)."""
    return tuple(tool_table(value, reading.where).values())


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
            raise ValueError(_same_name(where, table[t.name], t))
        table[t.name] = t
    return table


def _same_name(where: str, first: Tool, second: Tool) -> str:
    """Two tools of one name: which they are, and how to tell them apart."""
    if first.server is None and second.server is None:
        got, how = f"two named {first.name!r}", "@tool(name=...)"
    else:
        got = f"two named {first.name!r}, " + " and ".join(
            "a function" if t.server is None else f"one of the MCP server {t.server!r}"
            for t in (first, second)
        )
        how = "connect(..., prefix=...)" + (
            "" if first.server and second.server else " or @tool(name=...)"
        )
    return (
        must(where, "tools", "functions of distinct names", got)
        + f" Pass {how} to tell them apart."
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
