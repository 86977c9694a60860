"""``@tool``: a JSON Schema built from a function's type hints and docstring."""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, SupportsIndex, overload

from .._engine._valid import type_name
from .._tools._jsonable import jsonable
from ._check import ArgumentError, check_value
from ._classes import Classes
from ._docstring import parse_docstring
from ._field import Default, parameter_default
from ._hints import Target, hint_name, hints_for, target
from ._shapes import SUPPORTED, Choices, Convert

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOTHING: Mapping[str, Any] = MappingProxyType({})
_NAMED = inspect.Parameter.POSITIONAL_OR_KEYWORD
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY

__all__ = ["SUPPORTED", "Tool", "check_default", "parse_docstring", "tool"]


NeedsApproval = bool | Callable[[dict[str, Any]], Any]


class Tool:
    """A function the model may call, with the schema it is shown.

    ``needs_approval`` is a plain attribute, read by the loop before each batch: False (the
    default), True (every call is held for a person's decision), or a predicate of a call's
    checked arguments (a dict, as the trace keeps them) that says whether this call is; a
    predicate that raises holds the call.
    """

    # What a tool made without __init__ (a replay's stand-in) has: no conversions.
    strict: bool = False
    needs_approval: NeedsApproval = False
    _converts: Mapping[str, Convert] = _NOTHING
    _dropped: frozenset[str] = frozenset()  # strict: parameters whose null means "not given"
    _fills: Mapping[str, Default] = _NOTHING  # defaults a pydantic Field gives, put in by us
    # The schema an argument the parameters do not name is checked with; None: it is refused
    # (a schema written elsewhere, an MCP server's, may let such arguments through).
    extra_arguments: dict[str, Any] | None = None
    server: str | None = None  # the MCP server a tool is on (budgetloop.mcp), named in the trace

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
        needs_approval: NeedsApproval = False,
    ) -> None:
        if isinstance(fn, classmethod):
            raise TypeError(
                "tool: fn must be a function, got a classmethod object; decorate the method as "
                "its class reaches it: tool(TheClass.method)."
            )
        if not callable(fn):
            raise TypeError(f"tool: fn must be a function, got {type_name(fn)}.")
        found = target(fn, f"tool {name or ''}".rstrip())
        self.fn: Callable[..., Any] = fn.__func__ if isinstance(fn, staticmethod) else fn
        self.name: str = name or found.name
        if not _NAME.match(self.name):
            raise ValueError(
                f"tool: name must be 1 to 64 letters, digits, '_' or '-', got {self.name!r}; "
                "pass name=... to choose one."
            )
        summary, arg_docs = "", dict[str, str]()
        for doc in found.docs:
            text, args = parse_docstring(doc)
            summary = summary or text
            arg_docs = {**args, **arg_docs}
        self.description: str = summary if description is None else description
        self.strict = strict
        self.needs_approval = check_needs_approval(needs_approval, f"tool {self.name}")
        self.parameters: dict[str, dict[str, Any]] = {}
        self.required: tuple[str, ...] = ()
        self._defs: dict[str, Any] = {}
        self._build(found, arg_docs)
        self.is_async = found.is_async
        functools.update_wrapper(self, found_function(fn), updated=())

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """A ``@tool`` function at a module's top level pickles as that name (the function
        under it is no longer reachable by its own); any other tool, as its parts."""
        module = sys.modules.get(getattr(self, "__module__", ""))
        name = getattr(self, "__qualname__", "")
        found: Any = module
        for part in name.split("."):
            found = getattr(found, part, None)
        if found is self and "<locals>" not in name:
            return name
        return super().__reduce_ex__(protocol)

    def _build(self, found: Target, arg_docs: dict[str, str]) -> None:
        where = f"tool {self.name}"
        params = [p for p in found.signature.parameters.values() if p.name not in found.bound]
        for param in params:
            if param.kind is not _NAMED and param.kind is not _KEYWORD_ONLY:
                _check_kind(param, where)
        try:
            hints = hints_for(found.annotations, [p.name for p in params], found.namespace)
        except Exception as exc:  # a NameError in a string annotation, say
            raise TypeError(
                f"{where}: type hints must be resolvable, got "
                f"{type(exc).__name__}: {str(exc).rstrip('.')}."
            ) from exc
        shapes = Classes(self.strict)
        required = []
        converts: dict[str, Convert] = {}
        fills: dict[str, Default] = {}
        for param in params:
            pname = param.name
            if pname not in hints:
                raise TypeError(
                    f"{where}: parameter {pname!r} must be given a type hint, got none; add one "
                    f"({SUPPORTED})."
                )
            at = f"{where}: parameter {pname!r}"
            hint, default = parameter_default(hints[pname], param, at)
            schema, convert = shapes.build(hint, at)
            if convert is not None:
                converts[pname] = convert
            if pname in arg_docs:  # the docstring wins over an Annotated description
                schema = {**schema, "description": arg_docs[pname]}
            if default is None:
                required.append(pname)
            elif default.factory is None:
                shown = check_default(schema, default.value, hints[pname], at, shapes.defs)
                if shown is not _HIDDEN:
                    schema = {**schema, "default": shown}
            if default is not None and default.from_field:
                fills[pname] = default
            self.parameters[pname] = schema
        self.required = tuple(required)
        self._defs = shapes.defs
        self._converts = converts
        self._fills = fills
        if self.strict:
            from ._strict import make_strict  # only strict tools need it

            self.parameters, self._defs, self._dropped = make_strict(
                self.parameters, self.required, shapes, where
            )
            self.required = tuple(self.parameters)

    @property
    def defs(self) -> dict[str, Any]:
        """The ``$defs`` the parameters' ``$ref``s point into (a replay's stand-in reads them
        from its recorded schema)."""
        found: dict[str, Any] | None = self.__dict__.get("_defs")
        if found is None:
            params = self.schema.get("parameters")
            recorded = params.get("$defs") if isinstance(params, dict) else None
            found = recorded if isinstance(recorded, dict) else {}
            self.__dict__["_defs"] = found
        return found

    @property
    def schema(self) -> dict[str, Any]:
        """The dict handed to the model."""
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": dict(self.parameters),
            "required": list(self.required),
            "additionalProperties": False,
        }
        if self._defs:
            parameters["$defs"] = dict(self._defs)
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": parameters,
        }
        if self.strict:
            out["strict"] = True
        return out

    def arguments_for(self, args: dict[str, Any], choices: Choices) -> dict[str, Any]:
        """What the function is called with, from the checked arguments: each value as its
        hint's type (a member for an Enum, an instance for a dataclass or pydantic model...)."""
        converts, dropped, fills = self._converts, self._dropped, self._fills
        if not converts and not dropped and not fills:
            return args
        out = {}
        for key, value in args.items():
            if value is None and key in dropped:
                continue  # a strict schema's null for "not given": the default applies
            convert = converts.get(key)
            out[key] = value if convert is None else convert(value, f"{self.name}.{key}", choices)
        for key, default in fills.items():  # Python would pass the Field itself, or nothing
            if key not in out:
                out[key] = default.make()
        return out

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


def check_needs_approval(value: Any, where: str) -> NeedsApproval:
    """``needs_approval`` as a tool takes it: True, False, or a function of the arguments."""
    if isinstance(value, bool) or callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(
        f"{where}: needs_approval must be True, False or a function (arguments) -> bool, "
        f"got {type_name(value)}."
    )


def needs_approval(tool: Tool, arguments: dict[str, Any]) -> bool:
    """Whether this call of ``tool`` (its checked ``arguments``) is held for a person: the
    tool's ``needs_approval``, asked of the arguments when it is a predicate. A predicate that
    raises holds the call: when in doubt, a person decides."""
    rule = getattr(tool, "needs_approval", False)
    if isinstance(rule, bool):
        return rule
    if not callable(rule):
        return True  # set after the tool was made, to something that is not a rule: ask
    try:
        return bool(rule(arguments))
    except Exception:
        return True


def found_function(fn: Any) -> Any:
    """What ``functools.update_wrapper`` copies names from: the function behind a partial."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _check_kind(param: inspect.Parameter, where: str) -> None:
    """A model passes arguments by name, as one JSON object: say what to write instead."""
    pname = param.name
    if param.kind is param.VAR_POSITIONAL:
        raise TypeError(
            f"{where}: parameter {pname!r} must be one a model can pass, got *{pname} (a model "
            f"sends named arguments); take a list instead: {pname}: list[...]."
        )
    if param.kind is param.VAR_KEYWORD:
        raise TypeError(
            f"{where}: parameter {pname!r} must be one a model can pass, got **{pname} (a model "
            "sends only the arguments the schema names); name each parameter, or take a dict: "
            f"{pname}: dict[str, ...]."
        )
    if param.kind is param.POSITIONAL_ONLY:
        raise TypeError(
            f"{where}: parameter {pname!r} must be one a model can pass, got a positional-only "
            "one (a model sends named arguments); remove the '/' from the signature."
        )


_HIDDEN = object()  # a default the model is not shown


def check_default(
    schema: dict[str, Any],
    default: Any,
    hint: Any,
    where: str,
    defs: dict[str, Any] | None = None,
) -> Any:
    """A default the model is shown, and the tool is called with, must fit the parameter's
    hint exactly (nothing coerced) and be a finite number if it is one: else an error here.
    Returns the default as the schema shows it (JSON), or ``_HIDDEN`` if JSON cannot."""
    value = jsonable(default)
    bad = _non_finite(value)
    if bad is not None:
        expected = "a finite number" if bad is value else "one holding finite numbers only"
        held = "" if bad is value else f", which holds {bad!r}"
        raise ValueError(
            f"{where}: default must be {expected}, got {default!r}{held}; a default is shown to "
            "the model as JSON, which has no NaN or infinity (use None for 'no value')."
        )
    try:
        check_value(schema, value, "default", [], strict=True, defs=defs)
    except ArgumentError as exc:
        raise TypeError(
            f"{where}: default must be {hint_name(hint)} (its hint), got {default!r} ({exc})."
        ) from None
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _HIDDEN  # a default the model cannot see is still used by Python
    return value


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


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    needs_approval: NeedsApproval | None = None,
) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    needs_approval: NeedsApproval | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    needs_approval: NeedsApproval | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool: ``@tool`` or ``@tool(name=..., description=..., strict=...)``.

    The schema comes from the type hints; the docstring's text before its first section is
    the description, and its parameter sections (Google ``Args:``, NumPy ``Parameters``,
    Sphinx ``:param x:``) describe the parameters. A parameter without a supported type hint
    is a ``TypeError`` here, at decoration time. ``strict=True`` writes the schema OpenAI's
    strict function calling accepts, and the OpenAI adapter sends it with ``"strict": true``.
    ``needs_approval=True``, or a predicate of a call's checked arguments
    (``lambda args: args["amount"] > 1000``), holds the tool's calls for a person's decision
    before they run: ``run(..., approve=fn)`` asks ``fn``, a stepped ``Session`` waits for
    ``session.approve()`` or ``session.deny()``.
    Given a ``Tool``, returns it as it is unless an option changes it.
    """
    if strict is not None and not isinstance(strict, bool):
        raise TypeError(f"tool: strict must be a bool, got {type_name(strict)}.")
    if needs_approval is not None:
        check_needs_approval(needs_approval, "tool")
    if fn is not None:
        if isinstance(fn, Tool):
            if name is None and description is None and strict in (None, fn.strict):
                if needs_approval is None:
                    return fn
                marked = copy.copy(fn)  # any kind of tool (an MCP server's) stays what it is
                marked.needs_approval = needs_approval
                return marked
            return Tool(
                fn.fn,
                name=name or fn.name,
                description=fn.description if description is None else description,
                strict=fn.strict if strict is None else strict,
                needs_approval=fn.needs_approval if needs_approval is None else needs_approval,
            )
        return Tool(
            fn,
            name=name,
            description=description,
            strict=bool(strict),
            needs_approval=False if needs_approval is None else needs_approval,
        )

    def decorate(f: Callable[..., Any]) -> Tool:
        return tool(
            f, name=name, description=description, strict=strict, needs_approval=needs_approval
        )

    return decorate
