"""A failure's traceback as the trace keeps it: from the tool's or the model's own call down.

The frames above that (the loop, the worker thread, the event loop) are left out, so the sync
and async drivers record the same text for the same failure. The text is bounded when it enters
the trace (``bounded``, applied by ``Redactor.traceback`` after ``redact``), never before: a cut
before ``redact`` could leave the tail of a secret it no longer recognises.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import traceback
from types import TracebackType

MAX_TRACEBACK_CHARS = 8_000

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the package's private modules, those of its parts' folders, and MCP's (a tool's call is
# budgetloop's machinery too)
_OWN = tuple(
    os.path.join(_HERE, part) if part else _HERE
    for part in ("", "_engine", "_rules", "_tools", "_features", "_forms", "mcp")
)
_RUNNERS = (
    os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep,
    os.path.dirname(os.path.abspath(concurrent.futures.__file__)) + os.sep,
    os.path.abspath(threading.__file__),
)


def _is_runner(tb: TracebackType) -> bool:
    """A frame of the loop's own machinery: budgetloop's private modules and budgetloop.mcp's
    (not the adapters, whose bugs are the model's), asyncio, concurrent.futures, threading."""
    name = os.path.abspath(tb.tb_frame.f_code.co_filename)
    if os.path.dirname(name) in _OWN and os.path.basename(name).startswith("_"):
        return True
    return name.startswith(_RUNNERS)


def own_traceback(exc: BaseException) -> str:
    """``exc``'s traceback from the first frame that is not the loop's, whole."""
    tb = exc.__traceback__
    while tb is not None and _is_runner(tb):
        tb = tb.tb_next
    try:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except Exception:  # a message that cannot be shown: the frames still can
        text = (
            "".join(traceback.format_tb(tb))
            + f"{type(exc).__name__}: (its message could not be shown)\n"
        )
    return text


def bounded(text: str) -> str:
    """A traceback at most ``MAX_TRACEBACK_CHARS`` long (the end kept: the frame that raised
    and the message), with a line saying it was cut."""
    if len(text) <= MAX_TRACEBACK_CHARS:
        return text
    return "[…cut]\n" + text[-MAX_TRACEBACK_CHARS:]
