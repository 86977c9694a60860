"""Python values a tool commonly returns (or takes as a default), as JSON data a model can read:
a dataclass or pydantic model as an object, an Enum as its value, a tuple or set as an array,
``datetime``/``date``/``time`` in ISO 8601, ``Decimal`` and ``UUID`` as strings. Anything
else is left as it is (``to_content`` then writes its ``repr``)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from typing import Any

MAX_DEPTH = 200


def plain(value: Any) -> Any:
    """One value that JSON cannot write, as data it can (its parts still to be converted), or
    ``value`` itself when it is of no kind known here. For ``json.dumps(default=...)``."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        items = list(value)
        try:
            return sorted(items)
        except TypeError:  # items of kinds that do not order: as they come
            return items
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):  # a pydantic model, by duck typing
        return dump(mode="json")
    return value


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` with every part ``plain`` knows converted, all the way down (keys too)."""
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    if value is None or type(value) in (int, float, bool):
        return value
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {_key(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    converted = plain(value)
    if converted is value:
        return value
    return jsonable(converted, depth + 1)


def _key(key: Any) -> Any:
    if (
        isinstance(key, (str, int, float, bool)) and not isinstance(key, enum.Enum)
    ) or key is None:
        return key
    converted = jsonable(key)
    return converted if isinstance(converted, (str, int, float, bool)) else str(key)
