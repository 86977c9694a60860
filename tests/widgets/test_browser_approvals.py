"""Holding calls for a person in a real browser (JupyterLab 4): the panel shows each pending call
with its arguments and the batch's worst case, and Approve, Edit and Deny work by click and by
keyboard, Step waiting until every call is decided; TraceView shows each call's decision, filters
by it and jumps to the first denied call.

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
    wait_until_idle,
    write_notebook,
)

pytestmark = pytest.mark.browser

SETUP = '''
from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, run, start, tool
from budgetloop_widgets import RunPanel, TraceView


@tool(needs_approval=lambda args: args["amount"] > 1000)
def transfer(to: str, amount: float) -> str:
    """Send money."""
    return f"sent {amount:g} to {to}"


def pays(*calls):
    return Completion(text="paying", tool_calls=[ToolCall("transfer", {"to": to, "amount": a}, i)
                                                 for to, a, i in calls])


SCRIPT = [
    pays(("ann", 50, "c1"), ("bob", 9000, "c2"), ("cy", 20000, "c3"), ("dee", 5000, "c4")),
    pays(("eve", 3000, "k1"), ("fay", 4000, "k2"), ("gus", 6000, "k3")),
    "all paid",
]


def make_session():
    model = ScriptedModel(SCRIPT, price=Price(3.0, 15.0), max_output_tokens=100)
    return start(model, "Pay the invoices.", tools=[transfer], budget=Budget(max_cost_usd=1.0))
'''

DECIDED = """
answers = {"c2": True, "c3": {"to": "cy", "amount": 2000}, "c4": "over the limit",
           "k1": True, "k2": "no", "k3": True}
decided = run(ScriptedModel(SCRIPT, price=Price(3.0, 15.0), max_output_tokens=100),
              "Pay the invoices.", tools=[transfer], approve=lambda call: answers[call.id])
view = TraceView(decided, title="decided")
view
"""


@pytest.fixture(autouse=True)
def patient_expect() -> None:
    """Several helpers' builds share two cores here: a wait may take longer than 5 s."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(
        root / "approvals.ipynb", SETUP, "panel = RunPanel(make_session)\npanel", DECIDED
    )
    with jupyter_server("lab", root, tmp_path) as server:
        yield server


def test_approve_edit_and_deny_by_click_and_by_keyboard_in_jupyterlab(
    lab: Server, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with chromium(lab, tmp_path / "profile") as browser:
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/approvals.ipynb"))
        wait_until_idle(page)
        panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        step = panel.get_by_role("button", name="Step", exact=True)
        run = panel.get_by_role("button", name="Run", exact=True)
        step.click()
        pending = panel.locator(".bl-pending")
        calls = pending.locator(".bl-pending-call")
        expect(calls).to_have_count(3)  # c2, c3, c4: ann's 50 needs no approval
        expect(calls.nth(0).locator(".bl-pending-head")).to_contain_text("transfer call c2")
        expect(calls.nth(0)).to_contain_text(
            'as the model wrote them {"to": "bob", "amount": 9000}'
        )
        expect(calls.nth(0)).to_contain_text('as checked {"to": "bob", "amount": 9000.0}')
        batch = pending.locator(".bl-pending-batch")
        expect(batch).to_contain_text("3 calls of this batch wait for your decision")
        expect(batch).to_contain_text("of max_cost_usd $1.00: fits")
        expect(panel.locator(".bl-waiting")).to_contain_text("3 calls wait for your decision")
        expect(step).to_be_disabled()
        expect(run).to_be_disabled()
        page.screenshot(path=str(ARTIFACTS / "approvals-held.png"), full_page=True)

        # by click: approve c2; an edit of c3 that does not fit is shown and not sent, then one
        # that fits; deny c4 with a reason
        calls.nth(0).get_by_role("button", name="Approve", exact=True).click()
        expect(calls).to_have_count(2)
        first = calls.nth(0)
        expect(first.locator(".bl-pending-head")).to_contain_text("transfer call c3")
        first.get_by_role("button", name="Edit", exact=True).click()
        editor = first.locator(".bl-edit-json textarea")
        expect(editor).to_be_visible()
        expect(editor).to_have_value('{\n "to": "cy",\n "amount": 20000.0\n}')
        editor.fill('{"to": "cy", "amount": "lots"}')
        first.get_by_role("button", name="Run with these", exact=True).click()
        expect(first.locator(".bl-pending-error")).to_contain_text(
            "Session.approve: arguments must be arguments that fit transfer's schema, got "
            "transfer.amount: expected number, got str."
        )
        expect(calls).to_have_count(2)  # nothing was sent
        editor.fill('{"to": "cy", "amount": 2000}')
        first.get_by_role("button", name="Run with these", exact=True).click()
        expect(calls).to_have_count(1)
        last = calls.nth(0)
        expect(last.locator(".bl-pending-head")).to_contain_text("transfer call c4")
        last.locator(".bl-deny-reason input").fill("over the limit")
        last.get_by_role("button", name="Deny", exact=True).click()
        expect(calls).to_have_count(0)
        expect(step).to_be_enabled()

        # Step runs the decided batch, then the next turn holds three more calls
        step.click()
        expect(calls).to_have_count(3)
        rows = panel.locator(".blv-row:not([hidden])")
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("denied · edited")  # the step list marks them
        expect(panel.locator(".blv-calls")).to_contain_text(
            "denied: not run (reason: over the limit)"
        )
        expect(panel.locator(".blv-calls")).to_contain_text("edited by a person")

        # by keyboard: each control is reached by focus, and Enter presses it
        approve_k1 = calls.nth(0).get_by_role("button", name="Approve", exact=True)
        approve_k1.focus()
        page.keyboard.press("Enter")
        expect(calls).to_have_count(2)
        reason = calls.nth(0).locator(".bl-deny-reason input")
        reason.focus()
        page.keyboard.type("no")
        page.keyboard.press("Shift+Tab")  # back to Deny, before the reason
        expect(calls.nth(0).get_by_role("button", name="Deny", exact=True)).to_be_focused()
        page.keyboard.press("Enter")
        expect(calls).to_have_count(1)
        edit_k3 = calls.nth(0).get_by_role("button", name="Edit", exact=True)
        edit_k3.focus()
        page.keyboard.press("Enter")
        box = calls.nth(0).locator(".bl-edit-json textarea")
        expect(box).to_be_visible()
        box.focus()
        page.keyboard.press("Control+a")
        page.keyboard.type('{"to": "gus", "amount": 600}')
        page.keyboard.press("Tab")  # from the editor to "Run with these"
        send = calls.nth(0).get_by_role("button", name="Run with these", exact=True)
        expect(send).to_be_focused()
        page.keyboard.press("Enter")
        expect(calls).to_have_count(0)
        step.focus()
        page.keyboard.press("Enter")
        stop = panel.locator(".bl-stop-head")
        expect(stop).to_contain_text("Run ended: answered · 3 steps taken")
        expect(rows).to_have_count(3)
        expect(rows.nth(1)).to_contain_text("denied · edited")
        panel.screenshot(path=str(ARTIFACTS / "approvals-panel.png"))

        # the viewer: each call's decision, a filter and a jump to the first denied call
        view = page.locator(".jp-CodeCell").nth(2).locator(".blv").first
        expect(view.locator(".blv-row").first).to_be_visible(timeout=30_000)
        count = view.locator(".blv-count")
        expect(count).to_have_text("3 steps")
        view.locator("select.blv-select").nth(1).select_option("approved")
        expect(count).to_have_text("2 of 3 steps match")
        view.locator("select.blv-select").nth(1).select_option("denied")
        expect(count).to_have_text("2 of 3 steps match")
        view.locator("select.blv-select").nth(1).select_option("")
        view.locator("button[data-jump='first denied']").click()
        detail = view.locator(".blv-detail")
        expect(detail.locator(".blv-card-head")).to_contain_text("Step 0 ·")
        statuses = detail.locator(".blv-calls td.blv-status")
        expect(statuses).to_have_text(["✓ ok", "✓ ok · approved", "✓ ok · edited", "⊘ denied"])
        view.screenshot(path=str(ARTIFACTS / "approvals-traceview.png"))
    assert browser.errors == []
    assert browser.dialogs == []
