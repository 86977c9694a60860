"""A run for the exporters' tests and the real Phoenix: two lookups (one fails), a coerced
argument, a call skipped because no further turn fits, and the run stopped by its cost ceiling.
Every reply names its model and id as an adapter's would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from budgetloop import (
    Budget,
    Completion,
    Price,
    ScriptedModel,
    Session,
    ToolCall,
    Usage,
    start,
    tool,
)
from tests.conftest import FakeClock

PROMPT = "What is SE0000108656 worth in USD?"
SYSTEM = "You are a careful pricing assistant."
PRICE = Price(2.5, 10.0, cache_read_per_mtok=1.25)  # assumed rates for the tests
MODEL = "gpt-4o-2024-08-06"


def _turn(clock: FakeClock, seconds: float, completion: Completion) -> Callable[..., Completion]:
    def play(messages: Any, tools: Any) -> Completion:
        clock.advance(seconds)
        return completion

    return play


def ceiling_run(clock: FakeClock | None = None, **options: Any) -> Session:
    """The session, not yet stepped (``options`` are more ``start()`` options)."""
    clock = clock or FakeClock()

    @tool
    def price(isin: str) -> float:
        """Look up the last price for an instrument.

        Args:
            isin: the twelve-character identifier
        """
        clock.advance(0.5)
        if isin == "SE0000000000":
            raise LookupError(f"{isin} is not in the price list")
        return 118.4

    @tool
    def convert(amount: float, rate: float) -> float:
        """Convert an amount of money at an exchange rate.

        Args:
            amount: the amount
            rate: the rate
        """
        clock.advance(0.25)
        return round(amount * rate, 2)

    calls = [
        (ToolCall("price", {"isin": "SE0000108656"}, "call_1"),
         ToolCall("price", {"isin": "SE0000000000"}, "call_2")),
        (ToolCall("convert", {"amount": "118.4", "rate": 0.091}, "call_3"),),
        (ToolCall("convert", {"amount": 118.4, "rate": 0.092}, "call_4"),),
        (ToolCall("convert", {"amount": 118.4, "rate": 0.093}, "call_5"),),
    ]  # fmt: skip
    texts = ["Looking both of them up.", "One is unknown. Converting the other.",
             "Checking the rate once more.", "And once more."]  # fmt: skip
    usages = [Usage(1200, 60), Usage(1400, 40, cache_read_tokens=1000),
              Usage(1600, 40, cache_read_tokens=1200), Usage(1700, 40, cache_read_tokens=1200)]  # fmt: skip
    script = [
        _turn(clock, 1.0, Completion(text, call, usage=usage, model=MODEL,
                                     response_id=f"chatcmpl-{i}", finish_reason="tool_call"))
        for i, (text, call, usage) in enumerate(zip(texts, calls, usages, strict=True))
    ]  # fmt: skip
    model = ScriptedModel(script, price=PRICE, max_output_tokens=500)
    return start(
        model,
        PROMPT,
        system=SYSTEM,
        tools=[price, convert],
        budget=Budget(max_steps=8, max_cost_usd=0.02),
        clock=clock,
        **options,
    )
