"""The words of an argument error: built in parts, so that a redacted trace can write the same
message with what the model wrote redacted before any of it is quoted or cut."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._forms._redact import redact_value

PREVIEW = 60  # the most characters of a value an error message shows


@dataclass(frozen=True)
class Name:
    """Part of a message someone else wrote: a tool name, an argument's path, a list of names.
    ``quoted`` shows it with ``repr``."""

    text: Any
    quoted: bool = False


@dataclass(frozen=True)
class Shown:
    """A value the model sent, in a message: as JSON, cut to ``PREVIEW`` characters if ``cut``."""

    value: Any
    cut: bool = True


Part = str | Name | Shown


def render(parts: tuple[Part, ...], redact: Callable[[str], str] | None = None) -> str:
    """The message; with ``redact``, every ``Name`` and ``Shown`` part is redacted before it is
    quoted, encoded or cut (a plain ``str`` part is budgetloop's own words, kept as is)."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = part.text if isinstance(part, Name) else part.value
        if redact is not None:
            value = redact_value(value, redact)
        if isinstance(part, Shown):
            out.append(show(value, part.cut))
        else:
            out.append(repr(value) if part.quoted else str(value))
    return "".join(out)


class ArgumentError(ValueError):
    """Arguments that do not fit a tool; the message is what the model is told.

    ``parts`` are the message in pieces, so that ``redacted(redact)`` can write it for a
    redacted trace with what the model wrote redacted before any of it is quoted or cut.
    """

    def __init__(self, *parts: Part) -> None:
        self.parts = parts
        super().__init__(render(parts))

    def redacted(self, redact: Callable[[str], str]) -> str:
        """The message as a redacted trace keeps it."""
        return render(self.parts, redact)


def json_kind(value: Any, python: bool = False) -> str:
    """The name of a JSON value's kind: ``str``/``int``... with ``python``, else JSON's names."""
    if value is None:
        return "null"
    if python:
        return type(value).__name__
    names = {dict: "object", list: "array", str: "string", bool: "boolean"}
    return names.get(type(value), "number")


def show(value: Any, cut: bool = True) -> str:
    """A value as an error message shows it: JSON (else ``repr``), cut to ``PREVIEW``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__} object>"
    if not cut or len(text) <= PREVIEW:
        return text
    return text[: PREVIEW - 3] + "..."
