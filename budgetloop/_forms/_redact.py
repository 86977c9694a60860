"""``redact=``: one owner for every text that enters an output form.

A ``Redactor`` is the only way text reaches a trace (its steps, messages, tool schemas,
``detail`` and ``error``, the JSON Lines journal) and the OpenTelemetry attributes. It holds the
function ``redact`` (or None, and then each method hands back what it is given) and applies one
rule:

- Every string passes through ``redact`` once, and so does the text of every value that is not a
  string (a number as its digits; a key that is not a string, or an object JSON cannot encode,
  as its ``repr``). A non-string value whose text ``redact`` changes is kept as the redacted text.
- What is cut is cut after it is redacted (``cut``, ``traceback``, ``result``, a ``Quote``), and
  what is encoded is encoded after (``json``, ``result``, a ``Quote``), so no prefix and no
  escaped form of a secret survives.
- A raw argument string that would still decode to a secret (``\\u0073k-...``, a secret number)
  is kept as the redacted arguments re-encoded instead (``arguments``).

A sentence of budgetloop's own that quotes tool calls (a repetition stop's detail, the warning a
repeating model is given) is a ``Said``: kept in parts, so the model reads it with the real
values (``said.real``) while an output form gets it from ``Redactor.text``, each quoted call
redacted before it is encoded and cut. A ``Said`` refuses ``str()``, so no f-string can turn it
into one text that is then redacted as a whole.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, overload

from .._engine._types import Message, ToolCall, arguments_text
from .._engine._valid import type_name
from .._tools._jsonable import jsonable, plain
from .._tools._tracebacks import MAX_TRACEBACK_CHARS, bounded

if TYPE_CHECKING:
    from .._trace._result import CallRecord, PendingCall, Step

Redact = Callable[[str], str]

MAX_DEPTH = 100
TOO_DEEP = "[nested more than 100 levels deep: not kept in a redacted trace]"
CIRCULAR = "[circular reference]"
WITHHELD = "[withheld: redact raised]"


def withhold(text: str) -> str:
    """What a trace keeps of a text when ``redact`` raised on it: nothing of it."""
    return WITHHELD


@dataclass(frozen=True, slots=True, eq=True)
class Quote:
    """A tool call a sentence of budgetloop's names: ``name(arguments)``, at most ``limit``
    characters. ``arguments`` are the parsed values, or the text that did not parse."""

    name: Any
    arguments: Any
    limit: int


class Said:
    """A sentence of budgetloop's own words that may quote tool calls (``Quote`` parts).

    ``said.real`` is what the model reads; ``Redactor.text(said)`` is what an output form keeps.
    Sentences join with ``+`` or ``Said(a, b, ...)`` (a ``None`` part reads ``None``)."""

    __slots__ = ("parts",)
    __hash__ = None  # type: ignore[assignment]  # its quotes hold dicts

    def __init__(self, *parts: str | Said | Quote | None) -> None:
        flat: list[str | Quote] = []
        for part in parts:
            for piece in (
                part.parts if isinstance(part, Said) else ("None" if part is None else part,)
            ):
                if isinstance(piece, str) and flat and isinstance(flat[-1], str):
                    flat[-1] += piece  # budgetloop's words in one run: one call to redact
                elif piece != "":
                    flat.append(piece)
        self.parts: tuple[str | Quote, ...] = tuple(flat)

    @property
    def real(self) -> str:
        """The sentence with the values the model wrote: what the model is told."""
        return PLAIN.text(self)

    def __add__(self, other: str | Said) -> Said:
        return Said(self, other)

    def __radd__(self, other: str) -> Said:
        return Said(other, self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Said) and other.parts == self.parts

    def __repr__(self) -> str:
        return f"Said{self.parts!r}"

    def __str__(self) -> str:
        raise TypeError(
            "Said: its text must be asked for in one of its two forms, got str(); use .real for "
            "the model, Redactor.text(said) for an output form."
        )


class Redactor:
    """The one way text enters an output form: every method redacts before it cuts or
    encodes. ``Redactor(None)`` (``PLAIN``) hands back what it is given, cheaply."""

    __slots__ = ("fn",)

    def __init__(self, fn: Redact | None = None) -> None:
        self.fn = fn

    # -- texts and values ---------------------------------------------------------------------

    @overload
    def text(self, text: str | Said) -> str: ...
    @overload
    def text(self, text: str | Said | None) -> str | None: ...
    def text(self, text: str | Said | None) -> str | None:
        """A text (a ``Said`` with each part redacted on its own); None stays None."""
        if isinstance(text, Said):
            return "".join(
                self.text(p) if isinstance(p, str) else self._quote(p) for p in text.parts
            )
        fn = self.fn
        return text if fn is None or text is None else fn(text)

    def value(self, value: Any) -> Any:
        """``value`` as an output form keeps it: strings and keys redacted, tuples as lists, and
        a number or other object whose text ``redact`` changes replaced by that text."""
        fn = self.fn
        return value if fn is None else _value(value, fn, 0, set())

    def arguments(self, raw: Any) -> Any:
        """A call's arguments as the model wrote them, as an output form keeps them.

        A dict is redacted as a value. A JSON string is redacted as text, unless that text would
        still decode to something other than the redacted arguments (a secret written with
        ``\\u`` escapes, or as a number): then it is the redacted arguments, re-encoded. A string
        that is not JSON is redacted as ``escaped`` redacts."""
        fn = self.fn
        if fn is None:
            return raw
        if not isinstance(raw, str):
            return self.value(raw)
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            return self.escaped(raw)
        clean = self.value(parsed)
        text = fn(raw)
        try:
            same = json.loads(text) == clean
        except (ValueError, RecursionError):
            same = False
        return text if same else _encode(clean)

    def escaped(self, text: str) -> str:
        """A text whose JSON escapes may hide a secret (``\\u0073k-...``): redacted as written,
        and kept so, unless its escapes, decoded, show a secret: then decoded and redacted. Text
        that only looks escaped (``C:\\new``, a secret holding a backslash) is not changed."""
        fn = self.fn
        if fn is None:
            return text
        written = fn(text)
        if "\\" not in written:
            return written
        decoded = _ESCAPE.sub(_unescape, written)
        shown = fn(decoded)
        return written if shown == decoded else shown

    def arguments_text(self, raw: Any) -> str:
        """A call's raw arguments as one text (``arguments_text``), redacted first."""
        return arguments_text(self.arguments(raw))

    # -- cut and encoded after ----------------------------------------------------------------

    def json(self, value: Any, *, sort_keys: bool = False) -> str:
        """``value`` redacted, then encoded as JSON (non-ASCII as it is, never as ``\\u``)."""
        return _encode(self.value(value), sort_keys=sort_keys)

    def cut(self, text: str, limit: int) -> str:
        """``text`` redacted, then cut to ``limit`` characters (its last one ``…``)."""
        return _shorten(self.text(text), limit)

    def traceback(self, text: str | None) -> str | None:
        """A traceback redacted, then cut to its end (``_tracebacks.bounded``)."""
        return None if text is None else bounded(self.text(text))

    def content(self, value: Any) -> str:
        """A tool's return value as the model reads it (``to_content``), redacted first."""
        if isinstance(value, str):
            return self.text(to_content(value))
        return to_content(self.value(jsonable(value)))

    def result(self, value: Any, limit: int | None, length: int | None) -> str:
        """A tool's return value redacted, encoded, and cut at ``limit`` when the model's
        text of it was (``length`` long)."""
        text = self.content(value)
        return text if limit is None or length is None else cut_result(text, limit, length)

    # -- records ------------------------------------------------------------------------------

    def message(self, message: Message) -> Message:
        """A message. Not for a tool result message: build that from the call's trace record
        (``Ran.trace_message``), whose content was redacted before its cut."""
        if self.fn is None:
            return message
        return replace(
            message,
            content=self.text(message.content),
            name=self.text(message.name),
            tool_call_id=self.text(message.tool_call_id),
            tool_calls=tuple(
                ToolCall(self.value(c.name), self.arguments(c.arguments), self.value(c.id))
                for c in message.tool_calls
            ),
        )

    def request(self, record: CallRecord) -> CallRecord:
        """What the model wrote (name, id, arguments), the checked arguments and the coerced
        paths; ``result``, ``error`` and ``traceback`` are left as they are."""
        if self.fn is None:
            return record
        return replace(
            record,
            name=self.value(record.name),
            id=self.value(record.id),
            raw_arguments=self.arguments(record.raw_arguments),
            arguments=self.value(record.arguments),
            coerced=tuple(self.text(path) for path in record.coerced),
            server=self.text(record.server),
        )

    def call(self, record: CallRecord) -> CallRecord:
        """Every field, the result and error as the texts they are: for a record whose texts
        were not cut or encoded from something else (``Dispatch`` makes the others)."""
        if self.fn is None:
            return record
        return replace(
            self.request(record),
            result=self.text(record.result),
            error=self.text(record.error),
            traceback=self.traceback(record.traceback),
        )

    def step(self, step: Step) -> Step:
        """The step's text, error and traceback (cut after); its tool calls as they are."""
        if self.fn is None:  # once a turn: only a long traceback changes
            tb = step.traceback
            return (
                step
                if tb is None or len(tb) <= MAX_TRACEBACK_CHARS
                else replace(step, traceback=bounded(tb))
            )
        return replace(
            step,
            text=self.text(step.text),
            error=self.text(step.error),
            traceback=self.traceback(step.traceback),
            model=self.text(step.model),
            response_id=self.text(step.response_id),
            finish_reason=self.text(step.finish_reason),
        )

    def kept(self, step: Step) -> Step:
        """A step another run took, as this run's trace keeps it: its texts and its calls'
        (a fork's or a resumed run's inherited steps, under the new run's ``redact``)."""
        if self.fn is None:
            return step
        calls = tuple(
            replace(
                self.request(r),
                result=self._kept_result(r.result),
                error=self._kept_text(r.error),
                traceback=None if r.traceback is None else bounded(self._kept_text(r.traceback)),
            )
            for r in step.tool_calls
        )
        return self.step(replace(step, tool_calls=calls))

    def _kept_result(self, text: str | None) -> str | None:
        """A result as another run kept it: JSON (a dict a tool returned, encoded) redacted as
        the value it holds, so no escape hides a secret; other text as ``_kept_text``."""
        if text is None:
            return None
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return self._kept_text(text)
        return self.arguments_text(text)

    @overload
    def _kept_text(self, text: str) -> str: ...
    @overload
    def _kept_text(self, text: str | None) -> str | None: ...
    def _kept_text(self, text: str | None) -> str | None:
        """Text another run wrote from parts it did not redact (an error quoting a name as
        ``repr`` does): as ``escaped`` redacts it, so an escaped secret is found too."""
        return None if text is None else self.escaped(text)

    def pending(self, call: PendingCall) -> PendingCall:
        """A call held for a person, as an output form keeps it: its name, id and arguments
        redacted, and ``redacted`` naming where in its checked arguments ``redact`` changed
        something (``arguments.key``): the values a resume cannot run it with as recorded."""
        if self.fn is None:
            return call
        return replace(
            call,
            name=self.value(call.name),
            id=self.value(call.id),
            raw_arguments=self.arguments(call.raw_arguments),
            arguments=self.value(call.arguments),
            redacted=tuple(_changed(call.arguments, self.fn, "arguments", 0, set())),
        )

    def schemas(self, schemas: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
        """The tool schemas as ``Result.tools`` and a trace file keep them."""
        return tuple(schemas) if self.fn is None else tuple(self.value(s) for s in schemas)

    def _quote(self, quote: Quote) -> str:
        name = self.value(quote.name)
        name = name if isinstance(name, str) else _text(name) or ""
        args = quote.arguments
        shown = self.arguments(args) if isinstance(args, str) else self.json(args, sort_keys=True)
        return _shorten(f"{name}({shown})", quote.limit)


PLAIN = Redactor(None)  # no redact: the model's own values
WITHHOLD = Redactor(withhold)  # for a record whose redact raised: no text of it kept


def redact_value(value: Any, redact: Redact) -> Any:
    """``Redactor(redact).value(value)``: for a message written in parts (``_check``)."""
    return _value(value, redact, 0, set())


def strict(redact: Redact) -> Redact:
    """``redact`` made to say so when it returns something other than text."""

    def checked(text: str) -> str:
        out = redact(text)
        if not isinstance(out, str):
            raise TypeError(f"redact: what redact returns must be a str, got {type_name(out)}.")
        return out

    return checked


def to_content(value: Any) -> str:
    """A tool's return value as the text the model reads: a str as is, else JSON (a dataclass,
    pydantic model, Enum, set, date or Decimal as the JSON ``_jsonable`` makes of it; any
    other object as its ``repr``)."""
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)  # a StrEnum: its value
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return repr(value)  # what json.dumps writes, without the encoder
    try:
        return json.dumps(value, ensure_ascii=False, default=_default)
    except (TypeError, ValueError):  # keys JSON cannot write, circular structures
        pass
    try:
        return json.dumps(jsonable(value), ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _default(value: Any) -> Any:
    converted = plain(value)
    return repr(value) if converted is value else converted


def cut_result(content: str, limit: int, length: int) -> str:
    """``content`` cut to ``limit`` characters, with a line saying the result had ``length``."""
    return (
        f"{content[:limit]}\n[truncated: the result had {length} characters; "
        f"the first {limit} are shown]"
    )


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _encode(value: Any, *, sort_keys: bool = False) -> str:
    """JSON of data already redacted; what JSON cannot write (keys it cannot sort, an int too
    long) is written some other way rather than raise."""
    for keys in (sort_keys, False) if sort_keys else (False,):
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=keys, default=repr)
        except Exception:  # unsortable keys, an int past the digit limit, a repr that raises
            continue
    return _text(value) or f"<{type(value).__name__} object>"


def _value(value: Any, redact: Redact, depth: int, seen: set[int]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        if id(value) in seen:
            return CIRCULAR
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                return {
                    _key(k, redact): _value(v, redact, depth + 1, seen) for k, v in value.items()
                }
            return [_value(v, redact, depth + 1, seen) for v in value]
        finally:
            seen.discard(id(value))
    text = _text(value)
    if text is None:  # an int too long to write out: JSON cannot write it either
        return value
    out = redact(text)
    if out == text and isinstance(value, (int, float)):
        return value
    return out  # other objects are kept as their (redacted) repr: what a JSON trace would write


def at(path: str, key: str | int) -> str:
    """The path of ``key`` in the value at ``path``: ``arguments.key``, ``arguments.items[0]``,
    ``arguments["a b"]`` (a key that is no identifier, as JSON writes it)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{_encode(key)}]"


def _changed(value: Any, redact: Redact, path: str, depth: int, seen: set[int]) -> Iterator[str]:
    """Where in ``value`` (as ``_value`` walks it) ``redact`` changes something: each path
    named by the redacted keys, so no secret is in it. A key ``redact`` changes names its
    whole entry; what ``_value`` cuts (too deep, circular) is named where it is cut."""
    if isinstance(value, str):
        if redact(value) != value:
            yield path
    elif value is None or isinstance(value, bool):
        return
    elif isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH or id(value) in seen:
            yield path
            return
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                for key, item in value.items():
                    shown = _key(key, redact)
                    where = at(path, shown if isinstance(shown, (str, int)) else _encode(shown))
                    if shown != key:
                        yield where
                    else:
                        yield from _changed(item, redact, where, depth + 1, seen)
            else:
                for i, item in enumerate(value):
                    yield from _changed(item, redact, at(path, i), depth + 1, seen)
        finally:
            seen.discard(id(value))
    else:
        text = _text(value)
        if text is not None and redact(text) != text:
            yield path


def _key(key: Any, redact: Redact) -> Any:
    if isinstance(key, str):
        return redact(key)
    if key is None or isinstance(key, bool):
        text: str | None = json.dumps(key)
    else:
        text = _text(key)
    if text is None:
        return key
    out = redact(text)
    if out == text and (key is None or isinstance(key, (int, float))):
        return key
    return out


def _text(value: Any) -> str | None:
    """The text a trace writes for a non-string scalar: a number's digits, else its repr."""
    try:
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return float.__repr__(value)
        return repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        return None
    except Exception:  # a repr that raises
        return f"<{type(value).__name__} object>"


_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[\"\\/bfnrt]"
)


def _unescape(match: re.Match[str]) -> str:
    decoded: str = json.loads(f'"{match.group()}"')
    if any("\ud800" <= ch <= "\udfff" for ch in decoded):
        return match.group()  # half a surrogate pair is no character: leave it as written
    return decoded
