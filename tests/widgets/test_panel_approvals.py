"""RunPanel while its session holds calls for a person, driven from Python: each pending call
with its arguments, Approve, Edit and Deny, Step and Run waiting for every decision, "Run until
before a call of", and the step list marking what was decided."""

from __future__ import annotations

import json
import re
import shutil
import threading
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    Rule,
    ScriptedModel,
    Session,
    Stop,
    ToolCall,
    load_trace,
    resume,
    run,
    start,
    tool,
)
from budgetloop.display import format_usd
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
    spent = format_usd(panel.session.result.cost_usd)
    assert text_of(panel.status.value) == (
        f"held after 0 steps: step 0 called the model ({spent} spent so far); 2 calls wait for "
        "your decision below (Approve, Edit or Deny each); Step and Run go on once every call is "
        "decided"
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
    assert panel.pending.rows == ()
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
    assert text_of(panel.status.value).startswith("held after 0 steps: step 0 called the model")
    assert "; 2 calls wait for your decision below" in text_of(panel.status.value)
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
        f"held after 0 steps: step 0 called the model ({format_usd(panel.session.result.cost_usd)}"
        " spent so far); 1 call waits for your decision below (Approve, Edit or Deny each); Step and "
        "Run go on once every call is decided"
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


# -- a held call's secrets: the panel shows what every other view shows ------------------------

SECRET = "sk-live-4242"


def secret_session(log: list[str]) -> Session:
    """A held batch of two calls carrying a secret, one of them inside a longer text."""

    @tool(needs_approval=True)
    def call_api(url: str, key: str, headers: dict[str, str] | None = None) -> str:
        """Call an API."""
        log.append(f"{url} {key}" + ("" if headers is None else f" {headers}"))
        return "called"

    first = Completion(
        text=f"calling with {SECRET}",
        tool_calls=[
            ToolCall(
                "call_api", {"url": "a.example", "key": SECRET, "headers": {SECRET: "on"}}, "k1"
            ),
            ToolCall("call_api", {"url": "b.example", "key": f"Bearer {SECRET}"}, "k2"),
        ],
    )
    from tests.conftest import PRICE

    model = ScriptedModel([first, "done"], price=PRICE, max_output_tokens=100)
    return start(
        model, "go", tools=[call_api], redact=lambda s: s.replace(SECRET, "***"),
        **PRICE_OPTIONS,
    )  # fmt: skip


def saved_state() -> str:
    """Every live widget's state, as a notebook saved with its widget state keeps it."""
    import ipywidgets as widgets

    return json.dumps(widgets.Widget.get_manager_state(drop_defaults=False), default=str)


def test_the_panel_shows_a_held_calls_secret_redacted_and_saves_none() -> None:
    log: list[str] = []
    panel = RunPanel(secret_session(log))
    panel.step_button.click()
    first, second = panel.pending.rows
    assert text_of(first.head.value) == (
        "call_api call k1, step 0"
        'as the model wrote them {"url": "a.example", "key": "***", "headers": {"***": "on"}}'
        'as checked {"url": "a.example", "key": "***", "headers": {"***": "on"}}'
    )
    assert json.loads(first.editor.value) == {
        "url": "a.example",
        "key": "***",
        "headers": {"***": "on"},
    }
    assert second.editor.value == '{\n "url": "b.example",\n "key": "Bearer ***"\n}'
    assert "calling with ***" in text_of(panel.pending.held_step.value)
    # an edit the core refuses quotes the value refused (here a key the mark stands for)
    first.editor.value = '{"url": "a.example", "key": "***", "headers": {"***": 5}}'
    first.send_button.click()
    assert text_of(first.error.value) == (
        "Session.approve: arguments must be arguments that fit call_api's schema, got "
        "call_api.headers.***: expected string, got int."
    )
    assert SECRET not in saved_state()
    assert log == []


def test_an_edit_keeps_a_mark_left_in_place_as_the_value_it_hides() -> None:
    log: list[str] = []
    panel = RunPanel(secret_session(log))
    panel.step_button.click()
    first, second = panel.pending.rows
    first.edit_button.click()
    # each mark left where it was, a key's too
    first.editor.value = '{"url": "c.example", "key": "***", "headers": {"***": "off"}}'
    first.send_button.click()
    assert first.error.value == ""
    # a mark moved elsewhere, or changed, would send the mark's text: refused, nothing sent
    second.editor.value = '{"url": "***", "key": "Bearer ***"}'
    second.send_button.click()
    assert text_of(second.error.value) == (
        "edit: arguments.url must be the value itself, or a redaction mark left where it was "
        "shown (a mark stands for the value it hides only there), got the mark '***' moved or "
        "changed."
    )
    second.editor.value = '{"url": "b.example", "key": "Bearer ***x"}'
    second.send_button.click()
    assert text_of(second.error.value).startswith("edit: arguments.key must be the value itself")
    assert [c.id for c in panel.session.pending] == ["k2"]
    second.editor.value = '{"url": "b.example", "key": "Bearer new-key"}'  # a value written
    second.send_button.click()
    assert panel.session.pending == ()
    panel.step_button.click()
    assert log == [f"c.example {SECRET} {{'{SECRET}': 'off'}}", "b.example Bearer new-key"]
    assert SECRET not in saved_state()


def test_a_held_batch_reads_as_a_turn_taken_and_billed_and_shows_its_text() -> None:
    panel = RunPanel(held())
    page = Page(panel)
    panel.step_button.click()
    session = panel.session
    spent = format_usd(session.result.cost_usd)
    assert session.result.cost_usd  # the model was called and billed
    assert repr(panel) == (
        f"<RunPanel: held after 0 steps: step 0 called the model, {spent} spent; 2 calls wait "
        "for a decision>"
    )
    step = panel.session.result  # the step is recorded once its batch runs
    assert step.steps == ()
    shown = text_of(panel.pending.held_step.value)
    assert shown.endswith(
        "· held: the model was called and its reply billed; the step is recorded in the list "
        "below once its batch runs" + "paying"  # the held turn's own text
    )
    assert shown.startswith(f"Step 0 · {spent} reported · ")
    # the step list says where the turn is, and the charts draw it
    assert page.first["held"] == ""  # drawn before the Step
    assert page.appends[-1]["held"] == "step 0 is held above: recorded here once its batch runs"
    assert "no steps yet" not in panel.charts.value
    assert "nothing spent yet" not in panel.charts.value
    panel.pending.rows[0].approve_button.click()
    panel.pending.rows[0].deny_button.click()
    assert text_of(panel.status.value) == (
        f"held after 0 steps: step 0 called the model ({spent} spent so far); every call is "
        "decided: Step or Run runs the batch, then goes on"
    )
    assert repr(panel) == (
        f"<RunPanel: held after 0 steps: step 0 called the model, {spent} spent; every call is "
        "decided: Step or Run runs the batch, then goes on>"
    )
    panel.step_button.click()
    assert page.appends[-1]["held"] == ""  # recorded: the list has it now
    assert page.steps() == 2


def test_decisions_stay_shown_until_step_runs_them() -> None:
    panel = RunPanel(held())
    panel.step_button.click()
    panel.pending.rows[0].approve_button.click()
    panel.pending.rows[0].reason.value = "over the limit"
    panel.pending.rows[0].deny_button.click()
    assert text_of(panel.pending.decided.value) == (
        'transfer call c2, step 0 {"to": "bob", "amount": 9000.0} → approved'
        ": runs as decided when Step or Run goes on"
        'transfer call c3, step 0 {"to": "cy", "amount": 20000.0} → denied (reason: over the '
        "limit): runs as decided when Step or Run goes on"
    )
    assert text_of(panel.pending.batch.value).startswith(
        "every call of this batch is decided: Step or Run runs the batch, then goes on"
    )
    panel.step_button.click()
    assert panel.pending.children == ()


def test_run_and_step_go_on_after_decisions_made_in_code() -> None:
    for go in ("run", "step"):
        log: list[str] = []
        panel = RunPanel(held(log))
        panel.step()
        for call in panel.session.pending:
            panel.session.approve(call.id)
        getattr(panel, go)()  # no refresh() between: the panel reads the session as it is
        assert panel.wait(10)
        assert log[:3] == ["transfer ann 50", "transfer bob 9000", "transfer cy 20000"], go


def test_decisions_made_in_code_redraw_the_cards_and_step_at_once() -> None:
    panel = RunPanel(held())
    page = Page(panel)
    panel.step()
    first = panel.pending.rows[0]
    panel.session.deny("c2", "no")  # no refresh(), step() or run(): the session tells the panel
    assert [r.call.id for r in panel.pending.rows] == ["c3"]
    assert text_of(panel.pending.decided.value) == (
        'transfer call c2, step 0 {"to": "bob", "amount": 9000.0} → denied (reason: no)'
        ": runs as decided when Step or Run goes on"
    )
    assert (panel.step_button.disabled, panel.run_button.disabled) == (True, True)
    first.approve_button.click()  # a card gone from the page, pressed: the session says no
    assert [r.call.id for r in panel.pending.rows] == ["c3"]
    assert panel.session.pending[0].id == "c3"
    panel.session.approve("c3")
    assert panel.pending.rows == ()
    assert text_of(panel.pending.batch.value).startswith(
        "every call of this batch is decided: Step or Run runs the batch, then goes on"
    )
    assert (panel.step_button.disabled, panel.run_button.disabled) == (False, False)
    assert text_of(panel.meter.value).endswith(
        "The run holds a batch for a person: the batch is decided: the next step runs it, then "
        "goes on."
    )
    panel.step_button.click()  # the button, as a person presses it
    assert page.steps() == 2
    calls = panel.session.result.steps[0].tool_calls
    assert [c.approval for c in calls] == [None, "denied", "approved"]


def test_a_decision_made_on_another_thread_redraws_the_panel() -> None:
    panel = RunPanel(held())
    panel.step()
    errors: list[BaseException] = []

    def decide() -> None:
        try:
            for call in panel.session.pending:
                panel.session.approve(call.id)
        except BaseException as exc:
            errors.append(exc)

    with panel._lock:  # the panel busy drawing: the decision waits for it, then redraws
        worker = threading.Thread(target=decide)
        worker.start()
        worker.join(0.2)
        assert worker.is_alive()
        assert panel.step_button.disabled
    worker.join(10)
    assert not worker.is_alive()
    assert errors == []
    assert (panel.pending.rows, panel.step_button.disabled) == ((), False)


def test_a_panel_reset_or_closed_no_longer_listens_to_its_old_session() -> None:
    panel = RunPanel(held())
    panel.step()
    old = panel.session
    panel.reset()
    panel.step()
    assert [r.call.id for r in panel.pending.rows] == ["c2", "c3"]
    old.approve("c2")  # the old session: the panel shows the new one's batch as it was
    assert [c.id for c in panel.session.pending] == ["c2", "c3"]
    assert [r.call.id for r in panel.pending.rows] == ["c2", "c3"]
    panel.close()
    panel.session.approve("c2")  # a closed panel is not drawn again
    assert [r.call.id for r in panel.pending.rows] == ["c2", "c3"]


def test_focus_moves_to_the_next_call_then_to_step_after_each_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ipywidgets as widgets

    focused: list[object] = []  # what ipywidgets was asked to focus, in the page
    monkeypatch.setattr(widgets.DOMWidget, "focus", lambda self: focused.append(self))
    panel = RunPanel(held())
    panel.step_button.click()
    first, second = panel.pending.rows
    assert focused == [first.approve_button]  # Step is disabled while calls wait
    first.approve_button.click()
    assert focused[-1] is second.approve_button
    second.edit_button.click()
    assert focused[-1] is second.editor
    second.cancel_button.click()
    assert focused[-1] is second.edit_button
    second.deny_button.click()
    assert focused[-1] is panel.step_button  # none is left: Step runs the batch
    panel.reset_button.click()
    assert focused[-1] is panel.step_button


# -- a run that ended held, opened from its trace ----------------------------------------------


def held_trace(tmp_path: Path) -> tuple[Path, Path]:
    """A real run held on its batch of transfers (``approve="hold"``), and where each transfer
    that runs, in any panel, writes a line."""
    from tests.held_support import PRICE, held_model, transfers

    path, ran = tmp_path / "run.jsonl", tmp_path / "ran.jsonl"
    result = run(held_model(), "Pay the invoices.", tools=[transfers(str(ran))],
                 approve="hold", trace_path=path, price=PRICE, max_output_tokens=500)  # fmt: skip
    assert (result.stop, [c.id for c in result.pending]) == (Stop.HELD, ["c2", "c3"])
    return path, ran


def opened(source: object, ran: Path) -> RunPanel:
    from tests.held_support import transfers

    return RunPanel(source, complete=ScriptedModel(["paid"]), tools=[transfers(str(ran))])


def lines(ran: Path) -> list[Any]:
    """What the transfers ran, sorted: a batch's calls run on threads of their own, so they log
    in any order (only their results keep request order)."""
    return sorted(json.loads(x) for x in ran.read_text().splitlines()) if ran.exists() else []


TAKEN = re.compile(
    r"RunPanel: the held batch of run\.jsonl must be waiting for a decision, got taken at "
    r"\S+ by process \d+ on \S+\. A held batch runs once\."
)


def test_a_held_trace_opens_as_a_held_session_and_resumes_there_once(tmp_path: Path) -> None:
    from tests.held_support import transfers

    path, ran = held_trace(tmp_path)
    shutil.copy(path, tmp_path / "copy.jsonl")
    panel = opened(path, ran)
    rival = opened(path, ran)  # another panel on the same file, opened before the take
    assert [r.call.id for r in panel.pending.rows] == ["c2", "c3"]
    assert text_of(panel.pending.rows[0].head.value) == (
        "transfer call c2, step 0"
        'as the model wrote them {"to": "bob", "amount": 9000}'
        'as checked {"to": "bob", "amount": 9000.0}'
    )
    assert text_of(panel.status.value) == (
        "held after 0 steps: step 0 called the model ($0.001365 spent so far); 2 calls wait for "
        "your decision below (Approve, Edit or Deny each); Step and Run go on once every call "
        "is decided"
    )
    assert (panel.step_button.disabled, panel.run_button.disabled) == (True, True)
    edit = panel.pending.rows[0]
    edit.edit_button.click()
    edit.editor.value = '{"to": "bob", "amount": 5000}'
    edit.send_button.click()
    deny = panel.pending.rows[0]
    deny.reason.value = "over the limit"
    deny.always.value = True
    assert deny.edit_button.disabled  # a standing rule runs calls as the model asks them
    deny.deny_button.click()
    assert panel.pending.rows == ()
    assert text_of(panel.pending.rules.value) == (
        "standing rules of this runtransfer: every call denied (reason: over the limit) "
        "without asking (from call c3, step 0)"
    )
    assert lines(ran) == []  # nothing runs before Step
    panel.step_button.click()
    assert panel.error.value == ""
    result = panel.session.result
    assert lines(ran) == [["ann", 50], ["bob", 5000]]
    assert (result.stop, result.answer, len(result.steps)) == (Stop.ANSWERED, "paid", 2)
    assert [(c.id, c.status, c.approval) for c in result.steps[0].tool_calls] == [
        ("c1", "ok", None), ("c2", "ok", "edited"), ("c3", "denied", "denied"),
    ]  # fmt: skip
    # one run, one bill: what resume() of the same held file with the same decisions costs
    same = resume(tmp_path / "copy.jsonl", ScriptedModel(["paid"]), decisions={
        "c2": {"to": "bob", "amount": 5000}, "c3": "over the limit"},
        tools=[transfers(str(tmp_path / "other.jsonl"))]).run()  # fmt: skip
    assert result.cost_usd == same.cost_usd == 0.002223
    assert (result.run_id, same.stop) == (load_trace(path).run_id, Stop.ANSWERED)
    saved = load_trace(path)
    assert saved.rules == (Rule("transfer", "denied", "c3", 0, "over the limit"),)
    assert (saved.stop, saved.cost_usd) == (Stop.ANSWERED, 0.002223)

    # the rival panel's Step is refused: shown, nothing runs, its decisions stay
    rival.pending.rows[0].approve_button.click()
    rival.pending.rows[0].approve_button.click()
    rival.step_button.click()
    assert TAKEN.fullmatch(text_of(rival.error.value))
    assert lines(ran) == [["ann", 50], ["bob", 5000]]
    assert (rival.session.pending, rival.session.done) == ((), False)
    assert text_of(rival.pending.batch.value).startswith("every call of this batch is decided")
    rival.run_button.click()
    assert rival.wait(10)
    assert TAKEN.fullmatch(text_of(rival.error.value))
    assert lines(ran) == [["ann", 50], ["bob", 5000]]
    # a panel opened on it now is refused, saying when it was taken
    with pytest.raises(ValueError, match=r"^RunPanel: the held batch") as refused:
        opened(path, ran)
    assert TAKEN.fullmatch(str(refused.value))
    panel.reset_button.click()  # Reset opens the file again: taken
    assert text_of(panel.error.value).startswith("Reset raised ValueError: RunPanel: the held")
    assert TAKEN.search(text_of(panel.error.value))


def test_a_held_result_opens_in_the_panel_and_is_the_callers_to_resume_once(
    tmp_path: Path,
) -> None:
    path, ran = held_trace(tmp_path)
    panel = opened(load_trace(path), ran)
    for row in panel.pending.rows:
        row.approve_button.click()
    panel.run_button.click()
    assert panel.wait(10)
    assert panel.session.result.stop is Stop.ANSWERED
    assert lines(ran) == [["ann", 50], ["bob", 9000], ["cy", 20000]]
    assert load_trace(path).stop is Stop.HELD  # an object's resume is not in the file
    panel.reset_button.click()
    assert text_of(panel.error.value).startswith(
        "Reset raised ValueError: RunPanel: the held run must be one this panel has not gone "
        "on from, got one it ran. A held batch runs once."
    )
    assert lines(ran) == [["ann", 50], ["bob", 9000], ["cy", 20000]]


def test_a_panel_refuses_a_run_that_is_not_held_and_held_options_without_one(
    tmp_path: Path,
) -> None:
    path, ran = held_trace(tmp_path)
    answered = tmp_path / "answered.json"
    run(ScriptedModel(["hi"]), "hello").save(answered)
    with pytest.raises(ValueError, match=r"^RunPanel: trace") as not_held:
        opened(answered, ran)
    assert str(not_held.value) == (
        "RunPanel: trace must be a run that ended held (stop 'held'), got stop answered."
    )
    with pytest.raises(TypeError) as no_model:
        RunPanel(load_trace(path))
    assert str(no_model.value) == (
        "RunPanel: complete must be the model to go on with (a held run's model is not in its "
        "trace), got None."
    )
    with pytest.raises(TypeError) as stray:
        RunPanel(held(), complete=ScriptedModel(["x"]))
    assert str(stray.value) == (
        "RunPanel: complete, tools and resume's options must be given only with a held run "
        "(its Result or the path of its trace), got complete with Session."
    )


def test_a_held_trace_with_redacted_arguments_needs_an_edit_in_the_panel(tmp_path: Path) -> None:
    from tests.core.test_approvals import _KEY, _held_with_a_key, _hiding, _keyed

    ran: list[str] = []
    path = tmp_path / "run.jsonl"
    _held_with_a_key(path, ran)
    panel = RunPanel(path, complete=ScriptedModel(["done"]), tools=[_keyed(ran)], redact=_hiding)
    row = panel.pending.rows[0]
    assert row.approve_button.disabled
    assert row.approve_button.tooltip == (
        "arguments.key redacted when the run was held: Edit to give the arguments"
    )
    assert not row.edit_button.disabled
    row.approve()  # pressed anyway (a stale page): the core refuses it, nothing is decided
    assert text_of(row.error.value) == (
        "Session.approve: arguments must be the arguments to run call_api with (arguments.key "
        "was redacted when the run was held), got None."
    )
    row.edit_button.click()
    assert json.loads(row.editor.value) == {"url": "u", "key": "***"}
    row.send_button.click()  # the mark left in place: it stands for nothing here
    assert text_of(row.error.value).endswith("got the redaction mark recorded at arguments.key.")
    row.editor.value = json.dumps({"url": "u", "key": _KEY})
    row.send_button.click()
    assert panel.session.pending == ()
    panel.step_button.click()
    assert ran == [_KEY]
    assert panel.session.result.stop == Stop.ANSWERED
    assert _KEY not in path.read_text(encoding="utf-8")
