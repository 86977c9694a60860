"""The live panel in a real browser (JupyterLab 4 and Notebook 7): a streamed reply's text
arrives in the panel before its step ends, and Stop cuts it, by a click and by the keyboard (Tab
to the button, then Enter or Space), the run ending interrupted with the text received kept. In
JupyterLab's Dark theme the live reply reads at 4.5:1 or better.

It needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.jupyter_browser import (
    ARTIFACTS,
    Browser,
    chromium,
    jupyter_server,
    open_and_run_all,
    write_notebook,
)
from tests.widgets.test_browser import NOTEBOOK7_LOAD_ERROR
from tests.widgets.test_browser_viewer import CONTRAST

if TYPE_CHECKING:
    from playwright.sync_api import Locator

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

# Each front end: how its server starts, where it opens a notebook, and its app's name.
FRONT_ENDS = {
    "lab": ("lab/tree/live.ipynb", "JupyterLab"),
    "notebook": ("notebooks/live.ipynb", "Jupyter Notebook"),
}


class LivePanel:
    """The RunPanel of live.ipynb, opened at ``url`` and its cells run, and what a person sees
    of it."""

    def __init__(self, browser: Browser, url: str) -> None:
        from playwright.sync_api import expect

        self.page = page = browser.page
        open_and_run_all(page, url)
        self.panel = panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        self.run = panel.get_by_role("button", name="Run", exact=True)
        self.pause = panel.get_by_role("button", name="Pause", exact=True)
        self.stop = panel.get_by_role("button", name="Stop", exact=True)
        self.reset = panel.get_by_role("button", name="Reset", exact=True)
        self.reply: Locator = panel.locator(".bl-reply-text")
        self.head: Locator = panel.locator(".bl-reply-head")
        self.rows = panel.locator(".blv-row:not([hidden])")
        self.status = panel.locator(".bl-stop")

    def streaming(self) -> None:
        """Run, and see the text arrive before the step ends."""
        from playwright.sync_api import expect

        expect(self.run).to_be_enabled(timeout=15_000)
        expect(self.stop).to_be_disabled()
        self.run.click()
        expect(self.stop).to_be_enabled(timeout=15_000)
        expect(self.reply).to_contain_text("word0 word1 word2", timeout=15_000)
        expect(self.head).to_contain_text("step 0 reply: streaming")
        expect(self.head).to_contain_text("of max_seconds 120 s")
        expect(self.rows).to_have_count(0)  # the step has not ended: the list has not got it
        first = len(self.reply.inner_text())
        self.page.wait_for_timeout(500)
        assert len(self.reply.inner_text()) > first  # still arriving

    def stopped(self, shot: str) -> None:
        """The run ended interrupted, the cut step in the list, the text received kept."""
        from playwright.sync_api import expect

        expect(self.status).to_contain_text("interrupted", timeout=15_000)
        expect(self.head).to_contain_text("step 0 reply: ended")
        expect(self.rows).to_have_count(1)  # the cut step, with the text received
        expect(self.stop).to_be_disabled()
        shown = self.reply.inner_text()
        assert shown.startswith("word0 word1 word2")
        assert "<b>bold?</b>" not in shown
        assert len(shown) < 2_000
        self.page.screenshot(path=str(ARTIFACTS / f"live-stopped-{shot}.png"), full_page=True)

    def fresh(self) -> None:
        """Reset: a fresh session, its run not yet ended."""
        from playwright.sync_api import expect

        self.reset.click()
        expect(self.status).to_have_count(0, timeout=15_000)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("app", list(FRONT_ENDS))
def test_text_arrives_while_streaming_and_stop_cuts_it_by_click_and_keyboard(
    app: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    path, name = FRONT_ENDS[app]
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "live.ipynb", SETUP, "panel = RunPanel(make_session)\npanel")
    with (
        jupyter_server(app, root, tmp_path) as server,
        chromium(server, tmp_path / "profile") as browser,
    ):
        live = LivePanel(browser, server.url(path))
        assert live.page.evaluate("window.jupyterapp.name") == name
        live.streaming()
        live.page.screenshot(path=str(ARTIFACTS / f"live-streaming-{app}.png"), full_page=True)
        live.stop.click()
        live.stopped(f"click-{app}")

        # again on a fresh session, Stop reached by Tab from Pause and pressed with Enter
        live.fresh()
        live.streaming()
        live.pause.focus()
        live.page.keyboard.press("Tab")
        expect(live.stop).to_be_focused()
        live.page.keyboard.press("Enter")
        live.stopped(f"enter-{app}")

        # and with Space
        live.fresh()
        live.streaming()
        live.stop.focus()
        live.page.keyboard.press("Space")
        live.stopped(f"space-{app}")
    tolerated = [NOTEBOOK7_LOAD_ERROR] if app == "notebook" else []
    assert [e for e in browser.errors if e not in tolerated] == []
    assert browser.dialogs == []


def contrast(element: Any) -> dict[str, Any]:
    """CONTRAST of an element the live view may redraw between Playwright finding it and
    reading its style (a detached element has no style): read again, up to five times."""
    from playwright.sync_api import Error

    for _ in range(4):
        try:
            seen: dict[str, Any] = element.evaluate(CONTRAST)
            return seen
        except Error:
            continue
    return element.evaluate(CONTRAST)


@pytest.mark.timeout(240)
def test_the_live_reply_reads_in_the_dark_theme(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "live.ipynb", SETUP, "panel = RunPanel(make_session)\npanel")
    with (
        jupyter_server("lab", root, tmp_path, theme="JupyterLab Dark") as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        live = LivePanel(browser, lab.url("lab/tree/live.ipynb"))
        live.page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=15_000
        )
        live.streaming()
        read = {"streaming head": live.head, "streaming text": live.reply}
        seen = {name: contrast(element) for name, element in read.items()}
        live.panel.screenshot(path=str(ARTIFACTS / "live-streaming-dark.png"))
        live.stop.click()
        live.stopped("click-dark")
        read = {"ended head": live.head, "ended text": live.reply, "stop": live.status}
        seen |= {name: contrast(element) for name, element in read.items()}
    low = {name: s for name, s in seen.items() if s["ratio"] < 4.5}
    assert low == {}
    assert browser.errors == []
    assert browser.dialogs == []
