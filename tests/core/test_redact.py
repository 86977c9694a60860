"""``redact=``: a secret the tools and the model need never reaches a saved trace, while the tool
still gets the real value and the model still reads the real result."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from budgetloop import (
    Completion,
    Message,
    ScriptedModel,
    ToolCall,
    arun,
    load_trace,
    run,
    start,
    tool,
)
from budgetloop._forms._redact import PLAIN, Said

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


# -- every form of a secret: the rule is redact before any cut, redact the text of every value
# and key, and keep no form the secret can be decoded from ----------------------------------------


def forms(secret: str) -> list[str]:
    """Every form of ``secret`` a saved trace or ``format()`` could hold it in: as is, and as
    JSON writes it with and without ``ensure_ascii``."""
    return sorted({secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]})


def assert_kept_out(result: Any, secret: str, journal: Path | None = None) -> None:
    """No form of ``secret`` in the saved JSON (either encoding), ``format()`` or the journal."""
    data = result.to_dict()
    texts = {
        "to_dict": json.dumps(data),
        "to_dict, ensure_ascii=False": json.dumps(data, ensure_ascii=False),
        "format": result.format(),
    }
    if journal is not None:
        texts["journal"] = journal.read_text(encoding="utf-8")
    for where, text in texts.items():
        for form in forms(secret):
            assert form not in text, f"{form!r} in {where}"


def masking(secret: str, mask: str = MASK) -> Callable[[str], str]:
    def redact(text: str) -> str:
        return text.replace(secret, mask)

    return redact


def test_a_secret_used_as_a_dict_key_is_redacted_in_the_coerced_paths(tmp_path: Path) -> None:
    @tool
    def tag(meta: dict[str, int]) -> str:
        """Tag."""
        return "tagged"

    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("tag", {"meta": {SECRET: "7"}})]), "ok"]
    )
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[tag], redact=redact, trace_path=journal)
    call = result.steps[0].tool_calls[0]
    assert call.coerced == (f"tag.meta.{MASK}",)
    assert call.arguments == {"meta": {MASK: 7}}
    assert_kept_out(result, SECRET, journal)


def test_a_pin_coerced_to_a_number_is_kept_as_its_redacted_text(tmp_path: Path) -> None:
    pin = "734291"
    got: list[int] = []

    @tool
    def unlock(pin: int) -> str:
        """Unlock."""
        got.append(pin)
        return "unlocked"

    model = ScriptedModel(
        [
            Completion(
                tool_calls=[
                    ToolCall("unlock", {"pin": pin}, "c1"),  # a string, coerced to an int
                    ToolCall("unlock", f'{{"pin": {pin}}}', "c2"),  # a JSON number
                    ToolCall("unlock", {"pin": float(pin)}, "c3"),  # 734291.0
                ]
            ),
            "ok",
        ]
    )
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[unlock], redact=masking(pin, "[pin]"), trace_path=journal)
    assert got == [734291, 734291, 734291]  # the tool got the real number
    c1, c2, c3 = result.steps[0].tool_calls
    assert (c1.raw_arguments, c1.arguments, c1.coerced) == (
        {"pin": "[pin]"},
        {"pin": "[pin]"},
        ("unlock.pin",),
    )
    assert (c2.raw_arguments, c2.arguments) == ('{"pin": "[pin]"}', {"pin": "[pin]"})
    assert (c3.raw_arguments, c3.arguments) == ({"pin": "[pin].0"}, {"pin": "[pin]"})
    assert_kept_out(result, pin, journal)


def test_a_secret_written_with_json_escapes_is_redacted_in_the_raw_arguments(
    tmp_path: Path,
) -> None:
    escaped = "".join(f"\\u{ord(ch):04x}" for ch in SECRET)
    _, received, login, _ = scenario()
    model = ScriptedModel(
        [
            Completion(
                tool_calls=[
                    ToolCall("login", f'{{"key": "{escaped}"}}', "c1"),
                    ToolCall("login", f'{{"key": "{escaped}"', "c2"),  # not JSON: cut short
                ]
            ),
            "ok",
        ]
    )
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[login], redact=redact, trace_path=journal)
    assert received == [SECRET]
    c1, c2 = result.steps[0].tool_calls
    assert c1.raw_arguments == f'{{"key": "{MASK}"}}'  # re-encoded: the escapes held the key
    assert c2.raw_arguments == f'{{"key": "{MASK}"'  # escapes decoded, then redacted
    assert result.messages[1].tool_calls[0].arguments == f'{{"key": "{MASK}"}}'
    assert model.requests[1].messages[1].tool_calls[0].arguments == f'{{"key": "{escaped}"}}'
    assert_kept_out(result, SECRET, journal)
    for form in (escaped, escaped[:30]):
        assert form not in journal.read_text(encoding="utf-8")


def test_raw_arguments_without_a_hidden_secret_keep_the_models_spelling() -> None:
    raw = '{"key":   "abc",\n "n": 1.50}'
    model = ScriptedModel([Completion(tool_calls=[ToolCall("login", raw, "c1")]), "ok"])
    _, _, login, _ = scenario()
    result = run(model, "go", tools=[login], redact=redact)
    assert result.steps[0].tool_calls[0].raw_arguments == raw


def test_a_result_cut_by_max_result_chars_is_redacted_before_the_cut(tmp_path: Path) -> None:
    @tool
    def dump() -> str:
        """Dump."""
        return "x" * 95 + SECRET + "y" * 50

    model = ScriptedModel([Completion(tool_calls=[ToolCall("dump", {}, "c1")]), "ok"])
    journal = tmp_path / "run.jsonl"
    result = run(
        model, "go", tools=[dump], redact=redact, trace_path=journal, max_result_chars=100
    )
    call = result.steps[0].tool_calls[0]
    full = "x" * 95 + MASK + "y" * 50
    assert call.result == (
        f"{full[:100]}\n[truncated: the result had {95 + len(SECRET) + 50} characters; "
        "the first 100 are shown]"
    )
    assert call.truncated == 95 + len(SECRET) + 50
    assert model.requests[1].messages[-1].content.startswith("x" * 95 + SECRET[:5])  # real
    assert_kept_out(result, SECRET[:5], journal)  # not even the part the model was shown


def test_the_preview_in_an_argument_error_is_redacted_before_the_cut(tmp_path: Path) -> None:
    @tool
    def pick(cabin: Literal["economy", "business"]) -> str:
        """Pick."""
        return cabin

    value = "a" * 50 + SECRET
    model = ScriptedModel([Completion(tool_calls=[ToolCall("pick", {"cabin": value})]), "ok"])
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[pick], redact=redact, trace_path=journal)
    shown = json.dumps("a" * 50 + MASK)
    assert result.steps[0].tool_calls[0].error == (
        f'pick.cabin: expected one of "economy", "business", got {shown[:57]}...'
    )
    sent = model.requests[1].messages[-1].content
    assert (
        sent == f'error: pick.cabin: expected one of "economy", "business", got "{value[:56]}...'
    )
    assert_kept_out(result, SECRET[:6], journal)


QUOTED = "pa'ss\"wörd\\42"  # both quotes, a backslash and a letter outside ASCII


def test_a_secret_json_or_repr_would_escape_is_redacted_before_it_is_encoded(
    tmp_path: Path,
) -> None:
    @tool
    def creds() -> dict[str, Any]:
        """Creds."""
        return {"auth": QUOTED, "n": 1}

    model = ScriptedModel(
        [
            Completion(
                tool_calls=[
                    ToolCall("creds", {}, "c1"),
                    ToolCall(f"no{QUOTED}", {}, "c2"),  # shown with repr in the error
                ]
            ),
            "ok",
        ]
    )
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[creds], redact=masking(QUOTED), trace_path=journal)
    c1, c2 = result.steps[0].tool_calls
    assert c1.result == f'{{"auth": "{MASK}", "n": 1}}'
    assert c2.error == f"unknown tool 'no{MASK}'; available tools: creds"
    assert_kept_out(result, QUOTED, journal)


def test_tool_defaults_are_redacted_in_result_tools_and_the_journal_header(
    tmp_path: Path,
) -> None:
    @tool
    def login(user: str, key: str = SECRET, pin: int = 734291) -> str:
        """Log in."""
        return "ok"

    def both(text: str) -> str:
        return redact(text).replace("734291", "[pin]")

    model = ScriptedModel(["done"])
    journal = tmp_path / "run.jsonl"
    result = run(model, "go", tools=[login], redact=both, trace_path=journal)
    properties = result.tools[0]["parameters"]["properties"]
    assert (properties["key"]["default"], properties["pin"]["default"]) == (MASK, "[pin]")
    assert model.requests[0].tools[0]["parameters"]["properties"]["key"]["default"] == SECRET
    assert_kept_out(result, SECRET, journal)
    assert_kept_out(result, "734291", journal)


def test_the_step_that_step_returns_is_the_redacted_one() -> None:
    model, _, login, audit = scenario()
    session = start(model, f"use {SECRET}", tools=[login, audit], redact=redact)
    step = session.step()
    assert step is not None
    assert step == session.steps[-1]
    assert SECRET not in json.dumps(step.to_dict())


# -- what the loop writes itself: a repetition stop's detail and the warning before it quote the
# calls, each argument redacted before it is encoded and shortened -------------------------------

PASSWORD = "pässwörd-ünïcode"  # json.dumps would write it as p\u00e4ssw\u00f6rd-...
QUERY = "q" * 55 + SECRET  # its call is shortened to 80 characters in the middle of the key


def test_a_repetition_stop_and_its_warning_quote_the_calls_redacted(tmp_path: Path) -> None:
    @tool
    def login(password: str) -> str:
        """Log in."""
        return "denied"

    @tool
    def look(query: str) -> str:
        """Look."""
        return "nothing"

    calls = [
        ToolCall("login", {"password": PASSWORD}, "c1"),
        ToolCall("look", {"query": QUERY}, "c2"),
    ]
    model = ScriptedModel([Completion(tool_calls=calls)] * 4)
    journal = tmp_path / "run.jsonl"
    result = run(
        model,
        "go",
        tools=[login, look],
        warn_repeats=True,
        redact=lambda s: s.replace(SECRET, MASK).replace(PASSWORD, MASK),
        trace_path=journal,
    )
    assert (result.stop, model.calls) == ("repeated", 4)
    quoted = f'login({{"password": "{MASK}"}}), look({{"query": "' + "q" * 55 + MASK[:8] + "…"
    assert result.detail == f"the same tool calls 3 turns running: {quoted}"
    end = json.loads(journal.read_text(encoding="utf-8").splitlines()[-1])
    assert end["detail"] == result.detail  # the journal's end line
    tool_messages = [m.content for m in result.messages if m.role == "tool"]
    assert tool_messages[5].endswith(  # the warned turn's last result, as the trace keeps it
        f"\n\n[budgetloop] You are repeating yourself: the same tool calls 3 turns running: "
        f"{quoted}. Do something different or give your answer; if the loop goes on, the run "
        "stops."
    )
    assert tool_messages[6:] == [f"skipped: the run stopped ({result.detail})"] * 2
    assert [c.error for c in result.steps[3].tool_calls] == [
        f"the run stopped ({result.detail})"
    ] * 2
    # the model was warned with what it wrote, unescaped
    warned = model.requests[3].messages[-1].content
    assert f'login({{"password": "{PASSWORD}"}})' in warned
    assert 'look({"query": "' + "q" * 55 + SECRET[:8] + "…" in warned
    saved = tmp_path / "run.json"
    result.save(saved)
    for secret in (PASSWORD, SECRET[:8]):
        assert_kept_out(result, secret, journal)
        assert not [form for form in forms(secret) if form in saved.read_text(encoding="utf-8")]


def test_what_the_provider_said_of_a_reply_is_redacted_in_the_trace_and_the_journal(
    tmp_path: Path,
) -> None:
    secret = "sk-provider-7731"
    said = Completion(
        text="done",
        model=f"ft:gpt-4o:{secret}",
        response_id=f"resp_{secret}",
        finish_reason=f"stop {secret}",
    )
    journal = tmp_path / "run.jsonl"
    result = run(ScriptedModel([said]), "go", redact=masking(secret), trace_path=journal)
    (step,) = result.steps
    assert (step.model, step.response_id, step.finish_reason) == (
        f"ft:gpt-4o:{MASK}", f"resp_{MASK}", f"stop {MASK}",
    )  # fmt: skip
    assert_kept_out(result, secret, journal)
    assert load_trace(journal).steps == result.steps


def test_a_sentence_that_may_quote_a_call_has_no_plain_str() -> None:
    said = Said("the call ", None, " failed")
    assert (said.real, PLAIN.text(said)) == ("the call None failed",) * 2
    with pytest.raises(TypeError) as caught:
        str(said)  # which form (the model's, or an output form's) must be chosen
    assert str(caught.value) == (
        "Said: its text must be asked for in one of its two forms, got str(); use .real for the "
        "model, Redactor.text(said) for an output form."
    )


def test_a_fork_with_redact_keeps_backslashes_as_written_and_a_secret_holding_one_out() -> None:
    """A fork's inherited results and errors under a new ``redact``: a secret written with a
    backslash (``sk-0000\\r``) is masked as written, not decoded into a carriage return that
    JSON would show as the secret again, and a path's ``\\n`` stays two characters."""
    secret = "sk-0000\\r"

    @tool
    def echo(q: str) -> str:
        """Echo."""
        return f"C:\\new\\{q}"

    @tool
    def fail(q: str) -> str:
        """Raises."""
        raise ValueError(f"C:\\new\\{q}")

    calls = [ToolCall("echo", {"q": secret}, "c1"), ToolCall("fail", {"q": secret}, "c2")]
    session = start(
        ScriptedModel([Completion(tool_calls=calls), "done"]), "go", tools=[echo, fail]
    )
    session.run()
    forked = session.fork(1, complete=ScriptedModel(["again"]), redact=masking(secret)).run()
    ok, failed = forked.steps[0].tool_calls
    assert ok.result == "C:\\new\\" + MASK
    assert failed.error == "ValueError: C:\\new\\" + MASK
    text = json.dumps(forked.to_dict())
    for form in forms(secret):
        assert form not in text
