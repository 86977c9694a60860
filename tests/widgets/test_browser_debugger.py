"""The panel as a debugger in a real browser (JupyterLab 4): Run goes on in the background and
the steps appear while it runs; Pause leaves the run paused, not ended; Fork here opens the
context in an editor, and Continue goes on from the edited context.

Only this level sees that widget updates sent from the Run's worker thread reach the page. It
needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jupyter_browser import (
    ARTIFACTS,
    Server,
    chromium,
    jupyter_server,
    open_and_run_all,
    write_notebook,
)

pytestmark = pytest.mark.browser

SETUP = '''
import time
from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, start, tool
from budgetloop_widgets import RunPanel


@tool
def fetch(page: int) -> str:
    """Fetch a page."""
    return f"page {page}: more to read"


def slow(messages, tools):
    time.sleep(0.3)  # a model that takes 0.3 s a turn
    last = messages[-1]
    if last.role == "tool" and "STOP" in last.content:
        return Completion(text="stopped by the edit")
    page = sum(1 for m in messages if m.role == "tool")
    return Completion(text=f"reading page {page}",
                      tool_calls=[ToolCall("fetch", {"page": page}, f"call_{page}")])


def make_session():
    model = ScriptedModel([slow], repeat_last=True, price=Price(3.0, 15.0), max_output_tokens=100)
    return start(model, "Read every page.", tools=[fetch], budget=Budget(max_steps=40),
                 repeat_limit=None)
'''


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "debugger.ipynb", SETUP, "panel = RunPanel(make_session)\npanel")
    with jupyter_server("lab", root, tmp_path) as server:
        yield server


def test_run_pause_fork_and_continue_in_jupyterlab(lab: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with chromium(lab, tmp_path / "profile") as browser:
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/debugger.ipynb"))
        panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        run = panel.get_by_role("button", name="Run", exact=True)
        pause = panel.get_by_role("button", name="Pause", exact=True)
        step = panel.get_by_role("button", name="Step", exact=True)
        expect(run).to_be_enabled(timeout=15_000)
        expect(pause).to_be_disabled()
        run.click()
        live = panel.locator(".bl-live")
        expect(live).to_be_visible(timeout=15_000)
        expect(step).to_be_disabled()
        expect(pause).to_be_enabled()
        # steps appear while the Run goes on: sent from the worker thread, one at a time
        page.wait_for_function(
            "() => document.querySelectorAll('.bl-panel .blv-row:not([hidden])').length >= 3",
            timeout=15_000,
        )
        expect(live).to_be_visible()
        heads = panel.locator(".blv-row:not([hidden])")
        page.screenshot(path=str(ARTIFACTS / "debugger-running.png"), full_page=True)
        pause.click()
        paused = panel.locator(".bl-paused")
        expect(paused).to_contain_text("(Pause pressed)", timeout=15_000)
        expect(paused).to_contain_text("the run is not over")
        expect(panel.locator(".bl-stop")).to_have_count(0)
        expect(step).to_be_enabled()
        expect(run).to_be_enabled()
        taken = heads.count()
        assert 3 <= taken < 40
        expect(paused).to_contain_text(f"paused after {taken} steps")
        card = panel.locator(".blv-card-head")  # the newest step, chosen as it came
        expect(card).to_contain_text(f"Step {taken - 1} ·")
        page.wait_for_timeout(1_000)  # nothing runs while paused
        assert heads.count() == taken

        # Fork here on the newest step: the context before it, in an editor that comes into
        # view where it was asked for (issue 19, item 4), on a short window
        page.set_viewport_size({"width": 1280, "height": 700})
        panel.locator(".blv-fork-here").click()
        editor = panel.locator(".bl-fork")
        expect(editor).to_be_visible(timeout=15_000)
        expect(editor.locator(".bl-fork-head")).to_be_in_viewport()
        page.set_viewport_size({"width": 1280, "height": 1800})
        expect(editor.locator(".bl-fork-head")).to_contain_text(f"Fork before step {taken - 1}")
        boxes = editor.locator(".bl-fork-text textarea")
        expect(boxes).to_have_count(taken)  # the prompt and every tool result before the step
        expect(boxes.last).to_have_value(f"page {taken - 2}: more to read")
        boxes.last.fill("page 0: STOP here")
        editor.get_by_role("button", name="Continue", exact=True).click()
        expect(editor).to_have_count(0, timeout=15_000)
        expect(heads).to_have_count(taken - 1)
        expect(panel.locator(".blv-context").last).to_contain_text("page 0: STOP here")
        run.click()
        stop = panel.locator(".bl-stop-head")
        expect(stop).to_contain_text("Run ended: answered · ", timeout=15_000)
        expect(panel.locator(".bl-stop pre.bl-text")).to_have_text("stopped by the edit")
        expect(heads).to_have_count(taken)
        panel.screenshot(path=str(ARTIFACTS / "debugger.png"))
    assert browser.errors == []
    assert browser.dialogs == []


def test_the_debugging_notebooks_run_can_be_paused_by_hand(tmp_path: Path) -> None:
    # issue 19, item 7: the shipped notebook's run was over in 0.4 s, before Pause could be hit
    from playwright.sync_api import expect

    from tests.jupyter_browser import ROOT, stripped_copy, wait_until_idle

    root = tmp_path / "root"
    root.mkdir()
    stripped_copy(ROOT / "notebooks" / "debugging.ipynb", root / "debugging.ipynb")
    with (
        jupyter_server("lab", root, tmp_path) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/debugging.ipynb"))
        wait_until_idle(page)
        panel = page.locator(".bl-panel")
        panel.get_by_role("button", name="Reset", exact=True).click()
        expect(panel.locator(".bl-idle")).to_contain_text("not started", timeout=15_000)
        panel.get_by_role("button", name="Run", exact=True).click()
        pause = panel.get_by_role("button", name="Pause", exact=True)
        expect(pause).to_be_enabled(timeout=15_000)
        pause.click()
        paused = panel.locator(".bl-paused")
        expect(paused).to_contain_text("(Pause pressed)", timeout=15_000)
        expect(paused).to_contain_text("paused after 1 step")
        expect(panel.locator(".bl-stop")).to_have_count(0)
    assert browser.errors == []
