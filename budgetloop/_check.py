"""Checking a model's arguments against a tool's schema, with one coercion where intent is clear.

The only coercion is a number written as a string, for an integer or number parameter:
``"118.4"`` becomes ``118.4``. Everything else that does not fit comes back as an error the
model can read and act on, naming the argument, what was expected and what arrived.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ._schema import Tool

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class ArgumentError(ValueError):
    """Arguments that do not fit a tool; the message is what the model is told."""


def parse_arguments(tool_name: str, raw: Any) -> dict[str, Any]:
    """The arguments as a dict, from a JSON string or a dict."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ArgumentError(
                f"{tool_name}: arguments are not valid JSON ({exc}); send a JSON object."
            ) from None
    if not isinstance(raw, dict):
        raise ArgumentError(f"{tool_name}: arguments must be a JSON object, got {json_kind(raw)}.")
    return raw


def check_arguments(tool: Tool, raw: Any) -> tuple[dict[str, Any], list[str]]:
    """The checked arguments and the paths of the values that were coerced."""
    args = parse_arguments(tool.name, raw)
    params = tool.parameters
    for key in args:
        if key not in params:
            expected = ", ".join(params) or "no arguments"
            raise ArgumentError(f"{tool.name}.{key}: unknown argument; expected {expected}.")
    for key in tool.required:
        if key not in args:
            raise ArgumentError(f"{tool.name}.{key}: missing required argument.")
    coerced: list[str] = []
    checked = {
        key: check_value(params[key], value, f"{tool.name}.{key}", coerced)
        for key, value in args.items()
    }
    return checked, coerced


def check_value(schema: dict[str, Any], value: Any, path: str, coerced: list[str]) -> Any:
    """``value`` checked against a schema that ``@tool`` produced."""
    if "anyOf" in schema:
        if value is None:
            return None
        return check_value(schema["anyOf"][0], value, path, coerced)
    if "enum" in schema:
        options = schema["enum"]
        if not any(value == o and type(value) is type(o) for o in options):
            listed = ", ".join(json.dumps(o) for o in options)
            raise ArgumentError(f"{path}: expected one of {listed}, got {_show(value)}.")
        return value
    kind = schema.get("type")
    if kind is None:
        return value
    kinds = kind if isinstance(kind, list) else [kind]
    if value is None and "null" in kinds:
        return None
    expected = next(k for k in kinds if k != "null")
    if expected == "string" and isinstance(value, str):
        return value
    if expected == "boolean" and isinstance(value, bool):
        return value
    if expected in ("integer", "number"):
        return _check_number(expected, value, path, coerced)
    if expected == "array" and isinstance(value, list):
        items = schema.get("items")
        if items is None:
            return value
        return [check_value(items, v, f"{path}[{i}]", coerced) for i, v in enumerate(value)]
    if expected == "object" and isinstance(value, dict):
        inner = schema.get("additionalProperties")
        if not isinstance(inner, dict):
            return value
        return {k: check_value(inner, v, f"{path}.{k}", coerced) for k, v in value.items()}
    raise ArgumentError(f"{path}: expected {expected}, got {json_kind(value, python=True)}.")


def _check_number(expected: str, value: Any, path: str, coerced: list[str]) -> Any:
    written = isinstance(value, str)
    if written and (_INT if expected == "integer" else _NUMBER).fullmatch(value):
        try:
            value = int(value) if expected == "integer" else float(value)
        except ValueError:  # more digits than Python will parse
            raise ArgumentError(
                f"{path}: expected {expected}, got a {len(value)}-digit string."
            ) from None
        coerced.append(path)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{path}: expected {expected}, got {json_kind(value, python=True)}.")
    if expected == "number":
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise ArgumentError(f"{path}: expected a finite number, got {_show(value)}.")
        return number
    if isinstance(value, float):
        if not value.is_integer():
            raise ArgumentError(f"{path}: expected integer, got {value!r}.")
        return int(value)
    return value


def json_kind(value: Any, python: bool = False) -> str:
    """The name of a JSON value's kind: ``str``/``int``... with ``python``, else JSON's names."""
    if value is None:
        return "null"
    if python:
        return type(value).__name__
    names = {dict: "object", list: "array", str: "string", bool: "boolean"}
    return names.get(type(value), "number")


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
