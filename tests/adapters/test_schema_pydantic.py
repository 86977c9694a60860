"""pydantic models and Fields, found by duck typing (budgetloop's core never imports pydantic):
a model parameter's schema is the model's own; the tool receives ``Model.model_validate`` of
the value; a validation error is the error the model reads, naming the field; ``Field``
constraints in ``Annotated`` are schema keywords and are checked; a model result is JSON.

Not in ``tasks.py``'s CORE_TESTS: the other Pythons' venvs have no pydantic. Cases restate
pydantic-ai's model-parameter tests and openai-agents' nested-model and Field tests.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pydantic = pytest.importorskip("pydantic")

from pydantic import BaseModel, Field, field_validator  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

from budgetloop import ArgumentError, Completion, ScriptedModel, ToolCall, run, tool  # noqa: E402
from budgetloop._schema._check import check_arguments  # noqa: E402
from tests.core.test_check_fuzz import values_for  # noqa: E402
from tests.schema_support import VALIDATOR, made, properties, received  # noqa: E402


class Foo(BaseModel):
    x: int
    y: str


class Inner(BaseModel):
    a: int
    b: str


class Pair(TypedDict):
    a: int
    b: str


class Outer(BaseModel):
    inner: Inner
    pair: Pair


class Item(BaseModel):
    name: str
    qty: int = Field(gt=0, description="How many.")

    @field_validator("name")
    @classmethod
    def no_digits(cls, value: str) -> str:
        if any(c.isdigit() for c in value):
            raise ValueError("a name has no digits")
        return value


class Order(BaseModel):
    items: list[Item]
    note: Optional[str] = None  # noqa: UP045


class Node(BaseModel):
    value: int
    children: list[Node] = []


def refused(t: object, arguments: dict[str, object]) -> str:
    with pytest.raises(ArgumentError) as info:
        received(t, arguments)  # type: ignore[arg-type]
    return str(info.value)


def test_a_model_parameter_is_the_models_schema_and_the_tool_gets_an_instance() -> None:
    # pydantic-ai's takes_just_model: (pydantic-ai lifts a lone model's fields to the top;
    # budgetloop keeps the parameter, and inlines a model that does not refer to itself.)
    def takes_model(model: Foo, z: int) -> str:
        return f"{model.x} {model.y} {z}"

    t = made(takes_model)
    assert properties(t) == {
        "model": {
            "type": "object",
            "title": "Foo",
            "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
            "required": ["x", "y"],
        },
        "z": {"type": "integer"},
    }
    got = received(t, {"model": {"x": 0, "y": "a"}, "z": 0})
    assert got == {"model": Foo(x=0, y="a"), "z": 0}
    assert t.fn(**got) == "0 a 0"


def test_nested_models_and_a_typed_dict_inside_a_model() -> None:
    # openai-agents' complex_args_function: an outer model holding a model and a TypedDict.
    def describe(model: Outer, some_flag: int = 0) -> str:
        """Describe a model.

        Args:
            model: A model with an inner and a pair field.
            some_flag: An optional flag.
        """
        return (
            f"{model.inner.a}, {model.inner.b}, {model.pair['a']}, {model.pair['b']}, {some_flag}"
        )

    t = made(describe)
    assert properties(t)["model"]["description"] == "A model with an inner and a pair field."
    assert properties(t)["some_flag"] == {
        "type": "integer", "description": "An optional flag.", "default": 0,
    }  # fmt: skip
    value = Outer(inner=Inner(a=1, b="hello"), pair={"a": 2, "b": "world"}).model_dump()
    assert t.fn(**received(t, {"model": value})) == "1, hello, 2, world, 0"
    assert refused(t, {"model": value, "some_flag": "not an int"}) == (
        "describe.some_flag: expected integer, got str"
    )


def test_a_validation_error_names_the_field_and_reaches_the_model() -> None:
    @tool
    def place(order: Order) -> str:
        """Place an order."""
        return "placed"

    calls = [
        ToolCall("place", {"order": {"items": [{"name": "tea", "qty": "2"}]}}, "c1"),
        ToolCall("place", {"order": {"items": [{"name": "t3a", "qty": 1}]}}, "c2"),
        ToolCall("place", {"order": {"items": [{"name": "tea", "qty": 0}]}}, "c3"),
    ]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    result = run(model, "go", tools=[place])
    records = result.steps[0].tool_calls
    assert records[0].result == "placed"
    assert records[0].arguments == {"order": {"items": [{"name": "tea", "qty": 2}]}}
    assert records[0].coerced == ("place.order.items[0].qty",)
    assert records[1].error == "place.order.items[0].name: Value error, a name has no digits"
    assert records[2].error == "place.order.items[0].qty: expected a number > 0, got 0"
    assert [m.content for m in model.requests[1].messages[-2:]] == [
        "error: place.order.items[0].name: Value error, a name has no digits",
        "error: place.order.items[0].qty: expected a number > 0, got 0",
    ]


def test_a_model_that_refers_to_itself_is_defs_and_refs() -> None:
    def walk(root: Node, other: Optional[Node] = None) -> int:  # noqa: UP045
        """Walk."""
        return len(root.children)

    t = made(walk)
    parameters = t.schema["parameters"]
    assert properties(t)["root"] == {"$ref": "#/$defs/Node"}
    assert parameters["$defs"]["Node"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"
    }
    got = received(t, {"root": {"value": 1, "children": [{"value": 2}]}})
    assert got == {"root": Node(value=1, children=[Node(value=2)])}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (5, "f.my_number: expected a number > 10, got 5"),
        (150, "f.my_number: expected a number <= 100, got 150"),
    ],
)
def test_field_range_constraints(value: int, message: str) -> None:
    # openai-agents: Annotated[int, Field(gt=10, le=100)].
    def f(my_number: Annotated[int, Field(..., gt=10, le=100)]) -> int:
        return my_number * 2

    t = made(f)
    assert properties(t) == {
        "my_number": {"type": "integer", "exclusiveMinimum": 10, "maximum": 100}
    }
    assert received(t, {"my_number": 50}) == {"my_number": 50}
    assert refused(t, {"my_number": value}) == message


def test_field_string_constraints() -> None:
    # openai-agents: Annotated[str, Field(min_length=3, max_length=20, pattern=...)].
    def greet(
        name: Annotated[str, Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")],
    ) -> str:
        return f"Hello, {name}!"

    t = made(greet)
    assert properties(t) == {
        "name": {"type": "string", "minLength": 3, "maxLength": 20, "pattern": "^[A-Za-z]+$"}
    }
    assert received(t, {"name": "Alice"}) == {"name": "Alice"}
    assert refused(t, {"name": "Al"}) == "greet.name: expected 3 to 20 characters, got 2"
    assert refused(t, {"name": "A" * 25}) == "greet.name: expected 3 to 20 characters, got 25"
    assert refused(t, {"name": "Alice123"}) == (
        'greet.name: expected a string matching ^[A-Za-z]+$, got "Alice123"'
    )


def test_field_descriptions_and_several_constraints() -> None:
    # openai-agents: Field(ge=0, le=100, description=...), Field(gt=0.0, description=...).
    def score(
        points: Annotated[int, Field(ge=0, le=100, description="Score from 0 to 100")],
        factor: Annotated[float, Field(gt=0.0, description="Positive multiplier")] = 1.0,
        name: Annotated[str, Field(min_length=1, max_length=50)] = "Unknown",
    ) -> str:
        return f"{name} scored {points * factor}"

    t = made(score)
    assert properties(t) == {
        "points": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Score from 0 to 100"},
        "factor": {"type": "number", "exclusiveMinimum": 0.0, "description": "Positive multiplier", "default": 1.0},
        "name": {"type": "string", "minLength": 1, "maxLength": 50, "default": "Unknown"},
    }  # fmt: skip
    assert t.fn(**received(t, {"points": 85})) == "Unknown scored 85.0"
    assert (
        refused(t, {"points": 50, "name": ""}) == "score.name: expected 1 to 50 characters, got 0"
    )
    assert (
        refused(t, {"points": 50, "factor": 0.0})
        == "score.factor: expected a number > 0.0, got 0.0"
    )


def test_the_docstring_wins_over_a_field_description() -> None:
    # pydantic-ai keeps the Field's description here; budgetloop takes the docstring's.
    def pair(foo: int, bar: Annotated[str, Field(description="from the Field")]) -> str:
        """
        Args:
            foo: The foo thing.
            bar: The bar thing.
        """
        return ""

    assert properties(made(pair)) == {
        "foo": {"type": "integer", "description": "The foo thing."},
        "bar": {"type": "string", "description": "The bar thing."},
    }


def test_a_field_as_a_default_is_read_as_annotated_is() -> None:
    # openai-agents: `x: int = Field(..., gt=10, le=100, description=...)`.
    def as_default(my_number: int = Field(..., gt=10, le=100, description="A number")) -> int:
        return my_number * 2

    def as_annotated(
        my_number: Annotated[int, Field(..., gt=10, le=100, description="A number")],
    ) -> int:
        return my_number * 2

    t, same = made(as_default), made(as_annotated)
    assert properties(t) == properties(same) == {
        "my_number": {"type": "integer", "exclusiveMinimum": 10, "maximum": 100, "description": "A number"}
    }  # fmt: skip
    assert t.schema["parameters"]["required"] == ["my_number"]  # Field(...) gives no default
    assert refused(t, {"my_number": 5}) == "as_default.my_number: expected a number > 10, got 5"
    assert refused(t, {}) == "as_default.my_number: missing required argument"
    assert received(t, {"my_number": 50}) == {"my_number": 50}


def test_a_field_default_is_the_default_the_tool_gets() -> None:
    calls: list[tuple[int, list[str], str]] = []

    @tool
    def pick(
        count: int = Field(default=3, ge=1, description="How many."),
        tags: list[str] = Field(default_factory=list),
        *,
        label: Annotated[str, Field(default="none", max_length=8)],  # no Python default
    ) -> str:
        """Pick."""
        tags.append("seen")  # a factory's value is made anew for each call, never shared
        calls.append((count, tags, label))
        return "ok"

    assert pick.schema["parameters"]["required"] == []
    assert properties(pick) == {
        "count": {"type": "integer", "minimum": 1, "description": "How many.", "default": 3},
        "tags": {"type": "array", "items": {"type": "string"}},
        "label": {"type": "string", "maxLength": 8, "default": "none"},
    }
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("pick", {}, "a"), ToolCall("pick", {"count": 2, "label": "x"}, "b")]),
        "done",
    ])  # fmt: skip
    result = run(model, "go", tools=[pick], max_workers=1)
    assert [c.status for c in result.tool_calls] == ["ok", "ok"]
    assert calls == [(3, ["seen"], "none"), (2, ["seen"], "x")]
    assert refused(pick, {"count": 0}) == "pick.count: expected a number >= 1, got 0"


def test_a_strict_null_for_a_field_default_is_the_default() -> None:
    @tool(strict=True)
    def page(
        size: int = Field(default=20, le=100), seen: list[int] = Field(default_factory=list)
    ) -> str:
        """Page."""
        return ""

    assert properties(page) == {
        "size": {"type": ["integer", "null"], "maximum": 100, "description": "(default: 20; null means the default)"},
        "seen": {"type": ["array", "null"], "items": {"type": "integer"}},
    }  # fmt: skip
    assert received(page, {"size": None, "seen": None}) == {"size": 20, "seen": []}


def test_a_field_default_that_does_not_fit_is_refused_at_decoration() -> None:
    def f(n: int = Field(default="three")) -> int:
        return n

    with pytest.raises(TypeError) as info:
        tool(f)
    assert str(info.value) == (
        "tool f: parameter 'n': default must be int (its hint), got 'three' (default: expected "
        "integer, got str)."
    )

    def g(n: dict[str, int] = Field(default_factory=lambda data: {})) -> int:
        return 0

    with pytest.raises(TypeError) as info:
        tool(g)
    assert str(info.value) == (
        "tool g: parameter 'n': default_factory must be a function of no arguments, got one that "
        "takes the validated data, which has none to take here (a tool's parameters are not a "
        "model's fields); give one that takes no arguments."
    )


def test_a_model_result_is_json() -> None:
    # pydantic-ai's return_pydantic_model.
    @tool
    def make_foo(x: int) -> Foo:
        """Make a Foo."""
        return Foo(x=x, y="a")

    model = ScriptedModel([Completion(tool_calls=[ToolCall("make_foo", {"x": 0}, "c")]), "ok"])
    result = run(model, "go", tools=[make_foo])
    assert result.steps[0].tool_calls[0].result == '{"x": 0, "y": "a"}'


def test_strict_models_read_null_as_not_given() -> None:
    @tool(strict=True)
    def place(order: Order, root: Node) -> str:
        """Place."""
        return ""

    parameters = place.schema["parameters"]
    order = properties(place)["order"]
    assert order["required"] == ["items", "note"]
    assert order["additionalProperties"] is False
    item = parameters["$defs"]["Item"]
    assert item["required"] == ["name", "qty"]
    node = parameters["$defs"]["Node"]
    assert node["properties"]["children"] == {
        "type": ["array", "null"],
        "items": {"$ref": "#/$defs/Node"},
        "description": "(default: []; null means the default)",
    }
    got = received(place, {
        "order": {"items": [{"name": "tea", "qty": 1}], "note": None},
        "root": {"value": 1, "children": [{"value": 2, "children": None}]},
    })  # fmt: skip
    assert got == {
        "order": Order(items=[Item(name="tea", qty=1)], note=None),
        "root": Node(value=1, children=[Node(value=2, children=[])]),
    }


class Shipment(BaseModel):
    """A model with the keywords pydantic writes: ranges, lengths, a pattern, a literal (const),
    a tuple, a set, a nested model and one that refers to itself."""

    code: Annotated[str, Field(min_length=2, max_length=4, pattern="^[A-Z]")]
    weight: Annotated[float, Field(gt=0, le=30, multiple_of=0.5)]
    kind: Literal["box"] = "box"
    dims: tuple[int, int] = (1, 1)
    tags: set[str] = set()
    order: Optional[Order] = None  # noqa: UP045
    route: list[Node] = []


class Parcel(BaseModel):
    """What strict mode can express of the above: no length limits, no fixed tuple."""

    code: Annotated[str, Field(pattern="^[A-Z]{2,4}$")]
    weight: Annotated[float, Field(gt=0, le=30, multiple_of=0.5)]
    kind: Literal["box"] = "box"
    tags: set[str] = set()
    order: Optional[Order] = None  # noqa: UP045
    route: list[Node] = []


@settings(max_examples=150)
@given(st.data())
def test_the_check_agrees_with_jsonschema_on_pydantic_schemas(data: st.DataObject) -> None:
    strict = data.draw(st.booleans())

    def ship(shipment):  # type: ignore[no-untyped-def]
        """Ship."""
        return ""

    ship.__annotations__ = {"shipment": Parcel if strict else Shipment}
    t = made(ship, strict=strict)
    parameters = t.schema["parameters"]
    arguments = {"shipment": data.draw(values_for(properties(t)["shipment"], t.defs))}
    choices: dict[str, int] = {}
    try:
        checked, coerced = check_arguments(t, arguments, choices)
    except ArgumentError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert message.startswith("ship.shipment")
        return
    VALIDATOR(parameters).validate(checked)
    if not coerced:
        VALIDATOR(parameters).validate(arguments)
    refused = None
    try:  # pydantic has the last word: it may refuse, in words naming the field
        t.arguments_for(checked, choices)
    except ArgumentError as exc:
        refused = str(exc)
    assert refused is None or refused.startswith("ship.shipment")


class Opaque:
    pass


class Holder(BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    thing: Opaque


def test_a_model_pydantic_cannot_write_a_schema_for_is_a_type_error() -> None:
    def keep(holder: Holder) -> None:
        """Keep."""

    with pytest.raises(TypeError) as info:
        tool(keep)
    assert str(info.value).startswith(
        "tool keep: parameter 'holder' (Holder): the model's JSON schema must be one "
        "model_json_schema() can make, got PydanticInvalidForJsonSchema: Cannot generate a "
        f"JsonSchema for core_schema.IsInstanceSchema ({Opaque!r})"
    )  # then pydantic's link to its page on the error


class Weighed(BaseModel):
    grams: int = Field(json_schema_extra={"x-unit": "g"})


def test_a_keyword_strict_mode_does_not_accept_is_refused_naming_it() -> None:
    def weigh(item: Weighed) -> None:
        """Weigh."""

    with pytest.raises(TypeError) as info:
        tool(weigh, strict=True)
    assert str(info.value) == (
        "tool weigh: parameter 'item', field 'grams': its schema must be one strict mode "
        "accepts, got the keyword 'x-unit'."
    )
    assert made(weigh).schema["parameters"]["properties"]["item"]["properties"]["grams"] == {
        "type": "integer",
        "x-unit": "g",
    }  # the plain schema keeps it


def test_a_pydantic_model_as_the_output_type() -> None:
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("final_answer", {"name": "tea2", "qty": 1}, "a")]),
        Completion(tool_calls=[ToolCall("final_answer", {"name": "tea", "qty": 0}, "b")]),
        Completion(tool_calls=[ToolCall("final_answer", {"name": "tea", "qty": 2}, "c")]),
    ])  # fmt: skip
    result = run(model, "go", output=Item)
    assert [c.error for c in result.failed] == [
        "final_answer.name: Value error, a name has no digits",
        "final_answer.qty: expected a number > 0, got 0",
    ]
    assert result.answered
    assert result.output == Item(name="tea", qty=2)
    assert result.answer == '{"name": "tea", "qty": 2}'
