"""Argument checking, fuzzed: random tools built from every type hint ``@tool`` accepts, random
arguments (JSON values, and values shaped like the hints with mistakes in them).

``check_arguments`` may only ever raise ``ArgumentError``; whatever it accepts validates against
the tool's own schema under ``jsonschema`` (Draft 2020-12), an oracle written by someone else;
whatever it rejects is an error that names the tool, and the parameter when it is about one.
The hints cover every kind ``@tool`` accepts: Enums, unions, tuples and sets, dataclasses and
TypedDicts built at random (and one that refers to itself), constraints in ``Annotated``, and
strict schemas where the hints allow one.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import itertools
import json
import keyword
import re
import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Optional, TypedDict

import jsonschema
import pytest
import regress
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import ArgumentError, Completion, ScriptedModel, ToolCall, run, tool
from budgetloop._schema._check import check_arguments
from budgetloop._schema._tool import Tool
from tests.schema_support import strict_violations
from tests.strategies import json_values

# -- random hints ---------------------------------------------------------------------------------

literal_values = (
    st.text(max_size=4)
    | st.integers(-5, 5)
    | st.booleans()
    | st.none()
    | st.floats(-4, 4, allow_nan=False).filter(lambda f: not f.is_integer())
)


def literal(values: list[Any]) -> Any:
    return Literal.__getitem__(tuple(values))


class Hue(enum.Enum):
    RED = "red"
    DARK = 1


class Grade(enum.IntEnum):
    A = 1
    B = 2


class Size(str, enum.Enum):
    S = "s"
    L = "l"


@dataclasses.dataclass
class Cell:
    """A type that refers to itself: its schema is a $ref into $defs."""

    v: int
    next: Cell | None = None


class Limits:
    """Constraints exposed as attributes, as pydantic's Field and annotated-types do."""

    def __init__(self, **limits: Any) -> None:
        self.__dict__.update(limits)


literals = st.lists(literal_values, min_size=1, max_size=4, unique_by=lambda v: (type(v), v)).map(
    literal
)
constrained = st.sampled_from(
    [
        Annotated[int, Limits(ge=-3, le=3)],
        Annotated[float, Limits(gt=0, multiple_of=0.5)],
        Annotated[int, Limits(multiple_of=3, lt=100)],
        Annotated[str, Limits(min_length=1, max_length=3)],
        Annotated[str, Limits(pattern="^[ab]+$")],
        Annotated[list[int], Limits(min_length=1, max_length=2)],
    ]
)
base_hints = (
    st.sampled_from([str, int, float, bool, list, dict, tuple, Any, Hue, Grade, Size, Cell])
    | literals
    | constrained
)
hashable_hints = st.sampled_from([str, int, float, bool, Hue, Grade, Size]) | literals


def union_with_none(hint: Any) -> Any:
    try:
        return hint | None
    except TypeError:  # Any and Literal[...] have no | in 3.10
        return Optional[hint]  # noqa: UP045


def union(hints: list[Any]) -> Any:
    return typing.Union.__getitem__(tuple(hints))


_classes = itertools.count()


def fitting_default(hint: Any) -> Any:
    """A default that fits ``hint`` exactly, as ``@tool`` requires; NO when none is simple."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return args[0]
    if hint is Any or type(None) in args:
        return None
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return next(iter(hint))
    if origin in (typing.Union, types.UnionType):
        return fitting_default(args[0])
    if list in (hint, origin):
        return []
    if dict in (hint, origin):
        return {}
    if tuple in (hint, origin):
        if not args or args[-1] is Ellipsis:
            return ()
        parts = tuple(fitting_default(a) for a in args)
        return NO if NO in parts else parts
    if origin in (set, frozenset):
        return origin()
    return {str: "", int: 0, float: 0.0, bool: False}.get(hint, NO)


NO = object()


def dataclass_of(fields: list[tuple[str, Any, bool]]) -> Any:
    made = []
    for name, hint, optional in sorted(fields, key=lambda f: f[2]):
        default = fitting_default(hint) if optional else NO
        if default is NO:
            made.append((name, hint))
        else:  # a factory: a list or dict default may not be shared
            made.append((name, hint, dataclasses.field(default_factory=lambda d=default: d)))
    ordered = [f for f in made if len(f) == 2] + [f for f in made if len(f) == 3]
    return dataclasses.make_dataclass(f"Data{next(_classes)}", ordered)


def typed_dict_of(fields: list[tuple[str, Any, bool]]) -> Any:
    total = bool(fields) and fields[0][2]
    keys = {name: hint for name, hint, _ in fields}
    return TypedDict(f"Dict{next(_classes)}", keys, total=total)  # type: ignore[operator]


field_lists = lambda inner: st.lists(  # noqa: E731
    st.tuples(names, inner, st.booleans()), max_size=3, unique_by=lambda f: f[0]
)
names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,11}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)
hints = st.recursive(
    base_hints,
    lambda inner: (
        inner.map(lambda h: list[h])  # type: ignore[valid-type]
        | inner.map(lambda h: dict[str, h])  # type: ignore[valid-type]
        | inner.map(lambda h: Optional[h])  # noqa: UP045 - the spelling under test
        | inner.map(union_with_none)
        | st.lists(inner, min_size=2, max_size=3).map(union)
        | inner.map(lambda h: tuple[h, ...])  # type: ignore[valid-type]
        | st.lists(inner, min_size=1, max_size=3).map(
            lambda hs: tuple.__class_getitem__(tuple(hs))
        )
        | hashable_hints.map(lambda h: set[h])  # type: ignore[valid-type]
        | hashable_hints.map(lambda h: frozenset[h])  # type: ignore[valid-type]
        | field_lists(inner).map(dataclass_of)
        | field_lists(inner).map(typed_dict_of)
    ),
    max_leaves=5,
)


def make_tool(name: str, params: list[tuple[str, Any, bool]], strict: bool = False) -> Tool:
    """A tool ``name`` with these keyword parameters ``(name, hint, has_default)``; strict if
    asked and the hints allow it."""

    def fn(**kwargs: Any) -> Any:
        return kwargs

    fn.__name__ = name
    fn.__annotations__ = {p: h for p, h, _ in params}
    defaults = {p: fitting_default(h) if d else NO for p, h, d in params}
    ordered = sorted(params, key=lambda p: defaults[p[0]] is not NO)  # no default before one
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                p,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=h,
                default=inspect.Parameter.empty if defaults[p] is NO else defaults[p],
            )
            for p, h, _ in ordered
        ]
    )
    if strict:
        try:
            return tool(fn, strict=True)
        except TypeError:  # a type strict mode cannot express: the plain schema then
            pass
    return tool(fn)


@st.composite
def tools(draw: st.DrawFn) -> Tool:
    pnames = draw(st.lists(names, max_size=4, unique=True))
    params = [(p, draw(hints), draw(st.booleans())) for p in pnames]
    return make_tool(draw(names), params, strict=draw(st.booleans()))


# -- values shaped like a schema, with mistakes ----------------------------------------------------


# Integers of every size, some beyond float range, and digit strings some past Python's
# 4,300-digit parsing limit (the check once crashed on both; see the tests at the end).
ints = st.integers() | st.integers(10**300, 10**400).map(lambda n: n * (-1) ** (n % 2))
digits = st.integers().map(str) | st.integers(4290, 4400).map(lambda n: "9" * n)


def values_for(
    schema: dict[str, Any], defs: dict[str, Any], depth: int = 0
) -> st.SearchStrategy[Any]:
    """Values for a schema @tool made: mostly fitting, some not (any JSON value)."""
    return st.one_of(fitting(schema, defs, depth), fitting(schema, defs, depth), json_values)


def fitting(
    schema: dict[str, Any], defs: dict[str, Any], depth: int = 0
) -> st.SearchStrategy[Any]:
    if depth > 4:
        return json_values
    deeper = depth + 1
    if "$ref" in schema:
        return fitting(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, deeper)
    if "anyOf" in schema:
        return st.one_of([values_for(b, defs, deeper) for b in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return json_values
    kinds = kind if isinstance(kind, list) else [kind]
    out: st.SearchStrategy[Any] = st.nothing()
    if "null" in kinds:
        out = out | st.none()
    main = next((k for k in kinds if k != "null"), "null")
    if main == "string":
        out = out | st.text(max_size=6)
        if "pattern" in schema:  # and with a newline after: a match to Python's re, not ECMA's
            matching = st.from_regex(schema["pattern"])
            out = out | matching | matching.map(lambda text: f"{text}\n")
    elif main == "boolean":
        out = out | st.booleans()
    elif main == "integer":
        out = out | ints | digits | st.integers(-9, 9).map(float) | st.integers(-5, 5)
    elif main == "number":
        out = (
            out
            | st.floats(allow_nan=False)
            | ints
            | st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?", fullmatch=True)
            | st.sampled_from([0.5, 1, 1.5, 0, -0.5])
        )
    elif main == "array":
        out = out | array_values(schema, defs, deeper)
    elif main == "object":
        out = out | object_values(schema, defs, deeper)
    return out


def array_values(
    schema: dict[str, Any], defs: dict[str, Any], depth: int
) -> st.SearchStrategy[Any]:
    prefix = schema.get("prefixItems")
    if prefix is not None:
        fixed = st.tuples(*[values_for(p, defs, depth) for p in prefix]).map(list)
        return fixed | st.lists(json_values, max_size=len(prefix) + 1)
    items = schema.get("items")
    inner = json_values if items is None else values_for(items, defs, depth)
    if schema.get("uniqueItems"):
        return st.lists(inner, max_size=3, unique_by=json.dumps) | st.lists(inner, max_size=3)
    return st.lists(inner, max_size=3)


def object_values(
    schema: dict[str, Any], defs: dict[str, Any], depth: int
) -> st.SearchStrategy[Any]:
    properties = schema.get("properties")
    if properties is None:
        extra = schema.get("additionalProperties")
        inner = values_for(extra, defs, depth) if isinstance(extra, dict) else json_values
        return st.dictionaries(st.text(max_size=3), inner, max_size=3)
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {k: values_for(v, defs, depth) for k, v in properties.items() if k in required},
        optional={
            k: values_for(v, defs, depth) for k, v in properties.items() if k not in required
        },
    )


@st.composite
def calls(draw: st.DrawFn) -> tuple[Tool, Any]:
    t = draw(tools())
    shape = draw(st.integers(0, 9))
    if shape == 9:
        return t, draw(json_values | st.text(max_size=10))  # anything at all
    args = {
        p: draw(values_for(schema, t.defs))
        for p, schema in t.parameters.items()
        if p in t.required or draw(st.booleans())
    }
    if shape == 8 and args:
        args.pop(draw(st.sampled_from(sorted(args))))  # maybe a required one goes missing
    if shape == 7:
        args[draw(names)] = draw(json_values)  # maybe an unknown one
    if shape in (5, 6):
        return t, json.dumps(args)  # as a JSON string, the way models send them
    return t, args


def ecma_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """``pattern`` as JSON Schema means it: an ECMA-262 regular expression (``regress``), whose
    ``$`` is the end of the string, where jsonschema would use Python's ``re``."""
    if validator.is_type(instance, "string") and regress.Regex(pattern).find(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": ecma_pattern}
)


def first_segment(message: str, name: str) -> str:
    """``tool.key[0].sub: ...`` -> ``key``."""
    rest = message[len(name) + 1 :]
    return re.split(r"[:.\[]", rest, maxsplit=1)[0]


@given(calls())
def test_check_arguments_accepts_only_what_the_schema_allows(call: tuple[Tool, Any]) -> None:
    t, raw = call
    parameters = t.schema["parameters"]
    VALIDATOR.check_schema(parameters)
    if t.strict:
        assert strict_violations(parameters) == []
    validator = VALIDATOR(parameters)
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = None
    choices: dict[str, int] = {}
    try:
        checked, coerced = check_arguments(t, raw, choices)
    except ArgumentError as exc:
        message = str(exc)
        assert message.startswith((f"{t.name}.", f"{t.name}:"))
        if message.startswith(f"{t.name}:"):  # about the arguments as a whole
            assert not isinstance(parsed, dict)
            return
        key = first_segment(message, t.name)
        assert isinstance(parsed, dict)
        unknown = [k for k in parsed if k not in t.parameters]
        if ": unknown argument; expected " in message:  # (a key may hold "." or "[")
            assert unknown
            assert message.startswith(f"{t.name}.{unknown[0]}: unknown argument")
        elif message == f"{t.name}.{key}: missing required argument":
            assert key in t.required
            assert key not in parsed
        else:  # about one value: the parameter named is there and the schema refuses it...
            assert key in t.parameters
            assert key in parsed
            assert not set(parsed) - set(t.parameters)
            alone = VALIDATOR({**parameters, "required": []})  # this parameter's value only
            try:
                errors = list(alone.iter_errors({key: parsed[key]}))
            except OverflowError:  # jsonschema's multipleOf fails on numbers beyond float range
                return
            # ...unless the check is stricter than JSON Schema on purpose: a type-strict enum
            # (Literal[1] and 1.0 are equal to JSON Schema, not to the check) or a number that
            # is not finite as a float (an int beyond float range)
            assert errors or "expected one of" in message or "expected a finite number" in message
        return
    # Accepted: the arguments as checked validate, and so does what was sent when nothing was
    # coerced; every coerced path names a parameter.
    assert isinstance(parsed, dict)
    assert set(checked) == set(parsed)
    validator.validate(checked)
    if not coerced:
        validator.validate(parsed)
    for path in coerced:
        assert first_segment(path, t.name) in t.parameters
        assert path.startswith(f"{t.name}.")
    # What the function is then called with: converted, or refused in words (a class's own
    # checks may refuse a value its schema allows); never another exception.
    refused = None
    try:
        call_args = t.arguments_for(checked, choices)
    except ArgumentError as exc:
        refused = str(exc)
    if refused is None:
        assert set(call_args) <= set(checked)
    else:
        assert refused.startswith(f"{t.name}.")


@pytest.mark.parametrize(
    ("hint", "value", "message"),
    [
        (int, "12", None),
        (int, 2.5, "f.x: expected integer, got 2.5"),
        (int, True, "f.x: expected integer, got bool"),
        (list[int], [1, "x"], "f.x[1]: expected integer, got str"),
        (dict[str, bool], {"k": 1}, "f.x.k: expected boolean, got int"),
        (Literal[1, "a"], 1.0, 'f.x: expected one of 1, "a", got 1.0'),
        (Optional[list[str]], None, None),  # noqa: UP045
        (Annotated[str, Limits(pattern="^[ab]+$")], "ab", None),
        (
            Annotated[str, Limits(pattern="^[ab]+$")],
            "ab\n",
            'f.x: expected a string matching ^[ab]+$, got "ab\\n"',
        ),  # ECMA-262: $ is the end
        (Annotated[str, Limits(pattern="^[a$]+$")], "a$", None),  # in a class, $ is itself
    ],
)
def test_known_cases_of_the_fuzzed_tools(hint: Any, value: Any, message: str | None) -> None:
    # the builder makes tools the check treats like decorated functions
    t = make_tool("f", [("x", hint, False)])
    if message is None:
        checked, _ = check_arguments(t, {"x": value})
        VALIDATOR(t.schema["parameters"]).validate(checked)
    else:
        with pytest.raises(ArgumentError) as info:
            check_arguments(t, {"x": value})
        assert str(info.value) == message


# -- numbers out of range: found by the fuzz above, fixed in the core ------------------------------------------------------------------------


@tool
def measure(x: float, n: int = 0) -> str:
    """Measure."""
    return "measured"


OUT_OF_RANGE = [
    pytest.param({"x": 10**400}, id="an int too large for a float, as a dict"),
    pytest.param('{"x": 1' + "0" * 400 + "}", id="an int too large for a float, as JSON"),
    pytest.param({"x": 1.0, "n": "1" * 5000}, id="a 5,000-digit integer string"),
]


@pytest.mark.parametrize("raw", OUT_OF_RANGE)
def test_out_of_range_numbers_are_argument_errors(raw: Any) -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments(measure, raw)
    assert str(info.value).startswith(("measure.x: ", "measure.n: "))


@pytest.mark.parametrize("raw", OUT_OF_RANGE)
def test_out_of_range_numbers_do_not_crash_the_run(raw: Any) -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("measure", raw, "c1")]), "done"])
    result = run(model, "go", tools=[measure])
    assert result.stop == "answered"
    assert result.steps[0].tool_calls[0].status == "error"
