"""The viewer in a real browser: readable in JupyterLab's Dark theme, dollar amounts never set
as math, and the static HTML page opening with no network request and no script error."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from budgetloop import load_trace, tool
from budgetloop._forms._printable import printable
from budgetloop.display import step_head, why_text
from budgetloop_widgets import projection_text, to_html
from budgetloop_widgets._log import sent_counts
from tests.jupyter_browser import (
    ARGS,
    ARTIFACTS,
    CHROMIUM,
    ROOT,
    chromium,
    jupyter_server,
    need_chromium,
    open_and_run_all,
    stripped_copy,
    wait_until_idle,
    write_notebook,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

# WCAG contrast of an element's text against what is behind it: the colour (an SVG text's fill)
# composited over the first opaque background up its ancestors, over the page's white.
CONTRAST = """(el) => {
  const rgba = (s) => {
    // rgb(...) / rgba(...) in 0-255; color(srgb ...) (what color-mix computes to) in 0-1
    const m = s.match(/[\\d.]+(e-?\\d+)?/g).map(Number);
    const k = s.startsWith("color(") ? 255 : 1;
    return [m[0] * k, m[1] * k, m[2] * k, m.length > 3 ? m[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3]));
  const layers = [];
  for (let node = el; node; node = node.parentElement) {
    const bg = rgba(getComputedStyle(node).backgroundColor);
    if (bg[3] > 0) { layers.push(bg); }
    if (bg[3] >= 1) { break; }
  }
  let back = [255, 255, 255];
  for (const layer of layers.reverse()) { back = over(layer, back); }
  const style = getComputedStyle(el);
  const fore = over(rgba(el instanceof SVGElement ? style.fill : style.color), back);
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [a, b] = [lum(fore), lum(back)].sort((x, y) => y - x);
  return {ratio: (a + 0.05) / (b + 0.05), fore: fore.map(Math.round), back: back.map(Math.round)};
}"""


def test_the_panel_reads_in_the_dark_theme_and_dollars_stay_text(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    stripped_copy(ROOT / "notebooks" / "stepping.ipynb", root / "stepping.ipynb")
    with (
        jupyter_server("lab", root, tmp_path, theme="JupyterLab Dark") as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/stepping.ipynb"))
        panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=15_000
        )
        panel.get_by_role("button", name="Step", exact=True).click()
        expect(panel.locator(".blv-card-head")).to_contain_text("Step 0 ·", timeout=15_000)
        wait_until_idle(page)
        checked = {
            "model text": panel.locator("pre.blv-text").first,
            "table header": panel.locator(".blv-table th").first,
            "chart title": panel.locator("svg .bl-chart-title").first,
            "context text": panel.locator(".blv-context pre").first,
            "meter": panel.locator(".bl-projection").first,
        }
        for name, element in checked.items():
            seen = element.evaluate(CONTRAST)
            assert seen["ratio"] >= 4.5, f"{name}: {seen}"
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=str(ARTIFACTS / "panel-dark.png"))
        # the setup cell's prose: "The budget allows USD 0.03: try USD 0.05 ..."
        prose = page.locator(".jp-RenderedMarkdown p", has_text="The budget allows")
        expect(prose).to_contain_text("allows USD 0.03: try USD 0.05")
        amounts = page.locator(".jp-RenderedMarkdown p", has_text="USD 0.0")
        assert amounts.count() == 2
        assert (
            page.locator(
                ".jp-RenderedMarkdown mjx-container, .jp-RenderedMarkdown .MathJax"
            ).count()
            == 0
        )
        assert panel.locator("mjx-container, .MathJax").count() == 0
    assert browser.errors == []


@contextmanager
def static_page(
    tmp_path: Path, scheme: str = "light"
) -> Iterator[tuple[Page, list[str], list[str]]]:
    """A page of headless Chromium with no server: the requests it made and its errors."""
    from playwright.sync_api import sync_playwright

    need_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    requests: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=ARGS,
            color_scheme=scheme, viewport={"width": 1280, "height": 1100},
        )  # fmt: skip
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page, requests, errors
        finally:
            context.close()


def test_the_static_page_opens_offline_and_is_the_viewer(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    path = tmp_path / "trace.html"
    result = load_trace(ROOT / "notebooks" / "trace.json")
    to_html(result, path)
    steps = len(result.steps)
    with static_page(tmp_path) as (page, requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        expect(view.locator(".blv-row").first).to_be_visible()
        expect(page.locator(".blv-fallback")).to_be_hidden()  # the summary, until the script ran
        expect(view.locator(".blv-row")).to_have_count(steps)
        detail = view.locator(".blv-detail .blv-card-head")
        expect(detail).to_contain_text("Step 0 ·")
        view.locator(".blv-row", has_text="reading 3 more page").click()
        expect(detail).to_contain_text("Step 4 ·")
        # the context it was sent, from the page's own data (no kernel to ask)
        step, sent = result.steps[4], sent_counts(result)[4]
        assert step.usage is not None
        expect(view.locator(".blv-context-head")).to_have_text(
            f"{sent} messages; {step.projection.input_tokens:,} input tokens projected, "
            f"{step.usage.input_tokens:,} reported"
        )
        view.get_by_role("button", name="request as sent").click()
        expect(view.locator("pre.blv-request")).to_contain_text(
            f"Request of step 4: {sent} messages and 1 tool schema, as the trace holds them"
        )
        # the page words the step as the Python side does (the same formats and sentences)
        expect(view.locator(".blv-detail .blv-projection")).to_have_text(
            projection_text(step.projection)
        )
        expect(view.locator(".blv-detail .blv-projection + .blv-muted")).to_have_text(
            why_text(step.projection)  # what kind of figure it is, in the core's words
        )
        assert result.budget.max_steps is not None
        expect(view.locator(".blv-detail .blv-ceilings > span")).to_have_text(
            [
                f"steps taken 4 of max_steps {result.budget.max_steps:,}",
                f"seconds {sum(s.seconds for s in result.steps[:4]):.2f} (no max_seconds)",
                f"tool calls run {sum(len(s.tool_calls) for s in result.steps[:4])} "
                "(no max_tool_calls)",
                f"input tokens, next request {step.projection.input_tokens:,} "
                "(no max_input_tokens)",
            ]
        )
        expect(view.locator(".blv-detail .blv-card-head")).to_have_text(step_head(step))
        search = view.get_by_role("searchbox")
        search.press_sequentially("weath")
        expect(view.locator(".blv-count")).to_have_text(f"1 of {steps} steps match")
        expect(detail).to_contain_text("Step 1 ·")  # the chosen step follows the list
        search.fill("")
        view.locator("select").nth(1).select_option("error")  # the status filter
        expect(view.locator(".blv-row:not([hidden])")).to_have_count(1)
        view.locator("select").nth(1).select_option("")
        view.locator("button[data-jump='the stop']").click()
        expect(detail).to_contain_text(f"Step {steps - 1} ·")
        page.screenshot(path=str(ARTIFACTS / "static.png"), full_page=False)
    # the file, and the search's worker made from the page's own script: nothing else
    assert requests[0] == path.as_uri()
    assert [url.split(":", 1)[0] for url in requests[1:]] == ["blob"]
    assert errors == []  # the policy let the script and the styles in, and nothing failed


@pytest.mark.parametrize("workers", [True, False])
def test_the_static_pages_search_runs_in_a_worker_or_without_one(
    workers: bool, tmp_path: Path
) -> None:
    """The search's index is built once, in a Web Worker where the page can start one; where it
    cannot (no Worker here), the same search runs in the page, with the same answer."""
    from playwright.sync_api import expect

    from tests.widgets.test_widgets import big_trace

    path = tmp_path / "long.html"
    to_html(big_trace(3_000), path)
    with static_page(tmp_path) as (page, _requests, errors):
        started: list[str] = []
        page.on("worker", lambda worker: started.append(worker.url.split(":", 1)[0]))
        if not workers:
            page.add_init_script("delete window.Worker;")
        page.goto(path.as_uri())
        view = page.locator(".blv")
        detail = view.locator(".blv-detail .blv-card-head")
        expect(detail).to_contain_text("Step 0 ·")
        search = view.get_by_role("searchbox")
        search.fill("result 2718")
        expect(view.locator(".blv-count")).to_have_text("1 of 3,000 steps match")
        expect(detail).to_contain_text("Step 2718 ·")
        search.fill("result 271")  # a shorter query: not a narrowing of the last one
        expect(view.locator(".blv-count")).to_have_text("11 of 3,000 steps match")
        view.locator("select").nth(1).select_option("error")  # the search and a filter
        expect(view.locator(".blv-count")).to_have_text("0 of 3,000 steps match")
        view.locator("select").nth(1).select_option("")
        search.fill("")
        expect(view.locator(".blv-count")).to_have_text("3,000 steps")
    assert started == (["blob"] if workers else [])
    assert errors == []


def test_the_counts_are_written_as_the_python_side_writes_them(tmp_path: Path) -> None:
    # money is never written by the page: the core sends it as text (budgetloop.display)
    from budgetloop_widgets._page import asset
    from budgetloop_widgets._text import count

    counts = [0, 1, 999, 1000, 12433, -5000, 2**53, 0.25, 0.35, 1.05, 2.5, 1234.75, 1e21]
    rng = random.Random(19)
    counts += [rng.randint(0, 10**7) / 128 for _ in range(100)]  # ties, half to even
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto("about:blank")
        page.add_script_tag(
            content=asset("viewer.js") + "\nwindow.__blv = { count };", type="module"
        )
        page.wait_for_function("() => window.__blv !== undefined")
        counted = page.evaluate("(vs) => vs.map((v) => window.__blv.count(v))", counts)
    assert counted == [count(v) for v in counts]
    assert errors == []


def finding(ix: dict[str, Any], q: str) -> list[int]:
    """The steps a search for q finds, as the page's search must find them."""
    lower, c0, name, raw, out = ix["lower"], ix["c0"], ix["name"], ix["raw"], ix["out"]

    def has(sid: int) -> bool:
        return sid >= 0 and q in lower[sid]

    steps = []
    for i in range(len(c0)):
        calls = range(c0[i], c0[i + 1] if i + 1 < len(c0) else len(name))
        if (
            has(ix["text"][i])
            or has(ix["err"][i])
            or any(
                has(name[c]) or (raw is not None and (has(raw[c]) or has(out[c]))) for c in calls
            )
        ):
            steps.append(i)
    return steps


def test_a_search_typed_letter_by_letter_finds_what_a_search_from_scratch_finds(
    tmp_path: Path,
) -> None:
    # each letter typed narrows the last answer (only the strings it hit are looked at again);
    # a letter taken back, or a new word, is searched from scratch
    from budgetloop_widgets._page import asset

    rng = random.Random(41)
    words = ["ab", "abc", "b", "ca", "a b", "ÄbC", "x\ny", ""]
    strings = [rng.choice(words) + rng.choice(words) for _ in range(60)]
    cases = []
    for _ in range(40):
        n = rng.randint(0, 30)
        c0, calls = [], 0
        for _ in range(n):
            c0.append(calls)
            calls += rng.randint(0, 3)
        ids = lambda k: [rng.randint(-1, len(strings) - 1) for _ in range(k)]  # noqa: E731
        with_raw = rng.random() < 0.5
        ix = {
            "lower": [t.lower() for t in strings],
            "text": ids(n),
            "err": ids(n),
            "c0": c0,
            "name": [rng.randint(0, len(strings) - 1) for _ in range(calls)],
            "raw": ids(calls) if with_raw else None,
            "out": ids(calls) if with_raw else None,
        }
        typed, queries = "", []
        for _ in range(12):  # letters typed, taken back, and new words
            move = rng.random()
            if move < 0.6:
                typed += rng.choice("abcxy \n")
            elif move < 0.85:
                typed = typed[:-1]
            else:
                typed = rng.choice("abcxy")
            if typed:
                queries.append(typed)
        cases.append((ix, queries))
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto("about:blank")
        page.add_script_tag(
            content=asset("viewer.js") + "\nwindow.__blv = { stepsFinding };", type="module"
        )
        page.wait_for_function("() => window.__blv !== undefined")
        answers = page.evaluate(
            """(cases) => cases.map(([ix, queries]) => {
                const state = {};
                return queries.map((q) => Array.from(window.__blv.stepsFinding(ix, q, state)));
            })""",
            cases,
        )
    expected = [[finding(ix, q) for q in queries] for ix, queries in cases]
    assert answers == expected
    assert sum(len(found) for answer in expected for found in answer) > 500  # not all empty
    assert errors == []


def test_a_long_trace_puts_only_the_rows_in_view_in_the_page(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from tests.widgets.test_widgets import big_trace

    path = tmp_path / "long.html"
    to_html(big_trace(5_000), path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        detail = view.locator(".blv-detail .blv-card-head")
        expect(detail).to_contain_text("Step 0 ·")
        rows = view.locator(".blv-row:not([hidden])")
        assert rows.count() < 60  # the rows in view and a few more, not 5,000
        view.locator(".blv-scroll").focus()
        page.keyboard.press("End")
        expect(detail).to_contain_text("Step 4999 ·")
        expect(view.locator(".blv-row.blv-selected")).to_be_in_viewport()
        page.keyboard.press("PageUp")
        page.keyboard.press("k")
        expect(view.locator(".blv-row.blv-selected")).to_be_in_viewport()
        view.get_by_role("searchbox").fill("result 4321")
        expect(view.locator(".blv-count")).to_have_text("1 of 5,000 steps match")
        expect(detail).to_contain_text("Step 4321 ·")
        assert rows.count() < 60
    assert errors == []


def test_a_hostile_trace_is_text_in_the_static_page(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from tests.hostile_run import HOSTILE, make_trace

    path = tmp_path / "hostile.html"
    to_html(make_trace(str(tmp_path / "hostile.json")), path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        expect(view.locator(".blv-text")).to_have_text(f"thinking {printable(HOSTILE)}")
        expect(view.locator(".blv-outcome").first).to_contain_text(f"echo: {printable(HOSTILE)}")
        view.get_by_role("button", name="request as sent").click()
        expect(view.locator("pre.blv-request")).to_contain_text(printable(HOSTILE)[:40])
        view.locator(".blv-row").nth(1).click()  # the model error: nothing was charged
        expect(view.locator(".blv-card-head")).to_have_text(
            re.compile(
                r"^Step 1 · nothing charged: the model raised · no tokens reported · \d+\.\d{3} s$"
            )
        )
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("img[src='x'], svg[onload]").count() == 0
        assert page.evaluate("getComputedStyle(document.body).display") == "block"
    assert errors == []


def test_a_tampered_script_does_not_run(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    path = tmp_path / "trace.html"
    to_html(load_trace(ROOT / "notebooks" / "trace.json"), path)
    page_text = path.read_text(encoding="utf-8")
    path.write_text(page_text.replace("boot();", "boot(); "), encoding="utf-8")
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        expect(page.locator(".blv-fallback")).to_be_visible()  # the summary stays
        page.wait_for_timeout(500)
        assert page.locator(".blv-row").count() == 0
    assert any("Content Security Policy" in e for e in errors)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_static_page_follows_the_colour_scheme_and_reads(scheme: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from tests.widgets.test_browser_traceview import READ

    path = tmp_path / "trace.html"
    to_html(load_trace(ROOT / "notebooks" / "trace.json"), path)
    with static_page(tmp_path, scheme) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        view.locator(".blv-row", has_text="Checking the weather").click()
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 1 ·")
        background = view.evaluate("(el) => getComputedStyle(el).backgroundColor")
        assert background == ("rgb(21, 21, 21)" if scheme == "dark" else "rgb(255, 255, 255)")
        seen = {
            name: view.locator(selector).first.evaluate(CONTRAST)
            for name, selector in READ.items()
        }
        page.screenshot(path=str(ARTIFACTS / f"static-{scheme}.png"))
    assert {name: s for name, s in seen.items() if s["ratio"] < 4.5} == {}
    assert errors == []


MANY = """
from budgetloop import MemoryLedger, Price, ScriptedModel, run_many

model = ScriptedModel(["done"], repeat_last=True, price=Price(3000.0, 15000.0), max_output_tokens=5)
results = run_many(model, ["go"] * 6, concurrency=2, ledger=MemoryLedger(25.0))
"""


def test_run_manys_progress_line_is_not_set_as_math(tmp_path: Path) -> None:
    # issue 19, item 3: "spent $6.8685 of $25.0000" came out as "spent 6.8685𝑜𝑓25.0000"
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "many.ipynb", MANY)
    with (
        jupyter_server("lab", root, tmp_path) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/many.ipynb"))
        wait_until_idle(page)
        line = page.locator(".jp-OutputArea-output", has_text="6/6 runs")
        expect(line).to_contain_text("6/6 runs · answered 6", timeout=30_000)
        page.wait_for_timeout(2_000)  # MathJax typesets after a widget is drawn
        assert page.locator(".jp-OutputArea mjx-container, .jp-OutputArea .MathJax").count() == 0
        expect(line).to_contain_text(" of $25.00")
    assert browser.errors == []


def test_a_steps_card_says_what_it_said_when_the_python_side_drew_it(tmp_path: Path) -> None:
    # what tests/widgets/test_widget_views.py held of the cards drawn in Python, now that the viewer
    # draws them: the words, the marks, and markup as text
    from playwright.sync_api import expect

    from budgetloop import Budget, Message, Result, Stop, Usage
    from tests.widgets.test_widget_views import XSS, make_step, projection, record

    steps = (
        make_step(0),  # raw and checked arguments, a coercion, the result, the seconds
        make_step(1, usage=Usage(1300, 5)),  # reported 66 above the projection
        make_step(2, usage=None, error=f"RuntimeError: {XSS}", text=None, tool_calls=()),
        make_step(3, text="a" * 700, tool_calls=(
            record(status="skipped", arguments=None, coerced=(), error="the run stopped"),
            record(name=XSS, raw_arguments={XSS: XSS}, arguments={XSS: XSS}, coerced=(),
                   status="error", error=XSS),
            record(result="x" * 300, truncated=50_000_000),
        )),
    )  # fmt: skip
    result = Result(Stop.MAX_STEPS, None, steps, (Message("user", "go"),), 0.012, 2.0,
                    Budget(max_steps=4))  # fmt: skip
    path = tmp_path / "cards.html"
    to_html(result, path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        card = view.locator(".blv-card")
        rows = view.locator(".blv-row")
        expect(card.locator(".blv-card-head")).to_have_text(
            "Step 0 · $0.003 reported · 800 in / 40 out tokens reported · 0.500 s"
        )
        expect(card.locator(".blv-card-head + div")).to_have_text(
            f"before it, {projection_text(projection())}"
        )
        expect(card.locator("pre.blv-text")).to_have_text("Looking it up.")
        expect(card.locator("td.blv-raw")).to_have_text('{"amount": "118.4", "rate": 0.091}')
        expect(card.locator("td.blv-checked")).to_have_text(
            '{"amount": 118.4, "rate": 0.091}convert.amount (coerced)'
        )
        expect(card.locator("mark.blv-coerced")).to_have_text("convert.amount")
        expect(card.locator("td.blv-status")).to_have_text("✓ ok")
        expect(card.locator("td.blv-outcome")).to_have_text("10.77")
        expect(card.locator("td.blv-num")).to_have_text("0.250")
        expect(card.locator(".blv-warn")).to_have_count(0)
        rows.nth(1).click()
        expect(card.locator(".blv-warn")).to_have_text(
            "▲ under-projected: the model reported 66 input tokens more than projected"
        )
        expect(rows.nth(1).locator(".blv-under")).to_have_text("1,300 ▲")
        rows.nth(2).click()
        expect(card.locator(".blv-card-head")).to_have_text(
            "Step 2 · $0.003 charged at the projection · 1,234 in tokens projected, none "
            "reported · 0.500 s"
        )
        expect(card.locator(".blv-error")).to_have_text(f"⚠ model error: RuntimeError: {XSS}")
        rows.nth(3).click()
        expect(card.locator("pre.blv-text")).to_have_text("a" * 700)  # whole, and wrapped
        expect(card.locator("td.blv-status")).to_have_text(["↷ skipped", "✗ error", "✓ ok"])
        expect(card.locator("td.blv-checked").nth(0)).to_have_text("not checked")
        expect(card.locator("td code").nth(2)).to_have_text(XSS)  # the tool's name, as text
        expect(card.locator("td.blv-outcome").nth(1)).to_have_text(XSS)
        expect(card.locator("td.blv-outcome").nth(2)).to_have_text(
            "x" * 300 + "(cut for the model: 50,000,000 characters in all)"
        )
        assert page.locator(".blv img").count() == 0
    assert errors == []


def test_an_mcp_calls_server_is_shown_with_the_call_as_text(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from playwright.sync_api import expect

    from budgetloop import Completion, ScriptedModel, ToolCall, run
    from budgetloop.mcp import connect
    from tests.mcp_servers import demo

    server_object = demo()
    server_object._lowlevel_server.name = "<b>srv</b>"  # a server's name is its own text
    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("greet", {"name": "Ann"}, "c1")]), "ok"]
    )
    with connect(server_object) as server:
        result = run(model, "go", tools=server.tools)
    path = tmp_path / "mcp.html"
    to_html(result, path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        view.locator(".blv-row").first.click()
        expect(view.locator(".blv-calls .blv-server")).to_have_text("on MCP server <b>srv</b>")
        assert view.locator(".blv-calls b").count() == 0
    assert errors == []


def test_a_forks_view_marks_the_message_it_changed_and_says_so(tmp_path: Path) -> None:
    # issue 29, item 3: step 0 showed the tool result as it was, the edited value appeared only
    # in step 1's context, and nothing said the fork had changed it
    from playwright.sync_api import expect

    from budgetloop import Completion, Message, ScriptedModel, ToolCall, start, tool

    @tool
    def balance(account: str) -> str:
        """The balance of an account."""
        return "balance: -500.00 EUR"

    model = ScriptedModel(
        [Completion(tool_calls=[ToolCall("balance", {"account": "42"}, "b1")]), "overdrawn"]
    )
    session = start(model, "What is the balance of account 42?", tools=[balance])
    session.run()
    context = session.messages[:3]
    fixed = [
        *context[:2],
        Message("tool", "balance: 120.00 EUR", tool_call_id="b1", name="balance"),
    ]
    fork = session.fork(1, messages=fixed, complete=ScriptedModel(["in credit"]))
    result = fork.run()
    assert result.edited == (2,)
    path = tmp_path / "fork.html"
    to_html(result, path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        view.locator(".blv-row").nth(1).click()
        note = view.locator(".blv-detail .blv-edited-note")
        expect(note).to_have_text(
            'This run is a fork that changed message 2 (tool: balance), marked "edited by the '
            'fork" where a context shows it: the steps it kept show their calls as they ran, and '
            "the contexts sent after the fork hold the changed text."
        )
        marked = view.locator(".blv-detail tr.blv-edited")
        expect(marked).to_have_count(1)
        expect(marked).to_contain_text("tool · edited by the fork")
        expect(marked).to_contain_text("balance: 120.00 EUR")
        view.locator(".blv-row").nth(0).click()  # the kept step: its call as it ran, and the note
        expect(view.locator(".blv-detail")).to_contain_text("balance: -500.00 EUR")
        expect(view.locator(".blv-detail .blv-edited-note")).to_have_count(1)
        assert errors == []


def test_a_steps_tier_reasoning_and_catalog_price_are_shown(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, Usage, start, tool

    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return "kept"

    def session(price: Price) -> object:
        script = [
            Completion(
                tool_calls=[ToolCall("note", {"text": "x" * 400}, "c1")],
                usage=Usage(120, 90, reasoning_tokens=70),
            ),
            Completion("done", usage=Usage(260, 5)),
        ]
        model = ScriptedModel(script, max_output_tokens=10)
        return start(model, "hi", tools=[note], price=price, budget=Budget(max_cost_usd=1.0))

    first = session(Price(1.0, 1.0)).projection.input_tokens  # type: ignore[attr-defined]
    source = "genai-prices 0.2.3: example <b>model</b>"
    priced = Price(1.0, 1.0, tiers={first + 10: Price(2.0, 2.0)}, source=source)
    result = session(priced).run()  # type: ignore[attr-defined]
    note_text = result.steps[1].projection.tier_note
    path = tmp_path / "tiers.html"
    to_html(result, path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        expect(view.locator(".blv-line-price")).to_have_text(f"priced at: {source}")
        rows = view.locator(".blv-row")
        rows.nth(0).click()
        expect(view.locator(".blv-card-head")).to_contain_text(
            "120 in / 90 out tokens reported (70 of them reasoning)"
        )
        expect(view.locator(".blv-tier")).to_have_count(0)
        rows.nth(1).click()
        expect(view.locator(".blv-tier")).to_have_text(note_text)
        assert view.locator(".blv-line-price b").count() == 0
    assert errors == []


@tool
def read_notes_of_the_meeting(topic: str) -> str:
    """Read the notes of a meeting."""
    return f"notes on {topic}: " + "the budget was discussed at length, and then again " * 12


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_calls_table_keeps_words_whole_its_header_covers_and_off_buttons_look_off(
    tmp_path: Path, scheme: str
) -> None:
    # issue 29, items 6, 8 and 9: tool names broke mid-word ("read_n otes"), a seconds cell
    # split "0.250" over three lines, the sticky header left a strip scrolled text showed
    # through, and a disabled jump button looked enabled in the dark themes
    from budgetloop import Budget, Completion, ScriptedModel, ToolCall, start

    calls = [
        ToolCall("read_notes_of_the_meeting", {"topic": f"retry budget {i}"}, f"c{i}")
        for i in range(12)
    ]
    model = ScriptedModel([Completion(text="reading", tool_calls=calls), "done"])
    result = start(model, "go", tools=[read_notes_of_the_meeting], budget=Budget(max_steps=4))
    path = tmp_path / "calls.html"
    to_html(result.run(), path)
    with static_page(tmp_path, scheme) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        view.locator(".blv-row").first.click()
        table = view.locator(".blv-detail table.blv-calls")
        table.locator("tbody tr").first.wait_for()
        lines = page.evaluate(
            """(table) => [...table.querySelectorAll('tbody tr')].map((tr) => {
                const lines = (el) => {
                    const range = document.createRange();
                    if (el.nodeType === 3) { range.selectNode(el); } else { range.selectNodeContents(el); }
                    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
                };
                // the name wraps only between its parts ("read_", "notes_", ...): each on one line
                const parts = [...tr.querySelector('td code').childNodes].filter((n) => n.nodeType === 3);
                const whole = parts.every((part) => lines(part) === 1) && parts.length === 5;
                return [whole ? 1 : 0, lines(tr.lastElementChild), lines(tr.querySelector('td.blv-status'))];
            })""",
            table.element_handle(),
        )
        assert lines == [[1, 1, 1]] * 12  # the name's parts, the seconds, the status: whole
        words = page.evaluate(
            "(t) => [...t.querySelectorAll('tbody td.blv-outcome pre')].map((p) => p.textContent)",
            table.element_handle(),
        )
        assert all(w.startswith("notes on retry budget") for w in words)
        # scroll the detail until the header sticks: at its top edge only the header shows
        covered = page.evaluate(
            """(table) => {
                const pane = table.closest('.blv-detail');
                pane.scrollTop = table.offsetTop + 200;
                const th = table.querySelector('th');
                const top = pane.getBoundingClientRect().top + pane.clientTop;
                const x = th.getBoundingClientRect().left + 20;
                const at = (y) => document.elementFromPoint(x, y);
                return [0.5, 1.5, 3].map((dy) => th.contains(at(top + dy)));
            }""",
            table.element_handle(),
        )
        assert covered == [True, True, True]
        off = view.locator(".blv-jumps button:disabled").first
        on = view.locator(".blv-jumps button:enabled").first
        style = "(b) => [getComputedStyle(b).opacity, getComputedStyle(b).borderTopStyle]"
        assert page.evaluate(style, off.element_handle()) == ["0.55", "dashed"]
        assert page.evaluate(style, on.element_handle()) == ["1", "solid"]
        assert errors == []


@pytest.mark.parametrize("width", [1400, 1100])
def test_the_list_keeps_its_text_column_beside_the_detail_or_the_detail_goes_under(
    tmp_path: Path, width: int
) -> None:
    # issue 29, item 11: at 1,400 px with the detail beside the list, the list was narrower
    # than its columns and the text column was cut to about ten characters
    path = tmp_path / "trace.html"
    to_html(load_trace(ROOT / "notebooks" / "trace.json"), path)
    with static_page(tmp_path) as (page, _requests, errors):
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(path.as_uri())
        page.locator(".blv-row").first.wait_for()
        laid = page.evaluate(
            """() => {
                const scroll = document.querySelector('.blv-scroll');
                const list = document.querySelector('.blv-list').getBoundingClientRect();
                const detail = document.querySelector('.blv-detail').getBoundingClientRect();
                const text = document.querySelector('.blv-head .blv-c:last-child');
                return {cut: scroll.scrollWidth > scroll.clientWidth,
                        beside: Math.round(detail.top) === Math.round(list.top),
                        text: text.getBoundingClientRect().width / parseFloat(getComputedStyle(text).fontSize)};
            }"""
        )
        assert not laid["cut"]  # every column is in view
        assert laid["text"] >= 14  # the text column at least its 14em
        assert laid["beside"] == (width == 1400)  # beside where both fit, else under
        assert errors == []


@tool
def search_for(q: str) -> str:
    """Search for something: a long result each time."""
    return f"{q}: " + "found " * 50


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_context_policys_marks_read_in_light_and_dark(tmp_path: Path, scheme: str) -> None:
    from playwright.sync_api import expect

    from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, run
    from budgetloop.context import KeepLast

    hostile = "<img src=x onerror=alert(1)>"
    calls = [Completion(tool_calls=(ToolCall("search_for", {"q": f"{hostile}{i}"}, f"c{i}"),))
             for i in range(5)]  # fmt: skip
    result = run(ScriptedModel([*calls, "done"], price=Price(3.0, 15.0), max_output_tokens=50),
                 "find it", tools=[search_for], context=KeepLast(turns=2),
                 budget=Budget(max_steps=20))  # fmt: skip
    path = tmp_path / "trace.html"
    to_html(result, path)
    with static_page(tmp_path, scheme) as (page, _requests, errors):
        page.goto(path.as_uri())
        view = page.locator(".blv")
        view.locator(".blv-row").nth(4).click()
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 4 ·")
        dropped = view.locator("tr.blv-dropped")
        expect(dropped).to_have_count(4)  # step 4 was sent the head and the last two turns
        expect(dropped.locator(".blv-policy-mark")).to_have_text(
            [" · dropped by KeepLast(turns=2)"] * 4
        )
        expect(dropped.locator("del").nth(1)).to_contain_text(f"[search_for] {hostile}0: found")
        expect(view.locator(".blv-policy-note")).to_contain_text(
            "KeepLast(turns=2): 4 messages of the context not sent as they were in this "
            "step's request"
        )
        assert page.locator("img").count() == 0  # the hostile text is text
        for el in [dropped.locator(".blv-policy-mark").first, dropped.locator("del").first,
                   view.locator(".blv-policy-note")]:  # fmt: skip
            measured = el.evaluate(CONTRAST)
            assert measured["ratio"] >= 4.5, (scheme, measured)
        page.screenshot(path=str(ARTIFACTS / f"context-marks-{scheme}.png"), full_page=False)
    assert errors == []


def test_a_long_static_page_draws_its_first_steps_before_the_rest_is_read(
    tmp_path: Path,
) -> None:
    """A run longer than FIRST_STEPS: the page holds its first steps apart, drawn at once; the
    whole run replaces them once inflated. Were the whole run's data unreadable (here: cut),
    the first steps stay, and the page says why."""
    from playwright.sync_api import expect

    from budgetloop_widgets._page import FIRST_STEPS
    from tests.widgets.test_widgets import big_trace

    whole, cut = tmp_path / "long.html", tmp_path / "cut.html"
    to_html(big_trace(FIRST_STEPS + 500), whole)
    text = whole.read_text(encoding="utf-8")
    start = text.index('data-encoding="gzip-base64">') + len('data-encoding="gzip-base64">')
    cut.write_text(text[: start + 1000] + text[text.index("</script>", start) :], "utf-8")
    bad = tmp_path / "bad-first.html"  # its first steps' JSON broken: the whole run still comes
    at = text.index('data-first="">') + len('data-first="">')
    bad.write_text(text[:at] + "{not JSON" + text[text.index("</script>", at) :], "utf-8")
    with static_page(tmp_path) as (page, _requests, errors):
        page.goto(whole.as_uri())
        view = page.locator(".blv")
        expect(view.locator(".blv-count")).to_have_text("2,500 steps")
        expect(view.locator(".blv-banner")).to_contain_text("2,500 steps taken")
        expect(view.locator('[aria-busy="true"]')).to_have_count(0)
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 0 ·")
        assert page.locator(".blv-host").count() == 1
        page.goto(bad.as_uri())
        expect(view.locator(".blv-count")).to_have_text("2,500 steps")
        expect(view.locator(".blv-banner")).to_contain_text("2,500 steps taken")
        page.goto(cut.as_uri())
        expect(view.locator(".blv-count")).to_have_text("2,000 steps")
        expect(view.locator(".blv-banner")).to_contain_text(
            "Reading the rest of the run: its first 2,000 steps are shown"
        )
        expect(page.locator(".blv-fallback .blv-warn")).to_contain_text(
            "The viewer could not read its data:"
        )
        expect(view.locator(".blv-detail")).to_have_text(
            "step 0: its detail comes once the rest of the run is read"
        )
    assert [e for e in errors if "could not read" not in e] == []
