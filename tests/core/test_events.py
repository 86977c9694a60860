"""``on_event=fn``: the run's events, in order, for a model that does not stream: exact
sequences for each way a turn goes, the same under ``arun`` with an ``async def`` fn, an fn that
raises (kept, never stopping the run), and ``redact=`` keeping every secret out of every event."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Chunk,
    Completion,
    Price,
    ScriptedModel,
    ToolCall,
    Usage,
    arun,
    astart,
    load_trace,
    resume,
    run,
    start,
    tool,
)
from budgetloop.events import (
    Event,
    RunEnded,
    StepEnded,
    TextDelta,
    ToolCallDelta,
    ToolEnded,
    ToolStarted,
    TurnStarted,
)
from tests.conftest import FakeClock
from tests.core.test_redact import forms, masking
from tests.core.test_redact_properties import text_secrets

PRICE = Price(1.0, 2.0)


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def two_calls(**streamed: Any) -> ScriptedModel:
    return ScriptedModel([
        Completion("adding", [ToolCall("add", {"a": 1, "b": 2}, "c1"),
                              ToolCall("add", '{"a": 3, "b": 4}', "c2")]),
        Completion("3 and 7"),
    ], **streamed)  # fmt: skip


def test_a_text_answer_gives_its_turn_its_text_its_step_and_the_end() -> None:
    events: list[Event] = []
    result = run(ScriptedModel(["hello"]), "hi", on_event=events.append)
    (step,) = result.steps
    assert events == [
        TurnStarted(0, step.projection),
        TextDelta(0, "hello"),
        StepEnded(step),
        RunEnded(result),
    ]


def tool_turn_events(result: Any) -> list[Event]:
    first, second = result.steps
    c1, c2 = first.tool_calls
    return [
        TurnStarted(0, first.projection),
        TextDelta(0, "adding"),
        ToolCallDelta(0, 0, "add", '{"a": 1, "b": 2}'),  # a dict's arguments as JSON
        ToolCallDelta(0, 1, "add", '{"a": 3, "b": 4}'),  # a string's as the model sent it
        ToolStarted(0, "c1", "add"),
        ToolStarted(0, "c2", "add"),
        ToolEnded(0, c1),
        ToolEnded(0, c2),
        StepEnded(first),
        TurnStarted(1, second.projection),
        TextDelta(1, "3 and 7"),
        StepEnded(second),
        RunEnded(result),
    ]


def test_a_tool_turn_of_two_parallel_calls_starts_both_then_ends_each_in_request_order() -> None:
    events: list[Event] = []
    result = run(two_calls(), "add", tools=[add], on_event=events.append)
    assert [c.result for c in result.steps[0].tool_calls] == ["3", "7"]
    assert events == tool_turn_events(result)


def test_under_arun_an_async_fn_is_awaited_in_the_same_order() -> None:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        await asyncio.sleep(0)
        events.append(event)

    result = asyncio.run(arun(two_calls(), "add", tools=[add], on_event=on_event))
    assert events == tool_turn_events(result)


def test_an_async_fn_under_run_is_run_too() -> None:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    result = run(two_calls(), "add", tools=[add], on_event=on_event)
    assert events == tool_turn_events(result)
    assert result.event_errors == ()


def test_a_final_answer_at_max_steps_is_a_turn_without_tool_events() -> None:
    events: list[Event] = []
    model = ScriptedModel([Completion("", [ToolCall("add", {"a": 1, "b": 1}, "c1")]), "two"])
    result = run(model, "add", tools=[add], budget=Budget(max_steps=2), finish=True,
                 on_event=events.append)  # fmt: skip
    assert str(result.stop) == "max_steps"
    first, last = result.steps
    assert last.final_answer
    assert events == [
        TurnStarted(0, first.projection),
        ToolCallDelta(0, 0, "add", '{"a": 1, "b": 1}'),  # no text: no TextDelta
        ToolStarted(0, "c1", "add"),
        ToolEnded(0, first.tool_calls[0]),
        StepEnded(first),
        TurnStarted(1, last.projection),
        TextDelta(1, "two"),
        StepEnded(last),
        RunEnded(result),
    ]


def test_a_failed_model_call_gives_its_turn_and_its_step_but_no_delta() -> None:
    def broken(messages: Any, tools: Any) -> Completion:
        raise ConnectionError("the provider is down")

    events: list[Event] = []
    result = run(broken, "hi", on_event=events.append)
    (step,) = result.steps
    assert str(result.stop) == "model_error"
    assert step.error == "ConnectionError: the provider is down"
    assert events == [TurnStarted(0, step.projection), StepEnded(step), RunEnded(result)]


def test_a_run_a_ceiling_stops_before_any_call_gives_only_its_end() -> None:
    events: list[Event] = []
    result = run(ScriptedModel(["never"]), "hi", price=PRICE, max_output_tokens=1000,
                 budget=Budget(max_cost_usd=1e-9), on_event=events.append)  # fmt: skip
    assert str(result.stop) == "max_cost_usd"
    assert result.steps == ()
    assert events == [RunEnded(result)]


def paid(ran: list[str]) -> Any:
    @tool(needs_approval=lambda args: args["amount"] > 1000)
    def transfer(to: str, amount: float) -> str:
        """Send money."""
        ran.append(to)
        return f"sent {amount:g} to {to}"

    return transfer


def paying() -> ScriptedModel:
    return ScriptedModel([
        Completion("paying", [ToolCall("transfer", {"to": "ann", "amount": 50}, "c1"),
                              ToolCall("transfer", {"to": "bob", "amount": 9000}, "c2")]),
        "paid",
    ])  # fmt: skip


def test_a_denied_call_neither_starts_nor_ends_and_its_record_is_in_the_step() -> None:
    ran: list[str] = []
    events: list[Event] = []
    result = run(paying(), "pay", tools=[paid(ran)], approve=lambda call: False,
                 on_event=events.append)  # fmt: skip
    first, second = result.steps
    assert ran == ["ann"]
    assert [c.status for c in first.tool_calls] == ["ok", "denied"]
    assert events == [
        TurnStarted(0, first.projection),
        TextDelta(0, "paying"),
        ToolCallDelta(0, 0, "transfer", '{"to": "ann", "amount": 50}'),
        ToolCallDelta(0, 1, "transfer", '{"to": "bob", "amount": 9000}'),
        ToolStarted(0, "c1", "transfer"),
        ToolEnded(0, first.tool_calls[0]),
        StepEnded(first),
        TurnStarted(1, second.projection),
        TextDelta(1, "paid"),
        StepEnded(second),
        RunEnded(result),
    ]


def test_a_held_run_ends_after_its_reply_and_its_resume_runs_the_batch(tmp_path: Path) -> None:
    ran: list[str] = []
    events: list[Event] = []
    path = tmp_path / "run.jsonl"
    held = run(paying(), "pay", tools=[paid(ran)], approve="hold", trace_path=path,
               on_event=events.append)  # fmt: skip
    assert str(held.stop) == "held"
    assert held.held is not None
    assert events == [
        TurnStarted(0, held.held.step.projection),
        TextDelta(0, "paying"),
        ToolCallDelta(0, 0, "transfer", '{"to": "ann", "amount": 50}'),
        ToolCallDelta(0, 1, "transfer", '{"to": "bob", "amount": 9000}'),
        RunEnded(held),  # no call ran, no step was recorded
    ]
    later: list[Event] = []
    session = resume(path, ScriptedModel(["paid"]), tools=[paid(ran)], decisions={"c2": True},
                     on_event=later.append)  # fmt: skip
    result = session.run()
    first = result.steps[0]
    assert ran == ["ann", "bob"]
    assert later[:4] == [
        ToolStarted(0, "c1", "transfer"),
        ToolStarted(0, "c2", "transfer"),
        ToolEnded(0, first.tool_calls[0]),
        ToolEnded(0, first.tool_calls[1]),
    ]
    assert later[4] == StepEnded(first)
    assert later[-1] == RunEnded(result)


def test_an_fn_that_raises_is_kept_in_the_trace_and_the_run_goes_on(tmp_path: Path) -> None:
    seen: list[str] = []

    def on_event(event: Event) -> None:
        seen.append(type(event).__name__)
        if isinstance(event, (TextDelta, ToolEnded)):
            raise ValueError(f"cannot show {type(event).__name__}")

    path = tmp_path / "run.jsonl"
    result = run(two_calls(), "add", tools=[add], on_event=on_event, trace_path=path,
                 clock=FakeClock())  # fmt: skip
    plain = run(two_calls(), "add", tools=[add], clock=FakeClock())
    assert seen == [type(e).__name__ for e in tool_turn_events(result)]  # every event, still
    assert result.event_errors == (
        "TextDelta: ValueError: cannot show TextDelta",
        "ToolEnded: ValueError: cannot show ToolEnded",
        "ToolEnded: ValueError: cannot show ToolEnded",
        "TextDelta: ValueError: cannot show TextDelta",
    )
    kept = json.loads(json.dumps(result.to_dict()))
    assert kept["event_errors"] == list(result.event_errors)
    assert type(result).from_dict(kept) == result
    assert load_trace(path).event_errors == result.event_errors  # the journal's end line
    assert "event_errors" not in plain.to_dict()
    assert replace(result, event_errors=()) == plain  # the same run as without on_event


def test_on_event_must_be_a_function() -> None:
    with pytest.raises(TypeError) as caught:
        run(ScriptedModel(["never"]), "hi", on_event="print")  # type: ignore[arg-type]
    assert str(caught.value) == "run: on_event must be a function or None, got str."


def test_a_keyboard_interrupt_in_fn_before_a_model_call_sends_nothing() -> None:
    asked: list[Any] = []

    def model(messages: Any, tools: Any) -> Completion:
        asked.append(messages)
        return Completion("never")

    def on_event(event: Event) -> None:
        raise KeyboardInterrupt

    session = start(model, "hi", on_event=on_event)
    with pytest.raises(KeyboardInterrupt):
        session.run()
    assert asked == []
    assert session.steps == ()
    assert session.result.cost_usd == 0.0


def test_a_keyboard_interrupt_in_fn_before_a_batch_skips_it_and_records_the_step() -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Notes it."""
        ran.append(text)
        return "noted"

    def on_event(event: Event) -> None:
        if isinstance(event, ToolStarted):
            raise KeyboardInterrupt

    model = ScriptedModel([Completion("", [ToolCall("note", {"text": "x"}, "c1")]), "done"])
    session = start(model, "hi", tools=[note], on_event=on_event)
    with pytest.raises(KeyboardInterrupt):
        session.run()
    assert ran == []
    (step,) = session.steps
    (call,) = step.tool_calls
    assert call.status == "skipped"
    assert call.error == (
        "not started: the run was interrupted (KeyboardInterrupt) in on_event before the batch "
        "started"
    )


# -- redact=: no secret reaches an event, whole or in pieces ----------------------------------

SECRET = "sk-live-7Hq2ZxSECRET9"


def secret_run(secret: str, events: list[Event], *, stream: bool = False) -> Any:
    @tool
    def login(key: str) -> str:
        """Logs in."""
        return f"session for {key}: ok"

    model = ScriptedModel([
        Completion(f"I will use {secret}", [ToolCall("login", {"key": secret}, "c1"),
                                            ToolCall("login", json.dumps({"key": secret}), "c2")]),
        f"done with {secret}",
    ], stream=stream, chunk_chars=3)  # fmt: skip
    return run(model, "go", tools=[login], redact=masking(secret), clock=FakeClock(),
               on_event=events.append)  # fmt: skip


def test_redact_keeps_a_secret_out_of_text_arguments_and_results() -> None:
    events: list[Event] = []
    result = secret_run(SECRET, events)
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I will use [redacted]", "done with [redacted]"]
    arguments = [e.arguments for e in events if isinstance(e, ToolCallDelta)]
    assert arguments == ['{"key": "[redacted]"}', '{"key": "[redacted]"}']
    ended = [e.record for e in events if isinstance(e, ToolEnded)]
    assert ended == list(result.steps[0].tool_calls)
    assert [r.result for r in ended] == ["session for [redacted]: ok"] * 2
    for form in forms(SECRET):
        assert form not in repr(events)


def test_with_redact_the_emitter_holds_pieces_until_the_reply_is_whole() -> None:
    from budgetloop._engine._events import Emitter
    from budgetloop._forms._redact import Redactor

    out: list[Event] = []
    emitter = Emitter(out.append, Redactor(masking(SECRET)))
    half = len(SECRET) // 2
    emitter.text(0, f"key {SECRET[:half]}")
    emitter.text(0, f"{SECRET[half:]} used")
    emitter.call(0, 0, "login", '{"key": "' + SECRET[:half])
    emitter.call(0, 0, None, SECRET[half:] + '"}')
    assert not emitter.flush()
    assert out == []  # nothing handed out before the reply is whole
    emitter.whole(0)
    emitter.flush()
    assert out == [TextDelta(0, "key [redacted] used"),
                   ToolCallDelta(0, 0, "login", '{"key": "[redacted]"}')]  # fmt: skip


@settings(max_examples=25, deadline=None)
@given(secret=text_secrets, stream=st.booleans())
def test_no_event_holds_a_secret(secret: str, stream: bool) -> None:
    events: list[Event] = []
    secret_run(secret, events, stream=stream)
    shown = repr(events)
    for form in forms(secret):
        assert form not in shown


def test_with_a_deadline_the_events_are_the_same() -> None:
    events: list[Event] = []
    result = run(two_calls(), "add", tools=[add], budget=Budget(max_seconds=60),
                 on_event=events.append)  # fmt: skip
    assert events == tool_turn_events(result)


# -- a streamed reply: its pieces as they arrive -----------------------------------------------


def test_a_streamed_reply_gives_its_pieces_in_order_each_call_named() -> None:
    events: list[Event] = []
    result = run(two_calls(stream=True, chunk_chars=4), "add", tools=[add], on_event=events.append)
    texts = [e for e in events if isinstance(e, TextDelta)]
    assert [e.text for e in texts if e.step == 0] == ["addi", "ng"]
    assert "".join(e.text for e in texts if e.step == 1) == "3 and 7"
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert {(e.index, e.name) for e in pieces} == {(0, "add"), (1, "add")}  # later pieces named
    for index, sent in enumerate(['{"a": 1, "b": 2}', '{"a": 3, "b": 4}']):
        assert "".join(e.arguments for e in pieces if e.index == index) == sent
    # the rest is the unstreamed run's sequence
    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta | ToolCallDelta)]
    assert kinds == ["TurnStarted", "ToolStarted", "ToolStarted", "ToolEnded", "ToolEnded",
                     "StepEnded", "TurnStarted", "StepEnded", "RunEnded"]  # fmt: skip
    assert [c.result for c in result.steps[0].tool_calls] == ["3", "7"]


def test_a_plain_fn_sees_a_streamed_reply_while_it_is_still_arriving() -> None:
    sent: list[int] = []  # how many chunks the model had yielded when each delta reached fn

    def model(messages: Any, tools: Any) -> Any:
        def chunks() -> Any:
            for n, piece in enumerate(["one ", "two ", "three"], start=1):
                sent.append(n)
                yield Chunk(piece)
            yield Chunk(usage=Usage(3, 3), finish_reason="stop")

        return chunks()

    seen: list[tuple[str, int]] = []

    def on_event(event: Event) -> None:
        if isinstance(event, TextDelta):
            seen.append((event.text, len(sent)))

    result = run(model, "go", on_event=on_event)
    assert result.answer == "one two three"
    assert seen == [("one ", 1), ("two ", 2), ("three", 3)]


def test_with_redact_a_streamed_secret_split_over_chunks_reaches_no_event() -> None:
    events: list[Event] = []
    result = secret_run(SECRET, events, stream=True)  # 3-character chunks split the secret
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I will use [redacted]", "done with [redacted]"]
    arguments = [e.arguments for e in events if isinstance(e, ToolCallDelta)]
    assert arguments == ['{"key": "[redacted]"}', '{"key": "[redacted]"}']
    assert result.answer == "done with [redacted]"
    for form in forms(SECRET):
        assert form not in repr(events)


# -- session.on_event(listener): a view listening to a session it did not start -------------------


def test_a_listener_added_to_a_session_hears_every_event_in_order() -> None:
    heard: list[Event] = []
    session = start(two_calls(), "add", tools=[add], clock=FakeClock())
    session.on_event(heard.append)
    result = session.run()
    assert heard == tool_turn_events(result)
    assert result.event_errors == ()
    assert replace(result, event_errors=()) == run(two_calls(), "add", tools=[add],
                                                   clock=FakeClock())  # fmt: skip


def test_listeners_follow_the_runs_own_fn_in_order_and_removed_ones_hear_no_more() -> None:
    heard: list[str] = []

    def hears(name: str) -> Any:
        return lambda event: heard.append(f"{name} {type(event).__name__}")

    session = start(two_calls(), "add", tools=[add], on_event=hears("fn"))
    session.on_event(hears("first"))
    remove = session.on_event(hears("second"))
    session.step()
    remove()
    remove()  # twice: nothing more
    session.run()
    assert heard[:3] == ["fn TurnStarted", "first TurnStarted", "second TurnStarted"]
    assert heard.count("second StepEnded") == 1  # the first step's only
    assert heard.count("first StepEnded") == heard.count("fn StepEnded") == 2
    assert heard[-2:] == ["fn RunEnded", "first RunEnded"]


def test_a_listener_that_raises_is_kept_and_the_next_one_still_hears() -> None:
    heard: list[Event] = []

    def broken(event: Event) -> None:
        if isinstance(event, TextDelta):
            raise ValueError("cannot draw")

    session = start(two_calls(), "add", tools=[add], clock=FakeClock())
    session.on_event(broken)
    session.on_event(heard.append)
    result = session.run()
    assert heard == tool_turn_events(result)
    assert result.event_errors == (
        "TextDelta: ValueError: cannot draw",
        "TextDelta: ValueError: cannot draw",
    )


def test_a_listener_hears_a_streamed_reply_as_it_arrives_and_redacted() -> None:
    texts: list[str] = []
    model = ScriptedModel(["the key is sk-123 here"], stream=True, chunk_chars=2)
    session = start(model, "go", redact=lambda text: text.replace("sk-123", "[redacted]"))
    session.on_event(lambda e: texts.append(e.text) if isinstance(e, TextDelta) else None)
    assert session.run().answer == "the key is [redacted] here"
    assert texts == ["the key is [redacted] here"]  # held until whole, as for fn
    plain: list[str] = []
    session = start(ScriptedModel(["abcdef"], stream=True, chunk_chars=2), "go")
    session.on_event(lambda e: plain.append(e.text) if isinstance(e, TextDelta) else None)
    session.run()
    assert plain == ["ab", "cd", "ef"]


def test_an_async_session_awaits_an_async_listener() -> None:
    heard: list[str] = []

    async def listener(event: Event) -> None:
        await asyncio.sleep(0)
        heard.append(type(event).__name__)

    async def main() -> Any:
        session = astart(ScriptedModel(["hi"]), "go")
        session.on_event(listener)
        return await session.run()

    result = asyncio.run(main())
    assert result.answer == "hi"
    assert heard == ["TurnStarted", "TextDelta", "StepEnded", "RunEnded"]


def test_session_on_event_must_be_given_a_function() -> None:
    session = start(ScriptedModel(["hi"]), "go")
    with pytest.raises(TypeError) as caught:
        session.on_event("print")  # type: ignore[arg-type]
    assert str(caught.value) == ("Session.on_event: listener must be a function (event), got str.")
