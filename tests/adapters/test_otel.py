"""budgetloop.otel with the real OpenTelemetry SDK: the in-memory exporter for names, parents,
attributes, timing and content; an OTLP/HTTP exporter sending to a receiver on 127.0.0.1 for
what arrives over the wire."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import budgetloop
from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, Usage, run, start
from tests.conftest import FakeClock
from tests.extras_support import printed_without

HAVE_OTEL = importlib.util.find_spec("opentelemetry.sdk") is not None
needs_otel = pytest.mark.skipif(
    not HAVE_OTEL,
    reason="opentelemetry-sdk is not installed (pip install 'budgetloop[otel]'; the dev extra has it)",
)
if HAVE_OTEL:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, StatusCode

    from budgetloop.otel import OtelHook, export_trace

ROOT = Path(__file__).resolve().parents[2]
PRICE = Price(3.0, 15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)  # assumed rates
SECRET = "sk-live-0123456789"


def timed(clock: FakeClock, seconds: float, completion: Completion) -> Callable[..., Completion]:
    """A scripted turn that takes ``seconds`` on the run's clock."""

    def turn(messages: Any, tools: Any) -> Completion:
        clock.advance(seconds)
        return completion

    return turn


def make_tools(clock: FakeClock) -> list[Callable[..., Any]]:
    def lookup(isin: str) -> float:
        """Look up a price.

        Args:
            isin: the identifier
        """
        clock.advance(1.0)
        if isin == "XX":
            raise LookupError(f"{isin} is not in the price list")
        return 118.4

    def convert(amount: float, rate: float) -> float:
        """Convert an amount.

        Args:
            amount: the amount
            rate: the rate
        """
        clock.advance(0.5)
        return round(amount * rate, 2)

    return [lookup, convert]


def three_turns(clock: FakeClock, **options: Any) -> budgetloop.Session:
    """Turn 0 looks up (2 s model, 1 s tool), turn 1 converts with a coerced argument (1 s, 0.5 s),
    turn 2 answers (0.25 s). Usage with cache reads and writes; every request counted as 2,000
    input tokens, above what is reported, as a projection should be."""
    model = ScriptedModel(
        [
            timed(
                clock,
                2.0,
                Completion(
                    "Looking it up.",
                    (ToolCall("lookup", {"isin": "SE01"}, "c0"),),
                    usage=Usage(1000, 20, cache_read_tokens=0, cache_write_tokens=900),
                ),
            ),
            timed(
                clock,
                1.0,
                Completion(
                    "Converting.",
                    (ToolCall("convert", {"amount": "118.4", "rate": 0.5}, "c1"),),
                    usage=Usage(1100, 30, cache_read_tokens=900),
                ),
            ),
            timed(clock, 0.25, Completion("It is 59.2.", usage=Usage(1150, 8, 900))),
        ]
    )
    return start(
        model,
        "What is SE01 worth?",
        system="Use the tools.",
        tools=make_tools(clock),
        budget=Budget(max_steps=5, max_cost_usd=0.5),
        price=PRICE,
        max_output_tokens=100,
        count_tokens=lambda messages, tools: 2000,
        clock=clock,
        **options,
    )


@pytest.fixture
def spans() -> Iterator[tuple[Any, Any]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def by_name(finished: Any) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        out.setdefault(span.name, []).append(span)
    return out


def everything(span: ReadableSpan) -> str:
    """Every text a span carries: name, attributes, status description, events."""
    return json.dumps(
        [span.name, dict(span.attributes or {}), span.status.description, list(span.events)],
        default=str,
        ensure_ascii=False,
    )


# -- after the fact ------------------------------------------------------------------------------


@needs_otel
def test_export_trace_names_parents_and_kinds(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    export_trace(result, provider, model="claude-sonnet-4-6", provider="anthropic")

    finished = exporter.get_finished_spans()
    assert [s.name for s in finished] == [
        "chat claude-sonnet-4-6",
        "execute_tool lookup",
        "chat claude-sonnet-4-6",
        "execute_tool convert",
        "chat claude-sonnet-4-6",
        "invoke_agent",
    ]
    agent = finished[-1]
    assert agent.parent is None
    assert agent.kind is SpanKind.INTERNAL
    for child in finished[:-1]:
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id
    assert [s.kind for s in finished[:-1]] == [
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
    ]
    assert [s.instrumentation_scope.name for s in finished] == ["budgetloop"] * 6


@needs_otel
def test_export_trace_lays_out_the_recorded_seconds(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    assert [s.seconds for s in result.steps] == [3.0, 1.5, 0.25]
    export_trace(result, provider, start_time=1000.0)

    times = [(s.name, s.start_time, s.end_time) for s in exporter.get_finished_spans()]
    second = 10**9
    assert times == [
        ("chat", 1000 * second, 1002 * second),
        ("execute_tool lookup", 1002 * second, 1003 * second),
        ("chat", 1003 * second, 1004 * second),
        ("execute_tool convert", 1004 * second, 1004 * second + second // 2),
        ("chat", 1004 * second + second // 2, 1004 * second + 3 * second // 4),
        ("invoke_agent", 1000 * second, 1004 * second + 3 * second // 4),
    ]


@needs_otel
def test_export_trace_without_a_start_time_ends_the_run_now(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    import time

    before = time.time_ns()
    export_trace(result, provider)
    after = time.time_ns()

    agent = exporter.get_finished_spans()[-1]
    assert agent.end_time - agent.start_time == 4_750_000_000
    assert before <= agent.end_time <= after


@needs_otel
def test_chat_spans_carry_the_genai_usage_and_the_budget(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    export_trace(result, provider, model="claude-sonnet-4-6", provider="anthropic")

    chats = by_name(exporter.get_finished_spans())["chat claude-sonnet-4-6"]
    assert dict(chats[0].attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.request.max_tokens": 100,
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_write.input_tokens": 900,
        "gen_ai.usage.cache_creation.input_tokens": 900,
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.conversation.id": result.run_id,
        # 100 uncached at $3 and 900 written at $3.75 in, 20 at $15 out: MLflow shows all three
        "mlflow.llm.cost": json.dumps(
            {"input_cost": 0.003675, "output_cost": 0.0003, "total_cost": 0.003975}
        ),
        "budgetloop.step.index": 0,
        "budgetloop.step.cost_usd": PRICE.usage_cost(Usage(1000, 20, 0, 900)),
        "budgetloop.step.projected_input_tokens": 2000,
        "budgetloop.step.projected_cost_usd": 0.009,  # 2,000 at the cache-write rate, 100 out
        "budgetloop.step.under_projected": False,
        "budgetloop.spent_usd": 0.0,
        "budgetloop.limit_usd": 0.5,
        "budgetloop.step.skipped_tool_calls": 0,
    }
    second = dict(chats[1].attributes or {})
    assert second["gen_ai.usage.cache_read.input_tokens"] == 900
    assert second["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert second["budgetloop.spent_usd"] == result.steps[0].cost_usd
    assert second["budgetloop.step.index"] == 1
    assert [c.status.status_code for c in chats] == [StatusCode.UNSET] * 3


@needs_otel
def test_the_agent_span_says_how_the_run_ended(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    export_trace(result, provider, model="m", provider="p", agent_name="pricer")

    agent = exporter.get_finished_spans()[-1]
    assert agent.name == "invoke_agent pricer"
    assert dict(agent.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "p",
        "gen_ai.request.model": "m",
        "gen_ai.agent.name": "pricer",
        "gen_ai.usage.input_tokens": 3250,
        "gen_ai.usage.output_tokens": 58,
        "gen_ai.usage.cache_read.input_tokens": 1800,
        "gen_ai.usage.cache_write.input_tokens": 900,
        "gen_ai.usage.cache_creation.input_tokens": 900,
        "gen_ai.conversation.id": result.run_id,
        "budgetloop.cost_usd": result.cost_usd,
        "budgetloop.seconds": 4.75,
        "budgetloop.steps": 3,
        "budgetloop.tool_calls": 2,
        "budgetloop.tool_calls.failed": 0,
        "budgetloop.tool_calls.skipped": 0,
        "budgetloop.stop": "answered",
        "budgetloop.answered": True,
        "budgetloop.budget.max_cost_usd": 0.5,
        "budgetloop.budget.max_steps": 5,
        # what budgetloop billed, with its output part (58 tokens at $15 a million), so that
        # MLflow, which takes a trace's cost from the top-most span with one, shows it
        "mlflow.llm.cost": json.dumps(
            {"input_cost": 0.005565, "output_cost": 0.00087, "total_cost": 0.006435}
        ),
    }
    assert agent.status.status_code is StatusCode.OK  # answered


@needs_otel
def test_tool_spans_and_a_coerced_argument(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    export_trace(result, provider)

    tools = by_name(exporter.get_finished_spans())
    assert dict(tools["execute_tool lookup"][0].attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c0",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Look up a price.",
        "gen_ai.conversation.id": result.run_id,
        "budgetloop.tool.status": "ok",
    }
    convert = dict(tools["execute_tool convert"][0].attributes or {})
    assert convert["budgetloop.tool.coerced"] == ("convert.amount",)


def failing_run(clock: FakeClock) -> budgetloop.Result:
    """One turn with a tool that raises, bad arguments, an unknown tool; then an answer."""
    model = ScriptedModel(
        [
            Completion(
                None,
                (
                    ToolCall("lookup", {"isin": "XX"}, "bad-1"),
                    ToolCall("convert", {"amount": "five", "rate": 1}, "bad-2"),
                    ToolCall("missing", {}, "bad-3"),
                ),
            ),
            "Could not.",
        ]
    )
    return budgetloop.run(model, "go", tools=make_tools(clock), clock=clock)


@needs_otel
def test_a_failing_tool_has_error_type_and_status_error(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    result = failing_run(clock)
    assert [c.status for c in result.steps[0].tool_calls] == ["error"] * 3
    export_trace(result, provider)

    tools = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == [
        "execute_tool lookup",
        "execute_tool convert",
        "execute_tool missing",
    ]
    assert [(s.attributes or {})["error.type"] for s in tools] == [
        "LookupError",
        "invalid_arguments",
        "unknown_tool",
    ]
    assert [s.status.status_code for s in tools] == [StatusCode.ERROR] * 3
    # the error's text is content: off by default
    assert [s.status.description for s in tools] == [None, None, None]


@needs_otel
def test_a_failing_tool_with_content_on_gives_its_message(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    export_trace(failing_run(clock), provider, content=True)

    lookup = by_name(exporter.get_finished_spans())["execute_tool lookup"][0]
    assert lookup.status.description == "LookupError: XX is not in the price list"
    result = (lookup.attributes or {})["gen_ai.tool.call.result"]  # what the model read
    assert result == "error: LookupError: XX is not in the price list"


@needs_otel
def test_a_model_error_marks_the_chat_and_the_agent(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans

    def broken(messages: Any, tools: Any) -> Completion:
        raise RuntimeError(f"upstream said {SECRET}")

    result = budgetloop.run(broken, "go", clock=clock)
    assert result.stop == "model_error"
    export_trace(result, provider)

    chat, agent = exporter.get_finished_spans()
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description is None
        assert SECRET not in everything(span)
    assert (chat.attributes or {})["error.type"] == "RuntimeError"  # the call's exception
    assert (chat.attributes or {})["gen_ai.response.finish_reasons"] == ("error",)
    assert (agent.attributes or {})["error.type"] == "model_error"  # the run's stop
    assert (agent.attributes or {})["budgetloop.stop"] == "model_error"


@needs_otel
def test_under_projected_when_a_call_costs_more_than_projected(
    clock: FakeClock, spans: Any
) -> None:
    provider, exporter = spans
    model = ScriptedModel([Completion("ok", cost_usd=0.25)])
    result = budgetloop.run(model, "go", price=PRICE, max_output_tokens=10, clock=clock)
    export_trace(result, provider)

    chat = exporter.get_finished_spans()[0]
    attributes = dict(chat.attributes or {})
    assert attributes["budgetloop.step.cost_usd"] == 0.25
    assert attributes["budgetloop.step.projected_cost_usd"] < 0.25
    assert attributes["budgetloop.step.under_projected"] is True


# -- content ---------------------------------------------------------------------------------------


def secret_run(clock: FakeClock, **options: Any) -> budgetloop.Session:
    """A secret in the prompt, the system prompt, a call id, the arguments, the result, the
    model's text and the answer."""

    def echo(text: str, extra: dict[str, int]) -> str:
        """Echo.

        Args:
            text: what to echo
            extra: ignored
        """
        return f"echo {text}"

    model = ScriptedModel(
        [
            Completion(
                f"calling with {SECRET}",
                (ToolCall("echo", {"text": SECRET, "extra": {SECRET: 1}}, f"id-{SECRET}"),),
            ),
            f"done: {SECRET}",
        ]
    )
    return start(
        model,
        f"use {SECRET}",
        system=f"key {SECRET}",
        tools=[echo],
        clock=clock,
        max_output_tokens=50,
        price=PRICE,
        **options,
    )


@needs_otel
def test_content_is_off_by_default(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    export_trace(secret_run(clock).run(), provider)

    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    for span in exporter.get_finished_spans():
        assert not content_keys & set(span.attributes or {}), span.name
    # the call id is the only place the secret is (ids are not content), and redact covers it
    exporter.clear()
    export_trace(secret_run(clock).run(), provider, redact=lambda s: s.replace(SECRET, "***"))
    for span in exporter.get_finished_spans():
        assert SECRET not in everything(span)


@needs_otel
def test_content_on_passes_every_string_through_redact(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    export_trace(
        secret_run(clock).run(), provider, content=True, redact=lambda s: s.replace(SECRET, "***")
    )

    finished = by_name(exporter.get_finished_spans())
    for span in exporter.get_finished_spans():
        assert SECRET not in everything(span), span.name
    echo = dict(finished["execute_tool echo"][0].attributes or {})
    assert json.loads(echo["gen_ai.tool.call.arguments"]) == {"text": "***", "extra": {"***": 1}}
    assert echo["gen_ai.tool.call.result"] == "echo ***"
    assert echo["gen_ai.tool.call.id"] == "id-***"
    first, second = finished["chat"]
    attributes = dict(first.attributes or {})
    assert json.loads(attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "key ***"}
    ]
    assert json.loads(attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "use ***"}]}
    ]
    assert json.loads(attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "calling with ***"},
                {
                    "type": "tool_call",
                    "id": "id-***",
                    "name": "echo",
                    "arguments": {"text": "***", "extra": {"***": 1}},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    sent = json.loads(dict(second.attributes or {})["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "id-***", "response": "echo ***"}],
    }
    agent = dict(finished["invoke_agent"][0].attributes or {})
    assert json.loads(agent["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "done: ***"}],
            "finish_reason": "stop",
        }
    ]
    assert (agent["input.value"], agent["output.value"]) == ("use ***", "done: ***")


@needs_otel
def test_without_content_a_repetition_stop_exports_no_arguments(
    clock: FakeClock, spans: Any
) -> None:
    provider, exporter = spans

    def look(query: str) -> str:
        """Look.

        Args:
            query: what to look for
        """
        return "nothing"

    turn = Completion(tool_calls=[ToolCall("look", {"query": "the-argument-value"}, "c1")])
    session = start(ScriptedModel([turn] * 3), "go", tools=[look], clock=clock)
    result = session.run()
    assert result.stop == "repeated"
    assert result.detail == (
        'the same tool calls 3 turns running: look({"query": "the-argument-value"})'
    )
    export_trace(result, provider)
    for span in exporter.get_finished_spans():
        assert "the-argument-value" not in everything(span), span.name
    agent = dict(exporter.get_finished_spans()[-1].attributes or {})
    assert agent["budgetloop.stop"] == "repeated"
    assert "budgetloop.stop.detail" not in agent
    exporter.clear()
    export_trace(result, provider, content=True)  # content: the detail, whole
    agent = dict(exporter.get_finished_spans()[-1].attributes or {})
    assert agent["budgetloop.stop.detail"] == result.detail


PIN = "734291"


@needs_otel
def test_the_exporters_redact_decodes_escapes_and_reads_numbers(
    clock: FakeClock, spans: Any
) -> None:
    """The run has no ``redact``; the exporter's own applies the trace's rules: a key written
    with JSON escapes in raw arguments, and a PIN the loop coerced to a number, are both caught."""
    provider, exporter = spans
    escaped = "".join(f"\\u{ord(ch):04x}" for ch in SECRET)

    def unlock(pin: int) -> str:
        """Unlock.

        Args:
            pin: the PIN
        """
        return "unlocked"

    calls = [
        ToolCall("unlock", {"pin": PIN}, "c1"),  # a string, coerced to the int 734291
        ToolCall("login", f'{{"key": "{escaped}"}}', "c2"),  # unknown tool: raw arguments kept
    ]
    result = start(
        ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[unlock], clock=clock
    ).run()
    assert result.steps[0].tool_calls[0].arguments == {"pin": 734291}
    assert result.steps[0].tool_calls[1].raw_arguments == f'{{"key": "{escaped}"}}'

    def redact(text: str) -> str:
        return text.replace(SECRET, "***").replace(PIN, "[pin]")

    export_trace(result, provider, content=True, redact=redact)
    finished = exporter.get_finished_spans()
    for span in finished:
        text = everything(span)
        for form in (SECRET, PIN, "u0073"):  # u0073: the escaped "s" the key starts with
            assert form not in text, (form, span.name)
    spans_by_name = by_name(finished)
    unlock_span = dict(spans_by_name["execute_tool unlock"][0].attributes or {})
    assert json.loads(unlock_span["gen_ai.tool.call.arguments"]) == {"pin": "[pin]"}
    login_span = dict(spans_by_name["execute_tool login"][0].attributes or {})
    assert json.loads(login_span["gen_ai.tool.call.arguments"]) == {"key": "***"}
    (output,) = json.loads(
        dict(spans_by_name["chat"][0].attributes or {})["gen_ai.output.messages"]
    )
    assert [json.loads(p["arguments"]) if isinstance(p["arguments"], str) else p["arguments"]
            for p in output["parts"]] == [{"pin": "[pin]"}, {"key": "***"}]  # fmt: skip


@needs_otel
def test_a_saved_trace_exports_as_the_result_does(
    clock: FakeClock, spans: Any, tmp_path: Path
) -> None:
    provider, exporter = spans
    result = three_turns(clock).run()
    result.save(tmp_path / "run.json")
    seen = []
    for trace in (result, result.to_dict(), tmp_path / "run.json", str(tmp_path / "run.json")):
        exporter.clear()
        export_trace(trace, provider, content=True, start_time=5.0)
        seen.append(
            [
                (s.name, s.start_time, s.end_time, dict(s.attributes or {}))
                for s in exporter.get_finished_spans()
            ]
        )
    assert seen[0] == seen[1] == seen[2] == seen[3]
    assert len(seen[0]) == 6


# -- live ---------------------------------------------------------------------------------------------


@needs_otel
def test_the_hook_exports_each_step_as_it_is_committed(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    hook = OtelHook(provider, model="m", provider="p")
    session = three_turns(clock)

    names = []
    while not session.done:
        step = session.step()
        hook(session, step)
        names.append([s.name for s in exporter.get_finished_spans()])
    assert names == [
        ["chat m", "execute_tool lookup"],
        ["chat m", "execute_tool lookup", "chat m", "execute_tool convert"],
        [
            "chat m",
            "execute_tool lookup",
            "chat m",
            "execute_tool convert",
            "chat m",
            "invoke_agent",
        ],
    ]
    finished = exporter.get_finished_spans()
    agent = finished[-1]
    assert all(
        s.parent is not None and s.parent.span_id == agent.context.span_id for s in finished[:-1]
    )
    # within a step: the model call, then its tools; the run's span encloses them all
    for chat, tool in ((finished[0], finished[1]), (finished[2], finished[3])):
        assert chat.start_time <= chat.end_time <= tool.start_time <= tool.end_time
        assert tool.end_time - tool.start_time in (1_000_000_000, 500_000_000)
    assert agent.start_time == finished[0].start_time
    assert all(agent.start_time <= s.start_time and s.end_time <= agent.end_time for s in finished)
    assert (agent.attributes or {})["budgetloop.stop"] == "answered"
    # the same attributes as after the fact
    exported = dict(finished[0].attributes or {})
    assert exported["gen_ai.usage.cache_creation.input_tokens"] == 900
    hook(session, None)  # a call after the end adds nothing
    assert len(exporter.get_finished_spans()) == 6


@needs_otel
def test_the_hook_on_a_run_stopped_before_any_call(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    hook = OtelHook(provider, content=True)  # the detail is content: exported with it on
    session = start(
        ScriptedModel(["never"]),
        "go",
        price=PRICE,
        max_output_tokens=1000,
        budget=Budget(max_cost_usd=0.000001),
    )
    assert session.step() is None
    hook(session, None)

    (agent,) = exporter.get_finished_spans()
    assert agent.name == "invoke_agent"
    attributes = dict(agent.attributes or {})
    assert attributes["budgetloop.stop"] == "max_cost_usd"
    assert attributes["budgetloop.steps"] == 0
    assert attributes["budgetloop.stop.detail"].startswith("next turn projected $")
    assert agent.start_time == agent.end_time


@needs_otel
def test_the_hook_reads_the_trace_so_the_runs_redact_holds(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    hook = OtelHook(provider, content=True)
    session = secret_run(clock, redact=lambda s: s.replace(SECRET, "[run]"))
    while not session.done:
        hook(session, session.step())

    assert len(exporter.get_finished_spans()) == 4
    for span in exporter.get_finished_spans():
        assert SECRET not in everything(span), span.name
    echo = by_name(exporter.get_finished_spans())["execute_tool echo"][0]
    assert (echo.attributes or {})["gen_ai.tool.call.result"] == "echo [run]"


@needs_otel
def test_one_hook_serves_fresh_sessions_with_a_run_span_each(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    hook = OtelHook(provider)
    model = ScriptedModel(["one"])
    first = start(model, "go", clock=clock)
    hook(first, first.step())
    model.reset()
    second = first.fresh()
    hook(second, second.step())

    agents = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert len(agents) == 2
    assert agents[0].context.trace_id != agents[1].context.trace_id


@needs_otel
def test_the_hook_names_the_model_and_provider_of_an_adapter(spans: Any) -> None:
    import openai

    from budgetloop.adapters import openai_chat
    from tests.provider_server import Provider, payload

    provider, exporter = spans
    server = Provider("openai", (200, payload("openai_chat_final_text")))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=server.client())
    session = start(openai_chat(client, "gpt-4o", max_tokens=64), "go")
    hook = OtelHook(provider)
    hook(session, session.step())

    chat, agent = exporter.get_finished_spans()
    assert chat.name == "chat gpt-4o"
    for span in (chat, agent):
        attributes = dict(span.attributes or {})
        assert (attributes["gen_ai.request.model"], attributes["gen_ai.provider.name"]) == (
            "gpt-4o",
            "openai",
        )
    # given names win over the adapter's
    exporter.clear()
    server.responses.append((200, payload("openai_chat_final_text")))
    session = session.fresh()
    OtelHook(provider, model="alias", provider="azure.ai.openai")(session, session.step())
    assert [s.name for s in exporter.get_finished_spans()] == ["chat alias", "invoke_agent"]


# -- mistakes ------------------------------------------------------------------------------------------


@needs_otel
def test_wrong_options_are_errors_naming_the_option(clock: FakeClock) -> None:
    with pytest.raises(
        TypeError,
        match=r"^export_trace: trace must be a Result, a dict from Result\.to_dict\(\) or a path to a saved trace, got int\.$",
    ):
        export_trace(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^OtelHook: content must be bool, got str\.$"):
        OtelHook(content="yes")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"^OtelHook: redact must be a function str -> str or None, got int\.$"
    ):
        OtelHook(redact=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^OtelHook: model must be str or None, got int\.$"):
        OtelHook(model=3)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError,
        match=r"^OtelHook: tracer_provider must be a TracerProvider or None, got str\.$",
    ):
        OtelHook("provider")
    result = three_turns(clock).run()
    with pytest.raises(
        ValueError,
        match=r"^export_trace: start_time must be a finite number of seconds >= 0 since the epoch, got nan\.$",
    ):
        export_trace(result, start_time=float("nan"))
    with pytest.raises(
        TypeError,
        match=r"^export_trace: start_time must be seconds since the epoch \(a number\) or None, got str\.$",
    ):
        export_trace(result, start_time="now")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError,
        match=r"^export_trace: format must be .budgetloop-trace., got None: not a budgetloop trace",
    ):
        export_trace({"steps": []})
    with pytest.raises(TypeError, match=r"^OtelHook: step must be a Step or None, got dict\.$"):
        OtelHook()(three_turns(clock), {})  # type: ignore[arg-type]


@needs_otel
def test_a_redact_that_returns_no_string_is_a_type_error(clock: FakeClock, spans: Any) -> None:
    provider, _ = spans
    with pytest.raises(
        TypeError, match=r"^export_trace: what redact returns must be a str, got None\.$"
    ):
        export_trace(three_turns(clock).run(), provider, redact=lambda s: None)  # type: ignore[arg-type,return-value]


@needs_otel
def test_a_trace_with_hostile_seconds_is_refused_before_any_span(
    clock: FakeClock, spans: Any
) -> None:
    provider, exporter = spans
    data = three_turns(clock).run().to_dict()
    data["steps"][0]["tool_calls"][0]["seconds"] = "soon"
    with pytest.raises(
        ValueError,
        match=r"steps\[0\]\.tool_calls\[0\]\.seconds must be a finite number >= 0, got str",
    ):
        export_trace(data, provider, start_time=0)
    data["steps"][0]["tool_calls"][0]["seconds"] = float("nan")
    with pytest.raises(ValueError, match=r"steps\[0\]\.tool_calls\[0\]\.seconds"):
        export_trace(data, provider, start_time=0)
    assert exporter.get_finished_spans() == ()


# -- the import ------------------------------------------------------------------------------------------


def test_import_budgetloop_never_imports_opentelemetry() -> None:
    code = "import sys, budgetloop, budgetloop.adapters; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_without_opentelemetry_the_import_error_names_the_extra() -> None:
    code = "try:\n    import budgetloop.otel\nexcept ImportError as e:\n    print(e)\n"
    assert printed_without("opentelemetry", code) == (
        "budgetloop.otel: OpenTelemetry must be installed, got none; pip install "
        "'budgetloop[otel]' (opentelemetry-api and opentelemetry-sdk)."
    )


# -- over the wire -----------------------------------------------------------------------------------------


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace endpoint: keeps each request's path, content type and body."""

    received: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@needs_otel
def test_a_live_run_arrives_over_otlp_http(clock: FakeClock) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.sdk.resources import Resource

    received: list[tuple[str, str, bytes]] = []
    handler = type("Handler", (Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        provider = TracerProvider(resource=Resource.create({"service.name": "pricer"}))
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=5)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        hook = OtelHook(provider, model="claude-sonnet-4-6", provider="anthropic")
        session = three_turns(clock)
        while not session.done:
            hook(session, session.step())
        provider.shutdown()
    finally:
        server.shutdown()
        server.server_close()

    assert {(path, kind) for path, kind, _ in received} == {
        ("/v1/traces", "application/x-protobuf")
    }
    spans = []
    for _, _, body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}[
                "service.name"
            ]
            assert service == "pricer"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "budgetloop"
                spans.extend(scope_spans.spans)
    assert [s.name for s in spans] == [
        "chat claude-sonnet-4-6",
        "execute_tool lookup",
        "chat claude-sonnet-4-6",
        "execute_tool convert",
        "chat claude-sonnet-4-6",
        "invoke_agent",
    ]
    agent = spans[-1]
    assert agent.parent_span_id == b""
    assert {s.parent_span_id for s in spans[:-1]} == {agent.span_id}
    assert {s.trace_id for s in spans} == {agent.trace_id}

    def values(span: Any) -> dict[str, Any]:
        out = {}
        for a in span.attributes:
            which = a.value.WhichOneof("value")
            out[a.key] = getattr(a.value, which)
        return out

    chat = values(spans[0])
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "anthropic"
    assert chat["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert chat["gen_ai.request.max_tokens"] == 100
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (1000, 20)
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 900
    assert chat["budgetloop.step.cost_usd"] == PRICE.usage_cost(Usage(1000, 20, 0, 900))
    assert chat["budgetloop.step.under_projected"] is False
    run = values(agent)
    assert run["budgetloop.stop"] == "answered"
    assert run["budgetloop.budget.max_cost_usd"] == 0.5
    assert run["gen_ai.usage.cache_read.input_tokens"] == 1800
    tool = values(spans[1])
    assert (tool["gen_ai.tool.name"], tool["gen_ai.tool.call.id"]) == ("lookup", "c0")
    assert spans[0].kind == spans[0].SPAN_KIND_CLIENT
    assert (
        spans[0].start_time_unix_nano
        < spans[0].end_time_unix_nano
        <= spans[1].start_time_unix_nano
    )


@needs_otel
def test_a_redact_that_raises_exports_nothing_half_done(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans

    def fails_on_results(text: str) -> str:
        if text.startswith("echo "):
            raise RuntimeError("redact broke")
        return text.replace(SECRET, "***")

    with pytest.raises(RuntimeError, match=r"^redact broke$"):
        export_trace(secret_run(clock).run(), provider, content=True, redact=fails_on_results)
    assert exporter.get_finished_spans() == ()


@needs_otel
def test_the_same_step_twice_is_exported_once(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    hook = OtelHook(provider)
    session = three_turns(clock)
    step = session.step()
    hook(session, step)
    hook(session, step)

    assert [s.name for s in exporter.get_finished_spans()] == ["chat", "execute_tool lookup"]


@needs_otel
def test_the_hook_follows_an_async_session(clock: FakeClock, spans: Any) -> None:
    import asyncio

    provider, exporter = spans
    hook = OtelHook(provider, model="m")

    async def drive() -> budgetloop.Result:
        session = budgetloop.astart(ScriptedModel(["one"]), "go", clock=clock)
        while not session.done:
            hook(session, await session.step())
        return session.result

    result = asyncio.run(drive())
    assert result.stop == "answered"
    assert [s.name for s in exporter.get_finished_spans()] == ["chat m", "invoke_agent"]


# -- through on_step= ------------------------------------------------------------------------------------


@needs_otel
def test_run_with_on_step_exports_the_run_live(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    names_after_steps: list[list[str]] = []

    hook = OtelHook(provider, model="m")

    def watch(session: Any, step: Any) -> None:
        hook(session, step)
        names_after_steps.append([s.name for s in exporter.get_finished_spans()])

    session = three_turns(clock, on_step=watch)
    result = session.run()

    assert result.stop == "answered"
    assert [len(n) for n in names_after_steps] == [2, 4, 6]
    assert names_after_steps[-1][-1] == "invoke_agent"
    finished = exporter.get_finished_spans()
    agent = finished[-1]
    assert {s.parent.span_id for s in finished[:-1] if s.parent} == {agent.context.span_id}
    assert (agent.attributes or {})["budgetloop.steps"] == 3


@needs_otel
def test_on_step_with_a_run_stopped_before_its_first_call(spans: Any) -> None:
    provider, exporter = spans
    result = budgetloop.run(
        ScriptedModel(["never"]),
        "go",
        price=PRICE,
        max_output_tokens=1000,
        budget=Budget(max_cost_usd=0.000001),
        on_step=OtelHook(provider),
    )

    assert result.stop == "max_cost_usd"
    (agent,) = exporter.get_finished_spans()
    assert (agent.attributes or {})["budgetloop.stop"] == "max_cost_usd"


@needs_otel
def test_on_step_with_arun(clock: FakeClock, spans: Any) -> None:
    import asyncio

    provider, exporter = spans
    result = asyncio.run(
        budgetloop.arun(
            ScriptedModel([Completion("calling", (ToolCall("lookup", {"isin": "SE01"}),)), "ok"]),
            "go",
            tools=make_tools(clock)[:1],
            clock=clock,
            on_step=OtelHook(provider, model="m"),
        )
    )

    assert result.stop == "answered"
    assert [s.name for s in exporter.get_finished_spans()] == [
        "chat m",
        "execute_tool lookup",
        "chat m",
        "invoke_agent",
    ]


@needs_otel
def test_on_step_after_a_max_steps_stop_with_skipped_calls(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans
    model = ScriptedModel([Completion(None, (ToolCall("lookup", {"isin": "SE01"}, "c0"),))])
    result = budgetloop.run(
        model,
        "go",
        tools=make_tools(clock),
        budget=Budget(max_steps=1),
        clock=clock,
        on_step=OtelHook(provider, content=True),  # the detail is content: exported with it on
    )

    assert (result.stop, len(result.skipped)) == ("max_steps", 1)
    chat, agent = exporter.get_finished_spans()
    assert (chat.attributes or {})["budgetloop.step.skipped_tool_calls"] == 1
    attributes = dict(agent.attributes or {})
    assert (attributes["budgetloop.stop"], attributes["budgetloop.tool_calls.skipped"]) == (
        "max_steps",
        1,
    )
    assert attributes["budgetloop.stop.detail"] == "max_steps=1: no step is left to read results"


def test_a_typed_output_is_the_runs_json_output(spans: tuple[Any, Any]) -> None:
    from dataclasses import dataclass

    @dataclass
    class Pick:
        choice: str

    provider, exporter = spans
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("final_answer", {"choice": "b"}, "a")])]
    )
    result = run(model, "go", output=Pick)
    export_trace(result, provider, content=True)
    (agent,) = by_name(exporter.get_finished_spans())["invoke_agent"]
    assert agent.attributes["gen_ai.output.type"] == "json"
    assert agent.attributes["output.value"] == '{"choice": "b"}'
    assert agent.attributes["output.mime_type"] == "application/json"


@needs_otel
@pytest.mark.parametrize("seconds", [1.8e299, 1.7e308])
def test_a_step_that_lasted_past_any_timestamp_is_exported(
    spans: tuple[Any, Any], seconds: float
) -> None:
    from dataclasses import replace

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from budgetloop import Result
    from budgetloop.otel import export_trace

    provider, exporter = spans
    result = run(ScriptedModel(["hi"]), "go")
    step = replace(result.steps[0], seconds=seconds)
    loaded = Result.from_dict(replace(result, steps=(step,), seconds=seconds).to_dict())
    export_trace(loaded, provider, start_time=0.0)
    finished = exporter.get_finished_spans()
    assert sorted(s.name for s in finished) == ["chat", "invoke_agent"]
    assert {s.end_time for s in finished} == {2**64 - 1}  # the last a timestamp can hold
    encode_spans(finished)  # and the OTLP encoding takes them (fixed64 timestamps)


@needs_otel
def test_the_hook_exports_a_step_an_interrupt_kept_from_it(spans: Any) -> None:
    from budgetloop import tool
    from budgetloop.otel import OtelHook

    provider, exporter = spans
    broke = [False]

    @tool
    def lookup(q: str) -> str:
        """Looks up; the second call is interrupted (Ctrl-C) after its turn was billed."""
        if q == "b" and not broke[0]:
            broke[0] = True
            raise KeyboardInterrupt
        return q

    turns = [Completion(tool_calls=[ToolCall("lookup", {"q": q})], cost_usd=0.011) for q in "abc"]
    model = ScriptedModel([*turns, Completion(text="done", cost_usd=0.011)])
    session = start(model, "go", tools=[lookup], on_step=OtelHook(provider))
    with pytest.raises(KeyboardInterrupt):
        session.run()
    result = session.run()
    assert (result.stop, len(result.steps), result.cost_usd) == ("answered", 4, 0.044)
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    costs = [(s.attributes or {})["budgetloop.step.cost_usd"] for s in chats]
    assert costs == [0.011] * 4  # the interrupted step's span too: they sum to what was spent
    assert [(s.attributes or {})["budgetloop.step.index"] for s in chats] == [0, 1, 2, 3]


@needs_otel
def test_the_final_answer_chat_span_lists_no_tools(spans: Any) -> None:
    from budgetloop import tool
    from budgetloop.otel import export_trace

    provider, exporter = spans

    @tool
    def lookup(q: str) -> str:
        """Looks up."""
        return q

    turn = Completion(tool_calls=[ToolCall("lookup", {"q": "a"})], usage=Usage(100, 10))
    model = ScriptedModel([turn, Completion(text="done", usage=Usage(100, 10))])
    result = run(model, "go", tools=[lookup], finish=True, budget=Budget(max_steps=2))
    assert [s.final_answer for s in result.steps] == [False, True]
    export_trace(result, provider, content=True)
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    offered = ["gen_ai.tool.definitions" in (s.attributes or {}) for s in chats]
    assert offered == [True, False]  # the final answer was asked for with no tools


@needs_otel
def test_a_failed_tools_span_has_its_output_and_an_error_mark(spans: Any) -> None:
    from budgetloop import tool
    from budgetloop.otel import export_trace

    provider, exporter = spans

    @tool
    def lookup(q: str) -> str:
        """Fails."""
        raise LookupError(f"{q} is not in the list")

    turn = Completion(tool_calls=[ToolCall("lookup", {"q": "a"})])
    result = run(ScriptedModel([turn, "done"]), "go", tools=[lookup])
    export_trace(result, provider, content=True)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup"]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.tool.call.result"] == "error: LookupError: a is not in the list"
    assert span.status.status_code is StatusCode.ERROR
    (event,) = span.events
    assert event.name == "exception"
    assert dict(event.attributes or {}) == {
        "exception.type": attributes["error.type"],
        "exception.message": "LookupError: a is not in the list",
    }


@needs_otel
def test_a_forks_run_span_names_the_run_it_came_from_and_the_spend_it_carried(spans: Any) -> None:
    from budgetloop.otel import export_trace

    provider, exporter = spans
    turn = Completion(text="done", cost_usd=0.011)
    session = start(ScriptedModel([turn, turn]), "go")
    source = session.run()
    fork = session.fork(0).run()  # carries the source's $0.011, and spends its own
    assert (fork.forked_from, fork.carried_usd, fork.cost_usd) == (source.run_id, 0.011, 0.022)
    export_trace(source, provider)
    export_trace(fork, provider)
    finished = exporter.get_finished_spans()
    agents = [dict(s.attributes or {}) for s in finished if s.name.startswith("invoke_agent")]
    assert [a.get("budgetloop.forked_from") for a in agents] == [None, source.run_id]
    assert [a.get("budgetloop.carried_usd") for a in agents] == [None, 0.011]
    assert [a["budgetloop.cost_usd"] for a in agents] == [0.011, 0.022]


# -- what each request asked for: its output tokens, the settings, a fitted turn ----------------

SETTINGS = {
    "temperature": 0,
    "top_p": 0.9,
    "seed": 7,
    "stop": "END",
    "tool_choice": "required",
    "parallel_tool_calls": False,
    "openai": {"user": "u-1", "logit_bias": {"50256": -100}},
}
FIT_PRICE = Price(3.0, 15.0)


def fitted_session(**options: Any) -> budgetloop.Session:
    """One turn whose worst case at 1,000 output tokens does not fit, asked for 312 instead
    (``min_output_tokens=300``), sent with every kind of setting."""
    model = ScriptedModel(["a" * 9000], price=FIT_PRICE, max_output_tokens=1000)
    tokens = start(model, "go").projection.input_tokens
    budget = Budget(max_cost_usd=FIT_PRICE.cost(tokens, 312))
    return start(model, "go", budget=budget, min_output_tokens=300, settings=SETTINGS, **options)


# The settings as span attributes: the conventions' names where they have one (temperature as
# their double, a stop string as their list of it), the rest as one JSON object, which keeps
# the stop as the string it was.
SETTINGS_ATTRIBUTES = {
    "gen_ai.request.temperature": 0.0,
    "gen_ai.request.top_p": 0.9,
    "gen_ai.request.seed": 7,
    "gen_ai.request.stop_sequences": ("END",),
    "budgetloop.request.settings": json.dumps(
        {
            "stop": "END",
            "tool_choice": "required",
            "parallel_tool_calls": False,
            "openai": {"user": "u-1", "logit_bias": {"50256": -100}},
        }
    ),
}


@needs_otel
def test_a_requests_settings_and_the_output_tokens_it_was_fitted_to_are_span_attributes(
    spans: Any,
) -> None:
    provider, exporter = spans
    session = fitted_session()
    result = session.run()
    assert session.complete.requests[0].max_output_tokens == 312  # type: ignore[attr-defined]
    export_trace(result, provider)
    chat, agent = exporter.get_finished_spans()
    said = dict(chat.attributes or {})
    assert said["gen_ai.request.max_tokens"] == 312  # what the request asked for, not 1,000
    assert said["budgetloop.step.fitted_from"] == 1000
    assert {k: v for k, v in said.items() if k in SETTINGS_ATTRIBUTES} == SETTINGS_ATTRIBUTES
    opened = dict(agent.attributes or {})
    assert {k: opened.get(k) for k in SETTINGS_ATTRIBUTES} == SETTINGS_ATTRIBUTES
    assert opened["budgetloop.min_output_tokens"] == 300
    assert "gen_ai.request.max_tokens" not in opened


@needs_otel
def test_a_run_with_no_settings_writes_none(spans: Any) -> None:
    provider, exporter = spans
    export_trace(run(ScriptedModel(["ok"]), "go", max_output_tokens=50), provider)
    chat, agent = exporter.get_finished_spans()
    for span in (chat, agent):
        keys = set(span.attributes or {})
        assert not keys & {*SETTINGS_ATTRIBUTES, "budgetloop.min_output_tokens"}
        assert "budgetloop.step.fitted_from" not in keys
    assert (chat.attributes or {})["gen_ai.request.max_tokens"] == 50


@needs_otel
def test_the_hook_writes_the_settings_on_the_run_span_it_opens(spans: Any) -> None:
    provider, exporter = spans
    session = fitted_session(on_step=OtelHook(provider))
    session.run()
    chat, agent = exporter.get_finished_spans()
    assert (chat.attributes or {})["budgetloop.step.fitted_from"] == 1000
    opened = dict(agent.attributes or {})
    assert {k: opened.get(k) for k in SETTINGS_ATTRIBUTES} == SETTINGS_ATTRIBUTES
    assert opened["budgetloop.min_output_tokens"] == 300


@needs_otel
@pytest.mark.parametrize(
    ("given", "attributes"),
    [
        ({"stop": ["a", "b"]}, {"gen_ai.request.stop_sequences": ("a", "b")}),
        ({"temperature": 0.5, "seed": -3},
         {"gen_ai.request.temperature": 0.5, "gen_ai.request.seed": -3}),
        # a value the conventions' type cannot hold as it is: kept in the JSON object only
        ({"temperature": "hot", "seed": 1.5, "stop": [1], "top_p": 10**400},
         {"budgetloop.request.settings":
          json.dumps({"temperature": "hot", "seed": 1.5, "stop": [1], "top_p": 10**400})}),
        ({"seed": True}, {"budgetloop.request.settings": '{"seed": true}'}),
    ],
)  # fmt: skip
def test_each_setting_goes_under_the_conventions_name_only_as_its_type(
    spans: Any, given: dict[str, Any], attributes: dict[str, Any]
) -> None:
    provider, exporter = spans
    export_trace(run(ScriptedModel(["ok"]), "go", settings=given), provider)
    chat, agent = exporter.get_finished_spans()
    for span in (chat, agent):
        said = dict(span.attributes or {})
        named = {k: v for k, v in said.items() if k.startswith("gen_ai.request.")}
        named.pop("gen_ai.request.max_tokens", None)
        if "budgetloop.request.settings" in said:
            named["budgetloop.request.settings"] = said["budgetloop.request.settings"]
        assert named == attributes


@needs_otel
def test_a_streamed_chat_carries_its_first_chunk_seconds(clock: FakeClock, spans: Any) -> None:
    provider, exporter = spans

    def streamed(messages: Any, tools: Any) -> Any:
        clock.advance(0.5)
        yield budgetloop.Chunk(text="hi", usage=Usage(10, 2))
        clock.advance(1.0)

    export_trace(budgetloop.run(streamed, "go", price=PRICE, clock=clock), provider)
    chat, _ = exporter.get_finished_spans()
    assert (chat.attributes or {})["budgetloop.step.first_chunk_seconds"] == 0.5
    export_trace(budgetloop.run(ScriptedModel(["hi"]), "go", clock=clock), provider)
    assert "budgetloop.step.first_chunk_seconds" not in (
        exporter.get_finished_spans()[2].attributes or {}
    )
