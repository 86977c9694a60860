"""``redact=``: rewriting what enters the trace, after the tools and the model have seen it."""

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
        tool_calls=tuple(
            ToolCall(c.name, redact_value(c.arguments, redact), c.id) for c in message.tool_calls
        ),
    )
