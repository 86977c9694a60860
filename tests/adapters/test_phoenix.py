"""budgetloop's spans in a real Arize Phoenix (issue 20), read back through its REST API.

Phoenix runs from a venv of its own (``.venv-phoenix``, which ``.ci/run`` makes; about 1 GB, so
it is kept out of the project's venv), bound to 127.0.0.1 on free ports, its database in a temp
dir, with its telemetry and network features off. A run with a failed tool, a coerced argument,
a skipped call and a cost stop is sent over OTLP/HTTP with ``content=True``; Phoenix must show
the span kinds, the token counts, each model call's output message (Phoenix drops them when a
message has no ``finish_reason``), the tool descriptions, the run's ERROR status with the stop,
and one session named by the run's id.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PHOENIX_PYTHON = Path(
    os.environ.get("BUDGETLOOP_PHOENIX_PYTHON", ROOT / ".venv-phoenix" / "bin" / "python")
)
PROJECT = "budgetloop-test"
try:
    HAVE_EXPORTER = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
except ModuleNotFoundError:  # no opentelemetry at all
    HAVE_EXPORTER = False

pytestmark = [
    pytest.mark.skipif(
        not PHOENIX_PYTHON.exists(),
        reason=f"no Phoenix at {PHOENIX_PYTHON}: .ci/run installs arize-phoenix into "
        ".venv-phoenix (python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install "
        "arize-phoenix)",
    ),
    pytest.mark.skipif(not HAVE_EXPORTER, reason="needs the OTLP/HTTP exporter (the dev extra)"),
    pytest.mark.timeout(300),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # loopback only
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on loopback for this module; its base URL."""
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_ENABLE_MCP_SERVER": "false",
        "PHOENIX_AGENTS_DISABLE_WEB_ACCESS": "true",
        "PHOENIX_AGENTS_DISABLE_BASH": "true",
        "PHOENIX_AGENTS_DISABLE_GITHUB": "true",
    }
    log = (folder / "phoenix.log").open("wb")
    server = subprocess.Popen(
        [str(PHOENIX_PYTHON), str(ROOT / "tests" / "phoenix_launch.py")],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # its database migrations take a few seconds
        while True:
            if server.poll() is not None:
                pytest.fail(f"Phoenix exited ({server.returncode}); see {folder / 'phoenix.log'}")
            try:
                get(f"{base}/v1/projects")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"Phoenix did not answer in 180 s; see {folder / 'phoenix.log'}")
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def spans_of(base: str, count: int) -> list[dict[str, Any]]:
    """The project's spans, once ``count`` of them have arrived."""
    deadline = time.monotonic() + 60
    while True:
        try:
            found: list[dict[str, Any]] = get(f"{base}/v1/projects/{PROJECT}/spans?limit=1000")[
                "data"
            ]
        except urllib.error.HTTPError:  # the project exists once its first span is stored
            found = []
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def test_phoenix_shows_a_run_that_hit_its_ceiling_whole(phoenix: str) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from budgetloop.otel import OtelHook
    from tests.otel_support import PROMPT, ceiling_run

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces"))
    )
    result = ceiling_run(on_step=OtelHook(provider, content=True, agent_name="pricer")).run()
    provider.shutdown()
    assert (result.stop, len(result.failed), len(result.skipped)) == ("max_cost_usd", 1, 1)

    spans = sorted(spans_of(phoenix, 9), key=lambda s: (s["start_time"], s["span_kind"] != "LLM"))
    kinds = [s["span_kind"] for s in spans]
    assert sorted(kinds) == ["AGENT"] + ["LLM"] * 4 + ["TOOL"] * 4
    agent = next(s for s in spans if s["span_kind"] == "AGENT")
    chats = [s for s in spans if s["span_kind"] == "LLM"]
    tools = sorted((s for s in spans if s["span_kind"] == "TOOL"),
                   key=lambda s: s["attributes"]["tool.id"])  # fmt: skip

    # the run: ERROR, with the stop as its error and its detail as the message; its prompt
    assert (agent["name"], agent["status_code"]) == ("invoke_agent pricer", "ERROR")
    assert agent["status_message"] == result.detail
    assert agent["attributes"]["error.type"] == "max_cost_usd"
    assert agent["attributes"]["input.value"] == PROMPT

    # each model call: its token counts and its output message, with the calls it asked for
    usage = [s.usage for s in result.steps]
    assert [
        (c["attributes"]["llm.token_count.prompt"], c["attributes"]["llm.token_count.completion"],
         c["attributes"]["llm.token_count.prompt_details.cache_read"])
        for c in chats
    ] == [(u.input_tokens, u.output_tokens, u.cache_read_tokens) for u in usage if u]  # fmt: skip
    assert [c["attributes"]["llm.output_messages.0.message.content"] for c in chats] == [
        s.text for s in result.steps
    ]
    assert {c["attributes"]["llm.output_messages.0.message.finish_reason"] for c in chats} == {
        "tool_call"
    }
    assert [
        c["attributes"]["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"]
        for c in chats
    ] == ["price", "convert", "convert", "convert"]

    # each tool: its description; the failed one ERROR with the exception
    described = [(t["attributes"]["tool.id"], t["attributes"]["tool.name"],
                  t["attributes"]["tool.description"]) for t in tools]  # fmt: skip
    assert described == [
        ("call_1", "price", "Look up the last price for an instrument."),
        ("call_2", "price", "Look up the last price for an instrument."),
        ("call_3", "convert", "Convert an amount of money at an exchange rate."),
        ("call_4", "convert", "Convert an amount of money at an exchange rate."),
    ]
    failed = [t for t in tools if t["status_code"] == "ERROR"]
    assert [(t["attributes"]["tool.id"], t["status_message"]) for t in failed] == [
        ("call_2", "LookupError: SE0000000000 is not in the price list")
    ]

    # one session, named by the run's id, holding the run's one trace
    sessions = get(f"{phoenix}/v1/projects/{PROJECT}/sessions")["data"]
    assert [(s["session_id"], len(s["traces"])) for s in sessions] == [(result.run_id, 1)]
    assert sessions[0]["token_count_prompt"] == sum(u.input_tokens for u in usage if u)
    assert {s["attributes"]["session.id"] for s in spans} == {result.run_id}
