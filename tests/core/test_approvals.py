"""Holding a tool call for a person: ``needs_approval``, ``approve=``, a stepped session's
``pending``/``approve``/``deny``, and each decision in the trace."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    PendingCall,
    Price,
    Result,
    ScriptedModel,
    Step,
    Tool,
    ToolCall,
    aresume,
    arun,
    astart,
    budget_report,
    load_trace,
    replay,
    resume,
    run,
    run_many,
    start,
    tool,
)
from budgetloop import breakpoints as bp
from tests.conftest import PRICE, FakeClock

SECRET = "sk-live-0123456789"


def message(kind: type[Exception], call: Callable[[], Any]) -> str:
    """What ``call()`` raised, of ``kind``, in words."""
    with pytest.raises(kind) as caught:
        call()
    return str(caught.value)


def payments(log: list[str], clock: FakeClock | None = None) -> list[Any]:
    """A ``transfer`` that needs approval above 1,000, and a ``balance`` that never does; each
    appends what it ran to ``log``."""

    @tool(needs_approval=lambda args: args["amount"] > 1000)
    def transfer(to: str, amount: float) -> str:
        """Send money.

        Args:
            to: the payee
            amount: dollars
        """
        log.append(f"transfer {to} {amount:g}")
        if clock is not None:
            clock.advance(1.0)
        return f"sent {amount:g} to {to}"

    @tool
    def balance() -> str:
        """The balance."""
        log.append("balance")
        return "12000"

    return [transfer, balance]


def pay(*calls: tuple[str, dict[str, Any], str], then: str = "done") -> list[Any]:
    return [Completion(text="paying", tool_calls=[ToolCall(n, a, i) for n, a, i in calls]), then]


def model(script: list[Any]) -> ScriptedModel:
    return ScriptedModel(script, price=PRICE, max_output_tokens=100)


THREE = pay(
    ("transfer", {"to": "ann", "amount": 50}, "c1"),
    ("transfer", {"to": "bob", "amount": 9000}, "c2"),
    ("transfer", {"to": "cy", "amount": "20000"}, "c3"),
)


# -- marking ------------------------------------------------------------------------------------


def test_needs_approval_is_a_plain_attribute_of_the_tool() -> None:
    def send(amount: float) -> str:
        """Send."""
        return "ok"

    assert tool(send).needs_approval is False
    assert tool(needs_approval=True)(send).needs_approval is True
    rule = tool(send, needs_approval=lambda a: a["amount"] > 5)
    assert callable(rule.needs_approval)
    assert rule.needs_approval({"amount": 6}) is True
    marked = tool(tool(send), needs_approval=True)
    assert marked.needs_approval is True
    assert tool(marked) is marked
    assert tool(marked, name="send2").needs_approval is True  # kept when another option changes

    class Remote(Tool):  # a tool built some other way (an MCP server's) keeps its kind
        pass

    remote = Remote(send)
    held_remote = tool(remote, needs_approval=True)
    assert type(held_remote) is Remote
    assert (held_remote.needs_approval, remote.needs_approval) == (True, False)
    assert message(TypeError, lambda: tool(send, needs_approval="yes")) == (
        "tool: needs_approval must be True, False or a function (arguments) -> bool, got str."
    )


# -- in code: approve= --------------------------------------------------------------------------


def test_approve_is_asked_after_the_check_and_before_any_call_of_the_batch_runs() -> None:
    log: list[str] = []
    asked: list[PendingCall] = []

    def approve(call: PendingCall) -> Any:
        asked.append(call)
        log.append(f"asked {call.id}")
        return {"c2": True, "c3": "over the limit"}[call.id]

    result = run(model(THREE), "pay", tools=payments(log), approve=approve,
                 budget=Budget(max_cost_usd=1.0))  # fmt: skip
    # every ask comes before any call of the batch runs; the calls of one batch may run on
    # different threads, so only their results (not the log) keep request order
    assert log[:2] == ["asked c2", "asked c3"]
    assert sorted(log[2:]) == ["transfer ann 50", "transfer bob 9000"]
    first = asked[0]
    assert (first.name, first.id, first.step) == ("transfer", "c2", 0)
    assert first.raw_arguments == {"to": "bob", "amount": 9000}
    assert asked[1].raw_arguments == {"to": "cy", "amount": "20000"}
    assert asked[1].arguments == {"to": "cy", "amount": 20000.0}  # the checked value
    assert first.tool_marked is True
    step0 = result.steps[0]
    assert first.spent_usd == step0.cost_usd
    assert first.projection is not None
    assert first.projection.spent_usd == step0.cost_usd
    assert first.projection.limit_usd == 1.0
    assert [(c.status, c.approval) for c in step0.tool_calls] == [
        ("ok", None),
        ("ok", "approved"),
        ("denied", "denied"),
    ]
    denied = step0.tool_calls[2]
    assert (denied.result, denied.error, denied.arguments) == (
        "over the limit",
        None,
        {"to": "cy", "amount": 20000.0},
    )
    assert denied.content == "denied: not run (reason: over the limit)"
    tool_messages = [m.content for m in result.messages if m.role == "tool"]
    assert tool_messages == [
        "sent 50 to ann",
        "sent 9000 to bob",
        "denied: not run (reason: over the limit)",
    ]
    assert (len(result.tool_calls), len(result.denied), result.answer) == (2, 1, "done")


def test_a_dict_runs_the_call_with_those_arguments_checked_like_the_models() -> None:
    log: list[str] = []
    answers = {"c2": {"to": "bob", "amount": "900"}, "c3": {"to": "cy", "amount": "lots"}}
    result = run(model(THREE), "pay", tools=payments(log),
                 approve=lambda call: answers[call.id])  # fmt: skip
    edited, misfit = result.steps[0].tool_calls[1:]
    assert sorted(log) == ["transfer ann 50", "transfer bob 900"]  # one batch: any order
    assert (edited.status, edited.approval) == ("ok", "edited")
    assert edited.raw_arguments == {"to": "bob", "amount": 9000}  # as the model wrote them
    assert edited.arguments == {"to": "bob", "amount": 900.0}  # as it ran
    assert edited.coerced == ("transfer.amount",)
    assert (misfit.status, misfit.approval) == ("error", "edited")
    assert misfit.error == (
        "the arguments a person gave in place of the model's do not fit: transfer.amount: "
        "expected number, got str"
    )
    assert misfit.arguments == {"to": "cy", "amount": "lots"}  # as given
    assert result.answered


def test_false_denies_without_a_reason_and_the_same_dict_approves() -> None:
    answers = {"c2": False, "c3": {"to": "cy", "amount": 20000.0}}
    result = run(model(THREE), "pay", tools=payments([]), approve=lambda c: answers[c.id])
    calls = result.steps[0].tool_calls
    assert [(c.status, c.approval) for c in calls[1:]] == [
        ("denied", "denied"),
        ("ok", "approved"),
    ]
    assert calls[1].content == "denied: not run"
    assert calls[1].result == ""


def test_an_approve_that_raises_denies_the_call_keeps_the_traceback_and_the_run_goes_on() -> None:
    def approve(call: PendingCall) -> Any:
        if call.id == "c2":
            raise RuntimeError("the approval service is down")
        return None  # not a decision

    log: list[str] = []
    result = run(model(THREE), "pay", tools=payments(log), approve=approve)
    raised, nonsense = result.steps[0].tool_calls[1:]
    assert log == ["transfer ann 50"]
    assert (raised.status, raised.result) == ("denied", "the approval failed (RuntimeError)")
    assert raised.error == "approve raised RuntimeError: the approval service is down"
    assert raised.traceback is not None
    assert raised.traceback.endswith("RuntimeError: the approval service is down\n")
    assert 'raise RuntimeError("the approval service is down")' in raised.traceback
    assert nonsense.error == (  # approve raised nothing: the trace says what it returned
        "approve: what it returns must be True, False, a str "
        "(deny, with the reason) or a dict (the arguments to run with), got None."
    )
    assert (nonsense.result, nonsense.traceback) == ("the approval failed (TypeError)", None)
    assert raised.content == "denied: not run (reason: the approval failed (RuntimeError))"
    assert result.answered


def test_a_call_whose_own_arguments_failed_the_check_is_never_offered() -> None:
    asked: list[str] = []
    script = pay(
        ("transfer", {"to": "ann", "amount": "lots"}, "c1"),
        ("transfer", '{"to": "bob", "amount": 5000', "c2"),  # not JSON
        ("transfer", {"to": "cy", "amount": 5000}, "c3"),
    )
    result = run(model(script), "pay", tools=payments([]),
                 approve=lambda c: asked.append(c.id) or True)  # fmt: skip
    assert asked == ["c3"]
    assert [(c.status, c.approval) for c in result.steps[0].tool_calls] == [
        ("error", None),
        ("error", None),
        ("ok", "approved"),
    ]


def test_an_async_approve_is_awaited_under_arun() -> None:
    async def approve(call: PendingCall) -> Any:
        await asyncio.sleep(0)
        return call.id == "c2" or "no"

    log: list[str] = []
    result = asyncio.run(arun(model(THREE), "pay", tools=payments(log), approve=approve))
    assert sorted(log) == ["transfer ann 50", "transfer bob 9000"]  # one batch: any order
    assert [c.approval for c in result.steps[0].tool_calls] == [None, "approved", "denied"]
    synced = run(model(THREE), "pay", tools=payments([]), approve=approve)  # on a loop of its own
    assert synced.format() == result.format()


# The model repeats an id where the id the loop makes for the repeat ("c1_2": "c1" at position 2)
# is one it gave already: the transfer to mallory, first, is the one a person denies.
COLLIDING = pay(
    ("transfer", {"to": "mallory", "amount": 90000}, "c1_2"),
    ("transfer", {"to": "ann", "amount": 5000}, "c1"),
    ("transfer", {"to": "bob", "amount": 5000}, "c1"),
)


def not_to_mallory(call: PendingCall) -> bool | str:
    return call.arguments["to"] != "mallory" or "not to mallory"


async def not_to_mallory_later(call: PendingCall) -> bool | str:
    await asyncio.sleep(0)
    return not_to_mallory(call)


def assert_mallory_denied(result: Result, log: list[str]) -> None:
    assert sorted(log) == ["transfer ann 5000", "transfer bob 5000"]  # one batch: any order
    calls = result.steps[0].tool_calls
    assert [(c.id, c.status, c.approval) for c in calls] == [
        ("c1_2", "denied", "denied"),
        ("c1", "ok", "approved"),
        ("c1_3", "ok", "approved"),
    ]
    assert calls[0].content == "denied: not run (reason: not to mallory)"
    read = [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"]
    assert read == [
        ("c1_2", "denied: not run (reason: not to mallory)"),
        ("c1", "sent 5000 to ann"),
        ("c1_3", "sent 5000 to bob"),
    ]  # each result under an id of its own, as the model's request (the assistant turn) says
    asked = next(m for m in result.messages if m.role == "assistant")
    assert [c.id for c in asked.tool_calls] == ["c1_2", "c1", "c1_3"]


def test_a_denied_call_never_runs_when_the_model_repeats_an_id_the_loop_would_make() -> None:
    log: list[str] = []
    result = run(model(COLLIDING), "pay", tools=payments(log), approve=not_to_mallory)
    assert_mallory_denied(result, log)

    log = []
    result = asyncio.run(
        arun(model(COLLIDING), "pay", tools=payments(log), approve=not_to_mallory_later)
    )
    assert_mallory_denied(result, log)

    log = []
    session = start(model(COLLIDING), "pay", tools=payments(log))
    session.step()
    assert [(c.id, c.arguments["to"]) for c in session.pending] == [
        ("c1_2", "mallory"),
        ("c1", "ann"),
        ("c1_3", "bob"),
    ]
    session.deny("c1_2", "not to mallory")
    assert [c.id for c in session.pending] == ["c1", "c1_3"]  # the denial decided one call
    session.approve("c1")
    session.approve("c1_3")
    assert session.run().answered
    assert_mallory_denied(session.result, log)


def test_an_async_approve_whose_own_await_is_cancelled_denies_the_call_and_the_run_goes_on() -> (
    None
):
    async def approve(call: PendingCall) -> Any:
        if call.id == "c2":
            lookup = asyncio.ensure_future(asyncio.sleep(30))  # a wait of approve's own ...
            lookup.cancel()  # ... that something else cancels
            await lookup
        return True

    log: list[str] = []
    result = asyncio.run(arun(model(THREE), "pay", tools=payments(log), approve=approve))
    assert sorted(log) == ["transfer ann 50", "transfer cy 20000"]  # one batch: any order
    cancelled = result.steps[0].tool_calls[1]
    assert (cancelled.id, cancelled.status, cancelled.approval) == ("c2", "denied", "denied")
    assert cancelled.error == "approve raised CancelledError"
    assert cancelled.result == "the approval failed (CancelledError)"
    assert cancelled.traceback is not None
    assert "await lookup" in cancelled.traceback
    assert (result.stop, result.answer) == ("answered", "done")


def test_cancelling_the_runs_own_task_while_approve_waits_cancels_the_run() -> None:
    waiting = asyncio.Event()
    stopped: list[str] = []

    async def approve(call: PendingCall) -> Any:
        waiting.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.append(call.id)  # approve's own await is cancelled with the run
            raise
        return True

    async def main() -> Any:
        session = astart(model(THREE), "pay", tools=payments(log), approve=approve)
        task = asyncio.ensure_future(session.run())
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return session

    log: list[str] = []
    session = asyncio.run(main())
    assert stopped == ["c2"]
    assert log == []  # no call of the batch ran
    (step,) = session.steps
    assert [(c.status, c.error) for c in step.tool_calls] == [
        ("skipped", "the turn broke (CancelledError) before its batch started")
    ] * 3
    assert step.cost_usd > 0  # the model call that asked for the batch is billed


# -- the budget --------------------------------------------------------------------------------


def test_a_denied_call_is_not_counted_against_max_tool_calls_and_an_edit_counts_once() -> None:
    script = [
        Completion(tool_calls=[ToolCall("transfer", {"to": "a", "amount": 5000}, "c1"),
                               ToolCall("transfer", {"to": "b", "amount": 5000}, "c2")]),
        Completion(tool_calls=[ToolCall("balance", {}, "c3"), ToolCall("balance", {}, "c4")]),
        "done",
    ]  # fmt: skip
    decisions = {"c1": {"to": "a", "amount": 10}, "c2": "no"}
    log: list[str] = []
    result = run(model(script), "pay", tools=payments(log), approve=lambda c: decisions[c.id],
                 budget=Budget(max_tool_calls=3))  # fmt: skip
    assert result.stop == "answered"
    assert log == ["transfer a 10", "balance", "balance"]
    assert len(result.tool_calls) == 3
    everything = run(model(script), "pay", tools=payments([]), approve=lambda c: True,
                     budget=Budget(max_tool_calls=3))  # fmt: skip
    assert everything.stop == "max_tool_calls"
    assert everything.detail == "max_tool_calls=3: 2 run, this turn asks for 2"


def test_no_decision_can_pass_a_ceiling_the_guards_stop_before_anyone_is_asked() -> None:
    asked: list[str] = []
    result = run(model(THREE), "pay", tools=payments([]), approve=lambda c: asked.append(c.id),
                 budget=Budget(max_tool_calls=2))  # fmt: skip
    assert asked == []
    assert result.stop == "max_tool_calls"
    assert {c.status for c in result.steps[0].tool_calls} == {"skipped"}


def test_time_waiting_for_a_person_does_not_count_against_max_seconds() -> None:
    clock = FakeClock()

    def approve(call: PendingCall) -> bool:
        clock.advance(100.0)  # a person takes their time
        return True

    result = run(model(THREE), "pay", tools=payments([], clock), approve=approve, clock=clock,
                 budget=Budget(max_seconds=10))  # fmt: skip
    assert result.answered
    assert result.steps[0].seconds == 3.0  # the three transfers, not the wait
    assert result.seconds == 3.0
    held = start(model(THREE), "pay", tools=payments([], clock), clock=clock,
                 budget=Budget(max_seconds=10))  # fmt: skip
    held.step()
    clock.advance(3600.0)
    held.approve("c2")
    held.approve("c3")
    assert held.run().answered
    assert held.result.seconds == 3.0


# -- without approve= ---------------------------------------------------------------------------


MISSING = (
    "{where}: approve must be a function (call) -> decision, since transfer needs approval, got "
    "None. Pass approve=..., or step the run with start() and decide each held call with "
    "session.approve(call_id) or session.deny(call_id, reason)."
)


def test_run_with_a_tool_that_needs_approval_and_no_approve_fails_before_anything_is_sent() -> (
    None
):
    scripted = model(THREE)
    assert message(ValueError, lambda: run(scripted, "pay", tools=payments([]))) == MISSING.format(
        where="run"
    )
    assert message(
        ValueError, lambda: asyncio.run(arun(scripted, "pay", tools=payments([])))
    ) == MISSING.format(where="arun")
    assert message(
        ValueError, lambda: run_many(scripted, ["pay", "pay"], tools=payments([]), progress=False)
    ) == MISSING.format(where="run_many")
    assert scripted.calls == 0


def test_a_stepped_session_holds_the_batch_until_each_call_is_decided() -> None:
    log: list[str] = []
    seen: list[int | None] = []
    session = start(model(THREE), "pay", tools=payments(log), budget=Budget(max_cost_usd=1.0),
                     on_step=lambda s, step: seen.append(None if step is None else step.index))  # fmt: skip
    assert session.pending == ()
    held = session.step()
    assert isinstance(held, Step)
    assert (held.index, held.text, held.tool_calls) == (0, "paying", ())
    assert held.cost_usd == session.result.cost_usd  # billed, though not yet in the steps
    assert session.result.held_usd == held.cost_usd
    assert session.result.carried_usd == 0.0  # not mistaken for spend carried by a fork
    assert Result.from_dict(session.result.to_dict()).carried_usd == 0.0
    assert session.steps == ()
    assert not session.done
    assert log == []
    assert seen == []
    assert [(c.name, c.id) for c in session.pending] == [("transfer", "c2"), ("transfer", "c3")]
    turn = session.next_turn
    assert (turn.action, turn.stop) == ("held", None)
    assert turn.detail == "a batch waits for a decision on transfer (c2), transfer (c3)"
    assert turn.projection == session.pending[0].projection
    for take in (session.step, session.run):  # each names the method the user called
        assert message(RuntimeError, take) == (
            f"Session.{take.__name__}: the calls waiting for a decision must be none, got 2: "
            "transfer (c2), transfer (c3); decide each with session.approve(call_id) or "
            "session.deny(call_id, reason) first."
        )
    session.approve("c2", {"to": "bob", "amount": 800})
    assert [c.id for c in session.pending] == ["c3"]
    session.deny("c3", "not today")
    assert session.pending == ()
    assert session.next_turn.detail == "the batch is decided: the next step runs it, then goes on"
    assert log == []  # nothing ran before every call was decided
    last = session.step()
    assert sorted(log) == ["transfer ann 50", "transfer bob 800"]  # one batch: any order
    assert last is not None
    assert (last.index, last.text) == (1, "done")
    assert seen == [0, 1]  # each step given to on_step once, when it is recorded
    assert session.done
    assert session.result.held_usd == 0.0
    assert session.result.answered
    assert session.result.format() == "\n".join(
        [
            "step 0: paying",
            '  - transfer({"to": "ann", "amount": 50}) -> sent 50 to ann',
            '  - transfer({"to": "bob", "amount": 9000}) [edited to {"to": "bob", "amount": '
            "800.0}] -> sent 800 to bob",
            '  ! transfer({"to": "cy", "amount": "20000"}) [denied] -> denied: not run '
            "(reason: not today)",
            "step 1: done",
            "",
            f"stop=answered tools=2 failed=0 denied=1 cost=${session.result.cost_usd:.4f}",
        ]
    )


def test_session_run_pauses_at_a_held_batch_and_goes_on_once_decided() -> None:
    session = start(model(THREE), "pay", tools=payments([]))
    paused = session.run()
    assert (paused.stop, len(paused.steps), len(session.pending)) == (None, 0, 2)
    session.approve("c2")
    session.approve("c3")
    assert session.run().answered
    assert [c.approval for c in session.result.steps[0].tool_calls] == [None, "approved",
                                                                         "approved"]  # fmt: skip


def test_an_async_session_names_its_own_method_when_a_held_batch_is_undecided() -> None:
    async def main() -> list[str]:
        session = astart(model(THREE), "pay", tools=payments([]))
        await session.step()
        said: list[str] = []
        for take in (session.step, session.run):
            with pytest.raises(RuntimeError) as caught:
                await take()
            said.append(str(caught.value))
        said.append(message(ValueError, lambda: session.deny("c1")))
        said.append(message(TypeError, lambda: session.approve("c2", [1])))
        return said

    waiting = (
        "the calls waiting for a decision must be none, got 2: transfer (c2), transfer (c3); "
        "decide each with session.approve(call_id) or session.deny(call_id, reason) first."
    )
    assert asyncio.run(main()) == [
        f"AsyncSession.step: {waiting}",
        f"AsyncSession.run: {waiting}",
        "AsyncSession.deny: call_id must be the id of a pending call ('c2', 'c3'), got 'c1'.",
        "AsyncSession.approve: arguments must be a dict of the tool's arguments or None, "
        "got list.",
    ]


def test_deciding_a_call_that_is_not_pending_and_an_edit_that_does_not_fit() -> None:
    session = start(model(THREE), "pay", tools=payments([]))
    assert message(ValueError, lambda: session.approve("c2")) == (
        "Session.approve: call_id must be the id of a pending call (none: no call is waiting), "
        "got 'c2'."
    )
    session.step()
    assert message(ValueError, lambda: session.deny("c1")) == (
        "Session.deny: call_id must be the id of a pending call ('c2', 'c3'), got 'c1'."
    )
    assert message(ValueError, lambda: session.approve("c2", {"to": "bob", "amount": "lots"})) == (
        "Session.approve: arguments must be arguments that fit transfer's schema, got "
        "transfer.amount: expected number, got str."
    )
    assert message(TypeError, lambda: session.approve("c2", [1])) == (
        "Session.approve: arguments must be a dict of the tool's arguments or None, got list."
    )
    assert (
        message(TypeError, lambda: session.deny("c2", 3))
        == "Session.deny: reason must be a str, got int."
    )
    assert [c.id for c in session.pending] == ["c2", "c3"]  # still waiting
    session.deny("c2")
    assert message(ValueError, lambda: session.approve("c2")).startswith(
        "Session.approve: call_id must be the id of a pending call ('c3'), got 'c2'."
    )  # decided already


def test_on_decision_tells_each_listener_after_each_decision_and_a_raise_breaks_none() -> None:
    session = start(model(THREE), "pay", tools=payments([]))
    session.step()
    told: list[tuple[str, tuple[str, ...]]] = []

    def seen(name: str) -> Callable[[Any], None]:
        return lambda s: told.append((name, tuple(c.id for c in s.pending)))

    def broken(s: Any) -> None:
        raise LookupError("the view is gone")

    remove_a = session.on_decision(seen("a"))
    remove_broken = session.on_decision(broken)
    session.on_decision(seen("b"))
    # the decision is made before any listener is called, every one is called, and then what
    # one raised reaches the caller: the decision stands
    assert message(LookupError, lambda: session.approve("c2", {"to": "bob", "amount": 800})) == (
        "the view is gone"
    )
    assert told == [("a", ("c3",)), ("b", ("c3",))]
    assert [c.id for c in session.pending] == ["c3"]
    remove_broken()
    remove_a()
    remove_a()  # removing twice is removing once
    session.deny("c3", "not today")
    assert told[2:] == [("b", ())]
    assert message(ValueError, lambda: session.approve("c2")).startswith(
        "Session.approve: call_id must be the id of a pending call (none"
    )  # a refused decision tells no one
    assert told[3:] == []
    assert session.run().answered
    calls = session.result.steps[0].tool_calls
    assert [(c.approval, c.arguments) for c in calls[1:]] == [
        ("edited", {"to": "bob", "amount": 800.0}),
        ("denied", {"to": "cy", "amount": 20000.0}),
    ]
    assert message(TypeError, lambda: session.on_decision(3)) == (  # type: ignore[arg-type]
        "Session.on_decision: listener must be a function (session), got int."
    )
    fresh = session.fresh()  # a session of its own: no listener of this one's
    fresh.complete.reset()
    fresh.step()
    fresh.approve("c2")
    assert told[3:] == []


def test_before_tool_holds_a_batch_for_a_tool_that_is_not_marked() -> None:
    log: list[str] = []
    script = [Completion(tool_calls=[ToolCall("balance", {}, "b1")]),
              Completion(tool_calls=[ToolCall("balance", {}, "b2")]), "done"]  # fmt: skip
    asked: list[str] = []
    session = start(model(script), "go", tools=payments(log),
                    approve=lambda c: asked.append(c.id) or True)  # fmt: skip
    until = bp.before_tool("balance")
    paused = session.run(until=until)
    assert paused.stop is None
    assert log == []
    assert asked == []
    assert until(session) is True
    assert [(c.id, c.tool_marked) for c in session.pending] == [("b1", False)]
    session.approve("b1")
    session.run(until=until)
    assert log == ["balance"]
    assert [c.id for c in session.pending] == ["b2"]
    session.deny("b2", "enough")
    assert session.run().answered  # without the breakpoint nothing more is held
    assert [c.approval for s in session.result.steps for c in s.tool_calls] == [
        "approved",
        "denied",
    ]
    assert (
        message(ValueError, lambda: bp.before_tool(""))
        == "before_tool: name must be a tool name, got an empty string."
    )


# -- the trace -----------------------------------------------------------------------------------


def decided_run(**options: Any) -> Result:
    answers = {"c2": {"to": "bob", "amount": 900}, "c3": "over the limit"}
    return run(model(THREE), "pay", tools=payments([]), approve=lambda c: answers[c.id],
               clock=FakeClock(), **options)  # fmt: skip


def test_each_decision_survives_to_dict_the_journal_and_a_saved_file(tmp_path: Path) -> None:
    result = decided_run(trace_path=tmp_path / "run.jsonl")
    data = result.to_dict()
    calls = data["steps"][0]["tool_calls"]
    assert [c.get("approval") for c in calls] == [None, "edited", "denied"]
    assert "approval" not in calls[0]  # written only when there is one
    assert data["totals"]["denied"] == 1
    assert Result.from_dict(json.loads(json.dumps(data))) == result
    journal = load_trace(tmp_path / "run.jsonl")
    assert journal == result
    assert journal.format() == result.format()
    result.save(tmp_path / "run.json")
    assert load_trace(tmp_path / "run.json") == result


def test_a_decision_that_does_not_fit_its_status_is_refused() -> None:
    assert message(
        ValueError, lambda: CallRecord("t", "c", "{}", {}, "ok", approval="denied")
    ) == (
        "CallRecord: approval must be 'denied' exactly when status is 'denied', got approval "
        "'denied' with status 'ok'."
    )
    assert message(ValueError, lambda: CallRecord("t", "c", "{}", {}, "ok", approval="maybe")) == (
        "CallRecord: approval must be None or one of approved, edited, denied, got 'maybe'."
    )
    data = decided_run().to_dict()
    data["steps"][0]["tool_calls"][2]["approval"] = "approved"
    assert message(ValueError, lambda: Result.from_dict(data)) == (
        "Result.from_dict: steps[0].tool_calls[2].approval must be 'denied' exactly when "
        "status is 'denied', got 'approved' with status 'denied'."
    )
    data["steps"][0]["tool_calls"][2]["approval"] = "maybe"
    assert message(ValueError, lambda: Result.from_dict(data)) == (
        "Result.from_dict: steps[0].tool_calls[2].approval must be None or one of approved, "
        "edited, denied, got 'maybe'."
    )


def test_redaction_covers_edited_arguments_reasons_and_what_approve_raised() -> None:
    def approve(call: PendingCall) -> Any:
        if call.id == "c2":
            return {"to": SECRET, "amount": 900}
        raise RuntimeError(f"token {SECRET} expired")

    result = run(model(THREE), "pay", tools=payments([]), approve=approve,
                 redact=lambda text: text.replace(SECRET, "***"))  # fmt: skip
    saved = json.dumps(result.to_dict())
    assert SECRET not in saved
    assert SECRET not in result.format()
    edited, denied = result.steps[0].tool_calls[1:]
    assert edited.arguments == {"to": "***", "amount": 900.0}
    assert denied.error == "approve raised RuntimeError: token *** expired"
    assert denied.traceback is not None
    assert SECRET not in denied.traceback
    reason = run(model(THREE), "pay", tools=payments([]), approve=lambda c: f"ask {SECRET}",
                 redact=lambda text: text.replace(SECRET, "***"))  # fmt: skip
    assert reason.steps[0].tool_calls[1].result == "ask ***"
    assert SECRET not in json.dumps(reason.to_dict())


def test_replay_reproduces_the_decisions_and_asks_again_when_given_approve() -> None:
    result = decided_run()
    again = replay(result)
    assert again.format() == result.format()
    assert [s.tool_calls for s in again.steps] == [s.tool_calls for s in result.steps]
    asked: list[tuple[int, str]] = []

    def deny_all(call: PendingCall) -> str:
        asked.append((call.step, call.id))
        return "what if"

    other = replay(result, approve=deny_all)
    assert asked == [(0, "c2"), (0, "c3")]  # the calls held in the recording
    assert [c.approval for c in other.steps[0].tool_calls] == [None, "denied", "denied"]
    assert len(other.tool_calls) == 1
    approved = replay(result, approve=lambda c: True)  # the denied call never ran: no result
    # nor did the edited one run as the model wrote it: its recorded result is not borrowed
    assert approved.steps[0].tool_calls[1].error == approved.steps[0].tool_calls[2].error
    assert approved.steps[0].tool_calls[2].error == (
        "LookupError: transfer: the recorded run has no result for this call (it was not run "
        "there), so a replay cannot say what the tool would have returned"
    )


def test_budget_report_counts_the_decisions() -> None:
    report = budget_report([decided_run(), decided_run(), run(model(["hi"]), "x")])
    assert report.decisions == {"edited": (2, ("#0", "#1")), "denied": (2, ("#0", "#1"))}
    text = str(report)
    assert "calls held for a person:" in text
    assert [line.split()[:2] for line in text.splitlines() if line.startswith("  edited")] == [
        ["edited", "2"]
    ]


def test_the_core_view_shows_each_decision() -> None:
    from budgetloop._trace._html import render

    html = render(decided_run())
    assert "ok (edited)" in html
    assert "denied: not run (reason: over the limit)" in html


def test_price_is_not_needed_to_hold_a_call() -> None:
    session = start(ScriptedModel(THREE), "pay", tools=payments([]))
    session.step()
    assert [c.projection for c in session.pending] == [None, None]
    assert session.pending[0].spent_usd == 0.0


def test_a_pending_calls_arguments_are_its_own_copy() -> None:
    session = start(model(THREE), "pay", tools=payments([]), price=Price(1.0, 1.0))
    session.step()
    session.pending[0].arguments["amount"] = 1.0
    session.approve("c2")
    session.approve("c3")
    session.run()
    assert session.result.steps[0].tool_calls[1].arguments == {"to": "bob", "amount": 9000.0}


def test_the_readme_example_writes_what_the_readme_shows() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Holding a call for a person", 1)[1].split("\n## ", 1)[0]
    shown = section.split("```\nstep 0: paying\n", 1)[1].split("```", 1)[0].splitlines()

    def approve(call: PendingCall) -> Any:  # as the README writes it
        if call.arguments["amount"] > 10_000:
            return "over the daily limit"
        if call.arguments["to"] == "mallory":
            return False
        if call.arguments["amount"] > 5_000:
            return {**call.arguments, "amount": 5_000}
        return True

    script = pay(
        ("transfer", {"to": "ann", "amount": 50}, "c1"),
        ("transfer", {"to": "bob", "amount": 9000}, "c2"),
        ("transfer", {"to": "cy", "amount": 20000}, "c3"),
    )
    result = run(model(script), "Pay the invoices.", tools=payments([]), approve=approve)
    assert result.format().splitlines()[1:4] == shown


def test_resume_and_fork_take_approve_and_a_fork_of_a_held_session_asks_again() -> None:
    from budgetloop import resume

    asked: list[str] = []

    def approve(call: PendingCall) -> bool:
        asked.append(call.id)
        return True

    held = start(model(THREE), "pay", tools=payments([]))
    held.step()
    fork = held.fork(complete=model(THREE), approve=approve)  # the held call is made again
    assert fork.pending == ()
    assert fork.result.cost_usd == held.result.cost_usd  # the held call's money stays spent
    assert fork.run().answered
    assert asked == ["c2", "c3"]
    again = resume(decided_run(), model(THREE), tools=payments([]), at=0, approve=approve)
    assert again.run().answered
    assert asked == ["c2", "c3", "c2", "c3"]


# -- held as data: approve="hold", decided elsewhere, resumed once ----------------------------


def _paid(ran: list[tuple[str, float]]) -> Tool:
    @tool(needs_approval=lambda args: args["amount"] > 1000)
    def transfer(to: str, amount: float) -> str:
        """Send money."""
        ran.append((to, amount))
        return f"sent {amount:g} to {to}"

    return transfer


def _paying() -> ScriptedModel:
    return ScriptedModel([
        Completion(text="paying", tool_calls=[
            ToolCall("transfer", {"to": "ann", "amount": 50}, "c1"),
            ToolCall("transfer", {"to": "bob", "amount": 9000}, "c2"),
            ToolCall("transfer", {"to": "cy", "amount": 20000}, "c3"),
        ]),
    ])  # fmt: skip


def test_hold_ends_the_run_held_with_its_calls_pending_as_data(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    path = tmp_path / "run.jsonl"
    result = run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold",
                 trace_path=path)  # fmt: skip
    assert str(result.stop) == "held"
    assert not result.answered
    assert ran == []  # no call of the batch ran, c1 (no approval needed) neither
    assert [(c.id, c.arguments["amount"], c.rule) for c in result.pending] == [
        ("c2", 9000.0, None), ("c3", 20000.0, None)]  # fmt: skip
    assert result.held is not None
    assert result.held.step.text == "paying"
    assert result.steps == ()
    assert result.cost_usd == result.held_usd > 0
    assert result.detail == "a batch waits for a decision on transfer (c2), transfer (c3)"
    assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    result.save(tmp_path / "saved.json")
    assert load_trace(tmp_path / "saved.json") == result
    loaded = load_trace(path)  # the journal
    assert loaded == result
    assert loaded.pending == result.pending


def test_resume_runs_the_decided_batch_once_as_the_same_run(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    path = tmp_path / "run.jsonl"
    held = run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold",
               trace_path=path)  # fmt: skip
    model = ScriptedModel(["paid"])
    session = resume(path, model, tools=[_paid(ran)],
                     decisions={"c2": {"to": "bob", "amount": 5000}, "c3": "over the limit"})  # fmt: skip
    assert ran == []  # nothing runs before run()
    result = session.run()
    assert sorted(ran) == [("ann", 50.0), ("bob", 5000.0)]  # in any order; c3 denied: never ran
    assert len(model.requests) == 1  # the held step's model call was not made again
    assert result.run_id == held.run_id
    assert result.answer == "paid"
    assert [c.approval for c in result.steps[0].tool_calls] == [None, "edited", "denied"]
    assert result.steps[0].tool_calls[2].content == "denied: not run (reason: over the limit)"
    assert result.steps[0].cost_usd == held.held_usd  # billed once, kept exact
    assert result.cost_usd == pytest.approx(held.cost_usd + result.steps[1].cost_usd, abs=1e-12)
    assert load_trace(path) == result  # one trace, the resumed run written after the hold
    with pytest.raises(ValueError, match="taken at") as info:
        resume(
            path, ScriptedModel(["again"]), tools=[_paid(ran)], decisions={"c2": True, "c3": True}
        )
    assert str(info.value).startswith(
        "resume: the held batch of run.jsonl must be waiting for a decision, got taken at "
    )
    assert str(info.value).endswith(f"by process {os.getpid()} on {socket.gethostname()}. "
                                    "A held batch runs once.")  # fmt: skip
    assert len(ran) == 2


@pytest.mark.parametrize(
    ("decisions", "approve", "error", "message"),
    [
        (
            {"c1": True, "c2": True, "c3": True},
            None,
            ValueError,
            "resume: each key of decisions must be the id of a call waiting for a decision "
            "('c2', 'c3'), got 'c1'.",
        ),
        (
            {"c2": True},
            None,
            ValueError,
            "resume: decisions must be a decision for every call waiting, got none for transfer "
            "(c3). Give each one's decision, or approve=... to decide the rest.",
        ),
        (
            {"c2": True},
            "hold",
            ValueError,
            "resume: decisions must be a decision for every call waiting, got none for transfer "
            "(c3). Give each one's decision, or approve=... to decide the rest.",
        ),
        (
            {"c2": True, "c3": {"to": "cy"}},
            None,
            ValueError,
            "resume: decisions['c3'] must be arguments that fit transfer's schema, got "
            "transfer.amount: missing required argument.",
        ),
        (
            {"c2": True, "c3": 3},
            None,
            TypeError,
            "resume: decisions['c3'] must be True, False, a str (deny, with the reason) or a dict "
            "(the arguments to run with), got int.",
        ),
    ],
)
def test_a_refused_resume_takes_nothing_and_the_file_resumes_after(
    tmp_path: Path, decisions: dict[str, Any], approve: Any, error: type, message: str
) -> None:
    ran: list[tuple[str, float]] = []
    path = tmp_path / "run.jsonl"
    run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold", trace_path=path)
    before = path.read_bytes()
    extra = {} if approve is None else {"approve": approve}
    with pytest.raises(error) as info:
        resume(path, ScriptedModel(["paid"]), tools=[_paid(ran)], decisions=decisions, **extra)
    assert str(info.value) == message
    assert path.read_bytes() == before
    assert ran == []
    result = resume(path, ScriptedModel(["paid"]), tools=[_paid(ran)],
                    decisions={"c2": True}, approve=lambda call: "no").run()  # fmt: skip
    assert sorted(ran) == [("ann", 50.0), ("bob", 9000.0)]  # a batch logs in any order
    assert [c.status for c in result.steps[0].tool_calls] == ["ok", "ok", "denied"]


def test_resume_refuses_decisions_for_a_run_that_is_not_held() -> None:
    done = run(ScriptedModel(["hi"]), "go")
    with pytest.raises(ValueError, match="ended held") as info:
        resume(done, ScriptedModel(["x"]), tools=[], decisions={"c1": True})
    assert str(info.value) == (
        "resume: decisions must be given only for a run that ended held (stop 'held', at and "
        "messages not given), got stop answered."
    )


def test_a_held_result_object_resumes_with_its_spend_and_time(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    clock = FakeClock()
    held = run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold", clock=clock,
               budget=Budget(max_seconds=10))  # fmt: skip
    clock.now += 3600  # an hour waiting for a person: not the run's time
    session = resume(held, ScriptedModel(["paid"]), tools=[_paid(ran)], clock=clock,
                     decisions={"c2": True, "c3": False}, trace_path=tmp_path / "after.jsonl")  # fmt: skip
    result = session.run()
    assert result.stop == "answered"
    assert result.seconds == held.seconds
    assert sorted(ran) == [("ann", 50.0), ("bob", 9000.0)]  # a batch logs in any order
    assert load_trace(tmp_path / "after.jsonl") == result  # a whole trace in a new file


def test_a_held_trace_resumed_under_replay_reproduces_the_decisions(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    path = tmp_path / "run.jsonl"
    run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold", trace_path=path)
    resume(path, ScriptedModel(["paid"]), tools=[_paid(ran)],
           decisions={"c2": {"to": "bob", "amount": 10}, "c3": "no"}).run()  # fmt: skip
    recorded = load_trace(path)
    again = replay(path)
    assert again.steps == recorded.steps
    assert again.cost_usd == recorded.cost_usd
    assert [c.approval for c in again.steps[0].tool_calls] == [None, "edited", "denied"]
    assert again.steps[0].tool_calls[1].arguments == {"to": "bob", "amount": 10.0}


def test_standing_rules_decide_later_calls_and_survive_resume_and_fork(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    big = [ToolCall("transfer", {"to": "bob", "amount": 9000}, "a1"),
           ToolCall("transfer", {"to": "cy", "amount": 7000}, "a2")]  # fmt: skip
    later = [ToolCall("transfer", {"to": "dan", "amount": 8000}, "b1")]
    model = ScriptedModel([Completion(tool_calls=big), Completion(tool_calls=later), "done"])
    session = start(model, "pay", tools=[_paid(ran)], price=PRICE)
    session.step()
    session.approve("a1", always=True)  # a2, waiting, of the same tool: decided too
    assert session.pending == ()
    forked_before = session.fork()
    session.step()
    session.step()  # b1 ran without asking
    result = session.result
    assert ran == [("bob", 9000.0), ("cy", 7000.0), ("dan", 8000.0)]
    assert [(r.tool, r.approval, r.call_id, r.step) for r in result.rules] == [
        ("transfer", "approved", "a1", 0)]  # fmt: skip
    assert Result.from_dict(result.to_dict()).rules == result.rules
    assert forked_before.result.rules == result.rules
    with pytest.raises(ValueError, match="must be the id of a pending call"):
        session.approve("a1", {"to": "x", "amount": 1}, always=True)


def test_a_deny_rule_is_recorded_and_a_held_run_says_the_calls_it_decided(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []

    @tool(needs_approval=True)
    def wipe(name: str) -> str:
        """Delete."""
        ran.append((name, 0.0))
        return "gone"

    path = tmp_path / "run.jsonl"
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("wipe", {"name": "a"}, "w1")]),
        Completion(tool_calls=[ToolCall("wipe", {"name": "b"}, "w2"),
                               ToolCall("transfer", {"to": "bob", "amount": 9000}, "t1")]),
    ])  # fmt: skip
    session = start(model, "go", tools=[wipe, _paid(ran)], price=PRICE, trace_path=path)
    session.step()
    session.deny("w1", "never", always=True)
    result = session.run()  # w2 decided by the rule, t1 waits
    assert [c.id for c in session.pending] == ["t1"]
    assert [(c.id, c.rule) for c in result.pending] == [("w2", "denied"), ("t1", None)]
    assert ran == []
    last = resume(result, ScriptedModel(["ok"]), tools=[wipe, _paid(ran)],
                  decisions={"t1": True}).run()  # fmt: skip
    assert ran == [("bob", 9000.0)]  # w2 denied by the rule, never run
    assert [c.status for c in last.steps[1].tool_calls] == ["denied", "ok"]
    assert last.rules[0].reason == "never"


def test_aresume_runs_a_held_trace_with_an_async_approve(tmp_path: Path) -> None:
    ran: list[tuple[str, float]] = []
    path = tmp_path / "run.jsonl"
    run(_paying(), "pay", tools=[_paid(ran)], price=PRICE, approve="hold", trace_path=path)

    async def approve(call: PendingCall) -> bool:
        return call.id == "c3"

    async def go() -> Result:
        session = await aresume(path, ScriptedModel(["paid"]), tools=[_paid(ran)],
                                decisions={"c2": "no"}, approve=approve)  # fmt: skip
        return await session.run()

    result = asyncio.run(go())
    assert sorted(ran) == [("ann", 50.0), ("cy", 20000.0)]  # a batch logs in any order
    assert [c.status for c in result.steps[0].tool_calls] == ["ok", "denied", "ok"]
    assert load_trace(path) == result


# -- a held run under redact=: the secret in no output form, and never run as its mark ---------

_KEY = "sk-SECRET"


def _keyed(ran: list[str]) -> Tool:
    @tool(needs_approval=True)
    def call_api(url: str, key: str) -> str:
        """Call."""
        ran.append(key)
        return "ok"

    return call_api


def _hiding(text: str) -> str:
    return text.replace(_KEY, "***")


def _held_with_a_key(path: Path, ran: list[str]) -> Result:
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("call_api", {"url": "u", "key": _KEY}, id="c1")]),
        "done",
    ])  # fmt: skip
    return run(model, "go", tools=[_keyed(ran)], approve="hold", trace_path=path,
               redact=_hiding)  # fmt: skip


def test_a_held_runs_pending_arguments_go_through_redact_in_every_output_form(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    path = tmp_path / "run.jsonl"
    result = _held_with_a_key(path, ran)
    assert result.pending == (
        PendingCall(name="call_api", id="c1", step=0, raw_arguments={"url": "u", "key": "***"},
                    arguments={"url": "u", "key": "***"}, spent_usd=0.0, projection=None,
                    redacted=("arguments.key",)),
    )  # fmt: skip
    result.save(tmp_path / "saved.json")
    texts = {
        "journal": path.read_text(encoding="utf-8"),
        "saved": (tmp_path / "saved.json").read_text(encoding="utf-8"),
        "to_dict": json.dumps(result.to_dict()),
        "format": result.format(),
        "repr": repr(result),
        "static HTML": result._repr_html_(),
    }
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        pass
    else:
        from budgetloop.otel import export_trace

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        export_trace(result, provider, content=True)
        texts["spans"] = repr([dict(s.attributes or {}) for s in exporter.get_finished_spans()])
    for where, text in texts.items():
        assert _KEY not in text, where
    assert load_trace(path) == result  # what loads back is what the run returned
    assert Result.from_dict(json.loads(texts["to_dict"])) == result
    assert ran == []


@pytest.mark.parametrize(
    ("decision", "approve", "message"),
    [
        (True, None,
         "resume: decisions['c1'] must be the arguments to run call_api with (arguments.key was "
         "redacted when the run was held), got True."),
        ({"url": "v", "key": "***"}, None,
         "resume: decisions['c1'] must be the arguments to run call_api with (arguments.key was "
         "redacted when the run was held), got the redaction mark recorded at arguments.key."),
        (None, lambda call: True,
         "resume: approve's decision on 'c1' must be the arguments to run call_api with "
         "(arguments.key was redacted when the run was held), got True."),
    ],
)  # fmt: skip
def test_a_held_call_whose_arguments_were_redacted_runs_only_with_arguments_given(
    tmp_path: Path, decision: Any, approve: Any, message: str
) -> None:
    ran: list[str] = []
    path = tmp_path / "run.jsonl"
    held = _held_with_a_key(path, ran)
    before = path.read_bytes()
    given: dict[str, Any] = {"decisions": {"c1": decision}} if approve is None else {}
    for trace in (path, held):  # the file, and the held Result object alike
        with pytest.raises(ValueError, match="redacted when the run was held") as info:
            resume(trace, ScriptedModel(["done"]), tools=[_keyed(ran)], redact=_hiding,
                   **given, **({} if approve is None else {"approve": approve}))  # fmt: skip
        assert str(info.value) == message
    assert path.read_bytes() == before  # nothing taken: the file resumes after
    assert ran == []
    result = resume(path, ScriptedModel(["done"]), tools=[_keyed(ran)], redact=_hiding,
                    decisions={"c1": {"url": "u", "key": _KEY}}).run()  # fmt: skip
    assert ran == [_KEY]
    assert result.stop == "answered"
    assert result.steps[0].tool_calls[0].approval == "edited"
    assert _KEY not in path.read_text(encoding="utf-8")


def test_a_standing_rule_does_not_run_a_call_recorded_with_redacted_arguments() -> None:
    ran: list[str] = []
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("call_api", {"url": "a", "key": "k"}, id="c0")]),
        Completion(tool_calls=[ToolCall("call_api", {"url": "u", "key": _KEY}, id="c1"),
                               ToolCall("transfer", {"to": "bob", "amount": 9000}, "t1")]),
    ])  # fmt: skip
    session = start(model, "go", tools=[_keyed(ran), _paid([])], price=PRICE, redact=_hiding)
    session.step()
    session.approve("c0", always=True)
    held = session.run()  # c1 decided by the rule (in this session, with the real key), t1 waits
    assert [(c.id, c.rule, c.redacted) for c in held.pending] == [
        ("c1", "approved", ("arguments.key",)), ("t1", None, ())]  # fmt: skip
    with pytest.raises(ValueError, match="redacted when the run was held") as info:
        resume(held, ScriptedModel(["ok"]), tools=[_keyed(ran), _paid([])], redact=_hiding,
               decisions={"t1": True})  # fmt: skip
    assert str(info.value) == (
        "resume: decisions['c1'] must be the arguments to run call_api with (arguments.key was "
        "redacted when the run was held), got none (a standing rule approves every call_api "
        "call)."
    )
    last = resume(held, ScriptedModel(["ok"]), tools=[_keyed(ran), _paid([])], redact=_hiding,
                  decisions={"t1": True, "c1": {"url": "u", "key": _KEY}}).run()  # fmt: skip
    assert ran == ["k", _KEY]
    assert [c.status for c in last.steps[1].tool_calls] == ["ok", "ok"]
    # the live session holds the real key: the rule runs c1 there as the model asked
    session.approve("t1")
    session.run()
    assert ran == ["k", _KEY, _KEY]


def test_a_held_session_restored_from_a_trace_refuses_approve_for_redacted_arguments(
    tmp_path: Path,
) -> None:
    from budgetloop.display import open_held

    ran: list[str] = []
    path = tmp_path / "run.jsonl"
    _held_with_a_key(path, ran)
    session = open_held(path, ScriptedModel(["done"]), tools=[_keyed(ran)], redact=_hiding)
    for always in (False, True):
        with pytest.raises(ValueError, match="redacted when the run was held") as info:
            session.approve("c1", always=always)
        assert str(info.value) == (
            "Session.approve: arguments must be the arguments to run call_api with "
            "(arguments.key was redacted when the run was held), got None."
        )
    with pytest.raises(ValueError, match=r"got the redaction mark recorded at arguments\.key"):
        session.approve("c1", {"url": "u", "key": "***"})
    assert [c.id for c in session.pending] == ["c1"]
    session.approve("c1", {"url": "u", "key": _KEY})
    assert session.run().stop == "answered"
    assert ran == [_KEY]


def test_a_held_run_without_redact_records_no_redacted_paths(tmp_path: Path) -> None:
    ran: list[str] = []
    path = tmp_path / "run.jsonl"
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("call_api", {"url": "u", "key": _KEY}, id="c1")]),
    ])  # fmt: skip
    held = run(model, "go", tools=[_keyed(ran)], approve="hold", trace_path=path)
    assert held.pending[0].arguments == {"url": "u", "key": _KEY}
    assert held.pending[0].redacted == ()
    assert "redacted" not in held.to_dict()["pending"][0]  # older readers read it
    resume(path, ScriptedModel(["done"]), tools=[_keyed(ran)], decisions={"c1": True}).run()
    assert ran == [_KEY]
