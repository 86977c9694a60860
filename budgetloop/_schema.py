"""``@tool``: a JSON Schema built from a function's type hints and docstring."""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, overload

from ._check import ArgumentError, check_value

_BASE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    list: {"type": "array"},
    dict: {"type": "object"},
    Any: {},
}
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SUPPORTED = "str, int, float, bool, list[T], dict[str, T], Literal[...], T | None, Any"


class Tool:
    """A function the model may call, with the schema it is shown."""

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        if not callable(fn):
            raise TypeError(f"tool: expected a function, got {type(fn).__name__}.")
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not _NAME.match(self.name):
            raise ValueError(
                f"tool {self.name!r}: a tool name is 1 to 64 letters, digits, '_' or '-'; "
                "pass name=... to choose one."
            )
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        self.description: str = summary if description is None else description
        self.parameters: dict[str, dict[str, Any]] = {}
        self.required: tuple[str, ...] = ()
        self._build(arg_docs)
        self.is_async = inspect.iscoroutinefunction(fn)
        functools.update_wrapper(self, fn)

    def _build(self, arg_docs: dict[str, str]) -> None:
        where = f"tool {self.name}"
        try:
            hints = _hints(self.fn)
        except Exception as exc:  # a NameError in a string annotation, say
            raise TypeError(f"{where}: cannot resolve type hints: {exc}.") from exc
        required = []
        for pname, param in inspect.signature(self.fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(
                    f"{where}: parameter {pname!r} is *args or **kwargs; "
                    "a tool takes named parameters only."
                )
            if param.kind is param.POSITIONAL_ONLY:
                raise TypeError(f"{where}: parameter {pname!r} is positional-only.")
            if pname not in hints:
                raise TypeError(
                    f"{where}: parameter {pname!r} has no type hint; add one ({SUPPORTED})."
                )
            schema = schema_for(hints[pname], f"{where}: parameter {pname!r}")
            if pname in arg_docs:
                schema = {**schema, "description": arg_docs[pname]}
            if param.default is param.empty:
                required.append(pname)
            else:
                check_default(schema, param.default, hints[pname], f"{where}: parameter {pname!r}")
                try:
                    json.dumps(param.default, allow_nan=False)
                except (TypeError, ValueError):
                    pass  # a default the model cannot see is still used by Python
                else:
                    schema = {**schema, "default": param.default}
            self.parameters[pname] = schema
        self.required = tuple(required)

    @property
    def schema(self) -> dict[str, Any]:
        """The dict handed to the model."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": dict(self.parameters),
                "required": list(self.required),
                "additionalProperties": False,
            },
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


def check_default(schema: dict[str, Any], default: Any, hint: Any, where: str) -> None:
    """A default the model is shown, and the tool is called with, must fit the parameter's
    hint exactly (nothing coerced) and be a finite number if it is one: else an error here."""
    bad = _non_finite(default)
    if bad is not None:
        what = "is" if bad is default else f"holds {bad!r}, which is"
        raise ValueError(
            f"{where}: default {default!r} {what} not a finite number; a default is shown to "
            "the model as JSON, which has no NaN or infinity (use None for 'no value')."
        )
    try:
        check_value(schema, default, "default", [], strict=True)
    except ArgumentError as exc:
        raise TypeError(
            f"{where}: {exc} ({default!r} does not fit the hint {_hint_name(hint)})."
        ) from None


def _non_finite(value: Any, depth: int = 0) -> float | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if depth < 100 and isinstance(value, (list, tuple)):
        found = (_non_finite(v, depth + 1) for v in value)
    elif depth < 100 and isinstance(value, dict):
        found = (_non_finite(v, depth + 1) for v in value.values())
    else:
        return None
    return next((f for f in found if f is not None), None)


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's annotations, with strings (``from __future__ import annotations``), and
    strings inside generics (``list['int']``, ``Optional['int']``), evaluated in its module as
    ``typing.get_type_hints`` would, at a fraction of the cost."""
    raw = getattr(fn, "__annotations__", None) or {}
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    return {name: _resolve(hint, namespace) for name, hint in raw.items()}


def _resolve(hint: Any, namespace: dict[str, Any], depth: int = 0) -> Any:
    if depth > 50:
        raise TypeError(f"the annotation {hint!r} is nested too deeply")
    if isinstance(hint, typing.ForwardRef):
        hint = hint.__forward_arg__
    if isinstance(hint, str):
        hint = eval(_compiled(hint), namespace)
        if isinstance(hint, str):  # a string naming a string: typing would not go on either
            return hint
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None or origin is Literal or not args:
        return hint
    resolved = tuple(_resolve(a, namespace, depth + 1) for a in args)
    if all(r is a for r, a in zip(resolved, args, strict=True)):
        return hint
    if origin in (Union, types.UnionType):
        return Union.__getitem__(resolved)
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(origin, resolved)
    return hint.copy_with(resolved)  # typing.List['int'] and the like


@functools.lru_cache(maxsize=1024)
def _compiled(annotation: str) -> types.CodeType:
    return compile(annotation, "<annotation>", "eval")


def schema_for(hint: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of one supported type hint; TypeError naming ``where`` otherwise."""
    if hint in _BASE:
        return dict(_BASE[hint])
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        if not args:
            raise TypeError(f"{where}: Literal[()] has no values, so no argument could fit it.")
        if not all(isinstance(a, (str, int, float, bool)) or a is None for a in args):
            raise TypeError(f"{where}: Literal values must be str, int, float, bool or None.")
        kinds = {_json_type(a) for a in args}
        out: dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1:
            out["type"] = kinds.pop()
        return out
    if origin is list and len(args) == 1:
        return {"type": "array", "items": schema_for(args[0], where)}
    if origin is dict and len(args) == 2:
        if args[0] is not str:
            raise TypeError(f"{where}: dict keys must be str (JSON object keys), got {args[0]!r}.")
        return {"type": "object", "additionalProperties": schema_for(args[1], where)}
    if origin in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = schema_for(rest[0], where)
            if not inner:
                return inner  # Any already admits null
            if isinstance(inner.get("type"), str) and "enum" not in inner:
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
    raise TypeError(f"{where}: type {_hint_name(hint)} is not supported; use {SUPPORTED}.")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _hint_name(hint: Any) -> str:
    """A hint as it is written: ``int``, ``list[int]``, ``Literal['a', 'b']``."""
    if isinstance(hint, type) and not typing.get_args(hint):  # list[int] is a type on 3.10
        return hint.__name__
    return repr(hint).replace("typing.", "")


_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the Google-style ``Args:`` descriptions."""
    lines = doc.expandtabs().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    arg_indent = -1
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not in_args:
            in_args = stripped in ("Args:", "Arguments:", "Parameters:")
            continue
        if not stripped:
            continue
        if arg_indent < 0:
            arg_indent = indent
        if indent < arg_indent or (indent == arg_indent and _SECTION.match(stripped)):
            break
        match = _ARG.match(stripped)
        if indent == arg_indent and match:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary), args


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool: ``@tool`` or ``@tool(name=..., description=...)``.

    The schema comes from the type hints; the docstring's first paragraph is the description
    and its ``Args:`` lines describe the parameters. A parameter without a supported type
    hint is a ``TypeError`` here, at decoration time.
    """
    if fn is not None:
        if isinstance(fn, Tool):
            if name is None and description is None:
                return fn
            fn = fn.fn
        return Tool(fn, name=name, description=description)

    def decorate(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description)

    return decorate
