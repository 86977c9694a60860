"""Types as tools use them: Enums, unions, tuples and sets, TypedDicts and dataclasses (nested,
and referring to themselves), Annotated constraints. For each: the schema the model is shown,
what the check accepts and the words of what it refuses, and what the tool receives, while the
trace keeps the JSON the model sent.

Cases restated from the peers' suites (their signatures and expectations, in our words):
openai-agents' str Enum and Literal parameters, smolagents' tuple, union and nested-list
parameters, pydantic-ai's TypedDict parameter.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import typing
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from budgetloop import ArgumentError, Completion, ScriptedModel, ToolCall, replay, run, tool
from budgetloop._schema._check import check_arguments
from tests.schema_support import made, properties, received


def refused(t: Any, arguments: dict[str, Any]) -> str:
    with pytest.raises(ArgumentError) as info:
        received(t, arguments)
    return str(info.value)


# -- Enum, IntEnum, StrEnum, Literal of members ------------------------------------------------------


class Color(str, enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    ONE = 1
    NAME = "name"


def test_enum_and_literal_parameters() -> None:
    # openai-agents: a str Enum and a Literal of strings; a value outside either is refused.
    def paint(color: Color, finish: Literal["matte", "gloss"]) -> str:
        """Paint."""
        return f"{color.value} {finish}"

    t = made(paint)
    assert properties(t) == {
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "finish": {"type": "string", "enum": ["matte", "gloss"]},
    }
    assert received(t, {"color": "green", "finish": "matte"}) == {
        "color": Color.GREEN,
        "finish": "matte",
    }
    assert refused(t, {"color": "pink", "finish": "matte"}) == (
        'paint.color: expected one of "red", "green", "blue", got "pink"'
    )
    assert refused(t, {"color": "red", "finish": "satin"}) == (
        'paint.finish: expected one of "matte", "gloss", got "satin"'
    )


def test_int_enum_mixed_enum_and_literal_of_members() -> None:
    def pick(level: Level, mixed: Mixed, only: Literal[Color.RED, Color.BLUE] = Color.RED) -> str:
        """Pick."""
        return ""

    t = made(pick)
    assert properties(t) == {
        "level": {"type": "integer", "enum": [1, 2]},
        "mixed": {"enum": [1, "name"]},
        "only": {"type": "string", "enum": ["red", "blue"], "default": "red"},
    }
    got = received(t, {"level": 2, "mixed": "name", "only": "blue"})
    assert got == {"level": Level.HIGH, "mixed": Mixed.NAME, "only": Color.BLUE}
    assert type(got["level"]) is Level
    assert refused(t, {"level": True, "mixed": 1}) == "pick.level: expected one of 1, 2, got true"
    assert refused(t, {"level": "2", "mixed": 1}) == 'pick.level: expected one of 1, 2, got "2"'


@pytest.mark.skipif(sys.version_info < (3, 11), reason="enum.StrEnum is new in 3.11")
def test_str_enum() -> None:
    Size = enum.StrEnum("Size", {"S": "small", "L": "large"})  # type: ignore[attr-defined]

    def order(size):  # type: ignore[no-untyped-def]
        """Order."""
        return size

    order.__annotations__ = {"size": Size}
    t = made(order)
    assert properties(t) == {"size": {"type": "string", "enum": ["small", "large"]}}
    assert received(t, {"size": "large"}) == {"size": Size.L}


def test_the_tool_receives_the_member_and_the_trace_keeps_the_json_value() -> None:
    seen = []

    @tool
    def paint(color: Color, level: Level = Level.LOW) -> Color:
        """Paint."""
        seen.append((color, level))
        return color

    calls = [ToolCall("paint", {"color": "blue", "level": 2}, "c1")]
    result = run(ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[paint])
    call = result.steps[0].tool_calls[0]
    assert seen == [(Color.BLUE, Level.HIGH)]
    assert call.arguments == {"color": "blue", "level": 2}
    assert type(call.arguments["color"]) is str
    assert call.result == "blue"  # an Enum result: its value


def test_enums_that_json_cannot_name_are_refused_at_decoration() -> None:
    class Shape(enum.Enum):
        POINT = (0, 0)

    class Empty(enum.Enum):
        pass

    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": Shape}
    with pytest.raises(TypeError) as info:
        tool(f)
    assert str(info.value) == (
        "tool f: parameter 'x': the values of the Enum Shape must be str, int, float, bool or "
        "None so that a JSON value can name its members, got (0, 0)."
    )
    f.__annotations__ = {"x": Empty}
    with pytest.raises(TypeError) as info:
        tool(f)
    assert str(info.value) == (
        "tool f: parameter 'x': the Enum Empty must be given members to choose from, got none."
    )


# -- unions ----------------------------------------------------------------------------------------


def test_a_union_is_any_of_its_branches_and_a_value_keeps_the_branch_it_fits_as_sent() -> None:
    # smolagents: int | str. (smolagents writes a list of types; budgetloop writes anyOf.)
    def process(value: int | str, limit: int | str | None = None) -> str:
        """Process."""
        return ""

    t = made(process)
    assert properties(t) == {
        "value": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "limit": {
            "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
            "default": None,
        },
    }
    assert received(t, {"value": "3"}) == {"value": "3"}  # fits str as sent: not coerced
    assert received(t, {"value": 3, "limit": None}) == {"value": 3, "limit": None}
    assert check_arguments(t, {"value": "3"}) == ({"value": "3"}, [])


def test_the_one_coercion_applies_only_when_no_branch_fits_as_sent() -> None:
    def total(x: list[int] | bool) -> int:
        """Total."""
        return 0

    t = made(total)
    assert check_arguments(t, {"x": ["1", 2]}) == ({"x": [1, 2]}, ["total.x[0]"])
    assert check_arguments(t, {"x": True}) == ({"x": True}, [])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "f.x: expected integer or string, got bool"),
        (None, "f.x: expected integer or string, got null"),
    ],
)
def test_a_value_no_branch_fits_names_every_branch(value: Any, message: str) -> None:
    def f(x: int | str) -> None:
        """F."""

    assert refused(made(f), {"x": value}) == message


def test_a_branch_that_fails_deeper_says_where() -> None:
    def f(x: int | list[int], c: Literal["a", "b"] | int) -> None:
        """F."""

    t = made(f)
    assert refused(t, {"x": [1, "a"], "c": 1}) == (
        "f.x: expected integer or array, got list (as array: f.x[1]: expected integer, got str)"
    )
    assert refused(t, {"x": 1, "c": "z"}) == (
        'f.c: expected one of "a", "b" or integer, got str '
        '(as one of "a", "b": f.c: expected one of "a", "b", got "z")'
    )


def test_each_branch_converts_as_its_own_type() -> None:
    def f(x: Color | int, y: Point | Circle) -> None:
        """F."""

    t = made(f)
    assert received(t, {"x": "red", "y": {"r": 2}}) == {"x": Color.RED, "y": Circle(2.0)}
    assert received(t, {"x": 5, "y": {"x": 1, "y": 2}}) == {"x": 5, "y": Point(1.0, 2.0)}


# -- tuples, sets, frozensets ------------------------------------------------------------------------


def test_tuples_and_sets() -> None:
    # smolagents: a fixed tuple is an array with prefixItems; an optional one too.
    def process(
        items: list[str],
        point: tuple[int, int],
        sizes: tuple[float, ...],
        tags: set[str],
        ids: frozenset[int],
        y: tuple[str, str, float] | None = None,
    ) -> None:
        """Process."""

    t = made(process)
    assert properties(t) == {
        "items": {"type": "array", "items": {"type": "string"}},
        "point": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                  "minItems": 2, "maxItems": 2},
        "sizes": {"type": "array", "items": {"type": "number"}},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "y": {"type": ["array", "null"],
              "prefixItems": [{"type": "string"}, {"type": "string"}, {"type": "number"}],
              "minItems": 3, "maxItems": 3, "default": None},
    }  # fmt: skip
    args = {"items": ["a"], "point": [1, 2], "sizes": [1.5], "tags": ["x", "y"], "ids": [3],
            "y": ["a", "b", 1]}  # fmt: skip
    got = received(t, args)
    assert got == {"items": ["a"], "point": (1, 2), "sizes": (1.5,), "tags": {"x", "y"},
                   "ids": frozenset({3}), "y": ("a", "b", 1.0)}  # fmt: skip
    assert type(got["ids"]) is frozenset


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"point": [1, 2, 3]}, "process.point: expected 2 items, got 3"),
        ({"point": [1]}, "process.point: expected 2 items, got 1"),
        ({"point": [1, "x"]}, "process.point[1]: expected integer, got str"),
        ({"tags": ["a", "b", "a"]}, 'process.tags: expected unique items, got item 2 equal to item 0 ("a")'),
        ({"ids": [1, 1.0]}, "process.ids: expected unique items, got item 1 equal to item 0 (1)"),
    ],
)  # fmt: skip
def test_tuple_lengths_and_set_duplicates_are_refused(
    change: dict[str, Any], message: str
) -> None:
    def process(point: tuple[int, int], tags: set[str], ids: set[int]) -> None:
        """Process."""

    args = {"point": [1, 2], "tags": ["a"], "ids": [1], **change}
    assert refused(made(process), args) == message


def test_a_set_of_unhashable_items_is_refused_at_decoration() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    for hint, shown in [
        (set[dict[str, int]], "set[dict[str, int]]"),
        (frozenset[Point], "frozenset[Point]"),
        (set[Any], "set[Any]"),
    ]:
        f.__annotations__ = {"x": hint}
        with pytest.raises(TypeError) as info:
            tool(f)
        kind, items = shown.split("[", 1)
        assert str(info.value) == (
            f"tool f: parameter 'x': {kind}'s items must be hashable, got {shown}, whose items "
            f"are not; use list[{items}, or {kind} of a hashable type."
        )


# -- dataclasses, TypedDict, nesting, self-reference ----------------------------------------------


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass
class Circle:
    r: float


@dataclasses.dataclass(frozen=True)
class Tag:
    name: str


@dataclasses.dataclass
class Shape:
    """A shape."""

    kind: Literal["line", "polygon"]
    points: list[Point]
    label: str = "unnamed"
    tags: set[Tag] = dataclasses.field(default_factory=set)
    note: str | None = dataclasses.field(default=None, metadata={"description": "Free text."})

    def __post_init__(self) -> None:
        if self.kind == "line" and len(self.points) != 2:
            raise ValueError(f"a line has 2 points, got {len(self.points)}")


class Movie(TypedDict):
    title: str
    year: int


class Draft(TypedDict, total=False):
    title: str
    shape: Shape


POINT = {"type": "object", "title": "Point", "properties": {"x": {"type": "number"},
         "y": {"type": "number"}}, "required": ["x", "y"], "additionalProperties": False}  # fmt: skip


def test_dataclass_parameters_nested_in_lists_dicts_and_optionals() -> None:
    def draw(shape: Shape, extra: dict[str, Point], maybe: Optional[Point] = None) -> None:  # noqa: UP045
        """Draw."""

    t = made(draw)
    assert properties(t) == {
        "shape": {
            "type": "object",
            "title": "Shape",
            "properties": {
                "kind": {"type": "string", "enum": ["line", "polygon"]},
                "points": {"type": "array", "items": POINT},
                "label": {"type": "string", "default": "unnamed"},
                "tags": {"type": "array", "uniqueItems": True, "items": {
                    "type": "object", "title": "Tag", "properties": {"name": {"type": "string"}},
                    "required": ["name"], "additionalProperties": False}},
                "note": {"type": ["string", "null"], "description": "Free text.", "default": None},
            },
            "required": ["kind", "points"],
            "additionalProperties": False,
        },
        "extra": {"type": "object", "additionalProperties": POINT},
        "maybe": {"type": ["object", "null"], **{k: v for k, v in POINT.items() if k != "type"},
                  "default": None},
    }  # fmt: skip
    line = {
        "kind": "line",
        "points": [{"x": 0, "y": 0}, {"x": 1, "y": "2"}],
        "tags": [{"name": "a"}],
    }
    got = received(t, {"shape": line, "extra": {"o": {"x": 0, "y": 0}}})
    assert got == {
        "shape": Shape("line", [Point(0, 0), Point(1, 2)], tags={Tag("a")}),
        "extra": {"o": Point(0, 0)},
    }
    assert received(t, {"shape": line, "extra": {}, "maybe": None})["maybe"] is None


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"kind": "line"}, "draw.shape.points: missing required field"),
        ({"kind": "line", "points": [], "colour": "red"}, "draw.shape.colour: unknown field; expected kind, points, label, tags, note"),
        ({"kind": "line", "points": [{"x": 1}]}, "draw.shape.points[0].y: missing required field"),
        ({"kind": "line", "points": [{"x": 1, "y": 2}]}, "draw.shape: could not make a Shape from this value (ValueError: a line has 2 points, got 1)"),
    ],
)  # fmt: skip
def test_what_a_dataclass_refuses_names_the_field(shape: dict[str, Any], message: str) -> None:
    def draw(shape: Shape) -> None:
        """Draw."""

    assert refused(made(draw), {"shape": shape}) == message


def test_a_class_refusing_its_value_is_an_error_result_the_model_reads() -> None:
    @tool
    def draw(shape: Shape) -> str:
        """Draw."""
        return "drawn"

    bad = ToolCall("draw", {"shape": {"kind": "line", "points": []}}, "c1")
    model = ScriptedModel([Completion(tool_calls=[bad]), "ok"])
    run(model, "go", tools=[draw])
    assert model.requests[1].messages[-1].content == (
        "error: draw.shape: could not make a Shape from this value (ValueError: a line has 2 "
        "points, got 0)"
    )


def test_typed_dicts_total_and_not() -> None:
    # pydantic-ai: a TypedDict parameter is an object with its keys required.
    def save(movie: Movie, draft: Draft) -> None:
        """Save."""

    t = made(save)
    assert properties(t)["movie"] == {
        "type": "object",
        "title": "Movie",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title", "year"],
        "additionalProperties": False,
    }
    assert properties(t)["draft"]["required"] == []
    got = received(t, {"movie": {"title": "Heat", "year": 1995}, "draft": {"shape": {
        "kind": "polygon", "points": []}}})  # fmt: skip
    assert got == {"movie": {"title": "Heat", "year": 1995},
                   "draft": {"shape": Shape("polygon", [])}}  # fmt: skip
    assert type(got["movie"]) is dict
    assert refused(t, {"movie": {"title": "Heat"}, "draft": {}}) == (
        "save.movie.year: missing required field"
    )


if hasattr(typing, "NotRequired"):

    class Listing(TypedDict):
        title: str
        price: typing.NotRequired[float]

    class Query(TypedDict, total=False):
        text: typing.Required[str]
        page: int


@pytest.mark.skipif(not hasattr(typing, "NotRequired"), reason="typing.NotRequired is new in 3.11")
def test_required_and_not_required_keys_even_in_string_annotations() -> None:
    # This module's annotations are strings, which typing itself reads as plain keys.
    def search(listing: Listing, query: Query) -> None:
        """Search."""

    t = made(search)
    assert properties(t)["listing"]["required"] == ["title"]
    assert properties(t)["query"]["required"] == ["text"]
    assert properties(t)["listing"]["properties"]["price"] == {"type": "number"}
    assert received(t, {"listing": {"title": "a"}, "query": {"text": "b"}}) == {
        "listing": {"title": "a"},
        "query": {"text": "b"},
    }


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Person:
    name: str
    employer: Company | None = None


@dataclasses.dataclass
class Company:
    name: str
    staff: list[Person] = dataclasses.field(default_factory=list)


class Tree(TypedDict):
    label: str
    kids: list[Tree]


def test_types_that_refer_to_themselves_are_defs_and_refs() -> None:
    def walk(root: Node, boss: Person, tree: Tree) -> None:
        """Walk."""

    t = made(walk)
    parameters = t.schema["parameters"]
    assert properties(t) == {
        "root": {"$ref": "#/$defs/Node"},
        "boss": {"$ref": "#/$defs/Person"},
        "tree": {"$ref": "#/$defs/Tree"},
    }
    assert parameters["$defs"]["Node"] == {
        "type": "object",
        "title": "Node",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["value"],
        "additionalProperties": False,
    }
    assert set(parameters["$defs"]) == {"Node", "Person", "Tree"}
    company = parameters["$defs"]["Person"]["properties"]["employer"]
    assert company["type"] == ["object", "null"]
    assert company["properties"]["staff"]["items"] == {"$ref": "#/$defs/Person"}
    got = received(t, {
        "root": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
        "boss": {"name": "A", "employer": {"name": "Co", "staff": [{"name": "B"}]}},
        "tree": {"label": "t", "kids": [{"label": "u", "kids": []}]},
    })  # fmt: skip
    assert got["root"] == Node(1, [Node(2, [Node(3)])])
    assert got["boss"] == Person("A", Company("Co", [Person("B")]))
    assert refused(t, {**got, "root": {"value": 1, "children": [{"value": "x"}]}}) == (
        "walk.root.children[0].value: expected integer, got str"
    )


def test_a_deeply_nested_value_of_a_recursive_type_is_an_error_not_a_crash() -> None:
    @tool
    def walk(root: Node) -> str:
        """Walk."""
        return "ok"

    value: dict[str, Any] = {"value": 0}
    for _ in range(45):  # 92 levels: within what a trace keeps, past what the check enters
        value = {"value": 0, "children": [value]}
    model = ScriptedModel([Completion(tool_calls=[ToolCall("walk", {"root": value}, "c")]), "ok"])
    result = run(model, "go", tools=[walk])
    assert result.stop == "answered"
    error = result.steps[0].tool_calls[0].error
    assert error is not None
    assert error.startswith("walk.root.children[0].children[0]")
    assert error.endswith(": nested too deeply to check")


# -- Annotated constraints, read by duck typing ---------------------------------------------------------


class Between:
    """Constraints as an object exposes them (pydantic's Field and annotated-types do)."""

    def __init__(self, **limits: Any) -> None:
        self.__dict__.update(limits)


def test_annotated_constraints_are_schema_keywords_and_are_checked() -> None:
    def rate(
        score: Annotated[int, Between(ge=0, le=10), "A score out of ten"],
        weight: Annotated[float, Between(gt=0, lt=1)],
        code: Annotated[str, Between(min_length=2, max_length=3, pattern="^[A-Z]+$")],
        tags: Annotated[list[str], Between(max_length=2)] = [],  # noqa: B006
    ) -> None:
        """Rate."""

    t = made(rate)
    assert properties(t) == {
        "score": {"type": "integer", "minimum": 0, "maximum": 10, "description": "A score out of ten"},
        "weight": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "code": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "default": []},
    }  # fmt: skip
    good = {"score": 10, "weight": 0.5, "code": "AB"}
    assert received(t, good) == good
    for change, message in [
        ({"score": 11}, "rate.score: expected a number <= 10, got 11"),
        ({"score": "-1"}, "rate.score: expected a number >= 0, got -1"),
        ({"weight": 1}, "rate.weight: expected a number < 1, got 1.0"),
        ({"code": "A"}, "rate.code: expected 2 to 3 characters, got 1"),
        ({"code": "ab"}, 'rate.code: expected a string matching ^[A-Z]+$, got "ab"'),
        ({"tags": ["a", "b", "c"]}, "rate.tags: expected at most 2 items, got 3"),
    ]:
        assert refused(t, {**good, **change}) == message


@pytest.mark.parametrize(
    ("hint", "default", "error", "message"),
    [
        (Annotated[str, Between(ge=1)], "x", TypeError, " (str): what ge=1 applies to must be a number, got a string."),
        (Annotated[int, Between(pattern="^a")], 1, TypeError, " (int): what pattern='^a' applies to must be a string, got an int."),
        (Annotated[int | None, Between(max_length=3)], None, TypeError, " (int | None): what max_length=3 applies to must be a string, list or dict, got an int or None."),
        (Annotated[Any, Between(min_length=1)], None, TypeError, " (Any): what min_length=1 applies to must be a string, list or dict, got any value (Any)."),
        (Annotated[int, Between(ge="1")], 1, TypeError, " (int): ge must be a number, got str."),
        (Annotated[str, Between(pattern="(")], "x", ValueError, " (str): pattern must be a regular expression, got '(' (missing ), unterminated subpattern at position 0)."),
        (Annotated[int, Between(ge=5)], 1, TypeError, ": default must be Annotated[int, {between}] (its hint), got 1 (default: expected a number >= 5, got 1)."),
    ],
)  # fmt: skip
def test_constraints_that_cannot_apply_are_errors_at_decoration(
    hint: Any, default: Any, error: type[Exception], message: str
) -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": hint}
    f.__defaults__ = (default,)
    with pytest.raises(error) as info:
        tool(f)
    between = typing.get_args(hint)[1]
    assert str(info.value) == "tool f: parameter 'x'" + message.replace("{between}", repr(between))


def test_other_annotated_metadata_is_ignored() -> None:
    def f(x: Annotated[int, object(), 42, Between(unrelated=True)]) -> None:
        """F."""

    assert properties(made(f)) == {"x": {"type": "integer"}}


def test_defaults_of_the_new_types_are_shown_as_json() -> None:
    def f(
        color: Color = Color.RED,
        point: Point = Point(0, 1),  # noqa: B008
        pair: tuple[int, int] = (1, 2),
        tags: frozenset[str] = frozenset({"b", "a"}),
    ) -> None:
        """F."""

    assert [p["default"] for p in properties(made(f)).values()] == [
        "red", {"x": 0, "y": 1}, [1, 2], ["a", "b"],
    ]  # fmt: skip


def test_a_replay_checks_recorded_arguments_against_the_recorded_defs() -> None:
    @tool
    def walk(root: Node, color: Color) -> str:
        """Walk."""
        return f"{color.value} {len(root.children)}"

    good = {"root": {"value": 1, "children": [{"value": 2}]}, "color": "red"}
    bad = {"root": {"value": 1, "children": [{"value": "x"}]}, "color": "red"}
    calls = [ToolCall("walk", good, "c1"), ToolCall("walk", bad, "c2")]
    result = run(ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[walk])
    again = replay(result)
    assert [c.result or c.error for c in again.steps[0].tool_calls] == [
        "red 1",
        "walk.root.children[0].value: expected integer, got str",
    ]
    assert again.steps[0].tool_calls == result.steps[0].tool_calls


@dataclasses.dataclass
class Secret:
    name: str
    salt: dataclasses.InitVar[str]


UserId = typing.NewType("UserId", int)


def test_odd_corners_are_named_at_decoration() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        """F."""

    f.__annotations__ = {"x": Secret}
    with pytest.raises(TypeError) as info:
        tool(f)
    assert str(info.value) == (
        "tool f: parameter 'x' (Secret): what its __init__ needs must be fields a model can "
        "send, got 'salt' (an InitVar, or an __init__ of its own); give it a default."
    )
    f.__annotations__ = {"x": Literal[1.5, float("nan")]}
    with pytest.raises(ValueError, match="each value must be") as info:
        tool(f)
    assert str(info.value) == (
        "tool f: parameter 'x': each value must be one JSON can send (it has no NaN or "
        "infinity), got nan."
    )
    f.__annotations__ = {"x": UserId}  # a NewType is its supertype
    assert properties(made(f)) == {"x": {"type": "integer"}}


@dataclasses.dataclass
class Left:
    x: Left | Right | None = None
    n: int = 0


@dataclasses.dataclass
class Right:
    x: Left | Right | None = None
    n: int = 0


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("bottom", "depth"), [("x", 30), ("5", 20)])
def test_nested_unions_are_checked_in_time_linear_in_the_value(bottom: str, depth: int) -> None:
    # Two branches that take the same shape, nested: retrying every branch at every level is
    # 2 ** depth checks (this took minutes at depth 14); known failures are not retried.
    def f(a: Left) -> None:
        """F."""

    value: dict[str, Any] = {"n": bottom}
    for _ in range(depth):
        value = {"x": value}
    t = made(f)
    if bottom == "5":  # fits once the number written as a string is read as one
        _, coerced = check_arguments(t, {"a": value})
        assert coerced == ["f.a" + ".x" * depth + ".n"]
        assert received(t, {"a": value})["a"].x.x.x is not None
        return
    message = refused(t, {"a": value})
    assert message == (
        "f.a.x: expected Left or Right or null, got dict (as Left: f.a.x.x: expected Left or "
        "Right or null, got dict; as Right: f.a.x.x: expected Left or Right or null, got dict)"
    )


def test_a_value_too_deep_for_the_check_says_so_through_unions() -> None:
    def f(a: Left) -> None:
        """F."""

    value: dict[str, Any] = {"n": 1}
    for _ in range(95):  # 98 levels: within what a trace keeps, past what the check enters
        value = {"x": value}
    message = refused(made(f), {"a": value})
    assert message.startswith("f.a.x.x.x.x.x")
    assert message.endswith(": nested too deeply to check")
