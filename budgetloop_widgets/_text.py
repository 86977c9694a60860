"""How every number and every untrusted string is written, in one place.

One format for money (``usd``), one for counts (``count``), plural forms (``plural``), and
``text()``: control and format characters shown as escapes by the core's rule
(``budgetloop.printable``, the one ``Result.format()`` and the static HTML view use), then
HTML-escaped, so anything a model, a tool or a trace produced is shown, never interpreted.
"""

from __future__ import annotations

import math
from html import escape

from budgetloop import format_usd, printable


def text(value: object, *, keep_newlines: bool = True) -> str:
    """Untrusted text, made safe to put in HTML: control characters (ANSI escapes, NUL...),
    bidi and zero-width marks escaped by ``budgetloop.printable``, then markup escaped."""
    return escape(printable(value, keep_newlines=keep_newlines), quote=True)


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
