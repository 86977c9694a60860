"""ScriptedModel: plays back, records, and counts usage that grows with the context."""

from __future__ import annotations

import pytest

from budgetloop import Completion, Message, Price, ScriptedModel, ToolCall, Usage, estimate_tokens


def test_plays_back_and_records_requests() -> None:
    model = ScriptedModel(["one", Completion(text="two", usage=Usage(5, 6))])
    first = model([Message("user", "hi")], [])
    second = model([Message("user", "hi"), Message("assistant", "one")], [{"name": "t"}])
    assert (first.text, second.text) == ("one", "two")
    assert second.usage == Usage(5, 6)
    assert model.calls == 2
    assert model.requests[1].tools == ({"name": "t"},)
    with pytest.raises(IndexError, match="call 3 but the script has 2 entries"):
        model([], [])


def test_counted_usage_grows_with_the_context() -> None:
    model = ScriptedModel(["a"], repeat_last=True, max_output_tokens=1)
    short = [Message("user", "hi")]
    long = [*short, Message("tool", "x" * 3000, tool_call_id="c")]
    u1 = model(short, []).usage
    u2 = model(long, []).usage
    assert u1 is not None
    assert u2 is not None
    assert u1.input_tokens == estimate_tokens(short)
    assert u2.input_tokens == estimate_tokens(long) == u1.input_tokens + 1000 + 4 + 1
    assert u1.output_tokens == 1  # capped at max_output_tokens


def test_callable_entries_and_attributes() -> None:
    model = ScriptedModel(
        [lambda messages, tools: Completion(tool_calls=[ToolCall("f", {"n": len(messages)})])],
        repeat_last=True,
        price=Price(1, 2),
        max_output_tokens=50,
    )
    assert model([Message("user", "a")] * 3, []).tool_calls == (ToolCall("f", {"n": 3}),)
    assert (model.price, model.max_output_tokens) == (Price(1, 2), 50)
    with pytest.raises(ValueError, match="repeat_last needs at least one entry"):
        ScriptedModel([], repeat_last=True)


def test_reset_plays_the_script_again() -> None:
    model = ScriptedModel(["one", "two"])
    assert model([], []).text == "one"
    model.reset()
    assert model.calls == 0
    assert [model([], []).text, model([], []).text] == ["one", "two"]
