"""Context policies (``context=``): what of a long run's context each request is sent, checked
before it is sent, projected by the guard, billed (a summary) and recorded in the trace."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    Usage,
    arun,
    budget_report,
    estimate_tokens,
    first_divergence,
    load_trace,
    max_turns_for,
    replay,
    resume,
    run,
    start,
    tool,
    worst_case_cost,
)
from budgetloop import context as ctx
from budgetloop._engine._types import to_pico
from budgetloop.context import DropToolResults, KeepLast, Summarize
from tests.strategies import PRICE, Scenario, build, loop_options, scenarios

SYSTEM = Message("system", "be brief")
TASK = Message("user", "find it")


def turn(i: int, size: int = 10) -> list[Message]:
    """Turn ``i``: an assistant message calling ``search``, and its result of ``size`` chars."""
    call = ToolCall("search", {"q": f"q{i}"}, f"c{i}")
    return [
        Message("assistant", None, (call,)),
        Message("tool", "r" * size, tool_call_id=f"c{i}", name="search"),
    ]


def grown(turns: int, size: int = 10) -> list[Message]:
    return [SYSTEM, TASK, *(m for i in range(turns) for m in turn(i, size))]


@tool
def search(q: str) -> str:
    """Search: a result that grows with each query (the seed's growing context)."""
    return f"{q}: " + "found " * 100


def calling(n: int, then: str = "done") -> list[Any]:
    calls = [
        Completion(tool_calls=(ToolCall("search", {"q": f"q{i}"}, f"c{i}"),)) for i in range(n)
    ]
    return [*calls, then]


def model(n: int = 6) -> ScriptedModel:
    return ScriptedModel(calling(n), price=PRICE, max_output_tokens=50)


def summarizer(*texts: str) -> ScriptedModel:
    return ScriptedModel(list(texts), price=Price(1.0, 5.0), max_output_tokens=40)


# -- the built-in policies, on a grown context -------------------------------------------------


def test_keep_last_sends_the_head_and_the_last_turns() -> None:
    messages = grown(4)
    assert KeepLast(turns=2)(messages) == [SYSTEM, TASK, *turn(2), *turn(3)]
    assert KeepLast(turns=4)(messages) == messages
    assert KeepLast(turns=9)(grown(1)) == grown(1)


def test_drop_tool_results_cuts_results_older_than_n_turns_with_a_mark() -> None:
    messages = grown(3, size=300)
    out = DropToolResults(older_than=1, keep_chars=200)(messages)
    cut = "r" * 200 + "\n[100 more characters dropped by the context policy]"
    assert [m.content for m in out] == [
        "be brief", "find it", None, cut, None, cut, None, "r" * 300,
    ]  # fmt: skip
    assert out[3].tool_call_id == "c0"
    assert out[3].name == "search"
    assert DropToolResults(older_than=1)(grown(3, size=200)) == grown(3, size=200)
    # 230 characters: 200 and the mark would be longer, so the result is sent whole
    assert DropToolResults(older_than=1)(grown(3, size=230)) == grown(3, size=230)


def test_the_policies_are_frozen_and_checked() -> None:
    with pytest.raises(TypeError, match=r"^KeepLast: turns must be an int >= 1, got str\.$"):
        KeepLast(turns="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^KeepLast: turns must be an int >= 1, got 0\.$"):
        KeepLast(turns=0)
    with pytest.raises(ValueError, match=r"^DropToolResults: older_than must be an int >= 1"):
        DropToolResults(older_than=0)
    with pytest.raises(ValueError, match=r"^DropToolResults: keep_chars must be an int >= 0"):
        DropToolResults(older_than=1, keep_chars=-1)
    with pytest.raises(
        TypeError,
        match=r"^Summarize: model\.price must be a Price \(the summarizer is priced\), got None\.$",
    ):
        Summarize(ScriptedModel(["s"]), when_input_tokens_over=10)
    with pytest.raises(TypeError, match=r"^Summarize: model\.max_output_tokens must be an int"):
        Summarize(ScriptedModel(["s"], price=PRICE), when_input_tokens_over=10)
    with pytest.raises(AttributeError):
        KeepLast(2).turns = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"^run: context must be a context policy"):
        run(model(), "find it", tools=[search], context=5)  # type: ignore[arg-type]
    assert ctx.KeepLast is KeepLast


# -- a policy's request is checked before anything is sent -------------------------------------


def _drop_task(messages: list[Message]) -> list[Message]:
    return [messages[0], *messages[2:]]


def _orphan(messages: list[Message]) -> list[Message]:
    return (
        [m for m in messages if m.role != "assistant" or m is messages[-2]]
        if len(messages) > 4
        else messages
    )


def _unanswered(messages: list[Message]) -> list[Message]:
    return messages[:-1] if len(messages) > 2 else messages


def _moved(messages: list[Message]) -> list[Message]:
    return [*messages[:2], *messages[4:6], *messages[2:4]] if len(messages) > 5 else messages


def _tuple(messages: list[Message]) -> tuple[Message, ...]:
    return tuple(messages)


def _not_a_message(messages: list[Message]) -> list[Any]:
    return [*messages, "hi"]


@pytest.mark.parametrize(
    ("policy", "error", "said", "turns"),
    [
        (_tuple, TypeError, "what it returns must be a list of Message, got tuple.", 0),
        (_not_a_message, TypeError, "returned[2] must be a Message, got str.", 0),
        (_drop_task, ValueError, "what it returns must be the context's head first (the "
         "system message and the task), got a request without it.", 0),
        (_unanswered, ValueError, "what it returns must be each tool call followed by its "
         "result, got call 'c0' (search) without its result.", 1),
        (_orphan, ValueError, "returned[2] must be a tool result after the call it answers, "
         "got an orphaned result of call 'c0'.", 2),
        (_moved, ValueError, "returned[4] must be in the context's order, got a assistant "
         "message moved.", 2),
    ],
)  # fmt: skip
def test_a_bad_policy_is_refused_before_its_request_is_sent(
    policy: Any, error: type[Exception], said: str, turns: int
) -> None:
    played = model()
    session = start(played, "find it", tools=[search], system="be brief", context=policy)
    for _ in range(turns):
        session.step()
    sent = len(played.requests)
    with pytest.raises(error) as raised:
        session.step()
    assert str(raised.value) == f"context policy {policy.__qualname__}: {said}"
    assert len(played.requests) == sent == turns  # nothing more was sent


# -- projected on, sent and recorded -------------------------------------------------------------


@pytest.mark.parametrize(
    "policy", [KeepLast(turns=2), DropToolResults(older_than=1, keep_chars=20), None]
)
def test_each_step_is_projected_on_and_sent_what_the_policy_returns(policy: Any) -> None:
    played = model()
    result = run(played, "find it", tools=[search], system="be brief", context=policy,
                 budget=Budget(max_steps=20))  # fmt: skip
    assert result.answer == "done"
    for i, step in enumerate(result.steps):
        sent = result.request(i)
        assert tuple(played.requests[i].messages) == tuple(sent.messages)
        assert step.projection is not None
        assert step.projection.input_tokens == estimate_tokens(sent.messages, sent.tools)
    if policy is None:
        assert all(s.context is None for s in result.steps)
    else:  # step 4 was sent the policy's output on the ten messages before it
        assert list(result.request(4).messages) == policy(list(result.messages[:10]))
    assert Result.from_dict(result.to_dict()) == result


def test_keep_last_records_what_it_dropped_and_holds_the_request_flat() -> None:
    result = run(model(), "find it", tools=[search], system="be brief",
                 context=KeepLast(turns=2), budget=Budget(max_steps=20))  # fmt: skip
    inputs = [s.projection.input_tokens for s in result.steps if s.projection is not None]
    assert inputs[3:] == [inputs[3]] * (len(inputs) - 3)  # constant once two turns are kept
    assert [s.context is None for s in result.steps] == [True] * 3 + [False] * 4
    edit = result.steps[3].context
    assert edit is not None
    assert edit.policy == "KeepLast(turns=2)"
    assert edit.dropped == (2, 3)  # step 0's reply and its result
    assert edit.sent == (0, 1, 4, 5, 6, 7)
    whole = estimate_tokens(result.messages[:8], result.tools)
    assert edit.dropped_tokens == whole - inputs[3]
    last = result.steps[-1].context
    assert last is not None
    assert last.dropped == (2, 3, 4, 5, 6, 7, 8, 9)


def test_next_context_says_what_the_next_request_leaves_out() -> None:
    played = model()
    session = start(played, "find it", tools=[search], context=KeepLast(turns=1))
    assert session.next_context is None  # the whole context is sent
    session.step()
    assert session.next_context is None
    session.step()
    ahead = session.next_context
    assert ahead is not None
    assert ahead.dropped == (1, 2)
    assert session.projection.input_tokens == estimate_tokens(
        ahead.messages(session.messages), session.schemas
    )
    session.step()
    assert session.steps[2].context == ahead
    assert start(model(), "find it", tools=[search]).next_context is None


def test_a_cut_result_is_recorded_as_sent_and_redacted() -> None:
    result = run(model(3), "find it", tools=[search], context=DropToolResults(older_than=1,
                 keep_chars=4), redact=lambda text: text.replace("q0", "[x]"))  # fmt: skip
    edit = result.steps[2].context
    assert edit is not None
    written = [x for x in edit.sent if isinstance(x, Message)]
    assert [m.content for m in written] == [
        "[x]: \n[600 more characters dropped by the context policy]"
    ]
    assert edit.dropped == (2,)


def test_the_edit_survives_the_v2_file_and_the_journal(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    result = run(model(), "find it", tools=[search], context=KeepLast(turns=1),
                 trace_path=path, budget=Budget(max_steps=20))  # fmt: skip
    saved = tmp_path / "run.json"
    result.save(saved)
    for back in (load_trace(saved), load_trace(path)):
        assert [s.context for s in back.steps] == [s.context for s in result.steps]
        assert back.request(5) == result.request(5)
    assert "context" not in result.steps[0].to_dict()


# -- Summarize: a model call of the run ----------------------------------------------------------


def test_summarize_replaces_the_older_turns_billed_to_the_picodollar() -> None:
    writer = summarizer("a summary")
    policy = Summarize(writer, when_input_tokens_over=400, keep_last=1)
    ledger = MemoryLedger(limit_usd=1.0)
    played = model(4)
    result = run(played, "find it", tools=[search], context=policy, ledger=ledger,
                 price=PRICE, budget=Budget(max_steps=20, max_cost_usd=1.0))  # fmt: skip
    assert result.answer == "done"
    asked = writer.requests[0]
    made = [s for s in result.steps if s.context is not None and s.context.summary is not None]
    first = made[0]
    assert first.context is not None
    assert first.context.summary is not None
    summary = first.context.summary
    assert summary.replaced == (1, 2)  # step 0's reply and result, before the last turn
    assert list(asked.messages) == policy.request(result.messages[1:3])
    tokens = estimate_tokens(asked.messages)
    assert summary.projection.input_tokens == tokens
    assert summary.projection.output_tokens == 40
    assert summary.usage == Usage(tokens, 4)  # "a summary": counted by the ScriptedModel
    # $1 per million in, $5 out: to the picodollar
    assert to_pico(summary.cost_usd) == tokens * 1_000_000 + 4 * 5_000_000
    sent = result.request(first.index).messages
    assert sent[1] == Message("user", ctx.SUMMARY_PREFIX + "a summary")
    assert list(played.requests[first.index].messages) == list(sent)
    steps = sum(to_pico(s.cost_usd or 0) for s in result.steps)
    summaries = sum(
        to_pico(s.context.summary.cost_usd) for s in made if s.context and s.context.summary
    )
    assert to_pico(result.cost_usd or 0) == steps + summaries
    assert to_pico(result.summaries_usd) == summaries
    assert result.carried_usd == 0.0
    assert to_pico(ledger.spent_usd()) == to_pico(result.cost_usd or 0)
    assert ledger.reserved_usd() == 0


def test_a_journal_cut_before_its_end_keeps_what_the_summaries_cost(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    policy = Summarize(summarizer("s1", "s2", "s3"), when_input_tokens_over=400, keep_last=1)
    result = run(model(3), "find it", tools=[search], context=policy, trace_path=path)
    assert result.summaries_usd > 0
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # killed before its end
    cut = load_trace(path)
    assert to_pico(cut.cost_usd or 0) == to_pico(result.cost_usd or 0)
    assert cut.carried_usd == 0.0


def test_budget_report_counts_the_summaries_in_the_runs_cost() -> None:
    policy = Summarize(summarizer("s1", "s2", "s3"), when_input_tokens_over=400, keep_last=1)
    result = run(model(3), "find it", tools=[search], context=policy, price=PRICE)
    made = [s.context.summary for s in result.steps if s.context and s.context.summary]
    assert len(made) == 2
    report = budget_report([result])
    assert report.summaries == (2, result.summaries_usd, ("#0",))
    assert report.total_cost_usd == result.cost_usd
    assert report.max_cost_usd[50] is not None
    assert report.max_cost_usd[50] >= result.cost_usd  # type: ignore[operator]
    assert "summaries a context policy had written (part of the runs' cost):" in str(report)


def test_a_summary_that_would_not_fit_is_not_sent_and_the_turns_are_dropped() -> None:
    # an empty script (a call would raise), at $100 per million tokens: 40 out cost $0.004
    writer = ScriptedModel([], price=Price(100.0, 100.0), max_output_tokens=40)
    policy = Summarize(writer, when_input_tokens_over=400, keep_last=1)
    limit = 0.01
    result = run(model(4), "find it", tools=[search], context=policy,
                 budget=Budget(max_steps=20, max_cost_usd=limit))  # fmt: skip
    assert result.answer == "done"
    assert writer.requests == []
    edit = result.steps[2].context
    assert edit is not None
    assert edit.summary is None
    assert edit.dropped == (1, 2)
    assert edit.fallback is not None
    assert edit.fallback.startswith("a summary projected $")
    assert edit.fallback.endswith(": the turns before the last 1 were dropped")
    assert result.cost_usd is not None
    assert result.cost_usd <= limit
    assert result.summaries_usd == 0.0


class AsyncWriter:
    """An ``async def`` summarizer, priced as a model is."""

    price = Price(1.0, 5.0)
    max_output_tokens = 40

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, messages: list[Message], tools: list[Any]) -> Completion:
        self.calls += 1
        return Completion(text=f"summary {self.calls}", usage=Usage(100, 10))


@pytest.mark.parametrize("driver", ["arun", "run with a deadline"])
def test_an_async_summarizer_is_called_by_either_driver(driver: str) -> None:
    writer = AsyncWriter()
    policy = Summarize(writer, when_input_tokens_over=400, keep_last=1)
    if driver == "arun":
        result = asyncio.run(arun(model(3), "find it", tools=[search], context=policy))
    else:  # the model call on a worker thread, to keep max_seconds
        result = run(model(3), "find it", tools=[search], context=policy,
                     budget=Budget(max_seconds=60))  # fmt: skip
    assert result.answer == "done"
    assert writer.calls == 2
    assert to_pico(result.summaries_usd) == 2 * (100 * 1_000_000 + 10 * 5_000_000)
    assert result.request(3).messages[1].content == ctx.SUMMARY_PREFIX + "summary 2"


def test_a_summary_call_that_fails_drops_the_turns_instead() -> None:
    broken = summarizer()  # an empty script: the call raises IndexError
    policy = Summarize(broken, when_input_tokens_over=400, keep_last=1)
    result = run(model(3), "find it", tools=[search], context=policy)
    assert result.answer == "done"
    asked = [s.index for s in result.steps if s.context and s.context.summary]
    assert asked == [2, 3]  # asked again each turn the request passed the threshold
    assert len(broken.requests) == 2
    edit = result.steps[2].context
    assert edit is not None
    assert edit.summary is not None
    assert edit.summary.cost_usd == 0.0  # it raised: no reply, nothing billed
    assert edit.fallback is not None
    assert edit.fallback.startswith("the summary call failed (IndexError: ")
    assert edit.fallback.endswith("): the turns before the last 1 were dropped")
    assert edit.dropped == (1, 2)
    assert all(isinstance(x, int) for x in edit.sent)


def test_replay_and_fork_send_the_recorded_summary_without_calling_the_summarizer() -> None:
    policy = Summarize(summarizer("s1", "s2", "s3", "s4"), when_input_tokens_over=400, keep_last=1)
    result = run(model(4), "find it", tools=[search], context=policy, price=PRICE,
                 budget=Budget(max_steps=20))  # fmt: skip
    again = replay(result)
    assert first_divergence(result, again) is None
    assert again.cost_usd == result.cost_usd
    assert [s.context for s in again.steps] == [s.context for s in result.steps]
    for i in range(len(result.steps)):
        assert again.request(i) == result.request(i)
    # a fork goes on from the standing summary its history was sent, without a new one
    idle = summarizer()  # an empty script: a call would raise
    policy = Summarize(idle, when_input_tokens_over=10_000, keep_last=1)
    at = len(result.steps) - 1
    session = start(model(4), "find it", tools=[search], price=PRICE)
    forked = session.restore(result, ScriptedModel(["done"], price=PRICE, max_output_tokens=50),
                             "fork", {"context": policy}).fork(at)  # fmt: skip
    forked.step()
    before = result.request(at - 1).messages
    sent = forked.result.request(at).messages
    assert sent[:3] == before[:3]  # the head, and the summary step at - 1 was sent
    assert sent[1].content == ctx.SUMMARY_PREFIX + "s2"
    assert idle.requests == []


def test_a_fork_of_a_summarized_run_replays_as_it_ran() -> None:
    # summaries dearer than what the fork carries (the source's last step): the replay still
    # finds where the fork's own steps begin
    dear = ScriptedModel(["s"] * 8, price=Price(100.0, 100.0), max_output_tokens=40)
    policy = Summarize(dear, when_input_tokens_over=400, keep_last=1)
    session = start(model(6), "find it", tools=[search], context=policy)
    source = session.run()
    fork = session.fork(6, complete=ScriptedModel(["again"], price=PRICE, max_output_tokens=50))
    assert source.steps[6].cost_usd < source.summaries_usd  # type: ignore[operator]
    forked = fork.run()
    assert forked.summaries_usd > 0
    again = replay(forked)
    assert first_divergence(forked, again) is None
    assert to_pico(again.cost_usd or 0) == to_pico(forked.cost_usd or 0)
    assert again.carried_usd == forked.carried_usd


def test_resume_goes_on_from_the_standing_summary() -> None:
    policy = Summarize(summarizer("s1", "s2", "s3"), when_input_tokens_over=400, keep_last=1)
    stopped = run(model(6), "find it", tools=[search], context=policy,
                  budget=Budget(max_steps=4))  # fmt: skip
    idle = summarizer()  # an empty script: a call would raise
    rest = ScriptedModel(calling(6)[4:], price=PRICE, max_output_tokens=50)
    session = resume(stopped, rest, tools=[search], budget=Budget(max_steps=10),
                     context=Summarize(idle, when_input_tokens_over=10_000, keep_last=1))  # fmt: skip
    done = session.run()
    assert done.answer == "done"
    assert rest.requests[0].messages[1].content == ctx.SUMMARY_PREFIX + "s2"
    assert idle.requests == []
    later = sum(to_pico(s.cost_usd or 0) for s in done.steps[4:])
    assert to_pico(done.cost_usd or 0) == to_pico(stopped.cost_usd or 0) + later
    assert done.carried_usd == 0.0


# -- the guard's arithmetic --------------------------------------------------------------------

SEED = {"start_tokens": 8_000, "tokens_per_turn": 2_000, "max_output_tokens": 500,
        "price": Price(3.0, 15.0)}  # fmt: skip


def test_the_seeds_example_with_and_without_keep_last() -> None:
    assert worst_case_cost(10, **SEED) == 0.585  # the article's $0.59
    assert worst_case_cost(20, **SEED) == 1.77
    # KeepLast(4): turns 1-5 take 8k, 10k, 12k, 14k, 16k; every later one 16k
    assert worst_case_cost(10, **SEED, context=KeepLast(4)) == 0.495
    assert worst_case_cost(20, **SEED, context=KeepLast(4)) == 1.05
    per_turn = 0.048 + 0.0075  # 16k in, 500 out
    assert worst_case_cost(30, **SEED, context=KeepLast(4)) == pytest.approx(1.05 + 10 * per_turn)
    assert max_turns_for(1.77, **SEED) == 20
    assert max_turns_for(1.05, **SEED, context=KeepLast(4)) == 20
    assert worst_case_cost(20, **SEED, context=DropToolResults(older_than=2)) == 1.77


def test_keep_last_arithmetic_is_what_the_loop_projects() -> None:
    grows = ScriptedModel(calling(8), price=PRICE, max_output_tokens=50)
    result = run(grows, "find it", tools=[search], context=KeepLast(turns=3),
                 budget=Budget(max_steps=20))  # fmt: skip
    inputs = [s.projection.input_tokens for s in result.steps if s.projection]
    start_tokens, per_turn = inputs[0], inputs[1] - inputs[0]
    assert inputs[:5] == [start_tokens + per_turn * min(n, 3) for n in range(5)]
    shape = {"start_tokens": start_tokens, "tokens_per_turn": per_turn,
             "max_output_tokens": 50, "price": PRICE}  # fmt: skip
    total = sum(s.projection.cost_usd or 0 for s in result.steps[:5] if s.projection)
    assert worst_case_cost(5, **shape, context=KeepLast(turns=3)) == pytest.approx(total)


def test_summarize_arithmetic_bounds_a_run() -> None:
    writer = summarizer(*["s"] * 20)
    policy = Summarize(writer, when_input_tokens_over=20_000, keep_last=2)
    bound = worst_case_cost(20, **SEED, context=policy)
    assert bound < worst_case_cost(20, **SEED)
    assert max_turns_for(bound, **SEED, context=policy) == 20
    with pytest.raises(TypeError, match=r"^worst_case_cost: context must be KeepLast, "):
        worst_case_cost(2, **SEED, context=len)


# -- properties -------------------------------------------------------------------------------


def _paired(messages: Any) -> bool:
    waiting: set[Any] = set()
    for m in messages:
        if m.role == "assistant":
            if waiting:
                return False
            waiting = {c.id for c in m.tool_calls}
        elif m.role == "tool":
            if m.tool_call_id not in waiting:
                return False
            waiting.discard(m.tool_call_id)
    return not waiting


policies = st.sampled_from(["keep", "drop", "summarize"])


@given(scenarios(deterministic=True, malformed=False), policies, st.integers(1, 3), loop_options())
def test_no_request_separates_a_call_from_its_result_and_the_ceiling_holds(
    s: Scenario, which: str, n: int, options: dict[str, Any]
) -> None:
    built = build(s)
    writer = ScriptedModel(["a summary"], price=PRICE, max_output_tokens=20, repeat_last=True)
    policy: Any = {
        "keep": KeepLast(turns=n),
        "drop": DropToolResults(older_than=n, keep_chars=3),
        "summarize": Summarize(writer, when_input_tokens_over=60 * n, keep_last=n),
    }[which]
    result = run(built.model, "do the task", context=policy, **built.kwargs, **options)
    for i, step in enumerate(result.steps):
        sent = built.model.requests[i]
        assert _paired(sent.messages[1:])
        traced = tuple(result.request(i).messages)  # (not the budget_note line, nor a failed
        if step.error is None:  # final call's note: the trace keeps neither)
            assert tuple(sent.messages[: len(traced)]) == traced
        assert step.projection is not None
        counted = estimate_tokens(sent.messages, sent.tools)
        if not s.counted or options["budget_note"]:  # a usage reported for a whole context
            continue  # (an earlier budget line in it too) calibrates the count of the next
        if step.final_answer:  # projected with the tool schemas counted (see _tool_less_tokens)
            assert step.projection.input_tokens >= counted
        else:
            assert step.projection.input_tokens == counted
    if s.budget.max_cost_usd is not None and s.counted and result.cost_usd is not None:
        assert result.cost_usd <= s.budget.max_cost_usd + 1e-12


# -- attacks: a broken summarizer ----------------------------------------------------------------


class Interrupting:
    """A summarizer a person interrupts (Ctrl-C) while its call is in flight."""

    price = Price(1.0, 5.0)
    max_output_tokens = 40

    def __call__(self, messages: list[Message], tools: list[Any]) -> Completion:
        raise KeyboardInterrupt


def test_a_summary_call_interrupted_is_billed_and_recorded_in_the_journal(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    ledger = MemoryLedger(limit_usd=1.0)
    policy = Summarize(Interrupting(), when_input_tokens_over=400, keep_last=1)
    session = start(model(4), "find it", tools=[search], context=policy, price=PRICE,
                    trace_path=path, ledger=ledger)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        session.run()
    result = session.result
    step = result.steps[-1]
    assert step.index == 2
    assert step.cost_usd == 0.0  # the turn's own call was not sent
    assert step.error == ("interrupted (KeyboardInterrupt) while the context policy's summary "
                          "call was in flight; the model call was not sent")  # fmt: skip
    assert step.context is not None
    assert step.context.summary is not None
    worst = step.context.summary.projection.cost_usd
    assert worst is not None
    assert step.context.summary.cost_usd == worst  # it may be billed: at its worst
    assert step.context.fallback == (
        "the summary call was interrupted (KeyboardInterrupt): the turns before the last 1 "
        "were dropped"
    )
    assert result.carried_usd == 0.0
    assert result.summaries_usd == worst
    back = load_trace(path)  # no end line: the steps hold all the run spent
    assert to_pico(back.cost_usd or 0) == to_pico(result.cost_usd or 0)
    assert to_pico(ledger.spent_usd()) == to_pico(result.cost_usd or 0)
    assert first_divergence(result, replay(result)) is None


class Verbose:
    """A summarizer whose text is far longer than the turns it replaces (and than its usage
    says): 20,000 characters for 40 output tokens."""

    price = Price(1.0, 5.0)
    max_output_tokens = 40

    def __call__(self, messages: list[Message], tools: list[Any]) -> Completion:
        return Completion(text="H" * 20_000, usage=Usage(10, 40))


def test_a_summary_too_long_for_the_turn_after_it_is_billed_and_the_turns_dropped() -> None:
    limit = 0.05
    policy = Summarize(Verbose(), when_input_tokens_over=400, keep_last=1)
    result = run(model(4), "find it", tools=[search], context=policy, price=PRICE,
                 budget=Budget(max_steps=20, max_cost_usd=limit))  # fmt: skip
    assert result.answer == "done"  # the run goes on, on the turns it kept
    edit = result.steps[2].context
    assert edit is not None
    assert edit.summary is not None
    assert to_pico(edit.summary.cost_usd) == 10 * 1_000_000 + 40 * 5_000_000  # billed
    assert edit.dropped == (1, 2)
    assert edit.fallback == (
        "the summary written was too long for the turn after it to fit max_cost_usd: the "
        "turns before the last 1 were dropped"
    )
    assert all(isinstance(x, int) for x in edit.sent)
    assert result.carried_usd == 0.0  # each summary is in the step that asked it
    assert to_pico(result.summaries_usd) == 3 * (10 * 1_000_000 + 40 * 5_000_000)
    assert result.cost_usd is not None
    assert result.cost_usd <= limit
    assert first_divergence(result, replay(result)) is None
