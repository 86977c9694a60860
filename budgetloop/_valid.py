"""Checking the numbers a caller passes: one convention for every option and field.

A value of the wrong type is a ``TypeError``; a value of the right type that is out of range
(negative, NaN, infinite) is a ``ValueError``. Both messages name the thing, what was expected
and what arrived: ``Budget.max_steps: expected an int >= 0 or None, got -1``.
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
