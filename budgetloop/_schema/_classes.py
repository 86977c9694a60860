"""Object schemas for classes: dataclasses, ``TypedDict`` and pydantic models.

A dataclass is built field by field (fields with a default are not required); a ``TypedDict``
stays a dict (its required keys as ``Required``/``NotRequired`` and ``total`` say); a pydantic
model is found by duck typing (a class with ``model_json_schema`` and ``model_validate``; no
import of pydantic) and made with ``model_validate``, its validation errors becoming the error
the model reads, naming the field. A class met again while its own schema is being built goes
to ``$defs`` and is referred to by ``$ref``; so a type that refers to itself never recurses
forever.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import typing
from typing import Any

from ._arg_error import ArgumentError, Name
from ._hints import resolve
from ._shapes import Built, Choices, Convert, Shapes, admits_null, failed

_SCHEMA_KEYS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
               "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip


class Classes(Shapes):
    """``Shapes`` that also builds dataclasses, ``TypedDict``s and pydantic models."""

    def of_class(self, cls: type, where: str) -> Built | None:
        return class_schema(self, cls, where)


def class_schema(shapes: Shapes, cls: type, where: str) -> Built | None:
    """The schema of ``cls`` if it is a class ``@tool`` reads, else None."""
    if dataclasses.is_dataclass(cls):
        make = _dataclass
    elif issubclass(cls, dict) and hasattr(cls, "__required_keys__"):
        make = _typed_dict
    elif callable(getattr(cls, "model_json_schema", None)) and callable(
        getattr(cls, "model_validate", None)
    ):
        make = _pydantic
    else:
        return None
    if cls in shapes.done:
        return shapes.done[cls]
    if make is _pydantic:  # pydantic writes its own $defs for a model that refers to itself
        shapes.done[cls] = _pydantic(shapes, cls, f"{where} ({cls.__name__})")
        return shapes.done[cls]
    if cls in shapes.building:  # met inside itself: a reference, converted once it is built
        name = shapes.building[cls]
        shapes.referred.add(name)
        return {"$ref": f"#/$defs/{name}"}, _later(shapes, name)
    name = _def_name(shapes, cls.__name__)
    shapes.building[cls] = name
    try:
        schema, convert = make(shapes, cls, f"{where} ({cls.__name__})")
    finally:
        del shapes.building[cls]
    shapes.late[name] = convert
    if name in shapes.referred:
        shapes.defs[name] = schema
        schema = {"$ref": f"#/$defs/{name}"}
    shapes.done[cls] = (schema, convert)
    return schema, convert


def _def_name(shapes: Shapes, name: str) -> str:
    taken = set(shapes.defs) | set(shapes.building.values())
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}{n}"
    return candidate


def _later(shapes: Shapes, name: str) -> Convert:
    def convert(value: Any, path: str, choices: Choices) -> Any:
        found = shapes.late.get(name)
        return value if found is None else found(value, path, choices)

    return convert


def _field_hints(cls: type, annotations: dict[str, Any], where: str) -> dict[str, Any]:
    """The class's field hints, strings evaluated in its module with the class itself in
    reach (so a class can name itself)."""
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    out = {}
    for name, hint in annotations.items():
        forward_module = getattr(hint, "__forward_module__", None)  # a TypedDict's ForwardRef
        found = sys.modules.get(forward_module) if isinstance(forward_module, str) else None
        try:
            out[name] = resolve(
                hint, dict(vars(found)) if found else namespace, {cls.__name__: cls}
            )
        except Exception as exc:
            raise TypeError(
                f"{where}: the hint of field {name!r} must be resolvable, got "
                f"{type(exc).__name__}: {str(exc).rstrip('.')}."
            ) from exc
    return out


def _object(cls: type, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": properties}
    schema["required"] = required
    schema["additionalProperties"] = False
    return schema


# -- dataclasses -----------------------------------------------------------------------------


def _dataclass(shapes: Shapes, cls: type, where: str) -> Built:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = {f.name for f in fields}
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to read: the fields are all there is
        signature = None
    for param in signature.parameters.values() if signature else ():
        if param.default is param.empty and param.name not in names:
            raise TypeError(
                f"{where}: what its __init__ needs must be fields a model can send, got "
                f"{param.name!r} (an InitVar, or an __init__ of its own); give it a default."
            )
    hints = _field_hints(cls, {f.name: f.type for f in fields}, where)
    properties: dict[str, Any] = {}
    required: list[str] = []
    converts: dict[str, Convert | None] = {}
    nullable: set[str] = set()  # optional fields that do not admit None
    for f in fields:
        schema, converts[f.name] = shapes.build(hints[f.name], f"{where}: field {f.name!r}")
        description = f.metadata.get("description") if f.metadata else None
        if isinstance(description, str):
            schema = {**schema, "description": description}
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        else:
            if f.default is not dataclasses.MISSING and _is_json(f.default):
                schema = {**schema, "default": f.default}
            if not admits_null(schema):
                nullable.add(f.name)
        properties[f.name] = schema

    def build(value: Any, path: str, choices: Choices) -> Any:
        kwargs = {}
        for key, item in value.items():
            if item is None and shapes.strict and key in nullable:
                continue  # strict schemas send null for "not given"
            convert = converts[key]
            kwargs[key] = item if convert is None else convert(item, f"{path}.{key}", choices)
        try:
            return cls(**kwargs)
        except Exception as exc:  # the class's own checks (__post_init__) refused the value
            raise failed(path, f"a {cls.__name__}", exc) from None  # the model reads this

    return _object(cls, properties, required), build


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


# -- TypedDict -------------------------------------------------------------------------------


def _typed_dict(shapes: Shapes, cls: type, where: str) -> Built:
    hints = _field_hints(cls, dict(cls.__annotations__), where)
    required_keys = set(getattr(cls, "__required_keys__", ()))
    properties: dict[str, Any] = {}
    required: list[str] = []
    converts: dict[str, Convert] = {}
    nullable: set[str] = set()
    for key, hint in hints.items():
        is_required = key in required_keys
        while True:  # Required[...] / NotRequired[...] / ReadOnly[...], by name (3.10 has none)
            wrapper = getattr(typing.get_origin(hint), "_name", None)
            if wrapper not in ("Required", "NotRequired", "ReadOnly"):
                break
            if wrapper != "ReadOnly":
                is_required = wrapper == "Required"
            hint = typing.get_args(hint)[0]
        schema, convert = shapes.build(hint, f"{where}: key {key!r}")
        properties[key] = schema
        if is_required:
            required.append(key)
        elif not admits_null(schema):
            nullable.add(key)
        if convert is not None:
            converts[key] = convert
    if not converts and not (shapes.strict and nullable):
        return _object(cls, properties, required), None

    def build(value: Any, path: str, choices: Choices) -> Any:
        out = {}
        for key, item in value.items():
            if item is None and shapes.strict and key in nullable:
                continue
            convert = converts.get(key)
            out[key] = item if convert is None else convert(item, f"{path}.{key}", choices)
        return out

    return _object(cls, properties, required), build


# -- pydantic models, by duck typing --------------------------------------------------------------


def _pydantic(shapes: Shapes, cls: type, where: str) -> Built:
    try:
        raw = cls.model_json_schema()  # type: ignore[attr-defined]
    except Exception as exc:
        raise TypeError(
            f"{where}: the model's JSON schema must be one model_json_schema() can make, got "
            f"{type(exc).__name__}: {str(exc).rstrip('.')}."
        ) from None
    raw = _no_titles(raw)
    defs = raw.pop("$defs", None) or {}
    taken = set(shapes.building.values())
    renamed = {}
    for name, schema in defs.items():
        same = shapes.defs.get(name) == schema and name not in taken
        renamed[name] = (
            name
            if same or (name not in shapes.defs and name not in taken)
            else (_def_name(shapes, name))
        )
        taken.add(renamed[name])
    if any(old != new for old, new in renamed.items()):
        raw = _renamed(raw, renamed)
        defs = {renamed[k]: _renamed(v, renamed) for k, v in defs.items()}
    shapes.defs.update(defs)
    strict: dict[str, Any] = {}
    shapes.models.append((raw, strict))
    return raw, _validate(shapes, cls, strict)


def _validate(shapes: Shapes, cls: Any, strict: dict[str, Any]) -> Convert:
    def validate(value: Any, path: str, choices: Choices) -> Any:
        written = strict.get("schema")
        if written is not None:  # a strict schema's nulls for "not given" go
            value = _given(shapes, written, value, path, choices, 0)
        try:
            return cls.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            errors = getattr(exc, "errors", None)
            if not callable(errors):
                raise failed(path, f"a {cls.__name__}", exc) from None  # the model reads this
            raise _validation_error(path, errors()) from None  # the model reads this

    return validate


def _given(
    shapes: Shapes, schema: dict[str, Any], value: Any, path: str, choices: Choices, depth: int
) -> Any:
    """``value`` without the nulls a strict schema sent for "not given", found by walking it
    along the schema the check walked (the same union branches, by path)."""
    if depth > 500:
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str):
        found = shapes.strict_defs.get(ref.rsplit("/", 1)[-1])
        return value if found is None else _given(shapes, found, value, path, choices, depth + 1)
    if "anyOf" in schema:
        index = choices.get(path)
        branches = schema["anyOf"]
        if index is None or index >= len(branches):
            return value
        return _given(shapes, branches[index], value, path, choices, depth + 1)
    if isinstance(value, dict) and "properties" in schema:
        marked = shapes.strict_marks.get(id(schema), frozenset())
        properties = schema["properties"]
        return {
            k: _given(shapes, properties[k], v, f"{path}.{k}", choices, depth + 1)
            if k in properties
            else v
            for k, v in value.items()
            if not (v is None and k in marked)
        }
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [
            _given(shapes, items, v, f"{path}[{i}]", choices, depth + 1)
            for i, v in enumerate(value)
        ]
    return value


def _validation_error(path: str, errors: list[dict[str, Any]]) -> ArgumentError:
    parts: list[Any] = []
    for i, error in enumerate(errors):
        where = path + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.get("loc", ())
        )
        parts += ["; "] * (i > 0) + [Name(where), ": ", Name(str(error.get("msg", "invalid")))]
    return ArgumentError(*parts)


def _no_titles(schema: Any) -> Any:
    """Pydantic's schema without the ``title`` it gives every field (a model keeps its own)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and "properties" not in schema:
            continue
        if key in _SCHEMA_KEYS and isinstance(value, dict):
            out[key] = {k: _no_titles(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_no_titles(v) for v in value]
        elif key in _SCHEMA_ONE:
            out[key] = _no_titles(value)
        else:
            out[key] = value
    return out


def _renamed(schema: Any, names: dict[str, str]) -> Any:
    """``schema`` with every ``$ref`` to a renamed definition pointing at its new name."""
    if isinstance(schema, list):
        return [_renamed(v, names) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            value = "#/$defs/" + names.get(value[len("#/$defs/") :], value[len("#/$defs/") :])
        out[key] = _renamed(value, names)
    return out
