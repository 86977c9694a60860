"""Issue 6 in a real browser: a trace and a live run full of markup, ANSI escapes and NUL bytes
are shown as text in JupyterLab, and nothing in them runs, opens a dialog or hides the page.

A control cell renders raw markup in a plain ``ipywidgets.HTML`` and must run its handler: it
proves that unescaped text in a widget would run here, so the absence of ``window.__pwned`` is
the escaping at work, not a browser that runs nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetloop import Stop
from budgetloop._forms._printable import printable
from tests.hostile_run import HOSTILE, PAYLOADS, make_trace
from tests.jupyter_browser import (
    ARTIFACTS,
    Server,
    chromium,
    jupyter_server,
    open_and_run_all,
    wait_until_idle,
    write_notebook,
)

pytestmark = pytest.mark.browser

SHOWN = printable(HOSTILE)  # what the widgets must show: the markup as text, controls escaped
CONTROL = '<img src=y onerror="window.__control=1">'

CELLS = (
    "import ipywidgets as widgets\n"
    "from hostile_run import make_session\n"
    "from budgetloop_widgets import RunPanel, TraceView",
    'TraceView("hostile.json")',
    'late = TraceView("hostile.json", title="step 1")\nlate.show(1)\nlate.add_class("bl-late")\nlate',
    "panel = RunPanel(make_session())\npanel",
    "panel.step_button.click()\npanel.step_button.click()\nprint(panel.session.result.stop.value)",
    f"widgets.HTML({CONTROL!r})",
)

COUNTS = """() => ({
    img: document.querySelectorAll('img[src="x"]').length,
    svg: document.querySelectorAll('svg[onload]').length,
    js: document.querySelectorAll('a[href^="javascript:"]').length,
    scripts: Array.from(document.querySelectorAll('script'))
        .filter(s => s.textContent.includes('__pwned')).length,
    outputScripts: document.querySelectorAll('.jp-OutputArea script').length,
    onerror: document.querySelectorAll('.jp-OutputArea [onerror]').length,
    pwned: typeof window.__pwned,
    control: window.__control,
    display: getComputedStyle(document.body).display,
})"""


def test_the_trace_is_hostile_where_it_can_be() -> None:
    assert len(SHOWN) > 200
    assert "\\x1b[31m" in SHOWN
    assert "\\x00" in SHOWN
    for payload in PAYLOADS[:5]:
        assert payload in SHOWN


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    result = make_trace(str(root / "hostile.json"))
    assert result.stop is Stop.MODEL_ERROR
    assert [c.status for c in result.steps[0].tool_calls] == ["ok", "error", "error", "error"]
    shutil.copy(Path(__file__).parents[1] / "hostile_run.py", root / "hostile_run.py")
    write_notebook(root / "hostile.ipynb", *CELLS)
    with jupyter_server("lab", root, tmp_path) as server:
        yield server


def test_hostile_text_is_shown_not_run_in_jupyterlab(lab: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with chromium(lab, tmp_path / "profile") as browser:
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/hostile.ipynb"))
        views = page.locator(".blv:not(.bl-steplist)")  # the two TraceViews, not the panel's list
        expect(views).to_have_count(2, timeout=30_000)
        trace, late = views.nth(0), page.locator(".bl-late")
        panel = page.locator(".bl-panel")
        expect(panel.locator(".bl-stop-head")).to_contain_text(
            "Run ended: answered", timeout=15_000
        )
        wait_until_idle(page)
        expect(page.get_by_text("answered", exact=True)).to_be_visible()
        # the positive control ran: raw markup in an HTML widget does run here
        page.wait_for_function("() => window.__control === 1", timeout=10_000)

        # the trace, step 0: the model's text, each call's arguments, result and error
        expect(trace.locator("pre.blv-text")).to_have_text(f"thinking {SHOWN}")
        outcomes = trace.locator("td.blv-outcome")
        expect(outcomes).to_have_count(4)
        expect(outcomes.nth(0)).to_contain_text(f"echo: {SHOWN}")
        expect(outcomes.nth(1)).to_contain_text(f"RuntimeError: exploded: {SHOWN[:150]}")
        expect(outcomes.nth(2)).to_contain_text(f"echo.{SHOWN[:150]}")
        expect(trace.locator("td.blv-raw").nth(3)).to_contain_text(f'"text": "{PAYLOADS[0]}"')
        expect(trace.locator("td.blv-checked").nth(0)).to_contain_text('<img src=x onerror=\\"')
        # the context the step was sent: asked of the kernel when the step was opened
        expect(trace.locator(".blv-context table")).to_contain_text(f"system {SHOWN}")
        expect(trace.locator(".blv-context table")).to_contain_text(f"user {SHOWN}")
        expect(trace.locator(".blv-banner")).to_contain_text(
            f"error: ValueError: the model broke: {SHOWN}"
        )
        # the trace, step 1: the model's error
        expect(late.locator(".blv-card .blv-error")).to_have_text(
            f"⚠ model error: ValueError: the model broke: {SHOWN}"
        )
        # the request as sent: asked of the kernel too
        trace.get_by_role("button", name="request as sent").click()
        expect(trace.locator("pre.blv-request")).to_contain_text(PAYLOADS[0])
        # the live panel after two steps from a cell: its answer, text and calls
        expect(panel.locator(".bl-stop pre.bl-text")).to_have_text(f"the answer {SHOWN}")
        expect(panel.locator(".blv-row")).to_have_count(2)
        panel.locator(".blv-row").first.click()
        expect(panel.locator("td.blv-outcome").first).to_contain_text(f"echo: {SHOWN}")
        expect(panel.locator(".blv-context").last).to_contain_text(f"[echo] echo: {SHOWN}")
        expect(page.locator(".blv", has_text="<img src=x")).to_have_count(3)

        counts = page.evaluate(COUNTS)
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "hostile.png"), full_page=True)
    assert counts == {
        "img": 0,
        "svg": 0,
        "js": 0,
        "scripts": 0,
        "outputScripts": 0,
        "onerror": 1,  # the control's own image, and only it
        "pwned": "undefined",
        "control": 1,
        "display": "block",
    }
    assert browser.dialogs == []
    assert browser.errors == []
