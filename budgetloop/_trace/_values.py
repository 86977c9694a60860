"""Reading one field of trace data back: its type and range checked, or a ``ValueError`` naming
the field's path (``steps[3].usage.input_tokens must be an int, got str.``); and the values a
trace holds in many places (a usage, a price, a budget, a projection). ``_read_steps`` reads the
steps with them, ``_read`` the whole trace."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from .._engine._types import Budget, Price, Usage
from .._engine._valid import check_int, check_number, type_name
from .._rules._budget import Projection
from .._rules._ceilings import CEILINGS
from . import _read_fast as _fast

T = TypeVar("T")
MAX_DEPTH = _fast.MAX_DEPTH
MISSING = object()


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return key if not path else f"{path}.{key}"


def get_key(data: dict[str, Any], path: str, key: str, default: Any = MISSING) -> Any:
    if key in data:
        return data[key]
    if default is MISSING:
        raise ValueError(f"{_at(path, key)} must be present, got nothing.")
    return default


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{path or 'the trace'} must be an object, got {type_name(value)}.")
    return value


def as_list(value: Any, path: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{path} must be a list, got {type_name(value)}.")
    return value


def as_text(value: Any, path: str, *, optional: bool = True) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "a string or None" if optional else "a string"
        raise ValueError(f"{path} must be {expected}, got {type_name(value)}.")
    return value


def as_int(value: Any, path: str, *, optional: bool = False) -> Any:
    try:
        check_int("", path, value, optional=optional)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    return value


def as_number(value: Any, path: str, *, optional: bool = False) -> Any:
    """A finite number >= 0 that a float can hold (so it can be formatted and summed)."""
    try:
        check_number("", path, value, optional=optional)
        if value is not None:
            float(value)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    except OverflowError:
        raise ValueError(
            f"{path} must be a finite number >= 0, got an int past a float's range."
        ) from None
    return value


def as_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{path} must be true or false, got {type_name(value)}.")
    return value


def as_json(value: Any, path: str) -> Any:
    """JSON data (objects with string keys, lists, strings, numbers, booleans, null), at most
    ``MAX_DEPTH`` levels deep. Walked with a stack, not recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise ValueError(
                    f"{path} must be nested at most {MAX_DEPTH} levels deep, got deeper."
                )
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise ValueError(
                            f"{path} must be JSON data, with string keys, got a key that is "
                            f"{type_name(key)}."
                        )
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{path} must be JSON data, got the number {item!r}.")
        elif item is not None and not isinstance(item, (str, int, float)):
            raise ValueError(f"{path} must be JSON data, got {type_name(item)}.")
    return value


def _build(path: str, make: Callable[..., T], **fields: Any) -> T:
    """Construct once every field is checked; a check of the class's own is named by path."""
    try:
        return make(**fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path or 'the trace'}: {exc}") from None


def read_usage(value: Any, path: str) -> Usage | None:
    if value is None:
        return None
    data = as_object(value, path)
    return _build(
        path,
        Usage,
        **{
            name: as_int(get_key(data, path, name, default), _at(path, name))
            for name, default in (
                ("input_tokens", MISSING),
                ("output_tokens", MISSING),
                ("cache_read_tokens", 0),
                ("cache_write_tokens", 0),
                ("reasoning_tokens", 0),
            )
        },
    )


def read_price(value: Any, path: str) -> Price | None:
    if value is None:
        return None
    data = as_object(value, path)
    fields = {
        name: as_number(get_key(data, path, name), _at(path, name))
        for name in ("input_per_mtok", "output_per_mtok")
    }
    for name in ("cache_read_per_mtok", "cache_write_per_mtok"):
        fields[name] = as_number(get_key(data, path, name, None), _at(path, name), optional=True)
    fields["source"] = as_text(get_key(data, path, "source", None), _at(path, "source"))
    tiers = get_key(data, path, "tiers", None)
    if tiers is not None:
        fields["tiers"] = _read_tiers(tiers, _at(path, "tiers"))
    return _build(path, Price, **fields)


def _read_tiers(value: Any, path: str) -> dict[int, Price]:
    """A price's tiers, as ``price_to_dict`` writes them: ``[{"above": n, "price": {...}}]``."""
    tiers: dict[int, Price] = {}
    for i, entry in enumerate(as_list(value, path)):
        where = f"{path}[{i}]"
        data = as_object(entry, where)
        above = as_int(get_key(data, where, "above"), _at(where, "above"))
        tier = read_price(get_key(data, where, "price"), _at(where, "price"))
        if tier is None:
            raise ValueError(f"{_at(where, 'price')} must be an object, got None.")
        tiers[above] = tier
    return tiers


def read_budget(value: Any, path: str) -> Budget:
    data = as_object(value, path)
    defaults = Budget()
    fields = {}
    for ceiling in CEILINGS:
        name = ceiling.name
        raw = get_key(data, path, name, getattr(defaults, name))
        read = as_int if ceiling.integer else as_number
        fields[name] = read(raw, _at(path, name), optional=True)
    return _build(path, Budget, **fields)


def read_projection(value: Any, path: str) -> Projection | None:
    if value is None:  # an imported run's step: no projection was made
        return None
    data = as_object(value, path)

    def get(name: str) -> Any:
        return get_key(data, path, name)

    return Projection(
        input_tokens=as_int(get("input_tokens"), _at(path, "input_tokens")),
        output_tokens=as_int(get("output_tokens"), _at(path, "output_tokens"), optional=True),
        cost_usd=as_number(get("cost_usd"), _at(path, "cost_usd"), optional=True),
        spent_usd=as_number(get("spent_usd"), _at(path, "spent_usd")),
        limit_usd=as_number(get("limit_usd"), _at(path, "limit_usd"), optional=True),
        fits=as_bool(get("fits"), _at(path, "fits")),
        tier=as_int(get_key(data, path, "tier", None), _at(path, "tier"), optional=True),
        fitted_from=as_int(
            get_key(data, path, "fitted_from", None), _at(path, "fitted_from"), optional=True
        ),
    )


def content_id(content: Any) -> str:
    """32 hex digits of the SHA-256 of ``content``: bytes as they are, data as sorted JSON."""
    if not isinstance(content, bytes):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False, default=repr).encode(
            "utf-8", "surrogatepass"
        )
    return hashlib.sha256(content).hexdigest()[:32]
