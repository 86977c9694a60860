"""What ``@tool`` reads from a callable: the function behind it (for a ``functools.partial``,
a bound method, a callable object), its parameters, and their type hints.

Only the parameters' hints are resolved: a return hint is never used, so one that names an
import made only under ``TYPE_CHECKING`` does not stop decoration. ``Annotated`` metadata is
kept as the objects it holds, never read as a forward reference.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union


@dataclass(frozen=True)
class Target:
    """A callable as ``@tool`` reads it."""

    name: str  # the name a tool takes by default ("" when the callable has none)
    docs: tuple[str, ...]  # its docstrings, cleaned: a callable object's class's, then __call__'s
    signature: inspect.Signature  # the parameters a caller still passes
    annotations: Mapping[str, Any]  # as written, strings included
    namespace: dict[str, Any]  # the globals the annotations are evaluated in
    bound: frozenset[str]  # keyword parameters a partial already fixed: not the model's
    is_async: bool


def target(fn: Callable[..., Any], where: str) -> Target:
    """The function behind ``fn``, with what a tool needs to know of it."""
    bound: set[str] = set()
    inner: Any = fn.__func__ if isinstance(fn, staticmethod) else fn
    while isinstance(inner, functools.partial):  # keywords a partial fixed are not the model's
        bound.update(inner.keywords)
        inner = inner.func
    owner = None  # the class of a callable object, whose __call__ is the function
    if isinstance(inner, types.MethodType):
        inner = inner.__func__
    elif not (inspect.isfunction(inner) or inspect.isbuiltin(inner) or isinstance(inner, type)):
        call = getattr(type(inner), "__call__", None)  # noqa: B004 - the object's own method
        if inspect.isfunction(call):
            owner, inner = type(inner), call
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{where}: fn must be a callable whose parameters can be read, got {fn!r} "
            f"({type(exc).__name__}: {exc})."
        ) from None
    original = inspect.unwrap(inner)
    docs = [inspect.getdoc(inner) or ""]
    own = owner.__doc__ if owner is not None else None
    if own and not (dataclasses.is_dataclass(owner) and own.startswith(f"{owner.__name__}(")):
        docs.insert(0, inspect.cleandoc(own))  # the class's docstring (not the one a
        # dataclass writes itself: its signature) describes the tool
    name = getattr(owner or inner, "__name__", "")
    is_async = inspect.iscoroutinefunction(inner) or inspect.iscoroutinefunction(fn)
    return Target(
        name=name if isinstance(name, str) else "",
        docs=tuple(docs),
        signature=signature,
        annotations=getattr(inner, "__annotations__", None) or {},
        namespace=getattr(original, "__globals__", {}),
        bound=frozenset(bound),
        is_async=is_async,
    )


def hints_for(
    annotations: Mapping[str, Any],
    names: typing.Iterable[str],
    namespace: dict[str, Any],
    local: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The hints of ``names`` only (strings evaluated in ``namespace``, then ``local``), as
    ``typing.get_type_hints`` would resolve them, at a fraction of the cost."""
    return {
        name: resolve(annotations[name], namespace, local) for name in names if name in annotations
    }


def resolve(
    hint: Any, namespace: dict[str, Any], local: Mapping[str, Any] | None = None, depth: int = 0
) -> Any:
    """One hint with every string in it evaluated, ``Annotated`` metadata left as it is."""
    if type(hint) is type:  # a plain class: nothing in it to resolve
        return hint
    if depth > 50:
        raise TypeError(
            "an annotation must be nested at most 50 levels deep, got one nested deeper, to "
            f"{hint!r}."
        )
    if isinstance(hint, typing.ForwardRef):
        hint = hint.__forward_arg__
    if isinstance(hint, str):
        hint = eval(_compiled(hint), namespace, dict(local) if local else None)
        if isinstance(hint, str):  # a string naming a string: typing would not go on either
            return hint
        if type(hint) is type:
            return hint
    origin = typing.get_origin(hint)
    if origin is Annotated:
        inner = hint.__origin__
        resolved_inner = resolve(inner, namespace, local, depth + 1)
        if resolved_inner is inner:
            return hint
        return Annotated.__class_getitem__((resolved_inner, *hint.__metadata__))
    args = typing.get_args(hint)
    if origin is None or origin is Literal or not args:
        return hint
    resolved = tuple(resolve(a, namespace, local, depth + 1) for a in args)
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


def hint_name(hint: Any) -> str:
    """A hint as it is written: ``int``, ``list[int]``, ``Literal['a', 'b']``."""
    if isinstance(hint, type) and not typing.get_args(hint):  # list[int] is a type on 3.10
        return hint.__name__
    return repr(hint).replace("typing.", "")
