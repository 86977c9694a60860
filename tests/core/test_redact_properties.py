"""``redact=`` under attack: a random secret put everywhere a string or a number can go (the
prompt, the model's text, argument values and keys, JSON escapes, coerced numbers, tool defaults,
results cut around ``max_result_chars``, dict results, tool errors, tracebacks cut around their
bound, argument-error previews, tool names, call ids, the answer or a model error, and the calls a
repetition stop's detail and its warning quote, cut around their 80 characters) never survives in
any form in the saved JSON, the JSON Lines file, ``result.detail``, ``format()``, the static HTML
view, the HTML file ``to_html`` writes, TraceView, or the OpenTelemetry spans (content on and off),
and ``redact`` is never handed its own output. The exporter's own ``redact`` keeps the same rule
for a run that had none, and a fork or a resumed run given a ``redact`` keeps it for the steps it
inherits. A run that ended held keeps it out of its pending calls too."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetloop import (
    Completion,
    Message,
    Result,
    ScriptedModel,
    ToolCall,
    load_trace,
    resume,
    run,
    start,
    tool,
)
from budgetloop._tools._tracebacks import MAX_TRACEBACK_CHARS
from tests.conftest import FakeClock
from tests.core.test_redact import forms, masking

MASK = "[R]"
HAVE_OTEL = (  # the parent first: find_spec of a child raises when its parent is missing
    importlib.util.find_spec("opentelemetry") is not None
    and importlib.util.find_spec("opentelemetry.sdk") is not None
)


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


@cache
def _otel() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def span_text(result: Result, *, content: bool, redact: Any = None) -> str:
    """Every text the spans ``export_trace`` writes carry: names, attributes, status
    descriptions (empty where opentelemetry-sdk is not installed)."""
    if not HAVE_OTEL:
        return ""
    from budgetloop.otel import export_trace

    provider, exporter = _otel()
    exporter.clear()
    export_trace(result, provider, content=content, redact=redact)
    spans = exporter.get_finished_spans()
    assert spans
    return json.dumps(
        [[s.name, dict(s.attributes or {}), s.status.description] for s in spans],
        ensure_ascii=False,
    )


def tracebacks(result: Result) -> list[str]:
    """Every traceback a trace keeps: its model calls' and its tool calls'."""
    found = [s.traceback for s in result.steps]
    found += [c.traceback for c in result.tool_calls]
    return [tb for tb in found if tb is not None]


def written_html(result: Result, folder: Path) -> str:
    """The page ``budgetloop_widgets.to_html`` writes (empty without ipywidgets)."""
    try:
        from budgetloop_widgets import to_html
    except ImportError:
        return ""
    to_html(result, folder / "run.html")
    return (folder / "run.html").read_text(encoding="utf-8")


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
        "tb_shift": draw(st.integers(0, len(secret))),  # where a traceback's bound falls in it
        "quote_at": draw(st.integers(50, 70)),  # where a quoted call's 80 characters end in it
        "repeats": draw(st.booleans()),  # the turn comes four times: warned, then stopped
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

    crash_message = secret + "x" * (MAX_TRACEBACK_CHARS - 1 - p["tb_shift"])

    @tool
    def crash() -> str:
        """Raises a message long enough that its traceback is cut inside the secret."""
        raise RuntimeError(crash_message)

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
        ToolCall("crash", {}, "c11"),
        ToolCall("echo", {"q": "a" * p["quote_at"] + secret}, "c12"),  # quoted cut at 80
    ]

    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise ConnectionError(put(9))

    final: Any = broken if p["ends_in_error"] else put(10)
    turn = Completion(text=put(11), tool_calls=calls)
    model = ScriptedModel([turn] * 4 if p["repeats"] else [turn, final])
    folder = tmp_path_factory.mktemp("run")
    journal = folder / "run.jsonl"
    result = run(
        model,
        f"use {secret} please",
        tools=[echo, big, creds, fail, count, pick, crash],
        redact=redact,
        trace_path=journal,
        max_result_chars=max(1, cut_at),
        clock=FakeClock(),
        warn_repeats=True,
    )
    if p["repeats"]:  # the quoted forms are there to be checked
        assert result.stop == "repeated"
        assert sum("You are repeating yourself" in (m.content or "") for m in result.messages)
        assert len(result.skipped) == len(calls)
    # the tools and the model had the real values
    sent = model.requests[1].messages
    assert secret in sent[0].content
    # no form of the secret anywhere a trace is kept or shown
    data = result.to_dict()
    result.save(folder / "run.json")
    texts = {
        "to_dict": json.dumps(data),
        "to_dict, ensure_ascii=False": json.dumps(data, ensure_ascii=False),
        "saved JSON": (folder / "run.json").read_text(encoding="utf-8"),
        "journal": Path(journal).read_text(encoding="utf-8"),
        "detail": result.detail or "",
        "format": result.format(),
        "static HTML": result._repr_html_(),
        "to_html": written_html(result, folder),
        "widgets": widget_text(result),
        "spans": span_text(result, content=False),
        "spans, content=True": span_text(result, content=True),
    }
    for where, text in texts.items():
        for form in [*forms(secret), u_escaped(secret)]:
            assert form not in text, f"{form!r} in {where}"
    tail = secret[p["tb_shift"] :]  # what a traceback cut before redact would have kept
    if len(tail) >= 4:
        for trace in (result, load_trace(journal)):
            for tb in tracebacks(trace):
                assert tail not in tb
    assert not [t for t in handed if MASK in t]  # never redacted twice
    assert MASK in texts["journal"]


@settings(deadline=None)
@given(placements())
def test_the_exporters_redact_keeps_the_same_rule(p: dict[str, Any]) -> None:
    """A run with no ``redact``, exported with one: every form the trace holds (escapes in raw
    arguments, numbers, keys, dict results, errors, names, ids) is caught before it is sent."""
    if not HAVE_OTEL:
        pytest.skip("opentelemetry-sdk is not installed")
    secret, around = p["secret"], p["around"]
    number = int(secret) if secret.isdigit() else 7

    def put(i: int) -> str:
        return f"{around[i]}{secret}{around[i + 1]}"

    @tool
    def echo(q: str, extra: dict[str, str] | None = None) -> str:
        """Echo."""
        return q

    @tool
    def creds() -> dict[str, Any]:
        """A dict result."""
        return {"auth": put(0), put(1): [number]}

    @tool
    def count(n: int) -> int:
        """Returns the number it got."""
        return n

    @tool
    def fail(q: str) -> str:
        """Raises with the argument in the message."""
        raise ValueError(q)

    calls = [
        ToolCall("echo", {"q": put(2), "extra": {put(3): "v"}}, f"id-{put(4)}"),
        ToolCall("echo", f'{{"q": "{u_escaped(secret)}"}}', "c2"),
        ToolCall(f"no{put(5)}", f'{{"q": "{u_escaped(secret)}"}}', "c3"),  # raw text kept
        ToolCall("creds", {}, "c4"),
        ToolCall("count", {"n": str(number)}, "c5"),  # coerced to a number
        ToolCall("count", f'{{"n": {number}}}', "c6"),
        ToolCall("fail", {"q": put(6)}, "c7"),
    ]
    model = ScriptedModel([Completion(text=put(7), tool_calls=calls), put(8)])
    result = run(model, f"use {secret}", system=put(9), tools=[echo, creds, count, fail],
                 clock=FakeClock())  # fmt: skip
    # (a fake clock: a real one's seconds, 0.00039010000000416767, can hold a pin's digits)
    assert any(f in json.dumps(result.to_dict()) for f in forms(secret))  # the trace has it

    handed: list[str] = []

    def redact(text: str) -> str:
        handed.append(text)
        return text.replace(secret, MASK)

    for content in (False, True):
        text = span_text(result, content=content, redact=redact)
        for form in [*forms(secret), u_escaped(secret)]:
            assert form not in text, f"{form!r} in spans, content={content}"
    assert not [t for t in handed if MASK in t]


@settings(deadline=None)
@given(placements(), st.integers(0, 2), st.booleans())
def test_a_fork_or_resume_with_redact_keeps_the_secret_out_of_what_it_inherits(
    tmp_path_factory: Any, p: dict[str, Any], at: int, resumed: bool
) -> None:
    """A run that had no ``redact`` (its trace holds the secret everywhere: the model's text,
    the calls, results, errors, and what the provider said of the reply), forked or resumed
    with one: no form of the secret is in the new run's result or trace file."""
    secret, around = p["secret"], p["around"]
    number = int(secret) if secret.isdigit() else 7

    def put(i: int) -> str:
        return f"{around[i]}{secret}{around[i + 1]}"

    @tool
    def echo(q: str, extra: dict[str, str] | None = None) -> str:
        """Echo."""
        return q

    @tool
    def creds() -> dict[str, Any]:
        """A dict result."""
        return {"auth": put(0), put(1): [number]}

    @tool
    def fail(q: str) -> str:
        """Raises with the argument in the message."""
        raise ValueError(q)

    calls = [
        ToolCall("echo", {"q": put(2), "extra": {put(3): "v"}}, f"id-{put(4)}"),
        ToolCall("echo", f'{{"q": "{u_escaped(secret)}"}}', "c2"),
        ToolCall(f"no{put(5)}", {}, "c3"),
        ToolCall("creds", {}, "c4"),
        ToolCall("fail", {"q": put(6)}, "c5"),
    ]
    said = Completion(
        text=put(7), tool_calls=calls, model=put(8), response_id=put(9), finish_reason=put(0)
    )
    tools = [echo, creds, fail]
    clock = FakeClock()  # a real clock's seconds can hold a pin's digits
    session = start(
        ScriptedModel([said, said, put(10)]), f"use {secret}", tools=tools, clock=clock
    )
    source = session.run()
    assert any(f in json.dumps(source.to_dict()) for f in forms(secret))  # the trace has it
    folder = tmp_path_factory.mktemp("fork")
    journal = folder / "run.jsonl"
    options: dict[str, Any] = {"redact": lambda text: text.replace(secret, MASK)}
    options["trace_path"] = journal
    options["clock"] = clock
    go_on = ScriptedModel([put(11)])
    if resumed:
        new = resume(source, go_on, tools=tools, at=at, **options)
    else:
        new = session.fork(at, complete=go_on, **options)
    result = new.run()
    assert len(result.steps) == at + 1
    texts = {
        "to_dict": json.dumps(result.to_dict()),
        "to_dict, ensure_ascii=False": json.dumps(result.to_dict(), ensure_ascii=False),
        "journal": journal.read_text(encoding="utf-8"),
        "format": result.format(),
    }
    for where, text in texts.items():
        for form in [*forms(secret), u_escaped(secret)]:
            assert form not in text, f"{form!r} in {where}"


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


@settings(deadline=None)
@given(placements())
def test_no_form_of_a_secret_survives_a_held_run(tmp_path_factory: Any, p: dict[str, Any]) -> None:
    """A run that ended held (``approve="hold"``): its pending calls' arguments (a value, a key,
    ``\\u`` escapes, a number) are in no output form, and each names where it was redacted."""
    secret, around = p["secret"], p["around"]
    number = int(secret) if secret.isdigit() else 7

    @tool(needs_approval=True)
    def send(q: str, extra: dict[str, str] | None = None, n: int = 0) -> str:
        """Send."""
        return q

    put = f"{around[0]}{secret}{around[1]}"
    calls = [
        ToolCall("send", {"q": put, "extra": {put: "v"}}, "c1"),
        ToolCall("send", f'{{"q": "{u_escaped(secret)}"}}', "c2"),
        ToolCall("send", {"q": "x", "n": str(number)}, "c3"),  # coerced
    ]
    folder = tmp_path_factory.mktemp("held")
    journal = folder / "run.jsonl"
    result = run(ScriptedModel([Completion(tool_calls=calls)]), "go", tools=[send],
                 approve="hold", trace_path=journal, redact=masking(secret, MASK),
                 clock=FakeClock())  # fmt: skip
    assert [c.id for c in result.pending] == ["c1", "c2", "c3"]
    shown_key = json.dumps(put.replace(secret, MASK), ensure_ascii=False)
    assert result.pending[0].redacted == ("arguments.q", f"arguments.extra[{shown_key}]")
    assert result.pending[1].redacted == ("arguments.q",)
    assert result.pending[2].redacted == (("arguments.n",) if secret.isdigit() else ())
    texts = {
        "to_dict": json.dumps(result.to_dict()),
        "to_dict, ensure_ascii=False": json.dumps(result.to_dict(), ensure_ascii=False),
        "journal": journal.read_text(encoding="utf-8"),
        "format": result.format(),
        "repr": repr(result),
        "spans, content=True": span_text(result, content=True),
    }
    for where, text in texts.items():
        for form in [*forms(secret), u_escaped(secret)]:
            assert form not in text, f"{form!r} in {where}"
    assert load_trace(journal) == result
