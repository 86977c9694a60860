"""Loop detection: identical turns, cycles of two and three turns, and the warning before a stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from budgetloop import Budget, Completion, Message, ScriptedModel, ToolCall, arun, run, start, tool

WARNING = "[budgetloop] You are repeating yourself"


def make_search() -> Any:
    ran: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        ran.append(query)
        return f"nothing on {query}"

    search.ran = ran  # type: ignore[attr-defined]
    return search


def ask(*queries: str) -> list[Completion]:
    return [
        Completion(tool_calls=[ToolCall("search", {"query": q}, f"c{i}")])
        for i, q in enumerate(queries)
    ]


def go(script: list[Completion | str], **options: Any) -> tuple[Any, ScriptedModel, Any]:
    search, model = make_search(), ScriptedModel(script)
    options.setdefault("budget", Budget(max_steps=100))
    return run(model, "go", tools=[search], **options), model, search


def test_a_cycle_of_two_turns_stops_on_the_turn_that_completes_it() -> None:
    result, model, search = go(ask(*"ababab"), cycle_limit=3)
    assert result.stop == "repeated"
    assert model.calls == 6
    assert search.ran == list("ababa")  # the sixth turn's call is not run
    assert [c.status for c in result.steps[5].tool_calls] == ["skipped"]
    assert result.detail == (
        'a cycle of 2 turns repeated 3 times: search({"query": "a"}) then search({"query": "b"})'
    )


def test_a_cycle_of_three_turns_stops_on_the_turn_that_completes_it() -> None:
    result, model, search = go(ask(*"abcabcabc"), cycle_limit=3)
    assert (result.stop, model.calls, len(search.ran)) == ("repeated", 9, 8)
    assert result.detail == (
        'a cycle of 3 turns repeated 3 times: search({"query": "a"}) then '
        'search({"query": "b"}) then search({"query": "c"})'
    )


def test_a_three_turn_cycle_may_hold_a_turn_twice() -> None:
    result, model, _ = go(ask(*"aabaabaab"), cycle_limit=3)
    assert (result.stop, model.calls) == ("repeated", 9)
    assert result.detail is not None
    assert result.detail.startswith("a cycle of 3 turns")


def test_cycle_limit_counts_repetitions() -> None:
    result, model, _ = go(ask(*"abab"), cycle_limit=2)
    assert (result.stop, model.calls) == ("repeated", 4)
    result, model, _ = go([*ask(*"ababa"), "done"], cycle_limit=3)
    assert (result.stop, model.calls) == ("answered", 6)


def test_cycles_are_off_by_default_and_broken_cycles_are_not_loops() -> None:
    result, model, _ = go([*ask(*"abababab"), "done"])
    assert (result.stop, model.calls) == ("answered", 9)
    result, model, _ = go([*ask(*"ababcabab"), "done"], cycle_limit=3)
    assert (result.stop, model.calls) == ("answered", 10)


def test_identical_turns_are_found_first_and_named_with_their_calls() -> None:
    result, model, _ = go(ask(*"aaa"), cycle_limit=2)
    assert (result.stop, model.calls) == ("repeated", 3)
    assert result.detail == 'the same tool calls 3 turns running: search({"query": "a"})'


def test_a_loop_detail_shortens_each_call() -> None:
    long = "x" * 500
    result, _, _ = go(ask(long, long, long))
    shown = 'search({"query": "' + "x" * 61 + "…"
    assert result.detail == f"the same tool calls 3 turns running: {shown}"
    assert len(shown) == 80


def test_a_warning_comes_once_and_the_next_loop_stops_the_run() -> None:
    result, model, search = go(ask(*"aaaa"), warn_repeats=True)
    assert result.stop == "repeated"
    assert model.calls == 4
    assert search.ran == list("aaa")  # the warned turn ran
    warned = model.requests[3].messages[-1]
    assert warned == Message(
        "tool",
        "nothing on a\n\n[budgetloop] You are repeating yourself: the same tool calls 3 turns "
        'running: search({"query": "a"}). Do something different or give your answer; if the '
        "loop goes on, the run stops.",
        tool_call_id="c2",
        name="search",
    )
    assert sum(WARNING in (m.content or "") for m in model.requests[3].messages) == 1
    assert sum(WARNING in (m.content or "") for m in result.messages) == 1
    assert result.steps[2].tool_calls[0].result == "nothing on a"  # the record is the tool's


def test_a_warned_model_that_changes_course_goes_on() -> None:
    result, model, search = go([*ask(*"aaab"), "done"], warn_repeats=True)
    assert (result.stop, result.answer, model.calls) == ("answered", "done", 5)
    assert search.ran == list("aaab")


def test_a_warning_before_a_cycle_stop() -> None:
    result, model, search = go(ask(*"abababa"), cycle_limit=3, warn_repeats=True)
    assert (result.stop, model.calls) == ("repeated", 7)
    assert search.ran == list("ababab")
    assert sum(WARNING in (m.content or "") for m in result.messages) == 1
    assert result.detail == (
        'a cycle of 2 turns repeated 3 times: search({"query": "b"}) then search({"query": "a"})'
    )


def test_a_fork_after_the_warning_is_not_warned_again() -> None:
    session = start(ScriptedModel(ask(*"aaaa")), "go", tools=[make_search()], warn_repeats=True)
    for _ in range(3):
        session.step()
    forked = session.fork(complete=ScriptedModel(ask("a")))
    assert forked.run().stop == "repeated"
    again = session.fork(at=2, complete=ScriptedModel(ask("a", "a")))
    assert again.run().stop == "repeated"
    assert again.steps[2].tool_calls[0].status == "ok"  # warned on its own third turn


def test_arun_finds_cycles_and_warns() -> None:
    search = make_search()
    model = ScriptedModel(ask(*"abababa"))

    async def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return model(messages, tools)

    result = asyncio.run(
        arun(complete, "go", tools=[search], budget=Budget(max_steps=100), cycle_limit=3,
             warn_repeats=True)
    )  # fmt: skip
    assert (result.stop, model.calls, len(search.ran)) == ("repeated", 7, 6)
    assert sum(WARNING in (m.content or "") for m in model.requests[-1].messages) == 1


# -- a turn is compared as the tools receive its calls ---------------------------------------------


def make_fetch() -> Any:
    ran: list[tuple[int, int]] = []

    @tool
    def fetch(n: int, page: int = 1) -> str:
        """Fetch item n."""
        ran.append((n, page))
        return f"item {n}, page {page}"

    fetch.ran = ran  # type: ignore[attr-defined]
    return fetch


def turns(*arguments: Any) -> list[Completion]:
    """One turn per entry: a dict or JSON text is one fetch call, a list is several in a turn."""
    out = []
    for i, args in enumerate(arguments):
        batch = args if isinstance(args, list) else [args]
        calls = [ToolCall("fetch", a, f"c{i}_{j}") for j, a in enumerate(batch)]
        out.append(Completion(tool_calls=calls))
    return out


def fetching(script: list[Completion], **options: Any) -> tuple[Any, ScriptedModel, Any]:
    fetch, model = make_fetch(), ScriptedModel(script)
    options.setdefault("budget", Budget(max_steps=30))
    return run(model, "go", tools=[fetch], **options), model, fetch


@pytest.mark.parametrize(
    ("forms", "ran", "detail"),
    [
        # a number, the number written as a string, an integral float: the tool gets 5 each time
        ([{"n": 5}, {"n": "5"}, {"n": 5.0}], [(5, 1)] * 2, 'fetch({"n": 5, "page": 1})'),
        ([{"n": 5}, '{"n": "5"}', '{"n":5.0}'], [(5, 1)] * 2, 'fetch({"n": 5, "page": 1})'),
        # a default left out, and passed explicitly
        ([{"n": 5}, {"n": 5, "page": 1}], [(5, 1)] * 2, 'fetch({"n": 5, "page": 1})'),
        # the same calls in another order within the turn
        (
            [[{"n": 1}, {"n": 2}], [{"n": 2}, {"n": 1}]],
            [(1, 1), (2, 1), (2, 1), (1, 1)],
            'fetch({"n": 1, "page": 1}), fetch({"n": 2, "page": 1})',
        ),
    ],
)
def test_the_same_calls_written_differently_are_the_same_turn(
    forms: list[Any], ran: list[tuple[int, int]], detail: str
) -> None:
    # the forms in turn, for as long as the budget allows: the third turn is the third alike
    result, model, fetch = fetching(turns(*(forms * 30)[:30]))
    assert (result.stop, model.calls) == ("repeated", 3)
    assert fetch.ran == ran
    assert result.detail == f"the same tool calls 3 turns running: {detail}"
    assert {c.status for c in result.steps[2].tool_calls} == {"skipped"}


def test_a_cycle_written_differently_each_time_is_a_cycle() -> None:
    forms = [{"n": 5}, {"n": 7, "page": 2}, {"n": "5"}, {"n": "7", "page": "2"}, {"n": 5.0},
             {"n": 7.0, "page": 2}]  # fmt: skip
    result, model, fetch = fetching(turns(*(forms * 5)), cycle_limit=3)
    assert (result.stop, model.calls) == ("repeated", 6)
    assert fetch.ran == [(5, 1), (7, 2), (5, 1), (7, 2), (5, 1)]
    assert result.detail == (
        'a cycle of 2 turns repeated 3 times: fetch({"n": 5, "page": 1}) then '
        'fetch({"n": 7, "page": 2})'
    )


def test_a_call_one_turn_repeats_is_not_the_same_turn_as_one_call() -> None:
    once, twice = {"n": 5}, [{"n": 5}, {"n": "5"}]
    result, model, fetch = fetching([*turns(once, twice, once, twice), "done"])
    assert (result.stop, model.calls, len(fetch.ran)) == ("answered", 5, 6)


def test_refused_arguments_are_compared_as_they_were_sent() -> None:
    # "seven" is no int: each call is refused, and the same refusal three times is a loop
    result, model, fetch = fetching(turns({"n": "seven"}, '{"n":"seven"}', {"n": "seven"}))
    assert (result.stop, model.calls, fetch.ran) == ("repeated", 3, [])
    assert result.detail == 'the same tool calls 3 turns running: fetch({"n": "seven"})'
    # refused arguments that differ as sent are different turns, and so is a refused call
    # from the accepted call it resembles
    script = turns({"n": "seven"}, {"n": "seven "}, {"n": "seven"}, {"n": 5, "x": 1}, {"n": 5})
    result, model, fetch = fetching([*script, "done"])
    assert (result.stop, model.calls, fetch.ran) == ("answered", 6, [(5, 1)])


def test_a_fork_reads_its_history_as_the_tools_received_it() -> None:
    session = start(ScriptedModel(turns({"n": 5}, {"n": "5"})), "go", tools=[make_fetch()])
    session.step()
    session.step()
    forked = session.fork(complete=ScriptedModel(turns({"n": 5.0})))
    assert forked.run().stop == "repeated"
    assert forked.steps[2].tool_calls[0].status == "skipped"


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (1, ValueError, "start: cycle_limit must be an int >= 2 or None, got 1."),
        (2.0, TypeError, "start: cycle_limit must be an int >= 2 or None, got float."),
        (True, TypeError, "start: cycle_limit must be an int >= 2 or None, got bool."),
    ],
)
def test_cycle_limit_is_checked(value: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        start(ScriptedModel(["x"]), "go", cycle_limit=value)
    assert str(raised.value) == message
