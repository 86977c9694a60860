"""A property of the importers (issue 28): for a run the real pydantic-ai makes from a generated
script (texts, tool calls that succeed, ask for a retry or raise out of the run, and sometimes a
request limit), the imported run, from its spans and from its own messages JSON, has the model
calls, tool names, arguments, results as the model read them, usage, answer and end that
pydantic-ai's own record of the run has (``capture_run_messages``, its output or exception)."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import Result, Stop, Usage, load_trace
from tests.peer_runs import pydantic_ai_run

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim (the dev extra has it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the dev extra has it")

ISINS = ("SE0000108656", "XX", "BOOM")  # found; a retry asked for; raises out of the run


@st.composite
def scripts(draw: st.DrawFn) -> tuple[list[list[Any]], int | None]:
    """Replies: turns of optional text and tool calls (ids unique), then a text answer; and
    a request limit, sometimes."""
    replies: list[list[Any]] = []
    for turn in range(draw(st.integers(0, 3))):
        parts: list[Any] = []
        if draw(st.booleans()):
            parts.append(f"Turn {turn}.")
        for k in range(draw(st.integers(1, 2))):
            parts.append(("price", {"isin": draw(st.sampled_from(ISINS))}, f"call_{turn}_{k}"))
        replies.append(parts)
    replies.append([draw(st.sampled_from(["It is 118.4.", "Not listed."]))])
    limit = draw(st.one_of(st.none(), st.integers(1, 4)))
    return replies, limit


def peer_record(run: Any, messages: list[Any]) -> dict[str, Any]:
    """What pydantic-ai itself records of the run, in the terms compared. A run that raised
    with a request last (a limit checked before sending it) never sent that request."""
    if run.raised is not None and messages and messages[-1].kind == "request":
        messages = messages[:-1]
    responses = [m for m in messages if m.kind == "response"]
    first = messages.index(responses[0]) if responses else len(messages)
    read = [
        (p.tool_call_id, p.content if isinstance(p.content, str) else json.dumps(p.content))
        for m in messages[first:]
        if m.kind == "request"
        for p in m.parts
        if p.part_kind == "tool-return"
    ]
    return {
        "calls": [
            (
                "".join(p.content for p in r.parts if p.part_kind == "text") or None,
                [
                    (p.tool_name, p.args, p.tool_call_id)
                    for p in r.parts
                    if p.part_kind == "tool-call"
                ],
            )
            for r in responses
        ],
        "usage": [Usage(r.usage.input_tokens, r.usage.output_tokens) for r in responses],
        "read": read,
        "answer": run.output,
        "error": None if run.raised is None else f"{type(run.raised).__name__}: {run.raised}",
    }


def as_data(arguments: Any) -> Any:
    """Arguments as the model sent them, as data (a source may keep them as JSON text)."""
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def imported_record(result: Result) -> dict[str, Any]:
    return {
        "calls": [
            (s.text, [(c.name, as_data(c.raw_arguments), c.id) for c in s.tool_calls])
            for s in result.steps
        ],
        "usage": [s.usage for s in result.steps],
        "read": [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"],
        "answer": result.answer,
        "error": result.error,
    }


def expected_stop(record: dict[str, Any]) -> Stop:
    if record["error"] is None:
        return Stop.ANSWERED
    return Stop.MAX_STEPS if "request_limit" in record["error"] else Stop.MODEL_ERROR


@settings(max_examples=40, deadline=None)
@given(scripts())
def test_an_imported_pydantic_ai_run_is_its_own_record(script: Any) -> None:
    from pydantic_ai import capture_run_messages
    from pydantic_ai.usage import UsageLimits

    replies, limit = script
    limits = None if limit is None else UsageLimits(request_limit=limit)
    with TemporaryDirectory() as folder, capture_run_messages() as messages:
        run = pydantic_ai_run(Path(folder) / "spans.json", replies, usage_limits=limits)
        expected = peer_record(run, messages)
        from_spans = load_trace(run.path)
        assert imported_record(from_spans) == expected
        assert from_spans.stop is expected_stop(expected)
        if run.messages is not None:  # a run that ended well: its own messages JSON too
            path = Path(folder) / "messages.json"
            path.write_bytes(run.messages)
            from_messages = load_trace(path)
            assert imported_record(from_messages) == expected
            assert from_messages.stop is Stop.ANSWERED


@st.composite
def agents_scripts(draw: st.DrawFn) -> tuple[list[list[Any]], int]:
    """Replies for openai-agents: turns of optional text and calls (``BOOM`` fails, and the
    model is told so), then a text answer; and a max_turns that may cut the run short."""
    replies: list[list[Any]] = []
    for turn in range(draw(st.integers(0, 3))):
        parts: list[Any] = []
        if draw(st.booleans()):
            parts.append(f"Turn {turn}.")
        for k in range(draw(st.integers(1, 2))):
            isin = draw(st.sampled_from(("SE0000108656", "BOOM")))
            parts.append(("price", {"isin": isin}, f"call_{turn}_{k}"))
        replies.append(parts)
    replies.append([draw(st.sampled_from(["It is 118.4.", "Not listed."]))])
    return replies, draw(st.integers(1, 5))


def agents_record(run: Any) -> dict[str, Any]:
    """What openai-agents itself records: its items (a run cut short: its error's run data),
    each model call's usage (its raw responses), its output or exception."""
    from agents.exceptions import MaxTurnsExceeded

    if isinstance(run.raised, MaxTurnsExceeded):
        data = run.raised.run_data
        items = [i.to_input_item() for i in data.new_items]
        responses = data.raw_responses
    else:
        items = list(run.items[1:])  # the user's prompt first
        responses = run.responses
    said = [  # the results a later model call was sent
        (i["call_id"], str(i["output"]))
        for n, i in enumerate(items)
        if i.get("type") == "function_call_output"
        and any(j.get("type") == "function_call" or j.get("role") == "assistant"
                for j in items[n + 1 :])
    ]  # fmt: skip
    return {
        "calls": [
            (
                "".join(c.text for o in r.output if o.type == "message" for c in o.content)
                or None,
                [
                    (o.name, json.loads(o.arguments), o.call_id)
                    for o in r.output
                    if o.type == "function_call"
                ],
            )
            for r in responses
        ],
        "usage": [Usage(r.usage.input_tokens, r.usage.output_tokens) for r in responses],
        "read": said,
        "answer": run.output,
        "error": None if run.raised is None else f"Max turns exceeded: max_turns={run.max_turns}",
    }


@settings(max_examples=30, deadline=None)
@given(agents_scripts())
def test_an_imported_openai_agents_run_is_its_own_record(script: Any) -> None:
    pytest.importorskip("agents", reason="openai-agents (the dev extra has it)")
    from tests.peer_runs import openai_agents_run

    replies, turns = script
    with TemporaryDirectory() as folder:
        run = openai_agents_run(Path(folder) / "export.json", replies, max_turns=turns)
        expected = agents_record(run)
        result = load_trace(run.path)
        assert imported_record(result) == expected
        assert result.stop is (Stop.ANSWERED if run.raised is None else Stop.MAX_STEPS)
