"""Checking a model's arguments against a tool's schema, with one coercion where intent is clear.

The only coercion is a number written as a string, for an integer or number parameter:
``"118.4"`` becomes ``118.4``. Everything else that does not fit comes back as an error the
model can read and act on, naming the argument, what was expected and what arrived, with no
closing period: ``convert.amount: expected number, got str``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._redact import redact_value

if TYPE_CHECKING:
    from ._schema import Tool

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
PREVIEW = 60  # the most characters of a value an error message shows


@dataclass(frozen=True)
class Name:
    """Part of a message someone else wrote: a tool name, an argument's path, a list of names.
    ``quoted`` shows it with ``repr``."""

    text: Any
    quoted: bool = False


@dataclass(frozen=True)
class Shown:
    """A value the model sent, in a message: as JSON, cut to ``PREVIEW`` characters if ``cut``."""

    value: Any
    cut: bool = True


Part = str | Name | Shown


def render(parts: tuple[Part, ...], redact: Callable[[str], str] | None = None) -> str:
    """The message; with ``redact``, every ``Name`` and ``Shown`` part is redacted before it is
    quoted, encoded or cut (a plain ``str`` part is budgetloop's own words, kept as is)."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = part.text if isinstance(part, Name) else part.value
        if redact is not None:
            value = redact_value(value, redact)
        if isinstance(part, Shown):
            out.append(show(value, part.cut))
        else:
            out.append(repr(value) if part.quoted else str(value))
    return "".join(out)


class ArgumentError(ValueError):
    """Arguments that do not fit a tool; the message is what the model is told.

    ``parts`` are the message in pieces, so that ``redacted(redact)`` can write it for a
    redacted trace with what the model wrote redacted before any of it is quoted or cut.
    """

    def __init__(self, *parts: Part) -> None:
        self.parts = parts
        super().__init__(render(parts))

    def redacted(self, redact: Callable[[str], str]) -> str:
        """The message as a redacted trace keeps it."""
        return render(self.parts, redact)


def parse_arguments(tool_name: Any, raw: Any) -> dict[str, Any]:
    """The arguments as a dict, from a JSON string or a dict."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ArgumentError(
                Name(tool_name), f": arguments are not valid JSON ({exc}); send a JSON object"
            ) from None
        except RecursionError:
            raise ArgumentError(
                Name(tool_name), ": arguments are nested too deeply to read; send a flat object"
            ) from None
    if not isinstance(raw, dict):
        raise ArgumentError(
            Name(tool_name), f": arguments must be a JSON object, got {json_kind(raw)}"
        )
    return raw


def check_arguments(tool: Tool, raw: Any) -> tuple[dict[str, Any], list[str]]:
    """The checked arguments and the paths of the values that were coerced."""
    args = parse_arguments(tool.name, raw)
    params = tool.parameters
    for key in args:
        if key not in params:
            expected: Part = Name(", ".join(params)) if params else "no arguments"
            raise ArgumentError(
                Name(f"{tool.name}.{key}"), ": unknown argument; expected ", expected
            )
    for key in tool.required:
        if key not in args:
            raise ArgumentError(Name(f"{tool.name}.{key}"), ": missing required argument")
    coerced: list[str] = []
    checked = {
        key: check_value(params[key], value, f"{tool.name}.{key}", coerced)
        for key, value in args.items()
    }
    return checked, coerced


def check_value(
    schema: dict[str, Any], value: Any, path: str, coerced: list[str], strict: bool = False
) -> Any:
    """``value`` checked against a schema that ``@tool`` produced.

    ``strict`` (for a parameter's default) coerces nothing: not a number written as a string,
    not an integral float for an integer.
    """
    if "anyOf" in schema:
        if value is None:
            return None
        return check_value(schema["anyOf"][0], value, path, coerced, strict)
    if "enum" in schema:
        options = schema["enum"]
        if not any(value == o and type(value) is type(o) for o in options):
            listed: list[Part] = []
            for i, option in enumerate(options):
                listed += [", "] * (i > 0) + [Shown(option, cut=False)]
            raise ArgumentError(Name(path), ": expected one of ", *listed, ", got ", Shown(value))
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
        return _check_number(expected, value, path, coerced, strict)
    if expected == "array" and isinstance(value, list):
        items = schema.get("items")
        if items is None:
            return value
        return [
            check_value(items, v, f"{path}[{i}]", coerced, strict) for i, v in enumerate(value)
        ]
    if expected == "object" and isinstance(value, dict):
        inner = schema.get("additionalProperties")
        if not isinstance(inner, dict):
            return value
        return {k: check_value(inner, v, f"{path}.{k}", coerced, strict) for k, v in value.items()}
    raise ArgumentError(Name(path), f": expected {expected}, got {json_kind(value, python=True)}")


def _check_number(
    expected: str, value: Any, path: str, coerced: list[str], strict: bool = False
) -> Any:
    written = isinstance(value, str)
    if written and not strict and (_INT if expected == "integer" else _NUMBER).fullmatch(value):
        try:
            value = int(value) if expected == "integer" else float(value)
        except ValueError:  # more digits than Python will parse
            raise ArgumentError(
                Name(path), f": expected {expected}, got a {len(value)}-digit string"
            ) from None
        coerced.append(path)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(
            Name(path), f": expected {expected}, got {json_kind(value, python=True)}"
        )
    if expected == "number":
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise ArgumentError(Name(path), ": expected a finite number, got ", Shown(value))
        return number
    if isinstance(value, float):
        if not value.is_integer():
            raise ArgumentError(Name(path), ": expected integer, got ", Shown(value))
        if strict:
            raise ArgumentError(Name(path), ": expected integer, got float")
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


def show(value: Any, cut: bool = True) -> str:
    """A value as an error message shows it: JSON (else ``repr``), cut to ``PREVIEW``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__} object>"
    if not cut or len(text) <= PREVIEW:
        return text
    return text[: PREVIEW - 3] + "..."
