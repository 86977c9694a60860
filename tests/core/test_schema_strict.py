"""``@tool(strict=True)``: a schema OpenAI's strict function calling accepts (every property
required, optional ones nullable, every object closed, no keyword strict mode rejects), checked
against the rules as OpenAI's documentation states them (``schema_support.strict_violations``);
null read back as "not given"; a type strict mode cannot express refused at decoration.

openai-agents' strict function schemas keep a default and list the property as required
without making it nullable; budgetloop says the default in the description and takes null for
it, as OpenAI's documentation suggests for optional fields.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Annotated, Any, TypedDict

import pytest

from budgetloop import ArgumentError, Completion, ScriptedModel, ToolCall, run, tool
from tests.schema_support import made, properties, received, strict_violations


class Unit(str, enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@dataclasses.dataclass
class Window:
    days: int
    start: str = "today"
    hourly: bool | None = None


class Place(TypedDict, total=False):
    city: str
    country: str


@dataclasses.dataclass
class Region:
    name: str
    parts: list[Region] = dataclasses.field(default_factory=list)


def forecast(
    city: str,
    window: Window,
    unit: Unit = Unit.C,
    days: int = 3,
    note: str | None = None,
    place: Place | None = None,
) -> str:
    """Forecast the weather.

    Args:
        city: The city.
        days: How many days ahead.
    """
    return f"{city} {window} {unit.value} {days} {note} {place}"


def test_every_property_required_optional_ones_nullable_every_object_closed() -> None:
    t = made(forecast, strict=True)
    parameters = t.schema["parameters"]
    assert strict_violations(parameters) == []
    assert t.schema["strict"] is True
    assert parameters["required"] == ["city", "window", "unit", "days", "note", "place"]
    assert properties(t)["days"] == {
        "type": ["integer", "null"],
        "description": "How many days ahead. (default: 3; null means the default)",
    }
    assert properties(t)["unit"] == {
        "type": ["string", "null"],
        "enum": ["celsius", "fahrenheit", None],
        "description": '(default: "celsius"; null means the default)',
    }
    assert properties(t)["note"] == {"type": ["string", "null"], "description": "(default: null)"}
    assert properties(t)["window"] == {
        "type": "object",
        "title": "Window",
        "properties": {
            "days": {"type": "integer"},
            "start": {"type": ["string", "null"],
                      "description": '(default: "today"; null means the default)'},
            "hourly": {"type": ["boolean", "null"], "description": "(default: null)"},
        },
        "required": ["days", "start", "hourly"],
        "additionalProperties": False,
    }  # fmt: skip
    place = properties(t)["place"]
    assert place["required"] == ["city", "country"]
    assert place["properties"]["city"] == {"type": ["string", "null"]}
    assert "strict" not in tool(forecast).schema


def test_null_means_not_given_unless_the_type_admits_none() -> None:
    t = made(forecast, strict=True)
    window = {"days": 2, "start": None, "hourly": None}
    got = received(t, {"city": "Oslo", "window": window, "unit": None, "days": None,
                       "note": None, "place": {"city": "Oslo", "country": None}})  # fmt: skip
    assert got == {
        "city": "Oslo",
        "window": Window(2, "today", None),
        "note": None,
        "place": {"city": "Oslo"},
    }


def test_the_tool_runs_with_its_defaults_and_the_trace_keeps_the_nulls_sent() -> None:
    seen = []

    @tool(strict=True)
    def book(room: str, nights: int = 1, breakfast: bool = False) -> str:
        """Book a room."""
        seen.append((room, nights, breakfast))
        return "booked"

    call = ToolCall("book", {"room": "12", "nights": None, "breakfast": True}, "c1")
    result = run(ScriptedModel([Completion(tool_calls=[call]), "ok"]), "go", tools=[book])
    assert seen == [("12", 1, True)]
    assert result.steps[0].tool_calls[0].arguments == {
        "room": "12",
        "nights": None,
        "breakfast": True,
    }


def test_a_strict_schema_requires_every_property() -> None:
    t = made(forecast, strict=True)
    with pytest.raises(ArgumentError) as info:
        received(t, {"city": "Oslo", "window": {"days": 1, "start": None, "hourly": None}})
    assert str(info.value) == "forecast.unit: missing required argument"
    with pytest.raises(ArgumentError) as info:
        received(t, {"city": "Oslo", "window": {"days": 1}, "unit": None, "days": None,
                     "note": None, "place": None})  # fmt: skip
    assert str(info.value) == "forecast.window.start: missing required field"


def test_a_type_that_refers_to_itself_and_a_described_reference() -> None:
    def survey(region: Region, other: Region | None = None) -> str:
        """Survey.

        Args:
            region: Where to look.
        """
        return ""

    t = made(survey, strict=True)
    parameters = t.schema["parameters"]
    assert strict_violations(parameters) == []
    # strict mode takes no keyword beside a $ref: a described one is its definition, inline
    assert properties(t)["region"]["description"] == "Where to look."
    assert properties(t)["region"]["properties"]["parts"] == {  # a factory: no default shown
        "type": ["array", "null"],
        "items": {"$ref": "#/$defs/Region"},
    }
    assert properties(t)["other"] == {
        "anyOf": [{"$ref": "#/$defs/Region"}, {"type": "null"}],
        "description": "(default: null)",
    }
    got = received(t, {"region": {"name": "N", "parts": [{"name": "S", "parts": None}]},
                       "other": None})  # fmt: skip
    assert got == {"region": Region("N", [Region("S")]), "other": None}


class Between:
    def __init__(self, **limits: Any) -> None:
        self.__dict__.update(limits)


@pytest.mark.parametrize(
    ("hint", "message"),
    [
        (dict[str, int], ": its schema must be one strict mode accepts, got an object with keys of its own choosing (dict[str, T]), and strict mode lists every key; use a TypedDict or a dataclass."),
        (Any, ": its schema must be one strict mode accepts, got a value of any type (Any), and strict mode needs a type for every value; give it one, or use strict=False."),
        (list, ": its schema must be one strict mode accepts, got a list of any values; say what it holds (list[str], list[int]...)."),
        (tuple[int, str], ": its schema must be one strict mode accepts, got a fixed-length tuple (prefixItems); use list[...] or a dataclass."),
        (Annotated[str, Between(max_length=5)], ": its schema must be one strict mode accepts, got a string's length limit (maxLength)."),
        (list[dict[str, int]], ", items: its schema must be one strict mode accepts, got an object with keys of its own choosing (dict[str, T]), and strict mode lists every key; use a TypedDict or a dataclass."),
        (Annotated[dict[str, Any], Between(min_length=1)], ": its schema must be one strict mode accepts, got a limit on an object's size (minProperties)."),
    ],
)  # fmt: skip
def test_a_type_strict_mode_cannot_express_is_refused_saying_why(hint: Any, message: str) -> None:
    # openai-agents refuses a Mapping parameter in strict mode alike.
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": hint}
    with pytest.raises(TypeError) as info:
        tool(f, strict=True)
    assert str(info.value) == f"tool f: parameter 'x'{message}"
    tool(f)  # the plain schema is fine


def test_what_strict_mode_keeps_or_leaves_out() -> None:
    def f(
        tags: set[str],
        size: Annotated[float, Between(ge=0, le=9)],
        ids: Annotated[list[int], Between(max_length=3)],
    ) -> None:
        """F."""

    t = made(f, strict=True)
    assert strict_violations(t.schema["parameters"]) == []
    assert properties(t) == {
        "tags": {"type": "array", "items": {"type": "string"}},  # uniqueItems is not accepted
        "size": {"type": "number", "minimum": 0, "maximum": 9},
        "ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    }
    assert received(t, {"tags": ["a", "a"], "size": 1, "ids": []}) == {
        "tags": {"a"},  # a set still: duplicates merge
        "size": 1.0,
        "ids": [],
    }


def test_strict_can_be_asked_of_a_tool_and_must_be_a_bool() -> None:
    plain = tool(functools.partial(forecast, note="x"), name="fc", description="Forecast.")
    strict = tool(plain, strict=True)
    assert (strict.name, strict.description, strict.strict) == ("fc", "Forecast.", True)
    assert tool(strict, strict=True) is strict
    assert strict_violations(strict.schema["parameters"]) == []
    with pytest.raises(TypeError) as info:
        tool(forecast, strict="yes")  # type: ignore[call-overload]
    assert str(info.value) == "tool: strict must be a bool, got str."
