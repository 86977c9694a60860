"""A provider's usage report read into ``Usage``, by one rule for every adapter.

A count is read when it is there and is an int >= 0 (not a bool). A usage that cannot be read
this way is no usage (None), and the loop bills the call as it bills one that reported none: at
its worst case, the projection reserved before it, with the step's ``usage`` None ("charged at
the projection"), and the context estimate kept rather than reset. That is so when the whole
input or output is missing or is not such a count (``usage: {}``, ``"120"``, ``120.0``, ``-1``,
``true``), when a part of it that is there (cached, written or reasoning tokens) is not such a
count, and when the cached parts add up to more than the whole input: the provider billed that
call, and reading any of these as zero, or as the cheapest reading, would bill less than it
did. A part left out, or null, is none of it, as the providers' own responses leave them out.
A reasoning count above the whole output is read as all of it: reasoning is billed as output,
so its count changes no price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._engine._types import Usage


class _Unreadable(Exception):
    """A count, or the object that holds it, is not what a usage report holds."""


@dataclass(frozen=True, slots=True)
class _Words:
    """The names one of OpenAI's APIs gives a usage's counts."""

    input: str
    output: str
    input_details: str
    output_details: str


# OpenAI says a usage in two vocabularies: the Responses API's, and Chat Completions' (which
# compatible servers also send from a Responses endpoint, and the Responses API's from a Chat
# one). Both are OpenAI's own words for the same counts: the whole input with its cached part,
# and the whole output with its reasoning part. So either is read, in either adapter; a usage
# holding both is read only when they say the same, for otherwise which one the provider
# billed is in doubt.
_OPENAI = (
    _Words("input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"),
    _Words(
        "prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"
    ),
)


def openai_usage(usage: Any) -> Usage | None:
    """An OpenAI usage (the JSON object, or the SDK's object) in either API's words: the whole
    input with ``cached_tokens`` (and a compatible server's ``cache_write_tokens``) as parts of
    it, the whole output with ``reasoning_tokens`` as part of it. None when there is none, or
    it cannot be read (see the module's text)."""
    if usage is None:
        return None
    try:
        said = [_openai_counts(usage, words) for words in _OPENAI if _holds(usage, words)]
    except _Unreadable:
        return None
    if not said or any(u != said[0] for u in said):
        return None
    return said[0]


def anthropic_usage(usage: Any) -> Usage | None:
    """Anthropic's usage: ``input_tokens`` counts only the input after the last cache
    breakpoint, so the whole input is it plus ``cache_read_input_tokens`` (read from the cache)
    plus ``cache_creation_input_tokens`` (written to it); ``output_tokens_details.thinking_tokens``
    is the part of the output spent thinking. None when there is none, or it cannot be read."""
    if usage is None:
        return None
    try:
        uncached = _count(usage, "input_tokens", required=True)
        output = _count(usage, "output_tokens", required=True)
        read = _count(usage, "cache_read_input_tokens")
        write = _count(usage, "cache_creation_input_tokens")
        thinking = _count(_field(usage, "output_tokens_details"), "thinking_tokens")
    except _Unreadable:
        return None
    return _usage(uncached + read + write, output, read, write, thinking)


def _holds(usage: Any, words: _Words) -> bool:
    names = (words.input, words.output, words.input_details, words.output_details)
    return any(_field(usage, name) is not None for name in names)


def _openai_counts(usage: Any, words: _Words) -> Usage | None:
    whole = _count(usage, words.input, required=True)
    output = _count(usage, words.output, required=True)
    details = _field(usage, words.input_details)
    read = _count(details, "cached_tokens")
    write = _count(details, "cache_write_tokens")
    thinking = _count(_field(usage, words.output_details), "reasoning_tokens")
    return _usage(whole, output, read, write, thinking)


def _usage(whole: int, output: int, read: int, write: int, thinking: int) -> Usage | None:
    if read + write > whole:
        return None
    return Usage(
        whole,
        output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=min(thinking, output),
    )


def _field(data: Any, name: str) -> Any:
    """``data[name]`` of a JSON object, or the attribute of an SDK's object; None when it is
    not there. JSON that is not an object (text, a number, a list) holds no counts."""
    if data is None:
        return None
    if isinstance(data, dict):
        return data.get(name)
    if isinstance(data, (str, bytes, int, float, list, tuple)):
        raise _Unreadable
    return getattr(data, name, None)


def _count(data: Any, name: str, *, required: bool = False) -> int:
    """The count ``name`` holds: an int >= 0; 0 when a part is left out or null."""
    value = _field(data, name)
    if value is None and not required:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unreadable
    return value
