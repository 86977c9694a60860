"""``@tool``: the JSON Schema a model is shown, built from hints and the docstring."""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any, Literal, Optional

import pytest

from budgetloop import Tool, tool
from budgetloop._schema._shapes import SUPPORTED


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
    description = "Look up the last price for an instrument.\n\nUses the exchange's closing price."
    assert price.description == description  # all the text before the first section
    assert price.schema == {
        "name": "price",
        "description": description,
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


class Opaque:
    """A class @tool cannot describe: no dataclass, TypedDict or pydantic model."""


@pytest.mark.parametrize(
    ("hint", "message"),
    [
        (bytes, f"type must be one of {SUPPORTED}, got bytes."),
        (complex, f"type must be one of {SUPPORTED}, got complex."),
        (Opaque, f"type must be one of {SUPPORTED}, got Opaque."),
        (typing.Callable[[int], int], f"type must be one of {SUPPORTED}, got Callable[[int], int]."),
        (dict[int, str], "dict keys must be str (JSON object keys), got int."),
        (set, "set must be given its item type (set[str], set[int]...) so the model knows what to send, got a bare set."),
        (set[list[int]], "set's items must be hashable, got set[list[int]], whose items are not; use list[list[int]], or set of a hashable type."),
    ],
)  # fmt: skip
def test_unsupported_types_fail_at_decoration_naming_function_and_parameter(
    hint: Any, message: str
) -> None:
    def convert(amount):  # type: ignore[no-untyped-def]
        """Convert."""

    convert.__annotations__ = {"amount": hint}
    with pytest.raises(TypeError) as info:
        tool(convert)
    assert str(info.value) == f"tool convert: parameter 'amount': {message}"
    assert SUPPORTED == (
        "str, int, float, bool, list[T], dict[str, T], tuple[...], set[T], Literal[...], an Enum, "
        "a union, a dataclass, a TypedDict, a pydantic model, Annotated[T, ...], Any"
    )


@dataclasses.dataclass
class Box:
    size: Missing  # type: ignore[name-defined]  # noqa: F821


class One(enum.Enum):
    ONE = 1


def test_what_tool_cannot_read_is_named_at_decoration() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    def refused(fn: Any) -> str:
        with pytest.raises(TypeError) as info:
            tool(fn)
        return str(info.value)

    assert refused(3) == "tool: fn must be a function, got int."
    assert refused(int) == (
        "tool: fn must be a callable whose parameters can be read, got <class 'int'> "
        "(ValueError: no signature found for builtin type <class 'int'>)."
    )
    inner: Any = int
    for _ in range(9):
        inner = list[inner]
    deep = inner
    for _ in range(51):
        deep = list[deep]
    f.__annotations__ = {"x": deep}
    assert refused(f) == (
        "tool f: type hints must be resolvable, got TypeError: an annotation must be nested at "
        f"most 50 levels deep, got one nested deeper, to {inner!r}."
    )
    f.__annotations__ = {"x": Box}
    assert refused(f) == (
        "tool f: parameter 'x' (Box): the hint of field 'size' must be resolvable, got "
        "NameError: name 'Missing' is not defined."
    )
    f.__annotations__ = {"x": Literal[1, b"x"]}
    assert refused(f) == (
        "tool f: parameter 'x': Literal values must be str, int, float, bool, None or members "
        "of an Enum with such values, got b'x'."
    )
    f.__annotations__ = {"x": Literal[1, One.ONE]}
    assert refused(f) == "tool f: parameter 'x': Literal values must be distinct, got 1 twice."


def test_missing_hint_is_an_error() -> None:
    def a(x, y: int):  # type: ignore[no-untyped-def]
        """A."""

    with pytest.raises(TypeError) as info:
        tool(a)
    assert str(info.value) == (
        f"tool a: parameter 'x' must be given a type hint, got none; add one ({SUPPORTED})."
    )


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
    with pytest.raises(ValueError, match="name must be") as info:
        tool(name="has space")(lambda: None)
    assert str(info.value) == (
        "tool: name must be 1 to 64 letters, digits, '_' or '-', got 'has space'; pass name=... "
        "to choose one."
    )


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

    with pytest.raises(TypeError) as info:
        tool(f)
    assert str(info.value) == (
        "tool f: type hints must be resolvable, got NameError: name 'Missing' is not defined."
    )


# -- defaults must fit their hints; hints inside generics may be strings -----------------------


@pytest.mark.parametrize(
    ("hint", "default", "message"),
    [
        (int, "abc", "tool convert: parameter 'amount': default must be int (its hint), got 'abc' (default: expected integer, got str)."),
        (int, "3", "tool convert: parameter 'amount': default must be int (its hint), got '3' (default: expected integer, got str)."),
        (int, 3.0, "tool convert: parameter 'amount': default must be int (its hint), got 3.0 (default: expected integer, got float)."),
        (str, None, "tool convert: parameter 'amount': default must be str (its hint), got None (default: expected string, got null)."),
        (list[int], [1, "x"], "tool convert: parameter 'amount': default must be list[int] (its hint), got [1, 'x'] (default[1]: expected integer, got str)."),
        (Literal["a", "b"], "c", "tool convert: parameter 'amount': default must be Literal['a', 'b'] (its hint), got 'c' (default: expected one of \"a\", \"b\", got \"c\")."),
    ],
)  # fmt: skip
def test_a_default_that_does_not_fit_its_hint_is_a_type_error_at_decoration(
    hint: Any, default: Any, message: str
) -> None:
    def convert(amount):  # type: ignore[no-untyped-def]
        """Convert."""

    convert.__annotations__ = {"amount": hint}
    convert.__defaults__ = (default,)
    with pytest.raises(TypeError) as info:
        tool(convert)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("hint", "default", "shown"),
    [
        (float, float("nan"), "a finite number, got nan"),
        (float | None, float("inf"), "a finite number, got inf"),
        (
            Any,
            [1.0, float("-inf")],
            "one holding finite numbers only, got [1.0, -inf], which holds -inf",
        ),
        (
            dict[str, float],
            {"k": float("nan")},
            "one holding finite numbers only, got {'k': nan}, which holds nan",
        ),
    ],
)
def test_a_default_that_is_not_a_finite_number_is_a_value_error(
    hint: Any, default: Any, shown: str
) -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": hint}
    f.__defaults__ = (default,)
    with pytest.raises(ValueError, match="default must be") as info:
        tool(f)
    assert str(info.value) == (
        f"tool f: parameter 'x': default must be {shown}; a default is shown to the model as "
        "JSON, which has no NaN or infinity (use None for 'no value')."
    )


def test_defaults_that_fit_are_kept_in_the_schema() -> None:
    @tool
    def f(a: float = 1, b: int | None = None, c: list[str] = [], d: Any = float) -> None:  # noqa: B006
        """F."""

    properties = f.schema["parameters"]["properties"]
    assert [properties[k].get("default", "none") for k in "abcd"] == [1, None, [], "none"]


def test_literal_with_no_values_is_a_type_error() -> None:
    def pick(choice):  # type: ignore[no-untyped-def]
        """Pick."""

    pick.__annotations__ = {"choice": Literal[()]}
    with pytest.raises(TypeError) as info:
        tool(pick)
    assert str(info.value) == (
        "tool pick: parameter 'choice': Literal must be given at least one value, got "
        "Literal[()], which no argument could fit."
    )


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        ("list['int']", {"type": "array", "items": {"type": "integer"}}),
        ("dict[str, 'float']", {"type": "object", "additionalProperties": {"type": "number"}}),
        ("Optional['int']", {"type": ["integer", "null"]}),
        ("list[list['str']] | None", {"type": ["array", "null"], "items": {"type": "array", "items": {"type": "string"}}}),
        ("Literal['int']", {"enum": ["int"], "type": "string"}),
    ],
)  # fmt: skip
def test_strings_inside_generics_resolve_as_get_type_hints_would(
    annotation: str, schema: dict[str, Any]
) -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": annotation}
    assert tool(f).schema["parameters"]["properties"]["x"] == schema
    hint = typing.get_type_hints(f)["x"]  # the same hint, resolved by typing itself
    f.__annotations__ = {"x": hint}
    assert tool(f).schema["parameters"]["properties"]["x"] == schema


def test_list_of_a_string_in_a_plain_annotation_resolves() -> None:
    def f(x: list["int"]) -> None:  # noqa: UP037 - the spelling under test
        """F."""

    assert tool(f).schema["parameters"]["properties"]["x"] == {
        "type": "array",
        "items": {"type": "integer"},
    }
