"""The repetition guard: a model that keeps asking for the same tool calls is stopped.

Each turn that asks for tools is reduced to a signature: its calls' names and arguments as the
tools receive them (after the argument check: a number written as a string is the number, a
default left out or passed explicitly is the default), each in a form that ignores key order and
JSON spacing, and the calls taken as a multiset (their order within the turn does not count).
A call the check refuses is taken as it was sent. Two kinds of loop are found:

- the same signature ``repeat_limit`` turns running (A A A);
- a cycle of two or three different turns repeated ``cycle_limit`` times (A B A B A B, or
  A B C A B C A B C), found on the turn that completes the last repetition.

With ``warn_repeats=True`` the first loop found does not stop the run: its turn runs, and the
model is told once, in a note after that turn's tool results, that it is repeating itself. The
next loop found stops the run.

A loop is told in a ``Said`` that quotes the calls: the model reads them as it wrote them, and
every output form (the detail, the trace's copy of the note, the skipped calls' errors) gets each
call's arguments redacted before they are encoded as JSON and shortened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._engine._turn import Call, Parsed, checked, parse
from .._engine._types import ToolCall
from .._forms._redact import Quote, Said
from .._schema._check import ArgumentError
from .._schema._tool import Tool
from .._trace._result import Step

CYCLE_PERIODS = (2, 3)


def _encoder() -> Callable[[Any], str]:
    """JSON with sorted keys, ``repr`` for what JSON cannot write: one call as a signature has
    it. ``JSONEncoder.encode`` builds the C encoder anew on every call, which was most of a
    signature's time; it is built once here (the pure-Python encoder where there is none)."""
    try:
        from _json import make_encoder
    except ImportError:  # an interpreter without the accelerator
        return json.JSONEncoder(sort_keys=True, default=repr).encode
    ascii_text = json.encoder.encode_basestring_ascii
    chunks = make_encoder(None, repr, ascii_text, None, ": ", ", ", True, False, True)
    return lambda value: "".join(chunks(value, 0))


_ENCODE = _encoder()
SHOWN_CALL_CHARS = 80  # a call, as a loop's detail shows it
WARNING = (
    "[budgetloop] You are repeating yourself: {loop}. Do something different or give your "
    "answer; if the loop goes on, the run stops."
)


class Repeats:
    """The signatures of a run's turns so far, and the loops they form."""

    def __init__(
        self,
        repeat_limit: int | None,
        cycle_limit: int | None,
        warn: bool,
        history: Sequence[Step],
        tools: Mapping[str, Tool],
    ) -> None:
        self._repeat_limit = repeat_limit
        self._cycle_limit = cycle_limit
        self._warn = warn
        self._tools = tools
        self._defaults = {name: _defaults(tool) for name, tool in tools.items()}
        self._signatures: list[str] = []
        self.warned = False  # a warning was given: the next loop stops the run
        for step in history:  # a fork's history: its signatures, and whether it was warned
            seen = self.signature(_calls_of(step)) if step.tool_calls else None
            if seen is not None:
                self.add(seen, warned=self._warn and self.loop(seen) is not None)

    def signature(self, calls: Sequence[Call]) -> str | None:
        """A turn's signature, or None when no loop is looked for."""
        if self._repeat_limit is None and self._cycle_limit is None:
            return None
        return signature_of(calls, self._tools, self._defaults)

    def loop(self, seen: str) -> Said | None:
        """The loop a turn with signature ``seen`` would close, in words, or None."""
        n = self._repeat_limit
        if n is not None:
            recent = [*self._signatures[-(n - 1) :], seen]
            if len(recent) == n and len(set(recent)) == 1:
                return Said(f"the same tool calls {n} turns running: ", shown(seen))
        k = self._cycle_limit
        if k is not None:
            for period in CYCLE_PERIODS:
                window = [*self._signatures[-(period * k - 1) :], seen]
                if _cycles(window, period, k):
                    turns = [
                        Said(" then " if i else "", shown(s))
                        for i, s in enumerate(window[:period])
                    ]
                    return Said(f"a cycle of {period} turns repeated {k} times: ", *turns)
        return None

    def warns(self, loop: Said | None) -> bool:
        """Whether the loop found this turn is met with a warning rather than a stop."""
        return loop is not None and self._warn and not self.warned

    def add(self, seen: str, *, warned: bool = False) -> None:
        """A turn that asked for tools is part of the run."""
        self._signatures.append(seen)
        self.warned = self.warned or warned


def warning(loop: Said) -> Said:
    """The note a warned turn's last tool result ends with."""
    before, after = WARNING.split("{loop}")
    return Said(before, loop, after)


def signature_of(
    calls: Sequence[Call], tools: Mapping[str, Tool], defaults: Mapping[str, dict[str, Any]]
) -> str:
    """The turn's calls as a JSON list of ``[name, arguments]``: each call's arguments as its
    tool receives them (or as sent, when the check refuses them), with sorted keys, and the
    calls sorted, so that neither key order, spacing nor the order of the calls counts.
    ``defaults`` are each tool's parameter defaults (``_defaults``)."""
    each = [_ENCODE([c.name, _received(c, tools, defaults)]) for c in calls]
    return "[" + ", ".join(sorted(each)) + "]"


def _received(
    call: Call, tools: Mapping[str, Tool], defaults: Mapping[str, dict[str, Any]]
) -> Any:
    """A call's arguments as its tool would be called with them: checked (a number written as
    a string coerced) and with each default the schema shows filled in; what was sent when
    there is no such tool or the check refuses them."""
    parsed = call.parsed
    if isinstance(parsed, ArgumentError):
        return str(call.request.arguments)
    tool = tools.get(call.name)
    if tool is None:
        return parsed
    outcome = checked(call, tool)  # kept on the call: the batch runs it with these arguments
    if isinstance(outcome, Exception):  # refused, or a check that broke (the batch reports it)
        return parsed
    filled = defaults[call.name]
    return {**filled, **outcome[0]} if filled else outcome[0]


def _defaults(tool: Tool) -> dict[str, Any]:
    """The defaults a tool's schema shows, by parameter."""
    return {
        name: schema["default"]
        for name, schema in tool.parameters.items()
        if isinstance(schema, dict) and "default" in schema
    }


def shown(seen: str) -> Said:
    """A signature as a loop's detail quotes it: ``name({arguments})``, each call shortened to
    ``SHOWN_CALL_CHARS`` (by the ``Redactor`` that writes it, after it redacts and encodes)."""
    calls: list[list[Any]] = json.loads(seen)
    return Said(
        *(
            Said(", " if i else "", Quote(name, args, SHOWN_CALL_CHARS))
            for i, (name, args) in enumerate(calls)
        )
    )


def _cycles(window: list[str], period: int, times: int) -> bool:
    """``window`` is ``times`` repetitions of ``period`` turns that are not all the same."""
    if len(window) != period * times or len(set(window[:period])) == 1:
        return False
    return all(window[i] == window[i + period] for i in range(len(window) - period))


def _calls_of(step: Step) -> list[Call]:
    """A recorded step's calls, as the guard compares them."""
    out = []
    for r in step.tool_calls:
        parsed: Parsed = parse(r.name, r.raw_arguments)
        out.append(Call(ToolCall(r.name, r.raw_arguments, r.id), r.id, parsed))
    return out
