"""Configuration mistakes fail at start(), naming the option and what arrived."""

from __future__ import annotations

import math
from typing import Any

import pytest

from budgetloop import Budget, Message, Price, ScriptedModel, start

MODEL = ScriptedModel(["ok"], price=Price(3.0, 15.0), max_output_tokens=100)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"count_tokens": 3}, TypeError, "run: count_tokens must be a function or None, got int."),
        ({"redact": "***"}, TypeError, "run: redact must be a function or None, got str."),
        ({"on_step": []}, TypeError, "run: on_step must be a function or None, got list."),
        ({"clock": 1.0}, TypeError, "run: clock must be a function returning seconds, got float."),
        (
            {"clock": lambda: "now"},
            TypeError,
            "run: clock() must return a number of seconds, got str.",
        ),
        (
            {"clock": lambda: math.nan},
            ValueError,
            "run: clock() must return a finite number of seconds, got nan.",
        ),
        ({"system": 3}, TypeError, "run: system must be a str or None, got int."),
        ({"budget": {"max_steps": 3}}, TypeError, "run: budget must be a Budget, got dict."),
        ({"price": (3, 15)}, TypeError, "run: price must be a Price, got tuple."),
        (
            {"max_output_tokens": 1.5},
            TypeError,
            "run: max_output_tokens: expected an int >= 0 or None, got float.",
        ),
        (
            {"repeat_limit": 1},
            ValueError,
            "run: repeat_limit: expected an int >= 2 or None, got 1.",
        ),
        (
            {"budget": Budget(max_cost_usd=1.0), "max_output_tokens": 0},
            ValueError,
            "run: max_output_tokens=0 with Budget(max_cost_usd=...)",
        ),
        ({"ledger": object()}, TypeError, "run: ledger must be a budgetloop.ledger ledger"),
    ],
)
def test_a_wrong_option_fails_at_start(options: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        start(MODEL, "go", **options)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        (None, "run: prompt must be a str or a list of Message, got null."),
        (3, "run: prompt must be a str or a list of Message, got int."),
        (b"go", "run: prompt must be a str or a list of Message, got bytes."),
        ({"role": "user"}, "run: prompt must be a str or a list of Message, got dict."),
        (["go"], "run: prompt[0] is str; pass a str or a list of Message."),
    ],
)
def test_a_prompt_of_the_wrong_type_says_so(prompt: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        start(MODEL, prompt)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("returns", "error", "message"),
    [
        (-3, ValueError, "count_tokens: expected an int >= 0"),
        (2.5, TypeError, "count_tokens: expected an int >= 0"),
        (math.nan, TypeError, "count_tokens: expected an int >= 0"),
        ("12", TypeError, "count_tokens: expected an int >= 0"),
        (None, TypeError, "count_tokens: expected an int >= 0"),
    ],
)
def test_a_count_tokens_that_returns_no_count_fails_at_start(
    returns: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        start(MODEL, "go", count_tokens=lambda messages, tools: returns)


def test_a_redact_that_returns_no_text_fails_at_start() -> None:
    with pytest.raises(TypeError, match=r"redact: must return a str, got NoneType"):
        start(MODEL, "go", redact=lambda text: None)


def test_a_clock_that_goes_backwards_fails_the_step_before_any_call() -> None:
    times = iter([10.0, 10.0, 5.0])  # read at start(), then at the step
    session = start(MODEL, "go", clock=lambda: next(times, 5.0))
    with pytest.raises(
        ValueError, match=r"clock went backwards or returned NaN \(10.0 then 5.0\)"
    ):
        session.step()
    assert MODEL.calls == 0
    assert session.steps == ()


def test_a_message_that_is_not_text_fails_where_it_is_made() -> None:
    with pytest.raises(TypeError, match=r"Message.content: expected str or None, got int"):
        Message("user", 3)  # type: ignore[arg-type]
