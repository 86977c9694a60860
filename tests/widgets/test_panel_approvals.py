"""RunPanel while its session holds calls for a person, driven from Python: each pending call
with its arguments, Approve, Edit and Deny, Step and Run waiting for every decision, "Run until
before a call of", and the step list marking what was decided."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

from budgetloop import Budget, Completion, ScriptedModel, Session, ToolCall, start, tool
from budgetloop_widgets import RunPanel
from tests.core.test_approvals import THREE, payments
from tests.widgets.test_widgets import Page

PRICE_OPTIONS: dict[str, Any] = {"budget": Budget(max_cost_usd=1.0)}


def text_of(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def held(log: list[str] | None = None, script: list[Any] | None = None) -> Session:
    from tests.conftest import PRICE

    model = ScriptedModel(script or THREE, price=PRICE, max_output_tokens=100)
    return start(model, "pay", tools=payments([] if log is None else log), **PRICE_OPTIONS)


def test_a_held_batch_shows_each_call_and_step_and_run_wait_for_every_decision() -> None:
    log: list[str] = []
    panel = RunPanel(held(log))
    page = Page(panel)
    assert panel.pending.children == ()
    panel.step_button.click()
    assert log == []
    rows = panel.pending.rows
    assert [r.call.id for r in rows] == ["c2", "c3"]
    assert text_of(rows[0].head.value) == (
        "transfer call c2, step 0"
        'as the model wrote them {"to": "bob", "amount": 9000}'
        'as checked {"to": "bob", "amount": 9000.0}'
    )
    batch = text_of(panel.pending.batch.value)
    assert batch.startswith(
        "2 calls of this batch wait for your decision; nothing in the batch runs until each is "
        "decided"
    )
    projection = panel.session.pending[0].projection
    assert projection is not None
    assert "the turn that reads its results, projected: " in batch
    assert "of max_cost_usd $1.00: fits" in batch
    assert text_of(panel.status.value) == (
        "held after 0 steps: 2 calls wait for your decision below (Approve, Edit or Deny each); "
        "Step and Run go on once every call is decided"
    )
    assert text_of(panel.meter.value).endswith(
        "The run holds a batch for a person: a batch waits for a decision on transfer (c2), "
        "transfer (c3)."
    )
    assert (panel.step_button.disabled, panel.run_button.disabled) == (True, True)
    assert "carried" not in panel.meter.value  # the held call's cost is not a fork's
    rows[0].approve_button.click()
    assert [r.call.id for r in panel.pending.rows] == ["c3"]
    assert panel.step_button.disabled  # one call still waits
    last = panel.pending.rows[0]
    last.reason.value = "over the limit"
    last.deny_button.click()
    assert panel.pending.children == ()
    assert (panel.step_button.disabled, panel.run_button.disabled) == (False, False)
    assert log == []  # nothing ran before every call was decided
    panel.step_button.click()
    assert log == ["transfer ann 50", "transfer bob 9000"]
    calls = panel.session.result.steps[0].tool_calls
    assert [(c.status, c.approval, c.result) for c in calls[1:]] == [
        ("ok", "approved", "sent 9000 to bob"),
        ("denied", "denied", "over the limit"),
    ]
    assert page.steps() == 2
    assert "denied: not run (reason: over the limit)" in page.texts()  # the step list has it
    assert "<b>tool calls run</b> 2 (no max_tool_calls)" in panel.meter.value  # not the denied


def test_edit_checks_the_arguments_with_the_core_and_sends_only_what_fits() -> None:
    log: list[str] = []
    panel = RunPanel(held(log))
    panel.step_button.click()
    row = panel.pending.rows[0]
    assert row.editor.layout.display == "none"
    row.edit_button.click()
    assert row.editor.layout.display is None
    assert json.loads(row.editor.value) == {"to": "bob", "amount": 9000.0}
    row.editor.value = "{not json"
    row.send_button.click()
    assert text_of(row.error.value).startswith("not JSON: Expecting property name")
    row.editor.value = "[1, 2]"
    row.send_button.click()
    assert text_of(row.error.value) == "expected a JSON object of arguments, got list"
    row.editor.value = '{"to": "bob", "amount": "lots"}'
    row.send_button.click()
    assert text_of(row.error.value) == (
        "Session.approve: arguments must be arguments that fit transfer's schema, got "
        "transfer.amount: expected number, got str."
    )
    assert [c.id for c in panel.session.pending] == ["c2", "c3"]  # nothing was sent
    row.editor.value = '{"to": "bob", "amount": 900}'
    row.send_button.click()
    assert [c.id for c in panel.session.pending] == ["c3"]
    panel.pending.rows[0].approve_button.click()
    panel.run_button.click()
    assert panel.wait(10)
    assert log == ["transfer ann 50", "transfer bob 900", "transfer cy 20000"]
    assert panel.session.result.answered
    edited = panel.session.result.steps[0].tool_calls[1]
    assert (edited.approval, edited.arguments) == ("edited", {"to": "bob", "amount": 900.0})


def test_run_pauses_at_a_held_batch_and_goes_on_once_it_is_decided() -> None:
    panel = RunPanel(held())
    panel.run_button.click()
    assert panel.wait(10)
    assert [c.id for c in panel.session.pending] == ["c2", "c3"]
    assert text_of(panel.status.value).startswith("held after 0 steps: 2 calls wait")
    for row in panel.pending.rows:
        row.deny_button.click()
    panel.run_button.click()
    assert panel.wait(10)
    assert panel.session.result.answered
    assert len(panel.session.result.denied) == 2


def test_run_until_before_a_call_of_a_tool_holds_it_though_it_is_not_marked() -> None:
    script = [
        Completion(tool_calls=[ToolCall("balance", {}, "b1")]),
        Completion(tool_calls=[ToolCall("balance", {}, "b2")]),
        "done",
    ]
    log: list[str] = []
    panel = RunPanel(held(log, script))
    panel.until.kind.value = "before"
    assert panel.until.tool.layout.display is None
    panel.until.tool.value = "balance"
    panel.run_button.click()
    assert panel.wait(10)
    assert log == []
    assert [(c.id, c.tool_marked) for c in panel.session.pending] == [("b1", False)]
    assert text_of(panel.status.value) == (
        "held after 0 steps: 1 call waits for your decision below (Approve, Edit or Deny each); "
        "Step and Run go on once every call is decided"
    )
    panel.pending.rows[0].approve_button.click()
    panel.run_button.click()
    assert panel.wait(10)
    assert log == ["balance"]
    assert [c.id for c in panel.session.pending] == ["b2"]
    panel.pending.rows[0].deny_button.click()
    panel.until.kind.value = "end"
    panel.run_button.click()
    assert panel.wait(10)
    assert panel.session.result.answered


def test_what_a_held_call_holds_is_shown_as_text() -> None:
    xss = "<img src=x onerror=alert(1)>"

    @tool(needs_approval=True)
    def send(to: str) -> str:
        """Send."""
        return "sent"

    model = ScriptedModel([Completion(tool_calls=[ToolCall("send", {"to": xss}, "s1")]), "ok"])
    panel = RunPanel(start(model, "go", tools=[send]))
    panel.step_button.click()
    head = panel.pending.rows[0].head.value
    assert xss not in head
    assert "&lt;img src=x onerror=alert(1)&gt;" in head
