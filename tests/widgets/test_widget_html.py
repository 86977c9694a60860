"""budgetloop_widgets.to_html and a bare result in a notebook: the viewer component in a page,
its data inline, a Content-Security-Policy that allows its one script and one stylesheet by
hash and nothing else, and a file never written over."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Completion, Result, ScriptedModel, ToolCall, run, tool
from budgetloop.display import columns_of
from budgetloop_widgets import to_html
from budgetloop_widgets._page import (
    FIRST_STEPS,
    PACKED,
    PAGE_CSS,
    asset,
    reading_document,
    script_json,
)

XSS = "<img src=x onerror=alert(1)>"
BREAKOUT = "</script><script>window.__pwned=1</script>"


@tool
def read(topic: str) -> str:
    """Read about a topic.

    Args:
        topic: what to read about
    """
    return f"{XSS} about {topic} {BREAKOUT}"


def finished() -> Result:
    model = ScriptedModel(
        [Completion(text=f"reading {XSS}", tool_calls=[ToolCall("read", {"topic": "a"})]), "done"]
    )
    return run(model, "go", tools=[read])


def inline(page: str, tag: str, attrs: str = "") -> list[str]:
    """The text inside each ``<tag attrs>`` element of the page."""
    return re.findall(rf"<{tag}{attrs}>(.*?)</{tag}>", page, re.S)


def packed(page: str) -> tuple[str, dict[str, Any]]:
    """The data element's text in a file ``to_html`` wrote, and the data it holds: JSON,
    gzipped, in base64."""
    [text] = inline(page, "script", f' type="application/json" data-encoding="{PACKED}"')
    return text, json.loads(gzip.decompress(base64.b64decode(text, validate=True)))


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_to_html_writes_the_viewer_from_a_result_a_dict_or_a_path(tmp_path: Path) -> None:
    result = finished()
    saved = tmp_path / "trace.json"
    result.save(saved)
    pages = []
    for n, source in enumerate((result, result.to_dict(), saved, str(saved))):
        out = tmp_path / f"page{n}.html"
        assert to_html(source, out, title="trace <1>") is None
        pages.append(out.read_text(encoding="utf-8"))
    first = pages[0]
    assert first.startswith("<!DOCTYPE html>")
    assert "<title>trace &lt;1&gt;</title>" in first
    assert len(set(pages)) == 1  # the same page, whatever the source
    modules = inline(first, "script", ' type="module"')
    assert len(modules) == 1
    assert modules[0].startswith(asset("viewer.js"))
    assert first.count("<script") == 2  # the module and its data, nothing else
    data, doc = packed(first)
    assert doc["kind"] == "trace"
    markup = first.replace(data, "")
    assert not re.search(r"\s(src|href)=", markup)  # nothing to load


def test_the_policy_allows_the_one_script_and_the_stylesheets_by_hash(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    to_html(finished(), out)
    page = out.read_text(encoding="utf-8")
    [policy] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    rules = dict(rule.strip().split(" ", 1) for rule in policy.split(";"))
    assert rules["default-src"] == "'none'"
    [module] = inline(page, "script", ' type="module"')
    assert rules["script-src"] == sha(module)
    styles = inline(page, "style")
    assert set(styles) == {asset("viewer.css"), PAGE_CSS}
    assert rules["style-src"].split() == [sha(asset("viewer.css")), sha(PAGE_CSS)]
    assert "unsafe" not in policy


def test_what_the_model_and_tools_wrote_stays_inside_the_data(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = finished()
    to_html(result, out)
    page = out.read_text(encoding="utf-8")
    assert XSS not in page
    assert BREAKOUT not in page
    data, doc = packed(page)
    assert not set("<>&") & set(data)
    strings = doc["strings"]
    assert f"{XSS} about a {BREAKOUT}" in strings  # the text, whole, as text
    assert script_json({"s": "a</script>&b"}) == '{"s":"a\\u003c/script\\u003e\\u0026b"}'
    # where no script runs (an untrusted notebook, nbviewer), a summary in plain HTML
    assert '<div class="blv-fallback"><div><b>budgetloop trace</b></div>' in page
    assert "Run ended: answered · 2 steps taken" in page


def test_to_html_never_writes_over_a_file(tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    out.write_text("keep me", encoding="utf-8")
    assert to_html(finished(), out) == str(tmp_path / "run.1.html")
    assert (tmp_path / "run.1.html").read_text(encoding="utf-8") == "keep me"
    assert to_html(finished(), out) == str(tmp_path / "run.2.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "run.2.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_to_html_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="to_html: source must be a Result"):
        to_html(42, tmp_path / "x.html")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_html: path must be a str or a path, got int"):
        to_html(finished(), 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_html: title must be a str, got bytes"):
        to_html(finished(), tmp_path / "x.html", title=b"t")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^to_html: path must be the path of a file .*, a dir"):
        to_html(finished(), tmp_path)
    with pytest.raises(ValueError, match=r"^to_html: path must be a path in a folder that exists"):
        to_html(finished(), tmp_path / "no" / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_a_bare_result_in_a_notebook_is_the_same_viewer() -> None:
    result = finished()
    html = result._repr_html_()
    assert html.startswith('<div class="blv-page" data-blv="">')
    assert html.count("<script") == 2
    [module] = inline(html, "script", ' type="module"')
    assert module == asset("viewer.js") + "\nboot();\n"
    assert "Content-Security-Policy" not in html  # a page's policy, not an output's
    assert XSS not in html


def test_the_page_of_a_long_run_of_distinct_steps_stays_small(tmp_path: Path) -> None:
    """100,000 steps, each with its own text, arguments and a 450-character result
    (bench_widgets.py's trace; a page of 103 MB with its data as plain JSON): one file of at
    most 40 MB, its data gzipped and in base64, whole."""
    folder = str(Path(__file__).resolve().parents[2] / "benchmarks")
    sys.path.insert(0, folder)
    try:
        from bench_widgets import varied_file
    finally:
        sys.path.remove(folder)
    trace, out = tmp_path / "varied.jsonl", tmp_path / "varied.html"
    varied_file(str(trace), 100_000)
    to_html(trace, out)
    size = out.stat().st_size
    assert size <= 40_000_000, size
    page = out.read_text(encoding="utf-8")
    _, doc = packed(page)
    strings = doc["strings"]
    assert len(doc["runs"][0]["steps"]["text"]) == 100_000
    assert "reading part 99999" in strings
    assert "notes on part 99999. " * 25 in strings
    assert len(strings) == len(set(strings))  # each text once
    [first] = inline(page, "script", ' type="application/json" data-first=""')
    assert len(first) < 400_000  # the first 2,000 steps' rows: drawn before the rest is read
    assert len(json.loads(first)["runs"][0]["steps"]["text"]) == FIRST_STEPS


def test_a_long_runs_page_holds_its_first_steps_apart(tmp_path: Path) -> None:
    from tests.widgets.test_widgets import big_trace

    for steps, apart in ((FIRST_STEPS, 0), (FIRST_STEPS + 1, 1)):
        path = tmp_path / f"{steps}.html"
        result = big_trace(steps)
        to_html(result, path)
        page = path.read_text(encoding="utf-8")
        found = inline(page, "script", ' type="application/json" data-first=""')
        assert len(found) == apart
    first = json.loads(found[0])
    expected, _ = reading_document(columns_of(result.steps[:FIRST_STEPS]), "budgetloop trace")
    assert first == json.loads(script_json(expected))
    assert first["runs"][0]["partial"] is True
    _, whole = packed(page)
    assert len(whole["runs"][0]["steps"]["text"]) == FIRST_STEPS + 1
