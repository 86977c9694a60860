"""budgetloop_widgets.to_html: one self-contained file, readable with no kernel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetloop import Completion, Result, ScriptedModel, ToolCall, run, tool
from budgetloop_widgets import to_html

XSS = "<img src=x onerror=alert(1)>"


@tool
def read(topic: str) -> str:
    """Read about a topic.

    Args:
        topic: what to read about
    """
    return f"{XSS} about {topic}"


def finished() -> Result:
    model = ScriptedModel(
        [Completion(text=f"reading {XSS}", tool_calls=[ToolCall("read", {"topic": "a"})]), "done"]
    )
    return run(model, "go", tools=[read])


def test_to_html_writes_one_page_from_a_result_a_dict_or_a_path(tmp_path: Path) -> None:
    result = finished()
    saved = tmp_path / "trace.json"
    result.save(saved)
    pages = []
    for n, source in enumerate((result, result.to_dict(), saved, str(saved))):
        out = tmp_path / f"page{n}.html"
        to_html(source, out, title=f"trace <{n}>")
        pages.append(out.read_text(encoding="utf-8"))
    first = pages[0]
    assert first.startswith("<!DOCTYPE html>")
    assert "<title>trace &lt;0&gt;</title>" in first
    assert result._repr_html_() in first
    assert first.count("<script>") == 1
    assert "<img" not in first
    assert "default-src 'none'" in first
    assert not re.search(r"(src|href)=\"(?!#)", first)
    assert {p.replace(f"&lt;{n}&gt;", "") for n, p in enumerate(pages)} == {
        first.replace("&lt;0&gt;", "")
    }


def test_to_html_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="to_html: source must be a Result"):
        to_html(42, tmp_path / "x.html")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_html: path must be a str or a path, got int"):
        to_html(finished(), 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_html: title must be a str, got bytes"):
        to_html(finished(), tmp_path / "x.html", title=b"t")  # type: ignore[arg-type]
    assert not (tmp_path / "x.html").exists()
