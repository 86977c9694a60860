"""budgetloop.breakpoints: each predicate asked after every step of a real session."""

from __future__ import annotations

import math
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    Session,
    ToolCall,
    Usage,
    breakpoints,
    start,
    tool,
)
from tests.conftest import PRICE


@tool
def lookup(q: str) -> str:
    """Look something up."""
    if q == "bad":
        raise LookupError("no such thing")
    return f"found {q}"


@tool
def transfer(amount: int) -> str:
    """Move money."""
    return f"moved {amount}"


def hits(session: Session, predicate: Any) -> list[bool]:
    """The predicate's answer after each step, stepping the session to its end."""
    answers = []
    while session.step() is not None:
        answers.append(predicate(session))
    return answers


def call(name: str, **args: Any) -> Completion:
    return Completion(tool_calls=[ToolCall(name, args)])


def test_on_tool_is_true_after_a_step_that_called_the_tool() -> None:
    model = ScriptedModel(
        [
            call("lookup", q="a"),
            Completion(tool_calls=[ToolCall("lookup", {"q": "b"}), ToolCall("transfer", {})]),
            call("lookup", q="c"),
            call("transfer", amount=5),
            "done",
        ]
    )
    session = start(model, "go", tools=[lookup, transfer])
    at_transfer = breakpoints.on_tool("transfer")
    assert at_transfer(session) is False  # no step yet
    # step 1's transfer call was refused for its arguments: it was still called
    assert hits(session, at_transfer) == [False, True, False, True, False]
    assert session.steps[1].tool_calls[1].status == "error"


def test_on_tool_counts_a_call_skipped_at_the_stop() -> None:
    model = ScriptedModel([call("transfer", amount=1)])
    session = start(model, "go", tools=[transfer], budget=Budget(max_steps=1))
    assert hits(session, breakpoints.on_tool("transfer")) == [True]
    assert session.steps[0].tool_calls[0].status == "skipped"


def test_on_error_sees_model_errors_tool_errors_skips_and_under_projection() -> None:
    def fails(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise TimeoutError("the provider timed out")

    def too_big(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls=[ToolCall("lookup", {"q": "d"})], usage=Usage(10**6, 1))

    script: list[Any] = [
        call("lookup", q="a"),  # fine
        call("lookup", q="bad"),  # the tool raises
        call("lookup", q=3),  # the arguments are refused
        too_big,  # reported input far above the projection
        call("lookup", q="e"),  # fine again
        fails,  # the model raises
    ]
    session = start(ScriptedModel(script), "go", tools=[lookup])
    assert breakpoints.on_error()(session) is False
    assert hits(session, breakpoints.on_error()) == [False, True, True, True, False, True]
    step = session.steps[3]
    assert step.usage is not None
    assert step.usage.input_tokens > step.projection.input_tokens
    assert session.steps[5].error == "TimeoutError: the provider timed out"

    skipped = start(ScriptedModel([call("lookup", q="a")]), "go", tools=[lookup],
                    budget=Budget(max_steps=1))  # fmt: skip
    assert hits(skipped, breakpoints.on_error()) == [True]


def test_on_error_ignores_usage_at_or_below_the_projection() -> None:
    def exact(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(text="ok", usage=Usage(session.projection.input_tokens, 1))

    session = start(ScriptedModel([exact]), "go")
    assert hits(session, breakpoints.on_error()) == [False]


def test_on_cost_pauses_before_the_turn_that_would_pass_the_amount() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls=[ToolCall("lookup", {"q": str(len(messages))})],
                          usage=Usage(1000, 100))  # fmt: skip

    # each turn: 1,000 in + 100 out at $3/$15 = $0.0045 spent; projected worst case is less
    session = start(
        ScriptedModel([model], repeat_last=True), "go", tools=[lookup],
        price=PRICE, max_output_tokens=100, budget=Budget(max_steps=6),
    )  # fmt: skip
    at = breakpoints.on_cost(0.01)
    before = [session.projection.total_usd]
    answers = [at(session)]
    while session.step() is not None:
        answers.append(at(session))
        before.append(session.projection.total_usd)
    assert answers == [False, False, True, True, True, True, False]
    # true exactly when spent plus the next turn's worst case passes $0.01
    assert [t is not None and t > 0.01 for t in before[:6]] == answers[:6]
    assert session.done
    assert answers[-1] is False


def test_on_cost_equal_to_the_amount_does_not_pass() -> None:
    session = start(ScriptedModel(["hi"]), "go", price=PRICE, max_output_tokens=10)
    total = session.projection.total_usd
    assert total is not None
    assert breakpoints.on_cost(total)(session) is False
    assert breakpoints.on_cost(total - 1e-9)(session) is True


def test_on_cost_on_a_session_without_a_price_says_why() -> None:
    session = start(ScriptedModel(["hi"]), "go")
    with pytest.raises(
        ValueError, match=r"on_cost\(0\.5\): the session's price must be set, got None"
    ):
        breakpoints.on_cost(0.5)(session)


def test_on_step_is_true_after_exactly_n_steps() -> None:
    model = ScriptedModel([call("lookup", q=str(i)) for i in range(4)] + ["done"])
    session = start(model, "go", tools=[lookup])
    assert breakpoints.on_step(0)(session) is True
    assert hits(session, breakpoints.on_step(3)) == [False, False, True, False, False]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match=r"on_tool: name must be a tool name \(str\), got int"):
        breakpoints.on_tool(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_tool: name must be a tool name, got an empty"):
        breakpoints.on_tool("")
    with pytest.raises(ValueError, match=r"on_step: n must be a number of steps >= 0, got -1"):
        breakpoints.on_step(-1)
    with pytest.raises(TypeError, match="on_step: n must be an int, got float"):
        breakpoints.on_step(2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_step: n must be an int, got bool"):
        breakpoints.on_step(True)
    with pytest.raises(ValueError, match=r"on_cost: usd must be a finite number >= 0, got nan"):
        breakpoints.on_cost(math.nan)
    with pytest.raises(ValueError, match=r"on_cost: usd must be a finite number >= 0, got inf"):
        breakpoints.on_cost(math.inf)
    with pytest.raises(ValueError, match=r"got -0\.1"):
        breakpoints.on_cost(-0.1)
    with pytest.raises(TypeError, match="on_cost: usd must be a number of dollars, got str"):
        breakpoints.on_cost("0.5")  # type: ignore[arg-type]


def test_a_breakpoint_a_run_has_passed_says_why_it_cannot_pause_it() -> None:
    model = ScriptedModel([call("lookup", q=str(i)) for i in range(4)] + ["done"])
    session = start(model, "go", tools=[lookup])
    breakpoints.check(breakpoints.on_step(1), session)  # none taken: it can pause there
    session.step()
    with pytest.raises(ValueError, match=r"^on_step\(1\): ") as caught:
        breakpoints.check(breakpoints.on_step(1), session)
    assert str(caught.value) == (
        "on_step(1): the steps the session has taken must be fewer than 1, got 1, so a run "
        "asked after its next step never pauses there; choose a larger number."
    )
    session.step()
    with pytest.raises(ValueError, match=r"^on_step\(1\): ") as caught:
        breakpoints.check(breakpoints.on_step(1), session)
    assert str(caught.value).startswith(
        "on_step(1): the steps the session has taken must be fewer than 1, got 2, "
    )


def test_none_is_named_none() -> None:
    with pytest.raises(TypeError) as caught:
        breakpoints.before_tool(None)  # type: ignore[arg-type]
    assert str(caught.value) == "before_tool: name must be a tool name (str), got None."
    with pytest.raises(TypeError) as caught:
        breakpoints.on_cost(None)  # type: ignore[arg-type]
    assert str(caught.value) == "on_cost: usd must be a number of dollars, got None."


def test_predicates_say_what_they_are() -> None:
    assert breakpoints.on_tool("transfer").__qualname__ == "on_tool('transfer')"
    assert breakpoints.on_cost(0.5).__qualname__ == "on_cost(0.5)"
    assert breakpoints.on_step(3).__qualname__ == "on_step(3)"
    assert breakpoints.on_error().__qualname__ == "on_error()"
