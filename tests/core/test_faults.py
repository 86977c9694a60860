"""Fault injection: tools that hang, unwind or flood; many runs at once; malformed model output."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    Result,
    ScriptedModel,
    ToolCall,
    arun,
    load_trace,
    run,
    start,
    tool,
)

ABANDONED = "abandoned: still running when the max_seconds deadline passed"


@tool
def search(q: str) -> str:
    """Search."""
    return f"found {q}"


def calls(*pairs: tuple[str, Any]) -> Completion:
    return Completion(tool_calls=[ToolCall(name, args) for name, args in pairs])


# -- a tool that hangs ---------------------------------------------------------------------------


@pytest.mark.timeout(10)
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_hanging_tool_is_abandoned_at_the_deadline(driver: str) -> None:
    release = threading.Event()

    @tool
    def hang(q: str) -> str:
        """Hangs."""
        release.wait(30)
        return "late"

    model = ScriptedModel([calls(("hang", {"q": "x"}), ("search", {"q": "y"})), "never sent"])
    kwargs: dict[str, Any] = {"tools": [hang, search], "budget": Budget(max_seconds=0.3)}
    began = time.monotonic()
    try:
        if driver == "sync":
            result = run(model, "go", **kwargs)
        else:
            result = asyncio.run(arun(model, "go", **kwargs))
        took = time.monotonic() - began
    finally:
        release.set()
    assert took < 3
    assert result.stop == "max_seconds"
    assert result.detail == "a tool was still running at the deadline"
    assert model.calls == 1
    hung, quick = result.steps[0].tool_calls
    assert (hung.status, hung.error, hung.result) == ("error", ABANDONED, None)
    assert (quick.status, quick.result) == ("ok", "found y")
    assert 0.3 <= result.seconds < 3


@pytest.mark.timeout(10)
def test_a_call_that_never_started_before_the_deadline_is_skipped_not_abandoned() -> None:
    release = threading.Event()
    ran: list[str] = []

    @tool
    def hang(q: str) -> str:
        """Hangs."""
        ran.append(q)
        release.wait(30)
        return "late"

    model = ScriptedModel([calls(("hang", {"q": "x"}), ("hang", {"q": "y"})), "never sent"])
    try:  # one worker: the second call waits for the first, which outlasts the deadline
        result = run(model, "go", tools=[hang], max_workers=1, budget=Budget(max_seconds=0.3))
    finally:
        release.set()
    assert (result.stop, ran) == ("max_seconds", ["x"])
    first, second = result.steps[0].tool_calls
    assert (first.status, first.error) == ("error", ABANDONED)
    assert (second.status, second.error, second.seconds) == (
        "skipped", "not started: the max_seconds deadline passed before it could start", 0.0,
    )  # fmt: skip
    assert result.tool_calls == (first,)  # it was not executed


# -- BaseException from a tool -------------------------------------------------------------------


class Unwound(BaseException):
    pass


@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (GeneratorExit("closed"), "GeneratorExit: closed"),
        (Unwound("custom"), "Unwound: custom"),
        (asyncio.CancelledError("cancelled"), "CancelledError: cancelled"),
        (StopIteration("stop"), "StopIteration: stop"),
    ],
)
@pytest.mark.parametrize("driver", ["sync", "sync-parallel", "sync-deadline", "async"])
def test_a_tool_raising_a_base_exception_becomes_an_error_result(
    exc: BaseException, error: str, driver: str
) -> None:
    @tool
    def unwind(q: str) -> str:
        """Unwinds."""
        raise exc

    batch = [("unwind", {"q": "a"})]
    if driver == "sync-parallel":
        batch.append(("search", {"q": "b"}))
    model = ScriptedModel([calls(*batch), "recovered"])
    kwargs: dict[str, Any] = {"tools": [unwind, search]}
    if driver == "sync-deadline":
        kwargs["budget"] = Budget(max_seconds=30)
    if driver == "async":
        result = asyncio.run(arun(model, "go", **kwargs))
    else:
        result = run(model, "go", **kwargs)
    assert result.stop == "answered"
    assert result.answer == "recovered"
    record = result.steps[0].tool_calls[0]
    assert (record.status, record.error) == ("error", error)
    assert model.requests[1].messages[2].content == f"error: {error}"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("driver", ["sync", "sync-parallel", "sync-deadline"])
def test_keyboard_interrupt_and_exit_in_a_tool_propagate(
    exc: type[BaseException], driver: str
) -> None:
    ran: list[str] = []

    @tool
    def interrupt(q: str) -> str:
        """Interrupted."""
        ran.append(q)
        raise exc()

    batch = [("interrupt", {"q": "a"})]
    if driver == "sync-parallel":
        batch.append(("search", {"q": "b"}))
    model = ScriptedModel([calls(*batch), "never sent"])
    budget = Budget(max_seconds=30) if driver == "sync-deadline" else Budget()
    with pytest.raises(exc):
        run(model, "go", tools=[interrupt, search], budget=budget)
    assert ran == ["a"]
    assert model.calls == 1


# -- a tool that floods ----------------------------------------------------------------------------


def test_a_50_mb_result_is_truncated_for_the_model_and_the_trace_says_so(tmp_path: Any) -> None:
    size = 50_000_000

    @tool
    def dump(q: str) -> str:
        """Dumps."""
        return "x" * size

    model = ScriptedModel([calls(("dump", {"q": "all"})), "done"])
    path = tmp_path / "trace.jsonl"
    result = run(model, "go", tools=[dump], trace_path=path)
    record = result.steps[0].tool_calls[0]
    marker = f"\n[truncated: the result had {size} characters; the first 100000 are shown]"
    assert record.status == "ok"
    assert record.truncated == size
    assert record.result == "x" * 100_000 + marker
    assert model.requests[1].messages[-1].content == record.result  # what the model read
    data = result.to_dict()
    assert data["steps"][0]["tool_calls"][0]["truncated"] == size
    assert load_trace(path).steps[0].tool_calls[0] == record
    assert path.stat().st_size < 1_000_000


def test_a_result_at_the_limit_is_not_truncated_and_the_limit_is_settable() -> None:
    @tool
    def dump(n: int) -> str:
        """Dumps."""
        return "y" * n

    model = ScriptedModel([calls(("dump", {"n": 10}), ("dump", {"n": 11})), "done"])
    result = run(model, "go", tools=[dump], max_result_chars=10)
    exact, over = result.steps[0].tool_calls
    assert (exact.result, exact.truncated) == ("y" * 10, None)
    assert over.truncated == 11
    assert over.result == (
        "y" * 10 + "\n[truncated: the result had 11 characters; the first 10 are shown]"
    )


# -- many runs at once, and no thread left behind ----------------------------------------------------


def one_run(i: int, **kwargs: Any) -> Result:
    @tool
    def double(n: int) -> int:
        """Doubles."""
        time.sleep(0.001)
        return 2 * n

    model = ScriptedModel(
        [
            calls(("double", {"n": i}), ("double", {"n": i + 1})),
            lambda messages, tools: Completion(
                text=f"run {i}: {messages[-2].content}+{messages[-1].content}"
            ),
        ]
    )
    return run(model, f"run {i}", tools=[double], **kwargs)


@pytest.mark.timeout(60)
def test_100_runs_in_threads_at_once_each_get_their_own_result() -> None:
    results: dict[int, Result] = {}
    barrier = threading.Barrier(100)

    def work(i: int) -> None:
        barrier.wait()
        results[i] = one_run(i, budget=Budget(max_seconds=30) if i % 2 else Budget())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(100))
    for i, result in results.items():
        assert result.stop == "answered"
        assert result.answer == f"run {i}: {2 * i}+{2 * i + 2}"
        assert [c.result for c in result.tool_calls] == [str(2 * i), str(2 * i + 2)]
        assert result.messages[0] == Message("user", f"run {i}")


def settled_thread_count(target: int, wait: float = 10.0) -> int:
    """The thread count once it is at most ``target``, or has stopped falling for 0.2 s."""
    deadline = time.monotonic() + wait
    last, steady = threading.active_count(), time.monotonic()
    while time.monotonic() < deadline:
        count = threading.active_count()
        if count <= target:
            return count
        if count < last:
            last, steady = count, time.monotonic()
        elif time.monotonic() - steady > 0.2 and target < 0:
            return count
        time.sleep(0.01)
    return threading.active_count()


@pytest.mark.timeout(120)
def test_no_thread_is_left_behind_after_1000_runs() -> None:
    before = settled_thread_count(-1)  # threads of earlier tests may still be ending
    for i in range(1000):
        # parallel batches use workers; with a deadline the model call uses one too
        result = one_run(i, budget=Budget(max_seconds=30) if i % 2 else Budget())
        assert result.answered
    assert settled_thread_count(before) <= before


@pytest.mark.timeout(60)
def test_no_thread_is_left_behind_by_stopped_and_failed_runs() -> None:
    before = settled_thread_count(-1)  # threads of earlier tests may still be ending
    for i in range(200):
        model = ScriptedModel(
            [calls(("search", {"q": str(i)}), ("search", {"q": "b"}))], repeat_last=True
        )
        budget = Budget(max_steps=3, max_seconds=30 if i % 2 else None)
        assert run(model, "go", tools=[search], budget=budget).stop == "max_steps"
        assert run(ScriptedModel([]), "go", budget=budget).stop == "model_error"
    assert settled_thread_count(before) <= before


# -- malformed model output ----------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_no_thread_is_left_behind_by_interrupted_batches() -> None:
    @tool
    def nap() -> str:
        """Sleeps, so that a worker gets to help the batch, and wakes while it does."""
        time.sleep(0.0002)
        return "rested"

    @tool
    def boom() -> str:
        """Interrupts."""
        raise KeyboardInterrupt

    before = settled_thread_count(-1)  # threads of earlier tests may still be ending
    for _ in range(100):
        batch = calls(("nap", {}), ("boom", {}), *[("search", {"q": str(i)}) for i in range(6)])
        session = start(ScriptedModel([batch, "done"]), "go", tools=[nap, boom, search])
        with pytest.raises(KeyboardInterrupt):
            session.step()
        assert session.run().stop == "answered"  # done: its threads are told to end
    assert settled_thread_count(before) <= before


def test_tool_calls_that_are_not_a_list_are_a_model_error() -> None:
    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls="search")  # type: ignore[arg-type]

    result = run(complete, "go", tools=[search])
    message = "TypeError: Completion: tool_calls must be a list of ToolCall, got str."
    assert result.stop == "model_error"
    assert result.error == message
    assert result.steps[0].error == message
    assert result.steps[0].tool_calls == ()


def test_a_tool_call_item_that_is_not_a_tool_call_is_a_model_error() -> None:
    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return Completion(tool_calls=[{"name": "search"}])  # type: ignore[list-item]

    result = run(complete, "go", tools=[search])
    assert result.stop == "model_error"
    assert result.error == "TypeError: Completion: tool_calls[0] must be ToolCall, got dict."


@pytest.mark.parametrize("name", ["", None])
def test_a_call_with_no_name_is_an_error_result(name: Any) -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall(name, {"q": "a"})]), "ok"])
    result = run(model, "go", tools=[search])
    record = result.steps[0].tool_calls[0]
    assert result.stop == "answered"
    assert (record.status, record.error) == (
        "error",
        "a tool call needs a name; available tools: search",
    )
    assert record.name == ""  # a name that is not text is kept as text: "" for none
    assert model.requests[1].messages[-1].content == (
        "error: a tool call needs a name; available tools: search"
    )


def test_an_unknown_tool_is_an_error_result_naming_the_tools() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("serach", {"q": "a"})]), "ok"])
    result = run(model, "go", tools=[search])
    assert result.steps[0].tool_calls[0].error == (
        "unknown tool 'serach'; available tools: search"
    )


def test_an_id_reused_in_one_turn_is_made_unique_and_both_run() -> None:
    model = ScriptedModel(
        [
            Completion(
                tool_calls=[
                    ToolCall("search", {"q": "a"}, "dup"),
                    ToolCall("search", {"q": "b"}, "dup"),
                    ToolCall("search", {"q": "c"}, "dup_1"),
                ]
            ),
            "ok",
        ]
    )
    result = run(model, "go", tools=[search])
    records = result.steps[0].tool_calls
    # the repeat takes a number no call of the batch gives: "dup_1" stays the third call's
    assert [r.id for r in records] == ["dup", "dup_2", "dup_1"]
    assert [(r.status, r.result) for r in records] == [
        ("ok", "found a"),
        ("ok", "found b"),
        ("ok", "found c"),
    ]
    sent = model.requests[1].messages
    assistant, *results = sent[1:]
    assert [c.id for c in assistant.tool_calls] == ["dup", "dup_2", "dup_1"]
    assert [(m.tool_call_id, m.content) for m in results] == [
        ("dup", "found a"),
        ("dup_2", "found b"),
        ("dup_1", "found c"),
    ]


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [("[1, 2]", "array"), ([1, 2], "array"), ("3", "number"), (3.5, "number"), ("null", "null")],
)
def test_arguments_that_are_not_an_object_are_an_error_result(arguments: Any, kind: str) -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", arguments)]), "ok"])
    result = run(model, "go", tools=[search])
    record = result.steps[0].tool_calls[0]
    assert (record.status, record.error) == (
        "error",
        f"search: arguments must be a JSON object, got {kind}",
    )
    assert record.raw_arguments == arguments
    assert record.arguments is None


def levels(n: int) -> Any:
    """A value of ``n`` lists, each inside the one before."""
    value: list[Any] = []
    for _ in range(n - 1):
        value = [value]
    return value


TOO_DEEP = "search: arguments must be nested at most 100 levels deep, got deeper"


@pytest.mark.parametrize("form", ["dict", "JSON"])
@pytest.mark.parametrize(("depth", "error"), [(99, None), (100, TOO_DEEP), (3000, TOO_DEEP)])
def test_arguments_nested_deeper_than_a_trace_keeps_are_said_to_be(
    form: str, depth: int, error: str | None
) -> None:
    # the arguments object is the first level, so {"q": <depth lists>} is depth + 1 deep
    arguments: Any = {"q": levels(depth)}
    if form == "JSON":
        arguments = '{"q": ' + "[" * depth + "]" * depth + "}"
    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", arguments, "c1")]), "ok"])
    result = run(model, "go", tools=[search])
    record = result.steps[0].tool_calls[0]
    if error is None:  # at the limit: checked as any arguments (q must be a str)
        assert record.error == "search.q: expected string, got list"
    else:
        assert (record.status, record.error, record.arguments) == ("error", error, None)
    assert result.answered
    assert Result.from_dict(result.to_dict()).to_dict() == result.to_dict()  # the trace keeps it


@pytest.mark.parametrize("brackets", ["[" * 150, "{" * 150, "[]" * 150])
def test_brackets_inside_a_string_argument_are_no_nesting(brackets: str) -> None:
    # the JSON text holds more brackets than a trace's depth, all inside one string value
    arguments = json.dumps({"q": brackets})
    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", arguments, "c1")]), "ok"])
    record = run(model, "go", tools=[search]).steps[0].tool_calls[0]
    assert (record.status, record.result, record.arguments) == (
        "ok",
        f"found {brackets}",
        {"q": brackets},
    )


@pytest.mark.parametrize(("returned", "kind"), [(None, "None"), ("an answer", "str")])
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_model_returning_something_else_is_a_model_error(
    returned: Any, kind: str, driver: str
) -> None:
    model = ScriptedModel([calls(("search", {"q": "a"})), lambda messages, tools: returned])
    if driver == "sync":
        result = run(model, "go", tools=[search])
    else:
        result = asyncio.run(arun(model, "go", tools=[search]))
    message = (
        f"TypeError: the model returned {kind}, expected a Completion(text=..., tool_calls=[...])"
    )
    assert result.stop == "model_error"
    assert result.error == message
    assert len(result.steps) == 2
    assert result.steps[0].tool_calls[0].result == "found a"
    assert result.steps[1].error == message
