"""Hostile text in model text, tool names, arguments, results and errors changes nothing: the
trace keeps it exactly (escaping is the views' job), and ``Result.format()`` never emits a raw
control character (ANSI escapes, NUL...), showing them as escapes instead."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from budgetloop import Completion, Message, Result, ScriptedModel, ToolCall, load_trace, run, tool

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    "</style><style>*{display:none}</style>",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "nul\x00byte",
    "\x9b31m",  # the one-character CSI
    "line\rover",
    "\u2028sep\u2029",
    "'; DROP TABLE runs; --",
    "{{7*7}} ${7*7}",
]
TEXT = "".join(HOSTILE)
# every character format() may emit is printable, or a newline or tab
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def hostile_run(text: str, tmp_path: Path | None = None) -> tuple[Result, ScriptedModel]:
    @tool
    def echo(q: str) -> str:
        """Echoes."""
        return q

    @tool
    def fail(q: str) -> str:
        """Fails with the text."""
        raise ValueError(q)

    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise RuntimeError(text)

    model = ScriptedModel(
        [
            Completion(
                text=text,
                tool_calls=[
                    ToolCall("echo", {"q": text}, text),
                    ToolCall("echo", json.dumps({"q": text}), "c2"),
                    ToolCall("fail", {"q": text}, "c3"),
                    ToolCall(text, {"q": text}, "c4"),  # a hostile tool name: unknown
                    ToolCall("echo", {text: 1}, "c5"),  # a hostile argument name
                    ToolCall("echo", text, "c6"),  # hostile raw arguments
                ],
            ),
            broken,
        ]
    )
    path = None if tmp_path is None else tmp_path / "run.jsonl"
    return run(model, text, tools=[echo, fail], system=text, trace_path=path), model


def test_format_shows_control_characters_as_escapes() -> None:
    result, _ = hostile_run(TEXT)
    shown = result.format()
    assert "\x1b" not in shown
    assert "\x00" not in shown
    assert "\x9b" not in shown
    assert RAW_CONTROL.search(shown) is None
    assert "\\x1b[31mred\\x1b[0m" in shown
    assert "nul\\x00byte" in shown
    assert "\\x9b31m" in shown
    assert "\\u2028sep\\u2029" in shown
    assert "line\\rover" in shown
    # the rest of the text is data, shown as it is
    assert "<script>alert(1)</script>" in shown
    assert shown.count("\n") == len(shown.splitlines()) - 1
    assert len(shown.splitlines()) == 10  # 2 steps, 6 calls, a blank line, the totals


def test_the_trace_keeps_hostile_text_exactly(tmp_path: Path) -> None:
    result, model = hostile_run(TEXT, tmp_path)
    assert result.stop == "model_error"
    assert result.error == f"RuntimeError: {TEXT}"
    step = result.steps[0]
    assert step.text == TEXT
    echo1, echo2, failed, unknown, badkey, raw = step.tool_calls
    assert (echo1.id, echo1.result, echo1.arguments) == (TEXT, TEXT, {"q": TEXT})
    assert echo2.raw_arguments == json.dumps({"q": TEXT})
    assert echo2.result == TEXT
    assert failed.error == f"ValueError: {TEXT}"
    assert unknown.name == TEXT
    assert unknown.error == f"unknown tool {TEXT!r}; available tools: echo, fail"
    assert badkey.raw_arguments == {TEXT: 1}
    assert badkey.error == f"echo.{TEXT}: unknown argument; expected q"
    assert raw.raw_arguments == TEXT
    assert result.messages[0] == Message("system", TEXT)
    assert result.messages[1] == Message("user", TEXT)
    # the model was sent the text as it was, too
    assert model.requests[1].messages[3].content == TEXT
    # round trips: to_dict, JSON text, save, the journal
    data = result.to_dict()
    assert Result.from_dict(json.loads(json.dumps(data))) == result
    assert Result.from_dict(json.loads(json.dumps(data, ensure_ascii=False))) == result
    saved = tmp_path / "run.json"
    result.save(saved)
    assert load_trace(saved) == result
    assert load_trace(tmp_path / "run.jsonl") == result


def test_a_nul_or_newline_in_a_result_does_not_split_a_journal_line(tmp_path: Path) -> None:
    result, _ = hostile_run('a\nb\x00c\r\n{"kind": "end"}\n', tmp_path)
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line)["kind"] for line in text.splitlines()] == [
        "header",
        "step",
        "step",
        "end",
    ]
    assert load_trace(tmp_path / "run.jsonl") == result


@given(st.text(max_size=40))
def test_any_text_is_kept_exactly_and_shown_without_raw_controls(text: str) -> None:
    result, _ = hostile_run(text)
    assert result.steps[0].text == text
    assert result.steps[0].tool_calls[0].result == text
    assert result.steps[0].tool_calls[2].error == f"ValueError: {text}"
    assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert RAW_CONTROL.search(result.format()) is None
