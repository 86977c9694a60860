"""``redact=`` under attack: a random secret put everywhere a string or a number can go (the
prompt, the model's text, argument values and keys, JSON escapes, coerced numbers, tool defaults,
results cut around ``max_result_chars``, dict results, tool errors, argument-error previews, tool
names, call ids, the answer or a model error) never survives in any form in the saved JSON, the
JSON Lines file, ``format()``, the static HTML view or the widgets' HTML, and ``redact`` is never
handed its own output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import Completion, Message, ScriptedModel, ToolCall, run, tool
from tests.conftest import FakeClock
from tests.test_redact import forms

MASK = "[R]"


def widget_text(result: Any) -> str:
    """Everything TraceView sends the page of a run: its data, and what the page can ask for
    (each step's context and request, each text cut for the page) (empty where the widgets'
    extra is not installed)."""
    try:
        from budgetloop_widgets import TraceView
    except ImportError:
        return ""
    view = TraceView(result)
    from tests.viewer_support import decode

    data = decode(view.data)
    seen = [json.dumps(data, ensure_ascii=False), view.later().decode("utf-8")]
    count = len(data["strings"]) + len(json.loads(seen[1])["strings"])
    questions = [{"type": "full", "id": i} for i in range(count)]
    for index in range(len(result.steps)):
        questions += [{"type": "context", "step": index}, {"type": "request", "step": index}]
    for question in questions:
        seen.append(json.dumps(view.answer(question), ensure_ascii=False))
    return "\n".join(seen)


FILLER = st.text(alphabet="abxyz ", max_size=8)
WORDY = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
text_secrets = st.text(alphabet=WORDY + "\"'\\-_ é€😀", min_size=6, max_size=14).map(
    lambda s: f"sk-{s}"
)
pins = st.integers(1_000_000, 9_999_999).map(str)  # longer than any count or length in a run


def u_escaped(secret: str) -> str:
    """The secret as a model could write it in JSON, every character a \\u escape."""
    return "".join(
        json.dumps(ch)[1:-1] if ord(ch) > 0xFFFF else f"\\u{ord(ch):04x}" for ch in secret
    )


@st.composite
def placements(draw: st.DrawFn) -> dict[str, Any]:
    secret = draw(text_secrets | pins)
    return {
        "secret": secret,
        "around": [draw(FILLER) for _ in range(13)],
        "before_cut": draw(st.integers(0, 120)),
        "limit_shift": draw(st.integers(-len(secret), len(secret))),
        "ends_in_error": draw(st.booleans()),
    }


@settings(deadline=None)  # the first example imports and builds the widgets
@given(placements())
def test_no_form_of_a_secret_survives_anywhere(tmp_path_factory: Any, p: dict[str, Any]) -> None:
    secret, around = p["secret"], p["around"]
    is_pin = secret.isdigit()
    number = int(secret) if is_pin else 7

    def put(i: int) -> str:
        return f"{around[i]}{secret}{around[i + 1]}"

    handed: list[str] = []

    def redact(text: str) -> str:
        handed.append(text)
        return text.replace(secret, MASK)

    default_text, default_number = put(0), number

    @tool
    def echo(
        q: str, extra: dict[str, str] | None = None, d: str = default_text, n: int = default_number
    ) -> str:
        """Echo."""
        return q

    cut_at = p["before_cut"] + len(secret) // 2 + p["limit_shift"]
    long_text = "a" * p["before_cut"] + secret + "b" * 40

    @tool
    def big() -> str:
        """A long result, cut around the secret."""
        return long_text

    @tool
    def creds() -> dict[str, Any]:
        """A dict result: JSON would escape what is in the secret."""
        return {"auth": put(2), "n": number, put(3): [number, 1.5]}

    @tool
    def fail(q: str) -> str:
        """Raises with the argument in the message."""
        raise ValueError(q)

    @tool
    def count(n: int) -> int:
        """Returns the number it got."""
        return n

    @tool
    def pick(c: Literal["x", "y"]) -> str:
        """An enum, so a wrong value is previewed in the error."""
        return c

    calls = [
        ToolCall("echo", {"q": put(4), "extra": {put(5): "v"}}, f"id-{put(6)}"),
        ToolCall("echo", f'{{"q": "{u_escaped(secret)}"}}', "c2"),
        ToolCall("echo", f'{{"q": "{u_escaped(secret)}"', "c3"),  # not JSON
        ToolCall("big", {}, "c4"),
        ToolCall("creds", {}, "c5"),
        ToolCall("fail", {"q": put(7)}, "c6"),
        ToolCall("count", {"n": str(number)}, "c7"),  # coerced
        ToolCall("count", f'{{"n": {number}}}', "c8"),  # a JSON number
        ToolCall("pick", {"c": "a" * p["before_cut"] + secret}, "c9"),
        ToolCall(f"tool{put(8)}", {}, "c10"),  # unknown
    ]

    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError(put(9))

    final: Any = broken if p["ends_in_error"] else put(10)
    model = ScriptedModel([Completion(text=put(11), tool_calls=calls), final])
    journal = tmp_path_factory.mktemp("run") / "run.jsonl"
    result = run(
        model,
        f"use {secret} please",
        tools=[echo, big, creds, fail, count, pick],
        redact=redact,
        trace_path=journal,
        max_result_chars=max(1, cut_at),
        clock=FakeClock(),
    )
    # the tools and the model had the real values
    sent = model.requests[1].messages
    assert secret in sent[0].content
    # no form of the secret anywhere a trace is kept or shown
    data = result.to_dict()
    texts = {
        "to_dict": json.dumps(data),
        "to_dict, ensure_ascii=False": json.dumps(data, ensure_ascii=False),
        "format": result.format(),
        "journal": Path(journal).read_text(encoding="utf-8"),
        "static HTML": result._repr_html_(),
        "widgets": widget_text(result),
    }
    for where, text in texts.items():
        for form in [*forms(secret), u_escaped(secret)]:
            assert form not in text, f"{form!r} in {where}"
    assert not [t for t in handed if MASK in t]  # never redacted twice
    assert MASK in texts["journal"]


@pytest.mark.parametrize("secret", ['sk-"quoted"-é', "1234567"])
def test_the_property_checks_something(secret: str) -> None:
    """Without ``redact`` the same run writes the secret in the forms the property looks for."""
    echo_calls = [ToolCall("echo", {"q": secret}, "c1")]

    @tool
    def echo(q: str) -> str:
        """Echo."""
        return q

    result = run(ScriptedModel([Completion(tool_calls=echo_calls), "ok"]), "go", tools=[echo])
    text = json.dumps(result.to_dict())
    assert any(form in text for form in forms(secret))
