"""Budgets: counting the next request, projecting its worst-case cost, the arithmetic of ceilings.

The default token count is an estimate (see ``estimate_text``) plus a fixed overhead per message
and per tool call. On ordinary text it sits above what OpenAI's tokenizers count: about twice the
true count on English prose, a little less on code, 1.3 times on JSON full of numbers. On dense
text it falls below, down to a third of the true count (``"zqk" * 3000``); docs/estimates.md has
the figures, from benchmarks/estimate_table.py. ``strict_tokens`` never counts below a byte-level
BPE tokenizer, at about four times the true count on prose. Pass ``count_tokens=`` for either,
or for an exact counter (``budgetloop.adapters.tiktoken_counter``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._engine._frozen import fast_init
from .._engine._types import Budget, Message, Price, arguments_text, format_usd, from_pico, to_pico

CountTokens = Callable[[Sequence[Message], Sequence[dict[str, Any]]], int]

MESSAGE_OVERHEAD = 4  # role and separators, per message
CALL_OVERHEAD = 4  # per tool call inside an assistant message
REQUEST_OVERHEAD = 3  # priming of the reply

# Each ASCII character as its class: a lowercase letter, 0 digit, space, and . for the rest
# (capitals and other visible characters, each a token whatever follows it).
_CLASS = str.maketrans(
    {chr(i): "a" if chr(i).islower() else "0" if chr(i).isdigit() else " " if i == 32
     else "." for i in range(128)}
)  # fmt: skip
_SPACE_RUNS = re.compile(" {2,}")


def estimate_text(text: str) -> int:
    """An estimated token count for one piece of text: above a tokenizer's on ordinary text,
    never below a third of it on text without spaces.

    Runs of lowercase letters and runs of digits count a token per three characters (a run's
    remainder rounded up), each capital and each other visible character a token, a space before
    a digit a token, a run of spaces a token per sixteen, and text outside ASCII a token per byte.
    Computed with a few string methods rather than a regex: this runs on every message appended.
    """
    if not text:
        return 0
    extra = 0
    if not text.isascii():
        extra = len(text.encode("utf-8", "surrogatepass")) - len(text)
        text = text.encode("ascii", "replace").decode("ascii")
    mapped = text.translate(_CLASS)
    size, others, spaces = len(mapped), mapped.count("."), mapped.count(" ")
    count = others + extra
    runs = size - others - spaces  # characters in runs of letters or of digits
    if runs:
        # Each run of n is n // 3 triples and a remainder of 0, 1 or 2: a token each. Taking
        # the triples out (as "|", so two runs never join) leaves each remainder of 2 as a pair.
        cut = mapped.replace("aaa", "|")
        pairs = cut.count("aa")
        if "0" in mapped:
            cut = cut.replace("000", "|")
            pairs += cut.count("00")
            if spaces:
                count += mapped.count(" 0")
        triples = (size - len(cut)) // 2
        count += runs - 2 * triples - pairs  # triples + pairs + the single characters left
    if spaces > 1 and "  " in mapped:
        count += sum((len(run) + 15) // 16 for run in _SPACE_RUNS.findall(mapped))
    return count


def estimate_message(message: Message) -> int:
    """The estimated tokens one message adds to a request."""
    # One pass over the parts joined by a space (which the count treats as free).
    parts: list[Any] = [message.content, message.tool_call_id, message.name]
    calls = message.tool_calls
    for call in calls:
        arguments = call.arguments
        text = arguments if type(arguments) is str else arguments_text(arguments)
        parts += (call.name, text, call.id)
    try:
        text = " ".join(filter(None, parts))
    except TypeError:  # a malformed value where text goes: counted as its text
        text = " ".join(_str(p) for p in parts if p)
    return MESSAGE_OVERHEAD + CALL_OVERHEAD * len(calls) + estimate_text(text)


def _texts(message: Message) -> list[str]:
    """Every text of a message that goes into a request (role aside), as text even when a
    malformed value (a name that is not a str, arguments that are bytes) sits where text goes."""
    parts: list[Any] = [message.content, message.tool_call_id, message.name]
    for call in message.tool_calls:
        parts += (call.name, call.arguments_text, call.id)
    return [p if type(p) is str else _str(p) for p in parts]


def _str(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def estimate_tools(tools: Sequence[dict[str, Any]]) -> int:
    """The estimated tokens the tool schemas add to every request."""
    if not tools:
        return 0
    return estimate_text(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")))


def estimate_tokens(messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
    """The default ``count_tokens``: an estimate of a request's input tokens."""
    return REQUEST_OVERHEAD + estimate_tools(tools) + sum(estimate_message(m) for m in messages)


# strict_tokens: a UTF-8 byte is the most a token of a byte-level BPE can be worth, so counting
# bytes where a tokenizer counts tokens can only count more. The frame around the texts is
# OpenAI's documented chat format (what ``adapters.tiktoken_counter`` counts).
STRICT_PER_MESSAGE = 3  # <|start|>, <|message|>, <|end|> around role and content
STRICT_PER_NAME = 1
STRICT_PER_CALL = 3  # the separators of one tool call
STRICT_FOR_TOOLS = 12  # the frame around the tool definitions
STRICT_PER_REQUEST = 3  # the priming of the reply


def strict_tokens(messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
    """A request's input tokens counted so that no byte-level BPE tokenizer counts more: the
    UTF-8 bytes of every text in it (roles, contents, names, ids, each tool call's name and
    arguments, the JSON of each tool schema), plus the chat format's fixed tokens per message,
    per name, per tool call, for the tool definitions and for the reply.

    Pass it as ``count_tokens=strict_tokens`` when the cost ceiling must hold with no provider
    tokenizer installed, whatever the tools return. It counts English prose at about four times
    its true count (docs/estimates.md has the measured figures); a provider's hidden text (such
    as the system prompt a provider adds for tool use) is not in the request and not counted.
    """
    count = STRICT_PER_REQUEST
    if tools:
        count += STRICT_FOR_TOOLS + sum(_bytes(_schema_json(t)) for t in tools)
    for message in messages:
        count += STRICT_PER_MESSAGE + _bytes(_str(message.role))
        count += STRICT_PER_CALL * len(message.tool_calls)
        if message.name:
            count += STRICT_PER_NAME
        count += sum(_bytes(p) for p in _texts(message))
    return count


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _schema_json(schema: object) -> str:
    # Compact JSON, the form ``adapters.tiktoken_counter`` counts.
    try:
        return json.dumps(schema, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(schema)


@fast_init
@dataclass(frozen=True)
class Projection:
    """The worst-case cost of the next turn, computed before it is dispatched.

    ``cost_usd`` is None when no price is known; ``fits`` says whether spent plus projected
    stays within ``limit_usd`` (equality fits; no limit always fits). ``tier`` is the threshold
    of the long-context tier the turn is priced at (``Price(tiers=...)``): its input is above
    that many tokens, so every token is at the tier's rates; None at the base rates.
    """

    input_tokens: int
    output_tokens: int | None
    cost_usd: float | None
    spent_usd: float
    limit_usd: float | None
    fits: bool
    tier: int | None = None
    fitted_from: int | None = None

    @property
    def tier_note(self) -> str | None:
        """The tier in words, as the meters say it; None at the base rates."""
        if self.tier is None:
            return None
        return (
            f"long context: {self.input_tokens:,} input tokens is above {self.tier:,}, so the "
            "turn is priced at the higher tier's rates, for every token"
        )

    @property
    def tokens_text(self) -> str:
        """The tokens projected, as every view and stop says them: ``1,234 in + 500 out
        tokens``. With no ``max_output_tokens`` the reply's output is not counted: ``0 out``, as
        the cost is projected (``assumed_text`` says why)."""
        return f"{self.input_tokens:,} in + {self.output_tokens or 0:,} out tokens"

    @property
    def assumed_text(self) -> str:
        """The output tokens the projection assumes, and where from."""
        if self.output_tokens is None:
            return "0 output tokens assumed: no max_output_tokens is set"
        n = self.output_tokens
        if self.fitted_from is not None:
            return f"{n:,} output token{'' if n == 1 else 's'} assumed: {self.fitted_text}"
        return f"{n:,} output token{'' if n == 1 else 's'} assumed: max_output_tokens"

    @property
    def fitted_text(self) -> str | None:
        """A turn fitted to what the budget had left, in words, as every view says it:
        ``asked for 312 of 1,000 output tokens: what the budget had left``; None otherwise."""
        if self.fitted_from is None:
            return None
        return (
            f"asked for {self.output_tokens or 0:,} of {self.fitted_from:,} output tokens: "
            "what the budget had left"
        )

    @property
    def total_usd(self) -> float | None:
        """Spent plus projected: what the run will have cost if the next turn is worst-case."""
        return None if self.cost_usd is None else self.spent_usd + self.cost_usd

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}  # all scalars
        for optional in _OPTIONAL:  # older readers: each key only when it applies
            if out[optional] is None:
                del out[optional]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Projection:
        given = {k: data[k] for k in cls.__dataclass_fields__ if k not in _OPTIONAL}
        return cls(**given, tier=data.get("tier"), fitted_from=data.get("fitted_from"))


_OPTIONAL = ("tier", "fitted_from")  # a Projection's keys written only when not None


def project(
    input_tokens: int,
    max_output_tokens: int | None,
    price: Price | None,
    spent_pico: int,
    budget: Budget,
    least: int | None = None,
    room: int | None = None,
) -> tuple[Projection, int | None]:
    """The projection, and its cost in picodollars (None without a price). With ``least``
    (``min_output_tokens``), a turn whose worst case does not fit the cost ceiling, or
    ``room`` picodollars (a shared ledger's remainder), is fitted: projected at the most
    output tokens that fit, down to ``least`` (``fit_output``); below it, it stays as it was,
    and does not fit."""
    pico = worst_pico(input_tokens, max_output_tokens, price)
    fitted_from = None
    if least is not None and max_output_tokens is not None and price is not None:
        ceiling = budget.limit_pico
        left = None if ceiling is None else ceiling - spent_pico
        if room is not None:
            left = room if left is None else min(left, room)
        if left is not None and (pico is None or pico > left):
            fitted = fit_output(input_tokens, price, left, least, max_output_tokens)
            if fitted is not None:
                fitted_from, max_output_tokens = max_output_tokens, fitted
                pico = price.worst_pico(input_tokens, fitted)  # (fitted: a price is known)
    tier = price.tier_above(input_tokens) if price is not None and price.tiers else None
    limit = budget.max_cost_usd
    return (
        # By position, in the fields' order: in a loop's turn, matching keywords to a record's
        # fields cost more than making it (benchmarks/instructions.py).
        Projection(
            input_tokens,
            max_output_tokens,  # output_tokens
            None if pico is None else from_pico(pico),  # cost_usd
            from_pico(spent_pico),  # spent_usd
            limit,  # limit_usd
            cost_fits(budget, spent_pico, pico),  # fits
            tier,
            fitted_from,
        ),
        pico,
    )


def fit_output(input_tokens: int, price: Price, room: int, least: int, most: int) -> int | None:
    """The most output tokens, from ``least`` to ``most``, whose worst case with
    ``input_tokens`` costs at most ``room`` picodollars; None when not even ``least`` does.
    (A call's worst case grows with its output tokens, so the answer is found by halving.)"""
    if price.worst_pico(input_tokens, least) > room:
        return None
    low, high = least, most  # ``low`` fits; the answer is at most ``high``
    while low < high:
        middle = (low + high + 1) // 2
        if price.worst_pico(input_tokens, middle) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def worst_pico(
    input_tokens: int, max_output_tokens: int | None, price: Price | None
) -> int | None:
    """The most a call of ``input_tokens`` can cost, in picodollars (None without a price)."""
    return None if price is None else price.worst_pico(input_tokens, max_output_tokens or 0)


def cost_fits(budget: Budget, spent_pico: int, projected_pico: int | None) -> bool:
    """The cost guard: spent plus projected at or below the ceiling, compared exactly."""
    limit = budget.limit_pico
    if limit is None:
        return True
    return projected_pico is not None and spent_pico + projected_pico <= limit


def _turns_pico(
    start_tokens: int,
    tokens_per_turn: int,
    max_output_tokens: int,
    price: Price,
    context: object,
) -> Iterator[int]:
    """Each turn's worst case in picodollars, from the first on, with ``context``'s summaries
    counted in the turn they are made for (see ``worst_case_cost``)."""
    from ..context import SUMMARY_PREFIX, DropToolResults, KeepLast, Summarize

    if context is not None and not isinstance(context, (KeepLast, DropToolResults, Summarize)):
        raise TypeError(
            "worst_case_cost: context must be KeepLast, DropToolResults, Summarize or None, "
            f"got {type(context).__name__}."
        )
    frame = MESSAGE_OVERHEAD + estimate_text(SUMMARY_PREFIX)  # a summary's message, less its text
    held = 0  # the turns the request holds, after the start (and a summary)
    summary = 0  # the tokens a summary stands as in the request (0: none yet)
    while True:
        extra = 0
        if isinstance(context, KeepLast):
            held = min(held, context.turns)
        tokens = start_tokens + summary + tokens_per_turn * held
        over = isinstance(context, Summarize) and tokens > context.when_input_tokens_over
        if over and isinstance(context, Summarize) and held > context.keep_last:
            most = context.max_output_tokens
            extra = context.price.pico(tokens, most)  # at most the whole request read
            summary, held = most + frame, context.keep_last
            tokens = start_tokens + summary + tokens_per_turn * held
        yield price.pico(tokens, max_output_tokens) + extra
        held += 1


def worst_case_cost(
    turns: int,
    *,
    start_tokens: int,
    tokens_per_turn: int,
    max_output_tokens: int,
    price: Price,
    context: object = None,
) -> float:
    """The cost of ``turns`` turns whose context starts at ``start_tokens`` and grows by
    ``tokens_per_turn`` each turn, every turn spending ``max_output_tokens``.

    Input on turn n is ``start + per_turn x (n - 1)``, so the total is quadratic in ``turns``;
    with a tiered price each turn is billed at the tier of its own input.

    ``context=`` a built-in policy (``budgetloop.context``) prices the requests it sends:

    - ``KeepLast(turns=N)``: exactly, turn n's input is ``start + per_turn x min(n - 1, N)``,
      so the total grows linearly once n passes N;
    - ``DropToolResults``: priced as without it. It removes no message, and what it cuts
      depends on the results' sizes, which the shape does not say; it cuts a result only to
      make it shorter, so this is a bound but for a cut that saves fewer tokens than its mark
      takes (a few);
    - ``Summarize``: a bound. Once a request passes ``when_input_tokens_over``, a summary of
      the summarizer's ``max_output_tokens`` tokens (and the few of its message's frame)
      stands for all but the last ``keep_last`` turns, and its call is counted in that turn,
      as reading the whole request at the summarizer's ``price``.
    """
    if turns < 0:
        raise ValueError(f"worst_case_cost: turns must be >= 0, got {turns}.")
    if context is not None or price.tiers:  # turn by turn
        each = _turns_pico(start_tokens, tokens_per_turn, max_output_tokens, price, context)
        return from_pico(sum(next(each) for _ in range(turns)))
    total_in = turns * start_tokens + tokens_per_turn * turns * (turns - 1) // 2
    return from_pico(price.pico(total_in, turns * max_output_tokens))


def max_turns_for(
    limit_usd: float,
    *,
    start_tokens: int,
    tokens_per_turn: int,
    max_output_tokens: int,
    price: Price,
    context: object = None,
) -> int:
    """The largest number of such turns whose worst-case cost fits ``limit_usd``
    (``context=`` as ``worst_case_cost`` takes it)."""
    limit = to_pico(limit_usd)
    spent = 0
    turns = 0
    each = _turns_pico(start_tokens, tokens_per_turn, max_output_tokens, price, context)
    while True:
        nxt = next(each)
        if nxt <= 0:
            raise ValueError(
                f"max_turns_for: each turn's cost must be more than $0, got $0 for turn "
                f"{turns + 1}; a turn that costs nothing fits any number of times."
            )
        if spent + nxt > limit:
            return turns
        spent += nxt
        turns += 1


def cost_detail(p: Projection) -> str:
    """Why a projection does not fit, in words: what the next turn costs on what was spent."""
    return (
        f"next turn projected {format_usd(p.cost_usd or 0)} ({p.tokens_text})"
        f" on {format_usd(p.spent_usd)} spent exceeds max_cost_usd={format_usd(p.limit_usd)}"
    )
