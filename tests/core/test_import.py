"""Runs from other frameworks (issue 20): ``load_trace`` recognises OTLP JSON holding GenAI
spans, openai-agents' trace export and a Chat Completions message log by their content, or as
``format=`` says; a file of several runs points to ``load_traces``; every field is checked; and
an imported run is replayed under a budget, reported, compared and shown.

The example files are ``tests/fixtures/peer-traces`` (a copy of the shared files, recorded from
real runs of pydantic-ai and openai-agents; its README says how). budgetloop's own spans import
back to the same ``format()``: a property on random runs. The real frameworks are driven in
tests/adapters/test_import_frameworks.py."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import given

from budgetloop import (
    Budget,
    Price,
    Result,
    Stop,
    budget_report,
    first_divergence,
    load_trace,
    load_traces,
    replay,
    run,
)
from tests.strategies import PROMPT, Scenario, build, imported_logs, scenarios

PEERS = Path(__file__).parents[1] / "fixtures" / "peer-traces"
PRICE = Price(2.5, 10.0, cache_read_per_mtok=1.25)  # assumed rates for the tests


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (its parent package may be missing altogether)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


HAVE_OTEL = installed("opentelemetry.exporter.otlp.proto.common")
needs_otel = pytest.mark.skipif(
    not HAVE_OTEL, reason="needs opentelemetry-sdk and the OTLP encoder (the dev extra has them)"
)

PEER_RUN = "\n".join(
    [
        "step 0: Looking it up.",
        '  - price({"isin": "SE0000108656"}) -> 118.4',
        "step 1:",
        '  - convert({"amount": 118.4, "rate": 0.091}) -> 10.77',
        "step 2: SE0000108656 is 118.40 SEK, about 10.77 USD.",
        "",
        "stop=answered tools=2 failed=0 cost=unknown",
    ]
)


def otlp_json(result: Result, **options: Any) -> dict[str, Any]:
    """``export_trace(result, content=True)`` as an OTLP exporter sends it, written as JSON."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from budgetloop.otel import export_trace

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(result, provider, content=True, **options)
    provider.shutdown()
    out: dict[str, Any] = MessageToDict(encode_spans(exporter.get_finished_spans()))
    return out


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# -- the shared files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "source", "run_id"),
    [
        (
            "pydantic_ai_spans_otlp.json",
            "otlp",
            "pydantic-ai 2.68.0 spans",
            "01a232d8-7e6f-7750-8220-afd19ac88cf3",  # its gen_ai.conversation.id
        ),
        (
            "openai_agents_trace_export.json",
            "openai-agents",
            "openai-agents trace pricer-demo",
            "trace_59ae4a70f65e4fdb896caede6070a45d",  # its trace id
        ),
    ],
)
def test_a_frameworks_spans_import_as_its_run(
    name: str, fmt: str, source: str, run_id: str
) -> None:
    result = load_trace(PEERS / name)
    assert result.format() == PEER_RUN
    assert result == load_trace(PEERS / name, format=fmt)
    assert (result.run_id, result.imported.format, result.imported.source) == (run_id, fmt, source)  # type: ignore[union-attr]
    assert (result.stop, result.answer) == (
        Stop.ANSWERED,
        "SE0000108656 is 118.40 SEK, about 10.77 USD.",
    )
    assert [s.usage for s in result.steps] == [
        budgetloop_usage(1200, 60, 0),
        budgetloop_usage(1400, 40, 1000),
        budgetloop_usage(1600, 20, 1200),
    ]
    assert [(s.cost_usd, s.projection) for s in result.steps] == [(None, None)] * 3
    assert result.cost_usd is None  # neither source holds a cost: unknown, not $0
    assert [(c.id, c.status, c.arguments) for c in result.tool_calls] == [
        ("call_1", "ok", {"isin": "SE0000108656"}),
        ("call_2", "ok", {"amount": 118.4, "rate": 0.091}),
    ]
    assert all(c.seconds > 0 for c in result.tool_calls)
    assert all(s.seconds > 0 for s in result.steps)
    assert [m.role for m in result.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert result.messages[1].content == "What is SE0000108656 worth in USD?"
    lacks = result.imported.lacks  # type: ignore[union-attr]
    assert {"cost", "projections", "price", "budget", "max_output_tokens"} <= set(lacks)
    assert ("tool schemas" in lacks) is (fmt == "openai-agents")  # pydantic-ai exports them
    if fmt == "otlp":
        assert [(t["name"], t["description"]) for t in result.tools] == [
            ("price", "Look up the last price for an instrument."),
            ("convert", "Convert an amount of money at an exchange rate."),
        ]


def budgetloop_usage(inputs: int, outputs: int, cached: int) -> Any:
    from budgetloop import Usage

    return Usage(inputs, outputs, cache_read_tokens=cached)


@pytest.mark.parametrize(
    "name", ["pydantic_ai_messages_openai_chat.json", "openai_agents_messages_openai_chat.json"]
)
def test_a_chat_completions_log_imports_with_what_a_log_holds(name: str, tmp_path: Path) -> None:
    result = load_trace(PEERS / name)
    assert (
        result.format()
        .replace('{"isin":"', '{"isin": "')
        .replace('{"amount":118.4,"rate":0.091}', '{"amount": 118.4, "rate": 0.091}')
        == PEER_RUN
    )  # pydantic-ai writes its JSON without spaces
    assert result.imported.format == "chat"  # type: ignore[union-attr]
    assert [(s.usage, s.cost_usd, s.seconds) for s in result.steps] == [(None, None, 0.0)] * 3
    assert result.imported.lacks == (  # type: ignore[union-attr]
        "cost", "token usage", "projections", "price", "budget", "max_output_tokens",
        "tool schemas", "timing", "tool error flags",  # a tool message has no failure flag
    )  # fmt: skip
    assert result.run_id == load_trace(PEERS / name).run_id  # from the file's bytes: stable
    wrapped = write(tmp_path / "log.json", {"messages": json.loads((PEERS / name).read_text())})
    assert load_trace(wrapped).format() == result.format()


def test_a_chat_log_with_a_follow_up_is_a_run_per_user_turn(tmp_path: Path) -> None:
    def asks(call_id: str, isin: str) -> dict[str, Any]:
        function = {"name": "price", "arguments": json.dumps({"isin": isin})}
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}]}  # fmt: skip

    log = [
        {"role": "system", "content": "Price things."},
        {"role": "user", "content": "What is A worth?"},
        asks("call_1", "A"),
        {"role": "tool", "tool_call_id": "call_1", "content": "118.4"},
        {"role": "assistant", "content": "A is 118.4."},
        {"role": "user", "content": "And B?"},  # the follow-up
        asks("call_2", "B"),
        {"role": "tool", "tool_call_id": "call_2", "content": "7.5"},
        {"role": "assistant", "content": "B is 7.5."},
    ]
    path = write(tmp_path / "log.json", log)
    first, second = load_traces(path)
    assert [s.text for s in first.steps] == [None, "A is 118.4."]
    assert [s.text for s in second.steps] == [None, "B is 7.5."]
    assert (first.stop, first.answer, second.stop, second.answer) == (
        Stop.ANSWERED, "A is 118.4.", Stop.ANSWERED, "B is 7.5.",
    )  # fmt: skip
    # what each model call was sent is what the log says it was sent, the follow-up included
    sent = second.request(0).messages
    assert [(m.role, m.content) for m in sent[-2:]] == [
        ("assistant", "A is 118.4."), ("user", "And B?"),
    ]  # fmt: skip
    assert [m.content for m in second.request(1).messages][-3:] == ["And B?", None, "7.5"]
    assert first.run_id != second.run_id
    # each replays whole: all four recorded model calls, at the price given
    again = [replay(r, price=PRICE, max_output_tokens=100) for r in (first, second)]
    assert [(r.stop, len(r.steps)) for r in again] == [(Stop.ANSWERED, 2)] * 2
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(path)
    assert str(info.value) == (
        f"load_trace: {path}: the file must be a trace of one run, got 2 runs; "
        "load_traces(path) returns every run a file holds, as a list."
    )


def test_budgetloops_own_export_imports_with_its_stop_costs_and_projections() -> None:
    result = load_trace(PEERS / "budgetloop_export_otlp.json")
    assert result.stop is Stop.MAX_COST_USD
    assert (result.cost_usd, len(result.failed), len(result.skipped)) == (0.01205, 1, 1)
    assert result.budget == Budget(max_steps=8, max_cost_usd=0.02)
    assert result.max_output_tokens == 500  # gen_ai.request.max_tokens
    assert result.steps[1].tool_calls[0].raw_arguments == {"amount": "118.4", "rate": 0.091}
    assert result.steps[0].projection is not None
    assert (result.steps[0].projection.input_tokens, result.steps[0].projection.cost_usd) == (
        355,
        0.0058875,
    )
    assert result.imported.lacks == ("price", "tool schemas")  # type: ignore[union-attr]


def test_pydantic_ai_messages_and_responses_items_are_the_same_run() -> None:
    for name, fmt in [
        ("pydantic_ai_messages_native.json", "pydantic-ai"),
        ("openai_agents_items_responses_format.json", "responses"),
    ]:
        result = load_trace(PEERS / name)
        assert (result.imported.format, result.format()) == (fmt, PEER_RUN)  # type: ignore[union-attr]


def test_files_that_are_none_of_the_formats_say_what_is_read(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(write(tmp_path / "other.json", {"rows": [1, 2, 3]}))
    assert str(info.value) == (
        f"load_trace: {tmp_path / 'other.json'}: "
        "the file must be a budgetloop trace (with 'format': 'budgetloop-trace') or a run "
        "load_trace imports: OTLP JSON (an object with resourceSpans, or JSON Lines of them), an "
        "openai-agents trace export, pydantic-ai's messages JSON, an Anthropic Messages log, "
        "OpenAI Responses input items, or a Chat Completions message log (a list of messages, or "
        "an object with messages), got an object that is none of these."
    )
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(write(tmp_path / "other.json", [1, 2]))
    assert str(info.value).endswith("got a list that is none of these.")
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(
            write(tmp_path / "log.json", [{"role": "user", "content": "hi"}]), format="otlp"
        )
    assert str(info.value) == (
        f"load_trace: {tmp_path / 'log.json'}: the file must be an object, got list."
    )
    with pytest.raises(
        ValueError,
        match=r"^load_trace: format must be one of 'budgetloop', 'otlp', 'openai-agents', "
        r"'pydantic-ai', 'anthropic', 'responses', 'chat' or None, got 'jsonl'\.$",
    ):
        load_trace(PEERS / "pydantic_ai_spans_otlp.json", format="jsonl")
    with pytest.raises(
        TypeError, match=r"^load_traces: format must be one of .* or None, got int\.$"
    ):
        load_traces(PEERS / "pydantic_ai_spans_otlp.json", format=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(PEERS / "pydantic_ai_spans_otlp.json", format="budgetloop")
    assert str(info.value) == (
        f"load_trace: {PEERS / 'pydantic_ai_spans_otlp.json'}: format must be "
        "'budgetloop-trace', got None: not a budgetloop trace."
    )


def span_file(*attributes: tuple[str, Any]) -> dict[str, Any]:
    """OTLP JSON of one span with these attributes (key, AnyValue)."""
    span = {"traceId": "t1", "spanId": "s1", "name": "chat", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [{"key": k, "value": v} for k, v in attributes]}  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def own_span_file(*attributes: tuple[str, Any]) -> dict[str, Any]:
    """As ``span_file``, a span budgetloop's exporter wrote (its instrumentation scope)."""
    document = span_file(*attributes)
    document["resourceSpans"][0]["scopeSpans"][0]["scope"] = {"name": "budgetloop"}
    return document


CHAT_SPAN = ("gen_ai.operation.name", {"stringValue": "chat"})
SPAN = "resourceSpans[0].scopeSpans[0].spans[0].attributes"
NESTED: dict[str, Any] = {"stringValue": "x"}
for _ in range(17):
    NESTED = {"arrayValue": {"values": [NESTED]}}
AGENTS_TRACE = {"object": "trace", "id": "t1"}
AGENTS_USAGE = {
    "input_tokens": 10,
    "output_tokens": 1,
    "input_tokens_details": {"cached_tokens": 12},
}


@pytest.mark.parametrize(
    ("fmt", "document", "said"),
    [
        ("anthropic", {"messages": [{"role": "system", "content": "Be brief."}]},
         "messages[0].role must be user or assistant, got 'system'."),
        ("anthropic", [{"role": "user", "content": [{"type": "image"}]}],
         "[0].content[0].type must be one of text, tool_use, tool_result, thinking, "
         "redacted_thinking, got 'image'."),
        ("anthropic", [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image"}]}]}],
         "[0].content[0].content[0].type must be 'text', got 'image'."),
        ("responses", [{"type": "web_search_call"}],
         "[0].type must be one of message, function_call, function_call_output, reasoning, "
         "got 'web_search_call'."),
        ("responses", [{"type": "message", "content": "hi"}],
         "[0].role must be a string, got nothing."),
        ("pydantic-ai", [{"kind": "response", "parts": [{"part_kind": "video"}]}],
         "[0].parts[0].part_kind must be one of text, tool-call, builtin-tool-return, "
         "builtin-tool-call, retry-feedback, instruction, instruction-delta, "
         "tool-availability-delta, capability-load-delta, model-settings-delta, "
         "instruction-digest, instruction-baseline, thinking, compaction, file, speech, "
         "got 'video'."),
        ("pydantic-ai", [{"kind": "response", "parts": [], "usage": {
            "input_tokens": 10, "cache_read_tokens": 15, "output_tokens": 1}}],
         "[0].usage.input_tokens must be at least the 15 tokens read from and written to the "
         "cache, got 10."),
        ("openai-agents", [AGENTS_TRACE, {"object": "trace.span", "trace_id": "t1", "id": "s1",
                                          "span_data": {"type": "generation"}}],
         "[1].started_at must be an ISO 8601 time, got nothing."),
        ("openai-agents", [AGENTS_TRACE, {"object": "trace.span", "trace_id": "t1", "id": "s1",
                                          "started_at": "2025-01-01T00:00:00Z",
                                          "span_data": {"type": "generation",
                                                        "usage": AGENTS_USAGE}}],
         "[1].span_data.usage.input_tokens must be at least the 12 tokens read from and "
         "written to the cache, got 10."),
        ("otlp", span_file(CHAT_SPAN, ("gen_ai.usage.input_tokens", {"intValue": "10"}),
                           ("gen_ai.usage.output_tokens", {"intValue": "1"}),
                           ("gen_ai.usage.cache_read.input_tokens", {"intValue": "11"})),
         f"{SPAN}['gen_ai.usage.input_tokens'].value must be at least the 11 tokens read from "
         "and written to the cache, got 10."),
        ("otlp", span_file(CHAT_SPAN, ("x", NESTED)),
         f"{SPAN}['x'].value{'.arrayValue.values[0]' * 17} must be a value with arrays nested "
         "at most 16 deep, got one nested deeper."),
        ("otlp", span_file(CHAT_SPAN, ("x", {"doubleValue": None})),
         f"{SPAN}['x'].value.doubleValue must be a number, got None."),
        ("otlp", own_span_file(CHAT_SPAN, ("gen_ai.request.temperature", {"stringValue": "hot"})),
         f"{SPAN}['gen_ai.request.temperature'].value must be a finite number, got str."),
        ("otlp", own_span_file(CHAT_SPAN, ("gen_ai.request.top_p", {"doubleValue": float("nan")})),
         f"{SPAN}['gen_ai.request.top_p'].value must be a finite number, got nan."),
        ("otlp", own_span_file(CHAT_SPAN, ("gen_ai.request.seed", {"doubleValue": 7.0})),
         f"{SPAN}['gen_ai.request.seed'].value must be an int, got float."),
        ("otlp", own_span_file(CHAT_SPAN, ("gen_ai.request.stop_sequences",
                                           {"stringValue": "END"})),
         f"{SPAN}['gen_ai.request.stop_sequences'].value must be a list of strings, got str."),
        ("otlp", own_span_file(CHAT_SPAN, ("budgetloop.request.settings", {"stringValue": "[1]"})),
         f"{SPAN}['budgetloop.request.settings'].value must be an object, got list."),
        ("otlp", own_span_file(CHAT_SPAN, ("budgetloop.request.settings",
                                           {"stringValue": '{"seed": NaN}'})),
         f"{SPAN}['budgetloop.request.settings'].value must be JSON data, got the number nan."),
        ("otlp", own_span_file(("gen_ai.operation.name", {"stringValue": "invoke_agent"}),
                               ("budgetloop.min_output_tokens", {"intValue": "0"})),
         f"{SPAN}['budgetloop.min_output_tokens'].value must be an int >= 1, got 0."),
        ("otlp", span_file(("openinference.span.kind", {"stringValue": "LLM"}),
                           ("llm.model_name", {"intValue": "3"})),
         f"{SPAN}['llm.model_name'].value must be a string or None, got int."),
    ],
)  # fmt: skip
def test_a_wrong_field_of_each_format_is_named_in_the_one_grammar(
    fmt: str, document: Any, said: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "run.json", document)
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(path, format=fmt)  # type: ignore[arg-type]
    assert str(info.value) == f"load_trace: {path}: {said}"


def test_a_json_lines_file_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    line = json.dumps(span_file(CHAT_SPAN))
    path.write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(path, format="chat")
    assert str(info.value) == (
        f"load_trace: {path}: the file must be one JSON document for format='chat' (a Chat "
        "Completions message log), got JSON Lines."
    )
    path.write_text(f"{line}\n{{bad\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be") as info:
        load_traces(path)
    assert str(info.value) == (
        f"load_traces: {path}:2: the line must be JSON, got text that is not (Expecting "
        "property name enclosed in double quotes: line 1 column 2 (char 1))."
    )


# -- several runs in one file ---------------------------------------------------------------------


def test_a_file_of_several_runs_says_how_many_and_load_traces_reads_them(tmp_path: Path) -> None:
    spans = (PEERS / "pydantic_ai_spans_otlp.json").read_text()
    other = json.loads(spans)
    for scoped in other["resourceSpans"][0]["scopeSpans"]:
        for span in scoped["spans"]:
            span["traceId"] = "f" * 32
            for attribute in span["attributes"]:
                if attribute["key"] == "gen_ai.conversation.id":
                    attribute["value"] = {"stringValue": "second"}
    lines = tmp_path / "two.jsonl"
    lines.write_text(json.dumps(json.loads(spans)) + "\n" + json.dumps(other) + "\n")
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(lines)
    assert str(info.value) == (
        f"load_trace: {lines}: the file must be a trace of one run, got 2 runs; "
        "load_traces(path) returns every run a file holds, as a list."
    )
    both = load_traces(lines)
    assert [r.run_id for r in both] == ["01a232d8-7e6f-7750-8220-afd19ac88cf3", "second"]
    assert [r.format() for r in both] == [PEER_RUN, PEER_RUN]
    exported = json.loads((PEERS / "openai_agents_trace_export.json").read_text())
    again = copy.deepcopy(exported)
    for item in again:
        item["trace_id" if item["object"] == "trace.span" else "id"] = "trace_other"
    agents = write(tmp_path / "agents.json", {"data": exported + again})  # as its exporter posts
    assert [r.run_id for r in load_traces(agents)] == [
        "trace_59ae4a70f65e4fdb896caede6070a45d",
        "trace_other",
    ]
    assert load_traces(PEERS / "budgetloop_export_otlp.json")[0].stop is Stop.MAX_COST_USD
    empty = write(tmp_path / "empty.json", {"resourceSpans": []})
    assert load_traces(empty) == []
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(empty)
    assert str(info.value) == (
        f"load_trace: {empty}: the file must be a trace of one run, got no run (no model call); "
        "load_traces(path) returns every run a file holds, as a list."
    )


# -- hostile files ----------------------------------------------------------------------------------

WRONG: tuple[Any, ...] = (None, True, -1, 2.5, "x", [], {}, [1], {"x": 1}, 10**400, "1e999")


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from nodes(inner, (*path, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from nodes(inner, (*path, i))


def changed(data: Any, path: tuple[Any, ...], wrong: Any) -> Any:
    out = copy.deepcopy(data)
    if not path:
        return wrong
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = wrong
    return out


@pytest.mark.parametrize(
    "name",
    [
        "pydantic_ai_spans_otlp.json",
        "openai_agents_trace_export.json",
        "pydantic_ai_messages_openai_chat.json",
        "budgetloop_export_otlp.json",
    ],
)
def test_every_wrong_field_is_refused_naming_the_file_or_loads_usable(
    name: str, tmp_path: Path
) -> None:
    data = json.loads((PEERS / name).read_text())
    path = tmp_path / name
    refused = loaded = 0
    unnamed: list[tuple[Any, ...]] = []
    paths = list(nodes(data))
    for where in paths[:: max(1, len(paths) // 60)]:  # about 60 places, each with every wrong
        for wrong in WRONG:
            write(path, changed(data, where, wrong))
            try:
                results = load_traces(path)
            except ValueError as exc:
                named = str(exc).startswith(f"load_traces: {path}: ")
                unnamed += [] if named else [(where, wrong, str(exc))]
                refused += 1
                continue
            for result in results:  # what loads is usable: formatted, saved and loaded again
                text = result.format()
                again = Result.from_dict(json.loads(json.dumps(result.to_dict())))
                assert again.format() == text
            loaded += 1
    assert unnamed == []
    assert refused > 50
    assert loaded > 50


EMBEDDED = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions",
            "gen_ai.system_instructions")  # fmt: skip


def test_every_wrong_field_inside_the_json_an_attribute_holds_is_refused_or_usable(
    tmp_path: Path,
) -> None:
    data = json.loads((PEERS / "pydantic_ai_spans_otlp.json").read_text())
    path = tmp_path / "spans.json"
    refused = loaded = 0
    unnamed: list[tuple[Any, ...]] = []
    for span_index, span in enumerate(data["resourceSpans"][0]["scopeSpans"][0]["spans"][:3]):
        for attribute_index, attribute in enumerate(span["attributes"]):
            if attribute["key"] not in EMBEDDED:
                continue
            inner = json.loads(attribute["value"]["stringValue"])
            for where in list(nodes(inner))[1:]:
                for wrong in WRONG:
                    mutated = copy.deepcopy(data)
                    target = mutated["resourceSpans"][0]["scopeSpans"][0]["spans"][span_index]
                    value = json.dumps(changed(inner, where, wrong))
                    target["attributes"][attribute_index]["value"] = {"stringValue": value}
                    write(path, mutated)
                    try:
                        result = load_trace(path)
                    except ValueError as exc:
                        named = str(exc).startswith(
                            f"load_trace: {path}: "
                        ) and f"['{attribute['key']}'].value" in str(exc)
                        unnamed += [] if named else [(where, wrong, str(exc))]
                        refused += 1
                        continue
                    result.format()
                    Result.from_dict(json.loads(json.dumps(result.to_dict())))
                    loaded += 1
    assert unnamed == []
    assert refused > 100
    assert loaded > 100


def test_nothing_in_an_imported_file_is_evaluated(tmp_path: Path) -> None:
    payload = "__import__('os').system('touch pwned')"
    log = [
        {"role": "user", "content": payload},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": payload, "arguments": payload}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": payload},
        {"role": "assistant", "content": payload},
    ]  # fmt: skip
    result = load_trace(write(tmp_path / "log.json", log))
    assert result.tool_calls[0].raw_arguments == payload
    assert result.tool_calls[0].result == payload
    assert result.answer == payload
    assert not (tmp_path / "pwned").exists()
    assert not Path("pwned").exists()


def test_deep_nesting_and_huge_numbers_are_value_errors(tmp_path: Path) -> None:
    deep = "[" * 5000 + '"leaf"' + "]" * 5000
    for document in (
        '{"resourceSpans": ' + deep + "}",
        '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": ' + deep + "}]",
    ):
        path = tmp_path / "deep.json"
        path.write_text(document, encoding="utf-8")
        with pytest.raises(ValueError, match=rf"^load_trace: {re.escape(str(path))}: "):
            load_trace(path)
    spans = json.loads((PEERS / "pydantic_ai_spans_otlp.json").read_text())
    attributes = spans["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    for attribute in attributes:
        if attribute["key"] == "gen_ai.usage.input_tokens":
            attribute["value"] = {"intValue": "9" * 400}
    with pytest.raises(ValueError, match="400 digits") as info:
        load_trace(write(tmp_path / "big.json", spans))
    assert str(info.value) == (
        f"load_trace: {tmp_path / 'big.json'}: resourceSpans[0].scopeSpans[0].spans[0]."
        "attributes['gen_ai.usage.input_tokens'].value.intValue must be an int >= 0 below "
        "2**63, got 400 digits."
    )
    for attribute in attributes:
        if attribute["key"] == "gen_ai.usage.input_tokens":
            attribute["value"] = {"intValue": "1200"}
        if attribute["key"] == "gen_ai.output.messages":
            attribute["value"] = {"stringValue": "[" * 200_000 + "]" * 200_000}
    with pytest.raises(ValueError, match="must be") as info:
        load_trace(write(tmp_path / "nested.json", spans))
    assert str(info.value) == (
        f"load_trace: {tmp_path / 'nested.json'}: resourceSpans[0].scopeSpans[0].spans[0]."
        "attributes['gen_ai.output.messages'].value must be JSON nested at most 100 levels "
        "deep, got JSON nested too deeply to read."
    )


# -- budgetloop's own spans come back --------------------------------------------------------------


@needs_otel
@given(scenarios())
def test_budgetloops_own_spans_import_back_to_the_same_format(s: Scenario) -> None:
    built = build(s)
    result = run(built.model, PROMPT, **built.kwargs)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "spans.json", otlp_json(result))
        back = load_trace(path)
    assert back.format() == result.format()
    assert back.run_id == result.run_id
    assert [s.usage for s in back.steps] == [s.usage for s in result.steps]
    assert [s.cost_usd for s in back.steps] == [s.cost_usd for s in result.steps]


@needs_otel
def test_the_round_trip_keeps_ids_projections_and_the_budget(tmp_path: Path) -> None:
    from tests.otel_support import ceiling_run

    result = ceiling_run().run()
    back = load_trace(write(tmp_path / "spans.json", otlp_json(result)))
    assert back.format() == result.format()
    assert (back.budget, back.max_output_tokens, back.cost_usd) == (
        result.budget,
        result.max_output_tokens,
        result.cost_usd,
    )
    assert [s.projection for s in back.steps] == [s.projection for s in result.steps]
    assert [(s.model, s.response_id, s.finish_reason) for s in back.steps] == [
        (s.model, s.response_id, s.finish_reason) for s in result.steps
    ]
    assert back.tools == tuple(result.tools)
    assert back.imported.lacks == ("price",)  # type: ignore[union-attr]
    assert first_divergence(back, result) is None
    replayed = replay(back, price=Price(2.5, 10.0, cache_read_per_mtok=1.25))
    assert replayed.format() == result.format()


@needs_otel
def test_a_run_the_input_token_ceiling_stopped_imports_back_with_its_stop_and_budget(
    tmp_path: Path,
) -> None:
    from tests.otel_support import ceiling_run

    ample = ceiling_run().run()
    limit = [s.projection.input_tokens for s in ample.steps if s.projection][1]
    budget = Budget(max_steps=8, max_cost_usd=0.02, max_input_tokens=limit)
    result = ceiling_run().fork(0, budget=budget).run()  # the second request fits, no third
    assert (result.stop, len(result.steps)) == ("max_input_tokens", 2)
    attributes = otlp_json(result)["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]
    said = {a["key"]: a["value"] for a in attributes["attributes"]}
    assert said["budgetloop.budget.max_input_tokens"] == {"intValue": str(limit)}
    assert said["budgetloop.stop"] == {"stringValue": "max_input_tokens"}
    back = load_trace(write(tmp_path / "spans.json", otlp_json(result)))
    assert (back.stop, back.budget, back.detail) == (result.stop, budget, result.detail)
    assert back.format() == result.format()


@needs_otel
def test_the_round_trip_keeps_each_persons_decision(tmp_path: Path) -> None:
    from tests.core.test_approvals import decided_run

    result = decided_run()
    spans = otlp_json(result)
    tools = [
        {a["key"]: a["value"] for a in span["attributes"]}
        for scope in spans["resourceSpans"][0]["scopeSpans"]
        for span in scope["spans"]
        if span["name"].startswith("execute_tool")
    ]
    assert [t.get("budgetloop.tool.approval") for t in tools] == [
        None,
        {"stringValue": "edited"},
        {"stringValue": "denied"},
    ]
    assert tools[2]["budgetloop.tool.status"] == {"stringValue": "denied"}
    back = load_trace(write(tmp_path / "spans.json", spans))
    assert back.format() == result.format()
    assert [(c.status, c.approval, c.result) for c in back.steps[0].tool_calls] == [
        (c.status, c.approval, c.result) for c in result.steps[0].tool_calls
    ]
    assert back.steps[0].tool_calls[1].arguments == {"to": "bob", "amount": 900.0}


@needs_otel
def test_the_round_trip_keeps_the_settings_min_output_tokens_and_a_fitted_turn(
    tmp_path: Path,
) -> None:
    """A run fitted from its first turn, with every kind of setting: the import has the
    run's figure (not the fitted one), the projection as fitted, the same settings and
    ``min_output_tokens``; its replay sends those settings and fits the turn again."""
    from budgetloop import ScriptedModel, start

    settings = {"temperature": 0, "top_p": 0.9, "seed": 7, "stop": "END",
                "tool_choice": "required", "parallel_tool_calls": False,
                "anthropic": {"top_k": 5, "metadata": {"user_id": "u-1"}}}  # fmt: skip
    price = Price(3.0, 15.0)
    model = ScriptedModel(["a" * 9000], price=price, max_output_tokens=1000)
    budget = Budget(max_cost_usd=price.cost(start(model, "go").projection.input_tokens, 312))
    result = run(model, "go", budget=budget, min_output_tokens=300, settings=settings)
    assert result.request(0).max_output_tokens == 312
    back = load_trace(write(tmp_path / "spans.json", otlp_json(result)))
    assert back.options == {"settings": settings, "min_output_tokens": 300}
    assert back.max_output_tokens == 1000
    assert back.steps[0].projection == result.steps[0].projection
    assert back.request(0) == result.request(0)
    assert back.format() == result.format()
    replayed = replay(back, price=price)
    assert replayed.request(0).settings == settings
    assert replayed.options["settings"] == settings
    assert replayed.options["min_output_tokens"] == 300
    assert replayed.steps[0].projection == result.steps[0].projection
    assert replayed.format() == result.format()
    again = load_trace(write(tmp_path / "again.json", otlp_json(back)))
    assert (again.options, again.max_output_tokens) == (back.options, 1000)


@needs_otel
def test_a_list_of_stop_sequences_comes_back_a_list(tmp_path: Path) -> None:
    from budgetloop import ScriptedModel

    result = run(ScriptedModel(["ok"]), "go", settings={"stop": ["a", "b"], "seed": 0})
    back = load_trace(write(tmp_path / "spans.json", otlp_json(result)))
    assert back.options == {"settings": {"stop": ["a", "b"], "seed": 0}}


def test_other_frameworks_request_attributes_are_not_budgetloops_settings(tmp_path: Path) -> None:
    """A peer's span names its own temperature; its run was not budgetloop's, so a replay is
    not sent it as settings (a model that takes none would be refused)."""
    document = span_file(CHAT_SPAN, ("gen_ai.request.temperature", {"doubleValue": 0.2}),
                         ("budgetloop.request.settings", {"stringValue": '{"seed": 1}'}))  # fmt: skip
    assert load_trace(write(tmp_path / "spans.json", document)).options == {}


# -- an imported run in budgetloop's tools ---------------------------------------------------------


def test_replay_says_where_a_ceiling_would_have_stopped_an_imported_run() -> None:
    for name in ("pydantic_ai_spans_otlp.json", "openai_agents_trace_export.json"):
        imported = load_trace(PEERS / name)
        whole = replay(imported, price=PRICE, max_output_tokens=500)
        assert (whole.stop, len(whole.steps)) == (Stop.ANSWERED, 3)
        assert whole.cost_usd == pytest.approx(
            PRICE.usage_cost(budgetloop_usage(1200, 60, 0))
            + PRICE.usage_cost(budgetloop_usage(1400, 40, 1000))
            + PRICE.usage_cost(budgetloop_usage(1600, 20, 1200))
        )
        stopped = replay(
            imported, budget=Budget(max_cost_usd=0.008), price=PRICE, max_output_tokens=500
        )
        assert (stopped.stop, len(stopped.steps)) == (Stop.MAX_COST_USD, 1)
        assert stopped.detail is not None
        assert stopped.detail.startswith("no turn to read the results fits: next turn projected")
        assert [c.status for c in stopped.steps[0].tool_calls] == ["skipped"]
    with pytest.raises(
        ValueError, match=r"^replay: price must be a Price with Budget\(max_cost_usd=\.\.\.\)"
    ):
        replay(imported, budget=Budget(max_cost_usd=0.01), max_output_tokens=500)


def test_replay_takes_max_output_tokens_from_the_source_when_it_has_one() -> None:
    imported = load_trace(PEERS / "budgetloop_export_otlp.json")
    same = replay(imported, price=PRICE)
    assert [s.projection.output_tokens for s in same.steps if s.projection] == [500] * 4
    assert replay(imported, price=PRICE, max_output_tokens=500).format() == same.format()
    with pytest.raises(
        ValueError,
        match=r"^replay: max_output_tokens must be left out for this imported run, got 100: its source recorded 500",
    ):
        replay(imported, price=PRICE, max_output_tokens=100)


def test_budget_report_reads_a_folder_of_imported_runs(tmp_path: Path) -> None:
    for name in ("pydantic_ai_spans_otlp.json", "openai_agents_trace_export.json",
                 "budgetloop_export_otlp.json"):  # fmt: skip
        shutil.copy(PEERS / name, tmp_path / name)
    report = budget_report(tmp_path)
    assert report.names == (
        "budgetloop_export_otlp.json",
        "openai_agents_trace_export.json",
        "pydantic_ai_spans_otlp.json",
    )
    assert report.unknown_cost == report.names[1:]
    assert report.stops == {"max_cost_usd": report.names[:1], "answered": report.names[1:]}
    assert "run cost               unknown" in str(report)
    replayed = [replay(load_trace(tmp_path / n), price=PRICE, max_output_tokens=500)
                for n in report.names[1:]]  # fmt: skip
    priced = budget_report(replayed, percentiles=[50])
    assert priced.unknown_cost == ()
    assert priced.max_steps == {50: 3}
    assert priced.cost_usd[50] == pytest.approx(0.00895)


def test_first_divergence_compares_an_imported_run_with_a_budgetloop_one() -> None:
    pydantic = load_trace(PEERS / "pydantic_ai_spans_otlp.json")
    agents = load_trace(PEERS / "openai_agents_trace_export.json")
    assert first_divergence(pydantic, agents) is None  # the same run, told by two frameworks
    ours = replay(pydantic, price=PRICE, max_output_tokens=500)
    assert first_divergence(pydantic, ours) is None
    shorter = replay(pydantic, budget=Budget(max_steps=2), price=PRICE, max_output_tokens=500)
    # stopped by max_steps=2, the replay never ran step 1's convert, which the source's run did
    assert first_divergence(agents, shorter) == 1
    assert [c.status for c in shorter.steps[1].tool_calls] == ["skipped"]


WIDGETS = installed("ipywidgets")


@pytest.mark.skipif(not WIDGETS, reason="needs ipywidgets (the widgets extra)")
def _cuts(document: Any) -> Iterator[Any]:
    """Every prefix of a peer file: of its list of messages, items or trace entries, or of
    its spans in time order (each also with any one span before the cut left out)."""
    if isinstance(document, list):
        yield from (document[:n] for n in range(1, len(document) + 1))
        return
    scope = document["resourceSpans"][0]["scopeSpans"][0]
    spans = sorted(scope["spans"], key=lambda s: int(s["startTimeUnixNano"]))
    for n in range(1, len(spans) + 1):
        for kept in [spans[:n], *(spans[:i] + spans[i + 1 : n] for i in range(n))]:
            cut = {**scope, "spans": kept}
            yield {"resourceSpans": [{**document["resourceSpans"][0], "scopeSpans": [cut]}]}


def replays_to_its_end(imported: Result) -> None:
    """``replay`` gives back a Result for an imported run, and one whose source recorded its
    end ends as the source did, having taken every recorded step; a recorded reply that asked
    for no tools is the loop's answer, as in any run (its source may have asked again)."""
    again = replay(imported)
    assert isinstance(again, Result)
    answered = next((s.index for s in imported.steps[:-1] if not s.tool_calls), None)
    if answered is not None:
        assert (again.stop, len(again.steps)) == (Stop.ANSWERED, answered + 1)
    elif imported.stop is not None:
        assert (again.stop, again.error) == (imported.stop, imported.error)
        assert len(again.steps) == len(imported.steps)


def test_every_peer_file_cut_anywhere_replays_to_the_end_it_recorded(tmp_path: Path) -> None:
    cuts = 0
    for peer in sorted(PEERS.glob("*.json")):
        for n, document in enumerate(_cuts(json.loads(peer.read_text(encoding="utf-8")))):
            path = write(tmp_path / f"{peer.stem}-{n}.json", document)
            try:
                runs = load_traces(path)
            except ValueError:  # a cut that holds no run (a trace export of no spans yet)
                continue
            for imported in runs:
                replays_to_its_end(imported)
                cuts += 1
    assert cuts >= 80


@given(imported_logs())
def test_an_imported_log_cut_anywhere_replays_to_the_end_it_recorded(
    log: tuple[str, Any],
) -> None:
    fmt, document = log
    with TemporaryDirectory() as folder:
        runs = load_traces(write(Path(folder) / "log.json", document), format=fmt)
    for imported in runs:
        replays_to_its_end(imported)


def test_replay_of_budgetloops_own_spans_with_no_price_ends_at_their_cost_stop() -> None:
    imported = load_trace(PEERS / "budgetloop_export_otlp.json")
    assert (imported.price, imported.budget.max_cost_usd) == (None, 0.02)
    again = replay(imported)  # the spans keep the cost limit, not the price to project with
    assert (again.stop, again.detail, len(again.steps)) == (
        Stop.MAX_COST_USD,
        imported.detail,
        4,
    )
    assert again.cost_usd == imported.cost_usd == 0.01205  # each step billed as recorded
    priced = replay(imported, price=PRICE)  # with a price, the replay's own cost limit decides
    assert priced.stop is Stop.MAX_COST_USD
    assert priced.budget.max_cost_usd == 0.02


def test_a_langgraph_run_its_recursion_limit_ended_after_a_turn_with_tool_calls_replays(
    tmp_path: Path,
) -> None:
    # LangGraph's state ``messages`` as langchain_core.messages.convert_to_openai_messages
    # writes them: the graph raised GraphRecursionError after the agent node asked for a tool
    # and before the tools node ran it. The log records no end, so the run has none.
    def asks(call_id: str) -> dict[str, Any]:
        arguments = json.dumps({"isin": "SE0000108656"})
        call = {"type": "function", "id": call_id,
                "function": {"name": "price", "arguments": arguments}}  # fmt: skip
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    log = [
        {"role": "system", "content": "You are a pricing agent."},
        {"role": "user", "content": "What is SE0000108656 worth in USD?"},
        asks("call_a1"),
        {"role": "tool", "content": "118.4", "tool_call_id": "call_a1", "name": "price"},
        asks("call_a2"),
    ]
    imported = load_trace(write(tmp_path / "langgraph.json", log))
    assert (imported.stop, len(imported.steps)) == (None, 2)
    assert [c.status for c in imported.steps[1].tool_calls] == ["skipped"]
    again = replay(imported)
    assert (again.stop, len(again.steps)) == (None, 2)
    assert again.detail == (
        "replay: the run goes on past the 2 recorded steps, and what the model said next was "
        "never recorded"
    )
    assert [(c.status, c.result) for c in again.steps[0].tool_calls] == [("ok", "118.4")]
    assert again.steps[1].tool_calls[0].error == (
        "LookupError: price: the recorded run has no result for this call (it was not run "
        "there), so a replay cannot say what the tool would have returned"
    )


def test_the_viewers_open_an_imported_run_and_say_what_it_lacks() -> None:
    pytest.importorskip("anywidget", reason="the viewers are the widgets extra")
    from budgetloop_widgets import CompareView, TraceView

    imported = load_trace(PEERS / "openai_agents_trace_export.json")
    view = TraceView(imported)
    from tests.viewer_support import decode

    data = decode(view.data)  # what the page gets: the banner, in words
    header = "\n".join(data["strings"][i] for _, i in data["runs"][0]["banner"])
    assert (
        "imported from openai-agents trace pricer-demo (openai-agents, openai_agents_trace_export.json)"
        in header
    )
    assert (
        "the source has no cost, projections, price, budget, max_output_tokens, tool schemas"
        in header
    )
    assert "3 steps taken · cost unknown" in header
    ours = replay(imported, budget=Budget(max_steps=2), price=PRICE, max_output_tokens=500)
    compare = CompareView(imported, ours, names=("openai-agents", "budgetloop"))
    assert compare.divergence == 1  # the replay's max_steps=2 left step 1's convert unrun
    assert compare.selected == 1  # the page opens where the runs part
    html = imported._repr_html_()
    assert "imported from openai-agents trace pricer-demo" in html
    assert "3 steps taken · cost unknown" in html


@needs_otel
def test_an_imported_run_exports_with_no_cost_it_never_had() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from budgetloop.otel import export_trace

    imported = load_trace(PEERS / "pydantic_ai_spans_otlp.json")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(imported, provider)
    finished = exporter.get_finished_spans()
    assert [s.name for s in finished][-1] == "invoke_agent"
    for span in finished:
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.conversation.id"] == imported.run_id
        assert not {"budgetloop.cost_usd", "budgetloop.step.cost_usd", "mlflow.llm.cost",
                    "budgetloop.step.projected_input_tokens"} & set(attributes)  # fmt: skip
    assert finished[-1].status.status_code is StatusCode.OK  # it answered


def test_an_imported_run_is_resumed_and_the_fork_names_it() -> None:
    from budgetloop import ScriptedModel, resume

    def price(isin: str) -> float:
        """Look up the last price for an instrument."""
        return 118.4

    def convert(amount: float, rate: float) -> float:
        """Convert an amount of money at an exchange rate."""
        return round(amount * rate, 2)

    imported = load_trace(PEERS / "openai_agents_trace_export.json")
    model = ScriptedModel(["About 10.77 USD."], price=PRICE, max_output_tokens=100)
    session = resume(imported, model, tools=[price, convert], at=2)
    assert [m.role for m in session.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    result = session.run()
    assert (result.stop, result.answer, result.forked_from) == (
        Stop.ANSWERED,
        "About 10.77 USD.",
        imported.run_id,
    )
    # the source's steps had no known cost: the new step's is known, the run's stays unknown
    assert [s.cost_usd for s in result.steps[:2]] == [None, None]
    assert result.steps[2].cost_usd == PRICE.usage_cost(result.steps[2].usage)  # type: ignore[arg-type]
    assert result.cost_usd is None
    with pytest.raises(
        TypeError, match=r"^load_traces: path must be a str or os\.PathLike path, got int\.$"
    ):
        load_traces(3)  # type: ignore[arg-type]


def test_a_log_whose_tool_messages_name_nothing_pairs_them_in_order(tmp_path: Path) -> None:
    log = [
        {"role": "user", "content": "two lookups"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "price", "arguments": '{"isin": "A"}'}},
            {"type": "function", "function": {"name": "rate", "arguments": '{"to": "USD"}'}},
        ]},
        {"role": "tool", "content": "1.0"},
        {"role": "tool", "content": "2.0"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    result = load_trace(write(tmp_path / "log.json", log))
    assert [(c.name, c.id, c.result) for c in result.tool_calls] == [
        ("price", "", "1.0"),
        ("rate", "", "2.0"),
    ]
    assert "tool call ids" in result.imported.lacks  # type: ignore[union-attr]
    assert result.format().splitlines()[-1] == "stop=answered tools=2 failed=0 cost=unknown"


@pytest.mark.timeout(60)
def test_a_long_run_pairs_its_calls_without_going_quadratic(tmp_path: Path) -> None:
    # 20,000 calls paired by order and name: 1 s here; comparing each with every model call
    # took 160 s
    log: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(20_000):
        call = {
            "type": "function",
            "function": {"name": "step", "arguments": json.dumps({"i": i})},
        }
        log += [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "content": str(i)}]  # fmt: skip
    log.append({"role": "assistant", "content": "done"})
    result = load_trace(write(tmp_path / "long.json", log))
    assert len(result.steps) == 20_001
    assert all(
        c.result == str(c.arguments["i"]) for c in result.tool_calls if c.arguments is not None
    )
    assert len(result.tool_calls) == 20_000


@pytest.mark.timeout(60)  # pairing by search took minutes: 47 s for 64,000 calls on one core
def test_a_chat_log_of_many_calls_and_results_that_name_none_pairs_them_in_order(
    tmp_path: Path,
) -> None:
    n = 64_000
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "t", "arguments": "{}"}} for i in range(n)]  # fmt: skip
    log: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    log += [{"role": "tool", "content": f"r{i}"} for i in range(n)]  # no tool_call_id
    log.append({"role": "assistant", "content": "done"})
    first, last = load_trace(write(tmp_path / "log.json", log)).steps
    assert [c.result for c in first.tool_calls[:: n // 4]] == ["r0", "r16000", "r32000", "r48000"]
    assert (first.tool_calls[-1].id, first.tool_calls[-1].result) == ("c63999", "r63999")
    assert last.text == "done"


def test_parallel_calls_to_one_tool_pair_with_the_function_span_of_their_own_input(
    tmp_path: Path,
) -> None:
    exported = json.loads((PEERS / "openai_agents_trace_export.json").read_text())
    generation = next(i for i in exported if i.get("span_data", {}).get("type") == "generation")
    asked = next(o for o in generation["span_data"]["output"] if o.get("type") == "function_call")
    other = {**asked, "arguments": '{"isin": "SE0000000001"}', "call_id": "call_1b", "id": "fc_1b"}
    generation["span_data"]["output"].append(other)
    ran = next(i for i in exported if i.get("span_data", {}).get("type") == "function")
    first = copy.deepcopy(ran)  # the second call's run, started (and logged) before the first's
    first["id"] = "span_other_run"
    first["span_data"] = {**ran["span_data"], "input": '{"isin": "SE0000000001"}', "output": "7.5"}
    first["started_at"] = generation["ended_at"]
    exported.insert(exported.index(ran), first)
    result = load_trace(write(tmp_path / "agents.json", exported))
    calls = result.steps[0].tool_calls
    assert [(c.id, c.raw_arguments, c.result) for c in calls] == [
        ("call_1", '{"isin": "SE0000108656"}', "118.4"),
        ("call_1b", '{"isin": "SE0000000001"}', "7.5"),
    ]  # each with the run whose input is its own, whichever started first
