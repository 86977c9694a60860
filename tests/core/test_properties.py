"""Every promise of the loop, over random runs: random scripted models (answers, tool calls, good
and malformed arguments, models that raise or return junk), random tools (ok, raising, slow on a
fake clock) and random budgets. See tests/strategies.py for the generators and the profiles."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Result,
    Stop,
    ToolCall,
    Usage,
    arun,
    estimate_tokens,
    load_trace,
    run,
    start,
)
from budgetloop._engine._turn import received
from budgetloop._engine._types import to_pico
from budgetloop._schema._check import ArgumentError, check_arguments
from budgetloop._tools._dispatch import ABANDONED, NOT_STARTED
from budgetloop.ledger import MemoryLedger
from tests.strategies import (
    PROMPT,
    Built,
    Fitting,
    Scenario,
    build,
    call_ids,
    fittings,
    scenarios,
    tools_ran,
)

CEILING_STOPS = {
    Stop.MAX_STEPS,
    Stop.MAX_SECONDS,
    Stop.MAX_COST_USD,
    Stop.MAX_TOOL_CALLS,
    Stop.REPEATED,
}


def go(s: Scenario) -> tuple[Built, Result]:
    built = build(s)
    return built, run(built.model, PROMPT, **built.kwargs)


def tool_starts(built: Built) -> Counter[tuple[str, str, int]]:
    return Counter(
        (name, q, step) for event, name, q, step in (e for e in built.log if e[0] == "tool")
    )


def checked_q(built: Built, name: Any, raw: Any) -> str | None:
    """The ``q`` a call would run with, or None if its arguments never reach the tool."""
    table = {t.name: t for t in built.tools}
    if name not in table:
        return None
    try:
        args, _ = check_arguments(table[name], raw)
    except ArgumentError:
        return None
    return str(args["q"])


# -- run() never raises, and every ceiling holds ------------------------------------------------


@given(scenarios())
def test_run_never_raises_and_keeps_every_ceiling(s: Scenario) -> None:
    built, result = go(s)
    budget = s.budget
    assert result.stop is not None
    assert built.model.calls == len(result.steps)
    if budget.max_steps is not None:
        assert built.model.calls <= budget.max_steps
    executed = len(result.tool_calls)
    started = sum(tool_starts(built).values())
    assert started <= executed
    if budget.max_tool_calls is not None:  # a call the check refused never ran: not counted
        assert started <= tools_ran(result) <= budget.max_tool_calls
    if budget.max_cost_usd is not None and s.counted:
        for step in result.steps:
            if step.usage is not None:  # counted usage never exceeds what was projected
                assert step.usage.input_tokens <= step.projection.input_tokens
                assert step.usage.output_tokens <= (step.projection.output_tokens or 0)
        assert result.cost_usd <= budget.max_cost_usd
    assert result.cost_usd == pytest.approx(sum(st.cost_usd for st in result.steps), abs=1e-12)


@given(scenarios(tiered=True))
def test_the_cost_ceiling_holds_with_long_context_tiers(s: Scenario) -> None:
    """Never above the ceiling while usage stays within the projection, with a price whose
    tiers the context crosses mid-run (each call billed at the tier of its own input)."""
    _built, result = go(s)
    assert result.stop is not None
    price = s.price
    for step in result.steps:
        if step.usage is not None and price is not None and step.cost_usd is not None:
            assert step.cost_usd == price.usage_cost(step.usage)
    if s.budget.max_cost_usd is not None and s.counted:
        for step in result.steps:
            if step.usage is not None:
                assert step.usage.input_tokens <= step.projection.input_tokens
                assert step.usage.output_tokens <= (step.projection.output_tokens or 0)
                assert step.cost_usd <= (step.projection.cost_usd or 0)
        assert result.cost_usd is not None
        assert result.cost_usd <= s.budget.max_cost_usd


# -- nothing runs after the stop decision -------------------------------------------------------


@given(scenarios())
def test_no_tool_runs_after_the_stop_decision(s: Scenario) -> None:
    built, result = go(s)
    steps = result.steps
    # Each tool start is logged with the step whose batch it belongs to; what ran is exactly
    # what the records say ran (an abandoned call may have started before the deadline or not).
    expected: Counter[tuple[str, str, int]] = Counter()
    maybe: Counter[tuple[str, str, int]] = Counter()
    for step in steps:
        for r in step.tool_calls:
            if r.status == "skipped":
                continue
            if r.error == ABANDONED:
                q = checked_q(built, r.name, r.raw_arguments)
                if q is not None:
                    maybe[(r.name, q, step.index)] += 1
            elif r.arguments is not None:
                expected[(r.name, str(r.arguments["q"]), step.index)] += 1
    started = tool_starts(built)
    assert not (expected - started)  # every call recorded as run did run
    assert not (started - expected - maybe)  # nothing else ran
    # Every step but the last ran its whole batch: no skipped, no abandoned call.
    for step in steps[:-1]:
        assert all(r.status != "skipped" and r.error != ABANDONED for r in step.tool_calls)
        assert step.error is None
    if not steps:
        assert result.stop in (Stop.MAX_STEPS, Stop.MAX_COST_USD)
        assert started == Counter()
        return
    last = steps[-1]
    statuses = {r.status for r in last.tool_calls}
    if last.error is not None:  # the model failed: no calls, nothing ran in that step
        assert last.tool_calls == ()
        assert result.stop in (Stop.MODEL_ERROR, Stop.MAX_SECONDS)
        assert result.error == last.error
    elif not last.tool_calls:
        assert result.stop == Stop.ANSWERED
        assert result.answer == (last.text if last.text is not None else "")
    elif statuses == {"skipped"} and last.tool_calls[0].error != NOT_STARTED:
        # the stop was decided between the model call and the batch: none of it ran
        assert result.stop in CEILING_STOPS
        assert all(r.error == f"the run stopped ({result.detail})" for r in last.tool_calls)
        assert not [k for k in started if k[2] == last.index]
    else:
        # the batch ran (a call the deadline passed before is skipped: it never started);
        # the run stopped at the deadline or before the next call could fit
        late = [r for r in last.tool_calls if r.status == "skipped"]
        assert all(r.error == NOT_STARTED for r in late)
        assert not late or result.stop is Stop.MAX_SECONDS
        assert result.stop in (Stop.MAX_SECONDS, Stop.MAX_COST_USD)
        if any(r.error == ABANDONED for r in last.tool_calls):
            assert result.detail == "a tool was still running at the deadline"
    if result.stop is not Stop.ANSWERED:
        assert result.answer is None


# -- results come back in request order, ids paired -----------------------------------------------


@given(scenarios())
def test_results_are_in_request_order_and_ids_pair_up(s: Scenario) -> None:
    _, result = go(s)
    messages = list(result.messages)
    batches = [st for st in result.steps if st.tool_calls]
    turns = [(i, m) for i, m in enumerate(messages) if m.role == "assistant"]
    assert len(turns) == len([st for st in result.steps if st.error is None])
    paired = 0
    for i, assistant in turns:
        ids = [c.id for c in assistant.tool_calls]
        assert len(set(ids)) == len(ids)
        assert all(isinstance(x, str) and x for x in ids)
        following = messages[i + 1 : i + 1 + len(ids)]
        assert [m.role for m in following] == ["tool"] * len(ids)
        assert [m.tool_call_id for m in following] == ids
        if ids:
            step = batches[paired]
            paired += 1
            assert [r.id for r in step.tool_calls] == ids
            assert [r.name for r in step.tool_calls] == [c.name for c in assistant.tool_calls]
            assert [m.content for m in following] == [r.content for r in step.tool_calls]
            spec = s.turns[min(step.index, len(s.turns) - 1)]
            assert [c.arguments for c in assistant.tool_calls] == [c.arguments for c in spec.calls]
            for given_id, final in zip((c.id for c in spec.calls), ids, strict=True):
                if isinstance(given_id, str) and given_id:
                    assert final.startswith(given_id)
                else:
                    assert final.startswith(f"call_{step.index}_")
    assert paired == len(batches)


@given(st.integers(0, 10).flatmap(call_ids), st.integers(0, 2))
def test_ids_made_unique_never_collide(given_ids: list[Any], index: int) -> None:
    calls = [ToolCall("alpha", {}, i) for i in given_ids]
    ids = [c.id for c in received(calls, index)]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(x, str) and x for x in ids)
    assert [c.request.id for c in received(calls, index)] == ids  # what the model reads back
    for i, (given_id, final) in enumerate(zip(given_ids, ids, strict=True)):
        if not (isinstance(given_id, str) and given_id):
            assert final.startswith(f"call_{index}_{i}")
        elif given_id in given_ids[:i]:  # a repeat: the given id stays its first call's
            assert final.startswith(f"{given_id}_")
            assert final not in given_ids
        else:  # a given id is kept where it first appears
            assert final == given_id


# -- the trace is plain data, and the same whichever way the run is driven ----------------------


@given(scenarios())
def test_a_result_round_trips_through_its_dict_and_json(s: Scenario) -> None:
    _, result = go(s)
    data = result.to_dict()
    assert Result.from_dict(data) == result
    again = Result.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data


@given(scenarios(deterministic=True))
def test_stepping_and_running_give_the_same_trace(s: Scenario) -> None:
    ran, result = go(s)
    stepped = build(s)
    session = start(stepped.model, PROMPT, **stepped.kwargs)
    taken = 0
    while session.step() is not None:
        taken += 1
    assert session.done
    assert taken == len(result.steps)
    assert session.step() is None
    assert replace(session.result, run_id=result.run_id).to_dict() == result.to_dict()
    assert Counter(stepped.log) == Counter(ran.log)  # calls in one batch start in any order
    assert stepped.clock.now == ran.clock.now


@given(scenarios(deterministic=True))
def test_the_async_driver_gives_the_same_trace(s: Scenario) -> None:
    ran, result = go(s)
    awaited = build(s)
    async_result = asyncio.run(arun(awaited.model, PROMPT, **awaited.kwargs))
    assert replace(async_result, run_id=result.run_id).to_dict() == result.to_dict()
    assert Counter(awaited.log) == Counter(ran.log)


# -- an interrupt at any point of a turn loses nothing --------------------------------------------


class Interrupting:
    """Every point where user code runs in a turn (the model, each tool, ``redact``,
    ``count_tokens`` and the clock), counted; the ``at``-th raises ``KeyboardInterrupt``."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.points = 0
        self.armed = False  # counting starts with the first turn
        self.fired = False

    def point(self) -> None:
        self.points += self.armed
        if self.points == self.at and not self.fired:
            self.fired = True
            raise KeyboardInterrupt


@given(scenarios(deterministic=True), st.integers(1, 80))
def test_an_interrupt_at_any_point_of_a_turn_loses_nothing(s: Scenario, at: int) -> None:
    hit = Interrupting(at)
    built = build(s, hit.point)
    answered: list[str] = []  # the requests of calls that returned

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        reply = built.model(messages, tools)
        answered.append(repr(messages))
        return reply

    def redact(text: str) -> str:
        hit.point()
        return text

    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        hit.point()
        return 10 * len(messages)

    def clock() -> float:
        hit.point()
        return built.clock.now

    ledger = MemoryLedger(limit_usd=1000.0)  # it needs to know each call's worst case
    options = {**built.kwargs, "redact": redact, "count_tokens": count, "clock": clock}
    if s.price is not None and s.max_output_tokens is not None:
        options["ledger"] = ledger
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        session = start(complete, PROMPT, **options, trace_path=path)
        hit.armed = True
        while not session.done:
            try:
                session.step()
            except KeyboardInterrupt:
                assert hit.fired
        result = session.result
        saved = load_trace(path)
    # the result, its steps, the trace file and the ledger say the same spend
    assert result.cost_usd == pytest.approx(sum(st.cost_usd for st in result.steps), abs=1e-12)
    if "ledger" in options:
        assert ledger.spent_usd() == pytest.approx(result.cost_usd, abs=1e-12)
    assert saved.to_dict() == result.to_dict()
    # every model call is a step, and no request that was answered is sent again
    assert built.model.calls + hit.fired >= len(result.steps) >= built.model.calls
    assert len(set(answered)) == len(answered)


FIT_PRICE = Price(3.0, 15.0)
FIT_MOST = 1000


@given(fittings())
def test_with_min_output_tokens_spend_never_passes_the_ceiling_and_a_stop_is_only_below_it(
    f: Fitting,
) -> None:
    """Under any growth of the context and any replies, every request asks for what its turn
    was projected at (fitted, at least ``least``); the spend never passes the ceiling; and
    the run stops for cost only when not even ``least`` output tokens fit the next turn."""
    asked: list[int] = []

    def grow(n: int) -> str:
        """Grow the context."""
        return "word " * n

    def complete(
        messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> Completion:
        i = len(asked)
        asked.append(kwargs["max_output_tokens"])
        usage = Usage(estimate_tokens(messages, tools), min(f.outputs[i], asked[-1]))
        if i < len(f.growth):
            return Completion(tool_calls=[ToolCall("grow", {"n": f.growth[i]})], usage=usage)
        return Completion(text="done", usage=usage)

    budget = Budget(max_cost_usd=f.ceiling_usd, max_steps=20)
    session = start(complete, "go", tools=[grow], budget=budget, price=FIT_PRICE,
                    max_output_tokens=FIT_MOST, min_output_tokens=f.least)  # fmt: skip
    result = session.run()
    limit = to_pico(f.ceiling_usd)
    spent = to_pico(result.cost_usd or 0.0)
    assert spent <= limit
    assert result.stop in (Stop.ANSWERED, Stop.MAX_COST_USD)
    for step, figure in zip(result.steps, asked, strict=True):
        p = step.projection
        assert p is not None
        assert figure == p.output_tokens
        assert f.least <= figure <= FIT_MOST
        assert (p.fitted_from is None) == (figure == FIT_MOST)
        assert p.fits
    if result.stop is Stop.MAX_COST_USD:  # not even the least fits the next turn
        tokens = session.projection.input_tokens
        assert spent + FIT_PRICE.worst_pico(tokens, f.least) > limit
