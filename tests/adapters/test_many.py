"""run_many: prompt order, the concurrency bound, traces written as they go, a run that raises
kept to itself, async models, the progress display, and loud configuration errors."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Message,
    Price,
    Result,
    Stop,
    ToolCall,
    Usage,
    budget_report,
    load_trace,
    run_many,
)
from budgetloop._features._progress import Progress, WidgetProgress
from budgetloop.ledger import MemoryLedger


def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def reply(messages: list[Message]) -> Completion:
    """One tool call with the prompt, then an answer naming it: no state, so any thread can
    ask in any order."""
    prompt = messages[0].content or ""
    if not any(m.role == "tool" for m in messages):
        return Completion(tool_calls=[ToolCall("echo", {"text": prompt})], usage=Usage(100, 10))
    return Completion(text=f"answer to {prompt}", usage=Usage(120, 10))


class Gauge:
    """Counts calls in flight at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def test_results_in_prompt_order_and_at_most_concurrency_at_once() -> None:
    gauge = Gauge()

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        gauge.enter()
        time.sleep(0.02 if messages[0].content in ("p0", "p4") else 0.005)  # finish out of order
        gauge.leave()
        return reply(messages)

    prompts = [f"p{i}" for i in range(12)]
    results = run_many(model, prompts, concurrency=3, tools=[echo], progress=False)
    assert [r.answer for r in results] == [f"answer to p{i}" for i in range(12)]
    assert [r.stop for r in results] == [Stop.ANSWERED] * 12
    assert gauge.most == 3


def test_each_trace_is_written_in_prompt_order(tmp_path: Path) -> None:
    model = lambda messages, tools: reply(messages)  # noqa: E731
    results = run_many(
        model, ["a", "b", "c"], trace_dir=tmp_path / "traces", tools=[echo], progress=False
    )
    files = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert files == ["run-0000.jsonl", "run-0001.jsonl", "run-0002.jsonl"]
    for i, result in enumerate(results):
        path = tmp_path / "traces" / files[i]
        assert load_trace(path) == result
        assert json.loads(path.read_text().splitlines()[-1])["kind"] == "end"


def test_a_run_that_raises_is_that_runs_model_error_with_its_steps(tmp_path: Path) -> None:
    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        if any(m.role == "tool" and m.content == "boom" for m in messages):
            raise RuntimeError("the counter broke")
        if any(m.content == "uncountable" for m in messages):  # at the run's start
            raise ValueError("no count for this one")
        return 100

    model = lambda messages, tools: reply(messages)  # noqa: E731
    prompts: list[Any] = ["fine", "boom", "uncountable", "also fine"]
    results = run_many(
        model, prompts, tools=[echo], count_tokens=count, trace_dir=tmp_path, progress=False
    )
    assert [r.stop for r in results] == [
        Stop.ANSWERED,
        Stop.MODEL_ERROR,
        Stop.MODEL_ERROR,
        Stop.ANSWERED,
    ]
    boom, bad = results[1], results[2]
    assert boom.error == "RuntimeError: the counter broke"
    assert boom.detail == "the run raised RuntimeError: the counter broke"
    assert len(boom.steps) == 1  # the step it took is kept, with its cost
    assert boom.cost_usd == results[0].steps[0].cost_usd
    assert load_trace(tmp_path / "run-0001.jsonl") == boom
    assert bad.error == "ValueError: no count for this one"
    assert bad.steps == ()
    assert load_trace(tmp_path / "run-0002.jsonl") == bad


def test_a_run_that_raises_keeps_one_trace_file_and_the_report_counts_it_once(
    tmp_path: Path,
) -> None:
    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        if any(m.role == "tool" and m.content == "boom" for m in messages):
            raise RuntimeError("the counter broke")  # after its first step was written
        return 100

    model = lambda messages, tools: reply(messages)  # noqa: E731
    results = run_many(
        model, ["fine", "boom", "also fine"], tools=[echo], count_tokens=count,
        price=Price(1000.0, 1000.0), trace_dir=tmp_path, progress=False,
    )  # fmt: skip
    assert [r.stop for r in results] == [Stop.ANSWERED, Stop.MODEL_ERROR, Stop.ANSWERED]
    # its journal is ended with what became of it, not renamed aside for a second file
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run-0000.jsonl", "run-0001.jsonl", "run-0002.jsonl",
    ]  # fmt: skip
    assert load_trace(tmp_path / "run-0001.jsonl") == results[1]
    report = budget_report(tmp_path)
    assert report.runs == 3
    billed = sum(r.cost_usd or 0.0 for r in results)
    assert billed == pytest.approx(2 * 0.24 + 0.11)
    assert report.total_cost_usd == pytest.approx(billed)


def test_the_error_of_a_run_that_raises_is_redacted() -> None:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return reply(messages)

    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        if any(m.role == "tool" for m in messages):
            raise RuntimeError("token sk-SECRET leaked")
        return 10

    (result,) = run_many(
        model,
        ["x"],
        tools=[echo],
        count_tokens=count,
        redact=lambda s: s.replace("sk-SECRET", "***"),
        progress=False,
    )
    assert result.error == "RuntimeError: token *** leaked"
    assert "sk-SECRET" not in json.dumps(result.to_dict())


def test_an_async_model_runs_as_tasks_in_order_and_bounded() -> None:
    gauge = Gauge()

    async def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        gauge.enter()
        await asyncio.sleep(0.02 if messages[0].content == "p1" else 0.002)
        gauge.leave()
        return reply(messages)

    results = run_many(
        model, [f"p{i}" for i in range(10)], concurrency=4, tools=[echo], progress=False
    )
    assert [r.answer for r in results] == [f"answer to p{i}" for i in range(10)]
    assert gauge.most == 4


def test_an_async_model_inside_a_running_event_loop() -> None:
    async def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        return reply(messages)

    async def notebook_cell() -> list[Result]:
        return run_many(model, ["a", "b"], tools=[echo], progress=False)

    results = asyncio.run(notebook_cell())
    assert [r.answer for r in results] == ["answer to a", "answer to b"]


def test_no_prompts_no_runs() -> None:
    assert run_many(lambda m, t: Completion(text="x"), [], progress=False) == []


def test_progress_lines_on_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    model = lambda messages, tools: reply(messages)  # noqa: E731
    run_many(
        model, [f"p{i}" for i in range(20)], concurrency=1, tools=[echo], price=Price(3.0, 15.0)
    )
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" · ")[0] for line in err] == [
        f"{n}/20 runs" for n in (1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20)
    ]
    # each run: (100 x $3 + 10 x $15) + (120 x $3 + 10 x $15) per million = $0.00096
    assert err[-1] == "20/20 runs · answered 20 · spent $0.0192"


def test_progress_off_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    run_many(lambda m, t: reply(m), ["a"], tools=[echo], progress=False)
    assert capsys.readouterr() == ("", "")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def finished(stop: Stop, cost: float) -> Result:
    return Result(stop=stop, answer=None, steps=(), messages=(), cost_usd=cost, seconds=0.0)


def test_progress_on_a_terminal_rewrites_one_line_and_shows_the_ledger() -> None:
    ledger = MemoryLedger(2.0)
    reservation = ledger.reserve(0.5)
    assert reservation is not None
    reservation.settle(0.25)
    stream = Terminal()
    bar = Progress(3, ledger, stream)
    bar.update(finished(Stop.ANSWERED, 0.1))
    bar.update(finished(Stop.MAX_STEPS, 0.2))
    bar.close()
    assert stream.getvalue() == (
        "\r1/3 runs · answered 1 · spent $0.25 of $2.00"
        "\r2/3 runs · answered 1 · max_steps 1 · spent $0.25 of $2.00\n"
    )


def test_the_widget_bar_counts_and_says_it_in_plain_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = WidgetProgress(4, None)
    bar.update(finished(Stop.ANSWERED, 0.5))
    bar.update(finished(Stop.MODEL_ERROR, 0.25))
    assert bar.bar.value == 2
    assert bar.bar.max == 4
    assert bar.label.value == (
        '<span class="tex2jax_ignore mathjax_ignore">2/4 runs · answered 1 · model_error 1 · '
        "spent $0.75</span>"
    )  # HTML, not a Label: ipywidgets typesets a Label's dollars as math
    bar.close()
    assert bar.bar.bar_style == "success"
    # a saved notebook shows the summary as its text, not "VBox(children=(IntProgress(..."
    assert bar.bundle()["text/plain"] == "2/4 runs · answered 1 · model_error 1 · spent $0.75"
    assert "application/vnd.jupyter.widget-view+json" in bar.bundle()


@pytest.mark.parametrize(
    ("prompts", "options", "error", "message"),
    [
        (
            "abc",
            {},
            TypeError,
            "run_many: prompts must be a list of prompts (each a str or a list of Message), got str.",
        ),
        ([1], {}, TypeError, "run_many: prompts[0] must be a str or a list of Message, got int."),
        (
            ["a", ["b"]],
            {},
            TypeError,
            "run_many: prompts[1][0] must be a Message, got str.",
        ),
        (
            ["a"],
            {"concurrency": 0},
            ValueError,
            "run_many: concurrency must be an int >= 1, got 0.",
        ),
        (
            ["a"],
            {"concurrency": 2.0},
            TypeError,
            "run_many: concurrency must be an int >= 1, got float.",
        ),
        (
            ["a"],
            {"progress": "yes"},
            TypeError,
            "run_many: progress must be True or False, got str.",
        ),
        (
            ["a"],
            {"trace_path": "x.jsonl"},
            TypeError,
            "run_many: each option must be one of budget, price, max_output_tokens, count_tokens, "
            "system, repeat_limit, max_workers, max_result_chars, redact, ledger, on_step, "
            "on_event, finish, cycle_limit, warn_repeats, budget_note, approve, output, "
            "min_output_tokens, settings, context, tools, clock, "
            "got 'trace_path' (it names one "
            "run's file; pass trace_dir= instead).",
        ),
        (
            ["a"],
            {"trace_dir": 5},
            TypeError,
            "run_many: trace_dir must be a str or os.PathLike path or None, got int.",
        ),
        (
            ["a"],
            {"budget": Budget(max_cost_usd=1.0)},
            ValueError,
            "run_many: price and max_output_tokens must be a Price and an int >= 1 with "
            "Budget(max_cost_usd=...), which projects each turn's worst case before it is sent, "
            "got None and None. Pass them here, or give the model callable those attributes. "
            "A price by model name: price='gpt-4o-mini', from genai-prices (pip install "
            "'budgetloop[prices]', with which the adapters price their model).",
        ),
    ],
)
def test_configuration_mistakes_raise_before_any_run(
    prompts: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    calls: list[int] = []

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        calls.append(1)
        return Completion(text="x")

    with pytest.raises(error) as info:
        run_many(model, prompts, **options)
    assert str(info.value) == message
    assert calls == []
