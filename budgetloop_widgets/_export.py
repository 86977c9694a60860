"""``to_html``: a saved run as one self-contained HTML file, the viewer in it, no kernel."""

from __future__ import annotations

import os

from budgetloop import write_new

from ._page import result_page
from ._traceview import Source
from ._views import as_result


def to_html(
    trace: Source, path: str | os.PathLike[str], *, title: str = "budgetloop trace"
) -> str | None:
    """Write ``trace`` (a Result, a ``to_dict()`` dict or a saved trace's path) to ``path`` as
    one HTML file that any browser opens with no kernel and no network: the same viewer as
    ``TraceView``, its data and its script inside the file. Like ``Result.save``, an existing
    file at ``path`` is never overwritten: it is renamed to ``<stem>.<N><suffix>`` first, and
    that name is returned (None when there was no file)."""
    if not isinstance(title, str):
        raise TypeError(f"to_html: title must be a str, got {type(title).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_html: path must be a str or a path, got {type(path).__name__}.")
    result = as_result(trace, where="to_html")
    return write_new(path, result_page(result, title), where="to_html")
