"""Long-context price tiers and reasoning tokens: billed, projected, kept in the trace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from budgetloop import (
    Budget,
    Completion,
    Price,
    Result,
    ScriptedModel,
    Stop,
    ToolCall,
    Usage,
    format_usd,
    load_trace,
    start,
    tool,
    worst_case_cost,
)

# claude-sonnet-4-5 as Anthropic bills it: a request over 200,000 input tokens at the tier's rates
SONNET = Price(
    3.0,
    15.0,
    cache_read_per_mtok=0.30,
    cache_write_per_mtok=3.75,
    tiers={200_000: Price(6.0, 22.5, cache_read_per_mtok=0.60, cache_write_per_mtok=7.50)},
)


def test_a_request_over_the_threshold_is_billed_at_the_tier_for_all_of_its_tokens() -> None:
    # 150k read from the cache + 50,001 uncached = 200,001 in: every token at the tier's rates
    usage = Usage(200_001, 1_000, cache_read_tokens=150_000)
    assert SONNET.usage_pico(usage) == (
        50_001 * 6_000_000 + 150_000 * 600_000 + 1_000 * 22_500_000
    )
    # at exactly the threshold it is not above it: the base rates
    at = Usage(200_000, 1_000, cache_read_tokens=150_000)
    assert SONNET.usage_pico(at) == 50_000 * 3_000_000 + 150_000 * 300_000 + 1_000 * 15_000_000
    assert SONNET.at(200_000) is SONNET
    assert SONNET.at(200_001) == Price(
        6.0, 22.5, cache_read_per_mtok=0.60, cache_write_per_mtok=7.50
    )
    assert (SONNET.tier_above(200_000), SONNET.tier_above(200_001)) == (None, 200_000)
    assert SONNET.cost(300_000, 0) == 1.8  # $6 a million, not $3


def test_the_highest_tier_below_the_input_applies() -> None:
    price = Price(1.0, 2.0, tiers={100: Price(4.0, 8.0), 10: Price(2.0, 4.0)})
    assert [price.pico(n, 1) for n in (10, 11, 100, 101)] == [
        10 * 1_000_000 + 2_000_000,
        11 * 2_000_000 + 4_000_000,
        100 * 2_000_000 + 4_000_000,
        101 * 4_000_000 + 8_000_000,
    ]
    assert list(price.tiers or {}) == [10, 100]  # kept in threshold order


def test_the_projection_prices_the_context_about_to_be_sent_at_its_tier() -> None:
    # every input token at the dearest input rate of the tier the whole input falls in
    assert SONNET.worst_pico(200_000, 100) == 200_000 * 3_750_000 + 100 * 15_000_000
    assert SONNET.worst_pico(200_001, 100) == 200_001 * 7_500_000 + 100 * 22_500_000
    # a tier cheaper than the base (no provider bills so) never projects below a smaller call
    odd = Price(5.0, 5.0, tiers={10: Price(1.0, 1.0)})
    assert odd.worst_pico(11, 1) == 11 * 5_000_000 + 5_000_000


def test_a_turn_that_crosses_the_tier_is_projected_at_the_dearer_one() -> None:
    tier = Price(2.0, 4.0)
    price = Price(1.0, 2.0, tiers={40: tier})
    model = ScriptedModel(["x" * 200, "done"], price=price, max_output_tokens=10)
    session = start(model, "hello", budget=Budget(max_cost_usd=1.0))
    first = session.projection
    assert first.input_tokens <= 40
    assert first.cost_usd == price.cost(first.input_tokens, 10)
    session.step()
    second = session.projection
    assert second.input_tokens > 40  # the long reply pushed the context over the threshold
    assert second.cost_usd == tier.cost(second.input_tokens, 10)
    assert second.cost_usd == (second.input_tokens * 2_000_000 + 10 * 4_000_000) / 10**12


def test_the_guard_stops_before_a_turn_whose_tier_would_pass_the_ceiling() -> None:
    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return "kept"

    script = [Completion(tool_calls=[ToolCall("note", {"text": "x" * 400}, "c1")]), "done"]
    flat = Price(1.0, 1.0)
    probe = start(ScriptedModel(script, price=flat, max_output_tokens=10), "hello", tools=[note])
    first = probe.projection.input_tokens
    probe.step()
    second = probe.projection.input_tokens
    assert second > first + 20
    # the same run with a tier between the two turns' inputs: flat, both turns fit $0.005
    price = Price(1.0, 1.0, tiers={first + 10: Price(100.0, 100.0)})
    assert flat.worst_pico(first, 10) + flat.worst_pico(second, 10) < 5 * 10**9
    model = ScriptedModel(script, price=price, max_output_tokens=10)
    session = start(model, "hello", tools=[note], budget=Budget(max_cost_usd=0.005))
    result = session.run()
    assert result.stop is Stop.MAX_COST_USD
    assert len(result.steps) == 1
    # priced at $100 a million: the turn after the note could not be paid, so it was not run
    assert result.steps[0].tool_calls[0].status == "skipped"
    found = re.fullmatch(
        r"no turn to read the results fits: next turn projected (\S+) \((\d+) in \+ 10 out tokens\) "
        r"on (\S+) spent exceeds max_cost_usd=\$0.005",
        result.detail or "",
    )
    assert found is not None
    n = int(found[2])
    assert n > first + 10
    assert found[1] == format_usd((n + 10) * 100 / 1e6)  # at the tier's $100 a million
    assert found[3] == format_usd(result.cost_usd)


def test_worst_case_cost_bills_each_turn_at_its_own_tier() -> None:
    price = Price(3.0, 15.0, tiers={10_000: Price(6.0, 22.5)})
    shape = {"start_tokens": 8_000, "tokens_per_turn": 2_000, "max_output_tokens": 500}
    # turns of 8,000 and 10,000 in at the base rates, 12,000 at the tier's
    expected = (18_000 * 3 + 1_000 * 15 + 12_000 * 6 + 500 * 22.5) / 1e6
    assert worst_case_cost(3, price=price, **shape) == pytest.approx(expected, abs=1e-12)
    flat = Price(3.0, 15.0)
    assert worst_case_cost(2, price=price, **shape) == worst_case_cost(2, price=flat, **shape)


def test_bad_tiers_are_refused_when_the_price_is_made() -> None:
    with pytest.raises(
        TypeError, match=r"Price: tiers must be a dict of int to Price or None, got list."
    ):
        Price(1, 1, tiers=[(10, Price(2, 2))])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Price: tiers must be an int >= 0, got str."):
        Price(1, 1, tiers={"10": Price(2, 2)})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"Price: tiers\[10\] must be a Price, got float."):
        Price(1, 1, tiers={10: 2.0})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"Price: tiers\[10\] must be a Price without tiers"):
        Price(1, 1, tiers={10: Price(2, 2, tiers={20: Price(3, 3)})})


def test_a_price_keeps_its_own_copy_of_the_tiers_and_stays_hashable() -> None:
    tiers = {10: Price(2.0, 2.0)}
    price = Price(1.0, 1.0, tiers=tiers)
    tiers[5] = Price(9.0, 9.0)
    assert price.pico(8, 0) == 8 * 1_000_000
    assert hash(price) == hash(Price(1.0, 1.0))
    assert price != Price(1.0, 1.0)
    assert price == Price(1.0, 1.0, tiers={10: Price(2.0, 2.0)})


def test_reasoning_tokens_are_part_of_the_output() -> None:
    usage = Usage(100, 50, reasoning_tokens=30)
    assert Price(1.0, 10.0).usage_pico(usage) == 100 * 1_000_000 + 50 * 10_000_000
    with pytest.raises(
        ValueError,
        match=r"Usage: reasoning_tokens must be at most output_tokens \(50\), got 51; output_tokens "
        r"counts the whole output, reasoning included.",
    ):
        Usage(100, 50, reasoning_tokens=51)
    with pytest.raises(
        TypeError, match=r"Usage: reasoning_tokens must be an int >= 0, got float."
    ):
        Usage(100, 50, reasoning_tokens=1.0)  # type: ignore[arg-type]


def tiered_run() -> Result:
    usage = Usage(250_000, 40, cache_read_tokens=100_000, reasoning_tokens=25)
    model = ScriptedModel(
        [Completion(text="thought hard", usage=usage)], price=SONNET, max_output_tokens=100
    )
    return start(model, "q", budget=Budget(max_cost_usd=5.0)).run()


def test_the_trace_keeps_the_tiers_and_the_reasoning_tokens(tmp_path: Path) -> None:
    result = tiered_run()
    assert result.cost_usd == (150_000 * 6 + 100_000 * 0.6 + 40 * 22.5) / 1e6
    data = result.to_dict()
    assert data["price"]["tiers"] == [
        {
            "above": 200_000,
            "price": {
                "input_per_mtok": 6.0,
                "output_per_mtok": 22.5,
                "cache_read_per_mtok": 0.6,
                "cache_write_per_mtok": 7.5,
            },
        }
    ]
    assert data["steps"][0]["usage"]["reasoning_tokens"] == 25
    back = Result.from_dict(json.loads(json.dumps(data)))
    assert back.price == SONNET
    assert back.steps[0].usage == result.steps[0].usage
    path = tmp_path / "run.json"
    result.save(path)
    loaded = load_trace(path)
    assert loaded.price == SONNET
    assert loaded.steps[0].usage is not None
    assert loaded.steps[0].usage.reasoning_tokens == 25
    assert loaded.to_dict() == data


def test_a_trace_with_bad_tiers_or_reasoning_tokens_does_not_load(tmp_path: Path) -> None:
    data = tiered_run().to_dict()
    data["price"]["tiers"][0]["above"] = "many"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"price.tiers\[0\].above must be an int"):
        load_trace(path)
    data = tiered_run().to_dict()
    data["steps"][0]["usage"]["reasoning_tokens"] = 41
    path.write_text(json.dumps(data))
    with pytest.raises(
        ValueError,
        match=r"steps\[0\].usage: Usage: reasoning_tokens must be at most output_tokens",
    ):
        load_trace(path)


def test_the_pages_step_card_says_how_much_of_the_output_was_reasoning() -> None:
    from budgetloop._trace._html import render

    page = render(tiered_run())
    assert "250,000 in / 40 out tokens reported (25 of them reasoning)" in page
