"""Hypothesis strategies for the property, fault and fuzz tests, kept in one place.

Profiles (registered and loaded on import of this module):

* ``ci`` (the default): derandomized, 100 examples a test, no deadline, failure blobs printed.
  The whole property suite stays well under two minutes on two cores.
* ``long``: 2,000 examples a test, randomized; select it with ``HYPOTHESIS_PROFILE=long``::

      HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/core/test_properties.py

A generated run is plain data first (a ``Scenario``: tools, a model's script, a budget), built
into fresh objects by ``build(scenario)``; so the same scenario can be run twice (stepping and
running, sync and async) and compared. Tools and the model log what they do into
``Built.log`` as ``(event, ...)`` tuples: ``("tool", name, q, step)`` when a tool starts, with
``step`` the index of the model call whose batch it belongs to.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    Usage,
    tool,
)
from budgetloop._schema._tool import Tool
from tests.conftest import FakeClock

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROMPT = "do the task"
PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)
TOOL_NAMES = ("alpha", "beta", "gamma")


Point = Callable[[], None]  # called where user code runs, for a test to break it there


class Unwound(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor SystemExit, raised by a tool."""


# -- the data a run is built from ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """One tool ``name(q: str, n: int = 0) -> str``: ``ok``, ``raise`` (ValueError), ``base``
    (raises ``Unwound``) or ``slow`` (advances the fake clock by ``seconds``, then returns)."""

    name: str
    kind: str
    seconds: int = 0


@dataclass(frozen=True)
class CallSpec:
    name: Any
    arguments: Any
    id: Any


@dataclass(frozen=True)
class TurnSpec:
    """One scripted model turn.

    ``kind``: ``answer`` (text only), ``calls`` (tool calls, maybe with text), ``raise`` (the
    model raises RuntimeError), ``none``/``str`` (the model returns None / a str), ``bad_calls``
    (building the Completion raises TypeError inside the model). ``usage`` None means the
    ScriptedModel counts it (never above the loop's projection); else it is reported as is.
    ``seconds`` is how far the model call moves the fake clock.
    """

    kind: str
    text: str | None = None
    calls: tuple[CallSpec, ...] = ()
    usage: tuple[int, int] | None = None
    seconds: int = 0


@dataclass(frozen=True)
class Scenario:
    tools: tuple[ToolSpec, ...]
    turns: tuple[TurnSpec, ...]
    budget: Budget
    price: Price | None
    max_output_tokens: int | None
    repeat_last: bool
    repeat_limit: int | None
    max_workers: int | None
    counted: bool  # every turn's usage is counted by the ScriptedModel

    def tool_kinds(self) -> dict[str, str]:
        return {t.name: t.kind for t in self.tools}


@dataclass
class Built:
    model: ScriptedModel
    tools: list[Tool]
    clock: FakeClock
    log: list[tuple[Any, ...]] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


# -- building a scenario into objects -------------------------------------------------------------


def make_tool(
    spec: ToolSpec, clock: FakeClock, log: list[tuple[Any, ...]], model: Any, point: Point
) -> Tool:
    def body(q: str, n: int = 0) -> str:
        point()
        log.append(("tool", spec.name, q, model.calls - 1))
        if spec.kind == "raise":
            raise ValueError(f"{spec.name} failed on {q}")
        if spec.kind == "base":
            raise Unwound(f"{spec.name} unwound on {q}")
        if spec.kind == "slow":
            clock.advance(spec.seconds)
        return f"{spec.name}:{q}:{n}"

    body.__doc__ = f"The {spec.kind} tool {spec.name}."
    return tool(body, name=spec.name)


def make_entry(
    turn: TurnSpec, clock: FakeClock, log: list[tuple[Any, ...]], point: Point
) -> Callable[[list[Message], list[dict[str, Any]]], Any]:
    def entry(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        point()
        log.append(("model", turn.kind))
        clock.advance(turn.seconds)
        if turn.kind == "raise":
            raise RuntimeError("the provider is down")
        if turn.kind == "none":
            return None
        if turn.kind == "str":
            return "a bare string"
        usage = None if turn.usage is None else Usage(*turn.usage)
        if turn.kind == "bad_calls":
            return Completion(tool_calls="alpha", usage=usage)  # type: ignore[arg-type]
        calls = [ToolCall(c.name, c.arguments, c.id) for c in turn.calls]
        return Completion(text=turn.text, tool_calls=calls, usage=usage)

    return entry


def _nothing() -> None:
    return None


def build(s: Scenario, point: Point = _nothing) -> Built:
    """Fresh objects for ``s``; ``point()`` is called as each model call and tool starts."""
    clock = FakeClock()
    log: list[tuple[Any, ...]] = []
    model = ScriptedModel(
        [make_entry(t, clock, log, point) for t in s.turns],
        price=s.price,
        max_output_tokens=s.max_output_tokens,
        repeat_last=s.repeat_last,
    )
    tools = [make_tool(t, clock, log, model, point) for t in s.tools]
    kwargs: dict[str, Any] = {
        "tools": tools,
        "budget": s.budget,
        "price": s.price,
        "max_output_tokens": s.max_output_tokens,
        "repeat_limit": s.repeat_limit,
        "max_workers": s.max_workers,
        "clock": clock,
    }
    return Built(model, tools, clock, log, kwargs)


def tools_ran(result: Result) -> int:
    """The calls of ``result`` whose tool was called, as ``max_tool_calls`` counts them: a call
    the check refused (no checked arguments) never ran."""
    return len([c for c in result.tool_calls if c.arguments is not None])


# -- strategies ---------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def arguments(tag: str) -> st.SearchStrategy[Any]:
    """Arguments for ``(q: str, n: int = 0)``: mostly good, as a dict or a JSON string, and
    every kind of bad: wrong types, unknown or missing keys, invalid JSON, arrays, numbers."""
    good = st.sampled_from(
        [{"q": tag}, {"q": tag, "n": 3}, {"n": "7", "q": tag}, {"q": tag, "n": 2.0}]
    )
    bad = st.sampled_from(
        [
            {"q": 5},
            {"q": tag, "n": "seven"},
            {"q": tag, "n": 1.5},
            {"q": tag, "zzz": 1},
            {},
            "",
            "{not json",
            "[1, 2]",
            "3",
            "null",
            [1, 2],
            42,
            None,
        ]
    )
    # good arguments four times in seven
    return st.integers(0, 6).flatmap(
        lambda k: (
            good if k < 2 else good.map(json.dumps) if k < 4 else bad if k < 6 else json_values
        )
    )


@st.composite
def call_ids(draw: st.DrawFn, n: int) -> list[Any]:
    """The ids of a batch of ``n`` tool calls, as a model sends them: missing (None, "", not a
    str), given, a repeat of an earlier one, or an earlier one with a suffix in the very form
    the loop makes a unique id in (``{id}_{i}``, ``i`` a position in the batch), so that the ids
    the loop makes up meet the ones the model gave, before and after them."""
    out: list[Any] = []
    for _ in range(n):
        given = [i for i in out if isinstance(i, str) and i]
        kind = draw(st.sampled_from(["missing", "given", "repeat", "suffixed"]))
        if kind == "missing":
            out.append(draw(st.sampled_from([None, "", 3])))
        elif kind == "given" or not given:
            out.append(
                draw(st.sampled_from(["a", "b", "a_1", "call_0_0", "call_0_1", "call_1_0"]))
            )
        elif kind == "repeat":
            out.append(draw(st.sampled_from(given)))
        else:
            out.append(f"{draw(st.sampled_from(given))}_{draw(st.integers(0, n))}")
    return out


@st.composite
def call_specs(draw: st.DrawFn, tag: str, names: tuple[str, ...], ident: Any) -> CallSpec:
    unknown = st.sampled_from(["missing_tool", "", None])
    name = draw(unknown if draw(st.integers(0, 7)) == 0 else st.sampled_from(names))
    return CallSpec(name, draw(arguments(tag)), ident)


@st.composite
def turn_specs(
    draw: st.DrawFn, index: int, names: tuple[str, ...], counted: bool, malformed: bool
) -> TurnSpec:
    kind = draw(st.sampled_from(["calls"] * 6 + ["answer"]))
    if malformed and draw(st.integers(0, 9)) == 0:
        kind = draw(st.sampled_from(["raise", "none", "str", "bad_calls"]))
    usage = None
    if not counted:
        # usage that grows per turn, as a real provider's context does
        usage = (draw(st.integers(0, 400)) + 300 * index, draw(st.integers(0, 80)))
    seconds = draw(st.integers(0, 2))
    text = draw(st.none() | st.text(max_size=20))
    if kind != "calls":
        return TurnSpec(kind, text, (), usage, seconds)
    n = draw(st.integers(1, 4))
    ids = draw(call_ids(n))
    calls = tuple(draw(call_specs(f"t{index}c{i}", names, ids[i])) for i in range(n))
    return TurnSpec(kind, text, calls, usage, seconds)


@st.composite
def budgets(draw: st.DrawFn, *, costed: bool, need_steps: bool) -> Budget:
    steps = st.integers(0, 8) if draw(st.integers(0, 9)) == 0 else st.integers(1, 8)
    max_steps = draw(steps if need_steps else st.none() | steps)
    return Budget(
        max_steps=max_steps,
        max_tool_calls=draw(st.none() | st.integers(0, 8)),
        max_seconds=draw(st.none() | st.integers(1, 8)),
        max_cost_usd=draw(st.integers(0, 1500).map(lambda n: n * 1e-5)) if costed else None,
    )


@st.composite
def tiered_prices(draw: st.DrawFn) -> Price:
    """``PRICE`` with one or two long-context tiers at thresholds a scripted run's context
    crosses (its input is tens to hundreds of tokens), dearer or cheaper than the base."""
    rates = st.sampled_from([0.5, 3.0, 6.0, 15.0, 22.5, 90.0])
    thresholds = draw(st.lists(st.integers(0, 400), min_size=1, max_size=2, unique=True))
    tiers = {
        above: Price(
            draw(rates),
            draw(rates),
            cache_read_per_mtok=draw(st.none() | rates),
            cache_write_per_mtok=draw(st.none() | rates),
        )
        for above in thresholds
    }
    return Price(PRICE.input_per_mtok, PRICE.output_per_mtok, tiers=tiers)


@st.composite
def scenarios(
    draw: st.DrawFn, *, deterministic: bool = False, malformed: bool = True, tiered: bool = False
) -> Scenario:
    """A random run. ``deterministic`` leaves out slow tools: then a scenario built twice runs
    the same way on any driver (only the model, one call at a time, moves the fake clock, by
    whole seconds against a whole-second ``max_seconds``, so no real-time wait is ever short).
    ``tiered`` prices it with long-context tiers its context crosses."""
    kinds = ["ok", "ok", "raise", "base"] + ([] if deterministic else ["slow", "slow"])
    n_tools = draw(st.integers(1, len(TOOL_NAMES)))
    tools = tuple(
        ToolSpec(name, draw(st.sampled_from(kinds)), draw(st.integers(1, 3)))
        for name in TOOL_NAMES[:n_tools]
    )
    names = tuple(t.name for t in tools)
    counted = draw(st.booleans())
    repeat_last = draw(st.booleans())
    n_turns = draw(st.integers(0 if not repeat_last else 1, 8))
    turns = tuple(draw(turn_specs(i, names, counted, malformed)) for i in range(n_turns))
    costed = draw(st.booleans())
    budget = draw(budgets(costed=costed, need_steps=repeat_last))
    price = PRICE if costed or draw(st.booleans()) else None
    if tiered and price is not None:
        price = draw(tiered_prices())
    max_output_tokens = draw(st.integers(1, 64)) if costed or draw(st.booleans()) else None
    return Scenario(
        tools=tools,
        turns=turns,
        budget=budget,
        price=price,
        max_output_tokens=max_output_tokens,
        repeat_last=repeat_last,
        repeat_limit=draw(st.sampled_from([None, 2, 3])),
        max_workers=draw(st.sampled_from([None, None, 1, 2])),
        counted=counted,
    )


@st.composite
def loop_options(draw: st.DrawFn) -> dict[str, Any]:
    """The options that change what the loop does besides its budget, each on or off:
    ``finish``, ``budget_note``, ``warn_repeats`` and ``cycle_limit``."""
    return {
        "finish": draw(st.booleans()),
        "budget_note": draw(st.booleans()),
        "warn_repeats": draw(st.booleans()),
        "cycle_limit": draw(st.sampled_from([None, 2, 3])),
    }


# --- ledgers ----------------------------------------------------------------------------------
# A ledger scenario: a limit and a list of operations, each ("reserve", pico), ("settle", which,
# fraction of its reservation in 0..1: honest), ("release", which) or ("wait", seconds).
ledger_ops = st.lists(
    st.one_of(
        st.tuples(st.just("reserve"), st.integers(0, 2_000)),
        st.tuples(st.just("settle"), st.integers(0, 30), st.fractions(0, 1)),
        st.tuples(st.just("release"), st.integers(0, 30)),
        st.tuples(st.just("wait"), st.sampled_from([0.5, 10.0, 3600.0])),
    ),
    max_size=40,
)


# --- usage reports ----------------------------------------------------------------------------
# The Responses API's names for a usage's counts, and Chat Completions' (which compatible
# servers send in their place): input, output, input details, output details.
RESPONSES_WORDS = (
    "input_tokens",
    "output_tokens",
    "input_tokens_details",
    "output_tokens_details",
)
CHAT_WORDS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
)


def said_in(words: tuple[str, str, str, str], u: Usage) -> dict[str, Any]:
    """``u`` as OpenAI reports it in these words (each details object always given)."""
    inp, out, inp_details, out_details = words
    return {
        inp: u.input_tokens,
        inp_details: {
            "cached_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        },
        out: u.output_tokens,
        out_details: {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens + u.output_tokens,
    }


@dataclass(frozen=True)
class UsageReport:
    """A usage a provider billed (``true``) and how a server reported it (``said``: any JSON).
    ``faithful``: ``said`` gives exactly the true counts in a shape an adapter should read."""

    true: Usage
    said: Any
    faithful: bool


def _junk(value: int) -> st.SearchStrategy[Any]:
    """A count as no provider should send it: another type, or below zero."""
    return st.sampled_from(
        [float(value), str(value), -value - 1, True, False, [value], {"n": value}, "many"]
    )


@st.composite
def usage_reports(draw: st.DrawFn, most_input: int, most_output: int) -> UsageReport:
    """A true usage within ``most_input`` / ``most_output`` tokens, reported in one of OpenAI's
    two vocabularies or both, then perhaps broken: a count missing or of the wrong kind, the two
    vocabularies disagreeing, a cached part above the input, parts dropped or nulled, the whole
    usage empty or not an object."""
    inp = draw(st.integers(0, most_input))
    read = draw(st.integers(0, inp))
    write = draw(st.integers(0, inp - read))
    out = draw(st.integers(0, most_output))
    true = Usage(inp, out, read, write, draw(st.integers(0, out)))
    vocabularies = draw(st.sampled_from(["responses", "chat", "both"]))
    said: dict[str, Any] = {}
    for name, words in (("responses", RESPONSES_WORDS), ("chat", CHAT_WORDS)):
        if vocabularies in (name, "both"):
            said.update(said_in(words, true))
    words = RESPONSES_WORDS if vocabularies != "chat" else CHAT_WORDS
    how = draw(
        st.sampled_from(
            ["as is", "parts left out", "junk count", "junk part", "count missing", "disagree",
             "cached above", "details not an object", "empty", "not an object"]
        )
    )  # fmt: skip
    faithful = how in ("as is", "parts left out")
    if how == "parts left out":  # a part of none is left out or null, as servers do
        for details, part in (
            (2, "cached_tokens"),
            (2, "cache_write_tokens"),
            (3, "reasoning_tokens"),
        ):
            for w in (RESPONSES_WORDS, CHAT_WORDS):
                held = said.get(w[details])
                if held is not None and held[part] == 0 and draw(st.booleans()):
                    if draw(st.booleans()):
                        del held[part]
                    else:
                        held[part] = None
    elif how == "junk count":
        key = words[draw(st.integers(0, 1))]
        said[key] = draw(_junk(said[key]))
    elif how == "junk part":
        details, part = draw(
            st.sampled_from(
                [(2, "cached_tokens"), (2, "cache_write_tokens"), (3, "reasoning_tokens")]
            )
        )
        held = said[words[details]]
        held[part] = draw(_junk(held[part]))
    elif how == "count missing":
        del said[words[draw(st.integers(0, 1))]]
    elif how == "disagree":  # the other vocabulary, saying other numbers
        other = CHAT_WORDS if words is RESPONSES_WORDS else RESPONSES_WORDS
        more = draw(st.integers(1, 1000))
        said.update(said_in(other, Usage(inp + more, out)))
    elif how == "cached above":
        said[words[2]]["cached_tokens"] = inp + draw(st.integers(1, 1000))
    elif how == "details not an object":
        said[words[2]] = draw(st.sampled_from(["cached", 0, [read], True]))
    elif how == "empty":
        said = {}
    else:
        return UsageReport(true, draw(st.sampled_from([None, "usage", 12, [inp, out]])), False)
    return UsageReport(true, said, faithful)


# -- runs from elsewhere, as each importer reads them, cut anywhere --------------------------------
#
# A conversation is plain data first: ("assistant", text, calls), ("result", call id, tool name,
# text, failed) and ("user", text) events after a system prompt and a user prompt; each call
# is (name, id, arguments). Ids may be missing (where the format allows it) or repeated, a
# result may answer no call, and a call may have no result: what a log cut short, or written by
# a careless exporter, holds. ``imported_logs`` writes it in one format and cuts it after any
# message, item or span.

LOG_FORMATS = ("chat", "responses", "anthropic", "otlp")
SOURCE_ENDS = {  # how a source's run span (OTLP) may say the run ended
    "limit": ("UsageLimitExceeded", "The next request would exceed the request_limit of 3"),
    "raised": ("GraphRecursionError", "Recursion limit of 25 reached without hitting a stop"),
    "answer": None,
}


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    events: list[tuple[Any, ...]] = []
    ids = iter(f"call_{n}" for n in range(100))
    for _ in range(draw(st.integers(0, 4))):
        text = draw(st.sampled_from([None, "", "Checking."]))
        calls = [
            (
                draw(st.sampled_from(["price", "convert"])),
                draw(st.sampled_from([next(ids), next(ids), None, "call_0"])),
                {"isin": draw(st.sampled_from(["SE0000108656", "XX"]))},
            )
            for _ in range(draw(st.integers(0, 2)))
        ]
        events.append(("assistant", text, calls))
        for name, ident, _ in calls:
            kind = draw(st.sampled_from(["ok", "failed", "missing"]))
            if kind != "missing":
                events.append(("result", ident, name, "118.4", kind == "failed"))
        if draw(st.integers(0, 5)) == 0:
            events.append(("result", "orphan", "price", "9.9", False))  # answers no call
        if draw(st.integers(0, 5)) == 0:
            events.append(("user", "And in EUR?"))
    return events


def _chat_log(events: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        if event[0] == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": event[1]}
            if event[2]:
                message["tool_calls"] = [
                    {"id": i, "type": "function",
                     "function": {"name": n, "arguments": json.dumps(a)}}
                    for n, i, a in event[2]
                ]  # fmt: skip
            out.append(message)
        elif event[0] == "result":
            out.append({"role": "tool", "tool_call_id": event[1], "content": event[3]})
        else:
            out.append({"role": "user", "content": event[1]})
    return out


def _responses_items(events: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        if event[0] == "assistant":
            if event[1] is not None:
                out.append({"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": event[1]}]})  # fmt: skip
            out += [
                {"type": "function_call", "name": n, "call_id": i or "call_x",
                 "arguments": json.dumps(a)}
                for n, i, a in event[2]
            ]  # fmt: skip
        elif event[0] == "result":
            out.append({"type": "function_call_output", "call_id": event[1] or "call_x",
                        "output": event[3]})  # fmt: skip
        else:
            out.append({"role": "user", "content": event[1]})
    return out


def _anthropic_log(events: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        if event[0] == "assistant":
            blocks: list[dict[str, Any]] = []
            if event[1]:
                blocks.append({"type": "text", "text": event[1]})
            blocks += [
                {"type": "tool_use", "id": i or "toolu_x", "name": n, "input": a}
                for n, i, a in event[2]
            ]
            out.append({"role": "assistant", "content": blocks})
            continue
        if event[0] == "result":
            block = {"type": "tool_result", "tool_use_id": event[1] or "toolu_x",
                     "content": event[3], "is_error": event[4]}  # fmt: skip
        else:
            block = {"type": "text", "text": event[1]}
        last = out[-1] if out else None
        if last is not None and last["role"] == "user" and isinstance(last["content"], list):
            last["content"].append(block)  # a turn's results are one user message
        else:
            out.append({"role": "user", "content": [block]})
    return out


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    def value(v: Any) -> dict[str, Any]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    return [{"key": k, "value": value(v)} for k, v in values.items()]


def _span(n: int, name: str, attributes: dict[str, Any], **more: Any) -> dict[str, Any]:
    start = 1_700_000_000_000_000_000 + n * 1_000_000
    return {"traceId": "ab" * 16, "spanId": f"{n + 1:016x}", "parentSpanId": f"{1:016x}",
            "name": name, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 500_000), "attributes": _attributes(attributes),
            **more}  # fmt: skip


def _genai_spans(events: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """A GenAI span per model call (its reply in ``gen_ai.output.messages``) and per tool run
    (a failed one with an ERROR status and an exception event), as pydantic-ai writes them."""
    out: list[dict[str, Any]] = []
    for n, event in enumerate(events, start=1):
        if event[0] == "assistant":
            parts: list[dict[str, Any]] = []
            if event[1] is not None:
                parts.append({"type": "text", "content": event[1]})
            parts += [{"type": "tool_call", "id": i, "name": nm, "arguments": a}
                      for nm, i, a in event[2]]  # fmt: skip
            said = {"role": "assistant", "parts": parts}
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps([said]),
                "gen_ai.usage.input_tokens": 100 * n,
                "gen_ai.usage.output_tokens": 10,
            }
            if n == 1:
                asked = {
                    "role": "user",
                    "parts": [{"type": "text", "content": "What is it worth?"}],
                }
                attributes["gen_ai.input.messages"] = json.dumps([asked])
            out.append(_span(n, "chat scripted", attributes))  # fmt: skip
        elif event[0] == "result":
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event[2]}
            if event[1] is not None:
                attributes["gen_ai.tool.call.id"] = event[1]
            more: dict[str, Any] = {}
            if event[4]:
                more["status"] = {"code": "STATUS_CODE_ERROR", "message": "ValueError: no price"}
                more["events"] = [{"name": "exception", "timeUnixNano": "1", "attributes":
                                   _attributes({"exception.type": "ValueError",
                                                "exception.message": "no price"})}]  # fmt: skip
            else:
                attributes["gen_ai.tool.call.result"] = event[3]
            out.append(_span(n, f"execute_tool {event[2]}", attributes, **more))
    return out


def _agent_span(end: str | None, cut: int) -> list[dict[str, Any]]:
    """The run span, when the source wrote one: how the run ended (its limit, an exception it
    raised, or its final result), spanning the spans kept."""
    if end is None:
        return []
    attributes = {"gen_ai.operation.name": "invoke_agent"}
    more: dict[str, Any] = {}
    raised = SOURCE_ENDS[end]
    if raised is None:
        attributes["final_result"] = "Done."
    else:
        more["status"] = {"code": "STATUS_CODE_ERROR", "message": f"{raised[0]}: {raised[1]}"}
        more["events"] = [{"name": "exception", "timeUnixNano": "1", "attributes":
                           _attributes({"exception.type": raised[0],
                                        "exception.message": raised[1]})}]  # fmt: skip
    span = _span(0, "invoke_agent agent", attributes, **more)
    span.pop("parentSpanId")
    span["endTimeUnixNano"] = str(1_700_000_000_000_000_000 + (cut + 2) * 1_000_000)
    return [span]


@st.composite
def imported_logs(draw: st.DrawFn) -> tuple[str, Any]:
    """A conversation written in one of ``LOG_FORMATS``, cut after any message, item or span:
    the format and the document (OTLP spans sometimes with their run span, saying how the
    source ended the run)."""
    events = draw(conversations())
    fmt = draw(st.sampled_from(LOG_FORMATS))
    prompt = [("user", "What is SE0000108656 worth?")]
    if fmt == "chat":
        units: list[Any] = [{"role": "system", "content": "Be careful."},
                            *_chat_log(prompt + events)]  # fmt: skip
    elif fmt == "responses":
        units = _responses_items(prompt + events)
    elif fmt == "anthropic":
        units = _anthropic_log(prompt + events)
    else:
        units = _genai_spans(events)
    cut = draw(st.integers(1 if units else 0, len(units)))
    kept = units[:cut]
    if fmt != "otlp":
        return fmt, kept
    spans = kept + _agent_span(draw(st.sampled_from([None, *SOURCE_ENDS])), cut)
    scope = {"scope": {"name": "pydantic-ai", "version": "1"}, "spans": spans}
    return fmt, {"resourceSpans": [{"resource": {}, "scopeSpans": [scope]}]}


@dataclass(frozen=True)
class Fitting:
    """A run with ``min_output_tokens``: the tokens each tool result adds to the context (a
    context that grows by its own amount each turn), the output tokens each reply would take
    (cut at what its request asked for, as a provider cuts it), the ceiling and the least."""

    growth: tuple[int, ...]
    outputs: tuple[int, ...]
    ceiling_usd: float
    least: int


@st.composite
def fittings(draw: st.DrawFn) -> Fitting:
    turns = draw(st.integers(1, 8))
    return Fitting(
        growth=tuple(draw(st.lists(st.integers(0, 4000), min_size=turns, max_size=turns))),
        outputs=tuple(draw(st.lists(st.integers(0, 3000), min_size=9, max_size=9))),
        ceiling_usd=draw(st.integers(1, 2000)) / 100_000,
        least=draw(st.integers(1, 1000)),
    )


# -- a streamed reply: a completion, and its pieces cut anywhere --------------------------------


@st.composite
def streamed_replies(draw: st.DrawFn) -> tuple[Completion, list[Any]]:
    """A reply (text or none, up to three calls with JSON arguments, a usage of at most 8
    input and 50 output tokens) and the chunks of any chunking of it, the usage last."""
    from budgetloop import Chunk

    text = draw(st.one_of(st.none(), st.text(min_size=1, max_size=40)))
    calls = [
        ToolCall(name, json.dumps({"q": q}), draw(st.one_of(st.none(), st.just(f"id{i}"))))
        for i, (name, q) in enumerate(
            draw(
                st.lists(st.tuples(st.sampled_from(TOOL_NAMES), st.text(max_size=12)), max_size=3)
            )
        )
    ]
    usage = Usage(draw(st.integers(0, 8)), draw(st.integers(0, 50)))
    reason = draw(st.sampled_from([None, "stop", "tool_call"]))
    completion = Completion(text=text, tool_calls=calls, usage=usage, finish_reason=reason)

    def cuts(value: str) -> list[str]:
        points = sorted(draw(st.sets(st.integers(1, max(len(value) - 1, 1)), max_size=6)))
        bounds = [0, *(p for p in points if p < len(value)), len(value)]
        return [value[a:b] for a, b in itertools.pairwise(bounds) if b > a]

    chunks: list[Any] = [Chunk(text=piece) for piece in cuts(text or "")]
    for i, call in enumerate(calls):
        pieces = cuts(call.arguments_text) or [""]
        chunks.append(Chunk(index=i, id=call.id, name=call.name, arguments=pieces[0]))
        chunks += [Chunk(index=i, arguments=piece) for piece in pieces[1:]]
    chunks.append(Chunk(usage=usage, finish_reason=reason))
    return completion, chunks
