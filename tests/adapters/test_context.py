"""ContextTokens: the next request's input tokens, counted incrementally and calibrated by the
usage a provider reports, driven the way the loop drives it (append, count, sending, reported).
The provider's true counts come from OpenAI's o200k tokenizer, offline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from benchmarks.estimate_table import prose
from budgetloop import Message, ToolCall, estimate_tokens, strict_tokens, tool
from budgetloop._rules._budget import estimate_message
from budgetloop._rules._context import ContextTokens
from budgetloop.adapters import tiktoken_counter

TRUTH = tiktoken_counter("o200k_base")


def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the address
    """
    return url


SCHEMAS = [tool(fetch).schema]
PROMPT = [
    Message("system", "You fetch pages and summarise them."),
    Message("user", "What do the three pages say?"),
]


def context(count_tokens: Any = None) -> ContextTokens:
    ctx = ContextTokens(SCHEMAS, count_tokens)
    for message in PROMPT:
        ctx.append(message)
    return ctx


def turn(i: int, page: str) -> tuple[Message, Message]:
    """Turn ``i``'s assistant message (one call to fetch) and the call's result, ``page``."""
    call = ToolCall("fetch", {"url": f"https://x.test/{i}"}, f"c{i}")
    result = Message("tool", page, tool_call_id=f"c{i}", name="fetch")
    return Message("assistant", None, (call,)), result


def run_shaped(
    ctx: ContextTokens, pages: Sequence[str], hidden: int = 0
) -> tuple[list[int], list[int]]:
    """Turns as the loop takes them: project, send, the provider reports its true count (plus
    ``hidden`` tokens of its own), then the assistant's call (projected first) and its result
    join the context. Returns each turn's projection and true input tokens."""
    messages = list(PROMPT)
    projected, true = [], []
    for i, page in enumerate(pages):
        projected.append(ctx.count())
        ctx.sending()
        true.append(TRUTH(messages, SCHEMAS) + hidden)
        ctx.reported(true[-1])
        call, result = turn(i, page)
        ctx.count([call])
        for message in (call, result):
            ctx.append(message)
            messages.append(message)
    return projected, true


# -- counting without a count_tokens -------------------------------------------------------------


def test_before_any_report_the_count_is_the_default_estimate() -> None:
    ctx = context()
    extra = [Message("assistant", "Fetching.", (ToolCall("fetch", {"url": "a"}, "c0"),))]
    assert ctx.count() == estimate_tokens(PROMPT, SCHEMAS) == 148
    assert ctx.count(extra) == estimate_tokens([*PROMPT, *extra], SCHEMAS)
    assert ctx.per_message == tuple(estimate_message(m) for m in PROMPT) == (17, 14)
    assert ctx.ratio == 1.0


def test_a_report_is_exact_for_what_was_sent_and_what_follows_is_estimated() -> None:
    ctx = context()
    ctx.sending()
    late = Message("user", "One more thing.")
    ctx.append(late)  # after the request went out: not covered by its report
    ctx.reported(79)
    assert ctx.count() == 79 + estimate_message(late)
    reply = Message("assistant", "Sure.")
    ctx.append(reply)
    assert ctx.count() == 79 + estimate_message(late) + estimate_message(reply)
    ctx.sending()
    ctx.reported(90)
    assert ctx.count() == 90


def test_an_extra_message_is_counted_as_it_will_be_appended() -> None:
    ctx = context()
    call = Message("assistant", None, (ToolCall("fetch", {"url": "https://x.test"}, "c0"),))
    before, with_call = ctx.count(), ctx.count([call])
    assert with_call - before == estimate_message(call) == 29
    ctx.append(call)
    assert ctx.count() == with_call
    assert ctx.per_message[-1] == 29


def test_a_report_before_any_request_is_sent_is_a_mistake() -> None:
    with pytest.raises(
        RuntimeError, match=r"^ContextTokens\.reported: a request must be sent first, got none"
    ):
        context().reported(10)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-1, ValueError, "ContextTokens.reported: input_tokens must be an int >= 0, got -1."),
        (True, TypeError, "ContextTokens.reported: input_tokens must be an int >= 0, got bool."),
        (1.5, TypeError, "ContextTokens.reported: input_tokens must be an int >= 0, got float."),
    ],
)
def test_a_report_that_is_not_a_token_count_is_refused(
    value: Any, error: type[Exception], message: str
) -> None:
    ctx = context()
    ctx.sending()
    with pytest.raises(error) as raised:
        ctx.reported(value)
    assert str(raised.value) == message


# -- calibration that learns ---------------------------------------------------------------------

DENSE = ["zqk" * 3000, "xjq" * 3000, "vwz" * 3000, "zqk" * 3000]


def test_tools_returning_dense_text_stop_being_undercounted_after_one_turn() -> None:
    ctx = context()
    projected, true = run_shaped(ctx, DENSE)
    # the first page is estimated at a third of its tokens: that turn is undercounted ...
    assert TRUTH.text(DENSE[0]) == 9000
    assert (projected[1], true[1]) == (3118, 9107)
    # ... and its report shows it: what was appended since the first report was this dense
    assert ctx.ratio == (true[1] - true[0]) / (projected[1] - true[0]) == 9028 / 3039
    # so every later page is projected at that density: never below the true count again
    assert projected == [148, 3118, 18136, 24164]
    assert true == [79, 9107, 15135, 21163]
    assert all(p >= t for p, t in zip(projected[2:], true[2:], strict=True))
    # each message appended after the lesson is counted at the learned ratio
    assert ctx.per_message[-1] == math.ceil(
        estimate_message(Message("tool", DENSE[3], tool_call_id="c3", name="fetch")) * ctx.ratio
    )


def test_without_learning_each_dense_turn_would_be_undercounted() -> None:
    # What the last report plus the plain estimate of the messages appended since would be:
    # below the true count on every turn after a page.
    projected, true = run_shaped(context(), DENSE)
    plain = [
        true[i - 1] + sum(estimate_message(m) for m in turn(i - 1, DENSE[i - 1]))
        for i in (1, 2, 3)
    ]
    assert plain[0] == projected[1]
    assert [t - p for p, t in zip(plain, true[1:], strict=True)] == [5989, 2989, 2989]


def test_prose_keeps_the_plain_estimate() -> None:
    pages = prose()[:4]
    ctx = context()
    projected, true = run_shaped(ctx, pages)
    assert ctx.ratio == 1.0
    assert all(p >= t for p, t in zip(projected, true, strict=True))
    # after each report: the report, plus the plain estimate of what was appended since
    assert projected[2] - true[1] == sum(ctx.per_message[4:6])
    assert ctx.per_message[4:6] == tuple(estimate_message(m) for m in turn(1, pages[1]))


def test_what_a_provider_adds_to_every_request_does_not_move_the_ratio() -> None:
    # Anthropic, for one, adds a system prompt of its own when tools are offered.
    ctx = context()
    projected, true = run_shaped(ctx, prose()[:3], hidden=400)
    assert ctx.ratio == 1.0
    assert all(p >= t for p, t in zip(projected[1:], true[1:], strict=True))


def test_the_ratio_is_never_lowered_by_prose_after_dense_text() -> None:
    ctx = context()
    run_shaped(ctx, [DENSE[0], DENSE[1], *prose()[:2]])
    assert ctx.ratio == 9028 / 3039


# -- with a count_tokens -------------------------------------------------------------------------


def test_count_tokens_counts_the_whole_request_with_the_extra_messages() -> None:
    seen: list[tuple[list[Message], list[dict[str, Any]]]] = []

    def count(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> int:
        seen.append((list(messages), list(tools)))
        return 7 * len(messages)

    ctx = context(count)
    extra = Message("assistant", "hi")
    assert (ctx.count(), ctx.count([extra])) == (14, 21)
    assert seen == [(PROMPT, SCHEMAS), ([*PROMPT, extra], SCHEMAS)]
    assert ctx.per_message == (17, 14)  # the breakdown stays the estimate


def test_strict_tokens_projects_every_dense_turn_at_or_above_the_true_count() -> None:
    projected, true = run_shaped(context(strict_tokens), DENSE)
    assert all(p >= t for p, t in zip(projected, true, strict=True))


class Index:
    def __index__(self) -> int:
        return 12


@pytest.mark.parametrize(
    ("value", "error", "arrived"),
    [
        (-1, ValueError, "got -1."),
        (1.5, TypeError, "got float 1.5."),
        (float("nan"), TypeError, "got float nan."),
        ("12", TypeError, "got str '12'."),
        (None, TypeError, "got None."),
        (True, TypeError, "got bool True."),
        ("x" * 1000, TypeError, "got str 'xxxxxxxxxxxx...xxxxxxxxxxxxx'."),
    ],
)
def test_what_count_tokens_returns_must_be_a_token_count(
    value: Any, error: type[Exception], arrived: str
) -> None:
    ctx = context(lambda messages, tools: value)
    with pytest.raises(error) as raised:
        ctx.count()
    assert str(raised.value) == (
        "count_tokens: what count_tokens(messages, tools) returns must be an int >= 0, " + arrived
    )


def test_an_int_like_count_is_taken_as_its_int() -> None:
    assert context(lambda messages, tools: Index()).count() == 12


def test_a_count_tokens_that_cannot_be_called_is_refused_at_once() -> None:
    with pytest.raises(TypeError) as raised:
        ContextTokens(SCHEMAS, 3)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "count_tokens must be a callable (messages, tools) -> int or None, got int."
    )
