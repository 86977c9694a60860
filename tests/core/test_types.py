"""The data types: validation that names the field, what was expected and what arrived."""

from __future__ import annotations

import pytest

from budgetloop import Budget, Completion, Message, Price, Stop, ToolCall, Usage


def test_stop_is_a_string_enum() -> None:
    assert Stop.MAX_COST_USD == "max_cost_usd"
    assert str(Stop.REPEATED) == "repeated"
    assert {s.value for s in Stop} == {
        "answered", "max_steps", "max_seconds", "max_cost_usd", "max_tool_calls", "max_input_tokens",
        "repeated", "model_error", "shared_budget", "held", "interrupted",
    }  # fmt: skip


def test_budget_defaults_and_validation() -> None:
    assert Budget() == Budget(
        max_steps=10, max_seconds=None, max_cost_usd=None, max_tool_calls=None
    )
    with pytest.raises(ValueError, match=r"Budget: max_steps must be an int >= 0 or None, got -1"):
        Budget(max_steps=-1)
    with pytest.raises(
        TypeError, match=r"Budget: max_cost_usd must be a finite number >= 0 or None, got str"
    ):
        Budget(max_cost_usd="a")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"Budget: max_steps must be an int >= 0 or None, got bool"
    ):
        Budget(max_steps=True)
    with pytest.raises(
        ValueError, match=r"Budget: max_seconds must be a finite number >= 0 or None, got nan"
    ):
        Budget(max_seconds=float("nan"))


def test_message_and_completion_validation() -> None:
    with pytest.raises(
        ValueError, match=r"Message: role must be one of system, user, assistant, tool, got 'bot'"
    ):
        Message("bot", "hi")
    assert Message("assistant", None, [ToolCall("f")]).tool_calls == (ToolCall("f", "{}"),)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"Completion: tool_calls must be a list of ToolCall, got str"
    ):
        Completion(tool_calls="f")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Completion: tool_calls\[0\] must be ToolCall, got dict"):
        Completion(tool_calls=[{"name": "f"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"Completion: text must be str or None, got int"):
        Completion(text=3)  # type: ignore[arg-type]


def test_usage_and_reported_cost_are_validated() -> None:
    with pytest.raises(TypeError, match=r"Usage: input_tokens must be an int >= 0, got str"):
        Usage("a", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Usage: output_tokens must be an int >= 0, got -1"):
        Usage(1, -1)
    with pytest.raises(
        ValueError,
        match=r"Usage: cache_read_tokens \+ cache_write_tokens must be at most input_tokens \(10\), got 11",
    ):
        Usage(10, 1, cache_read_tokens=6, cache_write_tokens=5)
    for bad in (float("nan"), -0.01, float("inf")):
        with pytest.raises(
            ValueError, match=r"Completion: cost_usd must be a finite number >= 0 or None"
        ):
            Completion(text="x", cost_usd=bad)
    for wrong in ("0.1", True):
        with pytest.raises(
            TypeError, match=r"Completion: cost_usd must be a finite number >= 0 or None"
        ):
            Completion(text="x", cost_usd=wrong)  # type: ignore[arg-type]


def test_message_fields_are_strings() -> None:
    for field, value, got in (
        ("content", 3, "int"),
        ("content", b"x", "bytes"),
        ("name", ["f"], "list"),
        ("tool_call_id", 1.5, "float"),
    ):
        with pytest.raises(TypeError, match=rf"Message: {field} must be str or None, got {got}"):
            Message("tool", **{field: value})  # type: ignore[arg-type]


def test_price_validation_follows_one_convention() -> None:
    with pytest.raises(
        TypeError, match=r"Price: input_per_mtok must be a finite number >= 0, got str"
    ):
        Price("a", 1)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"Price: output_per_mtok must be a finite number >= 0, got -1"
    ):
        Price(1, -1)
    with pytest.raises(
        ValueError,
        match=r"Price: cache_read_per_mtok must be a finite number >= 0 or None, got nan",
    ):
        Price(1, 1, cache_read_per_mtok=float("nan"))


def test_cached_tokens_are_billed_each_at_its_price() -> None:
    price = Price(3.0, 15.0, cache_read_per_mtok=0.30, cache_write_per_mtok=3.75)
    usage = Usage(1_000_000, 100_000, cache_read_tokens=600_000, cache_write_tokens=200_000)
    # 200k uncached x $3 + 600k read x $0.30 + 200k written x $3.75 + 100k out x $15, exactly
    assert (
        price.usage_pico(usage)
        == 600_000_000_000 + 180_000_000_000 + 750_000_000_000 + 1_500_000_000_000
    )
    assert price.usage_cost(Usage(10, 0)) == price.cost(10, 0)  # nothing cached: the input price
    # the projection's worst case prices every input token at the dearest rate
    assert price.worst_pico(1_000_000, 0) == 3_750_000_000_000
    assert Price(3.0, 15.0).worst_pico(7, 3) == Price(3.0, 15.0).pico(7, 3)


def test_a_calls_arguments_are_written_as_text_by_one_rule() -> None:
    from budgetloop._forms._redact import PLAIN, Redactor

    text = '{"city": "Zürich"}'
    as_dict = {"city": "Zürich", "when": [1, 2], "raw": b"x"}
    assert ToolCall("f", text).arguments_text == text  # a string as the model sent it
    assert (
        ToolCall("f", as_dict).arguments_text
        == '{"city": "Zürich", "when": [1, 2], "raw": "b\'x\'"}'
    )
    loop: dict[str, object] = {}
    loop["self"] = loop
    assert ToolCall("f", loop).arguments_text == "{'self': {...}}"  # what JSON cannot hold: repr
    for arguments in (text, as_dict, loop):  # the trace's forms write the same text
        assert PLAIN.arguments_text(arguments) == ToolCall("f", arguments).arguments_text  # type: ignore[arg-type]
    assert Redactor(lambda s: s.replace("Zürich", "[city]")).arguments_text(as_dict) == (
        '{"city": "[city]", "when": [1, 2], "raw": "b\'x\'"}'
    )


def test_a_column_of_dollars_keeps_one_precision() -> None:
    # issue 29, item 10: a cost column mixed $0.0135 and $0.013504, so it did not line up
    from budgetloop import format_usd

    column = [format_usd(v, column=True) for v in (0.0135, 0.013504, 0.0, 12_345.5)]
    assert column == ["$0.013500", "$0.013504", "$0.000000", "$12,345.500000"]
    assert {len(c.split(".")[1]) for c in column} == {6}
    assert format_usd(0.0135) == "$0.0135"  # a figure in a sentence keeps its short form
    assert format_usd(None, column=True) == "unknown"
    assert format_usd(2e-9, column=True) == "$2.0e-09"  # never a cost that reads as zero


def test_none_is_shown_as_none_in_a_message() -> None:
    with pytest.raises(TypeError) as info:
        Price(None, 1.0)  # type: ignore[arg-type]
    assert str(info.value) == "Price: input_per_mtok must be a finite number >= 0, got None."
    with pytest.raises(TypeError) as info:
        Budget(max_steps="3")  # type: ignore[arg-type]
    assert str(info.value) == "Budget: max_steps must be an int >= 0 or None, got str."
