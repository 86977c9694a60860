"""The JSON Schema of a type hint, and how a checked JSON value becomes what the tool receives.

``Shapes(where).build(hint, where)`` returns ``(schema, convert)``: ``convert`` is None when the
JSON value is already the Python value (``str``, ``list[int]``...), else a function of the
checked value, its path (for messages) and the union branches the check chose (``Choices``,
by path: a union's converter converts with the branch the value fitted). Classes (dataclasses,
``TypedDict``, pydantic models) are built by ``_classes.Classes``, the ``Shapes`` that ``@tool``
uses; a class met again while its own schema is being built goes to ``$defs`` and is referred
to with ``$ref``.
"""

from __future__ import annotations

import enum
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from .._engine._valid import type_name
from ._arg_error import ArgumentError, Name
from ._hints import hint_name

Choices = dict[str, int]
Convert = Callable[[Any, str, Choices], Any]
Built = tuple[dict[str, Any], Convert | None]

_BASE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    list: {"type": "array"},
    dict: {"type": "object"},
    tuple: {"type": "array"},
    type(None): {"type": "null"},
    Any: {},
}
SUPPORTED = (
    "str, int, float, bool, list[T], dict[str, T], tuple[...], set[T], Literal[...], an Enum, "
    "a union, a dataclass, a TypedDict, a pydantic model, Annotated[T, ...], Any"
)
_NUMERIC = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum",
            "multiple_of": "multipleOf"}  # fmt: skip
_LENGTHS = {
    "string": {"min_length": "minLength", "max_length": "maxLength"},
    "array": {"min_length": "minItems", "max_length": "maxItems"},
    "object": {"min_length": "minProperties", "max_length": "maxProperties"},
}


def json_type(value: Any) -> str:
    """The JSON Schema type of a JSON scalar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def admits_null(schema: dict[str, Any]) -> bool:
    """Whether ``None`` fits ``schema`` (as far as its top level says)."""
    kind = schema.get("type")
    if not schema or kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", ()):
        return True
    return any(admits_null(b) for b in schema.get("anyOf", ()))


class Shapes:
    """Builds the schemas of one tool's hints, and the ``$defs`` they share."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.defs: dict[str, dict[str, Any]] = {}
        self.building: dict[Any, str] = {}  # classes whose schema is being built: def names
        self.referred: set[str] = set()  # of those, the ones met again inside themselves
        self.late: dict[str, Convert | None] = {}  # the converter of a class in $defs
        self.done: dict[Any, Built] = {}
        # For strict tools: each pydantic model's schema, with a dict make_strict fills with
        # its strict form ("schema"), so its converter knows which nulls mean "not given".
        self.models: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.strict_marks: dict[int, frozenset[str]] = {}
        self.strict_defs: dict[str, Any] = {}

    def build(self, hint: Any, where: str) -> Built:
        try:
            base = _BASE.get(hint)
        except TypeError:  # an unhashable hint: Annotated with unhashable metadata, say
            base = None
        if base is not None:
            return dict(base), (_as_tuple if hint is tuple else None)
        supertype = getattr(hint, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self.build(supertype, where)
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is Annotated:
            return self._annotated(hint, where)
        if origin is Literal:
            return _literal(args, where)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _enum(hint, where)
        if origin in (Union, types.UnionType):
            return self._union(args, where)
        if origin is list and len(args) == 1:
            items, convert = self.build(args[0], where)
            return {"type": "array", "items": items}, _each(convert, list)
        if origin is tuple:
            return self._tuple(args, where)
        if origin in (set, frozenset) or hint in (set, frozenset):
            return self._set(origin or hint, args, where)
        if origin is dict and len(args) == 2:
            if args[0] is not str:
                raise TypeError(
                    f"{where}: dict keys must be str (JSON object keys), got {hint_name(args[0])}."
                )
            values, convert = self.build(args[1], where)
            return {"type": "object", "additionalProperties": values}, _values(convert)
        if isinstance(hint, type):
            found = self.of_class(hint, where)
            if found is not None:
                return found
        raise TypeError(f"{where}: type must be one of {SUPPORTED}, got {hint_name(hint)}.")

    def of_class(self, cls: type, where: str) -> Built | None:
        """The schema of a class this builder reads, else None: none here (``_classes.Classes``
        reads dataclasses, ``TypedDict``s and pydantic models)."""
        return None

    # -- combinations ------------------------------------------------------------------------

    def _union(self, args: tuple[Any, ...], where: str) -> Built:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:  # T | None, written as today: a type list where it can be
            inner, convert = self.build(rest[0], where)
            nullable = _or_none(convert)
            if not inner:
                return inner, nullable  # Any already admits null
            if isinstance(inner.get("type"), str) and "enum" not in inner:
                return {**inner, "type": [inner["type"], "null"]}, nullable
            return {"anyOf": [inner, {"type": "null"}]}, nullable
        built = [self.build(a, where) for a in rest]
        if len(rest) < len(args):
            built.append(({"type": "null"}, None))
        branches = [schema for schema, _ in built]
        converts = [convert for _, convert in built]
        if all(c is None for c in converts):
            return {"anyOf": branches}, None

        def union(value: Any, path: str, choices: Choices) -> Any:
            index = choices.get(path, 0)
            convert = converts[index] if index < len(converts) else None
            return value if convert is None else convert(value, path, choices)

        return {"anyOf": branches}, union

    def _tuple(self, args: tuple[Any, ...], where: str) -> Built:
        if len(args) == 2 and args[1] is Ellipsis:
            items, convert = self.build(args[0], where)
            return {"type": "array", "items": items}, _each(convert, tuple)
        if not args or args == ((),):  # tuple[()]: the empty tuple
            return {"type": "array", "maxItems": 0}, _as_tuple
        built = [self.build(a, where) for a in args]
        converts = [c for _, c in built]
        schema = {
            "type": "array",
            "prefixItems": [s for s, _ in built],
            "minItems": len(args),
            "maxItems": len(args),
        }

        def fixed(value: Any, path: str, choices: Choices) -> Any:
            return tuple(
                v if c is None else c(v, f"{path}[{i}]", choices)
                for i, (c, v) in enumerate(zip(converts, value, strict=True))
            )

        return schema, fixed

    def _set(self, kind: Any, args: tuple[Any, ...], where: str) -> Built:
        name = kind.__name__
        if len(args) != 1:
            raise TypeError(
                f"{where}: {name} must be given its item type ({name}[str], {name}[int]...) so "
                f"the model knows what to send, got a bare {name}."
            )
        if not _hashable(args[0]):
            raise TypeError(
                f"{where}: {name}'s items must be hashable, got {name}[{hint_name(args[0])}], "
                f"whose items are not; use list[{hint_name(args[0])}], or {name} of a hashable "
                "type."
            )
        items, convert = self.build(args[0], where)
        return {"type": "array", "items": items, "uniqueItems": True}, _each(convert, kind)

    def _annotated(self, hint: Any, where: str) -> Built:
        """``Annotated[T, ...]``: T's schema, a description from a string in the metadata or
        an object's ``description``, and the constraints an object exposes (``ge``, ``le``,
        ``max_length``, ``pattern``... as pydantic's ``Field`` and annotated-types do)."""
        schema, convert = self.build(hint.__origin__, where)
        schema = dict(schema)
        description: str | None = None
        for meta in hint.__metadata__:
            if isinstance(meta, str):
                description = description or meta
                continue
            text = _attribute(meta, "description")
            if isinstance(text, str) and description is None:
                description = text
            inner = _attribute(meta, "metadata")
            for part in (meta, *(inner if isinstance(inner, (list, tuple)) else ())):
                constrain(schema, part, f"{where} ({hint_name(hint.__origin__)})")
        if description is not None:
            schema["description"] = description
        return schema, convert


# -- leaves ---------------------------------------------------------------------------------


def _literal(args: tuple[Any, ...], where: str) -> Built:
    if not args:
        raise TypeError(
            f"{where}: Literal must be given at least one value, got Literal[()], which no "
            "argument could fit."
        )
    values: list[Any] = []
    members: dict[tuple[type, Any], Any] = {}
    for arg in args:
        value = arg.value if isinstance(arg, enum.Enum) else arg
        if not (isinstance(value, (str, int, float, bool)) or value is None):
            raise TypeError(
                f"{where}: Literal values must be str, int, float, bool, None or members of an "
                f"Enum with such values, got {arg!r}."
            )
        _finite(value, where)
        key = (type(value), value)
        if key in members or any(key == (type(v), v) for v in values):
            raise TypeError(f"{where}: Literal values must be distinct, got {value!r} twice.")
        values.append(value)
        if isinstance(arg, enum.Enum):
            members[key] = arg
    kinds = {json_type(v) for v in values}
    out: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        out["type"] = kinds.pop()
    if not members:
        return out, None

    def member(value: Any, path: str, choices: Choices) -> Any:
        return members.get((type(value), value), value)

    return out, member


def _enum(cls: type[enum.Enum], where: str) -> Built:
    members = list(cls)
    if not members:
        raise TypeError(
            f"{where}: the Enum {cls.__name__} must be given members to choose from, got none."
        )
    values = [m.value for m in members]
    odd = [v for v in values if not (isinstance(v, (str, int, float, bool)) or v is None)]
    if odd:
        raise TypeError(
            f"{where}: the values of the Enum {cls.__name__} must be str, int, float, bool or "
            f"None so that a JSON value can name its members, got {odd[0]!r}."
        )
    for value in values:
        _finite(value, where)
    by_value = {(type(m.value), m.value): m for m in members}
    kinds = {json_type(v) for v in values}
    out: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        out = {"type": kinds.pop(), "enum": values}

    def member(value: Any, path: str, choices: Choices) -> Any:
        return by_value.get((type(value), value), value)

    return out, member


def _finite(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(
            f"{where}: each value must be one JSON can send (it has no NaN or infinity), got "
            f"{value!r}."
        )


def _hashable(hint: Any) -> bool:
    if hint in (str, int, float, bool, type(None)):
        return True
    if hint is Any:  # any JSON value: a list or dict among them
        return False
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _hashable(hint.__origin__)
    if origin in (Literal, frozenset):
        return True
    if origin in (Union, types.UnionType, tuple):
        return all(_hashable(a) for a in typing.get_args(hint) if a is not Ellipsis)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return True
    return (
        isinstance(hint, type)
        and origin is None
        and not issubclass(hint, (list, dict, set))
        and getattr(hint, "__hash__", None) is not None
        and hint is not tuple
    )


# -- converters -------------------------------------------------------------------------------


def _as_tuple(value: Any, path: str, choices: Choices) -> Any:
    return tuple(value)


def _each(convert: Convert | None, kind: Any) -> Convert | None:
    """A converter for a list, tuple or set whose items convert with ``convert``."""
    if convert is None:
        if kind is list:
            return None
        return lambda value, path, choices: kind(value)
    return lambda value, path, choices: kind(
        convert(v, f"{path}[{i}]", choices) for i, v in enumerate(value)
    )


def _values(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda value, path, choices: {
        k: convert(v, f"{path}.{k}", choices) for k, v in value.items()
    }


def _or_none(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda value, path, choices: None if value is None else convert(value, path, choices)


def failed(path: str, what: str, exc: BaseException) -> ArgumentError:
    """The error the model reads when building ``what`` from its value raised."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = type(exc).__name__
    return ArgumentError(Name(path), f": could not make {what} from this value (", Name(text), ")")


# -- Annotated constraints -----------------------------------------------------------------------


def _attribute(meta: Any, name: str) -> Any:
    try:
        return getattr(meta, name, None)
    except Exception:  # a property that raises: nothing to read there
        return None


def _kinds(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind} if kind else set()
    for branch in schema.get("anyOf", ()):
        kinds |= _kinds(branch)
    return kinds


_KIND_NAMES = {"string": "a string", "integer": "an int", "number": "a float", "boolean": "a bool",
               "array": "a list", "object": "a dict", "null": "None"}  # fmt: skip


def _kinds_named(kinds: set[str]) -> str:
    """What a constraint was put on, as the Python types its JSON types come from."""
    order = list(_KIND_NAMES)
    ranked = sorted(kinds, key=lambda k: order.index(k) if k in order else len(order))
    named = [_KIND_NAMES.get(k, k) for k in ranked]
    return " or ".join(named) if named else "any value (Any)"


def constrain(schema: dict[str, Any], meta: Any, where: str) -> None:
    """Add the constraints ``meta`` exposes to ``schema``, as JSON Schema keywords."""
    kinds = _kinds(schema)
    for attr, keyword in _NUMERIC.items():
        value = _attribute(meta, attr)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: {attr} must be a number, got {type_name(value)}.")
        if not math.isfinite(value) or (attr == "multiple_of" and value <= 0):
            raise ValueError(f"{where}: {attr} must be a finite number, got {value!r}.")
        if not kinds & {"integer", "number"}:
            raise TypeError(
                f"{where}: what {attr}={value!r} applies to must be a number, got "
                f"{_kinds_named(kinds)}."
            )
        schema[keyword] = value
    for attr in ("min_length", "max_length"):
        value = _attribute(meta, attr)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError(f"{where}: {attr} must be an int >= 0, got {value!r}.")
        fitting = [k for k in ("string", "array", "object") if k in kinds]
        if not fitting:
            raise TypeError(
                f"{where}: what {attr}={value!r} applies to must be a string, list or dict, got "
                f"{_kinds_named(kinds)}."
            )
        for kind in fitting:
            schema[_LENGTHS[kind][attr]] = value
    pattern = _attribute(meta, "pattern")
    if pattern is not None:
        text = getattr(pattern, "pattern", pattern)  # a compiled pattern: its text
        if not isinstance(text, str):
            raise TypeError(f"{where}: pattern must be a str, got {type_name(text)}.")
        if "string" not in kinds:
            raise TypeError(
                f"{where}: what pattern={text!r} applies to must be a string, got "
                f"{_kinds_named(kinds)}."
            )
        try:
            re.compile(text)
        except re.error as exc:
            raise ValueError(
                f"{where}: pattern must be a regular expression, got {text!r} ({exc})."
            ) from None
        schema["pattern"] = text
