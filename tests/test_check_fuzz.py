"""Argument checking, fuzzed: random tools built from every type hint ``@tool`` accepts, random
arguments (JSON values, and values shaped like the hints with mistakes in them).

``check_arguments`` may only ever raise ``ArgumentError``; whatever it accepts validates against
the tool's own schema under ``jsonschema`` (Draft 2020-12), an oracle written by someone else;
whatever it rejects is an error that names the tool, and the parameter when it is about one.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
import typing
from typing import Any, Literal, Optional

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import ArgumentError, Completion, ScriptedModel, ToolCall, run, tool
from budgetloop._check import check_arguments
from budgetloop._schema import Tool
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


base_hints = st.sampled_from([str, int, float, bool, list, dict, Any]) | st.lists(
    literal_values, min_size=1, max_size=4, unique_by=lambda v: (type(v), v)
).map(literal)


def union_with_none(hint: Any) -> Any:
    try:
        return hint | None
    except TypeError:  # Any and Literal[...] have no | in 3.10
        return Optional[hint]  # noqa: UP045


hints = st.recursive(
    base_hints,
    lambda inner: (
        inner.map(lambda h: list[h])  # type: ignore[valid-type]
        | inner.map(lambda h: dict[str, h])  # type: ignore[valid-type]
        | inner.map(lambda h: Optional[h])  # noqa: UP045 - the spelling under test
        | inner.map(union_with_none)
    ),
    max_leaves=4,
)

names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,11}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)


def fitting_default(hint: Any) -> Any:
    """A default that fits ``hint`` exactly, as ``@tool`` requires."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return args[0]
    if hint is Any or type(None) in args:
        return None
    if list in (hint, origin):
        return []
    if dict in (hint, origin):
        return {}
    return {str: "", int: 0, float: 0.0, bool: False}[hint]


def make_tool(name: str, params: list[tuple[str, Any, bool]]) -> Tool:
    """A tool ``name`` with these keyword parameters ``(name, hint, has_default)``."""

    def fn(**kwargs: Any) -> Any:
        return kwargs

    fn.__name__ = name
    fn.__annotations__ = {p: h for p, h, _ in params}
    ordered = sorted(params, key=lambda p: p[2])  # no default before a default
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                p,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=h,
                default=fitting_default(h) if d else inspect.Parameter.empty,
            )
            for p, h, d in ordered
        ]
    )
    return tool(fn)


@st.composite
def tools(draw: st.DrawFn) -> Tool:
    pnames = draw(st.lists(names, max_size=4, unique=True))
    params = [(p, draw(hints), draw(st.booleans())) for p in pnames]
    return make_tool(draw(names), params)


# -- values shaped like a schema, with mistakes ----------------------------------------------------


# Integers of every size, some beyond float range, and digit strings some past Python's
# 4,300-digit parsing limit (the check once crashed on both; see the tests at the end).
ints = st.integers() | st.integers(10**300, 10**400).map(lambda n: n * (-1) ** (n % 2))
digits = st.integers().map(str) | st.integers(4290, 4400).map(lambda n: "9" * n)


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values for a schema @tool made: mostly fitting, some not (any JSON value)."""
    return st.one_of(fitting(schema), fitting(schema), json_values)


def fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "anyOf" in schema:
        return st.none() | values_for(schema["anyOf"][0])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return json_values
    kinds = kind if isinstance(kind, list) else [kind]
    out: st.SearchStrategy[Any] = st.nothing()
    if "null" in kinds:
        out = out | st.none()
    main = next(k for k in kinds if k != "null")
    if main == "string":
        out = out | st.text(max_size=6)
    elif main == "boolean":
        out = out | st.booleans()
    elif main == "integer":
        out = out | ints | digits | st.integers(-9, 9).map(float)
    elif main == "number":
        out = (
            out
            | st.floats(allow_nan=False)
            | ints
            | st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?", fullmatch=True)
        )
    elif main == "array":
        items = schema.get("items")
        out = out | st.lists(json_values if items is None else values_for(items), max_size=3)
    elif main == "object":
        inner = schema.get("additionalProperties")
        inner_values = values_for(inner) if isinstance(inner, dict) else json_values
        out = out | st.dictionaries(st.text(max_size=3), inner_values, max_size=3)
    return out


@st.composite
def calls(draw: st.DrawFn) -> tuple[Tool, Any]:
    t = draw(tools())
    shape = draw(st.integers(0, 9))
    if shape == 9:
        return t, draw(json_values | st.text(max_size=10))  # anything at all
    args = {
        p: draw(values_for(schema))
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


VALIDATOR = jsonschema.Draft202012Validator


def first_segment(message: str, name: str) -> str:
    """``tool.key[0].sub: ...`` -> ``key``."""
    rest = message[len(name) + 1 :]
    return re.split(r"[:.\[]", rest, maxsplit=1)[0]


@given(calls())
def test_check_arguments_accepts_only_what_the_schema_allows(call: tuple[Tool, Any]) -> None:
    t, raw = call
    parameters = t.schema["parameters"]
    VALIDATOR.check_schema(parameters)
    validator = VALIDATOR(parameters)
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = None
    try:
        checked, coerced = check_arguments(t, raw)
    except ArgumentError as exc:
        message = str(exc)
        assert message.startswith((f"{t.name}.", f"{t.name}:"))
        if message.startswith(f"{t.name}:"):  # about the arguments as a whole
            assert not isinstance(parsed, dict)
            return
        key = first_segment(message, t.name)
        assert isinstance(parsed, dict)
        if message.startswith(f"{t.name}.{key}: unknown argument"):
            assert key not in t.parameters
            assert key in parsed
        elif message == f"{t.name}.{key}: missing required argument":
            assert key in t.required
            assert key not in parsed
        else:  # about one value: the parameter named is there and the schema refuses it...
            assert key in t.parameters
            assert key in parsed
            assert not set(parsed) - set(t.parameters)
            errors = list(validator.iter_errors(parsed))
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
