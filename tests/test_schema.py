"""``@tool``: the JSON Schema a model is shown, built from hints and the docstring."""

from __future__ import annotations

from typing import Any, Literal, Optional

import pytest

from budgetloop import Tool, tool


def test_schema_from_hints_and_docstring() -> None:
    @tool
    def price(isin: str, when: Optional[str] = None, limit: int = 3) -> float:  # noqa: UP045
        """Look up the last price for an instrument.

        Uses the exchange's closing price.

        Args:
            isin: the twelve-character identifier
            when (str): a date, ISO format,
                or None for today
            limit: how many

        Returns:
            The price.
        """
        return 1.0

    assert price.name == "price"
    assert price.description == "Look up the last price for an instrument."
    assert price.schema == {
        "name": "price",
        "description": "Look up the last price for an instrument.",
        "parameters": {
            "type": "object",
            "properties": {
                "isin": {"type": "string", "description": "the twelve-character identifier"},
                "when": {
                    "type": ["string", "null"],
                    "description": "a date, ISO format, or None for today",
                    "default": None,
                },
                "limit": {"type": "integer", "description": "how many", "default": 3},
            },
            "required": ["isin"],
            "additionalProperties": False,
        },
    }
    assert price("SE0000108656") == 1.0  # still the function


@pytest.mark.parametrize(
    ("hint", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list[list[int]], {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
        (Literal[1, "x"], {"enum": [1, "x"]}),
        (int | None, {"type": ["integer", "null"]}),
        (Literal["a"] | None, {"anyOf": [{"enum": ["a"], "type": "string"}, {"type": "null"}]}),
        (list[int] | None, {"type": ["array", "null"], "items": {"type": "integer"}}),
        (Any | None, {}),
    ],
)  # fmt: skip
def test_supported_types(hint: Any, schema: dict[str, Any]) -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": hint}
    assert tool(f).schema["parameters"]["properties"]["x"] == schema


@pytest.mark.parametrize(
    ("hint", "shown"),
    [(set, "set"), (int | str, "int | str"), (dict[int, str], None), (tuple, "tuple"), (bytes, "bytes")],
)  # fmt: skip
def test_unsupported_types_fail_at_decoration_naming_function_and_parameter(
    hint: Any, shown: str | None
) -> None:
    def convert(amount):  # type: ignore[no-untyped-def]
        """Convert."""

    convert.__annotations__ = {"amount": hint}
    with pytest.raises(TypeError, match="tool convert: parameter 'amount'") as info:
        tool(convert)
    if shown is not None:
        assert f"type {shown} is not supported" in str(info.value)


def test_missing_hint_and_star_args_are_errors() -> None:
    def a(x, y: int):  # type: ignore[no-untyped-def]
        """A."""

    with pytest.raises(
        TypeError, match=r"tool a: parameter 'x' has no type hint; add one \(str, int"
    ):
        tool(a)

    def b(*items: int) -> None:
        """B."""

    with pytest.raises(TypeError, match=r"tool b: parameter 'items' is \*args or \*\*kwargs"):
        tool(b)


def test_name_and_description_overrides() -> None:
    @tool(name="get-price", description="Price of one instrument.")
    def price(isin: str) -> float:
        """Ignored here."""
        return 2.0

    assert isinstance(price, Tool)
    assert (price.name, price.description) == ("get-price", "Price of one instrument.")
    assert price.schema["name"] == "get-price"
    renamed = tool(price, name="other")
    assert renamed.name == "other"
    assert tool(price) is price
    with pytest.raises(ValueError, match="a tool name is 1 to 64 letters"):
        tool(name="has space")(lambda: None)


def test_no_docstring_and_no_parameters() -> None:
    def ping() -> str:
        return "pong"

    t = tool(ping)
    assert t.description == ""
    assert t.schema["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert t.__name__ == "ping"


def test_unresolvable_string_annotation_is_a_clear_error() -> None:
    def f(x: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        """F."""

    with pytest.raises(TypeError, match="tool f: cannot resolve type hints: name 'Missing'"):
        tool(f)
