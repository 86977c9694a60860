"""The fast trace readers accept only what the full readers accept, and build the same objects."""

from __future__ import annotations

import gc
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetloop import load_trace
from budgetloop._trace import _read_fast as fast
from budgetloop._trace._compact import appended, step_data
from budgetloop._trace._read import filled, read_call_fully, read_message_fully, read_step_fully
from budgetloop._trace._result import message_to_dict
from tests.core.test_trace_load import rich_run, substituted

REFUSED = object()


def full_or_refused(read: Any, *args: Any) -> Any:
    try:
        return read(*args)
    except ValueError:
        return REFUSED


def same(a: Any, b: Any) -> bool:
    """Equal, tracebacks (left out of ==) and the exact dict form too."""
    return (
        type(a) is type(b)
        and a == b
        and getattr(a, "traceback", None) == getattr(b, "traceback", None)
        and repr(a) == repr(b)
    )


def rich_data() -> dict[str, Any]:
    result = rich_run()
    data: dict[str, Any] = json.loads(json.dumps(result.to_dict()))
    return data


def test_the_fast_readers_take_every_part_of_a_real_trace() -> None:
    data = rich_data()
    steps, messages = data["steps"], data["messages"]
    assert len(steps) == 2
    assert len(messages) == 8
    for i, step in enumerate(steps):
        got = fast.step(step, i)
        assert got is not None
        assert same(got, read_step_fully(step, "s", i))
        for call in step["tool_calls"]:
            record = fast.call(call)
            assert record is not None
            assert same(record, read_call_fully(call, "c"))
    for message in messages:
        got_message = fast.message(message)
        assert got_message is not None
        assert same(got_message, read_message_fully(message, "m"))


def test_version_two_steps_are_read_fast_as_the_full_reader_reads_them_filled() -> None:
    result = rich_run()
    compact = json.loads(json.dumps([step_data(s) for s in result.steps]))
    left_out = [c for s in compact for c in s["tool_calls"] if "arguments" not in c]
    assert len(left_out) == 1  # arguments that are the raw arguments are left out
    accepted = left = 0
    for i, data in enumerate(compact):
        got = fast.step(data, i, compact=True)
        assert got is not None
        full = read_step_fully(filled(data), "s", i)
        assert same(got, full)
        assert got == result.steps[i]
        for call, made in zip(data["tool_calls"], got.tool_calls, strict=True):
            if "arguments" not in call:  # as filled puts them back: the same object
                assert made.arguments is made.raw_arguments
        if any("arguments" not in c for c in data["tool_calls"]):
            assert fast.step(data, i) is None  # version 1 has every key: left to the full one
        assert same(appended(got, read=True), appended(full))
        for _, _, changed in substituted(data):
            expected = full_or_refused(read_step_fully, filled(changed), "s", i)
            made_fast = fast.step(changed, i, compact=True)
            if made_fast is None:
                left += 1
            else:
                assert expected is not REFUSED, changed
                assert same(made_fast, expected), changed
                accepted += 1
    assert left > 100
    assert accepted > 10
    assert fast.call(left_out[0], compact=True) is not None
    assert fast.call({**left_out[0], "raw_arguments": "{}"}, compact=True) is None  # no object


def test_a_step_out_of_its_place_is_left_to_the_full_reader() -> None:
    step = rich_data()["steps"][1]
    assert fast.step(step, 0) is None
    assert fast.step(step, None) is not None


def test_every_wrong_typed_field_the_full_reader_refuses_the_fast_one_leaves_to_it() -> None:
    data = rich_data()
    accepted = left = 0
    for i, step in enumerate(data["steps"]):
        for _, _, changed in substituted(step):
            full = full_or_refused(read_step_fully, changed, "s", i)
            got = fast.step(changed, i)
            if got is None:
                left += 1
            else:
                assert full is not REFUSED, changed
                assert same(got, full), changed
                accepted += 1
    for message in data["messages"]:
        for _, _, changed in substituted(message):
            full = full_or_refused(read_message_fully, changed, "m")
            got_message = fast.message(changed)
            if got_message is None:
                left += 1
            else:
                assert full is not REFUSED, changed
                assert same(got_message, full), changed
                accepted += 1
    assert left > 500
    assert accepted > 20  # a string for a string, null for a nullable field, ...


def test_values_json_never_makes_are_left_to_the_full_reader() -> None:
    step = rich_data()["steps"][0]
    call = step["tool_calls"][0]
    assert fast.call({**call, "coerced": ("n",)}) is not None  # a tuple is a list here
    assert fast.call({**call, "seconds": True}) is None
    assert fast.call({**call, "seconds": float("nan")}) is None
    assert fast.call({**call, "seconds": 2**1024}) is None
    assert fast.call({**call, "truncated": -1}) is None
    assert fast.call({**call, "arguments": {"k": (1, 2)}}) is None
    assert fast.call({**call, "arguments": {1: "k"}}) is None
    deep: Any = "leaf"
    for _ in range(fast.MAX_DEPTH):
        deep = [deep]
    assert fast.call({**call, "raw_arguments": deep}) is not None
    assert fast.call({**call, "raw_arguments": [deep]}) is None
    assert full_or_refused(read_call_fully, {**call, "raw_arguments": [deep]}, "c") is REFUSED
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_read_tokens": 6}
    assert fast.step({**step, "usage": {**usage, "cache_write_tokens": 5}}, 0) is None
    assert fast.step({**step, "usage": {**usage, "cache_write_tokens": 4}}, 0) is not None
    message = message_to_dict(fast.message({"role": "tool", "content": "x"}) or _fail())
    assert message == {"role": "tool", "content": "x"}
    assert fast.message({"role": "robot"}) is None
    assert fast.message({"role": "assistant", "tool_calls": [{"arguments": "{}"}]}) is None


def test_a_journal_step_line_is_read_fast_as_the_full_reader_reads_its_step(
    tmp_path: Path,
) -> None:
    """``step_line`` (msgspec decoding a version-2 step line into structs): each field of each
    step line of a real journal given a value of another type, it reads the step as the full
    reader reads it, or leaves the line to it (None); and the file loads the same either way."""
    path = tmp_path / "run.jsonl"
    rich_run(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    steps = [i for i, line in enumerate(lines) if json.loads(line)["kind"] == "step"]
    assert len(steps) == 2
    read = left = 0
    for k, at in enumerate(steps):
        entry = json.loads(lines[at])
        assert "messages" not in entry  # the loop's usual messages: the line holds none
        got = fast.step_line(lines[at].encode("utf-8"), k)
        if importlib.util.find_spec("msgspec") is not None:
            assert got is not None  # the common line is read here
        for _, wrong, changed in substituted(entry["step"]):
            raw = json.dumps({**entry, "step": changed}).encode("utf-8") + b"\n"
            full = full_or_refused(read_step_fully, filled(changed), "s", k)
            made = fast.step_line(raw, k)
            if made is None:
                left += 1
                continue
            assert full is not REFUSED, changed
            assert same(made, full), changed
            read += 1
            if type(wrong) is not str:
                continue  # a file of each: loaded the same by either parser
            path.write_text("".join([*lines[:at], raw.decode(), *lines[at + 1 :]]), "utf-8")
            assert load_trace(path) == load_trace(path, _stdlib=True)
    assert left > 100
    if importlib.util.find_spec("msgspec") is not None:
        assert read > 10
    for line in lines:  # the header, the end line: not a step line
        if json.loads(line)["kind"] != "step":
            assert fast.step_line(line.encode("utf-8"), 0) is None
    with_messages = {**json.loads(lines[steps[0]]), "messages": []}
    assert fast.step_line(json.dumps(with_messages).encode("utf-8"), 0) is None
    assert fast.step_line(lines[steps[0]].encode("utf-8")[:-9], 0) is None  # torn
    assert fast.step_line(lines[steps[1]].encode("utf-8"), 0) is None  # out of its place


def test_a_step_line_with_text_that_is_not_utf8_where_it_is_not_read_loads_either_way_alike(
    tmp_path: Path,
) -> None:
    """msgspec skips a field it does not read without decoding its text: a step line with
    bytes that are not UTF-8 in an unknown field is refused by both parsers alike."""
    path = tmp_path / "run.jsonl"
    rich_run(path)
    lines = path.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "step")
    lines[at] = lines[at].replace(b'{"kind":"step",', b'{"kind":"step","zz":"\xff",', 1)
    assert b'"zz":"\xff"' in lines[at]
    assert fast.step_line(lines[at], 0) is None  # left to the full reader
    path.write_bytes(b"".join(lines))
    errors = []
    for stdlib in (False, True):
        with pytest.raises(ValueError, match="UTF-8") as raised:
            load_trace(path, _stdlib=stdlib)
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def _fail() -> Any:
    raise AssertionError("the fast reader refused a plain message")


def test_loading_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    good = tmp_path / "run.jsonl"
    rich_run(good)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text(encoding="utf-8").replace('"index":1', '"index":7'))
    was_on = gc.isenabled()
    try:
        for on in (True, False):
            gc.enable() if on else gc.disable()
            assert len(load_trace(good).steps) == 2
            assert gc.isenabled() is on
            with pytest.raises(
                ValueError,
                match=r"bad\.jsonl:3: step\.index must be 1 \(steps are numbered in order from 0\), got 7",
            ):
                load_trace(bad)
            assert gc.isenabled() is on
    finally:
        gc.enable() if was_on else gc.disable()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES, st.booleans())
def test_the_fast_parser_reads_any_json_as_the_standard_library_does(
    value: Any, ascii_only: bool
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    got = fast.json_loads(raw)
    if got is fast.NOT_READ:  # refused (NaN, a lone surrogate...): the standard library decides
        return
    assert repr(got) == repr(json.loads(raw.decode("utf-8")))
    assert fast.json_loads(raw, fast=False) is fast.NOT_READ
