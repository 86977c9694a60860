"""Tools as the loop runs them: a raising tool, arguments checked and coerced, results encoded as
text, several calls of one turn run in parallel, plain functions decorated."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import threading
import time
import uuid
from typing import Any, Literal

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    ToolCall,
    run,
    start,
    tool,
)
from budgetloop._schema._shapes import SUPPORTED


def test_a_tool_that_raises_becomes_a_result_the_model_reads() -> None:
    @tool
    def price(isin: str) -> float:
        """Price."""
        raise LookupError(f"{isin} is not in the price list")

    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("price", {"isin": "X1"}, "c1")]), "sorry"]
    )
    result = run(model, "go", tools=[price])
    assert result.stop == "answered"
    assert result.answer == "sorry"
    sent = model.requests[1].messages[-1]
    assert sent == Message(
        "tool", "error: LookupError: X1 is not in the price list", tool_call_id="c1", name="price"
    )
    assert len(result.failed) == 1
    assert result.failed[0].error == "LookupError: X1 is not in the price list"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("nope", {}, "error: unknown tool 'nope'; available tools: convert, price"),
        ("convert", '{"amount": 1', "error: convert: arguments are not valid JSON ("),
        ("convert", "[1, 2]", "error: convert: arguments must be a JSON object, got array"),
        ("convert", {"amount": 1, "rate": 2, "fee": 3}, "error: convert.fee: unknown argument; expected amount, rate, currency"),
        ("convert", {"rate": 2}, "error: convert.amount: missing required argument"),
        ("convert", {"amount": "five", "rate": 2}, "error: convert.amount: expected number, got str"),
        ("convert", {"amount": 1, "rate": 2, "currency": "EUR"}, 'error: convert.currency: expected one of "SEK", "USD", got "EUR"'),
        ("price", {"isin": 12}, "error: price.isin: expected string, got int"),
    ],
)  # fmt: skip
def test_bad_arguments_come_back_in_words_the_model_can_act_on(
    name: str, arguments: Any, message: str
) -> None:
    @tool
    def price(isin: str) -> float:
        """Price."""
        return 1.0

    @tool
    def convert(amount: float, rate: float, currency: Literal["SEK", "USD"] = "USD") -> float:
        """Convert."""
        return amount * rate

    model = ScriptedModel([Completion(tool_calls=[ToolCall(name, arguments)]), "ok"])
    result = run(model, "go", tools=[convert, price])
    assert result.stop == "answered"
    content = model.requests[1].messages[-1].content or ""
    if message.endswith("("):  # the JSON parser's own words follow
        assert content.startswith(message)
    else:
        assert content == message
    assert result.steps[0].tool_calls[0].status == "error"


def test_a_number_written_as_a_string_is_coerced_once_and_both_forms_are_kept() -> None:
    seen: list[Any] = []

    @tool
    def convert(amount: float, times: int) -> float:
        """Convert."""
        seen.append((amount, times))
        return amount * times

    raw = '{"amount": "118.4", "times": "2"}'
    model = ScriptedModel([Completion(tool_calls=[ToolCall("convert", raw)]), "ok"])
    result = run(model, "go", tools=[convert])
    call = result.steps[0].tool_calls[0]
    assert seen == [(118.4, 2)]
    assert call.raw_arguments == raw
    assert call.arguments == {"amount": 118.4, "times": 2}
    assert call.coerced == ("convert.amount", "convert.times")
    assert call.result == "236.8"
    not_an_int = ScriptedModel(
        [Completion(tool_calls=[ToolCall("convert", {"amount": 1, "times": "3.5"})]), "ok"]
    )
    run(not_an_int, "go", tools=[convert])
    assert (
        not_an_int.requests[1].messages[-1].content
        == "error: convert.times: expected integer, got str"
    )


def test_a_check_that_breaks_is_the_calls_error_and_each_call_is_checked_once() -> None:
    compared: list[str] = []

    class Touchy(str):  # a value the check cannot compare with the choices
        def __eq__(self, other: object) -> bool:
            compared.append(str(self))
            raise RuntimeError("no comparing me")

        __hash__ = str.__hash__

    ran: list[str] = []

    @tool
    def pick(x: Literal["a", "b"]) -> str:
        """Pick one."""
        ran.append(x)
        return x

    calls = [ToolCall("pick", {"x": Touchy("a")}, "c1"), ToolCall("pick", {"x": "b"}, "c2")]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    result = run(model, "go", tools=[pick], repeat_limit=2)  # the guard compares checked calls
    assert result.stop == "answered"
    assert [(c.status, c.error, c.result) for c in result.steps[0].tool_calls] == [
        ("error", "pick: arguments could not be checked (RuntimeError: no comparing me)", None),
        ("ok", None, "b"),
    ]
    assert ran == ["b"]
    assert compared == ["a"]  # one check per call, shared by the repetition guard and the call


def test_results_are_encoded_for_the_model() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque>"

    @tool
    def info(kind: str) -> Any:
        """Info."""
        return {
            "str": "plain text",
            "num": 118.4,
            "dict": {"a": [1, None]},
            "odd": {"x": Opaque()},
        }[kind]

    kinds = ["str", "num", "dict", "odd"]
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("info", {"kind": k}) for k in kinds]), "ok"]
    )
    result = run(model, "go", tools=[info])
    assert [c.result for c in result.steps[0].tool_calls] == [
        "plain text",
        "118.4",
        '{"a": [1, null]}',
        '{"x": "<Opaque>"}',
    ]


class Tier(enum.Enum):
    GOLD = "gold"


@dataclasses.dataclass
class Quote:
    isin: str
    price: decimal.Decimal
    tier: Tier
    when: datetime.datetime
    ids: frozenset[uuid.UUID]
    seen: tuple[datetime.date, ...] = ()


QUOTE = Quote(
    "SE0000108656",
    decimal.Decimal("118.40"),
    Tier.GOLD,
    datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    frozenset({uuid.UUID(int=2), uuid.UUID(int=1)}),
    (datetime.date(2026, 1, 1),),
)
QUOTE_JSON = (
    '{"isin": "SE0000108656", "price": "118.40", "tier": "gold", '
    '"when": "2026-01-02T03:04:05+00:00", "ids": ["00000000-0000-0000-0000-000000000001", '
    '"00000000-0000-0000-0000-000000000002"], "seen": ["2026-01-01"]}'
)


@pytest.mark.parametrize(
    ("value", "content"),
    [
        (QUOTE, QUOTE_JSON),
        ({Tier.GOLD: {1, 3, 2}}, '{"gold": [1, 2, 3]}'),
        ((Tier.GOLD, datetime.time(9, 30)), '["gold", "09:30:00"]'),
        (datetime.date(2026, 5, 1), '"2026-05-01"'),
        (decimal.Decimal("0.10"), '"0.10"'),
        (Tier.GOLD, '"gold"'),
        ({"a", "b"}, '["a", "b"]'),
    ],
)
def test_results_of_common_types_are_json_the_model_can_read(value: Any, content: str) -> None:
    # A dataclass, Enum, tuple, set, datetime, date, Decimal or UUID result: JSON, not a repr.
    @tool
    def quote(isin: str) -> Any:
        """Quote."""
        return value

    model = ScriptedModel([Completion(tool_calls=[ToolCall("quote", {"isin": "X"}, "c")]), "ok"])
    result = run(model, "go", tools=[quote])
    assert result.steps[0].tool_calls[0].result == content
    assert model.requests[1].messages[-1].content == content


def test_a_redacted_trace_keeps_a_dataclass_result_as_redacted_json() -> None:
    @tool
    def quote(isin: str) -> Quote:
        """Quote."""
        return QUOTE

    model = ScriptedModel([Completion(tool_calls=[ToolCall("quote", {"isin": "X"}, "c")]), "ok"])
    result = run(
        model, "go", tools=[quote], redact=lambda text: text.replace("SE0000108656", "[isin]")
    )
    assert result.steps[0].tool_calls[0].result == QUOTE_JSON.replace("SE0000108656", "[isin]")
    assert model.requests[1].messages[-1].content == QUOTE_JSON  # the model read it all


def test_a_result_or_an_error_that_cannot_be_shown_is_still_a_result() -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Mute(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    @tool
    def odd(fail: bool) -> object:
        """Odd."""
        if fail:
            raise Mute
        return Unprintable()

    calls = [ToolCall("odd", {"fail": False}), ToolCall("odd", {"fail": True})]
    result = run(ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[odd])
    assert result.stop == "answered"
    assert [c.error for c in result.steps[0].tool_calls] == [
        "ValueError: the result could not be encoded as text (RuntimeError: no repr)",
        "Mute: (its message could not be shown)",
    ]

    def mute_model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise Mute

    assert run(mute_model, "go").error == "Mute: (its message could not be shown)"


@pytest.mark.timeout(10)
def test_parallel_calls_run_at_once_and_return_in_request_order() -> None:
    barrier = threading.Barrier(3, timeout=5)  # passes only if all three calls run together

    @tool
    def wait(delay: float, label: str) -> str:
        """Wait, then answer."""
        barrier.wait()
        time.sleep(delay)
        return label

    calls = [
        ToolCall("wait", {"delay": d, "label": lab}, f"id{lab}")
        for d, lab in [(0.3, "a"), (0.0, "b"), (0.1, "c")]
    ]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    result = run(model, "go", tools=[wait])
    assert [c.result for c in result.steps[0].tool_calls] == ["a", "b", "c"]
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [
        ("ida", "a"),
        ("idb", "b"),
        ("idc", "c"),
    ]


@pytest.mark.timeout(20)
def test_calls_still_run_at_once_after_many_trivial_batches() -> None:
    barrier = threading.Barrier(3, timeout=5)  # passes only if all three calls run together

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    def meet(label: str) -> str:
        """Wait for the others, then answer."""
        barrier.wait()
        return label

    trivial = [
        Completion(tool_calls=[ToolCall("add", {"a": t, "b": i}) for i in range(3)])
        for t in range(30)
    ]
    slow = Completion(tool_calls=[ToolCall("meet", {"label": x}) for x in "abc"])
    script = [*trivial, slow, *trivial, slow, "done"]
    result = run(ScriptedModel(script), "go", tools=[add, meet], budget=Budget(max_steps=100))
    assert result.stop == "answered"
    assert [c.result for c in result.steps[30].tool_calls] == ["a", "b", "c"]
    assert [c.result for c in result.steps[61].tool_calls] == ["a", "b", "c"]
    assert len(result.tool_calls) == 6 * 31


def test_plain_functions_are_decorated_and_duplicate_names_refused() -> None:
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    model = ScriptedModel([Completion(tool_calls=[ToolCall("double", {"x": 21})]), "42"])
    result = run(model, "go", tools=[double])
    assert result.tool_calls[0].result == "42"
    assert model.requests[0].tools[0]["name"] == "double"
    with pytest.raises(ValueError, match=r"^run: tools must be .*, got two named 'double'"):
        run(model, "go", tools=[double, tool(double)])

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(TypeError) as info:
        start(model, "go", tools=[untyped])
    assert str(info.value) == (
        f"tool untyped: parameter 'x' must be given a type hint, got none; add one ({SUPPORTED})."
    )
