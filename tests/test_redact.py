"""``redact=``: a secret the tools and the model need never reaches a saved trace, while the tool
still gets the real value and the model still reads the real result."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Completion, Message, ScriptedModel, ToolCall, arun, load_trace, run, tool

SECRET = "sk-live-7Hq2ZxSECRET9"
MASK = "[redacted]"


def redact(text: str) -> str:
    return text.replace(SECRET, MASK)


def scenario() -> tuple[ScriptedModel, list[str], Any, Any]:
    received: list[str] = []

    @tool
    def login(key: str) -> str:
        """Logs in with an API key."""
        received.append(key)
        return f"session for {key}: ok"

    @tool
    def audit(key: str) -> str:
        """Fails, quoting the key."""
        received.append(key)
        raise PermissionError(f"key {key} is revoked")

    model = ScriptedModel(
        [
            Completion(
                text=f"I will use {SECRET}",
                tool_calls=[
                    ToolCall("login", {"key": SECRET}, "c1"),
                    ToolCall("login", f'{{"key": "{SECRET}"}}', "c2"),
                    ToolCall("audit", {"key": SECRET}, "c3"),
                    ToolCall("login", {SECRET: "as a key"}, "c4"),  # an unknown argument
                ],
            ),
            "all done",
        ]
    )
    return model, received, login, audit


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_secret_never_reaches_the_saved_trace(tmp_path: Path, driver: str) -> None:
    model, received, login, audit = scenario()
    journal = tmp_path / "run.jsonl"
    kwargs: dict[str, Any] = {"tools": [login, audit], "redact": redact, "trace_path": journal}
    prompt = f"log in with {SECRET}"
    if driver == "sync":
        result = run(model, prompt, **kwargs)
    else:
        result = asyncio.run(arun(model, prompt, **kwargs))
    saved = tmp_path / "run.json"
    result.save(saved)
    for path in (journal, saved):
        data = path.read_bytes()
        assert SECRET.encode() not in data
        assert MASK.encode() in data
    assert SECRET not in repr(result.to_dict())
    # the tools got the real key; the model was sent the real results and the real prompt
    assert received == [SECRET, SECRET, SECRET]
    sent = model.requests[1].messages
    assert sent[0] == Message("user", prompt)
    assert sent[1].content == f"I will use {SECRET}"
    assert sent[1].tool_calls[0].arguments == {"key": SECRET}
    assert [m.content for m in sent[2:]] == [
        f"session for {SECRET}: ok",
        f"session for {SECRET}: ok",
        f"error: PermissionError: key {SECRET} is revoked",
        f"error: login.{SECRET}: unknown argument; expected key",
    ]
    # the trace keeps the shape of what happened, with the secret masked
    records = result.steps[0].tool_calls
    assert [r.status for r in records] == ["ok", "ok", "error", "error"]
    assert records[0].raw_arguments == {"key": MASK}
    assert records[0].arguments == {"key": MASK}
    assert records[1].raw_arguments == f'{{"key": "{MASK}"}}'
    assert records[0].result == f"session for {MASK}: ok"
    assert records[2].error == f"PermissionError: key {MASK} is revoked"
    assert records[3].raw_arguments == {MASK: "as a key"}
    assert result.messages[0].content == f"log in with {MASK}"
    assert result.steps[0].text == f"I will use {MASK}"
    assert load_trace(journal).to_dict() == result.to_dict()


def test_without_redact_the_trace_keeps_everything(tmp_path: Path) -> None:
    model, _, login, audit = scenario()
    path = tmp_path / "run.jsonl"
    run(model, "go", tools=[login, audit], trace_path=path)
    assert path.read_bytes().count(SECRET.encode()) >= 6


@pytest.mark.parametrize("where", ["answer", "model error"])
def test_a_secret_in_the_final_answer_or_a_model_error_is_redacted(
    tmp_path: Path, where: str
) -> None:
    def fail(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError(f"rejected key {SECRET}")

    model = ScriptedModel([f"your key is {SECRET}" if where == "answer" else fail])
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", redact=redact, trace_path=journal)
    saved = tmp_path / "run.json"
    result.save(saved)
    assert SECRET not in repr(result.to_dict())
    assert SECRET.encode() not in journal.read_bytes()
    assert SECRET.encode() not in saved.read_bytes()


def test_a_secret_in_a_tool_name_or_a_call_id_is_redacted_too() -> None:
    secret = "sk-in-the-name"
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall(f"lookup_{secret}", {}, f"id-{secret}")]), "done"]
    )
    result = run(model, "go", redact=lambda text: text.replace(secret, "[redacted]"))
    assert secret not in json.dumps(result.to_dict())
    call = result.steps[0].tool_calls[0]
    assert (call.name, call.id) == ("lookup_[redacted]", "id-[redacted]")
    tool_message = result.messages[-2]
    assert (tool_message.name, tool_message.tool_call_id) == ("lookup_[redacted]", "id-[redacted]")
    assert secret in model.requests[1].messages[-1].tool_call_id  # the model saw the real id
