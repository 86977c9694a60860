"""Reading another program's file field by field: every value's type and range checked, and a
``ValueError`` that names the field by its path (``spans[3].attributes[2].value.intValue``)
when it is wrong. Nothing is evaluated; JSON held inside a string is parsed once, with the same
depth limit as a budgetloop trace."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from .._engine._valid import type_name
from .._trace._read import MAX_DEPTH, as_json, as_text, content_id

MAX_INT = 2**63  # ids, counts and nanoseconds past this are not what any exporter writes


def content_hash(raw: bytes) -> str:
    """A run id for a source that has none: 32 hex digits of the SHA-256 of the file's bytes,
    so the same file always gives the same id."""
    return content_id(raw)


def _named(path: str) -> str:
    """The path a message names: ``the file`` for the file's top (its path is named already)."""
    return path or "the file"


def obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{_named(path)} must be an object, got {type_name(value)}.")
    return value


def items(value: Any, path: str, *, optional: bool = False) -> list[Any]:
    """A list; None (a field left null) is an empty one when ``optional``."""
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{_named(path)} must be a list, got {type_name(value)}.")
    return value


text = as_text  # a string (or None), as a trace's fields are read


def count(value: Any, path: str, *, optional: bool = True) -> int | None:
    """An int >= 0, also written as a decimal string (OTLP JSON writes 64-bit ints so)."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        if len(value) > 20:
            raise ValueError(f"{path} must be an int >= 0 below 2**63, got {len(value)} digits.")
        value = int(value)
    if isinstance(value, float) and value.is_integer() and 0 <= value < MAX_INT:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{path} must be an int >= 0, got {type_name(value)}.")
    if not 0 <= value < MAX_INT:
        raise ValueError(f"{path} must be an int >= 0 below 2**63, got {value!r}.")
    return value


def dollars(value: Any, path: str) -> float | None:
    """A cost: a finite number >= 0, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{path} must be a finite number >= 0, got {type_name(value)}.")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(
            f"{path} must be a finite number >= 0, got an int past a float's range."
        ) from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{path} must be a finite number >= 0, got {value!r}.")
    return number


def boolean(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"{path} must be true or false, got {type_name(value)}.")


def data(value: Any, path: str) -> Any:
    """JSON data kept as it came (arguments, results, schemas): at most ``MAX_DEPTH`` deep."""
    return as_json(value, path)


def embedded(value: Any, path: str) -> Any:
    """JSON a string holds (as OTLP attributes hold messages), parsed once; a value that is not
    a string is taken as the JSON itself."""
    if not isinstance(value, str):
        return data(value, path)
    try:
        parsed = json.loads(value)
    except RecursionError:
        raise ValueError(
            f"{path} must be JSON nested at most {MAX_DEPTH} levels deep, got JSON nested "
            "too deeply to read."
        ) from None
    except ValueError as exc:
        raise ValueError(
            f"{path} must be a JSON string, got text that is not JSON ({exc})."
        ) from None
    return data(parsed, path)


def tokens_cached(path: str, inputs: int, cached: int) -> None:
    """A call's input tokens count those read from and written to the cache (``cached``)."""
    if cached > inputs:
        raise ValueError(
            f"{path} must be at least the {cached} tokens read from and written to the cache, "
            f"got {inputs}."
        )


def tokens_reasoned(path: str, outputs: int, reasoning: int) -> None:
    """A call's output tokens count those spent reasoning."""
    if reasoning > outputs:
        raise ValueError(
            f"{path} must be at least the {reasoning} tokens spent reasoning, got {outputs}."
        )


def timestamp(value: Any, path: str) -> float | None:
    """Seconds since the epoch from an ISO 8601 time (openai-agents writes them so)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"{path} must be an ISO 8601 time, got {type_name(value)}.")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{path} must be an ISO 8601 time, got {value!r}.") from None
    if moment.tzinfo is None:
        raise ValueError(f"{path} must be an ISO 8601 time with its offset, got {value!r}.")
    return moment.timestamp()
