"""ScriptedModel: plays back, records, and counts usage that grows with the context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Completion,
    Message,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    Usage,
    estimate_tokens,
    run,
    tool,
)


def test_plays_back_and_records_requests() -> None:
    model = ScriptedModel(["one", Completion(text="two", usage=Usage(5, 6))])
    first = model([Message("user", "hi")], [])
    second = model([Message("user", "hi"), Message("assistant", "one")], [{"name": "t"}])
    assert (first.text, second.text) == ("one", "two")
    assert second.usage == Usage(5, 6)
    assert model.calls == 2
    assert model.requests[1].tools == ({"name": "t"},)
    with pytest.raises(IndexError) as caught:
        model([], [])
    assert str(caught.value) == (
        "ScriptedModel: each call must be one of the script's 2 entries, got call 3; add entries "
        "or pass repeat_last=True."
    )


def test_counted_usage_grows_with_the_context() -> None:
    model = ScriptedModel(["a"], repeat_last=True, max_output_tokens=1)
    short = [Message("user", "hi")]
    long = [*short, Message("tool", "x" * 3000, tool_call_id="c")]
    u1 = model(short, []).usage
    u2 = model(long, []).usage
    assert u1 is not None
    assert u2 is not None
    assert u1.input_tokens == estimate_tokens(short)
    assert u2.input_tokens == estimate_tokens(long) == u1.input_tokens + 1000 + 4 + 1
    assert u1.output_tokens == 1  # capped at max_output_tokens


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.text(max_size=40)), max_size=12))
def test_default_usage_is_the_estimate_of_each_whole_request(
    moves: list[tuple[bool, int, str]],
) -> None:
    # each request grows the last one (counted from where it ended) or starts elsewhere (a
    # fork, an edited message, another session): the count is the whole request's, every time
    model = ScriptedModel(["a"], repeat_last=True)
    tools = [{"name": "t", "description": "d", "parameters": {"type": "object"}}]
    messages: list[Message] = [Message("user", "go")]
    sent: list[tuple[Message, ...]] = []
    for grow, drop, text in moves:
        if grow:
            messages = [
                *messages,
                Message("assistant", text),
                Message("tool", text * 3, tool_call_id="c"),
            ]
        else:  # a request that does not begin with the last one
            messages = [*messages[: max(len(messages) - drop, 1)], Message("user", f"{text}!")]
        usage = model(messages, tools).usage
        assert usage is not None
        assert usage.input_tokens == estimate_tokens(messages, tools)
        sent.append(tuple(messages))
    # each request is recorded as it was sent, though they share what they have in common
    assert [r.messages for r in model.requests] == sent
    for request, messages_sent in zip(model.requests, sent, strict=True):
        assert tuple(request.messages) == messages_sent
        assert list(reversed(request.messages)) == list(reversed(messages_sent))
        assert [request.messages[i] for i in range(-len(messages_sent), 0)] == list(messages_sent)
        assert request.messages[1:-1] == messages_sent[1:-1]


@settings(deadline=None, max_examples=100)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.lists(st.integers(0, 5), max_size=4)),
        min_size=1,
        max_size=10,
    )
)
def test_requests_are_recorded_as_sent_whatever_they_share(
    moves: list[tuple[int, list[int]]],
) -> None:
    # a request keeps some of the last one's messages and adds others, equal values included
    # (a message equal to one it replaces is the same message, as the tuple it stands for says)
    pool = [Message("user", f"m{i % 3}") for i in range(6)]
    model = ScriptedModel(["a"], repeat_last=True, count_usage=False)
    messages: list[Message] = []
    sent = []
    for keep, added in moves:
        messages = [*messages[:keep], *(pool[i] for i in added)]
        model(messages, [])
        sent.append(tuple(messages))
    assert [tuple(r.messages) for r in model.requests] == sent
    assert [len(r.messages) for r in model.requests] == [len(m) for m in sent]


def test_a_recorded_request_reads_as_a_tuple() -> None:
    model = ScriptedModel(["a"], repeat_last=True, count_usage=False)
    first = [Message("user", "go"), Message("assistant", "a")]
    model(first, [])
    model([*first, Message("user", "more")], [])
    messages = model.requests[1].messages
    assert messages == (*first, Message("user", "more"))
    assert messages[0] is first[0]
    assert messages[-1] == Message("user", "more")
    assert messages[:2] == tuple(first)
    assert hash(messages) == hash(tuple(messages))
    assert repr(messages) == repr(tuple(messages))
    assert messages != (*first, Message("user", "less"))
    with pytest.raises(IndexError, match=r"Request.messages: index must be below 3, got 3\."):
        messages[3]


def test_ten_thousand_requests_are_recorded_in_memory_that_grows_with_the_run() -> None:
    # issue 29, item 16: each request was kept whole, so a 10,000-step run peaked at 1.64 GB;
    # the requests now share the messages they have in common with the one before
    import tracemalloc

    model = ScriptedModel(["a"], repeat_last=True, count_usage=False)
    messages: list[Message] = [Message("user", "go")]
    tracemalloc.start()
    try:
        for i in range(3_000):
            messages = [
                *messages,
                Message("assistant", "a"),
                Message("tool", f"r{i}", tool_call_id="c"),
            ]
            model([*messages, Message("user", "note")], [])  # the note is dropped next time
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # kept whole, 3,000 requests of ~3,000 messages on average are ~72 MB of tuples alone
    assert peak < 12_000_000, peak
    assert len(model.requests[-1].messages) == 6_002
    assert model.requests[1500].messages[-2] == Message("tool", "r1500", tool_call_id="c")


def test_a_long_run_on_the_default_usage_takes_seconds_not_minutes() -> None:
    # issue 19, item 8: each request was counted whole, so a run took time in the square of its
    # length (2,000 steps 44 s, 10,000 not done in 12 minutes); the bound is loose on purpose
    import time

    from budgetloop import Budget, start

    @tool
    def read(page: int) -> str:
        """Read a page."""
        return f"page {page} " * 20

    turn = Completion(text="reading", tool_calls=[ToolCall("read", {"page": 1})])
    model = ScriptedModel([turn], repeat_last=True, price=Price(3.0, 15.0), max_output_tokens=50)
    session = start(model, "go", tools=[read], budget=Budget(max_steps=3_000), repeat_limit=None)
    started = time.monotonic()
    result = session.run()
    assert len(result.steps) == 3_000
    assert time.monotonic() - started < 60
    last = model.requests[-1]
    assert result.steps[-1].usage == Usage(estimate_tokens(list(last.messages), list(last.tools)),
                                           result.steps[-1].usage.output_tokens)  # type: ignore[union-attr]  # fmt: skip


def test_a_delay_makes_each_call_slow() -> None:
    import time

    model = ScriptedModel(["one", "two"], delay=0.05)
    started = time.monotonic()
    model([Message("user", "hi")], [])
    model([Message("user", "hi")], [])
    assert time.monotonic() - started >= 0.1
    assert model.delay == 0.05
    with pytest.raises(
        TypeError, match=r"^ScriptedModel: delay must be a number of seconds, got str\.$"
    ):
        ScriptedModel(["a"], delay="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got bool"):
        ScriptedModel(["a"], delay=True)
    for wrong in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"^ScriptedModel: delay must be >= 0 seconds, got"):
            ScriptedModel(["a"], delay=wrong)


def test_callable_entries_and_attributes() -> None:
    model = ScriptedModel(
        [lambda messages, tools: Completion(tool_calls=[ToolCall("f", {"n": len(messages)})])],
        repeat_last=True,
        price=Price(1, 2),
        max_output_tokens=50,
    )
    assert model([Message("user", "a")] * 3, []).tool_calls == (ToolCall("f", {"n": 3}),)
    assert (model.price, model.max_output_tokens) == (Price(1, 2), 50)
    with pytest.raises(ValueError, match=r"^ScriptedModel: script must be") as caught:
        ScriptedModel([], repeat_last=True)
    assert str(caught.value) == (
        "ScriptedModel: script must be at least one entry when repeat_last=True (the entry to "
        "repeat), got none."
    )


@pytest.mark.parametrize(
    ("script", "said"),
    [
        (3, "script must be a list of entries (each {entry}), got int."),
        ("Hello.", "script must be a list of entries (each {entry}), got str."),
        ({"text": "Hello."}, "script must be a list of entries (each {entry}), got dict."),
        (["Hello.", None], "script[1] must be {entry}, got None."),
        ([Completion(text="a"), 7], "script[1] must be {entry}, got int."),
    ],
)
def test_a_script_that_is_not_a_list_of_entries_is_refused(script: Any, said: str) -> None:
    entry = "a Completion, a str or a function (messages, tools) -> Completion"
    with pytest.raises(TypeError) as caught:
        ScriptedModel(script)
    assert str(caught.value) == "ScriptedModel: " + said.format(entry=entry)


def test_reset_plays_the_script_again() -> None:
    model = ScriptedModel(["one", "two"])
    assert model([], []).text == "one"
    model.reset()
    assert model.calls == 0
    assert [model([], []).text, model([], []).text] == ["one", "two"]


# -- from_trace: a saved run's completions, played back -----------------------------------------


def recorded_run() -> Result:
    def fails(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError("reset by peer")

    @tool
    def f(a: int) -> str:
        """F."""
        return str(a)

    model = ScriptedModel(
        [
            Completion(
                text="two at once",
                tool_calls=[ToolCall("f", '{"a": 1}', id="x"), ToolCall("f", {"a": "2"})],
                usage=Usage(100, 20),
            ),
            Completion(tool_calls=[ToolCall("f", '{"a": 3}')], cost_usd=0.25),
            fails,
        ]
    )
    return run(model, "go", tools=[f], price=Price(1.0, 2.0), max_output_tokens=64)


def without_time(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: without_time(v)
            for k, v in value.items()
            if k not in ("seconds", "traceback", "run_id")  # the run's id is its own
        }
    if isinstance(value, list):
        return [without_time(v) for v in value]
    return value


def test_from_trace_plays_back_text_calls_ids_usage_and_cost(tmp_path: Path) -> None:
    result = recorded_run()
    result.save(tmp_path / "run.json")
    for trace in (result, result.to_dict(), tmp_path / "run.json"):
        model = ScriptedModel.from_trace(trace)
        assert (model.price, model.max_output_tokens) == (Price(1.0, 2.0), 64)
        first = model([], [])
        assert first == Completion(
            text="two at once",
            tool_calls=(ToolCall("f", '{"a": 1}', "x"), ToolCall("f", {"a": "2"}, "call_0_1")),
            usage=Usage(100, 20),
            cost_usd=None,  # the loop derives it from the usage, as it did
        )
        second = model([], [])
        assert second.tool_calls == (ToolCall("f", '{"a": 3}', "call_1_0"),)
        # the usage the script counted, and the cost the model reported (not usage at the price)
        assert (second.usage, second.cost_usd) == (Usage(164, 9), 0.25)
        with pytest.raises(ConnectionError) as raised:
            model([], [])
        assert f"{type(raised.value).__name__}: {raised.value}" == "ConnectionError: reset by peer"
        with pytest.raises(IndexError) as past:
            model([], [])
        assert str(past.value) == (
            "ScriptedModel: each call must be one of the script's 3 entries, got call 4; the "
            "trace ends after 3 steps (the recorded run stopped: model_error), so what the model "
            "said next was never recorded."
        )


def test_a_run_driven_by_from_trace_and_the_tools_is_the_run_again() -> None:
    result = recorded_run()

    @tool
    def f(a: int) -> str:
        """F."""
        return str(a)

    again = run(ScriptedModel.from_trace(result), "go", tools=[f])
    assert without_time(again.to_dict()) == without_time(result.to_dict())
    assert again.error == result.error == "ConnectionError: reset by peer"
    assert again.cost_usd == result.cost_usd == 0.25 + Price(1.0, 2.0).cost(100, 20)


def test_from_trace_keeps_a_model_that_reported_no_usage_without_usage() -> None:
    data = run(ScriptedModel([Completion(text="hi")], count_usage=False), "go").to_dict()
    assert data["steps"][0]["usage"] is None
    model = ScriptedModel.from_trace(data)
    assert model([Message("user", "a long question " * 50)], []).usage is None
    with pytest.raises(
        TypeError,
        match=r"^ScriptedModel\.from_trace: trace must be a Result, a dict from Result\.to_dict\(\) or a path to a saved trace, got int\.$",
    ):
        ScriptedModel.from_trace(3)  # type: ignore[arg-type]


def error_trace(text: str) -> dict[str, Any]:
    """A one-step trace whose step is the model error ``text``."""
    data = run(ScriptedModel(["x"]), "go").to_dict()
    data["messages"] = data["messages"][:1]
    data["steps"] = [
        {
            "index": 0, "text": None, "usage": None, "cost_usd": 0.0, "seconds": 0.0,
            "error": text, "tool_calls": [],
            "projection": {"input_tokens": 1, "output_tokens": None, "cost_usd": None,
                           "spent_usd": 0.0, "limit_usd": None, "fits": True},
        }
    ]  # fmt: skip
    return data


def replayed_error(text: str) -> str:
    model = ScriptedModel.from_trace(error_trace(text))
    with pytest.raises(Exception) as raised:  # noqa: PT011 - any kind; its name is checked
        model([], [])
    return f"{type(raised.value).__name__}: {raised.value}"


def test_an_error_that_reads_like_any_exception_is_replayed_exactly() -> None:
    for text in (
        "KeyError: 'q'",
        "E: ",
        "Weird Name: a: b",
        "ValueError: (its message could not be shown)",
        "ExceptionGroup: two",
    ):
        assert replayed_error(text) == text
    with pytest.raises(KeyError):  # a builtin's name: an exception of that builtin kind
        ScriptedModel.from_trace(error_trace("KeyError: 'q'"))([], [])
    with pytest.raises(OSError, match=r"^reset$"):
        ScriptedModel.from_trace(error_trace("ConnectionError: reset"))([], [])


def test_the_readmes_scripted_model_plays_as_it_says() -> None:
    # issue 29, item 13: the README shows what a script entry may be; its snippet runs as written
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### A scripted model", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    model = namespace["model"]

    @tool
    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        return 118.4

    result = run(model, "What is SE0000108656 worth?", tools=[price])
    assert [s.text for s in result.steps] == ["Looking it up.", None, "It is 118.4."]
    assert result.answered
    assert result.answer == "It is 118.4."
    assert [c.id for c in result.tool_calls] == ["call_0_0", "call_1_0"]
    assert result.steps[1].usage == Usage(900, 12)
    assert len(model.requests) == 3
    assert model.requests[2].messages[-1].content == "118.4"
    with pytest.raises(
        IndexError,
        match=r"^ScriptedModel: each call must be one of the script's 3 entries, got call 4; ",
    ):
        model([], [])
    assert ScriptedModel(["Hello."])([], []).text == "Hello."
