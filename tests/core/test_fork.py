"""Pausing with until=, forking from a step, resuming a saved run, and the on_step hook."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    Result,
    ScriptedModel,
    Session,
    Step,
    ToolCall,
    Usage,
    astart,
    breakpoints,
    resume,
    start,
    tool,
)
from tests.conftest import PRICE

RATES = {"EUR": 1.1, "SEK": 0.091}


@tool
def rate(currency: str) -> float:
    """The USD rate of a currency."""
    return RATES[currency]


@tool
def transfer(amount: float) -> str:
    """Move money."""
    return f"moved {amount}"


def script() -> list[Any]:
    return [
        Completion(tool_calls=[ToolCall("rate", {"currency": "SEK"}, "r1")], usage=Usage(100, 10)),
        Completion(tool_calls=[ToolCall("transfer", {"amount": 9.1}, "t1")], usage=Usage(200, 10)),
        Completion(text="done: moved 9.1", usage=Usage(300, 10)),
    ]


def session(**options: Any) -> Session:
    model = ScriptedModel(script(), price=PRICE, max_output_tokens=50)
    return start(model, "Send 100 SEK in USD.", tools=[rate, transfer], **options)


def test_until_pauses_after_the_step_and_the_next_run_goes_on() -> None:
    s = session()
    paused = s.run(until=breakpoints.on_tool("transfer"))
    assert not s.done
    assert paused.stop is None
    assert [st.tool_calls[0].name for st in paused.steps] == ["rate", "transfer"]
    result = s.run()
    assert (result.stop, result.answer, len(result.steps)) == ("answered", "done: moved 9.1", 3)


def test_on_cost_pauses_before_the_money_goes() -> None:
    s = session()
    first = PRICE.cost(100, 10)
    s.run(until=breakpoints.on_cost(first + 0.0001))
    assert len(s.steps) == 1  # the next turn's worst case would pass the amount
    assert s.result.cost_usd == first
    assert s.projection.total_usd is not None
    assert s.projection.total_usd > first + 0.0001


def test_fork_from_before_a_step_with_an_edited_result_keeps_the_money() -> None:
    s = session()
    s.run()
    spent = s.result.cost_usd
    context = s.messages[:3]  # user, the rate call, its result: the context before step 1
    assert [m.role for m in context] == ["user", "assistant", "tool"]
    edited = [*context[:2], Message("tool", "0.5", tool_call_id="r1", name="rate")]
    fixed = ScriptedModel(["the rate is 0.5: not sending"], price=PRICE, max_output_tokens=50)
    fork = s.fork(1, messages=edited, complete=fixed)
    assert fork.messages == edited
    assert len(fork.steps) == 1  # the kept history: step 0
    assert fork.result.cost_usd == spent  # money spent stays spent, all of it
    result = fork.run()
    assert result.answer == "the rate is 0.5: not sending"
    assert fixed.requests[0].messages == tuple(edited)
    assert result.cost_usd == spent + result.steps[1].cost_usd
    assert [st.index for st in result.steps] == [0, 1]


def test_fork_at_a_step_takes_the_context_as_it_stood_and_options_as_given() -> None:
    s = session(budget=Budget(max_steps=5))
    s.run()
    fork = s.fork(2, budget=Budget(max_steps=2))
    assert fork.messages == s.messages[:5]
    assert fork.budget == Budget(max_steps=2)
    assert fork.price == PRICE  # every other option kept
    assert fork.run().stop == "max_steps"  # two steps kept, none left
    with pytest.raises(ValueError, match=r"^Session\.fork: ") as at:
        s.fork(4)
    assert str(at.value) == "Session.fork: at must be a step index from 0 to 3, got 4."
    with pytest.raises(
        TypeError, match=r"^Session\.fork: each option must be one of .*, got 'bugdet'\.$"
    ):
        s.fork(0, bugdet=Budget())  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"^AsyncSession\.fork: ") as at:
        astart(ScriptedModel(["hi"]), "go").fork(1)
    assert str(at.value) == "AsyncSession.fork: at must be a step index from 0 to 0, got 1."


def test_a_ceiling_holds_across_forks() -> None:
    spent = PRICE.cost(300, 20)  # the two calls, summed exactly in picodollars
    s = session(budget=Budget(max_cost_usd=spent + 0.0005))
    s.step()
    s.step()
    assert s.result.cost_usd == spent
    for _ in range(3):  # a fork cannot spend what the source already spent
        fork = s.fork(0)
        assert fork.result.cost_usd == spent
        assert fork.run().stop == "max_cost_usd"


def test_resume_a_saved_run_from_a_step(tmp_path: Any) -> None:
    s = session()
    path = tmp_path / "run.json"
    s.run().save(path)
    model = ScriptedModel(["resumed"], price=PRICE, max_output_tokens=50)
    again = resume(path, model, tools=[rate, transfer], at=2)
    assert [m.role for m in again.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert again.result.cost_usd == s.result.cost_usd
    assert again.run().answer == "resumed"
    with pytest.raises(
        TypeError,
        match=r"^resume: trace must be a Result, a dict from Result\.to_dict\(\) or a path to a saved trace, got int\.$",
    ):
        resume(3, model, tools=[])  # type: ignore[arg-type]


def test_resume_of_a_trace_missing_messages_is_refused_naming_the_field() -> None:
    s = session()
    data = s.run().to_dict()
    data["messages"] = data["messages"][:3]  # the steps appended five messages after the prompt
    model = ScriptedModel(["resumed"], price=PRICE, max_output_tokens=50)
    with pytest.raises(ValueError, match="messages") as info:
        resume(data, model, tools=[rate, transfer], at=0)
    assert str(info.value) == (
        "resume: messages must be at least the 5 messages that steps 0 to 2 appended, got 3; the "
        "messages are not this run's."
    )
    with pytest.raises(ValueError, match="messages") as info:  # not the ones steps 1, 2 added
        resume(data, model, tools=[rate, transfer], at=1)
    assert str(info.value) == (
        "resume: messages[2] must be an assistant message (step 2 appended it), got a tool "
        "message; the messages are not this run's."
    )
    # from the end, or from an edited context, the messages that are there are enough
    assert resume(data, model, tools=[rate, transfer]).messages == s.messages[:3]
    edited = [Message("user", "Send 5 SEK in USD.")]
    assert resume(data, model, tools=[rate, transfer], at=0, messages=edited).messages == edited


def test_resume_goes_on_with_the_options_the_run_was_started_with() -> None:
    same = Completion(tool_calls=[ToolCall("rate", {"currency": "SEK"})])
    model = ScriptedModel([same, same], price=PRICE, max_output_tokens=50)
    first = start(model, "go", tools=[rate], repeat_limit=2, finish=True).run()
    assert (first.stop, len(first.steps)) == ("repeated", 3)  # then a final answer
    again = resume(first, ScriptedModel([same]), tools=[rate], at=1)
    assert again.run().stop == "repeated"  # repeat_limit=2, as recorded (the default is 3)
    assert again.steps[1].tool_calls[0].status == "skipped"
    assert (again.options.values["finish"], again.options.values["repeat_limit"]) == (True, 2)
    other = resume(first, ScriptedModel([same, "ok"]), tools=[rate], at=1, repeat_limit=None)
    assert other.run().stop == "answered"


def test_on_step_sees_every_committed_step_and_the_stop() -> None:
    seen: list[tuple[int | None, bool]] = []

    def hook(session: Session, step: Step | None) -> None:
        seen.append((None if step is None else step.index, session.done))

    session(budget=Budget(max_steps=2), on_step=hook).run()
    assert seen == [(0, False), (1, True)]
    seen.clear()
    model = ScriptedModel(["x"], price=PRICE, max_output_tokens=50)
    start(model, "go", budget=Budget(max_steps=0), on_step=hook).run()
    assert seen == [(None, True)]


def test_a_fork_with_a_trace_path_writes_its_whole_history(tmp_path: Any) -> None:
    from budgetloop import load_trace

    s = session(trace_path=tmp_path / "run.jsonl")
    s.run()
    edited = [*s.messages[:2], Message("tool", "0.5", tool_call_id="r1", name="rate")]
    fixed = ScriptedModel(["not sending"], price=PRICE, max_output_tokens=50)
    fork = s.fork(1, messages=edited, complete=fixed)
    result = fork.run()
    # the source's trace was kept aside; the fork's file holds its kept step, its context, its own
    assert load_trace(tmp_path / "run.1.jsonl") == s.result
    assert load_trace(tmp_path / "run.jsonl") == result


def test_until_that_is_not_a_function_fails_before_any_step() -> None:
    s = session()
    with pytest.raises(TypeError) as caught:
        s.run(until=3)  # type: ignore[arg-type]
    assert str(caught.value) == "Session.run: until must be a function (session) -> bool, got int."
    assert s.steps == ()
    a = astart(ScriptedModel(["hi"]), "go")
    with pytest.raises(TypeError) as caught:
        asyncio.run(a.run(until="stop"))  # type: ignore[arg-type]
    assert str(caught.value) == (
        "AsyncSession.run: until must be a function (session) -> bool, got str."
    )
    assert a.steps == ()


def test_a_fork_killed_before_its_end_loads_with_the_spend_it_inherited(tmp_path: Any) -> None:
    # hole 2: the fork's journal carries what its source spent after the fork point
    from budgetloop import load_trace

    s = session()
    s.run()
    spent = s.result.cost_usd  # three calls
    fixed = ScriptedModel(
        [Completion(tool_calls=[ToolCall("rate", {"currency": "EUR"}, "r2")])],
        price=PRICE,
        max_output_tokens=50,
    )
    fork = s.fork(1, complete=fixed, trace_path=tmp_path / "fork.jsonl")
    fork.step()  # the process dies here: no end line
    assert not fork.done
    cut = load_trace(tmp_path / "fork.jsonl")
    assert cut.cost_usd == fork.result.cost_usd
    assert cut.cost_usd > spent
    assert [st.index for st in cut.steps] == [0, 1]
    # resumed from the cut file, the lineage's ceiling holds on all of it
    budget = Budget(max_cost_usd=cut.cost_usd + 0.0001)
    model = ScriptedModel(["anything"], price=PRICE, max_output_tokens=50)
    again = resume(tmp_path / "fork.jsonl", model, tools=[rate, transfer], budget=budget)
    assert again.result.cost_usd == cut.cost_usd
    assert again.run().stop == "max_cost_usd"


def test_every_run_has_an_id_and_a_fork_names_the_run_it_came_from(tmp_path: Any) -> None:
    s = session()
    s.run()
    source = s.result
    assert re.fullmatch("[0-9a-f]{32}", source.run_id)
    assert source.forked_from is None
    fork = s.fork(at=1)
    assert fork.result.forked_from == source.run_id
    assert fork.result.run_id not in (source.run_id, "")
    assert fork.fork(at=1).result.forked_from == fork.result.run_id  # a fork of a fork
    again = s.fresh()
    assert (again.result.forked_from, again.result.run_id != source.run_id) == (None, True)
    path = tmp_path / "run.json"
    source.save(path)
    model = ScriptedModel(["resumed"], price=PRICE, max_output_tokens=50)
    resumed = resume(path, model, tools=[rate, transfer], at=2)
    assert resumed.result.forked_from == source.run_id
    assert resumed.run().run_id not in (source.run_id, fork.result.run_id)


def test_a_fork_records_which_messages_it_changed_and_the_trace_keeps_them(
    tmp_path: Any,
) -> None:
    # issue 29, item 3: a fork's view showed the old tool result in step 0 and the new one only
    # in step 1's context, with nothing saying the fork had changed it
    from budgetloop import Result, load_trace

    s = session()
    s.run()
    assert s.result.edited == ()
    context = s.messages[:3]
    edited = [*context[:2], Message("tool", "0.5", tool_call_id="r1", name="rate")]
    fixed = ScriptedModel(["not sending", "still not"], price=PRICE, max_output_tokens=50)
    fork = s.fork(1, messages=edited, complete=fixed, trace_path=tmp_path / "fork.jsonl")
    assert fork.result.edited == (2,)
    result = fork.run()
    assert result.edited == (2,)
    assert result.messages[2].content == "0.5"
    assert Result.from_dict(result.to_dict()).edited == (2,)
    assert load_trace(tmp_path / "fork.jsonl").edited == (2,)  # the journal keeps it
    assert s.fork(1).result.edited == ()  # a fork that changed nothing
    added = [*edited, Message("user", "and check twice")]
    assert s.fork(1, messages=added, complete=fixed).result.edited == (2, 3)
    # a fork of the fork keeps the mark on the message it did not change again
    again = fork.fork(1, messages=added, complete=fixed)
    assert again.result.edited == (2, 3)
    undone = fork.fork(1, messages=context, complete=fixed)
    assert undone.result.edited == (2,)  # put back as it was: still not the fork's context
    bad = result.to_dict() | {"edited": [2, 9]}
    with pytest.raises(ValueError, match=r"edited\[1\] must be an index below 4 and above"):
        Result.from_dict(bad)


def test_a_result_made_by_hand_with_edited_indexes_outside_its_messages_is_refused() -> None:
    said = [Message("user", "hi"), Message("assistant", "hello")]
    ok = Result(stop=None, answer=None, steps=(), messages=tuple(said), cost_usd=0.0, seconds=0.0,
                edited=(1,))  # fmt: skip
    assert ok.edited == (1,)
    for edited in [(2,), (-1,), (True,), [0]]:
        expected = (
            f"Result: edited must be a tuple of indexes of messages (0 to 1), got {edited!r}."
        )
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
            Result(stop=None, answer=None, steps=(), messages=tuple(said), cost_usd=0.0,
                   seconds=0.0, edited=edited)  # type: ignore[arg-type]  # fmt: skip
