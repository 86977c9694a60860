"""``redact=``: rewriting what enters the trace, after the tools and the model have seen it.

Every string is rewritten: texts, arguments (keys too), results, errors, tool names and call ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ._trace import CallRecord, Step
from ._types import Message, ToolCall

Redact = Callable[[str], str]


def redact_value(value: Any, redact: Redact) -> Any:
    """Every string inside ``value`` (keys included) passed through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k, redact): redact_value(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, redact) for v in value]
    return value


def _opt(text: str | None, redact: Redact) -> str | None:
    return None if text is None else redact(text)


def redact_call(record: CallRecord, redact: Redact) -> CallRecord:
    return replace(
        record,
        name=redact_value(record.name, redact),
        id=redact_value(record.id, redact),
        raw_arguments=redact_value(record.raw_arguments, redact),
        arguments=redact_value(record.arguments, redact),
        result=_opt(record.result, redact),
        error=_opt(record.error, redact),
    )


def redact_step(step: Step, redact: Redact) -> Step:
    return replace(
        step,
        text=_opt(step.text, redact),
        error=_opt(step.error, redact),
        tool_calls=tuple(redact_call(c, redact) for c in step.tool_calls),
    )


def redact_message(message: Message, redact: Redact) -> Message:
    return replace(
        message,
        content=_opt(message.content, redact),
        name=_opt(message.name, redact),
        tool_call_id=_opt(message.tool_call_id, redact),
        tool_calls=tuple(
            ToolCall(
                redact_value(c.name, redact),
                redact_value(c.arguments, redact),
                redact_value(c.id, redact),
            )
            for c in message.tool_calls
        ),
    )
