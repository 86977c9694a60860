"""``redact=``: what enters the trace, rewritten after the tools and the model have seen it.

The rule: every string is passed through ``redact`` once (texts, arguments and their keys,
results, errors, tool names, call ids, the tool schemas), and so is the text of every value that
is not a string (a number is written as its digits; a key that is not a string, or an object JSON
cannot encode, as its ``repr``). A non-string value whose text ``redact`` changes is kept as the
redacted text. What is cut (a long result, the preview of a value in an argument error) is cut
after it is redacted, and what is encoded (a dict result as JSON) is encoded after, so no prefix
and no escaped form of a secret survives. A raw argument string that would still decode to a
secret (``\\u0073k-...``, a secret number) is kept as the redacted arguments re-encoded instead.

``Dispatch`` builds each call's trace record this way (see ``_dispatch``); the functions here
are the rest: the model's text, messages, the tool schemas, and records the loop makes itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ._trace import CallRecord, Step
from ._types import Message, ToolCall

Redact = Callable[[str], str]

MAX_DEPTH = 100
TOO_DEEP = "[nested more than 100 levels deep: not kept in a redacted trace]"
CIRCULAR = "[circular reference]"


def redact_text(text: str | None, redact: Redact) -> str | None:
    """``redact(text)``; None stays None."""
    return None if text is None else redact(text)


def redact_value(value: Any, redact: Redact) -> Any:
    """``value`` as a redacted trace keeps it: strings and keys redacted, tuples as lists, and a
    number or other object whose text ``redact`` changes replaced by that redacted text."""
    return _value(value, redact, 0, set())


def _value(value: Any, redact: Redact, depth: int, seen: set[int]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        if id(value) in seen:
            return CIRCULAR
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                return {
                    _key(k, redact): _value(v, redact, depth + 1, seen) for k, v in value.items()
                }
            return [_value(v, redact, depth + 1, seen) for v in value]
        finally:
            seen.discard(id(value))
    text = _text(value)
    if text is None:  # an int too long to write out: JSON cannot write it either
        return value
    out = redact(text)
    if out == text and isinstance(value, (int, float)):
        return value
    return out  # other objects are kept as their (redacted) repr: what a JSON trace would write


def _key(key: Any, redact: Redact) -> Any:
    if isinstance(key, str):
        return redact(key)
    if key is None or isinstance(key, bool):
        text: str | None = json.dumps(key)
    else:
        text = _text(key)
    if text is None:
        return key
    out = redact(text)
    if out == text and (key is None or isinstance(key, (int, float))):
        return key
    return out


def _text(value: Any) -> str | None:
    """The text a trace writes for a non-string scalar: a number's digits, else its repr."""
    try:
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return float.__repr__(value)
        return repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        return None
    except Exception:  # a repr that raises
        return f"<{type(value).__name__} object>"


_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[\"\\/bfnrt]"
)


def _unescape(match: re.Match[str]) -> str:
    decoded: str = json.loads(f'"{match.group()}"')
    if any("\ud800" <= ch <= "\udfff" for ch in decoded):
        return match.group()  # half a surrogate pair is no character: leave it as written
    return decoded


def redact_raw_arguments(raw: Any, redact: Redact) -> Any:
    """A call's arguments as the model wrote them, as a redacted trace keeps them.

    A dict is redacted as a value. A JSON string is redacted as text, unless that text would
    still decode to something other than the redacted arguments (a secret written with ``\\u``
    escapes, or as a number): then it is the redacted arguments, re-encoded. A string that is not
    JSON has its JSON escapes decoded before it is redacted, so an escape cannot hide a secret.
    """
    if not isinstance(raw, str):
        return redact_value(raw, redact)
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return redact(_ESCAPE.sub(_unescape, raw) if "\\" in raw else raw)
    clean = redact_value(parsed, redact)
    text = redact(raw)
    try:
        same = json.loads(text) == clean
    except (ValueError, RecursionError):
        same = False
    if same:
        return text
    return json.dumps(clean, ensure_ascii=False)


def redact_request(record: CallRecord, redact: Redact) -> CallRecord:
    """What the model wrote (name, id, arguments) and the checked arguments and coerced paths,
    redacted; ``result`` and ``error`` are left as they are."""
    return replace(
        record,
        name=redact_value(record.name, redact),
        id=redact_value(record.id, redact),
        raw_arguments=redact_raw_arguments(record.raw_arguments, redact),
        arguments=redact_value(record.arguments, redact),
        coerced=tuple(redact(path) for path in record.coerced),
    )


def redact_call(record: CallRecord, redact: Redact) -> CallRecord:
    """Every field redacted, the result and error as the texts they are.

    For a record whose result or error was not cut or encoded from something else: one the
    loop makes itself (a skipped call). ``Dispatch`` makes the trace form of the calls it runs.
    """
    return replace(
        redact_request(record, redact),
        result=redact_text(record.result, redact),
        error=redact_text(record.error, redact),
        traceback=redact_text(record.traceback, redact),
    )


def redact_step(step: Step, redact: Redact) -> Step:
    """The step's text, error and every tool call record redacted (with ``redact_call``)."""
    return replace(
        step,
        text=redact_text(step.text, redact),
        error=redact_text(step.error, redact),
        traceback=redact_text(step.traceback, redact),
        tool_calls=tuple(redact_call(c, redact) for c in step.tool_calls),
    )


def redact_message(message: Message, redact: Redact) -> Message:
    """A message as the trace keeps it. Not for a tool result message: build that from the
    call's trace record (``Ran.trace_message``), whose content was redacted before its cut."""
    return replace(
        message,
        content=redact_text(message.content, redact),
        name=redact_text(message.name, redact),
        tool_call_id=redact_text(message.tool_call_id, redact),
        tool_calls=tuple(
            ToolCall(
                redact_value(c.name, redact),
                redact_raw_arguments(c.arguments, redact),
                redact_value(c.id, redact),
            )
            for c in message.tool_calls
        ),
    )


def redact_schemas(
    schemas: Iterable[dict[str, Any]], redact: Redact | None
) -> tuple[dict[str, Any], ...]:
    """The tool schemas as ``Result.tools`` and a trace file keep them: every string, key and
    default redacted."""
    if redact is None:
        return tuple(schemas)
    return tuple(redact_value(s, redact) for s in schemas)


def strict(redact: Redact) -> Redact:
    """``redact`` made to say so when it returns something other than text."""

    def checked(text: str) -> str:
        out = redact(text)
        if not isinstance(out, str):
            raise TypeError(f"redact: must return a str, got {type(out).__name__}.")
        return out

    return checked
