"""Durable traces: ``run(..., trace_path=...)`` writes JSON Lines as it goes, ``load_trace`` reads
both formats back, a crash leaves every finished step, and loading never evaluates anything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import Budget, Completion, Result, ScriptedModel, ToolCall, load_trace, run, tool
from tests.strategies import PROMPT, Scenario, build, scenarios

ROOT = Path(__file__).resolve().parent.parent


@tool
def search(q: str) -> str:
    """Search."""
    return f"found {q}"


def searching(n: int, answer: str = "done") -> ScriptedModel:
    turns: list[Any] = [
        Completion(tool_calls=[ToolCall("search", {"q": f"q{i}"}, f"c{i}")]) for i in range(n)
    ]
    return ScriptedModel([*turns, answer])


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_run_writes_json_lines_that_load_back_as_its_result(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = run(searching(2), "go", tools=[search], trace_path=path)
    written = lines(path)
    assert [e["kind"] for e in written] == ["header", "step", "step", "step", "end"]
    assert written[0]["format"] == "budgetloop-trace"
    assert written[0]["version"] == 1
    assert [e["step"]["index"] for e in written[1:4]] == [0, 1, 2]
    assert written[-1]["stop"] == "answered"
    assert path.read_text(encoding="utf-8").endswith("\n")
    loaded = load_trace(path)
    assert loaded.to_dict() == result.to_dict()
    assert loaded == result


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    result = run(searching(1), "go", tools=[search])
    result.save(path)
    assert json.loads(path.read_text(encoding="utf-8")) == result.to_dict()
    assert load_trace(path) == result


@settings(max_examples=40)
@given(scenarios(), st.booleans())
def test_any_run_loads_back_from_its_journal_and_its_save(s: Scenario, saved: bool) -> None:
    built = build(s)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        result = run(built.model, PROMPT, trace_path=path, **built.kwargs)
        assert load_trace(path).to_dict() == result.to_dict()
        if saved:
            result.save(path)
            assert load_trace(path).to_dict() == result.to_dict()


# -- damaged files -------------------------------------------------------------------------------


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = run(searching(3), "go", tools=[search], trace_path=path)
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # the writer died in the middle of step 2's line: header, steps 0 and 1, half a line
    path.write_text("".join(text[:3]) + text[3][: len(text[3]) // 2], encoding="utf-8")
    loaded = load_trace(path)
    assert loaded.stop is None
    assert loaded.detail == "the run did not finish (no end line)"
    assert [s.to_dict() for s in loaded.steps] == [s.to_dict() for s in result.steps[:2]]
    assert loaded.cost_usd == result.steps[0].cost_usd + result.steps[1].cost_usd
    # the messages are those of the finished steps: prompt, then each assistant and tool pair
    assert loaded.messages == result.messages[:5]


def test_a_torn_end_line_keeps_every_step(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = run(searching(1), "go", tools=[search], trace_path=path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:-10], encoding="utf-8")
    loaded = load_trace(path)
    assert loaded.stop is None
    assert loaded.steps == result.steps


def test_a_malformed_middle_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(searching(2), "go", tools=[search], trace_path=path)
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text[2] = '{"kind": "step", "step": \n'
    path.write_text("".join(text), encoding="utf-8")
    with pytest.raises(ValueError, match=r"^.*run\.jsonl:3: not a JSON line: ") as info:
        load_trace(path)
    assert str(info.value).startswith(f"{path}:3: not a JSON line: ")


def test_a_line_of_an_unknown_kind_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(searching(1), "go", tools=[search], trace_path=path)
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text.insert(2, '{"kind": "comment"}\n')
    path.write_text("".join(text), encoding="utf-8")
    with pytest.raises(ValueError, match="expected a header") as info:
        load_trace(path)
    assert str(info.value) == f"{path}:3: expected a header, step or end line."


@pytest.mark.parametrize("journal", [True, False])
def test_a_future_version_is_a_clear_error(tmp_path: Path, journal: bool) -> None:
    path = tmp_path / "run.json"
    if journal:
        run(searching(1), "go", tools=[search], trace_path=path)
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        head = json.loads(text[0])
        head["version"] = 2
        path.write_text(json.dumps(head) + "\n" + "".join(text[1:]), encoding="utf-8")
    else:
        data = run(searching(1), "go", tools=[search]).to_dict()
        data["version"] = 2
        path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="version 2 is not supported") as info:
        load_trace(path)
    where = f"{path}:1" if journal else f"{path}"
    assert str(info.value) == (
        f"{where}: trace format version 2 is not supported; this budgetloop reads version 1. "
        "Upgrade budgetloop to read newer traces."
    )


def test_a_file_that_is_not_a_trace_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a budgetloop trace"):
        load_trace(path)
    path.write_text("not json at all", encoding="utf-8")
    with pytest.raises(ValueError, match=r"other\.json: not valid JSON"):
        load_trace(path)


# -- a crash -------------------------------------------------------------------------------------

CRASHING = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from budgetloop import Budget, Completion, ScriptedModel, ToolCall, run, tool

    trace, marker, blocks_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    calls = []

    @tool
    def work(q: str) -> str:
        "Works, then blocks forever on call number blocks_at."
        calls.append(q)
        if len(calls) == blocks_at:
            marker.write_text(q)
            time.sleep(600)
        return "did " + q

    def turn(messages, tools):
        n = sum(1 for m in messages if m.role == "assistant")
        return Completion(text=f"turn {n}", tool_calls=[ToolCall("work", {"q": f"job{n}"})])

    run(ScriptedModel([turn], repeat_last=True), "go", tools=[work],
        budget=Budget(max_steps=1000), repeat_limit=None, trace_path=trace)
    """
)


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_run_leaves_a_trace_with_every_finished_step(tmp_path: Path) -> None:
    trace, marker, finished = tmp_path / "run.jsonl", tmp_path / "blocked", 4
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING, str(trace), str(marker), str(finished + 1)], env=env
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not marker.exists():
            assert proc.poll() is None, "the child exited before it blocked"
            time.sleep(0.02)
        assert marker.read_text() == f"job{finished}"
        # the blocked call belongs to step `finished`; steps 0..finished-1 are on disk
        while time.monotonic() < deadline:
            if sum(1 for e in lines(trace) if e["kind"] == "step") == finished:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    loaded = load_trace(trace)
    assert loaded.stop is None
    assert loaded.answer is None
    assert loaded.detail == "the run did not finish (no end line)"
    assert [s.index for s in loaded.steps] == list(range(finished))
    assert [s.text for s in loaded.steps] == [f"turn {i}" for i in range(finished)]
    assert [c.result for c in loaded.tool_calls] == [f"did job{i}" for i in range(finished)]
    assert [m.role for m in loaded.messages] == ["user"] + ["assistant", "tool"] * finished
    assert loaded.budget == Budget(max_steps=1000)


# -- loading evaluates nothing -------------------------------------------------------------------


def test_loading_never_evaluates_what_the_trace_says(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {canary}')"
    expression = f"{{{{ {payload} }}}} ${{{payload}}} `touch {canary}`"

    @tool
    def echo(q: str) -> str:
        """Echoes."""
        return q

    model = ScriptedModel(
        [
            Completion(text=payload, tool_calls=[ToolCall("echo", {"q": expression}, payload)]),
            payload,
        ]
    )
    path = tmp_path / "run.jsonl"
    result = run(model, payload, tools=[echo], trace_path=path)
    saved = tmp_path / "run.json"
    result.save(saved)
    for loaded in (load_trace(path), load_trace(saved)):
        assert loaded == result
        assert loaded.answer == payload
        assert loaded.steps[0].text == payload
        assert loaded.steps[0].tool_calls[0].result == expression
        assert loaded.steps[0].tool_calls[0].id == payload
    # and a hand-written trace whose values are code, in every field loaded as a value
    data = result.to_dict()
    data["stop"] = "answered"
    data["budget"]["max_steps"] = 10
    data["detail"] = payload
    data["messages"][0]["content"] = payload
    saved.write_text(json.dumps(data), encoding="utf-8")
    assert load_trace(saved).detail == payload
    with pytest.raises(ValueError, match=r"budget\.max_steps") as info:
        Result.from_dict({**data, "budget": {"max_steps": payload}})
    assert str(info.value) == (
        "Result.from_dict: budget.max_steps: expected an int >= 0 or None, got str."
    )
    assert not canary.exists()
