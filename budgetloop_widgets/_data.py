"""A run as the viewer component reads it: compact, JSON-ready columns, every text as text.

The component (``viewer.js``) gets a run once, in this form, and does the rest in the browser:
the rows, filters, search, jumps, the keyboard and the chosen step's detail. Columns hold one
entry per step (``steps``), per tool call (``calls``) and, where the page has no kernel to ask,
per message (``messages``). Every text is kept once in a string table, cut at ``CUT``
characters and written by the core's ``printable`` (control and format characters, U+202E
and the zero-width ones among them, as escapes); the
component puts strings in the page with ``textContent`` only.

What the component says about a run in words (its banner) is worded here, by the same
functions as the rest of the package; the numbers it formats itself are the core's, and a
browser test holds its formats to ``usd`` and ``count``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from budgetloop import CallRecord, Message, Result, Step, printable

from ._log import flags, jump_targets, sent_counts
from ._status import stop_lines
from ._views import carried_text

CUT = 20_000  # characters of one text sent to the page; the rest is fetched on demand
ROLES = ("system", "user", "assistant", "tool")
CALL_STATUSES = {"ok": 0, "error": 1, "skipped": 2}
_SEP = "\ue000"  # joins the table for one escaping pass; a private-use character, kept as is


class Strings:
    """The string table: each distinct text once (by id), cut at ``cut`` characters."""

    def __init__(self, cut: int = CUT) -> None:
        self.cut = cut
        self.ids: dict[str, int] = {}
        self.items: list[str] = []  # as given, cut
        self.full: dict[int, str] = {}  # the texts that were cut, whole, by id
        self.sent = 0  # how many items have gone to the page

    def id(self, value: str | None) -> int:
        """The id of ``value`` (-1 for None), added on first sight."""
        if value is None:
            return -1
        found = self.ids.get(value)
        if found is not None:
            return found
        index = self.ids[value] = len(self.items)
        if len(value) > self.cut:
            self.full[index] = value
            value = value[: self.cut]
        self.items.append(value)
        return index

    def whole(self, index: int) -> str:
        """The text of ``index`` uncut, as the page shows it (asked for on demand)."""
        return escaped([self.full.get(index, self.items[index])])[0]

    def cut_lengths(self, start: int = 0) -> dict[str, int]:
        """The full length of each text from ``start`` on that was cut, by id."""
        return {str(i): len(v) for i, v in self.full.items() if i >= start}

    def take(self) -> tuple[int, list[str]]:
        """The texts not yet sent to the page, escaped, and the id of the first."""
        start, self.sent = self.sent, len(self.items)
        return start, escaped(self.items[start:])


def shown(text: str) -> str:
    """A text as the page may show it: the core's one rule (``printable``), newlines kept."""
    return printable(text, keep_newlines=True)


# The ASCII characters ``printable`` writes as escapes, asked of it once: a table with none of them
# (the usual case) is checked in one pass over its bytes instead of escaped character by character.
_ASCII_SHOWN = bytes(c for c in range(128) if shown(chr(c)) != chr(c))


def escaped(items: list[str]) -> list[str]:
    """``printable`` of each text (newlines kept), in one pass over them all, and any lone
    surrogate written as an escape so that the page's JSON is UTF-8."""
    if not items:
        return []
    probe = "\n".join(items)  # a character shown keeps
    if probe.isascii():
        raw = probe.encode("ascii")
        if len(raw.translate(None, _ASCII_SHOWN)) == len(raw):
            return items  # nothing in them to escape
    joined = _SEP.join(items)
    if joined.count(_SEP) != len(items) - 1:  # a text holds the separator itself
        out = [shown(item) for item in items]
    else:
        out = shown(joined).split(_SEP)
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        out = [_encodable(item) for item in out]
    return out


def _encodable(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    return value


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=repr).encode


def json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, with the encoder built once."""
    return _ENCODE(value)


def arguments_json(arguments: str | dict[str, Any] | None) -> str:
    """Arguments as text: a string as the model wrote it, anything else as JSON."""
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json_text(arguments)


def step_columns(
    steps: Sequence[Step], sid: Callable[[str | None], int], first_call: int = 0
) -> dict[str, list[Any]]:
    """One entry per step: numbers as numbers, texts as string ids, its calls as the index of
    the first (``c0``), its tags as ``_log.flags``."""
    p = [s.projection for s in steps]
    u = [s.usage for s in steps]
    calls = itertools.accumulate((len(s.tool_calls) for s in steps), initial=first_call)
    return {
        "cost": [s.cost_usd for s in steps],
        "in": [None if x is None else x.input_tokens for x in u],
        "out": [None if x is None else x.output_tokens for x in u],
        "pin": [None if x is None else x.input_tokens for x in p],  # None: an imported step
        "pout": [None if x is None else x.output_tokens for x in p],
        "pcost": [None if x is None else x.cost_usd for x in p],
        "pspent": [None if x is None else x.spent_usd for x in p],
        "plimit": [None if x is None else x.limit_usd for x in p],
        "pfits": [1 if x is None or x.fits else 0 for x in p],
        "sec": [s.seconds for s in steps],
        "text": [sid(s.text) for s in steps],
        "err": [sid(s.error) for s in steps],
        "tb": [sid(s.traceback) for s in steps],
        "fl": [flags(s) for s in steps],
        "c0": list(itertools.islice(calls, len(steps))),
    }


def call_columns(
    calls: Sequence[CallRecord], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """One entry per tool call, in order: the arguments as the model wrote them (``raw``) and as
    the tool got them (``args``, -1 when they were not checked), the argument paths that were
    coerced (``co``), its status, result or error, traceback, full length if it was cut for the
    model (``tr``) and seconds."""
    return {
        "name": [sid(c.name) for c in calls],
        "raw": [sid(arguments_json(c.raw_arguments)) for c in calls],
        "args": [-1 if c.arguments is None else sid(json_text(c.arguments)) for c in calls],
        "co": [[sid(path) for path in c.coerced] if c.coerced else None for c in calls],
        "st": [CALL_STATUSES[c.status] for c in calls],
        "out": [sid(c.result if c.status == "ok" else c.error) for c in calls],
        "tb": [sid(c.traceback) for c in calls],
        "tr": [c.truncated for c in calls],
        "sec": [c.seconds for c in calls],
    }


def message_columns(
    messages: Sequence[Message], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """One entry per message: role, content, name, call id and its tool calls."""
    return {
        "role": [ROLES.index(m.role) if m.role in ROLES else sid(m.role) + 10 for m in messages],
        "c": [sid(m.content) for m in messages],
        "nm": [sid(m.name) for m in messages],
        "id": [sid(m.tool_call_id) for m in messages],
        "tc": [
            [[sid(c.name), sid(arguments_json(c.arguments)), sid(c.id)] for c in m.tool_calls]
            if m.tool_calls
            else None
            for m in messages
        ],
    }


def calls_of(steps: Sequence[Step]) -> list[CallRecord]:
    return [c for s in steps for c in s.tool_calls]


_STYLE = re.compile(r' style="[^"]*"')  # _svg writes every attribute value escaped, in "..."


def unstyled(svgs: Sequence[str]) -> list[str]:
    """The package's charts without their inline styles: the viewer's stylesheet colours them
    by class, and a page whose policy allows no inline style logs nothing."""
    return [_STYLE.sub("", svg) for svg in svgs]


def run_data(
    result: Result,
    strings: Strings,
    *,
    name: str = "",
    charts: Sequence[str] = (),
    messages: bool = True,
    tokens: Sequence[int] | None = None,
) -> dict[str, Any]:
    """One run: its banner (in words), ceilings, steps, calls and jumps; its messages too
    unless ``messages`` is False (a widget sends a step's context when it is opened)."""
    steps = result.steps
    b = result.budget
    sid = strings.id
    columns = step_columns(steps, sid)
    return {
        "name": sid(name),
        "banner": [[kind, sid(line)] for kind, line in stop_lines(result)],
        "answered": result.answered,
        "ended": result.stop is not None,
        "budget": [b.max_steps, b.max_seconds, b.max_cost_usd, b.max_tool_calls],
        "cost": result.cost_usd,
        "carried": result.carried_usd,
        "carried_text": sid(carried_text(result.carried_usd)) if result.carried_usd else -1,
        "schemas": sid(json.dumps(list(result.tools), ensure_ascii=False, indent=1)),
        "ntools": len(result.tools),
        "steps": columns,
        "sent": sent_counts(result),
        "calls": call_columns(calls_of(steps), sid),
        "messages": message_columns(result.messages, sid) if messages else None,
        "tokens": None if tokens is None else list(tokens),
        "jumps": jump_targets(steps, columns["fl"]),
        "charts": unstyled(charts),
    }


def document(
    kind: str, title: str, runs: list[dict[str, Any]], strings: Strings, **extra: Any
) -> dict[str, Any]:
    """What the component renders: a ``kind`` ("trace", "compare", "panel") of ``runs``, and
    the string table (every text not yet sent)."""
    start, items = strings.take()
    return {
        "v": 1,
        "kind": kind,
        "title": title,
        "strings": items,
        "cut": strings.cut_lengths(start),
        "runs": runs,
        **extra,
    }


def encode(data: dict[str, Any]) -> bytes:
    """The data as compact JSON in UTF-8 (what the widget sends, and a page embeds)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
