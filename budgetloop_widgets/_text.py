"""How every number and every untrusted string is written, in one place.

The core's one format for money (``usd``), for counts (``count``) and plural forms (``plural``),
and ``text()``: control and format characters shown as escapes by the core's rule
(``budgetloop.printable``, the one ``Result.format()`` and the static HTML view use), then
HTML-escaped, so anything a model, a tool or a trace produced is shown, never interpreted.
"""

from __future__ import annotations

from html import escape

from budgetloop import format_usd, printable
from budgetloop.display import count, plural


def text(value: object, *, keep_newlines: bool = True) -> str:
    """Untrusted text, made safe to put in HTML: control characters (ANSI escapes, NUL...),
    bidi and zero-width marks escaped by ``budgetloop.printable``, then markup escaped."""
    return escape(printable(value, keep_newlines=keep_newlines), quote=True)


usd = format_usd  # dollars as the core formats them: one formatter for every view


__all__ = [
    "PREVIEW_CHARS",
    "count",
    "plural",
    "preview",
    "text",
    "usd",
]  # count, plural: the core's


PREVIEW_CHARS = 600  # of a model's text or a message


def preview(value: str, limit: int = PREVIEW_CHARS) -> str:
    """``value`` cut to ``limit`` characters, saying how many more there were."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({plural(len(value) - limit, 'more character')})"
