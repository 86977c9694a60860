"""Holding calls for a person, over random runs (tests/strategies.py): random tools marked
``needs_approval``, random decisions (approve, edit, deny, an approve that raises or returns
nonsense, a person who walks away, an interrupt while deciding), given by ``approve=`` or to a
stepped session, under random ceilings. No call that needs approval ever runs without one, and
nothing runs after a stop."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetloop import (
    Completion,
    PendingCall,
    Result,
    Stop,
    ToolCall,
    Usage,
    load_trace,
    resume,
    run,
    start,
    tool,
)
from budgetloop._engine._types import to_pico
from budgetloop._tools._dispatch import ABANDONED
from tests.conftest import PRICE
from tests.strategies import PROMPT, TOOL_NAMES, Built, Scenario, build, scenarios, tools_ran

DECISIONS = ("approve", "edit", "deny", "raise", "nonsense", "walk away", "interrupt")


class Walked(Exception):
    """The person left: the stepped session is left holding its batch."""


def decide(kind: str, call: PendingCall) -> Any:
    """What ``approve`` returns for ``kind``."""
    if kind == "approve":
        return True
    if kind == "edit":
        return {"q": f"edited-{call.id}", "n": 1}
    if kind == "deny":
        return "no"
    if kind == "raise":
        raise RuntimeError("the approval broke")
    if kind == "interrupt":
        raise KeyboardInterrupt
    return None  # "nonsense" (and "walk away", which approve= cannot do): denies the call


def drive(built: Built, marked: frozenset[str], kinds: list[str], stepped: bool) -> Result:
    """Run the scenario with ``marked`` tools needing approval, each decision the next of
    ``kinds`` (cycled), by ``approve=`` or by deciding a stepped session's pending calls."""
    for t in built.tools:
        t.needs_approval = t.name in marked  # a plain attribute of the tool object
    turn = iter(range(10**6))

    def next_kind() -> str:
        return kinds[next(turn) % len(kinds)]

    def approve(call: PendingCall) -> Any:
        return decide(next_kind(), call)

    options = dict(built.kwargs)
    if not stepped:
        options["approve"] = approve
    session = start(built.model, PROMPT, **options)
    try:
        while not session.done:
            session.run()
            for call in session.pending:
                kind = next_kind()
                if kind in ("walk away", "interrupt"):
                    raise Walked
                if kind == "deny":
                    session.deny(call.id, "no")
                elif kind == "edit":
                    session.approve(call.id, {"q": f"edited-{call.id}", "n": 1})
                else:
                    session.approve(call.id)
    except (KeyboardInterrupt, Walked):
        pass
    return session.result


def starts(built: Built) -> Counter[tuple[str, str, int]]:
    return Counter((e[1], e[2], e[3]) for e in built.log if e[0] == "tool")


@given(
    scenarios(),
    st.frozensets(st.sampled_from(TOOL_NAMES)),
    st.lists(st.sampled_from(DECISIONS), min_size=1, max_size=6),
    st.booleans(),
)
def test_no_call_that_needs_approval_runs_without_one_and_nothing_runs_after_a_stop(
    s: Scenario, marked: frozenset[str], kinds: list[str], stepped: bool
) -> None:
    built = build(s)
    result = drive(built, marked, kinds, stepped)
    ran_with_approval: Counter[tuple[str, str, int]] = Counter()
    ran: Counter[tuple[str, str, int]] = Counter()
    maybe: Counter[tuple[str, str, int]] = Counter()
    for step in result.steps:
        for r in step.tool_calls:
            if r.approval is not None:
                assert r.name in marked  # only a marked tool's calls are decided
            if r.status == "denied":
                assert r.approval == "denied"
                continue
            if r.status == "skipped" or r.arguments is None:
                continue
            key = (r.name, str(r.arguments["q"]), step.index)
            if r.error == ABANDONED:
                maybe[key] += 1
                continue
            ran[key] += 1
            if r.approval in ("approved", "edited"):
                ran_with_approval[key] += 1
    started = starts(built)
    for key, count in started.items():
        if key[0] in marked:  # a marked tool ran only for a call a person let run
            assert count <= ran_with_approval[key] + maybe[key]
    assert not (started - ran - maybe)  # nothing ran that the trace does not say ran
    # every step but the last (and a held batch's) ran its whole batch, nothing after the stop
    recorded = {step.index for step in result.steps}
    assert all(k[2] in recorded for k in started)
    if result.stop is not None:
        assert result.stop in set(Stop)
    budget = s.budget
    if budget.max_tool_calls is not None:  # a call the check refused never ran: not counted
        assert tools_ran(result) <= budget.max_tool_calls
    if budget.max_steps is not None:
        assert built.model.calls <= budget.max_steps


# -- held runs resumed from their trace, under any interleaving --------------------------------

HELD_TURNS = 3


def _held_model(messages: list[Any], tools: list[dict[str, Any]]) -> Completion:
    """Turn i (the assistant messages so far) asks for one small and one large transfer; then
    it answers."""
    i = sum(1 for m in messages if m.role == "assistant")
    usage = Usage(input_tokens=100 + 7 * len(messages), output_tokens=11)
    if i >= HELD_TURNS:
        return Completion(text="done", usage=usage)
    calls = [ToolCall("transfer", {"to": "a", "amount": 5}, f"s{i}"),
             ToolCall("transfer", {"to": "b", "amount": 5000}, f"b{i}")]  # fmt: skip
    return Completion(text=f"turn {i}", tool_calls=calls, usage=usage)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=st.lists(st.sampled_from(["approve", "deny", "refused", "killed"]), max_size=6))
def test_held_runs_resumed_in_any_order_run_each_batch_once_as_decided(
    actions: list[str], tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("held") / "run.jsonl"
    ran: list[str] = []
    approved: set[str] = set()

    @tool(needs_approval=lambda args: args["amount"] > 1000)
    def transfer(to: str, amount: float) -> str:
        """Send money."""
        ran.append(f"{to}{amount:g}")
        return "sent"

    options: dict[str, Any] = {"tools": [transfer], "price": PRICE, "approve": "hold"}
    result = run(_held_model, "pay", trace_path=path, **options)
    for action in actions:
        loaded = load_trace(path)
        if loaded.held is None:  # answered, or taken by a resume that was killed
            with pytest.raises(ValueError, match=r"taken at|ended held"):
                resume(path, _held_model, decisions={"b0": True}, **options)
            continue
        big = loaded.pending[0].id
        if action == "refused":  # no decision: refused before the take, nothing changes
            with pytest.raises(ValueError, match="a decision for every call waiting"):
                resume(path, _held_model, decisions={}, **options)
            continue
        session = resume(path, _held_model, decisions={big: action != "deny"}, **options)
        if action == "killed":  # the process died after the take, before the batch ran
            continue
        if action == "approve":
            approved.add(big)
        result = session.run()
    final = load_trace(path)
    assert ran.count("b5000") == len(approved)  # a large one runs only when approved, once
    steps = final.steps
    assert len({s.index for s in steps}) == len(steps)  # no batch recorded twice
    runs = [c for s in steps for c in s.tool_calls if c.status == "ok"]
    assert len(runs) == len(ran)  # what ran is what the trace says ran
    assert all(c.approval == "approved" for c in runs if c.id.startswith("b"))  # none unasked
    assert sorted(c.id for c in runs if c.id.startswith("b")) == sorted(approved)
    pico = sum(to_pico(s.cost_usd or 0.0) for s in steps) + to_pico(final.held_usd)
    assert to_pico(final.cost_usd or 0.0) == pico  # spend is what was billed, exactly
    assert to_pico(result.cost_usd or 0.0) <= pico
