"""Durable traces: a JSON Lines file written a step at a time, and reading any trace back.

``run(..., trace_path=...)`` writes a header line, then one line per step as it completes (each
a whole line, written at once and flushed), then an end line. A process killed mid-run leaves a
file that loads with every finished step; a torn last line is ignored.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from ._trace import FORMAT, VERSION, Result, Step, check_header, message_to_dict
from ._types import Message


class Journal:
    """Appends a run to a JSON Lines file as it goes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.started = False
        self._fh: IO[str] | None = None

    def _line(self, data: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - held across steps
        self._fh.write(json.dumps(data, ensure_ascii=False, default=repr) + "\n")
        self._fh.flush()

    def header(self, result: Result) -> None:
        self.started = True
        data = result.to_dict()
        head = {k: data[k] for k in ("format", "version", "budget", "price", "max_output_tokens")}
        self._line(
            {**head, "kind": "header", "tools": data["tools"], "messages": data["messages"]}
        )

    def step(self, step: Step, messages: list[Message]) -> None:
        self._line(
            {
                "kind": "step",
                "step": step.to_dict(),
                "messages": [message_to_dict(m) for m in messages],
            }
        )

    def end(self, result: Result) -> None:
        data = result.to_dict()
        keys = ("stop", "answer", "error", "detail", "cost_usd", "seconds")
        self._line({"kind": "end", **{k: data[k] for k in keys}})
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def load_trace(path: str | os.PathLike[str]) -> Result:
    """Read a trace written by ``Result.save`` or by ``run(..., trace_path=...)``.

    Plain JSON only: nothing in the file is evaluated. A malformed file, or one written by a
    newer budgetloop, is a ``ValueError`` naming the file (and line, for JSON Lines).
    """
    where = os.fspath(path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    first = text.split("\n", 1)[0]
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if isinstance(head, dict) and head.get("kind") == "header":
        return _from_lines(text, where)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{where}: not valid JSON: {exc}.") from None
    try:
        return Result.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _from_lines(text: str, where: str) -> Result:
    lines = text.split("\n")
    torn = lines[-1] != ""  # a file cut mid-write does not end in a newline
    header: dict[str, Any] = {}
    steps: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    end: dict[str, Any] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            if torn and number == len(lines):
                break  # the step in flight when the writer died
            raise ValueError(f"{where}:{number}: not a JSON line: {exc}.") from None
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == "header":
            check_header(entry, f"{where}:{number}")
            header = entry
            messages.extend(entry["messages"])
        elif kind == "step":
            steps.append(entry["step"])
            messages.extend(entry["messages"])
        elif kind == "end":
            end = entry
        else:
            raise ValueError(f"{where}:{number}: expected a header, step or end line.")
    if not header:
        raise ValueError(f"{where}:1: expected a header line first.")
    spent = sum(s["cost_usd"] for s in steps)
    data = {
        "format": FORMAT,
        "version": VERSION,
        "stop": end.get("stop"),
        "answer": end.get("answer"),
        "error": end.get("error"),
        "detail": end.get("detail", None if end else "the run did not finish (no end line)"),
        "cost_usd": end.get("cost_usd", spent),
        "seconds": end.get("seconds", sum(s.get("seconds", 0.0) for s in steps)),
        "budget": header["budget"],
        "price": header["price"],
        "max_output_tokens": header["max_output_tokens"],
        "tools": header["tools"],
        "steps": steps,
        "messages": messages,
    }
    try:
        return Result.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
