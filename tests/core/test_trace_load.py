"""Loading trace data checks every field: a trace that loads is usable, and one that is not says
which field is wrong (its path), what was expected and what arrived."""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
import importlib.util
import json
import math
import os
import pickle
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tests.strategies  # noqa: F401 - the Hypothesis profiles
from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    Message,
    Price,
    Result,
    ScriptedModel,
    Step,
    ToolCall,
    Usage,
    load_trace,
    load_traces,
    run,
    start,
    tool,
)
from budgetloop._trace._read import MAX_DEPTH
from budgetloop._trace._read_fast import fast_json
from budgetloop.display import Columns, columns_of, read_columns, read_step_at
from tests.conftest import FakeClock
from tests.strategies import PROMPT, Scenario, build, scenarios

CACHED_PRICE = Price(3.0, 15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)


def rich_run(trace_path: Path | None = None) -> Result:
    """A run with a field of every kind set: usage with cached tokens, cache prices, a coerced
    argument, a truncated result, a failed, a skipped and an unknown call, a system message."""
    clock = FakeClock()

    @tool
    def lookup(key: str, n: int = 1) -> str:
        """Look up."""
        clock.advance(0.25)
        if key == "missing":
            raise KeyError(key)
        return f"{key}:{n}:" + "x" * 40

    model = ScriptedModel(
        [
            Completion(
                text="Looking.",
                tool_calls=[
                    ToolCall("lookup", '{"key": "a", "n": "2"}', "c1"),
                    ToolCall("lookup", {"key": "missing"}, "c2"),
                    ToolCall("nope", {}, "c3"),
                ],
                usage=Usage(900, 30, cache_read_tokens=500, cache_write_tokens=100),
            ),
            Completion(
                text="Once more.",
                tool_calls=[ToolCall("lookup", {"key": "b"}, "c4")],
                usage=Usage(1200, 20),
            ),
        ]
    )
    return run(
        model,
        "find a",
        tools=[lookup],
        system="Be brief.",
        budget=Budget(max_steps=2, max_cost_usd=0.5, max_seconds=60, max_tool_calls=9),
        price=CACHED_PRICE,
        max_output_tokens=200,
        max_result_chars=20,
        max_workers=1,  # the calls in order on one thread: the fake clock's readings repeat
        clock=clock,
        trace_path=trace_path,
    )


def test_the_rich_run_has_every_kind_of_field() -> None:
    result = rich_run()
    first, second = result.steps
    assert [c.status for c in first.tool_calls] == ["ok", "error", "error"]
    assert [c.status for c in second.tool_calls] == ["skipped"]
    assert first.tool_calls[0].coerced == ("lookup.n",)
    assert first.tool_calls[0].truncated == 44
    assert first.usage == Usage(900, 30, cache_read_tokens=500, cache_write_tokens=100)
    assert result.price == CACHED_PRICE
    assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result


# -- each field named by its path ----------------------------------------------------------------


def load_changed(path: str, value: Any) -> str:
    """The message of the ValueError ``Result.from_dict`` raises with one field changed."""
    data = json.loads(json.dumps(rich_run().to_dict()))
    *parents, last = parse(path)
    target = data
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    with pytest.raises(ValueError, match=r"^Result\.from_dict: ") as info:
        Result.from_dict(data)
    return str(info.value).removeprefix("Result.from_dict: ")


DELETE = object()


def parse(path: str) -> list[str | int]:
    keys: list[str | int] = []
    for part in path.replace("[", ".").replace("]", "").split("."):
        keys.append(int(part) if part.isdigit() else part)
    return keys


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "steps.0.tool_calls.0.status",
            "done",
            "steps[0].tool_calls[0].status must be one of ok, error, skipped, denied, got 'done'.",
        ),
        ("steps.1.index", "1", "steps[1].index must be an int >= 0, got str."),
        (
            "steps.1.index",
            0,
            "steps[1].index must be 1 (steps are numbered in order from 0), got 0.",
        ),
        ("steps.0.cost_usd", math.nan, "steps[0].cost_usd must be a finite number >= 0 or None, got nan."),
        ("steps.0.cost_usd", -0.5, "steps[0].cost_usd must be a finite number >= 0 or None, got -0.5."),
        ("cost_usd", math.inf, "cost_usd must be a finite number >= 0 or None, got inf."),
        ("seconds", -1, "seconds must be a finite number >= 0, got -1."),
        (
            "cost_usd",
            10**400,
            "cost_usd must be a finite number >= 0, got an int past a float's range.",
        ),
        ("steps.0.usage.input_tokens", -3, "steps[0].usage.input_tokens must be an int >= 0, got -3."),
        (
            "steps.0.usage.cache_read_tokens",
            2.0,
            "steps[0].usage.cache_read_tokens must be an int >= 0, got float.",
        ),
        (
            "steps.0.usage.cache_write_tokens",
            900,
            "steps[0].usage: Usage: cache_read_tokens + cache_write_tokens must be at most "
            "input_tokens (900), got 1400; input_tokens counts the whole input, cached tokens included.",
        ),
        (
            "price.cache_read_per_mtok",
            "0.3",
            "price.cache_read_per_mtok must be a finite number >= 0 or None, got str.",
        ),
        ("steps.0.usage.output_tokens", DELETE, "steps[0].usage.output_tokens must be present, got nothing."),
        ("steps.0.projection.fits", 1, "steps[0].projection.fits must be true or false, got int."),
        ("steps.0.projection", [], "steps[0].projection must be an object, got list."),
        ("steps.0.tool_calls.0.seconds", "0.5", "steps[0].tool_calls[0].seconds must be a finite number >= 0, got str."),
        ("steps.0.tool_calls.0.id", None, "steps[0].tool_calls[0].id must be a string, got None."),
        ("steps.0.tool_calls.0.result", 118.4, "steps[0].tool_calls[0].result must be a string or None, got float."),
        ("steps.0.tool_calls.0.coerced", "lookup.n", "steps[0].tool_calls[0].coerced must be a list, got str."),
        ("steps.0.tool_calls.0.coerced.0", 7, "steps[0].tool_calls[0].coerced[0] must be a string, got int."),
        ("steps.0.tool_calls.0.truncated", -1, "steps[0].tool_calls[0].truncated must be an int >= 0 or None, got -1."),
        ("steps.0.tool_calls.0.arguments", [1], "steps[0].tool_calls[0].arguments must be an object, got list."),
        ("steps.0.tool_calls.0.traceback", 3, "steps[0].tool_calls[0].traceback must be a string or None, got int."),
        ("steps.0.traceback", [], "steps[0].traceback must be a string or None, got list."),
        ("steps.0.final_answer", "no", "steps[0].final_answer must be true or false, got str."),
        ("steps.0.tool_calls", {}, "steps[0].tool_calls must be a list, got dict."),
        ("stop", "done", "stop must be one of answered, max_steps, max_seconds, max_cost_usd, "
         "max_tool_calls, max_input_tokens, repeated, model_error, shared_budget, held, "
         "interrupted or None, got 'done'."),
        ("budget.max_steps", 2.5, "budget.max_steps must be an int >= 0 or None, got float."),
        ("budget.max_input_tokens", 2.5, "budget.max_input_tokens must be an int >= 0 or None, got float."),
        ("budget.max_input_tokens", -1, "budget.max_input_tokens must be an int >= 0 or None, got -1."),
        ("budget.max_cost_usd", True, "budget.max_cost_usd must be a finite number >= 0 or None, got bool."),
        ("max_output_tokens", "200", "max_output_tokens must be an int >= 0 or None, got str."),
        ("options", [], "options must be an object, got list."),
        ("options.finish", "yes", "options.finish must be true or false, got str."),
        ("options.budget_note", None, "options.budget_note must be true or false, got None."),
        ("options.warn_repeats", 1, "options.warn_repeats must be true or false, got int."),
        ("options.repeat_limit", 1, "options.repeat_limit must be an int >= 2 or None, got 1."),
        ("options.cycle_limit", 2.0, "options.cycle_limit must be an int >= 2 or None, got float."),
        ("options.max_result_chars", 0, "options.max_result_chars must be an int >= 1 or None, got 0."),
        ("messages.0.role", "robot", "messages[0].role must be one of system, user, assistant, tool, got 'robot'."),
        ("messages.2.tool_calls.0.name", 5, "messages[2].tool_calls[0].name must be a string or None, got int."),
        ("messages.3.tool_call_id", 5, "messages[3].tool_call_id must be a string or None, got int."),
        ("messages", {}, "messages must be a list, got dict."),
        ("tools.0", "lookup", "tools[0] must be an object, got str."),
        ("version", True, "version must be 1 or 2, the trace formats this budgetloop reads, "
         "got True. "
         "Upgrade budgetloop to read newer traces."),
    ],
)  # fmt: skip
def test_a_wrong_field_is_named_by_its_path(path: str, value: Any, message: str) -> None:
    assert load_changed(path, value) == message


def test_nesting_past_the_limit_is_refused_and_at_the_limit_loads() -> None:
    data = rich_run().to_dict()
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    data["steps"][0]["tool_calls"][0]["raw_arguments"] = deep
    loaded = Result.from_dict(data)
    assert loaded.steps[0].tool_calls[0].raw_arguments == deep
    assert "[[[[" in loaded.format()
    data["steps"][0]["tool_calls"][0]["raw_arguments"] = [deep]
    with pytest.raises(ValueError, match="nested") as info:
        Result.from_dict(data)
    assert str(info.value) == (
        "Result.from_dict: steps[0].tool_calls[0].raw_arguments "
        f"must be nested at most {MAX_DEPTH} levels deep, got deeper."
    )


def test_values_that_are_not_json_data_are_refused() -> None:
    data = rich_run().to_dict()
    data["steps"][0]["tool_calls"][0]["arguments"] = {"key": b"a"}
    with pytest.raises(ValueError, match="JSON data") as info:
        Result.from_dict(data)
    assert str(info.value) == (
        "Result.from_dict: steps[0].tool_calls[0].arguments must be JSON data, got bytes."
    )
    data["steps"][0]["tool_calls"][0]["arguments"] = {1: "a"}
    with pytest.raises(ValueError, match="must be") as info:
        Result.from_dict(data)
    assert str(info.value) == (
        "Result.from_dict: steps[0].tool_calls[0].arguments must be JSON data, with string keys, "
        "got a key that is int."
    )


def test_step_and_call_from_dict_name_the_field_too() -> None:
    step = rich_run().steps[0]
    data = step.to_dict()
    assert Step.from_dict(data) == step
    assert CallRecord.from_dict(data["tool_calls"][1]) == step.tool_calls[1]
    data["tool_calls"][1]["status"] = "done"
    with pytest.raises(ValueError, match="status") as info:
        Step.from_dict(data)
    assert str(info.value) == (
        "Step.from_dict: tool_calls[1].status must be one of ok, error, skipped, denied, got 'done'."
    )
    with pytest.raises(ValueError, match="status") as info:
        CallRecord.from_dict(data["tool_calls"][1])
    assert str(info.value) == (
        "CallRecord.from_dict: status must be one of ok, error, skipped, denied, got 'done'."
    )


def test_keys_older_traces_lack_read_as_defaults() -> None:
    original = rich_run()
    data = original.to_dict()
    for step in data["steps"]:
        for key in ("final_answer", "under_projected", "traceback"):
            del step[key]
        for call in step["tool_calls"]:
            del call["traceback"]
    loaded = Result.from_dict(data)
    assert loaded == original
    assert [s.final_answer for s in loaded.steps] == [False, False]
    del data["options"]  # written before the options were recorded: none are
    assert Result.from_dict(data) == replace(original, options={})


# -- fuzz: every field, every wrong type ---------------------------------------------------------

WRONG: tuple[Any, ...] = (
    None,
    True,
    -1,
    2.5,
    math.nan,
    math.inf,
    "done",
    "",
    [],
    [1],
    {},
    {"x": 1},
    10**400,
)


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in JSON data a value sits, as its key path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from nodes(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*path, i)
            yield from nodes(item, (*path, i))


def substituted(data: Any) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """``data`` with one value replaced by one of another type, for each place and each type."""
    for path in nodes(data):
        target = data
        for key in path:
            target = target[key]
        for wrong in WRONG:
            if type(wrong) is type(target) and (wrong == target or isinstance(wrong, str)):
                continue
            changed = copy.deepcopy(data)
            parent = changed
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = wrong
            yield path, wrong, changed


def usable(result: Result) -> None:
    """What a loaded trace must be good for: text, data, JSON, and loading that again."""
    text = result.format()
    assert text.endswith(result.format().splitlines()[-1])
    data = result.to_dict()
    again = Result.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == json.loads(json.dumps(data))
    assert again.format() == text


def test_every_wrong_typed_field_is_refused_or_loads_usable() -> None:
    data = json.loads(json.dumps(rich_run().to_dict()))
    loaded = refused = 0
    unnamed = []
    for path, wrong, changed in substituted(data):
        try:
            result = Result.from_dict(changed)
        except ValueError as exc:
            if not str(exc).startswith("Result.from_dict: "):
                unnamed.append((path, wrong, str(exc)))
            refused += 1
            continue
        try:
            usable(result)
        except Exception as exc:  # pragma: no cover - the message is the point
            raise AssertionError(f"{path} = {wrong!r} loaded, then {exc!r}") from exc
        loaded += 1
    assert unnamed == []
    assert loaded + refused > 1500
    assert refused > 1000
    # what loads is a change the trace can hold: text, a nullable field, or a derived key
    assert loaded > 0


def test_every_wrong_typed_field_of_a_journal_is_refused_with_its_line_or_loads_usable(
    tmp_path: Path,
) -> None:
    source = tmp_path / "run.jsonl"
    rich_run(source)
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "changed.jsonl"
    count = 0
    unnamed = []
    for number, line in enumerate(lines, start=1):
        for where, wrong, changed in substituted(line):
            if where == ("kind",) and number == 1:
                continue  # no longer a journal: read as a whole-file trace (tested below)
            others = [*lines[: number - 1], changed, *lines[number:]]
            path.write_text("".join(json.dumps(e) + "\n" for e in others), encoding="utf-8")
            count += 1
            try:
                result = load_trace(path)
            except ValueError as exc:
                # a step's cost raised past the run's total is named where the total is
                total = f"load_trace: {path}:{len(lines)}: cost_usd must be at least "
                if where == ("step", "cost_usd") and str(exc).startswith(total):
                    continue
                if not str(exc).startswith(f"load_trace: {path}:{number}: "):
                    unnamed.append((number, where, wrong, str(exc)))
                continue
            usable(result)
    assert unnamed == []
    assert count > 1500


def test_every_wrong_typed_field_of_a_saved_trace_names_the_file(tmp_path: Path) -> None:
    data = json.loads(json.dumps(rich_run().to_dict()))
    path = tmp_path / "changed.json"
    messages = []
    for _, _, changed in substituted({"steps": data["steps"]}):
        path.write_text(json.dumps({**data, **changed}), encoding="utf-8")
        try:
            usable(load_trace(path))
        except ValueError as exc:
            messages.append(str(exc))
    assert len(messages) > 500
    # a step's cost raised to 2.5, past the run's total, is named where the total is
    total = f"load_trace: {path}: cost_usd must be at least "
    assert len([m for m in messages if m.startswith(total)]) == len(data["steps"])
    assert [m for m in messages if not m.startswith((f"load_trace: {path}: steps", total))] == []


def test_a_message_the_loop_never_writes_is_still_a_message() -> None:
    data = rich_run().to_dict()
    data["messages"].append({"role": "user"})
    assert Result.from_dict(data).messages[-1] == Message("user")


def test_arguments_with_a_nan_or_an_infinity_are_not_json_and_are_refused() -> None:
    from budgetloop import Completion, ScriptedModel, ToolCall, run

    data = run(
        ScriptedModel([Completion(tool_calls=[ToolCall("t", {"x": 1})]), "ok"]), "go"
    ).to_dict()
    for bad in (float("nan"), float("inf")):
        data["steps"][0]["tool_calls"][0]["raw_arguments"] = {"x": [bad]}
        with pytest.raises(
            ValueError,
            match=r"steps\[0\]\.tool_calls\[0\]\.raw_arguments must be JSON data, got the number",
        ):
            Result.from_dict(data)


# -- a run's total is at least what its steps cost ------------------------------------------------


def tenth_and_fifth(trace_path: Path | None = None) -> Result:
    """Two steps reported at $0.1 and $0.2. Their floats add to 0.30000000000000004; the run's
    total, added in picodollars as the loop adds money, is 0.3."""
    model = ScriptedModel(
        [
            Completion(tool_calls=[ToolCall("nope", {})], cost_usd=0.1),
            Completion(text="done", cost_usd=0.2),
        ]
    )
    return run(model, "go", trace_path=trace_path)


AT_LEAST = r"cost_usd must be at least "
BELOW = "cost_usd must be at least 0.3, what the steps cost (the sum of their cost_usd), got {}."


def test_a_total_below_its_steps_is_refused_by_from_dict() -> None:
    result = tenth_and_fifth()
    assert (result.cost_usd, sum(s.cost_usd for s in result.steps)) == (0.3, 0.30000000000000004)
    data = json.loads(json.dumps(result.to_dict()))
    assert Result.from_dict(data) == result
    for cost in (0.0, 0.29999999999):  # edited to nothing, and to 10 picodollars short
        with pytest.raises(ValueError, match=AT_LEAST) as info:
            Result.from_dict({**data, "cost_usd": cost})
        assert str(info.value) == "Result.from_dict: " + BELOW.format(cost)


def test_a_total_below_its_steps_is_refused_when_the_full_reader_reads_the_steps() -> None:
    from collections import OrderedDict

    from budgetloop._trace import _read_fast

    data = json.loads(json.dumps(tenth_and_fifth().to_dict()))
    steps = [OrderedDict(s) for s in data["steps"]]  # not exactly a dict: the fast reader declines
    assert [_read_fast.step(s, i) for i, s in enumerate(steps)] == [None, None]
    assert Result.from_dict({**data, "steps": steps}).cost_usd == 0.3
    with pytest.raises(ValueError, match=AT_LEAST) as info:
        Result.from_dict({**data, "steps": steps, "cost_usd": 0.0})
    assert str(info.value) == "Result.from_dict: " + BELOW.format(0.0)


def test_a_saved_trace_whose_total_is_below_its_steps_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    tenth_and_fifth().save(path)
    assert load_trace(path).cost_usd == 0.3
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "cost_usd": 0.0}), encoding="utf-8")
    with pytest.raises(ValueError, match=AT_LEAST) as info:
        load_trace(path)
    assert str(info.value) == f"load_trace: {path}: " + BELOW.format(0.0)


def test_a_journal_whose_end_line_is_below_its_steps_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    tenth_and_fifth(path)
    assert load_trace(path).cost_usd == 0.3
    *lines, end = path.read_text(encoding="utf-8").splitlines()
    assert (len(lines), json.loads(end)["kind"]) == (3, "end")
    path.write_text("\n".join([*lines, json.dumps({**json.loads(end), "cost_usd": 0})]) + "\n")
    with pytest.raises(ValueError, match=AT_LEAST) as info:
        load_trace(path)
    assert str(info.value) == f"load_trace: {path}:4: " + BELOW.format(0)
    path.write_text("\n".join(lines) + "\n")  # no end line: the run's cost is its steps'
    assert load_trace(path).cost_usd == 0.3  # summed in picodollars, as the loop sums them


@given(
    costs=st.lists(
        st.one_of(
            st.floats(min_value=0, max_value=1e300),
            st.integers(min_value=0, max_value=10**18).map(lambda p: p / 10**12),
        ),
        min_size=1,
        max_size=8,
    ),
    at=st.integers(min_value=0, max_value=8),
)
def test_every_run_the_loop_writes_loads_whatever_its_costs(costs: list[float], at: int) -> None:
    script = [
        Completion(tool_calls=[ToolCall("nope", {"i": i})], cost_usd=c)
        for i, c in enumerate(costs[:-1])
    ]
    session = start(
        ScriptedModel([*script, Completion(text="done", cost_usd=costs[-1])]),
        "go",
        budget=Budget(max_steps=len(costs)),
    )
    first = session.run()
    fork = session.fork(min(at, len(first.steps)))  # keeps all that was spent, fewer steps
    for result in (first, fork.result):
        assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_a_trace_written_before_run_ids_loads_with_a_stable_id_from_its_content(
    tmp_path: Path,
) -> None:
    original = rich_run()
    data = original.to_dict()
    assert (data["run_id"], data["forked_from"], data["imported"]) == (original.run_id, None, None)
    assert Result.from_dict(data).run_id == original.run_id
    for key in ("run_id", "forked_from", "imported"):
        del data[key]
    derived = Result.from_dict(data).run_id
    assert derived == Result.from_dict(copy.deepcopy(data)).run_id != original.run_id
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False).encode()
    assert derived == hashlib.sha256(canonical).hexdigest()[:32]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data, indent=3), encoding="utf-8")
    assert load_trace(path).run_id == derived  # the data, not its layout in the file
    assert load_changed("run_id", "") == "run_id must be a non-empty string, got ''."
    assert load_changed("run_id", 7) == "run_id must be a string, got int."
    assert load_changed("forked_from", 7) == "forked_from must be a string or None, got int."


def test_what_the_provider_said_about_a_reply_round_trips_and_is_checked(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Completion(
                "ok", model="gpt-4o-2024-08-06", response_id="chatcmpl-9", finish_reason="stop"
            )
        ]
    )
    result = run(model, "go", trace_path=tmp_path / "run.jsonl")
    step = result.steps[0]
    assert (step.model, step.response_id, step.finish_reason) == (
        "gpt-4o-2024-08-06",
        "chatcmpl-9",
        "stop",
    )
    assert load_trace(tmp_path / "run.jsonl") == result == Result.from_dict(result.to_dict())
    plain = run(ScriptedModel(["ok"]), "go").to_dict()["steps"][0]
    assert not {"model", "response_id", "finish_reason"} & set(plain)  # only when known
    data = result.to_dict()
    data["steps"][0]["finish_reason"] = 3
    with pytest.raises(
        ValueError, match=r"steps\[0\]\.finish_reason must be a string or None, got int\.$"
    ):
        Result.from_dict(data)
    with pytest.raises(TypeError, match=r"^Completion: model must be str or None, got int\.$"):
        Completion("ok", model=3)  # type: ignore[arg-type]


# -- the JSON parsed by msgspec or by the standard library: the same results ---------------------

FIXTURES = sorted(
    p for p in (Path(__file__).resolve().parents[1] / "fixtures").rglob("*.json*") if p.is_file()
)


def outcome(path: Path, stdlib: bool) -> Any:
    """Every run a file holds, whole (ids and tracebacks too), or the error it is refused with."""
    try:
        runs = load_traces(path, _stdlib=stdlib)
    except ValueError as exc:
        return str(exc)
    return [(r.run_id, r.to_dict(), r) for r in runs]


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_fixture_loads_the_same_by_either_json_parser(path: Path) -> None:
    if importlib.util.find_spec("msgspec") is not None:
        assert fast_json()  # the fast path is the one compared
    assert outcome(path, stdlib=False) == outcome(path, stdlib=True)


def test_json_either_parser_refuses_or_reads_differently_is_read_by_the_standard_library(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    rich_run().save(path)
    text = path.read_text(encoding="utf-8")
    for changed in (
        text.replace('"seconds":0.5', '"seconds":NaN', 1),  # json reads NaN, msgspec does not
        text.replace('"seconds":0.5', '"seconds":1e400', 1),
        text.replace('"max_output_tokens":200', f'"max_output_tokens":{2**70}', 1),
        text.replace('"content":"find a"', '"content":"find \\ud800"', 1),  # a lone surrogate
        text.replace('"run_id":', '"run_id":[[[' + "[" * 2000 + "]" * 2003 + ',"run_id":', 1),
        text[:-3],  # torn
    ):
        assert changed != text
        path.write_text(changed, encoding="utf-8")
        assert outcome(path, stdlib=False) == outcome(path, stdlib=True)


# -- the list's columns, read without building every step ----------------------------------------


def columns_outcome(path: Path, stdlib: bool = False) -> Any:
    """The columns ``read_columns`` reads, or its error less the function's name."""
    try:
        return read_columns(path, _stdlib=stdlib)
    except ValueError as exc:
        return str(exc).removeprefix("read_columns: ")


def loaded_columns(path: Path) -> Any:
    try:
        return columns_of(load_trace(path).steps)
    except ValueError as exc:
        return str(exc).removeprefix("load_trace: ")


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_the_columns_of_every_fixture_are_those_of_its_loaded_run(path: Path) -> None:
    expected = loaded_columns(path)
    assert columns_outcome(path) == expected
    assert columns_outcome(path, stdlib=True) == expected


def everything(columns: Columns) -> dict[str, Any]:
    """Every field of the columns, those their equality leaves out too (offsets, file)."""
    return {f.name: getattr(columns, f.name) for f in dataclasses.fields(columns)}


def first_of(fields: Any, k: int) -> Any:
    """``everything`` of the first ``k`` steps' columns (an error as it is)."""
    if isinstance(fields, str):
        return fields
    return {
        name: value[:k] if isinstance(value, list) else value for name, value in fields.items()
    }


def first_outcome(path: Path, k: int, stdlib: bool = False) -> Any:
    try:
        return everything(read_columns(path, first=k, _stdlib=stdlib))
    except ValueError as exc:
        return str(exc).removeprefix("read_columns: ")


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_the_first_columns_of_every_fixture_are_the_first_of_its_columns(path: Path) -> None:
    for stdlib in (False, True):
        whole = columns_outcome(path, stdlib)
        steps = 0 if isinstance(whole, str) else len(whole.index)
        fields = whole if isinstance(whole, str) else everything(whole)
        for k in range(1, steps + 2):
            assert first_outcome(path, k, stdlib) == first_of(fields, k)


def bytes_read() -> int:
    """What this process has read from files so far (Linux's count)."""
    with open("/proc/self/io", encoding="ascii") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="reads Linux's count of reads")
def test_the_first_columns_are_read_from_the_start_of_the_file_alone(tmp_path: Path) -> None:
    """A viewer shows a long trace's first rows at once: ``first=K`` reads its lines up to step
    K's and the next; what follows may be anything, and is not read."""
    path = tmp_path / "run.jsonl"
    rich_run(path)
    lines = path.read_bytes().splitlines(keepends=True)  # the header, steps 0 and 1, the end
    whole, steps = everything(read_columns(path)), load_trace(path).steps
    cut = tmp_path / "cut.jsonl"
    for k in (1, 2):
        for garbage in (b"\x00\xff not JSON\n{\n", b"{not JSON either", b"[1, 2]\n" * 1000):
            cut.write_bytes(b"".join(lines[: 1 + k]) + garbage)
            os.truncate(cut, cut.stat().st_size + (64 << 20))  # 64 MiB of zero bytes after it
            before = bytes_read()
            columns = read_columns(cut, first=k)
            assert bytes_read() - before < 1 << 20
            found = cut.stat()
            assert everything(columns) == {
                **first_of(whole, k),
                "file": (found.st_dev, found.st_ino),
            }
            assert read_columns(cut, first=k, _stdlib=True) == columns
            for i in range(k):
                assert read_step_at(cut, columns, i) == steps[i]
        if k == 1:  # the next line a step: read no further
            cut.write_bytes(b"".join(lines[:3]))
            os.truncate(cut, cut.stat().st_size + (64 << 20))
            before = bytes_read()
            assert everything(read_columns(cut, first=1))["offsets"] == whole["offsets"][:1]
            assert bytes_read() - before < 1 << 20


def test_first_must_be_a_count_of_steps(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rich_run(path)
    for first, error, got in (
        (True, TypeError, "bool"),
        (1.0, TypeError, "float"),
        ("2", TypeError, "str"),
        (0, ValueError, "0"),
        (-1, ValueError, "-1"),
    ):
        with pytest.raises(error) as info:
            read_columns(path, first=first)  # type: ignore[arg-type]
        assert str(info.value) == f"read_columns: first must be an int >= 1 or None, got {got}."


DEEP = b"[" * 3000 + b"]" * 3000


@pytest.mark.parametrize(
    ("written", "hostile"),
    [
        (b'"index":1', b'"index":true'),
        (b'"index":1', b'"index":1.0'),
        (b'"index":1', b'"index":-1'),
        (b'"output_tokens":20}', b'"output_tokens":true}'),
        (b'"output_tokens":20}', b'"output_tokens":20.0}'),
        (b'"output_tokens":20}', b'"output_tokens":-20}'),
        (b'"input_tokens":1200', b'"input_tokens":%d' % 2**70),
        (b'"output_tokens":20}', b'"output_tokens":20,"reasoning_tokens":21}'),
        (b'"output_tokens":20}', b'"output_tokens":20,"cache_read_tokens":1201}'),
        (b'"seconds":0.0,', b'"seconds":NaN,'),
        (b'"seconds":0.0,', b'"seconds":1e999,'),
        (b'"seconds":0.0,', b'"seconds":-1,'),
        (b'"seconds":0.0,', b'"seconds":true,'),
        (b'"seconds":0.0,', b'"seconds":-0.0,'),
        (b'"seconds":0.0,', b'"seconds":%d,' % 2**70),
        (b'"seconds":0.0,', b'"seconds":%d,' % 2**1100),
        (b'"cost_usd":0.0039', b'"cost_usd":NaN'),
        (b'"cost_usd":0.0039', b'"cost_usd":Infinity'),
        (b'"cost_usd":0.0039', b'"cost_usd":true'),
        (b'"cost_usd":0.0039', b'"cost_usd":"0.0039"'),
        (b'"cost_usd":0.0039', b'"cost_usd":null'),
        (b'"cost_usd":0.0039', b'"cost_usd":0'),
        (b'"cost_usd":0.0039,', b""),
        (b'"cost_usd":0.0039', b'"cost_usd":%d' % 2**70),
        (b'"status":"skipped"', b'"status":"done"'),
        (b'"status":"skipped"', b'"status":"denied"'),
        (b'"status":"skipped"', b'"status":"skipped","approval":"denied"'),
        (b'"status":"skipped"', b'"status":"denied","approval":"denied"'),
        (b'"status":"skipped"', b'"status":"skipped","approval":"maybe"'),
        (b'"status":"skipped"', b'"status":"skipped","approval":"edited"'),
        (b'"status":"skipped"', b'"status":"skipped","status":"done"'),
        (b'"status":"skipped"', b'"status":"done","status":"skipped"'),
        (b'"status":"skipped"', b'"status":null'),
        (b'"name":"lookup","id":"c4"', b'"name":null,"id":"c4"'),
        (b'"name":"lookup","id":"c4"', b'"id":"c4"'),
        (b'"name":"lookup","id":"c4"', b'"name":7,"id":"c4"'),
        (b'[{"name":"lookup","id":"c4"', b'[["lookup"],{"name":"lookup","id":"c4"'),
        (b'"text":"Once more."', b'"text":7'),
        (b'"text":"Once more."', b'"text":"Once \\ud800"'),
        (b'"text":"Once more."', b'"text":"Once \xff"'),
        (b'"text":"Once more."', b'"text":"Once\\nmore."'),
        (b'"text":"Once more."', b'"error":"boom"'),
        (b'"fits":true}', b'"fits":"yes"}'),
        (b'"fits":true}', b'"fits":true,"tier":-1}'),
        (b'"fits":true}', b'"fits":true,"tier":1.5}'),
        (b'"limit_usd":0.5,"fits":true}', b'"fits":true}'),
        (b'"spent_usd":0.001875', b'"spent_usd":NaN'),
        (b'"seconds":0.0,', b'"seconds":0.0,"final_answer":1,'),
        (b'"seconds":0.0,', b'"seconds":0.0,"final_answer":true,'),
        (b'"usage":{"input_tokens":1200,"output_tokens":20}', b'"usage":null'),
        (b'"usage":{"input_tokens":1200,"output_tokens":20}', b'"usage":[1200,20]'),
        (b'"projection":{"input_tokens":1057', b'"projection":null,"x":{"input_tokens":1057'),
        (b'{"kind":"step","step":{"index":1', b'{"kind":"step","kind":"end","step":{"index":1'),
        (b'{"kind":"step","step":{"index":1', b'{"kind":"ste\\u0070","step":{"index":1'),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":' + DEEP),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":{"key":"\xff"}'),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":{"key":"\xed\xa0\x80"}'),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":{"key":"\\ud800"}'),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":{"key":"\xc3\xa9"}'),
        (b'"raw_arguments":{"key":"b"}', b'"raw_arguments":{"key":[1,,2]}'),
        (b'"cost_usd":0.005775', b'"cost_usd":0.001'),
    ],
)
def test_a_step_line_gives_the_columns_or_the_error_load_trace_gives_with_either_parser(
    tmp_path: Path, written: bytes, hostile: bytes
) -> None:
    """msgspec decodes a step line into typed structs of the columns' fields; what they take
    must be what the standard library's path takes, to the same columns, and anything else
    read as load_trace reads it."""
    path = tmp_path / "run.jsonl"
    rich_run(path)
    raw = path.read_bytes()
    assert written in raw
    shallow = loaded_columns(path)
    path.write_bytes(raw.replace(written, hostile, 1))  # in step 0's line, or else step 1's
    expected = loaded_columns(path)
    if hostile.endswith(DEEP):
        # arguments nested deeper than load_trace takes, in a field the columns do not read:
        # their columns where the JSON parser reads that deep (Python 3.13's), else its error
        assert columns_outcome(path) in (expected, shallow)
        assert columns_outcome(path, stdlib=True) in (expected, shallow)
        return
    assert columns_outcome(path) == expected
    assert columns_outcome(path, stdlib=True) == expected
    whole = columns_outcome(path)
    for k in (1, 2, 3):
        assert first_outcome(path, k) == first_outcome(path, k, stdlib=True)
        if k >= 2:  # every step of the run: what the whole read says, the end line's total too
            assert first_outcome(path, k) == first_of(
                whole if isinstance(whole, str) else everything(whole), k
            )


@pytest.mark.parametrize("hostile", [b'{"key":NaN}', b'{"key":1e999}', b'{"key":-Infinity}'])
def test_a_field_the_columns_do_not_read_is_read_alike_by_either_parser(
    tmp_path: Path, hostile: bytes
) -> None:
    """A call's arguments are not the columns': a value msgspec refuses in them (and the
    standard library reads) gives the same columns either way, and its error when the step
    is opened."""
    path = tmp_path / "run.jsonl"
    rich_run(path)
    path.write_bytes(
        path.read_bytes().replace(b'"raw_arguments":{"key":"b"}', b'"raw_arguments":' + hostile)
    )
    columns = read_columns(path)
    assert read_columns(path, _stdlib=True) == columns == columns_of(rich_run().steps)
    with pytest.raises(ValueError, match=r"step\.tool_calls\[0\]\.raw_arguments must be"):
        read_step_at(path, columns, 1)


def test_the_columns_of_a_rich_run_say_each_step(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rich_run(path)
    columns = read_columns(path)
    assert columns == Columns(
        index=[0, 1],
        status=["error", "skipped"],
        cost_usd=[0.001875, 0.0039],
        input_tokens=[900, 1200],
        output_tokens=[30, 20],
        preview=["Looking.", "Once more."],
        seconds=[0.5, 0.0],
        calls=[(("ok", None), ("error", None), ("error", None)), (("skipped", None),)],
        under=[True, True],
        final=[False, False],
        tools=[("lookup", "lookup", "nope"), ("lookup",)],
        projected=[141, 1057],
    )
    lines = path.read_bytes().split(b"\n")
    assert columns.offsets == [len(lines[0]) + 1, len(lines[0]) + len(lines[1]) + 2]
    assert read_step_at(path, columns, 1) == load_trace(path).steps[1]


@settings(max_examples=30)
@given(scenarios(), st.booleans())
def test_the_columns_of_any_run_are_those_load_trace_gives(s: Scenario, saved: bool) -> None:
    built = build(s)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        result = run(built.model, PROMPT, trace_path=path, **built.kwargs)
        if saved:
            path = Path(tmp) / "run.json"
            result.save(path)
        columns = read_columns(path)
        assert columns == columns_of(load_trace(path).steps) == columns_of(result.steps)
        assert read_columns(path, _stdlib=True) == columns
        assert (columns.offsets is None) is saved  # read from the lines, not from a Result
        for i in range(0 if saved else len(result.steps)):
            assert read_step_at(path, columns, i).to_dict() == result.steps[i].to_dict()
        for k in range(1, len(result.steps) + 2):
            firsts = read_columns(path, first=k)
            assert everything(firsts) == first_of(everything(columns), k)
            assert everything(read_columns(path, first=k, _stdlib=True)) == everything(firsts)
            for i in range(0 if saved else len(firsts.index)):
                assert read_step_at(path, firsts, i).to_dict() == result.steps[i].to_dict()


def test_a_file_the_columns_cannot_be_read_from_is_refused_as_load_trace_refuses_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    rich_run(path)
    text = path.read_text(encoding="utf-8")
    for changed in (
        text.replace('"status":"skipped"', '"status":"done"'),
        text.replace('"index":1', '"index":3'),
        text.replace('"cost_usd":0.005775', '"cost_usd":0.001'),
        text.replace('"max_steps":2', '"max_steps":"2"'),
    ):
        assert changed != text
        path.write_text(changed, encoding="utf-8")
        said = loaded_columns(path)
        assert isinstance(said, str)
        assert columns_outcome(path) == said


def test_a_step_is_not_read_from_another_file_put_at_the_path(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rich_run(path)
    columns = read_columns(path)
    rich_run(path)  # the same run again: the old file renamed aside, a new one at the path
    assert (tmp_path / "run.1.jsonl").exists()
    with pytest.raises(ValueError, match="the file must be the one") as info:
        read_step_at(path, columns, 0)
    assert str(info.value) == (
        f"read_step_at: {path}: the file must be the one the columns were read from, got "
        "another at that path (a new trace is written there, the old one renamed aside)."
    )
    assert read_step_at(tmp_path / "run.1.jsonl", columns, 1) == load_trace(path).steps[1]


# -- a journal's messages, made from its steps when first read -----------------------------------


def live_messages() -> int:
    gc.collect()
    return sum(type(o) is Message for o in gc.get_objects())


def test_a_journal_loads_without_making_the_messages_its_steps_appended(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ran = rich_run(path)
    before = live_messages()
    loaded = load_trace(path)
    assert live_messages() - before == 2  # the header's (system, user), not the steps' six
    assert loaded.messages == ran.messages
    assert len(loaded.messages) == 8
    assert live_messages() - before == 8


def test_a_journal_whose_messages_are_not_made_yet_is_the_same_run_every_way(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    ran = rich_run(path)
    read = load_trace(path)
    assert read.messages == ran.messages  # made

    def fresh() -> Result:
        return load_trace(path)

    assert fresh() == read
    assert read == fresh()
    assert fresh() == ran
    assert repr(fresh()) == repr(read)
    assert pickle.dumps(fresh()) == pickle.dumps(read)
    assert fresh().to_dict() == read.to_dict()
    assert fresh().format() == read.format()
    assert fresh().sent_counts() == read.sent_counts()
    assert [fresh().request(i) for i in (0, 1)] == [read.request(i) for i in (0, 1)]
    for copied in (
        pickle.loads(pickle.dumps(fresh())),
        copy.copy(fresh()),
        copy.deepcopy(fresh()),
        replace(fresh(), answer="changed"),
    ):
        assert type(copied.messages) is tuple
        assert copied.messages == read.messages
        assert replace(copied, answer=read.answer) == read
    loaded = fresh()
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'messages'"):
        loaded.messages = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match=r"^'Result' object has no attribute 'mesages'$"):
        loaded.mesages  # type: ignore[attr-defined]  # noqa: B018
    assert loaded.messages is loaded.messages


def test_threads_reading_a_journal_s_messages_at_once_get_the_same_tuple(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rich_run(path)
    for _ in range(20):
        loaded = load_trace(path)
        together = threading.Barrier(8, timeout=30)

        def read(_: int, loaded: Result = loaded, together: threading.Barrier = together) -> Any:
            together.wait()
            return loaded.messages

        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(read, range(8)))
        assert all(m is loaded.messages for m in got)
