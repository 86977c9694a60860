"""``printable``: text a model, a tool or a file wrote, made safe to show on a terminal or in a
page: control and format characters become escapes, so none of them can move the cursor, hide
text or reorder it."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


@functools.cache
def _format_chars() -> re.Pattern[str]:
    """The format characters (category Cf: bidi, zero-width, BOM...) of this Python's Unicode
    and the surrogates, as one character class; found by a scan (~0.1 s) when first needed."""
    found = [i for i in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(i)) == "Cf"]
    ranges = [(0xD800, 0xDFFF)]
    for code in found:
        if code == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")


def _format_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: object, keep_newlines: bool = False) -> str:
    """Text with control characters (ANSI escapes, NUL...), format characters (U+202E, U+200B,
    U+FEFF and every other of Unicode category Cf) and lone surrogates shown as escapes."""
    shown = "" if text is None else str(text)
    shown = _CONTROL.sub(_escape, shown)
    if not shown.isascii():
        shown = _format_chars().sub(_format_char, shown)
    if not keep_newlines:
        shown = shown.replace("\n", "\\n").replace("\t", "\\t")
    return shown


def first_chunk(seconds: float | None) -> str:
    """A streamed step's seconds to its first chunk, as the views say them after its time."""
    return "" if seconds is None else f" (first chunk {seconds:.3f} s)"
