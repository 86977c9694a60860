"""A pydantic ``Field`` read by duck typing (budgetloop never imports pydantic).

A parameter written ``x: int = Field(ge=0, description="...")`` is read as
``x: Annotated[int, Field(ge=0, description="...")]`` is; its real default is the ``Field``'s
own (``default=``, or ``default_factory=`` called for each call that leaves it out), and a
``Field`` with neither makes the parameter required. The same holds for a ``Field`` inside
``Annotated`` with no default written after the parameter.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from .._engine._valid import type_name

_UNSET = ("PydanticUndefinedType",)  # what pydantic's "no default" is, by its type's name


@dataclass(frozen=True)
class Default:
    """A parameter's default: a value, or a function making one for each call that leaves the
    parameter out (a ``Field``'s ``default_factory``, whose value is never shown to the model).
    ``from_field``: a ``Field`` gave it, so Python would not, and the tool puts it in."""

    value: Any = None
    factory: Callable[[], Any] | None = None
    from_field: bool = False

    def make(self) -> Any:
        return self.value if self.factory is None else self.factory()


def parameter_default(
    hint: Any, param: inspect.Parameter, where: str
) -> tuple[Any, Default | None]:
    """The parameter's hint as it is read (a ``Field`` default moved into ``Annotated``) and
    its default, or None if it has none (the parameter is required)."""
    default = param.default
    if is_field(default):  # x: int = Field(...): read as Annotated[int, Field(...)]
        return Annotated[hint, default], _annotated_default(Annotated[hint, default], where)
    if default is not param.empty:
        return hint, Default(value=default)
    return hint, _annotated_default(hint, where)


def is_field(value: Any) -> bool:
    """Whether ``value`` is a pydantic ``FieldInfo`` (what ``Field(...)`` returns)."""
    return (
        type(value).__name__ == "FieldInfo"
        and hasattr(value, "metadata")
        and hasattr(value, "default_factory")
    )


def _annotated_default(hint: Any, where: str) -> Default | None:
    """The default of the last ``Field`` in ``hint``'s ``Annotated`` metadata that gives one."""
    if typing.get_origin(hint) is not Annotated:
        return None
    found = None
    for meta in hint.__metadata__:
        if is_field(meta):
            found = _field_default(meta, where) or found
    return found


def _field_default(field: Any, where: str) -> Default | None:
    """The default a ``Field`` gives, or None if it gives none."""
    factory = getattr(field, "default_factory", None)
    if factory is not None:
        if not callable(factory):
            raise TypeError(
                f"{where}: default_factory must be a function, got {type_name(factory)}."
            )
        if getattr(field, "default_factory_takes_validated_data", False):
            raise TypeError(
                f"{where}: default_factory must be a function of no arguments, got one that "
                "takes the validated data, which has none to take here (a tool's parameters are "
                "not a model's fields); give one that takes no arguments."
            )
        return Default(factory=factory, from_field=True)
    value = getattr(field, "default", None)
    if value is Ellipsis or type(value).__name__ in _UNSET:
        return None
    return Default(value=value, from_field=True)
