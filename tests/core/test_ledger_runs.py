"""Runs sharing a ledger, end to end: each model call's worst case is reserved before it is sent
and settled at its actual cost after; a refused reservation stops the run with
``shared_budget``; settled spend never passes the ledger's limit, across run_many's threads too.

The fixture's turns are sent 1,000 tokens and write 50 of at most 100, at $1 per million: a turn
is projected at $0.0011 and costs $0.00105."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Price,
    SqliteLedger,
    Stop,
    ToolCall,
    Usage,
    load_trace,
    run,
    run_many,
)

PRICE = Price(1.0, 1.0)


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def turns_model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    """Answers after as many tool turns as the prompt's number: stateless, shareable."""
    wanted = int(messages[-1 if messages[-1].role == "user" else 0].content or "0")
    done = sum(1 for m in messages if m.role == "tool")
    if done < wanted:
        return Completion(
            tool_calls=[ToolCall("echo", {"text": f"t{done}"})], usage=Usage(1000, 50)
        )
    return Completion(text=f"done after {done}", usage=Usage(1000, 50))


OPTIONS: dict[str, Any] = {
    "tools": [echo],
    "price": PRICE,
    "max_output_tokens": 100,
    "count_tokens": lambda m, t: 1000,
}


def test_the_second_run_stops_with_shared_budget_where_the_ledger_runs_out() -> None:
    ledger = MemoryLedger(0.0044)
    first = run(turns_model, "1", ledger=ledger, **OPTIONS)
    assert first.stop is Stop.ANSWERED
    assert ledger.spent_usd() == 0.0021
    second = run(turns_model, "2", ledger=ledger, **OPTIONS)
    # turn 0: 0.0021 + 0.0011 fits; turn 1: 0.00315 + 0.0011 = 0.00425 fits; turn 2 would not
    assert second.stop is Stop.SHARED_BUDGET
    assert second.stop == "shared_budget"
    assert len(second.steps) == 2
    assert second.to_dict()["stop"] == "shared_budget"
    assert (ledger.spent_usd(), ledger.reserved_usd()) == (0.0042, 0.0)
    assert second.cost_usd == 0.0021


def test_equality_fits_in_the_ledger() -> None:
    ledger = MemoryLedger(0.0011)
    result = run(turns_model, "0", ledger=ledger, **OPTIONS)
    assert result.stop is Stop.ANSWERED
    assert ledger.spent_usd() == 0.00105
    again = run(turns_model, "0", ledger=ledger, **OPTIONS)
    assert again.stop is Stop.SHARED_BUDGET
    assert again.steps == ()


def test_the_runs_own_ceiling_still_applies() -> None:
    ledger = MemoryLedger(1.0)
    result = run(turns_model, "5", ledger=ledger, budget=Budget(max_cost_usd=0.0022), **OPTIONS)
    assert result.stop is Stop.MAX_COST_USD
    assert ledger.spent_usd() == result.cost_usd == 0.0021
    assert ledger.reserved_usd() == 0.0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_run_many_through_one_ledger_never_settles_past_it(kind: str, tmp_path: Path) -> None:
    limit = 0.05
    ledger = MemoryLedger(limit) if kind == "memory" else SqliteLedger(tmp_path / "l.db", limit)
    prompts = [str(i % 4) for i in range(60)]  # 1 to 4 turns each: about 0.15 wanted in all
    results = run_many(
        turns_model, prompts, concurrency=8, ledger=ledger, trace_dir=tmp_path / "t",
        progress=False, **OPTIONS,
    )  # fmt: skip
    stops = {r.stop for r in results}
    assert stops == {Stop.ANSWERED, Stop.SHARED_BUDGET}
    spent = sum(r.cost_usd for r in results)
    assert ledger.spent_usd() == pytest.approx(spent, abs=1e-12)
    assert ledger.spent_pico() <= ledger.limit_pico
    assert ledger.spent_usd() > limit - 8 * 0.0011  # refused only when nearly all was used
    assert ledger.reserved_usd() == 0.0
    for i, result in enumerate(results):
        assert load_trace(tmp_path / "t" / f"run-{i:04d}.jsonl").stop == result.stop
