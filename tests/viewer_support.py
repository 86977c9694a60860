"""Reading what the viewer's widgets send the page, as the page reads it (viewer.js decode):
JSON, or MAGIC, the JSON's length, the JSON and the arrays of numbers it points into."""

from __future__ import annotations

import json
from array import array
from typing import Any

from budgetloop_widgets._wire import MAGIC


def decode(raw: bytes) -> dict[str, Any]:
    if not raw.startswith(MAGIC):
        data: dict[str, Any] = json.loads(raw.decode("utf-8"))
        return data
    length = int.from_bytes(raw[4:8], "little")
    data = json.loads(raw[8 : 8 + length].decode("utf-8"))
    arrays = raw[8 + length :]
    for run in data["runs"]:
        for part in ("steps", "calls"):
            for name, column in run[part].items():
                if isinstance(column, dict) and "$bin" in column:
                    offset, count, kind = column["$bin"]
                    size = 4 if kind == "i" else 8
                    numbers = array(kind)
                    numbers.frombytes(arrays[offset : offset + count * size])
                    run[part][name] = numbers.tolist()
    return data
