"""Durable traces: ``run(..., trace_path=...)`` writes JSON Lines as it goes, ``load_trace`` reads
both formats back, a crash leaves every finished step, and loading never evaluates anything."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Budget,
    Completion,
    Price,
    Result,
    ScriptedModel,
    ToolCall,
    load_trace,
    run,
    start,
    tool,
    write_new,
)
from budgetloop._trace._journal import Journal, check_trace_path
from tests.strategies import PROMPT, Scenario, build, scenarios

ROOT = Path(__file__).resolve().parents[2]


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
    assert written[0]["version"] == 2
    assert [e["step"]["index"] for e in written[1:4]] == [0, 1, 2]
    assert written[-1]["stop"] == "answered"
    assert path.read_text(encoding="utf-8").endswith("\n")
    loaded = load_trace(path)
    assert loaded.to_dict() == result.to_dict()
    assert loaded == result


def test_the_header_records_the_options_and_an_older_header_without_them_loads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    options: dict[str, Any] = {"finish": True, "budget_note": True, "warn_repeats": True,
                               "repeat_limit": 4, "cycle_limit": 2, "max_result_chars": 500}  # fmt: skip
    result = run(searching(1), "go", tools=[search], trace_path=path, **options)
    assert lines(path)[0]["options"] == options == result.options
    assert load_trace(path).options == options
    entries = lines(path)
    del entries[0]["options"]
    write_lines(path, entries)
    assert load_trace(path) == replace(result, options={})


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    result = run(searching(1), "go", tools=[search])
    result.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == ("budgetloop-trace", 2)
    assert Result.from_dict(data) == result
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


# -- format version 2: each text once ------------------------------------------------------------


def split_lines(path: Path) -> list[dict[str, Any]]:
    """A journal's lines, split at newlines only (``splitlines`` splits at U+0085 too)."""
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line]


def as_version_1(journal: Path, result: Result) -> str:
    """The journal of ``result`` as version 1 wrote it: every field, every message whole (each
    line's messages counted from the version-2 ``journal`` of the same run)."""
    full, out, at = result.to_dict(), [], 0
    for entry in split_lines(journal):
        if entry["kind"] == "header":
            keys = ("format", "version", "run_id", "forked_from", "edited", "budget", "price",
                    "max_output_tokens", "options", "tools")  # fmt: skip
            n = len(entry["messages"])
            carried = {"carried_usd": entry["carried_usd"]} if "carried_usd" in entry else {}
            head = {k: full[k] for k in keys}
            out.append({**head, **carried, "kind": "header", "messages": full["messages"][:n]})
        elif entry["kind"] == "step":
            step = full["steps"][entry["step"]["index"]]
            n = len(entry.get("messages", [None] * (1 + len(step["tool_calls"]))))
            out.append({"kind": "step", "step": step, "messages": full["messages"][at : at + n]})
        else:
            keys = ("stop", "answer", "error", "detail", "cost_usd", "seconds", "output")
            out.append({"kind": "end", **{k: full[k] for k in keys if k in full}})
            n = 0
        at += n
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in out)


@settings(max_examples=40)
@given(scenarios())
def test_version_1_and_version_2_of_any_run_load_to_equal_results(s: Scenario) -> None:
    built = build(s)
    with tempfile.TemporaryDirectory() as tmp:
        v2_lines, v2_json = Path(tmp) / "v2.jsonl", Path(tmp) / "v2.json"
        v1_lines, v1_json = Path(tmp) / "v1.jsonl", Path(tmp) / "v1.json"
        result = run(built.model, PROMPT, trace_path=v2_lines, **built.kwargs)
        result.save(v2_json)
        v1_lines.write_text(as_version_1(v2_lines, result), encoding="utf-8")
        v1_json.write_text(json.dumps(result.to_dict(), indent=1), encoding="utf-8")
        assert json.loads(v2_json.read_text(encoding="utf-8"))["version"] == 2
        assert split_lines(v2_lines)[0]["version"] == 2
        loaded = [load_trace(p) for p in (v1_lines, v2_lines, v1_json, v2_json)]
        assert [r.to_dict() for r in loaded] == [result.to_dict()] * 4
        assert loaded == [result] * 4


@tool
def notes(topic: str) -> str:
    """Read the notes on a topic."""
    return f"notes on {topic}: " + " ".join(f"item {i} of {topic}." for i in range(30))


def test_version_2_is_at_most_055_times_the_size_of_version_1(tmp_path: Path) -> None:
    turns: list[Any] = [
        Completion(text=f"reading {i}", tool_calls=[ToolCall("notes", {"topic": f"part {i}"})])
        for i in range(30)
    ]
    journal, saved = tmp_path / "run.jsonl", tmp_path / "run.json"
    result = run(ScriptedModel([*turns, "done"]), "go", tools=[notes], trace_path=journal,
                 price=Price(3.0, 15.0), budget=Budget(max_steps=40))  # fmt: skip
    result.save(saved)
    assert len(result.steps) == 31
    assert len(result.tool_calls) == 30
    v1_journal = as_version_1(journal, result).encode("utf-8")
    v1_saved = json.dumps(result.to_dict(), ensure_ascii=False, indent=1).encode("utf-8")
    assert journal.stat().st_size <= 0.55 * len(v1_journal)
    assert saved.stat().st_size <= 0.55 * len(v1_saved)
    text = saved.read_text(encoding="utf-8")
    assert text.count("item 3 of part 7.") == 1  # each result once
    assert journal.read_text(encoding="utf-8").count("item 3 of part 7.") == 1


def test_a_message_the_steps_do_not_hold_is_written_whole(tmp_path: Path) -> None:
    result = run(searching(2), "go", tools=[search])
    edited = list(result.messages)
    edited[2] = replace(edited[2], content="found something else")  # step 0's tool result
    changed = replace(result, messages=tuple(edited))
    changed.save(tmp_path / "run.json")
    written = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["messages"]
    assert written[1:4] == [
        {"of": [0]},
        {"role": "tool", "content": "found something else", "tool_call_id": "c0",
         "name": "search"},
        {"of": [1]},
    ]  # fmt: skip
    assert load_trace(tmp_path / "run.json").messages == changed.messages


@pytest.mark.parametrize(
    ("of", "said"),
    [([5], "[5]"), ([0, 3], "[0, 3]"), ("0", "'0'"), ([-1], "[-1]"), ([0, 0, 0], "[0, 0, 0]")],
)
def test_a_reference_to_nothing_the_trace_holds_is_named(
    tmp_path: Path, of: Any, said: str
) -> None:
    path = tmp_path / "run.json"
    run(searching(1), "go", tools=[search]).save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["messages"][1] = {"of": of}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_error(path) == (
        ": messages[1].of must be [step] (a step's reply) or [step, call] (a call's result) "
        f"of the 2 steps read so far, got {said}."
    )


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
    with pytest.raises(
        ValueError, match=r"^.*run\.jsonl:3: the line must be JSON, got text that is not "
    ) as info:
        load_trace(path)
    assert str(info.value).startswith(
        f"load_trace: {path}:3: the line must be JSON, got text that is not ("
    )


def test_a_line_of_an_unknown_kind_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(searching(1), "go", tools=[search], trace_path=path)
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text.insert(2, '{"kind": "comment"}\n')
    path.write_text("".join(text), encoding="utf-8")
    with pytest.raises(ValueError, match="kind must be header, step, end or taken") as info:
        load_trace(path)
    assert str(info.value) == (
        f"load_trace: {path}:3: kind must be header, step, end or taken, got 'comment'."
    )


@pytest.mark.parametrize("journal", [True, False])
def test_a_future_version_is_a_clear_error(tmp_path: Path, journal: bool) -> None:
    path = tmp_path / "run.json"
    if journal:
        run(searching(1), "go", tools=[search], trace_path=path)
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        head = json.loads(text[0])
        head["version"] = 3
        path.write_text(json.dumps(head) + "\n" + "".join(text[1:]), encoding="utf-8")
    else:
        data = run(searching(1), "go", tools=[search]).to_dict()
        data["version"] = 3
        path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="version must be 1 or 2, the trace formats") as info:
        load_trace(path)
    where = f"load_trace: {path}:1" if journal else f"load_trace: {path}"
    assert str(info.value) == (
        f"{where}: version must be 1 or 2, the trace formats this budgetloop reads, got 3. "
        "Upgrade budgetloop to read newer traces."
    )


def test_a_file_that_is_not_a_trace_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}', encoding="utf-8")
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(path)
    assert str(info.value) == (
        f"load_trace: {path}: the file must be a budgetloop trace (with 'format': "
        "'budgetloop-trace') or a run load_trace imports: OTLP JSON (an object with "
        "resourceSpans, or JSON Lines of them), an openai-agents trace export, pydantic-ai's "
        "messages JSON, an Anthropic Messages log, OpenAI Responses input items, or a Chat "
        "Completions message log (a list of messages, or an object with messages), got an "
        "object that is none of these."
    )
    path.write_text("not json at all", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"other\.json: the file must be JSON, got text that is not"
    ):
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
        # the child's write_text makes the file, then writes it: wait for the text, not the file
        while time.monotonic() < deadline and not (marker.exists() and marker.read_text()):
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
        "Result.from_dict: budget.max_steps must be an int >= 0 or None, got str."
    )
    assert not canary.exists()


# -- a trace is never destroyed by the next run --------------------------------------------------


def test_a_second_run_keeps_the_first_runs_trace_aside(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first = run(searching(1, "first"), "go", tools=[search], trace_path=path)
    written = path.read_bytes()
    second = run(searching(2, "second"), "go", tools=[search], trace_path=path)
    third = run(searching(0, "third"), "go", tools=[search], trace_path=path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run.1.jsonl",
        "run.2.jsonl",
        "run.jsonl",
    ]
    assert (tmp_path / "run.1.jsonl").read_bytes() == written
    assert load_trace(tmp_path / "run.1.jsonl") == first
    assert load_trace(tmp_path / "run.2.jsonl") == second
    assert load_trace(path) == third
    assert third.answer == "third"


def test_fresh_and_a_reset_session_keep_the_previous_trace(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = searching(1)
    session = start(model, "go", tools=[search], trace_path=path, clock=lambda: 0.0)
    first = session.run()
    model.reset()
    again = session.fresh()
    assert path.exists()  # nothing is moved before the new session writes
    assert again.run() == first
    assert load_trace(tmp_path / "run.1.jsonl") == first
    assert load_trace(path) == first


def test_the_name_taken_aside_skips_names_in_use(tmp_path: Path) -> None:
    path = tmp_path / "trace"
    (tmp_path / "trace.1").write_text("someone else's", encoding="utf-8")
    path.write_text("the old trace", encoding="utf-8")
    journal = Journal(path)
    result = run(searching(0), "go")
    journal.header(result)
    journal.end(result)
    assert journal.moved_to == str(tmp_path / "trace.2")
    assert (tmp_path / "trace.1").read_text(encoding="utf-8") == "someone else's"
    assert (tmp_path / "trace.2").read_text(encoding="utf-8") == "the old trace"
    assert load_trace(path).answer == "done"


def test_save_keeps_an_existing_file_aside_too(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    first = run(searching(1, "first"), "go", tools=[search])
    assert first.save(path) is None
    second = run(searching(0, "second"), "go", tools=[search])
    assert second.save(path) == str(tmp_path / "run.1.json")
    assert load_trace(tmp_path / "run.1.json") == first
    assert load_trace(path) == second


def test_a_symlink_at_the_path_is_moved_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "kept.jsonl"
    target.write_text("precious", encoding="utf-8")
    path = tmp_path / "run.jsonl"
    path.symlink_to(target)
    run(searching(0), "go", trace_path=path)
    assert target.read_text(encoding="utf-8") == "precious"
    assert (tmp_path / "run.1.jsonl").is_symlink()
    assert not path.is_symlink()
    assert load_trace(path).answer == "done"


def test_check_trace_path_refuses_a_directory_a_missing_folder_and_a_fifo(tmp_path: Path) -> None:
    check_trace_path(tmp_path / "new.jsonl")
    (tmp_path / "old.jsonl").write_text("x", encoding="utf-8")
    check_trace_path(tmp_path / "old.jsonl")
    with pytest.raises(ValueError, match="directory") as info:
        check_trace_path(tmp_path)
    assert str(info.value) == (
        "trace_path must be the path of a file (an existing file there is renamed aside, never "
        f"overwritten), got {str(tmp_path)!r}, a directory."
    )
    missing = tmp_path / "no" / "run.jsonl"
    with pytest.raises(ValueError, match="no folder") as info:
        check_trace_path(missing)
    assert str(info.value) == (
        f"trace_path must be a path in a folder that exists, got {str(missing)!r} "
        f"(no folder {str(tmp_path / 'no')!r})."
    )
    with pytest.raises(TypeError) as type_info:
        check_trace_path(3)  # type: ignore[arg-type]
    assert str(type_info.value) == "trace_path must be a str or os.PathLike path, got int."
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match="must be") as info:
            check_trace_path(fifo)
        assert str(info.value) == (
            "trace_path must be the path of a file (an existing file there is renamed aside, "
            f"never overwritten), got {str(fifo)!r}, a FIFO."
        )


def test_write_new_moves_an_old_file_aside_as_save_does(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    assert write_new(path, "one") is None
    assert write_new(path, "two") == str(tmp_path / "page.1.html")
    assert write_new(str(path), "three\udc80") == str(tmp_path / "page.2.html")
    assert [p.read_text(encoding="utf-8") for p in (path, tmp_path / "page.1.html",
            tmp_path / "page.2.html")] == ["three\\udc80", "one", "two"]  # fmt: skip
    with pytest.raises(ValueError, match=r"^write_new: path must be the path of a file .*, a dir"):
        write_new(tmp_path, "x")
    with pytest.raises(
        TypeError, match=r"^save_page: path must be a str or os\.PathLike path, got int\.$"
    ):
        write_new(3, "x", where="save_page")  # type: ignore[arg-type]


def test_save_names_itself_and_its_path_when_it_cannot_write(tmp_path: Path) -> None:
    result = run(searching(0), "go")
    with pytest.raises(ValueError, match="a directory") as info:
        result.save(tmp_path)
    assert str(info.value) == (
        "Result.save: path must be the path of a file (an existing file there is renamed aside, "
        f"never overwritten), got {str(tmp_path)!r}, a directory."
    )
    with pytest.raises(TypeError, match="got int") as type_info:
        result.save(3)  # type: ignore[arg-type]
    assert str(type_info.value) == "Result.save: path must be a str or os.PathLike path, got int."


def test_a_directory_as_trace_path_fails_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a directory") as info:
        start(searching(0), "go", trace_path=tmp_path)
    assert str(info.value) == (
        "start: trace_path must be the path of a file (an existing file there is renamed aside,"
        f" never overwritten), got {str(tmp_path)!r}, a directory."
    )


def test_text_that_is_not_utf8_encodable_is_kept(tmp_path: Path) -> None:
    # a lone surrogate, as json.loads makes from a model's "\ud800" escape
    text = "half a pair: \ud800 and a backslash \\ud800"
    plain = run(ScriptedModel(["x"]), "go", clock=lambda: 0.0)
    result = replace(plain, answer=text, steps=(replace(plain.steps[0], text=text),), detail=text)
    path = tmp_path / "run.jsonl"
    journal = Journal(path)
    journal.header(result)
    journal.step(result.steps[0], list(result.messages))
    journal.end(result)
    path.read_bytes().decode("utf-8")  # the file is UTF-8
    loaded = load_trace(path)
    assert (loaded.answer, loaded.steps[0].text, loaded.detail) == (text, text, text)
    saved = tmp_path / "run.json"
    result.save(saved)
    assert load_trace(saved) == result
    assert "pair: \\ud800 and a backslash \\ud800" in result.format()


# -- malformed files: a ValueError naming the file and line --------------------------------------


def journal_lines(tmp_path: Path, n: int = 2) -> tuple[Path, list[dict[str, Any]]]:
    path = tmp_path / "run.jsonl"
    run(searching(n), "go", tools=[search], trace_path=path)
    return path, lines(path)


def write_lines(path: Path, entries: list[Any]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")


def load_error(path: Path) -> str:
    with pytest.raises(ValueError, match=f"^load_trace: {re.escape(str(path))}") as info:
        load_trace(path)
    return str(info.value).removeprefix(f"load_trace: {path}")


def test_duplicate_and_misplaced_lines_are_named(tmp_path: Path) -> None:
    path, entries = journal_lines(tmp_path)  # header, steps 0, 1 and 2, end
    write_lines(path, [*entries[:2], entries[0], *entries[2:]])
    assert (
        load_error(path)
        == ":3: kind must be step or end, got a second header (a trace has one, on line 1)."
    )
    write_lines(path, [*entries[:3], entries[2], *entries[3:]])
    assert load_error(path) == ":4: step.index must be 2, got 1 again (line 3 has it)."
    write_lines(path, [entries[0], entries[2], entries[1], *entries[3:]])
    assert (
        load_error(path) == ":2: step.index must be 0 (steps are numbered in order from 0), got 1."
    )
    write_lines(path, [*entries, entries[-1]])
    assert (
        load_error(path) == ":6: kind must be step, got a second end line (the first is line 5)."
    )
    write_lines(path, [*entries[:-1], entries[-1], entries[3]])
    assert (
        load_error(path) == ":6: what follows the end line (line 5) must be nothing, got a step."
    )


@pytest.mark.parametrize(
    ("line", "change", "message"),
    [
        (2, lambda e: e.pop("step"), ":2: step must be present, got nothing."),
        (2, lambda e: e["step"].pop("cost_usd"), ":2: step.cost_usd must be present, got nothing."),
        (2, lambda e: e["step"].update(index="0"), ":2: step.index must be an int >= 0, got str."),
        (3, lambda e: e["step"]["tool_calls"][0].update(status="done"),
         ":3: step.tool_calls[0].status must be one of ok, error, skipped, denied, got 'done'."),
        (2, lambda e: e["step"].update(cost_usd=-0.01),
         ":2: step.cost_usd must be a finite number >= 0 or None, got -0.01."),
        (2, lambda e: e["step"].update(seconds=math.nan),
         ":2: step.seconds must be a finite number >= 0, got nan."),
        (2, lambda e: e["step"]["projection"].update(input_tokens=math.inf),
         ":2: step.projection.input_tokens must be an int >= 0, got float."),
        (2, lambda e: e.update(messages={"role": "tool"}), ":2: messages must be a list, got dict."),
        (1, lambda e: e.update(budget=[]), ":1: budget must be an object, got list."),
        (1, lambda e: e.update(tools="search"), ":1: tools must be a list, got str."),
        (1, lambda e: e["options"].update(finish="no"),
         ":1: options.finish must be true or false, got str."),
        (1, lambda e: e["options"].update(cycle_limit=0),
         ":1: options.cycle_limit must be an int >= 2 or None, got 0."),
        (5, lambda e: e.update(cost_usd=math.inf),
         ":5: cost_usd must be a finite number >= 0 or None, got inf."),
        (5, lambda e: e.update(stop="finished"), ":5: stop must be one of answered, max_steps, "
         "max_seconds, max_cost_usd, max_tool_calls, max_input_tokens, repeated, model_error, "
         "shared_budget, held, interrupted or None, "
         "got 'finished'."),
    ],
)  # fmt: skip
def test_a_missing_or_mistyped_field_names_file_line_and_field(
    tmp_path: Path, line: int, change: Any, message: str
) -> None:
    path, entries = journal_lines(tmp_path, 2)
    entries = entries[:4] + entries[-1:]  # header, step 0, 1, 2, end
    change(entries[line - 1])
    write_lines(path, entries)
    assert load_error(path) == message


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    path, _ = journal_lines(tmp_path)
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace(b"found", b"f\xffund")
    path.write_bytes(b"\n".join(raw))
    assert (
        load_error(path)
        == ":3: the text must be UTF-8, got the byte 0xff, which cannot be decoded."
    )
    saved = tmp_path / "run.json"
    saved.write_bytes(b'{\n "format": "budgetloop-trace",\n "answer": "\xc3"}\n')
    assert (
        load_error(saved)
        == ":3: the text must be UTF-8, got the byte 0xc3, which cannot be decoded."
    )


def test_a_torn_multibyte_character_on_the_last_line_is_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result = run(searching(1, "é" * 50), "go", tools=[search], trace_path=path)
    raw = path.read_bytes()
    cut = raw.rindex("é".encode()) + 1  # inside the last é of the end line
    path.write_bytes(raw[:cut])
    loaded = load_trace(path)
    assert loaded.steps == result.steps
    assert loaded.stop is None


@pytest.mark.parametrize("journal", [True, False])
def test_deep_nesting_is_a_value_error_not_a_recursion_error(
    tmp_path: Path, journal: bool
) -> None:
    path, _ = journal_lines(tmp_path, 1)
    deep = "[" * 100_000 + "]" * 100_000
    if journal:
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        text.insert(2, f'{{"kind": "step", "step": {deep}}}\n')
        path.write_text("".join(text), encoding="utf-8")
        assert (
            load_error(path)
            == ":3: the line must be a trace line, got JSON nested too deeply to read."
        )
    else:
        path.write_text(f'{{"format": "budgetloop-trace", "steps": {deep}}}', encoding="utf-8")
        assert (
            load_error(path) == ": the file must be a trace, got JSON nested too deeply to read."
        )


@pytest.mark.timeout(20)
def test_a_path_that_is_not_a_regular_file_is_refused_unread(tmp_path: Path) -> None:
    said = ": the file must be a regular file, got {}; nothing was read."
    assert load_error(tmp_path) == said.format("a directory")
    zero = Path("/dev/zero")
    if zero.exists():
        link = tmp_path / "zero.jsonl"
        link.symlink_to(zero)
        assert load_error(link) == said.format("a character device")
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.jsonl"
        os.mkfifo(fifo)  # a read would wait for a writer forever
        assert load_error(fifo) == said.format("a FIFO")


HUGE_UNDER_A_MEMORY_LIMIT = """
import resource, sys
from budgetloop import budget_report, load_trace
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # 2 GiB for a 4 GiB file
folder, huge = sys.argv[1], sys.argv[2]
try:
    load_trace(huge)
except ValueError as exc:
    print(exc)
report = budget_report(folder)
print(report.runs, report.skipped)
"""


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "truncate"), reason="needs a sparse file")
def test_a_trace_file_over_its_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    run(searching(1), "go", tools=[search], trace_path=tmp_path / "run.jsonl")
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as fh:
        fh.truncate(4 << 30)  # 4 GiB that take no disk: a sparse file
    done = subprocess.run(
        [sys.executable, "-c", HUGE_UNDER_A_MEMORY_LIMIT, str(tmp_path), str(huge)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=50, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    why = (
        "the file must be at most the 1 GiB (1,073,741,824 bytes) a trace may hold, "
        "got 4,294,967,296 bytes"
    )
    assert done.stdout.splitlines() == [
        f"load_trace: {huge}: {why}; it was not loaded.",
        f"1 (('huge.jsonl', '{why}; it was not loaded.'),)",
    ]


# -- property: what a run writes is what loads ---------------------------------------------------


@settings(max_examples=60)
@given(scenarios())
def test_any_run_equals_its_json_round_trip_and_its_journal(s: Scenario) -> None:
    built = build(s)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        result = run(built.model, PROMPT, trace_path=path, **built.kwargs)
        assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result
        assert load_trace(path) == result


def test_the_run_id_is_the_same_in_the_result_the_journal_and_the_saved_trace(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    session = start(searching(1), "go", tools=[search], trace_path=path)
    result = session.run()
    header = lines(path)[0]
    assert (header["run_id"], header.get("forked_from")) == (result.run_id, None)
    assert load_trace(path).run_id == result.run_id
    result.save(tmp_path / "run.json")
    assert load_trace(tmp_path / "run.json").run_id == result.run_id
    fork_path = tmp_path / "fork.jsonl"
    fork = session.fork(at=1, trace_path=fork_path)
    fork.run()
    assert lines(fork_path)[0]["forked_from"] == result.run_id
    loaded = load_trace(fork_path)
    assert (loaded.run_id, loaded.forked_from) == (fork.result.run_id, result.run_id)


def test_a_journal_written_before_run_ids_loads_with_a_stable_id_from_its_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.jsonl"
    run(searching(1), "go", tools=[search], trace_path=path)
    entries = lines(path)
    for key in ("run_id", "forked_from"):
        entries[0].pop(key, None)
    write_lines(path, entries)
    first = load_trace(path).run_id
    assert first == load_trace(path).run_id  # loading it again gives the same id
    assert first == hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    assert load_trace(path).forked_from is None
