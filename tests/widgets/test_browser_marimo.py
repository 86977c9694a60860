"""TraceView in marimo, which runs anywidgets itself: a real `marimo run` server and Chromium.
The viewer opens a trace, searches as it is typed and jumps; the chosen step reaches Python.

It needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jupyter_browser import ARGS, ARTIFACTS, CHROMIUM, ROOT, marimo_app

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

APP = """
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    from budgetloop_widgets import TraceView

    view = mo.ui.anywidget(TraceView("trace.json", title="in marimo"))
    view
    return mo, view


@app.cell
def _(mo, view):
    mo.md(f"SELECTED {view.value['selected']}")
    return


if __name__ == "__main__":
    app.run()
"""


@contextmanager
def marimo_page(folder: Path, tmp_path: Path) -> Iterator[Page]:
    """The marimo app in ``folder`` opened in headless Chromium; the page raised no error."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with marimo_app(folder, tmp_path) as url, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 1400},
        )  # fmt: skip
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            yield page
        finally:
            context.close()
    assert errors == []


def test_traceview_in_marimo_opens_searches_and_jumps(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from budgetloop import load_trace

    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "app.py").write_text(APP, encoding="utf-8")
    shutil.copy(ROOT / "notebooks" / "trace.json", folder / "trace.json")
    steps = len(load_trace(folder / "trace.json").steps)
    with marimo_page(folder, tmp_path) as page:
        view = page.locator(".blv")  # inside marimo's shadow root: locators reach it
        expect(view.locator(".blv-row").first).to_be_visible(timeout=60_000)
        expect(view.locator(".blv-title")).to_have_text("in marimo")
        expect(view.locator(".blv-count")).to_have_text(f"{steps} steps")
        detail = view.locator(".blv-detail .blv-card-head")
        expect(detail).to_contain_text("Step 0 ·")
        # the search, as it is typed
        view.get_by_role("searchbox").press_sequentially("weather")
        expect(view.locator(".blv-count")).to_have_text(f"1 of {steps} steps match")
        expect(detail).to_contain_text("Step 1 ·")
        # a jump to a step the search hides clears it
        view.locator("button[data-jump='the stop']").click()
        expect(detail).to_contain_text(f"Step {steps - 1} ·")
        # the keys move, and the chosen step reaches Python: the next cell runs again
        view.locator(".blv-scroll").focus()
        page.keyboard.press("k")
        expect(detail).to_contain_text(f"Step {steps - 2} ·")
        expect(page.get_by_text(f"SELECTED {steps - 2}")).to_be_visible(timeout=30_000)
        view.screenshot(path=str(ARTIFACTS / "traceview-marimo.png"))


def test_a_long_trace_in_marimo_fills_in_after_its_first_steps(tmp_path: Path) -> None:
    """A saved trace of more than FIRST_STEPS: marimo draws its first steps, the page asks the
    kernel for the rest, and the whole run's new data reaches the page."""
    from playwright.sync_api import expect

    from tests.widgets.test_widgets import long_varied_file

    folder = tmp_path / "app"
    folder.mkdir()
    app = APP.replace('TraceView("trace.json", title="in marimo")', 'TraceView("long.jsonl")')
    (folder / "app.py").write_text(app, encoding="utf-8")
    long_varied_file(folder / "long.jsonl", 2_500)
    with marimo_page(folder, tmp_path) as page:
        view = page.locator(".blv")
        expect(view.locator(".blv-row").first).to_be_visible(timeout=60_000)
        expect(view.locator(".blv-count")).to_have_text("2,500 steps", timeout=60_000)
        expect(view.locator(".blv-banner")).to_contain_text("2,500 steps taken")
        expect(view.locator('[aria-busy="true"]')).to_have_count(0)
        view.locator(".blv-row[data-e='3']").click()
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 3 ·")
        expect(view.locator(".blv-detail .blv-outcome")).to_contain_text("notes on part 3.")
