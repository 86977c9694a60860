"""Reading one run option, and the checks options are declared with (``_options``): each
check returns the value the run keeps, or raises in the options' grammar, naming the entry
point the caller called."""

# Not ``from __future__ import annotations``: the checks are read at run time.

import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._features._output import FINAL_ANSWER, FinalAnswer
from .._schema._tool import Tool, tool
from .._trace._files import check_trace_path
from ..ledger import Ledger
from ._types import Budget, Message, Price
from ._valid import check_option_int, must, type_name

if TYPE_CHECKING:
    pass

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
# The keywords a request passes to a model whose signature takes them (or ``**kwargs``).
REQUEST_KEYWORDS = frozenset({"max_output_tokens", "settings"})


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


def _context(value: Any, reading: Reading) -> Any:
    """A context policy: ``Summarize``, or a callable ``policy(messages) -> list[Message]``."""
    from ..context import Summarize

    if value is not None and not isinstance(value, Summarize) and not callable(value):
        expected = "a context policy (policy(messages) -> list[Message], or Summarize) or None"
        raise TypeError(reading.must(expected, type_name(value)))
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
