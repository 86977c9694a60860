"""The loop and its guards, asserted as the seed article asks: exact counts, exact stops."""

from __future__ import annotations

import threading
import time
from typing import Any, Literal

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    ScriptedModel,
    Session,
    Stop,
    ToolCall,
    Usage,
    max_turns_for,
    run,
    start,
    tool,
)
from budgetloop._budget import estimate_message
from tests.conftest import PRICE, FakeClock, always_calls, growing_count

RESULT = "r" * 2000  # each tool result adds 2,000 tokens to the context under growing_count


def make_search(log: list[tuple[str, int]] | None = None) -> Any:
    calls = [0]

    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        calls[0] += 1
        if log is not None:
            log.append(("tool", calls[0]))
        return RESULT

    search.count = calls  # type: ignore[attr-defined]
    return search


# -- the cost guard: the article's "What to assert" -------------------------------------------


@pytest.mark.timeout(5)
def test_cost_guard_stops_before_the_turn_that_would_breach() -> None:
    log: list[tuple[str, int]] = []
    search = make_search(log)
    model = ScriptedModel([always_calls(log=log)], repeat_last=True)
    result = run(
        model,
        "find everything",
        tools=[search],
        budget=Budget(max_steps=1000, max_cost_usd=1.0),
        price=PRICE,
        max_output_tokens=400,
        count_tokens=growing_count(),
        repeat_limit=None,
    )
    # turn n costs (12,000 + 2,000(n-1)) x $3/M + 400 x $15/M = $0.042 + $0.006(n-1):
    # twelve turns cost $0.90, a thirteenth would bring it to $1.014.
    assert result.stop == Stop.MAX_COST_USD == "max_cost_usd"
    assert not result.answered
    assert result.answer is None
    assert len(result.steps) == 12
    assert model.calls == 12
    assert result.cost_usd == pytest.approx(0.90)
    assert result.cost_usd <= 1.0
    assert len(result.steps) == max_turns_for(
        1.0, start_tokens=12_000, tokens_per_turn=2_000, max_output_tokens=400, price=PRICE
    )
    # the partial work is there: every step, with what it cost
    assert [s.cost_usd for s in result.steps][:2] == pytest.approx([0.042, 0.048])
    # nothing ran after the final model call: its tools were skipped, not executed
    assert log[-1] == ("model", 12)
    assert search.count[0] == 11
    assert [c.status for c in result.steps[-1].tool_calls] == ["skipped"]
    assert len(result.tool_calls) == 11


def runaway(limit: float, output_tokens: int = 400) -> Any:
    """The article's runaway against a cost ceiling alone, on a context growing 2,000 a turn."""
    model = ScriptedModel([always_calls(output_tokens=output_tokens)], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=1000, max_cost_usd=limit),
        price=PRICE,
        max_output_tokens=output_tokens,
        count_tokens=growing_count(),
        repeat_limit=None,
    )
    return model, result


def test_cost_guard_equality_fits_despite_float_rounding() -> None:
    # $0.90 is not exact in binary floating point; the twelve turns sum to it exactly.
    _, result = runaway(0.9)
    assert len(result.steps) == 12
    assert result.cost_usd == 0.9
    _, below = runaway(0.899999)
    assert len(below.steps) == 11


def test_cost_guard_counts_output_tokens() -> None:
    # Output dominates: 20,000 tokens at $15/M is $0.30 a turn against ~$0.04 of input.
    model, result = runaway(1.0, output_tokens=20_000)
    # turns cost $0.336, $0.342, then a third at $0.348 would make $1.026
    assert result.stop == "max_cost_usd"
    assert model.calls == 2
    assert result.cost_usd == pytest.approx(0.678)
    assert result.cost_usd <= 1.0


def test_first_turn_that_cannot_fit_is_never_sent() -> None:
    model = ScriptedModel(["never sent"], price=PRICE, max_output_tokens=400)
    result = run(
        model, "hi", budget=Budget(max_cost_usd=0.01), count_tokens=growing_count(), tools=[]
    )
    assert result.stop == "max_cost_usd"
    assert model.calls == 0
    assert result.steps == ()
    assert result.cost_usd == 0
    assert "exceeds max_cost_usd" in (result.detail or "")


def test_cost_guard_projects_with_the_default_counter_and_model_attributes() -> None:
    # The README's shape: price and max_output_tokens come from the model callable.
    model = ScriptedModel(
        [always_calls(count=None)], repeat_last=True, price=PRICE, max_output_tokens=400
    )
    session = start(model, "go", tools=[make_search()], budget=Budget(max_cost_usd=0.2))
    before = session.projection
    assert model.calls == 0  # building a session and projecting call nothing
    assert before.output_tokens == 400
    assert before.limit_usd == 0.2
    assert before.spent_usd == 0
    assert before.fits
    assert before.cost_usd == PRICE.cost(before.input_tokens, 400)
    session.step()
    assert session.steps[0].projection == before


def test_cost_ceiling_without_price_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match=r"needs price=Price\(\.\.\.\) and max_output_tokens"):
        start(ScriptedModel(["x"]), "hi", budget=Budget(max_cost_usd=1.0))
    with pytest.raises(ValueError, match=r"needs max_output_tokens=\.\.\."):
        run(ScriptedModel(["x"], price=PRICE), "hi", budget=Budget(max_cost_usd=1.0))


# -- the other guards, each alone with the rest set high ---------------------------------------


def test_step_ceiling_alone() -> None:
    search = make_search()
    model = ScriptedModel([always_calls()], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=5), repeat_limit=None)
    assert result.stop == "max_steps"
    assert model.calls == 5
    assert len(result.steps) == 5
    assert search.count[0] == 4  # the fifth turn's call could never be read: skipped
    assert [c.status for c in result.steps[4].tool_calls] == ["skipped"]


def test_step_ceiling_stops_a_free_tight_loop() -> None:
    # A free local tool spends nothing, so only the step ceiling ends this.
    model = ScriptedModel([always_calls(output_tokens=0)], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[make_search()],
        budget=Budget(max_steps=50, max_cost_usd=1e6),
        price=PRICE,
        max_output_tokens=1,
        repeat_limit=None,
    )
    assert result.stop == "max_steps"
    assert model.calls == 50


def test_tool_call_ceiling_alone() -> None:
    twice = Completion(
        tool_calls=[ToolCall("search", {"query": "a"}), ToolCall("search", {"query": "b"})]
    )
    search = make_search()
    model = ScriptedModel([twice], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[search],
        budget=Budget(max_steps=100, max_tool_calls=7),
        repeat_limit=None,
    )
    # three turns run six calls; the fourth asks for two more, which would make eight
    assert result.stop == "max_tool_calls"
    assert model.calls == 4
    assert search.count[0] == 6
    assert len(result.tool_calls) == 6
    assert [c.status for c in result.steps[3].tool_calls] == ["skipped", "skipped"]


def test_repetition_guard_alone() -> None:
    search = make_search()
    model = ScriptedModel([always_calls(vary=False)], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=100))
    assert result.stop == "repeated"
    assert model.calls == 3
    assert search.count[0] == 2  # the third identical request is not run
    assert result.steps[2].tool_calls[0].status == "skipped"


def test_repetition_guard_ignores_key_order_and_json_spacing() -> None:
    calls = [
        ToolCall("search", '{"query": "x", "page": 1}'),
        ToolCall("search", {"page": 1, "query": "x"}),
        ToolCall("search", '{"page":1,"query":"x"}'),
    ]

    @tool
    def search(query: str, page: int = 0) -> str:
        """Search."""
        return "nothing"

    model = ScriptedModel([Completion(tool_calls=[c]) for c in calls])
    assert run(model, "go", tools=[search]).stop == "repeated"


def test_repetition_guard_can_be_turned_off_and_counts_runs_not_totals() -> None:
    search = make_search()
    off = run(
        ScriptedModel([always_calls(vary=False)], repeat_last=True),
        "go",
        tools=[search],
        budget=Budget(max_steps=6),
        repeat_limit=None,
    )
    assert off.stop == "max_steps"
    a = Completion(tool_calls=[ToolCall("search", {"query": "a"})])
    b = Completion(tool_calls=[ToolCall("search", {"query": "b"})])
    alternating = run(ScriptedModel([a, a, b, a, a, "done"]), "go", tools=[make_search()])
    assert alternating.stop == "answered"


def test_wall_clock_alone_with_a_fake_clock(clock: FakeClock) -> None:
    @tool
    def slow(query: str) -> str:
        """Takes two seconds."""
        clock.advance(2.0)
        return "ok"

    model = ScriptedModel([always_calls("slow")], repeat_last=True)
    result = run(
        model,
        "go",
        tools=[slow],
        budget=Budget(max_steps=100, max_seconds=5),
        clock=clock,
        repeat_limit=None,
    )
    # batches start at 0 s, 2 s and 4 s; at 6 s no model call may start
    assert result.stop == "max_seconds"
    assert model.calls == 3
    assert len(result.tool_calls) == 3
    assert result.seconds == 6.0


def test_no_batch_starts_at_the_deadline(clock: FakeClock) -> None:
    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        clock.advance(5.0)  # the model call itself uses up the time
        return Completion(tool_calls=[ToolCall("search", {"query": "q"})])

    search = make_search()
    result = run(complete, "go", tools=[search], budget=Budget(max_seconds=5), clock=clock)
    assert result.stop == "max_seconds"
    assert search.count[0] == 0
    assert result.steps[0].tool_calls[0].status == "skipped"


@pytest.mark.timeout(10)
def test_a_hanging_tool_does_not_hold_the_run_past_the_deadline() -> None:
    release = threading.Event()

    @tool
    def hang(query: str) -> str:
        """Never returns on its own."""
        release.wait(30)
        return "late"

    @tool
    def quick(query: str) -> str:
        """Returns at once."""
        return "fast"

    model = ScriptedModel(
        [
            Completion(
                tool_calls=[ToolCall("quick", {"query": "a"}), ToolCall("hang", {"query": "b"})]
            )
        ]
    )
    began = time.monotonic()
    result = run(model, "go", tools=[quick, hang], budget=Budget(max_seconds=0.3))
    took = time.monotonic() - began
    release.set()
    assert took < 3
    assert result.stop == "max_seconds"
    quick_call, hang_call = result.steps[0].tool_calls
    assert (quick_call.status, quick_call.result) == ("ok", "fast")
    assert hang_call.status == "error"
    assert hang_call.error == "abandoned: still running when the max_seconds deadline passed"


@pytest.mark.timeout(10)
def test_a_hanging_model_is_abandoned_at_the_deadline() -> None:
    release = threading.Event()

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        release.wait(30)
        return Completion(text="too late")

    began = time.monotonic()
    result = run(complete, "go", budget=Budget(max_seconds=0.2))
    release.set()
    assert time.monotonic() - began < 3
    assert result.stop == "max_seconds"
    assert len(result.steps) == 1
    assert (result.steps[0].error or "").startswith("TimeoutError: the model call was still")


# -- tools, arguments, parallel batches --------------------------------------------------------


def test_a_tool_that_raises_becomes_a_result_the_model_reads() -> None:
    @tool
    def price(isin: str) -> float:
        """Price."""
        raise LookupError(f"{isin} is not in the price list")

    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("price", {"isin": "X1"}, "c1")]), "sorry"]
    )
    result = run(model, "go", tools=[price])
    assert result.stop == "answered"
    assert result.answer == "sorry"
    sent = model.requests[1].messages[-1]
    assert sent == Message(
        "tool", "error: LookupError: X1 is not in the price list", tool_call_id="c1", name="price"
    )
    assert len(result.failed) == 1
    assert result.failed[0].error == "LookupError: X1 is not in the price list"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("nope", {}, "error: unknown tool 'nope'; available tools: convert, price"),
        ("convert", '{"amount": 1', "error: convert: arguments are not valid JSON ("),
        ("convert", "[1, 2]", "error: convert: arguments must be a JSON object, got array"),
        ("convert", {"amount": 1, "rate": 2, "fee": 3}, "error: convert.fee: unknown argument; expected amount, rate, currency"),
        ("convert", {"rate": 2}, "error: convert.amount: missing required argument"),
        ("convert", {"amount": "five", "rate": 2}, "error: convert.amount: expected number, got str"),
        ("convert", {"amount": 1, "rate": 2, "currency": "EUR"}, 'error: convert.currency: expected one of "SEK", "USD", got "EUR"'),
        ("price", {"isin": 12}, "error: price.isin: expected string, got int"),
    ],
)  # fmt: skip
def test_bad_arguments_come_back_in_words_the_model_can_act_on(
    name: str, arguments: Any, message: str
) -> None:
    @tool
    def price(isin: str) -> float:
        """Price."""
        return 1.0

    @tool
    def convert(amount: float, rate: float, currency: Literal["SEK", "USD"] = "USD") -> float:
        """Convert."""
        return amount * rate

    model = ScriptedModel([Completion(tool_calls=[ToolCall(name, arguments)]), "ok"])
    result = run(model, "go", tools=[convert, price])
    assert result.stop == "answered"
    content = model.requests[1].messages[-1].content or ""
    if message.endswith("("):  # the JSON parser's own words follow
        assert content.startswith(message)
    else:
        assert content == message
    assert result.steps[0].tool_calls[0].status == "error"


def test_a_number_written_as_a_string_is_coerced_once_and_both_forms_are_kept() -> None:
    seen: list[Any] = []

    @tool
    def convert(amount: float, times: int) -> float:
        """Convert."""
        seen.append((amount, times))
        return amount * times

    raw = '{"amount": "118.4", "times": "2"}'
    model = ScriptedModel([Completion(tool_calls=[ToolCall("convert", raw)]), "ok"])
    result = run(model, "go", tools=[convert])
    call = result.steps[0].tool_calls[0]
    assert seen == [(118.4, 2)]
    assert call.raw_arguments == raw
    assert call.arguments == {"amount": 118.4, "times": 2}
    assert call.coerced == ("convert.amount", "convert.times")
    assert call.result == "236.8"
    not_an_int = ScriptedModel(
        [Completion(tool_calls=[ToolCall("convert", {"amount": 1, "times": "3.5"})]), "ok"]
    )
    run(not_an_int, "go", tools=[convert])
    assert (
        not_an_int.requests[1].messages[-1].content
        == "error: convert.times: expected integer, got str"
    )


def test_results_are_encoded_for_the_model() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque>"

    @tool
    def info(kind: str) -> Any:
        """Info."""
        return {
            "str": "plain text",
            "num": 118.4,
            "dict": {"a": [1, None]},
            "odd": {"x": Opaque()},
        }[kind]

    kinds = ["str", "num", "dict", "odd"]
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("info", {"kind": k}) for k in kinds]), "ok"]
    )
    result = run(model, "go", tools=[info])
    assert [c.result for c in result.steps[0].tool_calls] == [
        "plain text",
        "118.4",
        '{"a": [1, null]}',
        '{"x": "<Opaque>"}',
    ]


@pytest.mark.timeout(10)
def test_parallel_calls_run_at_once_and_return_in_request_order() -> None:
    barrier = threading.Barrier(3, timeout=5)  # passes only if all three calls run together

    @tool
    def wait(delay: float, label: str) -> str:
        """Wait, then answer."""
        barrier.wait()
        time.sleep(delay)
        return label

    calls = [
        ToolCall("wait", {"delay": d, "label": lab}, f"id{lab}")
        for d, lab in [(0.3, "a"), (0.0, "b"), (0.1, "c")]
    ]
    model = ScriptedModel([Completion(tool_calls=calls), "done"])
    result = run(model, "go", tools=[wait])
    assert [c.result for c in result.steps[0].tool_calls] == ["a", "b", "c"]
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [
        ("ida", "a"),
        ("idb", "b"),
        ("idc", "c"),
    ]


def test_plain_functions_are_decorated_and_duplicate_names_refused() -> None:
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    model = ScriptedModel([Completion(tool_calls=[ToolCall("double", {"x": 21})]), "42"])
    result = run(model, "go", tools=[double])
    assert result.tool_calls[0].result == "42"
    assert model.requests[0].tools[0]["name"] == "double"
    with pytest.raises(ValueError, match="two tools are named 'double'"):
        run(model, "go", tools=[double, tool(double)])

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(TypeError, match="tool untyped: parameter 'x' has no type hint"):
        start(model, "go", tools=[untyped])


# -- the model's side --------------------------------------------------------------------------


def test_a_model_that_raises_ends_the_run_with_the_steps_kept() -> None:
    def boom(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise RuntimeError("provider unavailable")

    model = ScriptedModel([Completion(tool_calls=[ToolCall("search", {"query": "a"})]), boom])
    result = run(model, "go", tools=[make_search()])
    assert result.stop == "model_error"
    assert result.error == "RuntimeError: provider unavailable"
    assert len(result.steps) == 2
    assert result.steps[0].tool_calls[0].status == "ok"
    assert result.steps[1].error == "RuntimeError: provider unavailable"


@pytest.mark.parametrize(("returned", "kind"), [(None, "NoneType"), ("text", "str")])
def test_a_model_that_returns_something_else_is_a_model_error(returned: Any, kind: str) -> None:
    result = run(lambda messages, tools: returned, "go")
    assert result.stop == "model_error"
    assert result.error == (
        f"TypeError: the model returned {kind}, expected a Completion(text=..., tool_calls=[...])"
    )


def test_an_exhausted_script_is_a_model_error_not_a_crash() -> None:
    result = run(ScriptedModel([]), "go")
    assert result.stop == "model_error"
    assert result.error == (
        "IndexError: ScriptedModel: call 1 but the script has 0 entries; "
        "add entries or pass repeat_last=True."
    )


def test_spent_is_reported_cost_else_priced_usage() -> None:
    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("search", {"query": "a"})], usage=Usage(1000, 100), cost_usd=0.5),
            Completion(text="done", usage=Usage(1000, 100)),
        ]
    )  # fmt: skip
    result = run(model, "go", tools=[make_search()], price=PRICE)
    assert [s.cost_usd for s in result.steps] == [0.5, 0.0045]
    assert result.cost_usd == 0.5045


# -- stepping ----------------------------------------------------------------------------------


def test_stepping_and_running_give_the_same_trace() -> None:
    def build() -> Any:
        clock = FakeClock()

        @tool
        def search(query: str) -> str:
            """Search."""
            clock.advance(0.25)
            return query.upper()

        script: list[Any] = [
            Completion(text="first", tool_calls=[ToolCall("search", {"query": "a"}), ToolCall("search", '{"query": "b"}')]),
            Completion(tool_calls=[ToolCall("search", {"query": "c"})]),
            "the answer",
        ]  # fmt: skip
        model = ScriptedModel(script, price=PRICE, max_output_tokens=300)
        return start(model, "go", tools=[search], budget=Budget(max_cost_usd=1.0), clock=clock)

    stepped = build()
    taken = []
    while not stepped.done:
        taken.append(stepped.step())
    assert stepped.step() is None
    assert [s.index for s in taken] == [0, 1, 2]
    ran = build().run()
    assert stepped.result.to_dict() == ran.to_dict()
    assert ran.answer == "the answer"
    assert ran.seconds == 0.75


def test_session_state_is_visible_between_steps() -> None:
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("search", {"query": "a"})]), "done"],
        price=PRICE,
        max_output_tokens=100,
    )
    session = start(model, "go", tools=[make_search()], system="be brief")
    assert [m.role for m in session.messages] == ["system", "user"]
    assert session.result.stop is None
    assert not session.done
    first = session.projection
    session.step()
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool"]
    second = session.projection
    assert second.input_tokens > first.input_tokens + 600  # the 2,000-character result
    assert second.spent_usd == session.result.cost_usd > 0
    assert session.result.stop is None
    assert session.run().stop == "answered"
    assert session.done


def test_prompt_may_be_a_list_of_messages() -> None:
    model = ScriptedModel(["hi"])
    history = [Message("user", "one"), Message("assistant", "two"), Message("user", "three")]
    result = run(model, history, system="sys")
    assert [m.content for m in model.requests[0].messages] == ["sys", "one", "two", "three"]
    assert result.messages[-1] == Message("assistant", "hi")
    with pytest.raises(TypeError, match=r"prompt\[1\] is dict"):
        run(model, [Message("user", "a"), {"role": "user"}])  # type: ignore[list-item]


def test_projection_is_calibrated_by_the_usage_a_model_reports() -> None:
    # The provider says the first request was 100 tokens; our estimate said more. The next
    # projection takes the 100 as exact and estimates only what was appended since.
    first = Completion(tool_calls=[ToolCall("search", {"query": "a"}, "c1")], usage=Usage(100, 5))
    model = ScriptedModel([first, "done"], price=PRICE, max_output_tokens=50)
    session = start(model, "go " * 200, tools=[make_search()])
    estimated = session.projection.input_tokens
    assert estimated > 100
    session.step()
    appended = session.messages[-2:]
    added = sum(estimate_message(m) for m in appended)
    assert session.projection.input_tokens == 100 + added
    assert session.projection.cost_usd == PRICE.cost(100 + added, 50)


def test_repetition_guard_sees_real_arguments_when_the_trace_is_redacted() -> None:
    search = make_search()
    model = ScriptedModel([always_calls(vary=False)], repeat_last=True)
    result = run(model, "go", tools=[search], budget=Budget(max_steps=100), redact=lambda s: s[:1])
    assert result.stop == "repeated"
    assert model.calls == 3
    assert result.steps[0].tool_calls[0].raw_arguments == {"q": "s"}


def test_fresh_is_the_same_setup_at_its_first_step() -> None:
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("search", {"query": "a"})]), "done"],
        price=PRICE,
        max_output_tokens=100,
    )
    session = start(
        model,
        "go",
        tools=[make_search()],
        system="be brief",
        budget=Budget(max_steps=4, max_cost_usd=1.0),
        redact=str.upper,
        max_result_chars=10,
        clock=FakeClock(),
    )
    first = session.run()
    model.reset()
    again = session.fresh()
    assert type(again) is Session
    assert not again.done
    assert again.messages == [Message("system", "be brief"), Message("user", "go")]
    assert (again.budget, again.price, again.options.redact) == (session.budget, PRICE, str.upper)
    assert again.run().to_dict() == first.to_dict()
    assert first.steps[0].tool_calls[0].truncated == 2000


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Completion(text="x", cost_usd=float("nan")), "ValueError: Completion.cost_usd"),
        (lambda: Completion(text="x", usage=Usage(-5, 2)), "ValueError: Usage.input_tokens"),
    ],
)
def test_a_model_reporting_impossible_cost_or_usage_is_a_model_error(
    make: Any, message: str
) -> None:
    result = run(lambda messages, tools: make(), "go", price=PRICE)
    assert result.stop == "model_error"
    assert (result.error or "").startswith(message)
    assert result.cost_usd == 0


def test_a_result_or_an_error_that_cannot_be_shown_is_still_a_result() -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Mute(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    @tool
    def odd(fail: bool) -> object:
        """Odd."""
        if fail:
            raise Mute
        return Unprintable()

    calls = [ToolCall("odd", {"fail": False}), ToolCall("odd", {"fail": True})]
    result = run(ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[odd])
    assert result.stop == "answered"
    assert [c.error for c in result.steps[0].tool_calls] == [
        "ValueError: the result could not be encoded as text (RuntimeError: no repr)",
        "Mute: (its message could not be shown)",
    ]

    def mute_model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise Mute

    assert run(mute_model, "go").error == "Mute: (its message could not be shown)"


def test_a_trace_path_in_a_missing_folder_fails_at_start(tmp_path: Any) -> None:
    missing = tmp_path / "nope" / "run.jsonl"
    with pytest.raises(
        ValueError, match=r"run: trace_path '.*run\.jsonl': the folder '.*nope' does not exist\."
    ):
        start(ScriptedModel(["x"]), "go", trace_path=missing)
