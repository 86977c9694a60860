"""The trace: plain data that round-trips, a file that loads, and the README's text."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    Projection,
    Result,
    ScriptedModel,
    Step,
    ToolCall,
    Usage,
    format_usd,
    load_trace,
    run,
    tool,
)
from tests.conftest import PRICE, FakeClock


def sample() -> Result:
    clock = FakeClock()

    @tool
    def lookup(key: str, n: int = 1) -> dict[str, Any]:
        """Look up."""
        clock.advance(0.5)
        if key == "missing":
            raise KeyError(key)
        return {"key": key, "n": n}

    model = ScriptedModel(
        [
            Completion(
                text="Looking.",
                tool_calls=[ToolCall("lookup", '{"key": "a", "n": "2"}', "c1"), ToolCall("lookup", {"key": "missing"}, "c2")],
            ),
            "Found a.",
        ],
        price=PRICE,
        max_output_tokens=200,
    )  # fmt: skip
    return run(model, "find a", tools=[lookup], budget=Budget(max_cost_usd=0.5), clock=clock)


def test_to_dict_is_json_and_records_every_step_and_call() -> None:
    data = sample().to_dict()
    assert json.loads(json.dumps(data)) == data
    assert (data["format"], data["version"]) == ("budgetloop-trace", 1)
    assert (data["stop"], data["answered"], data["answer"]) == ("answered", True, "Found a.")
    assert data["totals"]["steps"] == 2
    assert data["totals"]["tool_calls"] == 2
    assert data["totals"]["failed"] == 1
    step = data["steps"][0]
    assert set(step) == {
        "index",
        "text",
        "usage",
        "cost_usd",
        "projection",
        "seconds",
        "error",
        "final_answer",
        "under_projected",
        "traceback",
        "tool_calls",
    }
    assert (step["final_answer"], step["under_projected"], step["traceback"]) == (False, 0, None)
    assert step["seconds"] == 1.0
    assert set(step["projection"]) == {
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "spent_usd",
        "limit_usd",
        "fits",
    }
    assert step["tool_calls"][0] == {
        "name": "lookup",
        "id": "c1",
        "raw_arguments": '{"key": "a", "n": "2"}',
        "arguments": {"key": "a", "n": 2},
        "coerced": ["lookup.n"],
        "status": "ok",
        "result": '{"key": "a", "n": 2}',
        "error": None,
        "seconds": 0.5,
        "truncated": None,
        "traceback": None,
    }
    assert step["tool_calls"][1]["status"] == "error"
    assert step["tool_calls"][1]["error"] == "KeyError: 'missing'"
    assert data["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in data["steps"]))
    assert data["messages"][1]["tool_calls"][0] == {
        "name": "lookup",
        "arguments": '{"key": "a", "n": "2"}',
        "id": "c1",
    }


def test_round_trip_through_from_dict_and_a_file(tmp_path: Path) -> None:
    result = sample()
    again = Result.from_dict(result.to_dict())
    assert again == result
    path = tmp_path / "trace.json"
    result.save(path)
    assert load_trace(path) == result
    assert load_trace(str(path)).format() == result.format()


def test_every_ceiling_round_trips_and_a_trace_without_a_newer_one_reads() -> None:
    budget = Budget(
        max_steps=4, max_seconds=9.5, max_cost_usd=0.25, max_tool_calls=3, max_input_tokens=900
    )
    result = run(ScriptedModel(["ok"], price=PRICE, max_output_tokens=10), "go", budget=budget)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["budget"] == {
        "max_steps": 4,
        "max_seconds": 9.5,
        "max_cost_usd": 0.25,
        "max_tool_calls": 3,
        "max_input_tokens": 900,
    }
    assert Result.from_dict(data).budget == budget
    del data["budget"]["max_input_tokens"]  # written before the ceiling existed
    assert Result.from_dict(data).budget.max_input_tokens is None


def test_bad_and_future_traces_are_told_apart(tmp_path: Path) -> None:
    data = sample().to_dict()
    with pytest.raises(ValueError, match="not a budgetloop trace"):
        Result.from_dict({"steps": []})
    with pytest.raises(
        ValueError,
        match="version must be 1 or 2, the trace formats this budgetloop reads, got 99",
    ):
        Result.from_dict({**data, "version": 99})
    with pytest.raises(ValueError, match="must be present") as info:
        Result.from_dict({k: v for k, v in data.items() if k != "steps"})
    assert str(info.value) == "Result.from_dict: steps must be present, got nothing."
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    with pytest.raises(ValueError, match=r"broken\.json: the file must be JSON, got text"):
        load_trace(broken)


def test_format_is_the_readable_account() -> None:
    assert sample().format().splitlines() == [
        "step 0: Looking.",
        '  - lookup({"key": "a", "n": "2"}) -> {"key": "a", "n": 2}',
        '  x lookup({"key": "missing"}) -> error: KeyError: \'missing\'',
        "step 1: Found a.",
        "",
        f"stop=answered tools=2 failed=1 cost=${sample().cost_usd:.4f}",
    ]


def test_format_shows_skips_stops_and_neutralises_control_characters() -> None:
    model = ScriptedModel(
        [Completion(text="\x1b[31mred\x00", tool_calls=[ToolCall("t", {"x": "a\nb"})])]
    )

    @tool
    def t(x: str) -> str:
        """T."""
        return x

    text = run(model, "go", tools=[t], budget=Budget(max_steps=1)).format()
    assert "\x1b" not in text
    assert "\x00" not in text
    assert text.splitlines() == [
        "step 0: \\x1b[31mred\\x00",
        '  . t({"x": "a\\nb"}) -> skipped: the run stopped (max_steps=1: no step is left to read results)',
        "",
        "stop=max_steps tools=0 failed=0 cost=$0.0000",
        "max_steps=1: no step is left to read results",
    ]


def test_format_survives_a_call_without_a_name() -> None:
    model = ScriptedModel([Completion(tool_calls=[ToolCall(None, {})]), "done"])  # type: ignore[arg-type]
    assert run(model, "go").format().splitlines()[1] == (
        "  x ({}) -> error: a tool call needs a name; available tools: none"
    )


# -- format() cannot be forged -------------------------------------------------------------------

FORGED = (
    'Thinking.\n  - transfer({"to": "me"}) -> ok\n\nstop=answered tools=0 failed=0 cost=$0.00\n'
)


def test_model_text_cannot_print_lines_that_look_like_calls_or_totals() -> None:
    model = ScriptedModel([Completion(text=FORGED, tool_calls=[ToolCall("t", {"x": "a"})]), "ok"])

    @tool
    def t(x: str) -> str:
        """T."""
        return x

    lines = run(model, "go", tools=[t]).format().splitlines()
    assert lines == [
        "step 0: Thinking.",
        '  |   - transfer({"to": "me"}) -> ok',
        "  |",
        "  | stop=answered tools=0 failed=0 cost=$0.00",
        "  |",
        '  - t({"x": "a"}) -> a',
        "step 1: ok",
        "",
        "stop=answered tools=1 failed=0 cost=$0.0000",
    ]
    assert [line for line in lines if line.startswith("stop=")] == [lines[-1]]
    assert [line for line in lines if line.startswith("  - ")] == [lines[5]]


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\u202e", "\\u202e"),  # right-to-left override
        ("\u2066", "\\u2066"),  # left-to-right isolate
        ("\u200b", "\\u200b"),  # zero-width space
        ("\u200d", "\\u200d"),  # zero-width joiner
        ("\ufeff", "\\ufeff"),  # byte order mark
        ("\u00ad", "\\u00ad"),  # soft hyphen
        ("\U000e0041", "\\U000e0041"),  # tag latin capital a
    ],
)
def test_format_characters_are_shown_as_escapes(char: str, shown: str) -> None:
    model = ScriptedModel(
        [Completion(text=f"a{char}b", tool_calls=[ToolCall(f"n{char}", f"x{char}")]), f"c{char}"]
    )
    text = run(model, "go", count_tokens=lambda m, t: 1).format()
    assert char not in text
    assert text.splitlines()[:3] == [
        f"step 0: a{shown}b",
        f"  x n{shown}(x{shown}) -> error: unknown tool {'n' + char!r}; available tools: none",
        f"step 1: c{shown}",
    ]


def test_every_format_character_is_escaped() -> None:
    import sys
    import unicodedata

    from budgetloop._forms._printable import printable

    cf = [chr(i) for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)) == "Cf"]
    assert len(cf) > 150
    shown = printable("".join(cf), keep_newlines=True)
    assert shown.isascii()
    assert shown.count("\\u") + shown.count("\\U") == len(cf)
    assert printable("naïve café, 東京, emoji 🙂") == "naïve café, 東京, emoji 🙂"
    # a lone surrogate (from a JSON "\\ud800" escape) cannot be printed to a UTF-8 terminal
    assert printable("a\ud800b\udfff") == "a\\ud800b\\udfff"


# -- the new fields and the typed status ---------------------------------------------------------


def test_status_is_checked_and_records_take_keywords_and_lists() -> None:
    with pytest.raises(ValueError, match="status") as info:
        CallRecord(name="t", id="c", raw_arguments="{}", arguments=None, status="done")  # type: ignore[arg-type]
    assert (
        str(info.value)
        == "CallRecord: status must be one of ok, error, skipped, denied, got 'done'."
    )
    call = CallRecord(
        name="t",
        id="c",
        raw_arguments="{}",
        arguments={},
        status="ok",
        coerced=["t.x"],  # type: ignore[arg-type]
    )
    assert call.coerced == ("t.x",)
    step = Step(
        index=0,
        text=None,
        tool_calls=[call],  # type: ignore[arg-type]
        usage=Usage(120, 5),
        cost_usd=0.0,
        projection=Projection(100, 10, None, 0.0, None, True),
        seconds=0.0,
        final_answer=True,
        traceback="Traceback ...",
    )
    assert step.tool_calls == (call,)
    assert step.under_projected == 20
    assert step.to_dict()["under_projected"] == 20
    assert replace(step, usage=Usage(100, 5)).under_projected == 0
    assert replace(step, usage=None).under_projected == 0
    # tracebacks are kept, round-tripped, and left out of comparisons
    assert replace(step, traceback=None) == step
    assert Step.from_dict(step.to_dict()).traceback == "Traceback ..."
    assert Step.from_dict({**step.to_dict(), "under_projected": 999}) == step
    failed = replace(call, status="error", error="E", traceback="tb")
    assert CallRecord.from_dict(failed.to_dict()) == failed
    assert CallRecord.from_dict(failed.to_dict()).traceback == "tb"
    assert replace(failed, traceback=None) == failed


def unknown_cost(result: Result) -> Result:
    """The run as a source that records no cost gives it: no cost, no projections."""
    steps = tuple(replace(s, cost_usd=None, projection=None) for s in result.steps)
    return replace(result, cost_usd=None, steps=steps)


def test_a_cost_not_known_is_unknown_everywhere_never_zero(tmp_path: Path) -> None:
    unknown = unknown_cost(sample())
    assert unknown.format().splitlines()[-1] == "stop=answered tools=2 failed=1 cost=unknown"
    data = unknown.to_dict()
    assert (data["cost_usd"], data["totals"]["cost_usd"]) == (None, None)
    assert [(s["cost_usd"], s["projection"]) for s in data["steps"]] == [(None, None)] * 2
    path = tmp_path / "unknown.json"
    unknown.save(path)
    assert load_trace(path) == unknown
    assert (unknown.carried_usd, format_usd(None)) == (0.0, "unknown")
    html = unknown._repr_html_()
    assert "2 steps taken · cost unknown" in html
    if '<script type="application/json">' in html:  # the viewer, with the widgets installed
        embedded = html.split('<script type="application/json">', 1)[1].split("</script>", 1)[0]
        steps = json.loads(embedded)["runs"][0]["steps"]  # it says "cost unknown" for None
        assert (steps["cost"], steps["pin"], steps["pcost"]) == ([None, None],) * 3
    else:  # the core's own static view
        assert "Step 0 · cost unknown · 132 in / 36 out tokens reported" in html
        assert "$0.00" not in html
