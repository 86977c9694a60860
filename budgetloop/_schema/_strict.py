"""``@tool(strict=True)``: the schema OpenAI's strict function calling accepts.

Strict mode asks for every property listed in ``required`` and ``additionalProperties: false``
on every object, and rejects a set of keywords. So an optional property becomes required and
nullable, its ``default`` moves into its description, and null is read back as "not given"
(the default applies) unless the type admits None itself; ``oneOf`` is written ``anyOf``,
``const`` a one-value ``enum``, ``uniqueItems`` is left out (a set still gets unique items:
duplicates merge). A type strict mode cannot express (``Any``, ``dict[str, T]``, a fixed-length
``tuple``, a length limit on a string...) is a ``TypeError`` saying why.
"""

from __future__ import annotations

import json
from typing import Any

from ._shapes import Shapes, admits_null

_KEEP = frozenset(
    ["type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref",
     "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
     "exclusiveMaximum", "multipleOf", "minItems", "maxItems"]
)  # fmt: skip
_DROP = frozenset(
    ["default", "examples", "discriminator", "deprecated", "readOnly", "writeOnly", "$comment",
     "contentMediaType", "contentEncoding", "uniqueItems", "const", "oneOf"]
)  # fmt: skip
_WHY = {  # what each keyword strict mode refuses stands for, and what to write instead
    "prefixItems": "a fixed-length tuple (prefixItems); use list[...] or a dataclass",
    "minLength": "a string's length limit (minLength)",
    "maxLength": "a string's length limit (maxLength)",
    "minProperties": "a limit on an object's size (minProperties)",
    "maxProperties": "a limit on an object's size (maxProperties)",
    "allOf": "allOf",
}


class Strict:
    """Rewrites one tool's schemas; ``marks`` holds, by ``id`` of each object schema it wrote,
    the keys made nullable there (whose null means "not given")."""

    def __init__(self, defs: dict[str, Any], where: str) -> None:
        self.source = defs
        self.defs: dict[str, Any] = {}
        self.where = where
        self.marks: dict[int, frozenset[str]] = {}

    def node(self, schema: dict[str, Any], where: str, top: bool = False) -> dict[str, Any]:
        if not schema or set(schema) <= {"description", "title", "default"}:
            raise TypeError(
                f"{where}: its schema must be one strict mode accepts, got a value of any type "
                "(Any), and strict mode needs a type for every value; give it one, or use "
                "strict=False."
            )
        ref = schema.get("$ref")
        if isinstance(ref, str) and top and set(schema) - {"$ref"}:
            # strict mode takes no keyword beside a $ref: the definition written in its place
            target = self.source.get(ref.rsplit("/", 1)[-1], {})
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        out: dict[str, Any] = {}
        for key in schema:
            if key in _WHY:
                raise TypeError(
                    f"{where}: its schema must be one strict mode accepts, got {_WHY[key]}."
                )
            if key not in _KEEP and key not in _DROP:
                raise TypeError(
                    f"{where}: its schema must be one strict mode accepts, got the keyword "
                    f"{key!r}."
                )
        if "default" in schema:
            out["description"] = _with_default(
                schema.get("description"), schema["default"], admits_null(schema)
            )
        for key, value in schema.items():
            if key in _DROP or key in ("properties", "required", "additionalProperties"):
                continue
            if key == "items":
                out[key] = self.node(value, f"{where}, items")
            elif key == "anyOf":
                out[key] = [self.node(b, where) for b in value]
            elif key == "$ref":
                self._define(value, where)
                out[key] = value
            elif key != "description" or "description" not in out:
                out[key] = value
        if "oneOf" in schema:
            out["anyOf"] = [self.node(b, where) for b in schema["oneOf"]]
        if "const" in schema:
            out["enum"] = [schema["const"]]
        kind = out.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "object" in kinds or "properties" in schema:
            self._object(schema, out, where)
        elif "array" in kinds and "items" not in out:
            raise TypeError(
                f"{where}: its schema must be one strict mode accepts, got a list of any "
                "values; say what it holds (list[str], list[int]...)."
            )
        return out

    def _object(self, schema: dict[str, Any], out: dict[str, Any], where: str) -> None:
        extra = schema.get("additionalProperties")
        if "properties" not in schema or extra not in (None, False):
            raise TypeError(
                f"{where}: its schema must be one strict mode accepts, got an object with keys "
                "of its own choosing (dict[str, T]), and strict mode lists every key; use a "
                "TypedDict or a dataclass."
            )
        required = set(schema.get("required", ()))
        properties: dict[str, Any] = {}
        marked = set()
        for key, sub in schema["properties"].items():
            written = self.node(sub, f"{where}, field {key!r}", top=True)
            if key not in required and not admits_null(sub):
                written = nullable(written)
                marked.add(key)
            properties[key] = written
        out["type"] = out.get("type", "object")
        out["properties"] = properties
        out["required"] = list(properties)
        out["additionalProperties"] = False
        if marked:
            self.marks[id(out)] = frozenset(marked)

    def _define(self, ref: str, where: str) -> None:
        name = ref.rsplit("/", 1)[-1]
        if name in self.defs or name not in self.source:
            return
        self.defs[name] = {}  # taken, so a definition that refers to itself ends here
        self.defs[name] = self.node(self.source[name], f"{where} ({name})")


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` admitting null as well."""
    kind = schema.get("type")
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    if isinstance(kind, (str, list)) and "$ref" not in schema:
        out = {**schema, "type": [*(kind if isinstance(kind, list) else [kind]), "null"]}
        if "enum" in schema:
            out["enum"] = [*schema["enum"], None]
        return out
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    out = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    return out


def _with_default(description: Any, default: Any, null_is_a_value: bool) -> str:
    """The description with the default said in words (strict mode takes no ``default``)."""
    note = f"(default: {json.dumps(default, ensure_ascii=False)}"
    note += ")" if null_is_a_value else "; null means the default)"
    return f"{description} {note}" if isinstance(description, str) and description else note


def make_strict(
    parameters: dict[str, dict[str, Any]],
    required: tuple[str, ...],
    shapes: Shapes,
    where: str,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], frozenset[str]]:
    """The strict parameters, their ``$defs``, and the parameters whose null means "not
    given"; ``shapes`` keeps what a pydantic model's converter needs to read such nulls."""
    strict = Strict(shapes.defs, where)
    out: dict[str, dict[str, Any]] = {}
    dropped = set()
    for name, schema in parameters.items():
        at = f"{where}: parameter {name!r}"
        written = strict.node(schema, at, top=True)
        if name not in required and not admits_null(schema):
            written = nullable(written)
            dropped.add(name)
        out[name] = written
    for name in shapes.defs:  # definitions no parameter reached (a pydantic model's own)
        if name not in strict.defs:
            strict._define(f"#/$defs/{name}", where)
    for raw, holder in shapes.models:  # each pydantic model as its converter will walk it
        holder["schema"] = strict.node(raw, where, top=True)
    shapes.strict_marks = strict.marks
    shapes.strict_defs = strict.defs
    return out, strict.defs, frozenset(dropped)
