"""Replays of runs imported from other frameworks, each made here by the real pydantic-ai or
openai-agents (``tests/peer_runs.py``): a replay returns a Result for every run ``load_trace``
returns, ends where the source ended it, answers with the answer the source took from a tool
call, and gives a failed tool back as the words the model read.

LangGraph is not among the dev extras: its recursion limit ends a run as the limits below do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Result, Stop, first_divergence, load_trace, replay
from tests.peer_runs import PRICE, openai_agents_run, pydantic_ai_run

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim (the dev extra has it)")
pytest.importorskip("agents", reason="openai-agents (the dev extra has it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="the dev extra has it")

LOOKUP = ("price", {"isin": "SE0000108656"}, "call_1")
NO_RESULT = (
    "LookupError: price: the recorded run has no result for this call (it was not run there), "
    "so a replay cannot say what the tool would have returned"
)


def calls(result: Result) -> list[tuple[str, str, str | None]]:
    """Each call of the run: its name, status, and the result or the error it shows."""
    return [
        (c.name, c.status, c.result if c.status == "ok" else c.error)
        for s in result.steps
        for c in s.tool_calls
    ]


def replayed_calls(result: Result) -> list[tuple[str, str, str | None]]:
    """The calls a replay of ``result`` gives back: each as recorded, but a call the recording
    did not run, which has no recorded result to give."""
    return [
        (name, "error", NO_RESULT) if status == "skipped" else (name, status, said)
        for name, status, said in calls(result)
    ]


def ending(result: Result) -> tuple[Any, ...]:
    return (result.stop, result.answer, result.error, result.detail, len(result.steps))


# -- a run its source ended right after a turn that asked for tools -------------------------------


def test_a_run_pydantic_ai_ended_after_a_turn_that_asked_for_tools_replays(
    tmp_path: Path,
) -> None:
    from pydantic_ai.usage import UsageLimits

    retry = ("price", {"isin": "XX"}, "call_1")
    peers = {
        "request_limit": pydantic_ai_run(
            tmp_path / "requests.json",
            [["Looking it up.", retry], ["never"]],
            usage_limits=UsageLimits(request_limit=1),
        ),
        "tool_calls_limit": pydantic_ai_run(
            tmp_path / "tools.json",
            [[LOOKUP, ("price", {"isin": "SE0000108656"}, "call_2")], ["never"]],
            usage_limits=UsageLimits(tool_calls_limit=1),
        ),
        "retries": pydantic_ai_run(
            tmp_path / "retries.json", [[("price", {"isin": "XX"}, f"call_{n}")] for n in range(7)]
        ),
        "raised": pydantic_ai_run(
            tmp_path / "raised.json",
            [["Looking it up.", LOOKUP], [("price", {"isin": "BOOM"}, "call_2")]],
        ),
    }
    stops = {
        "request_limit": (Stop.MAX_STEPS, 1),
        "tool_calls_limit": (Stop.MAX_TOOL_CALLS, 1),
        "retries": (Stop.MODEL_ERROR, 6),
        "raised": (Stop.MODEL_ERROR, 2),
    }
    for name, peer in peers.items():
        assert peer.raised is not None, name
        result = load_trace(peer.path)
        assert result.messages[-1].role == "assistant"  # no model read the last turn's results
        again = replay(result)
        assert (again.stop, len(again.steps)) == stops[name], name
        assert ending(again) == ending(result), name
        assert calls(again) == replayed_calls(result), name
        # every step before the last is the recorded one
        assert first_divergence(result, again) in (None, len(result.steps) - 1), name


def test_a_run_openai_agents_max_turns_ended_replays_as_it_ran(tmp_path: Path) -> None:
    replies = [[LOOKUP], [("price", {"isin": "SE0000108656"}, "call_2")], ["never"]]
    peer = openai_agents_run(tmp_path / "export.json", replies, max_turns=2)
    assert type(peer.raised).__name__ == "MaxTurnsExceeded"
    result = load_trace(peer.path)
    again = replay(result)
    assert ending(again) == (
        Stop.MAX_STEPS,
        None,
        "Max turns exceeded: max_turns=2",
        "the source's max_turns stopped the run: Max turns exceeded: max_turns=2",
        2,
    )
    assert calls(again) == [("price", "ok", str(PRICE)), ("price", "ok", str(PRICE))]
    assert first_divergence(result, again) is None
    # a budget that stops it first is the replay's own stop
    tighter = replay(result, budget=Budget(max_steps=1))
    assert (tighter.stop, len(tighter.steps)) == (Stop.MAX_STEPS, 1)
    assert tighter.detail != result.detail
    # a looser one does not take it past where its source ended it
    looser = replay(result, budget=Budget(max_steps=10))
    assert ending(looser) == ending(result)


# -- a failed tool: the words the model read -------------------------------------------------------


def test_a_replayed_tool_failure_is_what_the_model_read(tmp_path: Path) -> None:
    pydantic = pydantic_ai_run(
        tmp_path / "spans.json",
        [[("price", {"isin": "XX"}, "call_0")], [LOOKUP], ["It is 118.4."]],
    )
    agents = openai_agents_run(
        tmp_path / "export.json", [[("price", {"isin": "BOOM"}, "call_1")], ["Not listed."]]
    )
    for peer in (pydantic, agents):
        result = load_trace(peer.path)
        failed = next(c for c in result.tool_calls if c.status == "error")
        again = replay(result)
        assert calls(again) == calls(result)
        assert first_divergence(result, again) is None
        # the replay's model is sent each result as the import says a model reads it
        read = [m.content for m in again.messages if m.role == "tool"]
        assert read == [c.content for c in result.tool_calls]
        assert f"error: {failed.error}" in read
    result = load_trace(pydantic.path)
    assert calls(replay(result))[0] == ("price", "error", "XX is not in the price list")


# -- pydantic-ai's structured output: the final_result call is the answer -----------------------


def test_a_pydantic_ai_structured_answer_replays_to_that_answer(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Quote(BaseModel):
        isin: str
        price: float

    answer = ("final_result", {"isin": "SE0000108656", "price": 118.4}, "call_2")
    peer = pydantic_ai_run(tmp_path / "spans.json", [[LOOKUP], [answer]], output_type=Quote)
    result = load_trace(peer.path)
    assert result.stop is Stop.ANSWERED
    for again in (replay(result), replay(result, budget=Budget(max_steps=5))):
        assert (again.stop, again.answer, len(again.steps)) == (Stop.ANSWERED, result.answer, 2)
        assert again.answer is not None
        assert json.loads(again.answer) == {"isin": "SE0000108656", "price": 118.4}
        assert (again.error, again.detail) == (None, None)
        assert calls(again) == calls(result)
        assert first_divergence(result, again) is None


def test_a_run_an_openai_agents_guardrail_ended_replays_as_it_ended(tmp_path: Path) -> None:
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail

    @input_guardrail
    def on_topic(context: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="off topic", tripwire_triggered=True)

    @output_guardrail
    def no_quotes(context: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="a quote", tripwire_triggered=True)

    before = openai_agents_run(
        tmp_path / "in.json", [["It is 118.4."]], agent_options={"input_guardrails": [on_topic]}
    )
    after = openai_agents_run(
        tmp_path / "out.json", [["It is 118.4."]], agent_options={"output_guardrails": [no_quotes]}
    )
    for peer, steps in ((before, 0), (after, 1)):
        result = load_trace(peer.path)
        again = replay(result)
        assert ending(again) == ending(result)
        assert (again.stop, len(again.steps), again.answered) == (Stop.MODEL_ERROR, steps, False)
        assert first_divergence(result, again) is None
