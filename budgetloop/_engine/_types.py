"""The data the loop passes around: messages, tool calls, completions, prices, budgets, stops."""

from __future__ import annotations

import enum
import json
import math
import sys
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from ._frozen import fast_init
from ._valid import check_int, check_number, type_name

ROLES = ("system", "user", "assistant", "tool")
_TEXT_OR_NONE = frozenset({str, type(None)})  # a message's texts, as the loop makes them

# Money is kept as whole picodollars so that sums and comparisons are exact:
# a ceiling of $0.585 and a spend of $0.585 are equal, not a rounding error apart.
PICO = 10**12


def to_pico(usd: float) -> int:
    """Dollars as written (the shortest decimal that round-trips the float) in picodollars."""
    return int((Decimal(repr(float(usd))) * PICO).to_integral_value())


def from_pico(pico: int) -> float:
    """Picodollars as dollars; a sum past a float's range (only absurd reported costs reach
    it) as the largest float, so money is still a number and JSON can still write it."""
    try:
        return pico / PICO
    except OverflowError:
        return sys.float_info.max if pico > 0 else -sys.float_info.max


def format_usd(value: float | None, *, column: bool = False) -> str:
    """Dollars as every view shows them: six decimal places at most, trailing zeros dropped
    and two kept, thousands separated; amounts under half a millionth of a dollar in
    scientific notation so they do not read as zero; None (a cost not known) as "unknown".
    With ``column=True`` (a table's column of amounts) every amount keeps all six places, so
    the column lines up on the decimal point."""
    if value is None:
        return "unknown"
    if not math.isfinite(value):
        return f"${value}"
    if value != 0 and abs(value) < 0.0000005:
        return f"${value:.1e}"
    if column:
        return f"${value:,.6f}"
    out = f"{value:,.6f}".rstrip("0")
    decimals = len(out.split(".")[1])
    return "$" + (out + "0" * (2 - decimals) if decimals < 2 else out)


class Stop(str, enum.Enum):
    """Why a run ended. Compares equal to its string value."""

    ANSWERED = "answered"
    MAX_STEPS = "max_steps"
    MAX_SECONDS = "max_seconds"
    MAX_COST_USD = "max_cost_usd"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_INPUT_TOKENS = "max_input_tokens"
    REPEATED = "repeated"
    MODEL_ERROR = "model_error"
    SHARED_BUDGET = "shared_budget"
    HELD = (
        "held"  # approve="hold": a batch waits for a person (Result.pending); resume() decides it
    )
    INTERRUPTED = "interrupted"  # session.interrupt(): a person cut the reply, or the run

    def __str__(self) -> str:
        return self.value


@fast_init
@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it: ``arguments`` is a JSON string or a dict."""

    name: str
    arguments: str | dict[str, Any] = "{}"
    id: str | None = None

    @property
    def arguments_text(self) -> str:
        """The arguments as one text: a string as the model sent it, a dict as JSON."""
        return arguments_text(self.arguments)


def arguments_text(arguments: object) -> str:
    """A tool call's arguments as one text: a string as it was sent, anything else as JSON
    (``repr`` for what JSON cannot hold: bytes, sets, tuple keys)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False, default=repr)
    except Exception:  # a cycle, an int past the digit limit, a repr that raises
        try:
            return repr(arguments)
        except Exception:
            return f"<{type(arguments).__name__} object>"


@fast_init
@dataclass(frozen=True)
class Message:
    """One entry of the conversation sent to the model."""

    role: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(
                f"Message: role must be one of {', '.join(ROLES)}, got {self.role!r}."
            )
        content, call_id, name = self.content, self.tool_call_id, self.name
        if not _TEXT_OR_NONE.issuperset((type(content), type(call_id), type(name))):
            for field_name, value in (("content", content), ("tool_call_id", call_id),
                                      ("name", name)):  # fmt: skip
                if value is not None and not isinstance(value, str):
                    raise TypeError(
                        f"Message: {field_name} must be str or None, got {type_name(value)}."
                    )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", _calls_tuple(self.tool_calls, "Message"))


@fast_init
@dataclass(frozen=True)
class Usage:
    """Tokens a model call consumed, as the provider reported them.

    ``input_tokens`` is the whole input, cache reads and cache writes included (as the
    OpenTelemetry GenAI conventions count it); ``cache_read_tokens`` and ``cache_write_tokens``
    say how much of it was read from or written to the provider's prompt cache.
    ``reasoning_tokens`` is the part of ``output_tokens`` a reasoning model spent thinking
    (OpenAI's reasoning tokens, Anthropic's thinking tokens); it is billed as output, as the
    providers bill it.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        ):
            check_int("Usage", name, getattr(self, name))
        cached = self.cache_read_tokens + self.cache_write_tokens
        if cached > self.input_tokens:
            raise ValueError(
                f"Usage: cache_read_tokens + cache_write_tokens must be at most input_tokens "
                f"({self.input_tokens}), got {cached}; input_tokens counts the whole input, "
                "cached tokens included."
            )
        if self.reasoning_tokens > self.output_tokens:
            raise ValueError(
                f"Usage: reasoning_tokens must be at most output_tokens ({self.output_tokens}), "
                f"got {self.reasoning_tokens}; output_tokens counts the whole output, "
                "reasoning included."
            )

    @property
    def uncached_input_tokens(self) -> int:
        """The input neither read from nor written to the cache."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


@fast_init
@dataclass(frozen=True)
class Completion:
    """What the model returned: text, tool calls, or both. No tool calls means an answer.

    ``model``, ``response_id`` and ``finish_reason`` are what the provider said about the
    reply (the adapters fill them): the model that served it, the completion's id, and why it
    stopped, in the OpenTelemetry GenAI conventions' words (``stop``, ``length``,
    ``content_filter``, ``tool_call``, ``error``) or the provider's own. They are kept in the
    trace and exported as ``gen_ai.response.*``.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    cost_usd: float | None = None
    model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", _calls_tuple(self.tool_calls, "Completion"))
        if self.text is not None and not isinstance(self.text, str):
            raise TypeError(f"Completion: text must be str or None, got {type_name(self.text)}.")
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise TypeError(
                f"Completion: usage must be Usage or None, got {type_name(self.usage)}."
            )
        check_number("Completion", "cost_usd", self.cost_usd, optional=True)
        for name in ("model", "response_id", "finish_reason"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Completion: {name} must be str or None, got {type_name(value)}.")


@fast_init
@dataclass(frozen=True)
class Chunk:
    """A piece of a streamed reply: a model may return an iterator of chunks (an async
    iterator under ``arun``) instead of a ``Completion``, and the loop puts the completion
    together from them.

    A chunk carries a piece of ``text``, or a piece of one tool call: its ``index`` in the
    reply, its ``id`` and ``name`` when known (the first piece of a call has them, usually),
    and a fragment of its ``arguments`` JSON. The last chunks carry the ``usage`` the provider
    reported for the whole reply (final: a usage sent at the start of a stream is not one) and
    the ``finish_reason``; ``model`` and ``response_id`` are what the provider said of it.
    """

    text: str = ""
    index: int | None = None
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    response_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("text", "arguments"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Chunk: {name} must be str, got {type_name(value)}.")
        index = self.index
        if index is not None and (type(index) is not int or index < 0):
            raise TypeError(f"Chunk: index must be an int >= 0 or None, got {index!r}.")
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise TypeError(f"Chunk: usage must be Usage or None, got {type_name(self.usage)}.")
        for name in ("id", "name", "finish_reason", "model", "response_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Chunk: {name} must be str or None, got {type_name(value)}.")
        if index is None and (self.id is not None or self.name is not None or self.arguments):
            raise ValueError(
                "Chunk: index must be the tool call's index when id, name or arguments are "
                "given, got None."
            )


class UnreadableReply(ValueError):
    """What a model raises when the provider answered, and billed the call, but the reply
    cannot be used: a response that failed or has not ended, an output item it does not read,
    a body not of the shape it knows. The adapters raise it; a model of your own can too.

    The run ends as a ``model_error`` with it (``result.error`` is
    ``"UnreadableReply: <message>"``), as for any exception a model raises, but the call is
    billed, into the run's cost, its step's and a shared ledger: at ``cost_usd`` when the
    provider reported one, else at ``usage`` (what it reported, as the adapters read it) at the
    run's price, else at its worst case, the projection reserved before it, as a reply with no
    usage is (the step then says "charged at the projection"). Any other exception is a call
    the provider refused (an SDK's HTTP error: no tokens billed) and costs nothing. A
    ``cost_usd`` that is not a finite number >= 0 is read as none, and so is a ``usage`` that
    is not a ``Usage``: the call is billed by the next rule, never at nothing.
    """

    def __init__(
        self, message: str, usage: Usage | None = None, *, cost_usd: float | None = None
    ) -> None:
        super().__init__(message)
        self.usage = usage
        self.cost_usd = cost_usd


def _calls_tuple(calls: Any, owner: str) -> tuple[ToolCall, ...]:
    if not isinstance(calls, (list, tuple)):
        raise TypeError(f"{owner}: tool_calls must be a list of ToolCall, got {type_name(calls)}.")
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise TypeError(f"{owner}: tool_calls[{i}] must be ToolCall, got {type_name(call)}.")
    return tuple(calls)


def _per_token(usd_per_mtok: float) -> int:
    """Picodollars per token: dollars per million tokens x 10**6, rounded up."""
    return -(-to_pico(usd_per_mtok) // 10**6)


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: input, output, and input read from or written to a cache.

    A cache price left as None is the input price. ``tiers`` maps an input size to the price of
    a request whose whole input (cached tokens included) is above it, as providers bill long
    contexts: ``Price(3.0, 15.0, tiers={200_000: Price(6.0, 22.5)})`` bills a request of
    200,001 input tokens at $6 / $22.50 for all of its tokens. A tier has no tiers of its own.
    ``source`` says where the rates came from, for a reader of the trace
    (``budgetloop.prices.price_of`` sets it: ``"genai-prices 0.2.3: openai gpt-4o-mini"``); it
    is no part of the price's value, so two prices of the same rates are equal whatever their
    sources.
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    tiers: dict[int, Price] | None = field(default=None, hash=False)
    source: str | None = field(default=None, compare=False)
    _in: int = field(init=False, repr=False, compare=False)
    _out: int = field(init=False, repr=False, compare=False)
    _read: int = field(init=False, repr=False, compare=False)
    _write: int = field(init=False, repr=False, compare=False)
    _dearest: int = field(init=False, repr=False, compare=False)  # of input, read and write
    # (above, price) from the highest threshold down, for the tier lookup
    _tiers: tuple[tuple[int, Price], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            check_number("Price", name, getattr(self, name))
        for name in ("cache_read_per_mtok", "cache_write_per_mtok"):
            check_number("Price", name, getattr(self, name), optional=True)
        rate = _per_token(self.input_per_mtok)
        read, write = self.cache_read_per_mtok, self.cache_write_per_mtok
        object.__setattr__(self, "_in", rate)
        object.__setattr__(self, "_out", _per_token(self.output_per_mtok))
        object.__setattr__(self, "_read", rate if read is None else _per_token(read))
        object.__setattr__(self, "_write", rate if write is None else _per_token(write))
        object.__setattr__(self, "_dearest", max(self._in, self._read, self._write))
        if self.source is not None and not isinstance(self.source, str):
            raise TypeError(f"Price: source must be a str or None, got {type_name(self.source)}.")
        tiers = _check_tiers(self.tiers)
        # a copy of its own, in threshold order, so the caller's dict cannot change the price
        object.__setattr__(self, "tiers", None if tiers is None else dict(tiers))
        object.__setattr__(self, "_tiers", tuple(reversed(tiers or ())))

    def at(self, input_tokens: int) -> Price:
        """The price a request with this whole input is billed at: the tier of the highest
        threshold it is above, else this price itself."""
        for above, tier in self._tiers:
            if input_tokens > above:
                return tier
        return self

    def tier_above(self, input_tokens: int) -> int | None:
        """The threshold of the tier a request with this whole input is billed at, or None
        when it is billed at the base price."""
        for above, _ in self._tiers:
            if input_tokens > above:
                return above
        return None

    def pico(self, input_tokens: int, output_tokens: int) -> int:
        """Exact cost in picodollars of uncached input and output, at the input's tier."""
        p = self.at(input_tokens) if self._tiers else self
        return input_tokens * p._in + output_tokens * p._out

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Cost in dollars of a call with these token counts, none of the input cached."""
        return from_pico(self.pico(input_tokens, output_tokens))

    def worst_pico(self, input_tokens: int, output_tokens: int) -> int:
        """The most a call with at most these counts can cost: each input token at the dearest
        of the input, cache-read and cache-write prices (which tokens a provider caches is not
        known before the call), at the dearest of the tiers such a call can fall in (its own
        tier, for tiers that cost more as the input grows)."""
        worst = _flat_worst(self, input_tokens, output_tokens)
        for above, tier in self._tiers:
            if input_tokens > above:
                worst = max(worst, _flat_worst(tier, input_tokens, output_tokens))
        return worst

    def usage_pico(self, usage: Usage) -> int:
        """Exact cost in picodollars of a reported usage, each kind of token at its price, at
        the tier of its whole input."""
        p = self.at(usage.input_tokens) if self._tiers else self
        return (
            usage.uncached_input_tokens * p._in
            + usage.cache_read_tokens * p._read
            + usage.cache_write_tokens * p._write
            + usage.output_tokens * p._out
        )

    def usage_cost(self, usage: Usage) -> float:
        """Cost in dollars of a reported usage."""
        return from_pico(self.usage_pico(usage))

    def describe(self) -> str:
        """Which price this is, as every view says it: its ``source`` when it has one
        (``genai-prices 0.2.3: openai gpt-4o-mini``), else the rates as given."""
        if self.source is not None:
            return self.source
        tiers = " (tiered)" if self.tiers else ""
        return (
            f"given: ${_rate(self.input_per_mtok)} in / ${_rate(self.output_per_mtok)} out "
            f"a million tokens{tiers}"
        )


def _rate(usd: float) -> str:
    return f"{usd:,.6f}".rstrip("0").rstrip(".")


def _flat_worst(price: Price, input_tokens: int, output_tokens: int) -> int:
    return input_tokens * price._dearest + output_tokens * price._out


def _check_tiers(tiers: Any) -> list[tuple[int, Price]] | None:
    """A price's tiers in threshold order, each checked."""
    if tiers is None:
        return None
    if not isinstance(tiers, dict):
        raise TypeError(
            f"Price: tiers must be a dict of int to Price or None, got {type_name(tiers)}."
        )
    for above, tier in tiers.items():
        check_int("Price", "tiers", above)
        if not isinstance(tier, Price):
            raise TypeError(f"Price: tiers[{above}] must be a Price, got {type_name(tier)}.")
        if tier.tiers:
            raise ValueError(f"Price: tiers[{above}] must be a Price without tiers, got tiers.")
    return sorted(tiers.items())


@dataclass(frozen=True)
class Budget:
    """Ceilings for one run, each a field (``_ceilings`` owns what each one checks and says).
    A step is one model call; ``max_input_tokens`` caps each request's input tokens as counted
    before it is sent. Only ``max_steps`` has a default."""

    max_steps: int | None = 10
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    max_tool_calls: int | None = None
    max_input_tokens: int | None = None
    limit_pico: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, counted in _CEILING_FIELDS:
            check = check_int if counted else check_number
            check("Budget", name, getattr(self, name), optional=True)
        limit = None if self.max_cost_usd is None else to_pico(self.max_cost_usd)
        object.__setattr__(self, "limit_pico", limit)


# Each ceiling field, and whether it counts (an int) or measures (a number): by its type.
_CEILING_FIELDS = tuple((f.name, f.type == "int | None") for f in fields(Budget) if f.init)
