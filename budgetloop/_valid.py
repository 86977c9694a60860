"""Checking what a caller passes: one convention for every option and field.

A value of the wrong type is a ``TypeError``; a value of the right type that is out of range
(negative, NaN, infinite) is a ``ValueError``. Both messages name the thing, what was expected
and what arrived. A field of a class or a trace: ``Budget.max_steps: expected an int >= 0 or
None, got -1``. An option of an entry point, named after the entry point the caller called:
``fork: max_workers must be an int >= 1 or None, got 0.``
"""

from __future__ import annotations

import math
from typing import Any


def kind(value: object) -> str:
    """A value's type as an error message names it."""
    return "null" if value is None else type(value).__name__


def check_int(where: str, value: Any, *, least: int = 0, optional: bool = False) -> None:
    """``value`` is an int (not a bool) at or above ``least``; None too when ``optional``."""
    if value is None and optional:
        return
    expected = f"an int >= {least}" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: expected {expected}, got {kind(value)}.")
    if value < least:
        raise ValueError(f"{where}: expected {expected}, got {value!r}.")


def check_number(where: str, value: Any, *, optional: bool = False) -> None:
    """``value`` is a finite int or float (not a bool) >= 0; None too when ``optional``."""
    if value is None and optional:
        return
    expected = "a finite number >= 0" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where}: expected {expected}, got {kind(value)}.")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: expected {expected}, got {value!r}.")


# -- the options of the entry points (run, start, fork, resume, replay, run_many...) -------------
# One grammar: ``where: name must be <expected>, got <what arrived>.`` with ``where`` the entry
# point the caller called; what arrived is its type for a TypeError, its value for a ValueError,
# and None is ``None``.


def type_name(value: object) -> str:
    """A value's type as an option's error names it: ``None`` for None, else the class name."""
    return "None" if value is None else type(value).__name__


def must(where: str, name: str, expected: str, got: str) -> str:
    """``where: name must be expected, got got.``"""
    return f"{where}: {name} must be {expected}, got {got}."


def check_option_int(
    where: str, name: str, value: Any, *, least: int = 0, optional: bool = False
) -> None:
    """An option that is an int (not a bool) at or above ``least``; None too when ``optional``."""
    if value is None and optional:
        return
    expected = f"an int >= {least}" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(must(where, name, expected, type_name(value)))
    if value < least:
        raise ValueError(must(where, name, expected, repr(value)))
