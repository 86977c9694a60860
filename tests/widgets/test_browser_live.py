"""The live panel in a real browser (JupyterLab 4): a streamed reply's text arrives in the panel
before its step ends, and Stop cuts it, by a click and by the keyboard (Tab to the button, then
Enter or Space), the run ending interrupted with the text received kept.

It needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
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

SETUP = """
from budgetloop import Budget, ScriptedModel, start
from budgetloop_widgets import RunPanel

LONG = " ".join(f"word{n}" for n in range(400)) + " <b>bold?</b>"


def make_session():
    # 4 characters each 0.05 s: 55 seconds unless it is stopped
    model = ScriptedModel([LONG], stream=True, chunk_chars=4, chunk_seconds=0.05)
    return start(model, "Write at length.", budget=Budget(max_seconds=120))
"""


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "live.ipynb", SETUP, "panel = RunPanel(make_session)\npanel")
    with jupyter_server("lab", root, tmp_path) as server:
        yield server


@pytest.mark.timeout(240)
def test_text_arrives_while_streaming_and_stop_cuts_it_by_click_and_keyboard(
    lab: Server, tmp_path: Path
) -> None:
    from playwright.sync_api import Page, expect

    with chromium(lab, tmp_path / "profile") as browser:
        page: Page = browser.page
        open_and_run_all(page, lab.url("lab/tree/live.ipynb"))
        panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        run = panel.get_by_role("button", name="Run", exact=True)
        pause = panel.get_by_role("button", name="Pause", exact=True)
        stop = panel.get_by_role("button", name="Stop", exact=True)
        reset = panel.get_by_role("button", name="Reset", exact=True)
        reply = panel.locator(".bl-reply-text")
        head = panel.locator(".bl-reply-head")
        rows = panel.locator(".blv-row:not([hidden])")

        def streaming() -> None:
            """Run, and see the text arrive before the step ends."""
            expect(run).to_be_enabled(timeout=15_000)
            expect(stop).to_be_disabled()
            run.click()
            expect(stop).to_be_enabled(timeout=15_000)
            expect(reply).to_contain_text("word0 word1 word2", timeout=15_000)
            expect(head).to_contain_text("step 0 reply: streaming")
            expect(head).to_contain_text("of max_seconds 120 s")
            expect(rows).to_have_count(0)  # the step has not ended: the list has not got it
            first = len(reply.inner_text())
            page.wait_for_timeout(500)
            assert len(reply.inner_text()) > first  # still arriving

        def stopped(how: str) -> None:
            status = panel.locator(".bl-stop")
            expect(status).to_contain_text("interrupted", timeout=15_000)
            expect(head).to_contain_text("step 0 reply: ended")
            expect(rows).to_have_count(1)  # the cut step, with the text received
            expect(stop).to_be_disabled()
            shown = reply.inner_text()
            assert shown.startswith("word0 word1 word2")
            assert "<b>bold?</b>" not in shown
            assert len(shown) < 2_000
            page.screenshot(path=str(ARTIFACTS / f"live-stopped-{how}.png"), full_page=True)

        streaming()
        page.screenshot(path=str(ARTIFACTS / "live-streaming.png"), full_page=True)
        stop.click()
        stopped("click")

        # again on a fresh session, Stop reached by Tab from Pause and pressed with Enter
        reset.click()
        expect(panel.locator(".bl-stop")).to_have_count(0, timeout=15_000)
        streaming()
        pause.focus()
        page.keyboard.press("Tab")
        expect(stop).to_be_focused()
        page.keyboard.press("Enter")
        stopped("enter")

        # and with Space
        reset.click()
        expect(panel.locator(".bl-stop")).to_have_count(0, timeout=15_000)
        streaming()
        stop.focus()
        page.keyboard.press("Space")
        stopped("space")
        assert browser.errors == []
