"""A schema written elsewhere (an MCP server's ``inputSchema``), as the argument check reads it.

The check (``_fit``) enforces the keywords in ``ENFORCED``; those in ``DESCRIBING`` only
describe. A schema from elsewhere may hold other keywords (``not``, ``if``,
``patternProperties``...), a keyword whose value the check cannot use (``"minimum": "five"``),
a ``$ref`` it cannot follow, or nesting deeper than ``MAX_NESTING``: each such part is left out
of the copy the check reads (what it constrained is passed on unchecked) and named once in
``Checkable.unchecked``. The model is still sent the schema as it was written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

# What the check enforces, by the kind of value the keyword takes.
_SCHEMAS = frozenset(["items", "additionalProperties"])  # one subschema
_SCHEMA_LISTS = frozenset(["anyOf", "oneOf", "allOf", "prefixItems"])
_NUMBERS = frozenset(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"])
_COUNTS = frozenset(["minLength", "maxLength", "minItems", "maxItems", "minProperties",
                     "maxProperties"])  # fmt: skip
_OTHERS = frozenset(["type", "enum", "const", "properties", "required", "uniqueItems",
                     "pattern", "$ref"])  # fmt: skip
ENFORCED = _SCHEMAS | _SCHEMA_LISTS | _NUMBERS | _COUNTS | _OTHERS
DESCRIBING = frozenset(["description", "title", "default", "examples", "format", "$schema",
                        "$id", "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                        "definitions", "contentMediaType", "contentEncoding"])  # fmt: skip
_TYPES = frozenset(["string", "integer", "number", "boolean", "array", "object", "null"])
MAX_NESTING = 60  # schemas inside schemas the check walks; deeper ones are not checked
_DEFS = ("#/$defs/", "#/definitions/")


@dataclass(frozen=True)
class Checkable:
    """A tool's schema as the check reads it: its parameters, the required ones, the schema of
    an argument it does not name (None: such an argument is refused), the definitions its
    ``$ref``s point into, and what of it the check does not enforce, in words."""

    parameters: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    extra: dict[str, Any] | None
    defs: dict[str, Any]
    unchecked: tuple[str, ...]


def checkable(schema: Any) -> Checkable:
    """The parts of ``schema`` (an object's schema) the argument check can enforce."""
    walk = _Walk()
    root = schema if isinstance(schema, dict) else {}
    named: dict[str, Any] = {}
    for key in ("definitions", "$defs"):  # $defs wins where both name one
        found = root.get(key)
        if isinstance(found, dict):
            named.update(found)
    walk.names = set(named)
    defs = {name: walk.copy(sub, 1) for name, sub in named.items()}
    properties = root.get("properties")
    parameters = (
        {key: walk.copy(sub, 1) for key, sub in properties.items()}
        if isinstance(properties, dict)
        else {}
    )
    required = root.get("required")
    extra = root.get("additionalProperties", True)
    for key in root:
        if key not in ("type", "properties", "required", "additionalProperties", *DESCRIBING):
            walk.left_out(f"{key} (at the top level)")
    if root.get("type", "object") != "object":
        walk.left_out(f"type {root.get('type')!r} (at the top level; arguments are an object)")
    return Checkable(
        parameters=parameters,
        required=tuple(k for k in required if isinstance(k, str) and k in parameters)
        if isinstance(required, list)
        else (),
        extra=None if extra is False else walk.copy(extra, 1),
        defs=defs,
        unchecked=tuple(walk.unchecked),
    )


class _Walk:
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.unchecked: list[str] = []

    def left_out(self, what: str) -> None:
        if what not in self.unchecked:
            self.unchecked.append(what)

    def copy(self, schema: Any, depth: int) -> dict[str, Any]:
        """``schema`` with only what the check enforces (or is told by), as a dict."""
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            self.left_out("a schema that is not an object")
            return {}
        if depth > MAX_NESTING:
            self.left_out(f"schemas nested deeper than {MAX_NESTING} levels")
            return {}
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in DESCRIBING:
                if key in ("description", "title", "default"):
                    out[key] = value
                continue
            if key not in ENFORCED:
                self.left_out(key)
                continue
            kept = self._keyword(key, value, depth)
            if kept is _SKIP:
                continue
            if kept is _BAD:
                self.left_out(f"{key} (its value is not one the check can use)")
            else:
                out[key] = kept
        return out

    def _keyword(self, key: str, value: Any, depth: int) -> Any:
        if key in _SCHEMAS:
            if value is False:  # no (further) items, no other fields: the check knows false
                return False
            return self.copy(value, depth + 1)
        if key in _SCHEMA_LISTS:
            if not isinstance(value, list) or not value:
                return _BAD
            return [self.copy(v, depth + 1) for v in value]
        if key == "properties":
            if not isinstance(value, dict):
                return _BAD
            return {k: self.copy(v, depth + 1) for k, v in value.items()}
        if key in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return _BAD
            if not math.isfinite(value) or (key == "multipleOf" and value <= 0):
                return _BAD
            return value
        if key in _COUNTS:
            good = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            return value if good else _BAD
        return self._other(key, value)

    def _other(self, key: str, value: Any) -> Any:
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            good = kinds and all(isinstance(k, str) and k in _TYPES for k in kinds)
            return value if good else _BAD
        if key == "enum":
            return value if isinstance(value, list) and value else _BAD
        if key == "required":
            good = isinstance(value, list) and all(isinstance(k, str) for k in value)
            return value if good else _BAD
        if key == "uniqueItems":
            return value if isinstance(value, bool) else _BAD
        if key == "pattern":
            try:
                re.compile(value)
            except (TypeError, re.error, RecursionError, OverflowError):
                return _BAD
            return value
        if key == "$ref":
            return self._ref(value)
        return value  # const: any JSON value

    def _ref(self, ref: Any) -> Any:
        """A ``$ref`` into the schema's ``$defs`` or ``definitions``, as the check follows it
        (``#/$defs/Name``); any other is not followed."""
        for prefix in _DEFS:
            if isinstance(ref, str) and ref.startswith(prefix):
                name = ref[len(prefix) :]
                if name in self.names:
                    return f"#/$defs/{name}"
        self.left_out(f"$ref {ref!r} (the check follows only #/$defs/... and #/definitions/...)")
        return _SKIP


_BAD = object()  # a keyword whose value the check cannot use
_SKIP = object()
