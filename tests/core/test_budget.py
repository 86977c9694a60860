"""Projection arithmetic, the worked example of a context that grows per turn, and the default token estimate."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import budgetloop
from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    estimate_tokens,
    load_trace,
    max_turns_for,
    worst_case_cost,
)
from budgetloop._rules._budget import estimate_message, estimate_text, project

WORKED = {
    "start_tokens": 8_000,
    "tokens_per_turn": 2_000,
    "max_output_tokens": 500,
    "price": Price(3.0, 15.0),
}


def test_the_worked_example_of_a_growing_context() -> None:
    # N = 10: input 170,000, output 5,000: $0.51 + $0.075
    assert worst_case_cost(10, **WORKED) == 0.585
    # N = 20: input 540,000, output 10,000: $1.62 + $0.15
    assert worst_case_cost(20, **WORKED) == 1.77
    assert worst_case_cost(0, **WORKED) == 0


def test_doubling_the_steps_triples_the_cost() -> None:
    assert worst_case_cost(20, **WORKED) / worst_case_cost(10, **WORKED) == pytest.approx(
        3.03, abs=0.01
    )


def test_max_turns_for_is_the_largest_number_that_fits() -> None:
    assert max_turns_for(0.585, **WORKED) == 10  # equality fits
    assert max_turns_for(0.584999, **WORKED) == 9
    assert max_turns_for(1.77, **WORKED) == 20
    assert max_turns_for(0.0, **WORKED) == 0


def test_max_turns_for_a_turn_that_costs_nothing_is_refused() -> None:
    free = {**WORKED, "price": Price(0.0, 0.0)}
    with pytest.raises(ValueError, match=r"^max_turns_for: ") as caught:
        max_turns_for(1.0, **free)
    assert str(caught.value) == (
        "max_turns_for: each turn's cost must be more than $0, got $0 for turn 1; a turn that "
        "costs nothing fits any number of times."
    )


@given(
    limit=st.floats(min_value=0, max_value=50),
    start=st.integers(0, 50_000),
    per=st.integers(0, 5_000),
)
def test_max_turns_for_agrees_with_worst_case_cost(limit: float, start: int, per: int) -> None:
    shape = {
        "start_tokens": start,
        "tokens_per_turn": per,
        "max_output_tokens": 500,
        "price": Price(3.0, 15.0),
    }
    n = max_turns_for(limit, **shape)
    assert worst_case_cost(n, **shape) <= limit
    assert worst_case_cost(n + 1, **shape) > limit


def test_price_cost_is_exact_in_decimal() -> None:
    price = Price(3.0, 15.0)
    assert price.cost(170_000, 5_000) == 0.585
    assert Price(0.1, 0.2).cost(3, 0) == 3e-7
    with pytest.raises(
        ValueError, match=r"Price: input_per_mtok must be a finite number >= 0, got -1"
    ):
        Price(-1, 1)


def test_projection_fits_on_equality_and_reports_its_numbers() -> None:
    budget = Budget(max_cost_usd=0.585)
    price = Price(3.0, 15.0)
    fits, pico = project(170_000, 5_000, price, 0, budget)
    assert (fits.fits, fits.cost_usd, pico) == (True, 0.585, 585 * 10**9)
    over, _ = project(170_001, 5_000, price, 0, budget)
    assert not over.fits
    assert over.total_usd == pytest.approx(0.585003)
    unlimited, _ = project(10, 10, None, 0, Budget())
    assert (unlimited.fits, unlimited.cost_usd, unlimited.total_usd) == (True, None, None)


def test_estimate_counts_letters_digits_and_symbols() -> None:
    assert estimate_text("") == 0
    assert estimate_text("the cat") == 2
    assert estimate_text("budgetloop") == 4  # bud get loo p
    assert estimate_text("1234567") == 3  # 123 456 7
    assert estimate_text('{"a": 1}') == 8  # { " a " : (space before a digit) 1 }
    assert estimate_text("The JSON") == 6  # T he J S O N: capitals count alone
    assert estimate_text("x" + " " * 20 + "y") == 4  # x, 16 spaces, 4 spaces, y
    assert estimate_text("line\nline") == 5
    assert estimate_text("é") == 2  # one token per UTF-8 byte outside ASCII
    assert estimate_text("日本") == 6


def _estimate_by_the_rule(text: str) -> int:
    """The estimate as its docstring states it, one regex match at a time (slow and plain)."""
    count = 0
    for run in re.findall(r"[a-z]+|[0-9]+| +|[\x00-\x7f]|[^\x00-\x7f]", text):
        if run[0] in string.ascii_lowercase or run[0] in string.digits:
            count += -(-len(run) // 3)  # a token per three characters, the remainder rounded up
        elif run[0] == " ":
            count += 0 if len(run) == 1 else -(-len(run) // 16)  # one space is free
        elif run.isascii():
            count += 1  # a capital or any other character
        else:
            count += len(run.encode("utf-8", "surrogatepass"))  # a token per byte
    return count + len(re.findall(r" (?=[0-9])", text))  # a space before a digit


@given(st.text(alphabet=st.sampled_from('abz019 \t\n.,{}"AZé😀'), max_size=60) | st.text())
def test_estimate_is_the_rule_it_states(text: str) -> None:
    assert estimate_text(text) == _estimate_by_the_rule(text)


def test_estimate_of_a_request_adds_overheads_per_message_and_tools() -> None:
    user = Message("user", "the cat")
    call = Message("assistant", None, (ToolCall("f", '{"a": 1}', "c1"),))
    assert estimate_message(user) == 4 + 2
    assert estimate_message(call) == 4 + 4 + 1 + 8 + 2
    assert estimate_tokens([user, call]) == 3 + 6 + 19
    schema = [{"name": "f", "description": "", "parameters": {}}]
    assert estimate_tokens([user], schema) > estimate_tokens([user])


def test_a_malformed_tool_call_is_estimated_not_raised() -> None:
    calls = (
        ToolCall(123, b"\x00\x01", None),  # type: ignore[arg-type]
        ToolCall("f", {(1, 2): {3}}, "c"),  # type: ignore[dict-item]
    )
    message = Message("assistant", None, calls)
    # "123", the JSON of repr(b"\x00\x01"), "f", the dict's repr, "c": as text, one pass
    text = " ".join(["123", "\"b'\\\\x00\\\\x01'\"", "f", "{(1, 2): {3}}", "c"])
    assert estimate_message(message) == 4 + 2 * 4 + estimate_text(text)


# -- the request: what the guard projected travels with the call -------------------------------


def test_a_model_that_takes_the_keywords_is_asked_for_the_projected_figure_and_the_settings(
    tmp_path: Path,
) -> None:
    asked: list[tuple[int | None, dict[str, Any]]] = []

    def complete(
        messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> Completion:
        asked.append((kwargs["max_output_tokens"], kwargs["settings"]))
        kwargs["settings"]["seed"] = 0  # a model that changes its copy changes nothing kept
        return Completion(text="ok")

    settings = {"temperature": 0.2, "seed": 7}
    path = tmp_path / "run.jsonl"
    result = budgetloop.run(
        complete, "go", max_output_tokens=300, settings=settings, trace_path=path
    )
    assert asked == [(300, {"temperature": 0.2, "seed": 0})]
    assert settings == {"temperature": 0.2, "seed": 7}
    assert result.options["settings"] == {"temperature": 0.2, "seed": 7}
    assert load_trace(path).options["settings"] == {"temperature": 0.2, "seed": 7}
    assert load_trace(path).request(0).settings == {"temperature": 0.2, "seed": 7}
    assert result.request(0).max_output_tokens == 300


def test_a_two_argument_model_is_called_as_before() -> None:
    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(text="ok")

    assert budgetloop.run(complete, "go", max_output_tokens=100).answer == "ok"


def test_what_a_model_that_cannot_be_told_the_figure_could_not_bind_is_refused_at_run() -> None:
    calls: list[int] = []

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        calls.append(1)
        return Completion(text="ok")

    complete.max_output_tokens = 4000  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="must be") as caught:
        budgetloop.run(complete, "go", max_output_tokens=100, budget=Budget(max_cost_usd=0.01),
            price=Price(2.5, 10.0))  # fmt: skip
    assert str(caught.value) == (
        "run: max_output_tokens must be the model's own max_output_tokens=4000, since the model "
        "takes no max_output_tokens keyword and so asks for that many whatever the run projects, "
        "got 100. Pass max_output_tokens=4000, or give the model a max_output_tokens keyword."
    )
    with pytest.raises(ValueError, match="must be") as caught:
        budgetloop.run(complete, "go", min_output_tokens=10)
    assert str(caught.value) == (
        "run: min_output_tokens must be None for a model that takes no max_output_tokens "
        "keyword, got 10. A turn is fitted by asking for fewer output tokens, which such a model "
        "cannot be asked (the adapters and ScriptedModel can)."
    )
    with pytest.raises(ValueError, match="must be") as caught:
        budgetloop.run(complete, "go", settings={"seed": 7})
    assert str(caught.value) == (
        "run: settings must be empty for a model that takes no settings keyword, got seed. Give "
        "the model a settings keyword (the adapters and ScriptedModel take one)."
    )
    assert calls == []
    assert budgetloop.run(complete, "go").answer == "ok"  # its own figure: nothing to bind


def test_a_turn_that_does_not_fit_is_fitted_down_to_min_output_tokens_and_no_further() -> None:
    price = Price(3.0, 15.0)
    model = ScriptedModel(["a" * 9000], price=price, max_output_tokens=1000)
    tokens = budgetloop.start(model, "go").projection.input_tokens
    ceiling = price.cost(tokens, 312)
    result = budgetloop.run(
        model, "go", budget=Budget(max_cost_usd=ceiling), min_output_tokens=300
    )
    projection = result.steps[0].projection
    assert projection is not None
    assert (projection.output_tokens, projection.fitted_from) == (312, 1000)
    assert projection.fitted_text == (
        "asked for 312 of 1,000 output tokens: what the budget had left"
    )
    assert projection.assumed_text == (
        "312 output tokens assumed: asked for 312 of 1,000 output tokens: what the budget had left"
    )
    assert model.requests[0].max_output_tokens == 312
    assert result.cost_usd is not None
    assert result.cost_usd <= ceiling
    assert Result.from_dict(result.to_dict()).steps[0].projection == projection
    report = budgetloop.budget_report([result, budgetloop.run(model, "go")])
    assert report.fitted == (1, ("#0",))  # the report says which runs were fitted
    assert (
        "turns fitted to what the budget had left (min_output_tokens):\n"
        "  fitted                       1  #0"
    ) in str(report)
    model.reset()
    stopped = budgetloop.run(
        model, "go", budget=Budget(max_cost_usd=ceiling), min_output_tokens=313
    )
    assert (stopped.stop, model.calls) == ("max_cost_usd", 0)


def test_replay_and_fork_send_the_recorded_settings_and_fitting_again() -> None:
    price = Price(3.0, 15.0)
    model = ScriptedModel(["a" * 9000], price=price, max_output_tokens=1000)
    tokens = budgetloop.start(model, "go").projection.input_tokens
    budget = Budget(max_cost_usd=price.cost(tokens, 312))
    settings = {"seed": 7}
    result = budgetloop.run(model, "go", budget=budget, min_output_tokens=300, settings=settings)
    again = budgetloop.replay(Result.from_dict(result.to_dict()))
    assert again.options == result.options
    assert again.steps[0].projection == result.steps[0].projection
    session = budgetloop.start(
        model, "go", budget=budget, min_output_tokens=300, settings=settings
    )
    forked = session.fork(complete=ScriptedModel(["b"], price=price, max_output_tokens=1000))
    forked.run()
    assert forked.complete.requests[0].settings == settings  # type: ignore[attr-defined]
    assert forked.complete.requests[0].max_output_tokens == 312  # type: ignore[attr-defined]
