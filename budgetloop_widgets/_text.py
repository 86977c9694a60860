"""How every number and every untrusted string is written, in one place.

One format for money (``usd``), one for counts (``count``), plural forms (``plural``), and
``text()``: control characters shown as escapes, then HTML-escaped, so anything a model, a tool
or a trace produced is shown, never interpreted.
"""

from __future__ import annotations

import math
import re
from html import escape

from budgetloop import format_usd

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def shown(value: object, *, keep_newlines: bool = True) -> str:
    """``value`` as text with control characters (ANSI escapes, NUL, ...) written as escapes."""
    out = "" if value is None else str(value)
    out = _CONTROL.sub(lambda m: repr(m.group())[1:-1], out)
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out


def text(value: object, *, keep_newlines: bool = True) -> str:
    """Untrusted text, made safe to put in HTML: control characters escaped, markup escaped."""
    return escape(shown(value, keep_newlines=keep_newlines), quote=True)


usd = format_usd  # dollars as the core formats them: one formatter for every view


def count(value: float) -> str:
    """A count with thousands separators; one decimal only where the value has a fraction."""
    if math.isfinite(value) and value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 step``, ``2 steps``, ``0 steps``: the count and the word in the right form."""
    return f"{count(n)} {word if n == 1 else (words or word + 's')}"


PREVIEW_CHARS = 600  # of a model's text or a message


def preview(value: str, limit: int = PREVIEW_CHARS) -> str:
    """``value`` cut to ``limit`` characters, saying how many more there were."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({plural(len(value) - limit, 'more character')})"
