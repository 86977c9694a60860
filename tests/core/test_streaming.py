"""A model that streams: its chunks put together as the completion it stands for, a reply cut
mid-way by the deadline or by a person, and a stream that breaks off."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Chunk,
    Completion,
    Message,
    Result,
    ScriptedModel,
    Session,
    Stop,
    ToolCall,
    Usage,
    arun,
    astart,
    first_divergence,
    replay,
    run,
    start,
    tool,
)
from budgetloop.ledger import MemoryLedger
from tests.conftest import PRICE, FakeClock
from tests.strategies import TOOL_NAMES, streamed_replies


@tool
def search(q: str) -> str:
    """Searches."""
    return f"found {q}"


def untimed(result: Result) -> Result:
    """The run with its timings taken out (a streamed step has its first chunk's)."""
    steps = tuple(replace(s, seconds=0.0, first_chunk_seconds=None) for s in result.steps)
    return replace(result, steps=steps, seconds=0.0, run_id="")


SCRIPT: list[Any] = [
    Completion(text="Let me look that up for you.",
               tool_calls=[ToolCall("search", '{"q": "the weather in Paris"}', "c1")]),
    Completion(tool_calls=[ToolCall("search", '{"q": "rain"}', "c2"),
                           ToolCall("search", '{"q":"sun"}', None)], finish_reason="tool_call"),
    Completion(text="It is sunny in Paris today.", usage=Usage(900, 12), model="m-1",
               response_id="r-9", finish_reason="stop"),
]  # fmt: skip


def both(**model: Any) -> tuple[Result, Result]:
    plain = run(ScriptedModel(SCRIPT, **model), "weather?", tools=[search], price=PRICE,
                clock=FakeClock())  # fmt: skip
    streamed = run(ScriptedModel(SCRIPT, stream=True, chunk_chars=3, **model), "weather?",
                   tools=[search], price=PRICE, clock=FakeClock())  # fmt: skip
    return plain, streamed


def test_a_streamed_run_is_the_unstreamed_run_apart_from_timings() -> None:
    plain, streamed = both()
    assert streamed.stop == Stop.ANSWERED
    assert len(streamed.steps) == 3
    assert untimed(streamed) == untimed(plain)
    assert untimed(streamed).to_dict() == untimed(plain).to_dict()
    assert [c.status for c in streamed.steps[1].tool_calls] == ["ok", "ok"]
    assert streamed.steps[2].finish_reason == "stop"
    assert streamed.steps[2].model == "m-1"
    assert all(s.first_chunk_seconds == 0.0 for s in streamed.steps)
    assert all(s.first_chunk_seconds is None for s in plain.steps)


def test_a_streamed_async_run_is_the_unstreamed_run() -> None:
    plain, _ = both()
    sync_model = ScriptedModel(SCRIPT, stream=True, chunk_chars=5)
    streamed = asyncio.run(
        arun(sync_model, "weather?", tools=[search], price=PRICE, clock=FakeClock())
    )
    assert untimed(streamed) == untimed(plain)

    async def chunks(completion: Completion) -> AsyncIterator[Chunk]:
        for chunk in ScriptedModel([completion], stream=True, chunk_chars=2)([], []):
            await asyncio.sleep(0)
            yield chunk

    played = ScriptedModel(SCRIPT)

    async def model(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        completion = played(messages, tools)
        assert isinstance(completion, Completion)
        return chunks(completion)

    streamed = asyncio.run(arun(model, "weather?", tools=[search], price=PRICE, clock=FakeClock()))
    assert untimed(streamed) == untimed(plain)


def test_a_final_answer_streams_as_it_is_given() -> None:
    script = [Completion(tool_calls=[ToolCall("search", '{"q": "x"}', "c1")]), "All done here."]
    results = [
        run(
            ScriptedModel(script, stream=s),
            "go",
            tools=[search],
            price=PRICE,
            budget=Budget(max_steps=2),
            finish=True,
            clock=FakeClock(),
        )
        for s in (False, True)
    ]
    assert results[1].steps[-1].final_answer
    assert results[1].answer == "All done here."
    assert untimed(results[1]) == untimed(results[0])


# -- a cut -------------------------------------------------------------------------------------


def test_the_deadline_cuts_a_slow_reply_mid_way_keeping_what_arrived() -> None:
    reply = Completion(text="abcdefghijklmnopqrstuvwxyz",
                       tool_calls=[ToolCall("search", {"q": "never"}, "c1")])  # fmt: skip
    model = ScriptedModel([reply], stream=True, chunk_chars=4, chunk_seconds=1.0)
    result = run(model, "go", tools=[search], price=PRICE, budget=Budget(max_seconds=2.5))
    assert result.stop == Stop.MAX_SECONDS
    (step,) = result.steps
    assert step.text == "abcdefghijkl"  # chunks at 0, 1 and 2 s; the next would be at 3 s
    assert step.finish_reason == "cut"
    assert step.usage is None
    assert step.error is None
    assert step.tool_calls == ()  # no piece of the call had arrived
    assert step.cost_usd == step.projection.cost_usd  # no usage: billed at its worst case
    assert result.cost_usd == step.cost_usd
    assert (
        result.detail == "max_seconds passed while the model's reply streamed: the reply was cut"
    )
    assert result.seconds < 3.5  # cut at the deadline: the whole reply takes 7 s
    assert 0 <= step.first_chunk_seconds < 0.9


def cut_at(chunks: list[Chunk], at: int, clock: FakeClock) -> Iterator[Chunk]:
    """``chunks``, the clock moved past the deadline (10 s) before chunk ``at``."""
    for i, chunk in enumerate(chunks):
        if i == at:
            clock.advance(11)
        yield chunk


def test_a_cut_reply_runs_none_of_its_calls_and_is_billed_its_final_usage() -> None:
    clock = FakeClock()
    chunks = [
        Chunk(text="I will search."),
        Chunk(index=0, id="c1", name="search", arguments='{"q": '),
        Chunk(index=0, arguments='"rain"}'),
        Chunk(usage=Usage(1000, 100), finish_reason="tool_call"),
        Chunk(model="late"),
    ]
    ran: list[str] = []

    @tool
    def watched(q: str) -> str:
        """Watched."""
        ran.append(q)
        return q

    result = run(lambda m, t: cut_at(chunks, 4, clock), "go", tools=[watched], price=PRICE,
                 budget=Budget(max_seconds=10), clock=clock)  # fmt: skip
    assert result.stop == Stop.MAX_SECONDS
    assert ran == []
    (step,) = result.steps
    assert step.text == "I will search."
    assert step.finish_reason == "cut"
    assert step.model is None
    (call,) = step.tool_calls
    assert (call.id, call.name, call.status) == ("c1", "search", "skipped")
    assert call.error == "the reply was cut (max_seconds) before it ended"
    assert step.usage == Usage(1000, 100)
    assert step.cost_usd == 0.0045  # its final usage, at the price: 1000 * $3 + 100 * $15 a Mtok
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]


def test_interrupt_from_another_thread_cuts_the_reply_streaming() -> None:
    model = ScriptedModel(["x" * 400], stream=True, chunk_chars=1, chunk_seconds=0.01)
    session = start(model, "go", price=PRICE)
    timer = threading.Timer(0.2, session.interrupt)
    timer.start()
    result = session.run()
    timer.join()
    assert result.stop == Stop.INTERRUPTED
    (step,) = result.steps
    assert step.finish_reason == "cut"
    assert 0 < len(step.text or "") < 400
    assert step.cost_usd == step.projection.cost_usd  # the usage chunk never came
    assert result.detail == (
        "the run was interrupted while the model's reply streamed: the reply was cut"
    )


def test_interrupt_with_a_deadline_and_under_arun() -> None:
    model = ScriptedModel(["y" * 400], stream=True, chunk_chars=1, chunk_seconds=0.01)
    session = start(model, "go", price=PRICE, budget=Budget(max_seconds=60))
    threading.Timer(0.2, session.interrupt).start()
    result = session.run()
    assert result.stop == Stop.INTERRUPTED
    assert 0 < len(result.steps[0].text or "") < 400

    from budgetloop import astart

    async def main() -> Result:
        model = ScriptedModel(["z" * 400], stream=True, chunk_chars=1, chunk_seconds=0.01)
        session = astart(model, "go", price=PRICE)
        threading.Timer(0.2, session.interrupt).start()
        return await session.run()

    result = asyncio.run(main())
    assert result.stop == Stop.INTERRUPTED
    assert 0 < len(result.steps[0].text or "") < 400


def test_interrupt_with_no_reply_streaming_stops_before_the_next_call() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", {"q": "x"}, "c1")]), "ok"])
    session = start(model, "go", tools=[search], price=PRICE)
    session.interrupt()
    result = session.run()
    assert result.stop == Stop.INTERRUPTED
    assert result.steps == ()
    assert model.calls == 0
    assert result.detail == "interrupted before the next model call"


def test_interrupt_cuts_a_reply_that_stalls_when_the_run_waits_on_it() -> None:
    # a provider that sends a piece and then nothing: a person's Stop cuts it at once wherever
    # the run waits on the reply from another thread (a deadline's, or under arun)
    release = threading.Event()

    def stalls(messages: list[Message], tools: list[dict[str, Any]]) -> Iterator[Chunk]:
        yield Chunk(text="Thinking")
        release.wait(30)
        yield Chunk(text=" more")

    async def astalls(
        messages: list[Message], tools: list[dict[str, Any]]
    ) -> AsyncIterator[Chunk]:
        yield Chunk(text="Thinking")
        await asyncio.sleep(30)

    def interrupted(session: Any) -> Result:
        threading.Timer(0.2, session.interrupt).start()
        began = time.monotonic()
        result = session.run() if isinstance(session, Session) else asyncio.run(session.run())
        assert time.monotonic() - began < 5
        return result

    async def arun_it(model: Any) -> Result:
        session = astart(model, "go", price=PRICE)
        threading.Timer(0.2, session.interrupt).start()
        return await session.run()

    try:
        results = [interrupted(start(stalls, "go", price=PRICE, budget=Budget(max_seconds=60)))]
        for model in (stalls, astalls):
            began = time.monotonic()
            results.append(asyncio.run(arun_it(model)))
            assert time.monotonic() - began < 5
    finally:
        release.set()
    for result in results:
        assert result.stop == Stop.INTERRUPTED
        (step,) = result.steps
        assert (step.text, step.finish_reason) == ("Thinking", "cut")
        assert result.detail == (
            "the run was interrupted while the model's reply streamed: the reply was cut"
        )


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("max_seconds", [None, 60.0])
def test_interrupt_when_the_turn_has_started_sends_no_model_call(
    stream: bool, max_seconds: float | None
) -> None:
    model = ScriptedModel(["hello there"], stream=stream)
    ledger = MemoryLedger(limit_usd=10.0)
    sessions: list[Any] = []

    def on_event(event: Any) -> None:
        if type(event).__name__ == "TurnStarted":  # the turn began; its call is not sent yet
            sessions[0].interrupt()

    session = start(model, "go", price=PRICE, on_event=on_event, ledger=ledger,
                    max_output_tokens=100, budget=Budget(max_seconds=max_seconds))  # fmt: skip
    sessions.append(session)
    result = session.run()
    assert result.stop == Stop.INTERRUPTED
    assert result.detail == "interrupted before the next model call"
    assert model.calls == 0
    assert result.steps == ()
    assert result.cost_usd == ledger.spent_usd() == ledger.reserved_usd() == 0

    async def main() -> Result:
        from budgetloop import astart

        session = astart(ScriptedModel(["hi"], stream=stream), "go", on_event=on_event)
        sessions[0] = session
        return await session.run()

    result = asyncio.run(main())
    assert (result.stop, result.steps, result.cost_usd) == (Stop.INTERRUPTED, (), 0.0)


# -- a stream that breaks off, or is not one ---------------------------------------------------


def test_a_stream_that_breaks_off_ends_the_run_with_its_text_kept() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Iterator[Chunk]:
        yield Chunk(text="Half a ")
        yield Chunk(text="reply")
        raise ConnectionError("the connection dropped")

    result = run(model, "go", price=PRICE)
    assert result.stop == Stop.MODEL_ERROR
    assert result.error == "ConnectionError: the connection dropped"
    (step,) = result.steps
    assert step.text == "Half a reply"
    assert step.usage is None
    assert step.cost_usd == step.projection.cost_usd == result.cost_usd


def test_a_stream_that_breaks_off_after_its_usage_is_billed_that_usage() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Iterator[Chunk]:
        yield Chunk(text="Whole", usage=Usage(1000, 100))
        raise ConnectionError("closed")

    result = run(model, "go", price=PRICE)
    assert result.stop == Stop.MODEL_ERROR
    assert result.steps[0].cost_usd == 0.0045


def test_a_stream_item_that_is_not_a_chunk_is_a_model_error_naming_it() -> None:
    result = run(lambda m, t: iter([Chunk(text="a"), 7]), "go", price=PRICE)
    assert result.stop == Stop.MODEL_ERROR
    assert result.error == "TypeError: the model's stream: item 2 must be a Chunk, got int."
    assert result.steps[0].text == "a"
    assert run(lambda m, t: 7, "go").error == (
        "TypeError: the model returned int, expected a Completion(text=..., tool_calls=[...])"
    )


def test_a_shared_ledger_settles_what_a_cut_reply_was_billed() -> None:
    clock = FakeClock()
    ledger = MemoryLedger(limit_usd=10.0)
    chunks = [Chunk(text="abc"), Chunk(text="def")]
    result = run(lambda m, t: cut_at(chunks, 1, clock), "go", price=PRICE, ledger=ledger,
                 max_output_tokens=100, budget=Budget(max_seconds=10), clock=clock)  # fmt: skip
    assert result.stop == Stop.MAX_SECONDS
    assert result.steps[0].text == "abc"
    assert ledger.spent_usd() == result.cost_usd == result.steps[0].projection.cost_usd
    assert ledger.reserved_usd() == 0


# -- a cut run replayed ------------------------------------------------------------------------


def cut_run(stop: Stop, usage: Usage | None) -> Result:
    """A streamed run whose second reply is cut mid-call (by the deadline or a person)."""
    clock = FakeClock()
    sessions: list[Any] = []
    second = [Chunk(text="Now the "), Chunk(index=0, id="c2", name="search", arguments='{"q": "s'),
              Chunk(usage=usage), Chunk(index=0, arguments='un"}'), Chunk(text="!")]  # fmt: skip

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Iterator[Chunk]:
        if len(messages) == 1:
            yield Chunk(index=0, id="c1", name="search", arguments='{"q": "rain"}')
            yield Chunk(usage=Usage(900, 12), finish_reason="tool_calls")
            return
        for i, chunk in enumerate(second):
            if i == 3:
                clock.advance(11)
                if stop is Stop.INTERRUPTED:
                    sessions[0].interrupt()
            yield chunk

    budget = Budget(max_seconds=10 if stop is Stop.MAX_SECONDS else None)
    session = start(model, "weather?", tools=[search], price=PRICE, clock=clock, budget=budget)
    sessions.append(session)
    return session.run()


@pytest.mark.parametrize("stop", [Stop.MAX_SECONDS, Stop.INTERRUPTED])
@pytest.mark.parametrize("usage", [None, Usage(1000, 100)])
def test_a_cut_run_replays_as_it_ran(stop: Stop, usage: Usage | None) -> None:
    result = cut_run(stop, usage)
    assert result.stop == stop
    assert [s.finish_reason for s in result.steps] == ["tool_calls", "cut"]
    cut = result.steps[1]
    assert (cut.text, cut.usage) == ("Now the ", usage)
    assert cut.tool_calls[0].raw_arguments == '{"q": "s'
    for trace in (result, result.to_dict()):
        again = replay(trace)
        assert first_divergence(result, again) is None
        assert (again.stop, again.detail) == (result.stop, result.detail)
        assert again.cost_usd == result.cost_usd
        assert [s.cost_usd for s in again.steps] == [s.cost_usd for s in result.steps]
        assert untimed(again).steps == untimed(result).steps
        assert untimed(again).messages == untimed(result).messages


def test_a_reply_cut_by_the_deadline_replayed_with_more_time_goes_past_the_recording() -> None:
    result = cut_run(Stop.MAX_SECONDS, None)
    again = replay(result, budget=Budget(max_seconds=60))
    assert again.stop is None
    assert again.detail == (
        "replay: the run goes on past the 2 recorded steps, and what the model said next was "
        "never recorded"
    )
    assert again.steps[1].text == "Now the "
    assert again.steps[1].tool_calls[0].status == "error"  # its arguments had not all come


# -- ScriptedModel(stream=True) ----------------------------------------------------------------


def test_scripted_model_streams_in_pieces_of_chunk_chars() -> None:
    model = ScriptedModel(
        [Completion(text="abcdefg", tool_calls=[ToolCall("f", '{"a":1}', "i")],
                    usage=Usage(5, 3), finish_reason="stop")],
        stream=True, chunk_chars=3,
    )  # fmt: skip
    chunks = list(model([], []))
    assert chunks == [
        Chunk(text="abc"), Chunk(text="def"), Chunk(text="g"),
        Chunk(index=0, id="i", name="f", arguments='{"a'), Chunk(index=0, arguments='":1'),
        Chunk(index=0, arguments="}"), Chunk(usage=Usage(5, 3), finish_reason="stop"),
    ]  # fmt: skip
    slow = ScriptedModel(["abcd"], stream=True, chunk_chars=2, chunk_seconds=0.05)
    began = time.monotonic()
    assert len(list(slow([], []))) == 3
    assert time.monotonic() - began >= 0.1


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"stream": 1}, TypeError, "ScriptedModel: stream must be a bool, got int."),
        ({"chunk_chars": 0}, ValueError, "ScriptedModel: chunk_chars must be an int >= 1, got 0."),
        ({"chunk_chars": 2.0}, TypeError,
         "ScriptedModel: chunk_chars must be an int >= 1, got float."),
        ({"chunk_seconds": -1}, ValueError,
         "ScriptedModel: chunk_seconds must be >= 0 seconds, got -1."),
        ({"chunk_seconds": "1"}, TypeError,
         "ScriptedModel: chunk_seconds must be a number of seconds, got str."),
    ],
)  # fmt: skip
def test_scripted_model_refuses_bad_stream_options(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        ScriptedModel(["a"], **kwargs)
    assert str(raised.value) == message


# -- time to first chunk -----------------------------------------------------------------------


def slow_first(clock: FakeClock) -> Any:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Iterator[Chunk]:
        clock.advance(0.25)
        yield Chunk(text="Hi")
        clock.advance(1.0)
        yield Chunk(text=" there", usage=Usage(100, 5), finish_reason="stop")

    return model


def test_a_streamed_step_keeps_its_first_chunk_seconds_in_every_form(tmp_path: Any) -> None:
    from budgetloop import load_trace
    from budgetloop._trace._html import render
    from budgetloop.display import step_head

    clock = FakeClock()
    path = tmp_path / "run.jsonl"
    result = run(slow_first(clock), "go", price=PRICE, clock=clock, trace_path=str(path))
    (step,) = result.steps
    assert (step.text, step.seconds, step.first_chunk_seconds) == ("Hi there", 1.25, 0.25)
    assert step.to_dict()["first_chunk_seconds"] == 0.25
    assert "first_chunk_seconds" not in run(ScriptedModel(["a"]), "go").steps[0].to_dict()
    assert load_trace(str(path)).steps[0].first_chunk_seconds == 0.25  # the journal
    saved = tmp_path / "run.json"
    result.save(str(saved))
    assert load_trace(str(saved)).steps[0].first_chunk_seconds == 0.25  # format v2
    assert type(result).from_dict(result.to_dict()) == result
    assert step_head(step).endswith("1.250 s (first chunk 0.250 s)")
    assert "1.250 s (first chunk 0.250 s)</summary>" in render(result)


# -- properties --------------------------------------------------------------------------------


def echo(q: str) -> str:
    """Says q back."""
    return f"echo {q}"


TOOLS = [tool(echo, name=name) for name in TOOL_NAMES]


def replying() -> dict[str, Any]:
    return {"tools": TOOLS, "price": PRICE, "max_output_tokens": 50, "clock": FakeClock()}


@given(streamed_replies())
def test_any_chunking_of_any_reply_gives_the_unstreamed_trace(
    reply: tuple[Completion, list[Chunk]],
) -> None:
    completion, chunks = reply
    plain = run(ScriptedModel([completion, "done"]), "go", **replying())
    streamed_script: list[Any] = [lambda m, t: iter(chunks), "done"]
    streamed = run(ScriptedModel(streamed_script), "go", **replying())
    assert untimed(streamed) == untimed(plain)


@given(streamed_replies(), st.integers(0, 20))
def test_a_cut_at_any_chunk_bills_at_least_what_the_provider_reported(
    reply: tuple[Completion, list[Chunk]], at: int
) -> None:
    completion, chunks = reply
    clock = FakeClock()
    ledger = MemoryLedger(limit_usd=1.0)
    result = run(lambda m, t: cut_at(chunks, at, clock), "go", price=PRICE, ledger=ledger,
                 max_output_tokens=50, budget=Budget(max_seconds=10), clock=clock)  # fmt: skip
    step = result.steps[0]  # (not cut, its calls run and the reply plays again)
    assert completion.usage is not None
    assert step.cost_usd is not None
    assert step.cost_usd >= PRICE.usage_cost(completion.usage)
    assert ledger.spent_usd() == result.cost_usd
    if at < len(chunks):  # cut: what arrived is kept, none of its calls ran
        assert result.stop == Stop.MAX_SECONDS
        assert len(result.steps) == 1
        assert step.finish_reason == "cut"
        assert all(c.status == "skipped" for c in step.tool_calls)
        assert (completion.text or "").startswith(step.text or "")


def test_the_clock_a_live_view_shows_says_the_seconds_against_max_seconds() -> None:
    from budgetloop.display import clock_text

    assert clock_text(3.25, Budget(max_seconds=60)) == "3.2 s of max_seconds 60 s"
    assert clock_text(0.0, Budget(max_seconds=0.5)) == "0.0 s of max_seconds 0.5 s"
    assert clock_text(12.0, Budget()) == "12.0 s"
