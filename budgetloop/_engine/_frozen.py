"""Frozen dataclasses that are cheap to make.

A frozen dataclass's generated ``__init__`` sets every field with ``object.__setattr__`` (its
own ``__setattr__`` refuses), one call per field; the loop makes a handful of such records a
turn (the step, its call records, messages, the projection), most of their fields at their
defaults. ``fast_init`` gives such a class an ``__init__`` of the same signature that stores
only the fields given a value other than their default: a default stays where the dataclass
leaves it, the class's attribute, and reads the same through the instance (as a session's
rarely set attributes do). Then it calls ``__post_init__``, as the generated one does. Nothing
else about the class changes: assigning to a field still raises ``FrozenInstanceError``, and
``fields``, ``replace``, ``asdict``, equality, hashing, pickling and the repr are the
dataclass's own; only ``vars()`` of an instance leaves out the fields at their defaults.

``unchecked(cls)`` is the same constructor without ``__post_init__``, for a reader that has
already made every check ``__post_init__`` makes (``_trace/_read_fast.py``): the record it makes
is the one ``cls(...)`` makes from the same values.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_UNCHECKED: dict[type, Callable[..., Any]] = {}


class _Factory:
    """The default a field made by a ``default_factory`` shows in the signature."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY = _Factory()


def fast_init(cls: type[T]) -> type[T]:
    """``cls`` (a frozen dataclass with a ``__dict__``), its ``__init__`` replaced by one that
    stores only the fields given other than their defaults. A class this cannot stand for is
    refused when it is defined."""
    where = f"fast_init({cls.__qualname__})"
    if not dataclasses.is_dataclass(cls) or "__slots__" in cls.__dict__:
        raise TypeError(f"{where}: cls must be a dataclass with a __dict__, got {cls!r}.")
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{where}: cls must be a frozen dataclass, got one that is not frozen.")
    fields = dataclasses.fields(cls)
    made = [f.name for f in fields if f.init]
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if [p.name for p in parameters] != made or len(made) != len(fields):
        raise TypeError(
            f"{where}: the parameters of __init__ must be the fields {[f.name for f in fields]}, "
            f"got {[p.name for p in parameters]} (an InitVar or a field with init=False is not "
            "supported)."
        )
    # Made as dataclasses makes its own: inside a maker whose parameters (the defaults and
    # factories) the new function closes over, with the class's module as its globals, so its
    # annotations resolve there (typing.get_type_hints) and no name of it meets a field's.
    names: dict[str, Any] = {
        "__fast_factory": FACTORY,
        "__fast_set": object.__setattr__,
        "__fast_new": object.__new__,
        "__fast_cls": cls,
    }
    signature, body = [], []
    for f, p in zip(fields, parameters, strict=True):
        if p.kind is p.KEYWORD_ONLY and "*" not in signature:
            signature.append("*")
        store = f"__fast_set(self, {f.name!r}, {f.name})\n"
        if f.default_factory is not dataclasses.MISSING:  # no class attribute: always stored
            names[f"__fast_make_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=__fast_factory")
            body.append(
                f"  if {f.name} is __fast_factory:\n   {f.name} = __fast_make_{f.name}()\n"
            )
            body.append(f"  {store}")
        elif f.default is not dataclasses.MISSING and cls.__dict__.get(f.name) is f.default:
            # the class's attribute (as dataclass leaves it) unless another value is given
            names[f"__fast_default_{f.name}"] = f.default
            signature.append(f"{f.name}=__fast_default_{f.name}")
            body.append(f"  if {f.name} is not __fast_default_{f.name}:\n   {store}")
        elif f.default is not dataclasses.MISSING:  # a default the class does not hold
            names[f"__fast_default_{f.name}"] = f.default
            signature.append(f"{f.name}=__fast_default_{f.name}")
            body.append(f"  {store}")
        else:
            signature.append(f.name)
            body.append(f"  {store}")
    source = (
        f"def __fast_maker({', '.join(names)}):\n"
        f" def __init__(self, {', '.join(signature)}):\n"
        + "".join(body)
        + ("  self.__post_init__()\n" if hasattr(cls, "__post_init__") else "  pass\n")
        + f" def __unchecked({', '.join(signature)}):\n"
        + "  self = __fast_new(__fast_cls)\n"
        + "".join(body)
        + "  return self\n"
        + " return __init__, __unchecked\n"
    )
    module = sys.modules.get(cls.__module__)
    made_in: dict[str, Any] = {}
    exec(source, vars(module) if module is not None else {}, made_in)
    init, made = made_in["__fast_maker"](**names)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    made.__qualname__ = made.__name__ = f"unchecked({cls.__qualname__})"
    _UNCHECKED[cls] = made
    return cls


def unchecked(cls: type[T]) -> Callable[..., T]:
    """The constructor of ``cls`` (made by ``fast_init``) that skips ``__post_init__``: for
    values already checked as it would check them."""
    made: Callable[..., T] = _UNCHECKED[cls]
    return made
