"""Checking what a caller passes: one grammar for every option, field and path.

``where: name must be <expected>, got <what arrived>.``: ``where`` is the entry point or class
the caller called (``fork``, ``Budget``), ``name`` the option, field or path (``max_steps``,
``steps[3].status``). A value of the wrong type is a ``TypeError`` and names its type; a value
of the right type that is out of range (negative, NaN, infinite) is a ``ValueError`` and shows
the value. None is ``None``, in every message. A reader handed only a path leaves ``where`` to
its caller (``Result.from_dict: steps[3].cost_usd must be ...``).
"""

from __future__ import annotations

import math
from typing import Any


def type_name(value: object) -> str:
    """What arrived, as a message names a value of the wrong type: ``None`` for None, else the
    class name."""
    return "None" if value is None else type(value).__name__


def must(where: str, name: str, expected: str, got: str) -> str:
    """``where: name must be expected, got got.`` (``name must be ...`` with no ``where``)."""
    return f"{where + ': ' if where else ''}{name} must be {expected}, got {got}."


def check_int(
    where: str, name: str, value: Any, *, least: int = 0, optional: bool = False
) -> None:
    """An int (not a bool) at or above ``least``; None too when ``optional``."""
    if value is None and optional:
        return
    expected = f"an int >= {least}" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(must(where, name, expected, type_name(value)))
    if value < least:
        raise ValueError(must(where, name, expected, repr(value)))


def check_number(where: str, name: str, value: Any, *, optional: bool = False) -> None:
    """A finite int or float (not a bool) >= 0; None too when ``optional``."""
    if value is None and optional:
        return
    expected = "a finite number >= 0" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(must(where, name, expected, type_name(value)))
    if not math.isfinite(value) or value < 0:
        raise ValueError(must(where, name, expected, repr(value)))


check_option_int = check_int  # the options' name for it
