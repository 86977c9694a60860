"""Runs from other frameworks, read into ``Result``s: ``load_trace`` and ``load_traces`` call
``read`` for any file that is not budgetloop's own trace.

One module per format: ``_otlp`` (OTLP JSON holding GenAI spans), ``_agents`` (openai-agents'
trace export), ``_pydantic_ai`` (pydantic-ai's messages JSON), ``_anthropic`` (an Anthropic
Messages log), ``_responses`` (OpenAI Responses input items), ``_chat`` (a Chat Completions
message log); ``_build`` turns what each read into a ``Result``, ``_ends`` says how a source's
run ended, ``_unread`` names the formats that are not read. Every field is checked as it is
read (``_fields``), nothing is evaluated, and a wrong field is a ``ValueError`` naming the file
and the field.
"""

from __future__ import annotations

import json
from typing import Any

from .._engine._valid import type_name
from .._trace._result import Result
from . import _agents, _anthropic, _chat, _otlp, _pydantic_ai, _responses, _unread
from ._build import build

FORMATS = (
    "budgetloop", "otlp", "openai-agents", "pydantic-ai", "anthropic", "responses", "chat"
)  # fmt: skip
TRACES = (  # what the file must be, as an error says it
    "a budgetloop trace (with 'format': 'budgetloop-trace') or a run load_trace imports: "
    "OTLP JSON (an object with resourceSpans, or JSON Lines of them), an openai-agents trace "
    "export, pydantic-ai's messages JSON, an Anthropic Messages log, OpenAI Responses input "
    "items, or a Chat Completions message log (a list of messages, or an object with messages)"
)
_READERS = {  # the one-document formats: each one's test, reader and name, in the order tried
    "pydantic-ai": (_pydantic_ai.looks_like, _pydantic_ai.run, "pydantic-ai's messages JSON"),
    "anthropic": (_anthropic.looks_like, _anthropic.run, "an Anthropic Messages log"),
    "responses": (_responses.looks_like, _responses.run, "OpenAI Responses input items"),
    "chat": (_chat.looks_like, _chat.runs, "a Chat Completions message log"),
}


def check_format(where: str, format: object) -> str | None:
    """``format=`` checked: None (recognise the file by its content) or one of ``FORMATS``."""
    if format is None:
        return None
    if not isinstance(format, str):
        raise TypeError(
            f"{where}: format must be one of {', '.join(map(repr, FORMATS))} or None, "
            f"got {type_name(format)}."
        )
    if format not in FORMATS:
        raise ValueError(
            f"{where}: format must be one of {', '.join(map(repr, FORMATS))} or None, "
            f"got {format!r}."
        )
    return format


def line_starts(value: Any) -> bool:
    """A first line that starts JSON Lines of a format imported here."""
    return (isinstance(value, dict) and "resourceSpans" in value) or _agents.is_item(value)


def detect(document: Any, lines: bool) -> str | None:
    """The format a parsed file is in, from its content; None when it is none of them."""
    first = document[0][0] if lines and document else document
    if lines:
        if isinstance(first, dict) and "resourceSpans" in first:
            return "otlp"
        return "openai-agents" if _agents.is_item(first) else None
    if isinstance(document, dict) and "resourceSpans" in document:
        return "otlp"
    if _agents.looks_like(document):
        return "openai-agents"
    return next((name for name, (test, _, _) in _READERS.items() if test(document)), None)


def read(document: Any, lines: bool, fmt: str | None, where: str, raw: bytes) -> list[Result]:
    """Every run of a parsed file (``lines``: a list of its JSON Lines) as ``Result``s.
    ``fmt`` forces a format; None recognises it. A ValueError names the file and the field."""
    found = fmt or detect(document, lines)
    if found is None or found == "budgetloop":
        named = "JSON Lines that are none of these" if lines else _unread.named(document)
        raise ValueError(f"{where}: the file must be {TRACES}, got {named or _none(document)}.")
    try:
        return [build(run) for run in _runs(found, document, lines, where, raw)]
    except RecursionError:
        raise ValueError(
            f"{where}: the file must be a run nested shallowly enough to read, got one nested "
            "too deeply."
        ) from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _runs(fmt: str, document: Any, lines: bool, where: str, raw: bytes) -> list[Any]:
    numbered = _numbered(document, lines)
    if fmt == "otlp":
        return _otlp.runs(_otlp.spans(numbered), where)
    if fmt == "openai-agents":
        entries = []
        for item, path in numbered:
            if isinstance(item, dict) and isinstance(item.get("data"), list) and not lines:
                entries += [(v, f"data[{i}]") for i, v in enumerate(item["data"])]
            elif isinstance(item, list):
                entries += [(v, f"[{i}]") for i, v in enumerate(item)]
            else:
                entries.append((item, path))
        return _agents.runs(entries, where)
    if lines:
        raise ValueError(
            f"the file must be one JSON document for format={fmt!r} ({_READERS[fmt][2]}), "
            "got JSON Lines."
        )
    if fmt == "chat":  # a run per user turn
        return _chat.runs(document, where, raw)
    return [_READERS[fmt][1](document, where, raw)]


def _none(document: Any) -> str:
    """What a file that is none of the formats read holds, as an error says it."""
    if isinstance(document, dict):
        return "an object that is none of these"
    return "a list that is none of these" if isinstance(document, list) else type_name(document)


def _numbered(document: Any, lines: bool) -> list[tuple[Any, str]]:
    if lines:
        return [(item, f"line {number}") for item, number in document]
    return [(document, "")]


def parse_lines(text: str, where: str) -> list[tuple[Any, int]]:
    """JSON Lines: each non-blank line parsed, with its line number."""
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append((json.loads(line), number))
        except RecursionError:
            raise ValueError(
                f"{where}:{number}: the line must be JSON nested shallowly enough to read, got "
                "JSON nested too deeply."
            ) from None
        except ValueError as exc:
            raise ValueError(
                f"{where}:{number}: the line must be JSON, got text that is not ({exc})."
            ) from None
    return out
