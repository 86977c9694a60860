"""The pages say what is true: every test file docs/guarantees.md names is there, and every
```python snippet of the README runs as pasted (a sketch is marked so, and the marks are few)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
while not (ROOT / "docs").is_dir():
    ROOT = ROOT.parent
RUNNER = ROOT / "tests" / "snippet_run.py"
PAYLOADS = ROOT / "tests" / "fixtures" / "provider-payloads"
SKETCH = "<!-- sketch"  # the line before a fence that shows a shape, not code to run


def test_every_test_file_the_guarantees_cite_exists() -> None:
    page = (ROOT / "docs" / "guarantees.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"`(test_[a-z0-9_]+\.py)", page))
    present = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert len(cited) > 20
    assert sorted(cited - present) == []


@dataclass(frozen=True)
class Snippet:
    page: str
    heading: str
    line: int  # the fence's line, 1-based: the code starts on the next
    code: str
    sketch: bool

    def __str__(self) -> str:
        return f"{self.page}:{self.line} (under {self.heading!r})"


def python_snippets(page: str) -> list[Snippet]:
    """Every ```python fence of ``page``, with the heading it sits under and whether the line
    before it marks it a sketch."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found: list[Snippet] = []
    heading = before = ""
    opened: tuple[int, bool, bool] | None = None  # line, is python, is a sketch
    body: list[str] = []
    for number, text in enumerate(lines, 1):
        if opened is None and text.startswith("```"):
            opened, body = (number, text == "```python", before.startswith(SKETCH)), []
        elif opened is None:
            heading = text.lstrip("#").strip() if text.startswith("#") else heading
            before = text if text.strip() else before
        elif text == "```":
            line, is_python, sketch = opened
            if is_python:
                found.append(Snippet(page, heading, line, "\n".join(body) + "\n", sketch))
            opened, before = None, text
        else:
            body.append(text)
    assert opened is None, f"{page}:{opened[0]}: a fence that never closes"
    return found


README = python_snippets("README.md")


REPLIES = {  # a recorded final answer for every request, by the path it is sent to
    "/v1/chat/completions": "openai_chat_final_text",
    "/v1/messages": "anthropic_messages_final_text",
}


class Provider(BaseHTTPRequestHandler):
    """OpenAI and Anthropic on loopback, for a snippet that makes a client of their SDK."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        name = REPLIES.get(self.path)
        body = (PAYLOADS / f"{name}.json").read_bytes() if name else b'{"error": {}}'
        self.send_response(200 if name else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_readmes_sketches_are_the_two_it_means() -> None:
    # the loop's opening shape and the model's signature stand for code of the reader's own
    assert [(s.heading, s.sketch) for s in README if s.sketch] == [
        ("The shape of it", True),
        ("The model", True),
    ]
    assert len(README) >= 11


@pytest.mark.parametrize("snippet", [s for s in README if not s.sketch], ids=str)
def test_every_readme_snippet_runs_as_pasted(snippet: Snippet, provider: str) -> None:
    # issue 34, item 22: the approvals, typed-answer and MCP snippets failed as pasted
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OPENAI_BASE_URL": f"{provider}/v1",  # a snippet on a provider's SDK stays on loopback
        "OPENAI_API_KEY": "sk-readme-snippet",
        "ANTHROPIC_BASE_URL": provider,
        "ANTHROPIC_API_KEY": "sk-ant-readme-snippet",
        "NO_PROXY": "127.0.0.1",
    }
    sent = json.dumps({"page": snippet.page, "line": snippet.line, "code": snippet.code})
    out = subprocess.run(
        [sys.executable, str(RUNNER)], input=sent, capture_output=True, text=True,
        cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    if out.returncode == 3:
        pytest.skip(f"{snippet}: {out.stderr.strip()}")
    assert out.returncode == 0, f"{snippet} failed as pasted:\n{out.stdout}{out.stderr}"


def test_the_readmes_mcp_server_serves_its_folder_and_nothing_outside(tmp_path: Path) -> None:
    # the README's MCP snippet starts examples/files_server.py: a name never leaves its folder
    pytest.importorskip("mcp", reason="the MCP SDK is the mcp extra")
    from budgetloop import Completion, ScriptedModel, ToolCall, run
    from budgetloop.mcp import connect

    folder, outside = tmp_path / "files", tmp_path / "secret.txt"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha", encoding="utf-8")
    (folder / "sub").mkdir()
    outside.write_text("never read", encoding="utf-8")
    (folder / "link.txt").symlink_to(outside)
    asked = ["a.txt", "../secret.txt", str(outside), "link.txt", "sub", ".", "none.txt"]
    calls = [ToolCall("read_file", {"name": name}) for name in asked]
    model = ScriptedModel([Completion(tool_calls=[ToolCall("list_files", {}), *calls]), "done"])
    server = [sys.executable, str(ROOT / "examples" / "files_server.py"), str(folder)]
    with connect(server) as files:
        result = run(model, "read", tools=files.tools)
    listed, *read = result.steps[0].tool_calls
    assert (listed.status, listed.result) == ("ok", '["a.txt"]')
    assert [(c.status, c.result) for c in read[:1]] == [("ok", "alpha")]
    for call, name in zip(read[1:], asked[1:], strict=True):
        assert call.status == "error"
        assert call.error.endswith(
            f"read_file: name must be a file in the folder, got {name!r}."
        ), call.error
    assert "never read" not in json.dumps(result.to_dict())
