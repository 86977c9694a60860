"""TraceView and CompareView in real front ends: JupyterLab 4 and Notebook 7, driven by mouse and
keyboard. The rows, search, filters, jumps and keys work in the browser; the choice of step
reaches the kernel (``view.selected``) and a choice made in the kernel reaches the page.

It needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from budgetloop import load_trace
from tests.jupyter_browser import (
    ARTIFACTS,
    ROOT,
    Browser,
    Server,
    chromium,
    jupyter_server,
    open_and_run_all,
    wait_until_idle,
    write_notebook,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def patient_expect() -> None:
    """Five helpers' builds share two cores here: a wait may take longer than Playwright's 5 s."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)


NOTEBOOK7_LOAD_ERROR = "Cannot read properties of undefined (reading 'schema')"
TRACE = load_trace(ROOT / "notebooks" / "trace.json")

CELLS = (
    "from budgetloop import load_trace\n"
    "from budgetloop_widgets import CompareView, TraceView\n"
    'view = TraceView("trace.json", title="the saved run")\nview',
    "view.show(9)  # run with the others: the page opens at step 9",
    'print("SELECTED", view.selected)',
    'told = []\nview.observe(lambda change: told.append(change["new"]), names="selected")',
    "told.clear()",
    'print("TOLD", told)',
)

# Five key presses in one task, as keys held down give them: the rows move at each, and the
# kernel is told of the step they stop on once they rest.
FIVE_KEYS = """() => {
  const list = document.querySelector('.blv .blv-scroll');
  list.focus();
  for (let i = 0; i < 5; i += 1) {
    list.dispatchEvent(new KeyboardEvent('keydown', { key: 'j', bubbles: true }));
  }
}"""


def serve(app: str, tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "trace.json", root / "trace.json")
    write_notebook(root / "viewer.ipynb", *CELLS)
    with jupyter_server(app, root, tmp_path) as server:
        yield server


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Server]:
    yield from serve("lab", tmp_path)


@pytest.fixture
def notebook7(tmp_path: Path) -> Iterator[Server]:
    yield from serve("notebook", tmp_path)


def run_cell(browser: Browser, n: int) -> None:
    """Run code cell ``n`` (from 0) alone, as a user does: click into it, Shift+Enter."""
    page = browser.page
    page.locator(".jp-CodeCell .jp-InputArea-editor").nth(n).click()
    page.keyboard.press("Shift+Enter")
    wait_until_idle(page)


def drive_the_trace(browser: Browser, shot: Path | None) -> None:
    from playwright.sync_api import expect

    page = browser.page
    view = page.locator(".blv").first
    expect(view.locator(".blv-row").first).to_be_visible(timeout=30_000)
    steps = len(TRACE.steps)
    count = view.locator(".blv-count")
    expect(count).to_have_text(f"{steps} steps")
    detail = view.locator(".blv-detail .blv-card-head")
    expect(detail).to_contain_text("Step 9 ·")  # chosen in the kernel, before it was drawn
    expect(view.locator(".blv-row.blv-selected")).to_contain_text("9")
    # a click on a row chooses it; the keys move from there
    view.locator(".blv-row", has_text="Checking the weather").click()
    expect(detail).to_contain_text("Step 1 ·")
    # a saved trace's view is sent its rows only: the step's detail came when it was opened
    expect(view.locator(".blv-detail .blv-calls .blv-outcome")).to_contain_text(
        "LookupError: no notes on 'weather'"
    )
    # issue 29, item 6: the host's rule for outputs broke the context's words mid-word
    context = view.locator(".blv-detail .blv-context pre").first
    expect(context).to_be_visible()
    breaks = "(el) => getComputedStyle(el).wordBreak"
    assert page.evaluate(breaks, context.element_handle()) == "normal"
    page.keyboard.press("j")
    expect(detail).to_contain_text("Step 2 ·")
    page.keyboard.press("ArrowDown")
    expect(detail).to_contain_text("Step 3 ·")
    page.keyboard.press("k")
    expect(detail).to_contain_text("Step 2 ·")
    page.keyboard.press("End")
    expect(detail).to_contain_text(f"Step {steps - 1} ·")
    page.keyboard.press("Home")
    expect(detail).to_contain_text("Step 0 ·")
    # "/" goes to the search, which filters as it is typed
    page.keyboard.press("/")
    search = view.locator("input.blv-search")
    expect(search).to_be_focused()
    page.keyboard.type("weather")
    expect(count).to_have_text(f"1 of {steps} steps match")
    expect(view.locator(".blv-row:not([hidden])")).to_have_count(1)
    expect(detail).to_contain_text("Step 1 ·")  # the detail follows the list
    # a jump to a step the search hides clears the search, and shows it
    view.locator("button[data-jump='the stop']").click()
    expect(detail).to_contain_text(f"Step {steps - 1} ·")
    expect(search).to_have_value("")
    expect(count).to_have_text(f"{steps} steps")
    view.locator("button[data-jump='first error']").click()
    expect(detail).to_contain_text("Step 1 ·")
    # Enter opens the chosen step: the detail takes the focus
    view.locator(".blv-scroll").focus()
    page.keyboard.press("Enter")
    expect(view.locator(".blv-detail")).to_be_focused()
    if shot is not None:
        view.screenshot(path=str(shot))


def test_traceview_in_jupyterlab_by_mouse_and_keyboard(lab: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with chromium(lab, tmp_path / "profile") as browser:
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/viewer.ipynb"))
        wait_until_idle(page)
        drive_the_trace(browser, ARTIFACTS / "traceview.png")
        # the choice made in the page reached the kernel
        outputs = page.locator(".jp-OutputArea-output")
        expect(outputs.filter(has_text="SELECTED")).to_have_text("SELECTED 9")
        run_cell(browser, 2)
        expect(outputs.filter(has_text="SELECTED")).to_have_text("SELECTED 1")
        # keys held down: one message to the kernel, of the step they stopped on
        run_cell(browser, 4)
        page.evaluate(FIVE_KEYS)
        view = page.locator(".blv").first
        expect(view.locator(".blv-row.blv-selected .blv-c").first).to_have_text("6")
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 6 ·")
        run_cell(browser, 2)
        expect(outputs.filter(has_text="SELECTED")).to_have_text("SELECTED 6")
        run_cell(browser, 5)
        expect(outputs.filter(has_text="TOLD")).to_have_text("TOLD [6]")
    assert browser.errors == []
    assert browser.dialogs == []


def test_traceview_in_notebook_7(notebook7: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with chromium(notebook7, tmp_path / "profile") as browser:
        page = browser.page
        open_and_run_all(page, notebook7.url("notebooks/viewer.ipynb"))
        assert page.evaluate("window.jupyterapp.name") == "Jupyter Notebook"
        wait_until_idle(page)
        drive_the_trace(browser, ARTIFACTS / "traceview-notebook7.png")
        run_cell(browser, 2)
        outputs = page.locator(".jp-OutputArea-output")
        expect(outputs.filter(has_text="SELECTED")).to_have_text("SELECTED 1")
    assert [e for e in browser.errors if e != NOTEBOOK7_LOAD_ERROR] == []
    assert browser.dialogs == []


# The elements whose text must read at 4.5:1 against what is behind them, in every theme.
READ = {
    "title": ".blv-title",
    "banner": ".blv-banner .blv-line-head",
    "stop words": ".blv-banner .blv-line-why",
    "header": ".blv-head .blv-c",
    "row": ".blv-row:not(.blv-selected) .blv-c.blv-num",
    "chosen row": ".blv-row.blv-selected .blv-c.blv-txt",
    "ok status": ".blv-row .blv-c.blv-st-ok",
    "error status": ".blv-row .blv-c.blv-st-error",
    "step count": ".blv-count",
    "jump": ".blv-jumps button:not([disabled])",
    "search": "input.blv-search",
    "card head": ".blv-card-head",
    "projection": ".blv-detail .blv-projection",
    "muted": ".blv-detail .blv-muted",
    "model text": ".blv-detail .blv-text",
    "call status": ".blv-calls td.blv-status",
    "chart title": "svg .bl-chart-title",
    "chart tick": "svg .bl-tick",
    "ceiling label": "svg .bl-ceiling-label",
}


@pytest.mark.parametrize(
    "theme", ["JupyterLab Light", "JupyterLab Dark", "JupyterLab Dark High Contrast"]
)
def test_traceview_reads_in_every_jupyterlab_theme(theme: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from tests.widgets.test_browser_viewer import CONTRAST

    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "trace.json", root / "trace.json")
    write_notebook(root / "viewer.ipynb", CELLS[0], "view.show(1)")
    with (
        jupyter_server("lab", root, tmp_path, theme=theme) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/viewer.ipynb"))
        view = page.locator(".blv").first
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text(
            "Step 1 ·", timeout=30_000
        )
        light = "true" if theme == "JupyterLab Light" else "false"
        page.wait_for_function(
            f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=15_000
        )
        seen = {}
        for name, selector in READ.items():
            element = view.locator(selector).first
            expect(element).to_be_attached()
            seen[name] = element.evaluate(CONTRAST)
        view.screenshot(path=str(ARTIFACTS / f"traceview-{theme.split()[-1].lower()}.png"))
    low = {name: s for name, s in seen.items() if s["ratio"] < 4.5}
    assert low == {}
    assert browser.errors == []


COMPARE = '''
from budgetloop import Completion, Price, ScriptedModel, ToolCall, run, tool
from budgetloop_widgets import CompareView


@tool
def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def a_run(second):
    script = [Completion(text="first", tool_calls=[ToolCall("look", {"query": "a"}, "c1")]),
              Completion(text=second, tool_calls=[ToolCall("look", {"query": second}, "c2")]),
              "done"]
    return run(ScriptedModel(script, price=Price(3.0, 15.0), max_output_tokens=100), "go",
               tools=[look])


view = CompareView(a_run("second"), a_run("other"), names=("bad", "fixed"))
view
'''


def test_compareview_in_jupyterlab_by_mouse_and_keyboard(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "compare.ipynb", COMPARE, 'print("SELECTED", view.selected)')
    with (
        jupyter_server("lab", root, tmp_path) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/compare.ipynb"))
        wait_until_idle(page)
        view = page.locator(".blv").first
        detail = view.locator(".blv-detail")
        # it opens where the runs part, the agreeing step folded into one row above it
        expect(detail.locator(".blv-diverge-head")).to_have_text("step 1: the runs part here")
        rows = view.locator(".blv-row:not([hidden])")
        expect(rows).to_have_count(3)
        expect(rows.nth(0)).to_contain_text("step 0: the same in both runs")
        expect(view.locator(".blv-row.blv-selected")).to_contain_text("other")
        cards = detail.locator(".blv-card")
        expect(cards).to_have_count(2)
        expect(cards.nth(0)).to_contain_text("second")
        expect(cards.nth(1)).to_contain_text("other")
        # the keys: up to the folded row, Enter unfolds it, j moves on
        view.locator(".blv-scroll").focus()
        page.keyboard.press("k")
        expect(detail).to_contain_text("the runs agree on step 0")
        page.keyboard.press("Enter")
        expect(rows).to_have_count(3)
        expect(rows.nth(0)).to_contain_text("first")
        expect(detail.locator(".blv-card-head").first).to_contain_text("Step 0 ·")
        page.keyboard.press("j")
        page.keyboard.press("j")
        expect(detail.locator(".blv-card-head").first).to_contain_text("Step 2 ·")
        view.screenshot(path=str(ARTIFACTS / "compareview.png"))
        run_cell(browser, 1)
        outputs = page.locator(".jp-OutputArea-output")
        expect(outputs.filter(has_text="SELECTED")).to_have_text("SELECTED 2")
    assert browser.errors == []


ASKED_CELLS = (
    "from budgetloop_widgets import TraceView\n"
    "asked = []\n"
    "class Asked(TraceView):  # a view that notes each step whose detail the page asks for\n"
    "    def detail_answer(self, index):\n"
    "        asked.append(index)\n"
    "        return super().detail_answer(index)\n"
    'view = Asked("varied.jsonl")\nview.add_class("bl-asked")\nview',
    'print("ASKED", sorted(asked), len(asked))',
)


@contextmanager
def asked_view(
    tmp_path: Path, steps: int, edit: Callable[[list[str]], None] | None = None
) -> Iterator[tuple[Browser, Locator]]:
    """A saved trace of ``steps`` distinct steps (its lines changed by ``edit``) in an
    ``Asked`` view (ASKED_CELLS) in JupyterLab, its rows on screen: the browser and the view."""
    from playwright.sync_api import expect

    from tests.widgets.test_widgets import long_varied_file

    root = tmp_path / "root"
    root.mkdir()
    path = root / "varied.jsonl"
    long_varied_file(path, steps)
    if edit is not None:
        lines = path.read_text(encoding="utf-8").splitlines()
        edit(lines)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_notebook(root / "asked.ipynb", *ASKED_CELLS)
    with (
        jupyter_server("lab", root, tmp_path) as server,
        chromium(server, tmp_path / "profile") as browser,
    ):
        open_and_run_all(browser.page, server.url("lab/tree/asked.ipynb"))
        wait_until_idle(browser.page)
        view = browser.page.locator(".bl-asked").first
        expect(view.locator(".blv-row").first).to_be_visible(timeout=30_000)
        yield browser, view


def a_long_result(lines: list[str]) -> None:
    """Step 3's result 25,000 characters longer, its end past what a detail sends."""
    lines[4] = lines[4].replace(
        '"result":"notes on part 3.', '"result":"' + "x" * 25_000 + " THE END. notes on part 3.", 1
    )


def test_a_saved_traces_step_detail_comes_when_the_step_is_opened(tmp_path: Path) -> None:
    """A saved trace's page is sent its rows; opening a step asks the kernel for its detail
    (read from its line), and a text the detail cut is fetched whole from that detail."""
    from playwright.sync_api import expect

    with asked_view(tmp_path, 12, a_long_result) as (browser, view):
        page = browser.page
        detail = view.locator(".blv-detail")
        expect(detail.locator(".blv-card-head")).to_contain_text("Step 0 ·")
        view.locator(".blv-row", has_text="reading part 7").click()
        expect(detail.locator(".blv-card-head")).to_contain_text("Step 7 ·")
        expect(detail.locator(".blv-text")).to_have_text(
            "reading part 7\n" + "the notes say more. " * 20
        )
        expect(detail.locator(".blv-outcome")).to_contain_text("notes on part 7. notes on part 7.")
        view.locator(".blv-row", has_text="reading part 3").click()
        expect(detail.locator(".blv-card-head")).to_contain_text("Step 3 ·")
        outcome = detail.locator(".blv-outcome")
        expect(outcome).to_contain_text("cut for this page at 20,000 of 25,435 characters")
        expect(outcome).not_to_contain_text("THE END")
        outcome.get_by_role("button", name="show it all").click()
        expect(outcome).to_contain_text("THE END. notes on part 3.")
        run_cell(browser, 1)
        outputs = page.locator(".jp-OutputArea-output")
        # each step's detail asked for once: the one chosen, and the rows in view ahead of
        # a click (in one question), whichever came first
        expect(outputs.filter(has_text="ASKED")).to_have_text(f"ASKED {list(range(12))} 12")
    assert browser.errors == []


# Notes whether the detail ever said its step was on its way from the kernel.
WATCH_DETAIL = """() => {
  const detail = document.querySelector('.bl-asked .blv-detail');
  window.__waited = false;
  new MutationObserver(() => {
    if (detail.querySelector('.blv-asking')) { window.__waited = true; }
  }).observe(detail, { childList: true, subtree: true });
}"""


def test_a_jumps_step_is_drawn_at_once_its_detail_asked_for_ahead(tmp_path: Path) -> None:
    """Once the list rests, the page asks for the details of the rows in view and of the
    jumps' steps in one question: a jump to a step far from the rows in view draws it without
    waiting for the kernel."""
    from playwright.sync_api import expect

    with asked_view(tmp_path, 300) as (browser, view):
        page = browser.page
        said = page.locator(".jp-OutputArea-output").filter(has_text="ASKED")
        asked: list[int] = []
        for _ in range(60):  # the list rests, the page asks, the kernel answers
            run_cell(browser, 1)
            asked = json.loads(said.inner_text().split("ASKED ", 1)[1].rsplit(" ", 1)[0])
            if 299 in asked:
                break
        assert 299 in asked  # the stop, with the rows in view: not step 150, say
        assert 150 not in asked
        assert len(asked) <= 64
        page.evaluate(WATCH_DETAIL)
        view.locator("button[data-jump='the stop']").click()
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 299 ·")
        assert page.evaluate("window.__waited") is False
    assert browser.errors == []


SLOW_REST_CELLS = (
    "import time\n"
    "from budgetloop_widgets import TraceView\n"
    "class Slow(TraceView):  # a view whose rest takes a while to read\n"
    "    def rest(self):\n"
    "        time.sleep(8)\n"
    "        super().rest()\n"
    'view = Slow("long.jsonl", title="a long run")\nview.add_class("bl-long")\nview',
)


def test_a_long_saved_trace_shows_its_first_steps_then_fills_in(tmp_path: Path) -> None:
    """A saved trace longer than FIRST_STEPS: its first steps are drawn at once, the page asks
    for the rest, and what the user typed while it came is kept when the whole run is drawn."""
    from playwright.sync_api import expect

    from budgetloop_widgets._traceview import FIRST_STEPS
    from tests.widgets.test_widgets import long_varied_file

    root = tmp_path / "root"
    root.mkdir()
    long_varied_file(root / "long.jsonl", FIRST_STEPS + 500)
    write_notebook(root / "long.ipynb", *SLOW_REST_CELLS)
    with (
        jupyter_server("lab", root, tmp_path) as server,
        chromium(server, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, server.url("lab/tree/long.ipynb"))
        view = page.locator(".bl-long").first
        expect(view.locator(".blv-row").first).to_be_visible(timeout=30_000)
        busy = view.locator('[aria-busy="true"]')
        expect(busy).to_have_count(1)  # the list: its rest is on its way
        expect(view.locator(".blv-banner")).to_contain_text(
            "Reading the rest of the run: its first 2,000 steps are shown"
        )
        count = view.locator(".blv-count")
        expect(count).to_have_text("2,000 steps")
        expect(view.locator(".blv-detail")).to_have_text(
            "step 0: its detail comes once the rest of the run is read"
        )
        view.locator("input.blv-search").fill("part 1999")
        expect(count).to_have_text("1 of 2,000 steps match")
        # the whole run: the search typed before it came is kept, and runs over every step
        expect(busy).to_have_count(0, timeout=40_000)
        expect(view.locator(".blv-banner")).to_contain_text(
            "Run ended: answered · 2,500 steps taken"
        )
        expect(view.locator("input.blv-search")).to_have_value("part 1999")
        expect(count).to_have_text("1 of 2,500 steps match")
        view.locator(".blv-row", has_text="reading part 1999").click()
        expect(view.locator(".blv-detail .blv-card-head")).to_contain_text("Step 1999 ·")
        expect(view.locator(".blv-detail .blv-outcome")).to_contain_text("notes on part 1999.")
        expect(view.locator(".blv-charts svg").first).to_be_visible()
    assert browser.errors == []
