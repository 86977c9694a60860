"""Checking a model's arguments against a tool's schema, with one coercion where intent is clear.

The only coercion is a number written as a string, for an integer or number parameter:
``"118.4"`` becomes ``118.4``. In a union it applies only when no branch fits the value as
sent (``int | str`` keeps ``"3"`` a string). Everything else that does not fit comes back as
an error the model can read and act on, naming the argument, what was expected and what
arrived, with no closing period: ``convert.amount: expected number, got str``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._trace._read_fast import MAX_DEPTH
from ._arg_error import PREVIEW, ArgumentError, Name, Part, Shown, json_kind, render, show
from ._fit import Fit

CONTAINERS = (dict, list, tuple)  # what nests, for ``nested_too_deeply``
SCALARS = frozenset({str, int, float, bool, type(None)})  # what cannot (exactly these types)


class Signature(Protocol):
    """What the check reads of a ``Tool``: its name, its parameters' schemas, the required ones,
    the ``$defs`` their ``$ref``s point into, and the schema of arguments it does not name (None:
    they are refused)."""

    @property
    def name(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, dict[str, Any] | None]: ...
    @property
    def required(self) -> Sequence[str]: ...
    @property
    def defs(self) -> dict[str, Any]: ...
    @property
    def extra_arguments(self) -> dict[str, Any] | None: ...


__all__ = [
    "PREVIEW",
    "ArgumentError",
    "Name",
    "Part",
    "Shown",
    "Signature",
    "check_arguments",
    "check_value",
    "json_kind",
    "nested_too_deeply",
    "parse_arguments",
    "render",
    "show",
    "too_deep",
]


def parse_arguments(tool_name: Any, raw: Any) -> dict[str, Any]:
    """The arguments as a dict, from a JSON string or a dict, nested no deeper than a trace
    keeps them (``too_deep``)."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        text = raw
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise ArgumentError(  # the model reads this
                Name(tool_name), f": arguments are not valid JSON ({exc}); send a JSON object"
            ) from None
        except RecursionError:
            raise too_deep(tool_name) from None
        if not isinstance(raw, dict):
            raise not_an_object(tool_name, raw)
        # JSON text with at most MAX_DEPTH brackets cannot nest deeper: no walk needed
        if text.count("{") + text.count("[") > MAX_DEPTH and nested_too_deeply(raw):
            raise too_deep(tool_name)
        return raw
    if not isinstance(raw, dict):
        raise not_an_object(tool_name, raw)
    if type(raw) is dict and SCALARS.issuperset(map(type, raw.values())):
        return raw  # a dict of JSON scalars (as a batch's parsed arguments mostly are)
    if nested_too_deeply(raw):
        raise too_deep(tool_name)
    return raw


def not_an_object(tool_name: Any, raw: Any) -> ArgumentError:
    return ArgumentError(  # the model reads this
        Name(tool_name), f": arguments must be a JSON object, got {json_kind(raw)}"
    )


def nested_too_deeply(value: Any) -> bool:
    """Whether ``value`` holds lists or dicts more than ``MAX_DEPTH`` levels deep (itself the
    first): deeper than a trace keeps. Walked with a stack, so no depth raises here; only the
    containers are stacked, and a dict of JSON scalars alone is not walked at all."""
    if type(value) is dict and SCALARS.issuperset(map(type, value.values())):
        return False
    if not isinstance(value, CONTAINERS):
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return True
        for inner in item.values() if isinstance(item, dict) else item:
            if isinstance(inner, CONTAINERS):
                stack.append((inner, depth + 1))
    return False


def too_deep(tool_name: Any) -> ArgumentError:
    """The error of arguments nested deeper than a trace keeps (or than JSON can read here)."""
    return ArgumentError(  # the model reads this
        Name(tool_name), f": arguments must be nested at most {MAX_DEPTH} levels deep, got deeper"
    )


def check_arguments(
    tool: Signature, raw: Any, choices: dict[str, int] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The checked arguments (JSON values still) and the paths of the values that were
    coerced; ``choices`` gets the branch each union's value fitted, by path."""
    args = parse_arguments(tool.name, raw)
    params, extra = tool.parameters, tool.extra_arguments
    for key in args:
        if key not in params and extra is None:
            expected: Part = Name(", ".join(params)) if params else "no arguments"
            raise ArgumentError(  # the model reads this
                Name(f"{tool.name}.{key}"), ": unknown argument; expected ", expected
            )
    for key in tool.required:
        if key not in args:
            # the model reads this
            raise ArgumentError(Name(f"{tool.name}.{key}"), ": missing required argument")
    coerced: list[str] = []
    fit = Fit(tool.defs, coerced, False, choices)
    checked = {
        key: fit.check(params.get(key, extra) or {}, value, f"{tool.name}.{key}")
        for key, value in args.items()
    }
    return checked, coerced


def check_value(
    schema: dict[str, Any],
    value: Any,
    path: str,
    coerced: list[str],
    strict: bool = False,
    defs: dict[str, Any] | None = None,
) -> Any:
    """``value`` checked against a schema that ``@tool`` produced.

    ``strict`` (for a parameter's default) coerces nothing: not a number written as a string,
    not an integral float for an integer.
    """
    return Fit(defs, None if strict else coerced, exact=strict).check(schema, value, path)
