"""What budgetloop adds to a run, measured as ratios within one process.

    python benchmarks/bench.py            # the full table (about a minute)
    python benchmarks/bench.py --quick    # a smoke run: same code paths, few repeats
    python benchmarks/bench.py --json     # the figures as JSON

Every figure is a median over repeated runs after a warm-up. Where two things are compared
(budgetloop and a hand-written loop, budgetloop and a peer framework) their runs alternate, so a
noisy neighbour on a shared machine slows both and the ratio stands. Timing never fails the
script: it exits non-zero only if a workload breaks (a tool call missing, an import error).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import budgetloop
from budgetloop import (
    Budget,
    Completion,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    Usage,
    format_usd,
    run,
    start,
    tool,
    worst_case_cost,
)
from budgetloop.context import DropToolResults, KeepLast, Summarize

TURNS = 50  # tool turns in the overhead workload, each with CALLS calls, then one answer
CALLS = 2
PRICE = Price(input_per_mtok=1.25, output_per_mtok=10.0)
USAGE = Usage(input_tokens=120, output_tokens=20)  # scripted, so the fake model is O(1) a call

now = time.perf_counter


def expect(ok: bool, detail: object = "") -> None:
    """A workload check; unlike ``assert`` it holds under ``python -O`` too."""
    if not ok:
        raise RuntimeError(f"benchmark workload broke: {detail}")


# -- the trivial tools ---------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def call_args(turn: int) -> list[tuple[str, dict[str, Any]]]:
    return [("add", {"a": turn, "b": 1}), ("echo", {"text": f"turn {turn}"})]


# -- timing --------------------------------------------------------------------------------------

Prepare = Callable[[], Callable[[], Any]]  # builds a fresh workload; the callable is timed


def interleaved(cases: dict[str, Prepare], rounds: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per run of each case; the cases alternate, in reversed order every other round."""
    for _ in range(warmup):
        for prepare in cases.values():
            prepare()()
    times: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            go = cases[name]()
            gc.collect()
            t0 = now()
            go()
            times[name].append(now() - t0)
    return times


def paired_ratio(times: dict[str, list[float]], num: str, den: str) -> float:
    """The median over rounds of num/den, each pair measured back to back."""
    return statistics.median(a / b for a, b in zip(times[num], times[den], strict=True))


def median(xs: list[float]) -> float:
    return statistics.median(xs)


# -- 1. overhead per turn ------------------------------------------------------------------------


def bare_script() -> list[dict[str, Any]]:
    replies: list[dict[str, Any]] = []
    for turn in range(TURNS):
        calls = [
            {"id": f"call_{turn}_{i}", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(call_args(turn))
        ]
        replies.append({"role": "assistant", "content": None, "tool_calls": calls})
    replies.append({"role": "assistant", "content": "done"})
    return replies


BARE_SCRIPT = bare_script()


def bare_loop(model: Callable[[list[dict[str, Any]]], dict[str, Any]], prompt: str) -> int:
    """The floor: what a hand-written loop does, and nothing more."""
    functions = {"add": add, "echo": echo}
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    executed = 0
    while True:
        reply = model(messages)
        messages.append(reply)
        calls = reply.get("tool_calls")
        if not calls:
            return executed
        for call in calls:
            fn = functions[call["function"]["name"]]
            value = fn(**json.loads(call["function"]["arguments"]))
            content = value if isinstance(value, str) else json.dumps(value)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            executed += 1


def prepare_bare() -> Callable[[], Any]:
    replies = iter(BARE_SCRIPT)

    def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return next(replies)

    def go() -> None:
        executed = bare_loop(model, "go")
        expect(executed == TURNS * CALLS, executed)

    return go


LOOP_SCRIPT = [
    *(
        Completion(
            tool_calls=[ToolCall(n, json.dumps(a), f"call_{t}_{i}") for i, (n, a) in enumerate(c)],
            usage=USAGE,
        )
        for t, c in ((t, call_args(t)) for t in range(TURNS))
    ),
    Completion(text="done", usage=USAGE),
]
TOOLS = [tool(add), tool(echo)]

CONFIGS: dict[str, dict[str, Any]] = {
    # no ceiling but steps, no price: the cost projection has nothing to price
    "guards off": {"budget": Budget(max_steps=TURNS + 5)},
    # the cost guard: every turn is counted, priced and checked before it is sent
    "cost guard on": {
        "budget": Budget(max_steps=TURNS + 5, max_cost_usd=1000.0),
        "price": PRICE,
        "max_output_tokens": 500,
    },
    # every ceiling: a deadline runs each model call and tool on a worker, to abandon it
    "all guards on": {
        "budget": Budget(
            max_steps=TURNS + 5, max_cost_usd=1000.0, max_seconds=3600.0, max_tool_calls=10_000
        ),
        "price": PRICE,
        "max_output_tokens": 500,
    },
}


def prepare_loop(config: dict[str, Any]) -> Prepare:
    def prepare() -> Callable[[], Any]:
        model = ScriptedModel(LOOP_SCRIPT)

        def go() -> None:
            result = run(model, "go", tools=TOOLS, **config)
            expect(result.answered and len(result.tool_calls) == TURNS * CALLS, result.stop)

        return go

    return prepare


# -- 6. peers: the same workload on pydantic-ai and openai-agents ------------------------------


def prepare_pydantic_ai() -> Prepare | str:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage, UsageLimits
    except ImportError:
        return "skipped: pydantic-ai not installed (pip install -e '.[bench]')"
    executed = [0]

    def add_(a: int, b: int) -> int:
        """Add two integers."""
        executed[0] += 1
        return a + b

    def echo_(text: str) -> str:
        """Return the text unchanged."""
        executed[0] += 1
        return text

    agent = Agent(tools=[add_, echo_], name="bench")
    names = {"add": "add_", "echo": "echo_"}

    def prepare() -> Callable[[], Any]:
        turn = [0]

        async def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
            t = turn[0]
            turn[0] += 1
            usage = RequestUsage(
                input_tokens=USAGE.input_tokens, output_tokens=USAGE.output_tokens
            )
            if t >= TURNS:
                return ModelResponse(parts=[TextPart("done")], usage=usage)
            parts = [
                ToolCallPart(names[n], json.dumps(a), f"call_{t}_{i}")
                for i, (n, a) in enumerate(call_args(t))
            ]
            return ModelResponse(parts=parts, usage=usage)

        model = FunctionModel(respond)

        def go() -> None:
            executed[0] = 0
            out = agent.run_sync("go", model=model, usage_limits=UsageLimits(request_limit=None))
            expect(out.output == "done" and executed[0] == TURNS * CALLS, executed[0])

        return go

    return prepare


def prepare_openai_agents() -> Prepare | str:
    try:
        from agents import Agent, ModelResponse, RunConfig, Runner, function_tool
        from agents import Usage as AgentsUsage
        from agents.models.interface import Model
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )
    except ImportError:
        return "skipped: openai-agents not installed (pip install -e '.[bench]')"
    executed = [0]

    @function_tool
    def add_(a: int, b: int) -> int:
        """Add two integers."""
        executed[0] += 1
        return a + b

    @function_tool
    def echo_(text: str) -> str:
        """Return the text unchanged."""
        executed[0] += 1
        return text

    names = {"add": "add_", "echo": "echo_"}

    class FakeModel(Model):
        """Plays the workload back, as ``ScriptedModel`` does for budgetloop."""

        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            t = self.turn
            self.turn += 1
            usage = AgentsUsage(
                requests=1,
                input_tokens=USAGE.input_tokens,
                output_tokens=USAGE.output_tokens,
                total_tokens=USAGE.input_tokens + USAGE.output_tokens,
            )
            output: list[Any]
            if t >= TURNS:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                output = [
                    ResponseOutputMessage(
                        type="message",
                        id=f"msg_{t}",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc_{t}_{i}",
                        call_id=f"call_{t}_{i}",
                        name=names[n],
                        arguments=json.dumps(a),
                        status="completed",
                    )
                    for i, (n, a) in enumerate(call_args(t))
                ]
            return ModelResponse(output=output, usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    config = RunConfig(tracing_disabled=True)

    def prepare() -> Callable[[], Any]:
        agent = Agent(
            name="bench", instructions="Use the tools.", model=FakeModel(), tools=[add_, echo_]
        )

        def go() -> None:
            executed[0] = 0
            out = Runner.run_sync(agent, "go", max_turns=TURNS + 5, run_config=config)
            expect(out.final_output == "done" and executed[0] == TURNS * CALLS, executed[0])

        return go

    return prepare


# -- 2. growth -----------------------------------------------------------------------------------

PAGE = ("The quick brown fox jumps over the lazy dog; 0123456789. " * 40)[:2048]


def fetch(page: int) -> str:
    """Return a 2 KB page."""
    return PAGE


def growth_run(turns: int, scripted_usage: bool) -> list[float]:
    """Seconds of each tool turn of one run, each timed around ``Session.step()``."""
    usage = USAGE if scripted_usage else None
    script = [
        *(
            Completion(tool_calls=[ToolCall("fetch", {"page": t})], usage=usage)
            for t in range(turns)
        ),
        Completion(text="done", usage=usage),
    ]
    session = start(
        ScriptedModel(script),
        "go",
        tools=[fetch],
        budget=Budget(max_steps=turns + 1, max_cost_usd=10_000.0),
        price=PRICE,
        max_output_tokens=500,
    )
    seconds = []
    for _ in range(turns):
        t0 = now()
        session.step()
        seconds.append(now() - t0)
    session.step()
    expect(session.result.answered and len(session.result.tool_calls) == turns)
    return seconds


def growth(turns: int, window: int, runs: int, scripted_usage: bool) -> dict[str, float]:
    ratios, firsts, lasts = [], [], []
    growth_run(min(turns, 50), scripted_usage)  # warm-up
    for _ in range(runs):
        gc.collect()
        seconds = growth_run(turns, scripted_usage)
        first, last = median(seconds[:window]), median(seconds[-window:])
        firsts.append(first)
        lasts.append(last)
        ratios.append(last / first)
    return {
        "turns": turns,
        "window": window,
        "first_us": median(firsts) * 1e6,
        "last_us": median(lasts) * 1e6,
        "ratio": median(ratios),
    }


def growth_plain(turns: int, window: int) -> dict[str, float]:
    """The loop's own growth: a plain model callable that reads nothing, so what a turn costs
    is the loop's, plus the one thing that must grow, the copy of the context handed to the
    model (a fresh list each call). That copy is timed alone at the last turns' context size
    and taken out of the last turns' figure."""
    script = iter(
        [*(Completion(tool_calls=[ToolCall("fetch", {"page": t})], usage=USAGE)
           for t in range(turns)), Completion(text="done", usage=USAGE)]
    )  # fmt: skip
    sizes: list[int] = []

    def model(messages: list[Any], tools: list[dict[str, Any]]) -> Completion:
        sizes.append(len(messages))
        return next(script)

    session = start(
        model,
        "go",
        tools=[fetch],
        budget=Budget(max_steps=turns + 1, max_cost_usd=10_000.0),
        price=PRICE,
        max_output_tokens=500,
    )
    gc.collect()
    seconds = []
    for _ in range(turns):
        t0 = now()
        session.step()
        seconds.append(now() - t0)
    session.step()
    expect(session.result.answered and len(session.result.tool_calls) == turns)
    context = session.messages
    copies = []
    for _ in range(window):
        t0 = now()
        handed = [*context]  # the handoff, alone
        copies.append(now() - t0)
        expect(len(handed) == len(context))
    first, last, copy = median(seconds[:window]), median(seconds[-window:]), median(copies)
    return {
        "turns": turns,
        "messages": sizes[-1],
        "first_us": first * 1e6,
        "last_us": last * 1e6,
        "copy_us": copy * 1e6,
        "ratio": last / first,
        "ratio_without_copy": (last - copy) / first,
    }


def long_scripted_run(steps: int) -> dict[str, float]:
    """A ``ScriptedModel`` run of ``steps`` tool turns, default usage, in a fresh interpreter:
    its seconds and the process's peak resident memory (what a notebook user waits for)."""
    code = f"""
import resource, sys, time
from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, run, tool
@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b
script = [Completion(tool_calls=[ToolCall("add", {{"a": i, "b": 1}})]) for i in range({steps})]
model = ScriptedModel([*script, "done"], price=Price(1.25, 10.0), max_output_tokens=100)
started = time.perf_counter()
result = run(model, "go", tools=[add], budget=Budget(max_steps={steps} + 1))
seconds = time.perf_counter() - started
assert result.answered and len(result.steps) == {steps} + 1, result.stop
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(seconds, rss * (1 if sys.platform == "darwin" else 1024))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    expect(out.returncode == 0, out.stderr[-2000:])
    seconds, peak = out.stdout.split()
    return {"steps": steps, "seconds": float(seconds), "peak_mb": int(peak) / 2**20}


# -- 3. a parallel batch -------------------------------------------------------------------------

NAP = 0.1


def sleeper(i: int) -> Callable[..., Any]:
    def nap() -> str:
        """Sleep 100 ms."""
        time.sleep(NAP)
        return "rested"

    return tool(nap, name=f"nap_{i}")


def parallel(runs: int) -> float:
    """Wall time of one turn that runs 8 sleeping tools, over the time one of them takes."""
    naps = [sleeper(i) for i in range(8)]
    ratios = []
    for _ in range(runs):
        model = ScriptedModel(
            [Completion(tool_calls=[ToolCall(t.name) for t in naps], usage=USAGE), "done"]
        )
        session = start(model, "go", tools=naps)
        t0 = now()
        session.step()
        ratios.append((now() - t0) / NAP)
        session.step()
        expect(session.result.answered and len(session.result.tool_calls) == 8)
    return median(ratios)


# -- 4. building a schema ------------------------------------------------------------------------


def search(
    query: str,
    limit: int,
    min_score: float,
    tags: list[str],
    order: Literal["newest", "oldest", "relevance"],
    cursor: str | None = None,
) -> list[str]:
    """Search the archive.

    Args:
        query: words to look for
        limit: at most this many hits
        min_score: drop hits scoring below this
        tags: only hits carrying every one of these tags
        order: how to sort the hits
        cursor: where the previous page ended
    """
    return []


def schema_build(batches: int, per_batch: int) -> float:
    """Microseconds for ``tool(search)``: the median batch, divided by its size."""
    for _ in range(per_batch):
        tool(search)
    samples = []
    for _ in range(batches):
        t0 = now()
        for _ in range(per_batch):
            tool(search)
        samples.append((now() - t0) / per_batch)
    required = tool(search).schema["parameters"]["required"]
    expect(required == ["query", "limit", "min_score", "tags", "order"], required)
    return median(samples) * 1e6


# -- 5. a 1,000-step trace -----------------------------------------------------------------------


def long_trace(steps: int) -> Result:
    script = [
        *(
            Completion(
                text=f"step {t}", tool_calls=[ToolCall("add", {"a": t, "b": 1})], usage=USAGE
            )
            for t in range(steps - 1)
        ),
        Completion(text="done", usage=USAGE),
    ]
    result = run(
        ScriptedModel(script), "go", tools=TOOLS, budget=Budget(max_steps=steps), price=PRICE
    )
    expect(result.answered and len(result.steps) == steps)
    return result


def round_trip(result: Result) -> Result:
    return Result.from_dict(json.loads(json.dumps(result.to_dict())))


def trace_benchmarks(steps: int, runs: int) -> dict[str, Any]:
    result = long_trace(steps)
    expect(round_trip(result) == result)
    samples = []
    for _ in range(runs):
        gc.collect()
        t0 = now()
        round_trip(result)
        samples.append(now() - t0)
    out: dict[str, Any] = {"steps": steps, "round_trip_ms": median(samples) * 1e3}
    try:
        from budgetloop_widgets import TraceView  # type: ignore[import-not-found]
    except ImportError:
        out["trace_view"] = "skipped: budgetloop_widgets not available"
        return out
    try:
        TraceView(result)
    except Exception as exc:  # the widgets package is young; report it, keep measuring
        out["trace_view"] = f"error: TraceView(result) raised {type(exc).__name__}: {exc}"
        return out
    samples = []
    for _ in range(max(1, runs // 2)):
        gc.collect()
        t0 = now()
        TraceView(result)
        samples.append(now() - t0)
    out["trace_view_ms"] = median(samples) * 1e3
    return out


# -- 7. a 100,000-step JSON Lines trace, loaded ------------------------------------------------

LOAD = """
import resource, sys, time
from budgetloop import load_trace
started = time.perf_counter()
cpu = time.process_time()
trace = load_trace(sys.argv[1])
print(time.perf_counter() - started, time.process_time() - cpu,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, len(trace.steps))
"""


def journal_file(path: str, steps: int) -> int:
    """A JSON Lines trace of ``steps`` steps: a real run's header, step and end lines (a tool
    returning about 400 characters), the step line repeated and renumbered. Its size in bytes."""
    import tempfile

    def read(topic: str) -> str:
        """Read about a topic."""
        return f"notes on {topic}. " * 30

    with tempfile.TemporaryDirectory() as folder:
        one = os.path.join(folder, "one.jsonl")
        turn = Completion(text="reading", tool_calls=[ToolCall("read", {"topic": "a"})])
        run(ScriptedModel([turn, "done"]), "Go.", tools=[read], price=PRICE, trace_path=one)
        with open(one, encoding="utf-8") as fh:
            header, step, _answer, end = fh.read().splitlines()
    entry, last = json.loads(step), json.loads(end)
    last["cost_usd"] = steps * entry["step"]["cost_usd"]  # what the repeated steps cost, or more
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(header + "\n")
        for i in range(steps):
            entry["step"]["index"] = i
            for n, call in enumerate(entry["step"]["tool_calls"]):
                call["id"] = f"call_{i}_{n}"
            fh.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        fh.write(json.dumps(last, ensure_ascii=False, separators=(",", ":")) + "\n")
    return os.path.getsize(path)


def load_benchmark(steps: int, runs: int) -> dict[str, float]:
    """``load_trace`` of a ``steps``-step journal, each run in a fresh process: the median
    wall and CPU seconds, and the largest peak resident memory."""
    import subprocess
    import tempfile

    walls, cpus, peaks = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.jsonl")
        size = journal_file(path, steps)
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", LOAD, path], capture_output=True, text=True, check=True
            ).stdout.split()
            expect(int(out[3]) == steps, out)
            walls.append(float(out[0]))
            cpus.append(float(out[1]))
            peaks.append(int(out[2]))
    return {"steps": steps, "mb": size / 1e6, "seconds": median(walls),
            "cpu_seconds": median(cpus), "peak_mb": max(peaks) / 1e6}  # fmt: skip


# -- 8. parsing a provider's response body --------------------------------------------------------


def responses_body() -> dict[str, Any]:
    """A Responses API body as a reasoning model returns it for two parallel calls."""
    calls = [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": name,
            "arguments": json.dumps({"path": path}),
            "status": "completed",
        }
        for i, (name, path) in enumerate((("delete_file", ".env"), ("create_file", "test.txt")))
    ]
    summary = [{"type": "summary_text", "text": "Two files to handle."}]
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": summary}
    reasoning["encrypted_content"] = "gAAAAB" + "x" * 600
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1764640000,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": 256,
        "model": "gpt-5-mini-2025-08-07",
        "output": [reasoning, *calls],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "low", "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
            "output_tokens": 60,
            "output_tokens_details": {"reasoning_tokens": 40},
            "total_tokens": 180,
        },
        "metadata": {},
    }


def body_parsing(rounds: int, per_round: int) -> dict[str, float]:
    """Microseconds from a response body's bytes to a ``Completion``, as each adapter does it:
    ``openai_chat`` through the openai SDK's ``ChatCompletion`` (what the client builds from a
    body) and ``completion_from_openai``; ``openai_responses`` reading the JSON itself with
    ``completion_from_responses``. The same two calls in each body; the two interleaved."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    from budgetloop.adapters import completion_from_openai, completion_from_responses

    fixtures = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    with open(os.path.join(fixtures, "provider-payloads", "openai_chat_two_tool_calls.json")) as f:
        chat_raw = f.read().encode()
    responses_raw = json.dumps(responses_body()).encode()
    Response.model_validate(json.loads(responses_raw))  # the shape the SDK parses

    def chat() -> Completion:
        body = json.loads(chat_raw)
        return completion_from_openai(construct_type(type_=ChatCompletion, value=body))

    def responses() -> Completion:
        return completion_from_responses(json.loads(responses_raw))

    expect(len(chat().tool_calls) == 2 and len(responses().tool_calls) == 2)

    def prepare(parse: Callable[[], Completion]) -> Prepare:
        def go() -> None:
            for _ in range(per_round):
                parse()

        return lambda: go

    times = interleaved(
        {"chat": prepare(chat), "responses": prepare(responses)}, rounds=rounds, warmup=2
    )
    return {
        "chat_us": median(times["chat"]) / per_round * 1e6,
        "responses_us": median(times["responses"]) / per_round * 1e6,
        "ratio": paired_ratio(times, "responses", "chat"),
    }


# -- the report ----------------------------------------------------------------------------------


# -- 9. a streamed reply -------------------------------------------------------------------------


def streaming(pieces: int, rounds: int) -> dict[str, float]:
    """A ``pieces``-chunk Chat Completions stream read by the openai SDK alone, and by a run of
    ``openai_chat(..., stream=True)`` (each chunk read, handed to the loop and put together),
    alternating: the loop's cost per chunk against the SDK's."""
    from chat_stream import chat_client, chat_events, sdk_alone, through_the_loop

    client = chat_client(chat_events(pieces))
    cases: dict[str, Prepare] = {
        "alone": lambda: sdk_alone(client),
        "loop": lambda: through_the_loop(client, pieces),
    }
    times = interleaved(cases, rounds=rounds, warmup=2)
    return {
        "ratio": paired_ratio(times, "loop", "alone"),
        "alone_us": median(times["alone"]) / pieces * 1e6,
        "loop_us": median(times["loop"]) / pieces * 1e6,
    }


# -- 10. the seed's shape, with each context policy ---------------------------------------------

SEED_PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)
SEED = {"start_tokens": 8_000, "tokens_per_turn": 2_000, "max_output_tokens": 500,
        "price": SEED_PRICE}  # fmt: skip
RESULTS = " ".join(["found"] * 2_000)  # a tool result of 2,000 tokens, counted one a word


def words(messages: list[Any], tools: Any = ()) -> int:
    """One token a word of the messages' text (tool schemas count nothing): the seed's shape,
    exactly, for the loop's projections and for the usage the scripted models report."""
    return sum(len((m.content or "").split()) for m in messages)


def seed_search(q: str) -> str:
    """Search: 2,000 tokens of results."""
    return RESULTS


def seed_agent(turns: int) -> ScriptedModel:
    """Calls ``seed_search`` every turn, and reports the request's words in, 500 out."""

    calls = itertools.count(1)

    def reply(messages: list[Any], tools: list[dict[str, Any]]) -> Completion:
        n = next(calls)
        call = ToolCall("seed_search", {"q": f"lead {n}"}, f"c{n}")
        return Completion(tool_calls=(call,), usage=Usage(words(messages), 500))

    return ScriptedModel([reply] * turns, price=SEED_PRICE, max_output_tokens=500)


def seed_summarizer() -> ScriptedModel:
    """A cheaper model ($1 / $5 per million) writing a 300-word summary of what it is sent."""

    def reply(messages: list[Any], tools: list[dict[str, Any]]) -> Completion:
        return Completion(text=" ".join(["gist"] * 300), usage=Usage(words(messages), 300))

    return ScriptedModel([reply], price=Price(1.0, 5.0), max_output_tokens=500, repeat_last=True)


def seed_policies() -> dict[str, Any]:
    return {
        "no policy": None,
        "KeepLast(4)": KeepLast(turns=4),
        "DropToolResults(2)": DropToolResults(older_than=2),
        "Summarize(16k, 2)": Summarize(
            seed_summarizer(), when_input_tokens_over=16_000, keep_last=2
        ),
    }


def seed_shape(turns: int, policy: Any) -> dict[str, float]:
    """A run of the seed's shape for ``turns`` turns (``max_steps``) with ``policy``: what it
    cost, what ``worst_case_cost`` computes for it, and its last request's input over its
    first (from the steps' projections)."""
    result = run(seed_agent(turns), " ".join(["question"] * 8_000), tools=[seed_search],
                 count_tokens=words, budget=Budget(max_steps=turns), context=policy)  # fmt: skip
    expect(len(result.steps) == turns, result.detail)
    inputs = [s.projection.input_tokens for s in result.steps if s.projection is not None]
    computed = worst_case_cost(turns, **SEED, context=policy)
    if policy is None or isinstance(policy, KeepLast):  # the arithmetic is exact for these
        expect(result.cost_usd == computed, f"{policy}: {result.cost_usd} != {computed}")
    return {
        "turns": turns,
        "cost_usd": result.cost_usd or 0.0,
        "summaries_usd": result.summaries_usd,
        "computed_usd": computed,
        "first_input": inputs[0],
        "last_input": inputs[-1],
        "ratio": inputs[-1] / inputs[0],
    }


def seed_rows(lengths: tuple[int, ...]) -> list[Row]:
    """Each built-in policy (and none) over ``lengths`` turns of the seed's shape, and whether
    ``KeepLast`` held the last request's input over the first constant across them."""
    rows = []
    held: list[float] = []
    for name in seed_policies():
        for turns in lengths:
            policy = seed_policies()[name]  # a fresh summarizer for each run
            f = seed_shape(turns, policy)
            if isinstance(policy, KeepLast):
                held.append(f["ratio"])
            rows.append(
                Row(
                    f"context: the seed's shape, {turns} turns, {name}",
                    f"{format_usd(f['cost_usd'])} (computed {format_usd(f['computed_usd'])}), "
                    f"last/first input {f['last_input']:,}/{f['first_input']:,} = "
                    f"{f['ratio']:.2f}x",
                    extra=f,
                )
            )
    constant = len(set(held)) == 1
    rows.append(
        Row(
            f"context: KeepLast(4) holds last/first input over {', '.join(map(str, lengths))} "
            "turns",
            f"{'constant' if constant else 'NOT constant'}: "
            + ", ".join(f"{r:.2f}x" for r in held),
            "constant",
            constant,
            {"ratios": held},
        )
    )
    return rows


@dataclass
class Row:
    name: str
    value: str
    target: str = ""
    met: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table, the form benchmarks/README.md quotes."""
    head = ("benchmark", "measured", "target", "met")
    cells = [
        (r.name, r.value, r.target, "" if r.met is None else ("yes" if r.met else "NO"))
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells:
        lines.append("| " + " | ".join(x.ljust(w) for x, w in zip(c, widths, strict=True)) + " |")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def warn_if_elsewhere(where: str) -> None:
    """Say so when the budgetloop imported is not this checkout's: an installed copy, or another
    checkout's through an editable install (a git worktree's scripts import the main one's)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    measured = os.path.dirname(os.path.dirname(os.path.abspath(budgetloop.__file__)))
    if measured != here:
        print(f"{where}: measuring the budgetloop in {measured}, not this checkout's ({here}); "
              "run with PYTHONPATH=. to measure this one", file=sys.stderr)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repeats")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    quick = args.quick
    rows: list[Row] = []
    started = now()

    def say(text: str) -> None:
        if not args.json:
            print(text, file=sys.stderr, flush=True)

    warn_if_elsewhere("bench.py")

    # 1. overhead per turn, interleaved with the bare loop
    say("overhead per turn...")
    cases: dict[str, Prepare] = {"bare loop": prepare_bare}
    cases.update({name: prepare_loop(config) for name, config in CONFIGS.items()})
    times = interleaved(cases, rounds=5 if quick else 41, warmup=2 if quick else 5)
    rows.append(
        Row(
            "overhead: bare loop",
            f"{median(times['bare loop']) / TURNS * 1e6:.1f} us/turn",
            extra={"us_per_turn": median(times["bare loop"]) / TURNS * 1e6},
        )
    )
    for name in CONFIGS:
        us = median(times[name]) / TURNS * 1e6
        ratio = paired_ratio(times, name, "bare loop")
        target = "<= 5x bare" if name != "guards off" else ""
        met = ratio <= 5 if target else None
        rows.append(
            Row(
                f"overhead: budgetloop, {name}",
                f"{us:.1f} us/turn = {ratio:.2f}x bare",
                target,
                met,
                {"us_per_turn": us, "ratio_to_bare": ratio},
            )
        )

    # 2. growth
    say("growth...")
    turns, window = (100, 20) if quick else (400, 50)
    g = growth(turns, window, runs=1 if quick else 7, scripted_usage=True)
    rows.append(
        Row(
            f"growth: {turns} turns of 2 KB results, last {window} / first {window}",
            f"{g['ratio']:.2f}x ({g['first_us']:.0f} -> {g['last_us']:.0f} us/turn)",
            "<= 1.5x",
            g["ratio"] <= 1.5,
            g,
        )
    )
    g = growth(turns, window, runs=1 if quick else 3, scripted_usage=False)
    rows.append(
        Row(
            "growth, model counting the whole request (ScriptedModel default usage)",
            f"{g['ratio']:.2f}x ({g['first_us']:.0f} -> {g['last_us']:.0f} us/turn)",
            "model side, not the loop",
            None,
            g,
        )
    )
    turns, window = (1_000, 50) if quick else (10_000, 200)
    g = growth_plain(turns, window)
    rows.append(
        Row(
            f"growth: {turns:,} turns, a plain model callable, last {window} / first {window}",
            f"{g['ratio_without_copy']:.2f}x without the context's copy "
            f"({g['first_us']:.0f} -> {g['last_us']:.0f} us/turn, {g['ratio']:.2f}x, of which "
            f"{g['copy_us']:.0f} us copy {g['messages']:,} messages for the model)",
            "<= 1.5x, the copy aside",
            g["ratio_without_copy"] <= 1.5,
            g,
        )
    )
    g = growth(turns, window, runs=1, scripted_usage=True)
    rows.append(
        Row(
            f"growth: {turns:,} turns, ScriptedModel recording each request",
            f"{g['ratio']:.2f}x ({g['first_us']:.0f} -> {g['last_us']:.0f} us/turn)",
            "model side, not the loop",
            None,
            g,
        )
    )
    steps = 1_000 if quick else 10_000
    say(f"a scripted run of {steps:,} steps...")
    long = long_scripted_run(steps)
    rows.append(
        Row(
            f"a ScriptedModel run of {steps:,} tool steps, default usage (own process)",
            f"{long['seconds']:.1f} s, peak {long['peak_mb']:.0f} MB resident",
            "seconds, not minutes",
            None,
            long,
        )
    )

    # 3. a parallel batch
    say("parallel batch...")
    ratio = parallel(runs=2 if quick else 7)
    rows.append(
        Row(
            "parallel: 8 tools x 100 ms in one turn",
            f"{ratio:.2f}x the slowest tool",
            "<= 1.3x",
            ratio <= 1.3,
            {"ratio": ratio},
        )
    )

    # 4. a schema
    say("schema...")
    us = schema_build(batches=5 if quick else 31, per_batch=20 if quick else 100)
    rows.append(
        Row(
            "schema: @tool on a 6-parameter function",
            f"{us:.0f} us",
            "<= 200 us",
            us <= 200,
            {"us": us},
        )
    )

    # 5. a 1,000-step trace
    say("trace...")
    tr = trace_benchmarks(1000, runs=3 if quick else 15)
    rows.append(
        Row(
            "trace: to_dict + dumps + loads + from_dict, 1,000 steps",
            f"{tr['round_trip_ms']:.0f} ms",
            "<= 200 ms",
            tr["round_trip_ms"] <= 200,
            {"ms": tr["round_trip_ms"]},
        )
    )
    if "trace_view_ms" in tr:
        ms = tr["trace_view_ms"]
        rows.append(Row("trace: TraceView of it", f"{ms:.0f} ms", "<= 1 s", ms <= 1e3, {"ms": ms}))
    else:
        rows.append(Row("trace: TraceView of it", tr["trace_view"], "<= 1 s"))

    # 7. a long JSON Lines trace, loaded (the viewer's part is in bench_widgets.py)
    say("load_trace...")
    steps = 10_000 if quick else 100_000
    ld = load_benchmark(steps, runs=1 if quick else 3)
    rows.append(
        Row(
            f"trace: load_trace of a {steps:,}-step JSON Lines file ({ld['mb']:.0f} MB)",
            f"{ld['seconds']:.2f} s (cpu {ld['cpu_seconds']:.2f} s), peak {ld['peak_mb']:.0f} MB",
            "<= 5 s with TraceView",
            ld["seconds"] <= 5,
            ld,
        )
    )

    # 8. a provider's response body, parsed
    say("response bodies...")
    bp = body_parsing(rounds=5 if quick else 31, per_round=50 if quick else 400)
    rows.append(
        Row(
            "parse: a Responses API body / a Chat Completions one (two calls each)",
            f"{bp['ratio']:.2f}x ({bp['responses_us']:.0f} / {bp['chat_us']:.0f} us)",
            "<= 1.5x",
            bp["ratio"] <= 1.5,
            bp,
        )
    )

    # 9. a streamed reply, through the real openai SDK over a mock transport
    say("a streamed reply...")
    name = "stream: a 1,000-chunk Chat Completions reply, through the loop / the SDK alone"
    try:
        st = streaming(pieces=1000, rounds=3 if quick else 21)
    except ImportError as exc:  # the adapters extra (the openai SDK) is not installed
        rows.append(Row(name, f"not measured: {exc.name} is not installed", "<= 1.2x"))
    else:
        rows.append(
            Row(
                name,
                f"{st['ratio']:.2f}x ({st['loop_us']:.1f} / {st['alone_us']:.1f} us a chunk)",
                "<= 1.2x",
                st["ratio"] <= 1.2,
                st,
            )
        )

    # 10. the seed's shape with each context policy: what a run costs, and how its input grows
    say("context policies on the seed's shape...")
    rows.extend(seed_rows((10, 20) if quick else (10, 20, 50, 100)))

    # 6. peers, each interleaved with budgetloop (cost guard on)
    peers = (("pydantic-ai", prepare_pydantic_ai), ("openai-agents", prepare_openai_agents))
    for label, make in peers:
        say(f"peer: {label}...")
        peer = make()
        if isinstance(peer, str):
            rows.append(Row(f"peer: {label}", peer, ">= 50x slower"))
            continue
        cases = {"budgetloop": prepare_loop(CONFIGS["cost guard on"]), label: peer}
        times = interleaved(cases, rounds=1 if quick else 9, warmup=1 if quick else 2)
        us = median(times[label]) / TURNS * 1e6
        ratio = paired_ratio(times, label, "budgetloop")
        rows.append(
            Row(
                f"peer: {label}, same workload",
                f"{us:.0f} us/turn = {ratio:.0f}x budgetloop",
                ">= 50x slower",
                ratio >= 50,
                {"us_per_turn": us, "ratio_to_budgetloop": ratio},
            )
        )

    total = now() - started
    info = machine()
    if args.json:
        json.dump(
            {
                "machine": info,
                "quick": quick,
                "seconds": total,
                "rows": [r.__dict__ for r in rows],
            },
            sys.stdout,
            indent=1,
        )
        print()
        return 0
    print(
        f"budgetloop benchmarks{' (quick)' if quick else ''}: {info['nproc']} cpu, {info['cpu']}, "
        f"{info['implementation']} {info['python']}, {total:.0f} s"
    )
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
