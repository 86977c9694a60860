"""Helpers for the schema tests: every tool they make has its schema checked as JSON Schema
(Draft 2020-12), and its arguments run through the check and the conversion as the loop runs
them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema

from budgetloop import Tool, tool
from budgetloop._schema._check import check_arguments

VALIDATOR = jsonschema.Draft202012Validator


def made(fn: Callable[..., Any], **options: Any) -> Tool:
    """``tool(fn, **options)``, its parameters' schema checked as a Draft 2020-12 schema."""
    t = tool(fn, **options)
    VALIDATOR.check_schema(t.schema["parameters"])
    return t


def properties(t: Tool) -> dict[str, Any]:
    return t.schema["parameters"]["properties"]  # type: ignore[no-any-return]


def received(t: Tool, arguments: Any) -> dict[str, Any]:
    """What the function is called with for these arguments: checked, then converted. The
    checked arguments must validate against the tool's schema (jsonschema agreeing)."""
    choices: dict[str, int] = {}
    checked, _ = check_arguments(t, arguments, choices)
    VALIDATOR(t.schema["parameters"]).validate(checked)
    return t.arguments_for(checked, choices)


# OpenAI's strict function calling, as its documentation states the rules, written down once
# here to hold @tool(strict=True) to them (and not derived from budgetloop's own code).
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref",
    "$defs", "description", "title", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip


def strict_violations(schema: Any, where: str = "parameters", root: bool = True) -> list[str]:
    """Where ``schema`` breaks a strict-mode rule: every object closed, with every property
    required; no keyword outside the accepted ones; a ``$ref`` alone; arrays say their items;
    every value typed; the root a plain object."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return [f"{where}: not an object"]
    if root and (schema.get("type") != "object" or "anyOf" in schema):
        found.append(f"{where}: the root is not a plain object")
    for key in schema:
        if key not in STRICT_KEYWORDS:
            found.append(f"{where}: keyword {key!r}")
    if "$ref" in schema and len(schema) > 1:
        found.append(f"{where}: $ref with siblings {sorted(set(schema) - {'$ref'})}")
    if not ({"type", "anyOf", "$ref", "enum"} & set(schema)):
        found.append(f"{where}: no type")
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            found.append(f"{where}: an object without properties")
        else:
            if schema.get("additionalProperties") is not False:
                found.append(f"{where}: additionalProperties is not false")
            if schema.get("required") != list(properties):
                found.append(f"{where}: required is not every property")
            for name, sub in properties.items():
                found += strict_violations(sub, f"{where}.{name}", False)
    if "array" in kinds:
        if "items" not in schema:
            found.append(f"{where}: an array without items")
        else:
            found += strict_violations(schema["items"], f"{where}[]", False)
    for i, branch in enumerate(schema.get("anyOf", ())):
        found += strict_violations(branch, f"{where}|{i}", False)
    for name, sub in schema.get("$defs", {}).items() if root else ():
        found += strict_violations(sub, f"$defs.{name}", False)
    return found
