"""A batch held for a person in a real browser (JupyterLab 4, light and dark): the panel shows
the held call's secret only as redact= writes it, saves none in the notebook's widget state,
reads as a turn taken and billed with its text shown, keeps each decision in sight until Step
runs it, and moves the focus to the next call, then to Step, after each decision and Reset.

A batch decided in code, on another thread, shows at once.

It needs /usr/bin/chromium (Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.jupyter_browser import (
    ARTIFACTS,
    chromium,
    jupyter_server,
    open_and_run_all,
    wait_until_idle,
    write_json,
    write_notebook,
)

pytestmark = pytest.mark.browser

SECRET = "sk-live-4242"

SETUP = f'''
from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, start, tool
from budgetloop_widgets import RunPanel

SECRET = "{SECRET}"
sent = []


@tool(needs_approval=True)
def call_api(url: str, key: str) -> str:
    """Call an API."""
    sent.append((url, key))
    return "called"


def make_session():
    first = Completion(
        text="I will call both APIs with the key " + SECRET,
        tool_calls=[
            ToolCall("call_api", {{"url": "a.example", "key": SECRET}}, "k1"),
            ToolCall("call_api", {{"url": "b.example", "key": "Bearer " + SECRET}}, "k2"),
        ],
    )
    model = ScriptedModel([first, "done"], price=Price(3.0, 15.0), max_output_tokens=100)
    return start(model, "go", tools=[call_api], budget=Budget(max_cost_usd=1.0),
                 redact=lambda s: s.replace(SECRET, "***"))
'''


@pytest.fixture(autouse=True)
def patient_expect() -> None:
    """Several helpers' builds share two cores here: a wait may take longer than 5 s."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_a_held_batch_reads_right_and_keeps_its_secret_in_jupyterlab(
    theme: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    notebook = root / "held.ipynb"
    write_notebook(notebook, SETUP, "panel = RunPanel(make_session)\npanel")
    shot = theme.split()[-1].lower()
    with jupyter_server("lab", root, tmp_path, theme=theme) as lab:
        # the notebook keeps its widget state when saved, as a person may set it to
        settings = Path(lab.env["JUPYTERLAB_SETTINGS_DIR"])
        write_json(
            settings / "@jupyter-widgets" / "jupyterlab-manager" / "plugin.jupyterlab-settings",
            {"saveState": True},
        )
        with chromium(lab, tmp_path / "profile") as browser:
            page = browser.page
            open_and_run_all(page, lab.url("lab/tree/held.ipynb"))
            wait_until_idle(page)
            panel = page.locator(".bl-panel")
            expect(panel).to_be_visible(timeout=30_000)
            step = panel.get_by_role("button", name="Step", exact=True)
            step.click()
            calls = panel.locator(".bl-pending-call")
            expect(calls).to_have_count(2)
            first_approve = calls.nth(0).get_by_role("button", name="Approve", exact=True)
            expect(first_approve).to_be_focused()  # not the page body: Step is disabled now
            expect(calls.nth(0).locator(".bl-pending-head")).to_contain_text(
                "call_api call k1, step 0"
            )
            expect(calls.nth(0)).to_contain_text(
                'as the model wrote them {"url": "a.example", "key": "***"}'
            )
            expect(calls.nth(1)).to_contain_text(
                'as checked {"url": "b.example", "key": "Bearer ***"}'
            )
            held = panel.locator(".bl-held-step")
            expect(held).to_contain_text("Step 0 · $")
            expect(held).to_contain_text("held: the model was called and its reply billed")
            expect(held.locator("pre")).to_have_text("I will call both APIs with the key ***")
            expect(panel.locator(".bl-waiting")).to_contain_text(
                "held after 0 steps: step 0 called the model ($"
            )
            expect(panel.locator(".bl-waiting")).to_contain_text(
                "2 calls wait for your decision below"
            )
            expect(panel.locator(".blv-count")).to_have_text(
                "0 steps · step 0 is held above: recorded here once its batch runs"
            )
            expect(panel.locator(".bl-charts")).not_to_contain_text("no steps yet")
            expect(panel).not_to_contain_text(SECRET)
            page.screenshot(path=str(ARTIFACTS / f"held-{shot}.png"), full_page=True)

            # by keyboard: Enter approves k1, and the focus moves to k2's Approve
            page.keyboard.press("Enter")
            expect(calls).to_have_count(1)
            second_approve = calls.nth(0).get_by_role("button", name="Approve", exact=True)
            expect(second_approve).to_be_focused()
            decided = panel.locator(".bl-decided")
            expect(decided).to_have_count(1)
            expect(decided.nth(0)).to_contain_text("call_api call k1, step 0")
            expect(decided.nth(0)).to_contain_text("→ approved")

            # Edit k2: the box shows the mark; the mark left in place stands for the secret
            calls.nth(0).get_by_role("button", name="Edit", exact=True).click()
            box = calls.nth(0).locator(".bl-edit-json textarea")
            expect(box).to_be_focused()
            expect(box).to_have_value('{\n "url": "b.example",\n "key": "Bearer ***"\n}')
            box.fill('{"url": "***", "key": "Bearer ***"}')  # a mark moved: refused
            calls.nth(0).get_by_role("button", name="Run with these", exact=True).click()
            expect(calls.nth(0).locator(".bl-pending-error")).to_contain_text(
                "edit: arguments.url must be the value itself, or a redaction mark left where "
                "it was shown"
            )
            box.fill('{"url": "c.example", "key": "Bearer ***"}')
            calls.nth(0).get_by_role("button", name="Run with these", exact=True).click()
            expect(calls).to_have_count(0)
            expect(step).to_be_focused()  # none is left: Step runs the batch
            expect(decided).to_have_count(2)
            expect(decided.nth(1)).to_contain_text(
                'edited to {"url": "c.example", "key": "Bearer ***"}'
            )
            expect(panel.locator(".bl-pending-batch")).to_contain_text(
                "every call of this batch is decided"
            )
            expect(panel).not_to_contain_text(SECRET)
            page.screenshot(path=str(ARTIFACTS / f"held-decided-{shot}.png"), full_page=True)

            page.keyboard.press("Enter")  # Step, where the focus is
            stop = panel.locator(".bl-stop-head")
            expect(stop).to_contain_text("Run ended: answered · 2 steps taken")
            expect(panel.locator(".blv-count")).to_have_text("2 steps")
            expect(panel.locator(".bl-charts")).to_contain_text("cost so far")
            expect(panel.locator(".bl-charts")).not_to_contain_text("○")
            panel.get_by_role("button", name="Reset", exact=True).click()
            expect(step).to_be_focused()

            # hold again and save: the file keeps the widget state, and no secret in it
            step.click()
            expect(calls).to_have_count(2)
            page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function(
                "() => !document.querySelector('.jp-mod-dirty')", timeout=20_000
            )
        saved = json.loads(notebook.read_text(encoding="utf-8"))
        state = json.dumps(saved["metadata"]["widgets"])
        assert "bl-pending-call" in state  # the held calls' widgets were saved
        assert "Bearer ***" in state
        assert SECRET not in state
        assert SECRET not in json.dumps([c.get("outputs", []) for c in saved["cells"]])
        assert browser.errors == []
        assert browser.dialogs == []


DECIDE_ON_A_THREAD = """
import threading, time
from pathlib import Path


def decide_when_told():  # on a thread of its own, once the test says the page shows the batch
    while not Path({told!r}).exists():
        time.sleep(0.05)
    panel.session.deny("k1", "not that one")
    panel.session.approve("k2")


threading.Thread(target=decide_when_told, daemon=True).start()
"""


@pytest.mark.timeout(300)
def test_decisions_made_in_code_on_another_thread_show_at_once_in_jupyterlab(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(
        root / "decided.ipynb",
        SETUP,
        "panel = RunPanel(make_session)\npanel.step()\npanel",
        DECIDE_ON_A_THREAD.format(told=str(root / "decide")),
    )
    with (
        jupyter_server("lab", root, tmp_path) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/decided.ipynb"))
        wait_until_idle(page)
        panel = page.locator(".bl-panel")
        calls = panel.locator(".bl-pending-call")
        step = panel.get_by_role("button", name="Step", exact=True)
        expect(calls).to_have_count(2)
        expect(step).to_be_disabled()
        (root / "decide").touch()  # no refresh, no Step: the session tells the panel
        expect(calls).to_have_count(0)
        expect(step).to_be_enabled()
        decided = panel.locator(".bl-decided")
        expect(decided).to_have_count(2)
        expect(decided.nth(0)).to_contain_text("→ denied (reason: not that one)")
        expect(decided.nth(1)).to_contain_text("→ approved")
        expect(panel.locator(".bl-pending-batch")).to_contain_text(
            "every call of this batch is decided"
        )
        step.click()
        expect(panel.locator(".bl-stop-head")).to_contain_text(
            "Run ended: answered · 2 steps taken"
        )
        assert browser.errors == []


HELD_TRACE = '''
import tempfile
from pathlib import Path
from budgetloop import Completion, Price, ScriptedModel, ToolCall, run, tool
from budgetloop_widgets import RunPanel

sent = []


@tool(needs_approval=True)
def call_api(url: str) -> str:
    """Call an API."""
    sent.append(url)
    return "called"


path = Path(tempfile.mkdtemp()) / "run.jsonl"
first = Completion(text="calling", tool_calls=[
    ToolCall("call_api", {"url": "a.example"}, "k1"),
    ToolCall("call_api", {"url": "b.example"}, "k2"),
])
run(ScriptedModel([first], price=Price(3.0, 15.0)), "go", tools=[call_api], approve="hold",
    trace_path=path)
panel = RunPanel(path, complete=ScriptedModel(["done"]), tools=[call_api])
panel
'''


@pytest.mark.timeout(300)
def test_a_held_trace_is_decided_with_always_and_resumed_in_jupyterlab(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "trace.ipynb", HELD_TRACE)
    with (
        jupyter_server("lab", root, tmp_path) as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/trace.ipynb"))
        wait_until_idle(page)
        panel = page.locator(".bl-panel")
        calls = panel.locator(".bl-pending-call")
        step = panel.get_by_role("button", name="Step", exact=True)
        expect(calls).to_have_count(2)
        expect(step).to_be_disabled()
        expect(panel.locator(".bl-waiting")).to_contain_text("2 calls wait for your decision")
        calls.nth(0).get_by_text("Always: every call_api call in this run").click()
        page.screenshot(path=str(ARTIFACTS / "held-trace-light.png"), full_page=True)
        calls.nth(0).get_by_role("button", name="Approve", exact=True).click()
        expect(calls).to_have_count(0)
        expect(panel.locator(".bl-rules")).to_contain_text(
            "call_api: every call approved without asking (from call k1, step 0)"
        )
        expect(step).to_be_enabled()
        step.click()
        expect(panel.locator(".bl-stop-head")).to_contain_text(
            "Run ended: answered · 2 steps taken"
        )
        page.screenshot(path=str(ARTIFACTS / "held-trace-resumed-light.png"), full_page=True)
        assert browser.errors == []
