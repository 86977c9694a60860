"""The data on the wire to the page: compact JSON (``encode``), or its columns of numbers as raw
arrays after it (``encode_binary``), which ``viewer.js``'s ``decode`` reads."""

from __future__ import annotations

import json
import sys
from array import array
from typing import Any


def encode(data: dict[str, Any]) -> bytes:
    """The data as compact JSON in UTF-8 (what the widget sends, and a page embeds)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


MAGIC = b"BLV1"  # data in binary: the page reads its numbers without parsing them
_INT32 = (-(2**31), 2**31 - 1)


def encode_binary(data: dict[str, Any]) -> bytes:
    """The data for a widget, its runs' step and call columns of numbers as raw arrays: MAGIC,
    the JSON's length (4 bytes, little-endian), the JSON (each such column a ``{"$bin":
    [offset, length, "i" or "d"]}``: int32 or float64 from ``offset`` after the JSON, padded
    to 8 bytes), then the arrays. A column with a None (a value not known) stays JSON. Writing
    and reading a float as text is most of what a long run's data costs; as bytes it is a copy.
    """
    blobs: list[bytes] = []
    size = 0
    runs = []
    for run in data["runs"]:
        run = dict(run)
        for part in ("steps", "calls"):
            columns = dict(run[part])
            for name, values in columns.items():
                packed = _packed(values)
                if packed is None:
                    continue
                kind, raw = packed
                columns[name] = {"$bin": [size, len(values), kind]}
                blobs.append(raw)
                size += len(raw)
            run[part] = columns
        runs.append(run)
    head = encode({**data, "runs": runs})
    head += b" " * (-(len(MAGIC) + 4 + len(head)) % 8)  # the arrays start 8-aligned
    return MAGIC + len(head).to_bytes(4, "little") + head + b"".join(blobs)


def _packed(values: list[Any]) -> tuple[str, bytes] | None:
    """``values`` as int32 or float64 bytes (little-endian), or None when they are not all
    numbers (a None, a list) or an int does not fit 32 bits."""
    if not values or None in values:
        return None
    kinds = {type(v) for v in values}
    if kinds == {int}:
        if _INT32[0] <= min(values) and max(values) <= _INT32[1]:
            return "i", _little(array("i", values))
        return None
    if kinds <= {int, float}:
        return "d", _little(array("d", values))
    return None


def _little(numbers: array[Any]) -> bytes:
    if sys.byteorder == "big":  # pragma: no cover - the page reads little-endian arrays
        numbers.byteswap()
    raw = numbers.tobytes()
    return raw + b"\0" * (-len(raw) % 8)
