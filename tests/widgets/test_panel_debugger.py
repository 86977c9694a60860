"""RunPanel as a debugger, driven from Python: Run in the background, Pause, Run until, errors
with their tracebacks, Fork here and Continue, a shared ledger beside the meter."""

from __future__ import annotations

import json
import re
import signal
import threading
from dataclasses import replace
from typing import Any

import pytest

from budgetloop import (
    Budget,
    Completion,
    MemoryLedger,
    Message,
    Price,
    Result,
    ScriptedModel,
    Session,
    Stop,
    ToolCall,
    start,
    tool,
)
from budgetloop.display import stop_means
from budgetloop_widgets import RunPanel, TraceView, usd
from budgetloop_widgets._fork import editable_positions, edited_messages
from budgetloop_widgets._status import ledger_html, stop_html
from tests.viewer_support import decode
from tests.widgets.test_widgets import Page

PRICE = Price(3.00, 15.00)  # assumed rates for the tests
XSS = "<img src=x onerror=alert(1)>"


@tool
def balance(account: str) -> str:
    """The balance of an account."""
    if account == "broken":
        raise LookupError(f"no account {XSS}")
    return "balance: -500.00 EUR"


@tool
def transfer(amount: float) -> str:
    """Move money."""
    return f"moved {amount}"


def turns() -> list[Completion]:
    return [
        Completion(text="checking", tool_calls=[ToolCall("balance", {"account": "42"}, "b1")]),
        Completion(text="covering", tool_calls=[ToolCall("transfer", {"amount": 500}, "t1")]),
        Completion(text="moved 500"),
    ]


class Gate:
    """Model turns that each wait until the test lets them finish."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def hold(self, completion: Completion) -> Any:
        def entry(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
            self.entered.release()
            if not self.go.acquire(timeout=10):
                raise TimeoutError("the test never let this turn go")
            return completion

        return entry

    def in_flight(self) -> None:
        assert self.entered.acquire(timeout=10), "no turn started"


def make(script: list[Any] | None = None, **options: Any) -> Session:
    model = ScriptedModel(script or turns(), price=PRICE, max_output_tokens=100)
    options.setdefault("budget", Budget(max_steps=6, max_cost_usd=1.0))
    return start(model, "What is the balance of account 42?", tools=[balance, transfer], **options)


def gated(gate: Gate) -> Session:
    return make([gate.hold(c) for c in turns()])


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def controls_disabled(panel: RunPanel) -> list[bool]:
    return [
        panel.step_button.disabled,
        panel.run_button.disabled,
        panel.reset_button.disabled,
        panel.until.kind.disabled,
        panel.steps.busy,  # the page disables every Fork here with it
    ]


def test_run_returns_at_once_redraws_each_step_and_disables_the_other_buttons() -> None:
    gate = Gate()
    panel = RunPanel(lambda: gated(gate))
    page = Page(panel)
    assert panel.pause_button.disabled  # nothing to pause
    panel.run_button.click()  # returns while the model is still in its first turn
    gate.in_flight()
    assert panel.running
    assert controls_disabled(panel) == [True, True, True, True, True]
    assert not panel.pause_button.disabled
    assert text_of(panel.status.value) == (
        "running: 0 steps taken; Pause stops it after the turn in flight"
    )
    panel.step_button.click()  # a disabled button's handler still runs from Python: no effect
    panel.reset_button.click()
    panel.run_button.click()
    gate.go.release()
    gate.in_flight()  # step 0 is drawn before step 1 starts
    assert len(panel.session.steps) == 1
    assert page.steps() == 1  # sent from the worker thread, before step 1 starts
    assert "<b>steps taken</b> 1 of max_steps 6" in panel.meter.value
    assert text_of(panel.status.value).startswith("running: 1 step taken")
    assert controls_disabled(panel) == [True, True, True, True, True]
    gate.go.release()
    gate.in_flight()
    gate.go.release()
    assert panel.wait(10)
    assert not panel.running
    result = panel.session.result
    assert (result.stop, len(result.steps), result.answer) == ("answered", 3, "moved 500")
    assert "Run ended: answered · 3 steps taken" in panel.status.value
    assert controls_disabled(panel) == [True, True, False, False, False]
    assert panel.pause_button.disabled
    assert panel.error.value == ""


def test_pause_ends_the_run_after_the_turn_in_flight_and_run_goes_on() -> None:
    gate = Gate()
    panel = RunPanel(lambda: gated(gate))
    panel.run_button.click()
    gate.in_flight()
    gate.go.release()
    gate.in_flight()  # step 1 is in flight
    panel.pause_button.click()
    assert panel.pause_button.disabled
    assert text_of(panel.status.value) == "pausing: the turn in flight finishes first"
    gate.go.release()  # the turn in flight finishes: nothing is abandoned
    assert panel.wait(10)
    session = panel.session
    assert (len(session.steps), session.done, session.result.stop) == (2, False, None)
    assert session.steps[1].tool_calls[0].status == "ok"
    assert text_of(panel.status.value) == (
        "paused after 2 steps (Pause pressed); the run is not over: Run or Step goes on"
    )
    assert controls_disabled(panel)[:3] == [False, False, False]
    panel.run_button.click()  # Run again continues
    gate.in_flight()
    gate.go.release()
    assert panel.wait(10)
    assert panel.session is session
    assert (session.result.stop, len(session.steps)) == ("answered", 3)


def test_wait_times_out_while_the_run_goes_on() -> None:
    gate = Gate()
    panel = RunPanel(lambda: gated(gate))
    assert panel.wait(0.01)  # no Run yet
    panel.run_button.click()
    gate.in_flight()
    assert not panel.wait(0.05)
    panel.pause()
    gate.go.release()
    assert panel.wait(10)
    assert len(panel.session.steps) == 1


def test_run_until_the_next_call_of_a_tool() -> None:
    panel = RunPanel(make)
    assert panel.until.tool.options == ("balance", "transfer")
    panel.until.kind.value = "tool"
    assert panel.until.tool.layout.display is None
    assert panel.until.usd.layout.display == "none"
    panel.until.tool.value = "transfer"
    panel.run_button.click()
    assert panel.wait(10)
    assert [s.tool_calls[0].name for s in panel.session.steps] == ["balance", "transfer"]
    assert not panel.session.done
    assert "paused after 2 steps (Run until: the model called transfer)" in panel.status.value
    panel.run_button.click()  # the breakpoint held after the last step; the next Run goes on
    assert panel.wait(10)
    assert panel.session.result.stop == "answered"


def test_run_until_the_next_error_shows_the_traceback_folded_under_the_message() -> None:
    script = [
        Completion(text="a", tool_calls=[ToolCall("balance", {"account": "42"}, "b1")]),
        Completion(text="b", tool_calls=[ToolCall("balance", {"account": "broken"}, "b2")]),
        "done",
    ]
    panel = RunPanel(lambda: make(script))
    panel.until.kind.value = "error"
    panel.run_button.click()
    assert panel.wait(10)
    panel.steps._handle_custom_msg({"type": "hello"}, [])  # a page drawn now asks for all
    assert len(panel.session.steps) == 2
    assert "(Run until: the step went wrong (breakpoints.on_error))" in panel.status.value
    record = panel.session.steps[1].tool_calls[0]
    assert record.status == "error"
    assert record.traceback is not None
    data = json.loads(panel.steps.data.decode("utf-8"))  # the whole run, as a page asks for it
    calls, strings = data["runs"][0]["calls"], data["strings"]
    assert strings[calls["tb"][1]] == record.traceback  # the page folds it under the error
    assert strings[calls["out"][1]] == f"LookupError: no account {XSS}"  # text, for textContent


def test_run_until_spend_would_pass_pauses_before_the_money_goes() -> None:
    first = PRICE.cost(*_usage_of_first_turn())
    worst = make().projection.total_usd  # the first turn's worst case: equal does not pass
    assert worst is not None
    panel = RunPanel(make)
    panel.until.kind.value = "cost"
    panel.until.usd.value = worst
    panel.run_button.click()
    assert panel.wait(10)
    assert len(panel.session.steps) == 1
    assert panel.session.result.cost_usd == first
    assert "the next turn&#x27;s worst case would pass" in panel.status.value
    panel.run_button.click()  # it still holds: not one step more
    assert panel.wait(10)
    assert len(panel.session.steps) == 1
    # issue 19, item 5: not "paused after 1 step (before any step: ...)"
    assert text_of(panel.status.value).replace("&#x27;", "'") == (
        f"Run took no step: the next turn's worst case would pass {usd(worst)} already, so "
        "nothing was sent. Step takes one turn anyway; a larger amount lets Run go on"
    )


def _usage_of_first_turn() -> tuple[int, int]:
    s = make()
    s.step()
    usage = s.steps[0].usage
    assert usage is not None
    return usage.input_tokens, usage.output_tokens


def test_run_until_a_number_of_steps_and_the_choices_that_cannot_hold() -> None:
    panel = RunPanel(make)
    panel.until.kind.value = "step"
    panel.until.steps.value = 1
    panel.run_button.click()
    assert panel.wait(10)
    assert len(panel.session.steps) == 1
    assert "paused after 1 step (Run until: 1 step taken)" in panel.status.value
    panel.run_button.click()  # 1 is taken already: said, and nothing runs
    assert panel.wait(10)
    assert len(panel.session.steps) == 1
    assert (
        "Run until: on_step(1): the steps the session has taken must be fewer than 1, got 1, so "
        "a run asked after its next step never pauses there; choose a larger number."
        in panel.error.value
    )
    # issue 19, item 5: the last Run's pause line does not stay beside the refusal
    assert "(Run until: 1 step taken)" not in panel.status.value
    assert text_of(panel.status.value) == (
        "paused after 1 step: the run is not over; Step or Run goes on"
    )
    unpriced = RunPanel(lambda: start(ScriptedModel(["hi"]), "go", tools=[]))
    assert unpriced.until.tool.options == ()
    unpriced.until.kind.value = "cost"
    unpriced.run_button.click()
    assert "price must be set, got None" in unpriced.error.value
    unpriced.until.kind.value = "tool"
    unpriced.run_button.click()
    assert (
        "the next call of a tool: the session must be given tools, got none."
        in unpriced.error.value
    )
    assert unpriced.session.steps == ()


def test_an_exception_during_run_is_reported_with_its_traceback() -> None:
    def hook(session: Session, step: object) -> None:
        if len(session.steps) == 2:
            raise RuntimeError(f"hook broke {XSS}")

    panel = RunPanel(lambda: make(on_step=hook))
    panel.run_button.click()
    assert panel.wait(10)
    assert not panel.running
    assert len(panel.session.steps) == 2  # the step was taken; the run is not over
    assert "Run raised RuntimeError: hook broke &lt;img src=x" in panel.error.value
    assert '<details class="bl-traceback"><summary>traceback (' in panel.error.value
    assert "paused after 2 steps (the Run raised RuntimeError)" in panel.status.value
    assert XSS not in panel.error.value
    assert not panel.run_button.disabled


def test_an_interrupt_in_the_model_during_run_or_step_is_reported() -> None:
    def interrupted(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        raise KeyboardInterrupt

    panel = RunPanel(lambda: make([interrupted, *turns()]))
    panel.run_button.click()
    assert panel.wait(10)
    assert "Run raised KeyboardInterrupt" in panel.error.value
    assert "(the Run raised KeyboardInterrupt)" in panel.status.value
    panel.reset_button.click()
    panel.step_button.click()
    assert "Step raised KeyboardInterrupt" in panel.error.value
    assert not panel.step_button.disabled


def test_an_interrupt_while_waiting_pauses_the_run_and_says_so() -> None:
    gate = Gate()
    panel = RunPanel(lambda: gated(gate))
    panel.run_button.click()
    gate.in_flight()
    main = threading.main_thread().ident
    assert main == threading.get_ident()
    timer = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        panel.wait(10)
    assert "Interrupted (KeyboardInterrupt) while waiting for the Run" in panel.error.value
    gate.go.release()
    assert panel.wait(10)
    assert (len(panel.session.steps), panel.session.done) == (1, False), (
        panel.error.value + panel.status.value
    )
    # issue 19, item 5: said as what it was, not as "(Pause pressed)"
    assert "paused after 1 step (interrupted while waiting in panel.wait())" in panel.status.value


def test_fork_here_edits_the_context_and_continue_goes_on_from_it() -> None:
    panel = RunPanel(make)
    panel.run_button.click()
    assert panel.wait(10)
    first = panel.session
    spent = first.result.cost_usd
    fork_here(panel, 1)
    editor = panel.editor
    assert editor is not None
    assert panel.fork_area.children == (editor,)
    assert editor.at == 1
    assert [m.role for m in editor.shown] == ["user", "assistant", "tool"]
    assert sorted(editor.texts) == [0, 2]
    assert editor.texts[2].value == "balance: -500.00 EUR"
    editor.texts[2].value = "balance: 1,250.00 EUR"
    editor.continue_button.click()
    fork = panel.session
    assert fork is not first
    assert panel.editor is None
    assert panel.fork_area.children == ()
    assert fork.messages[2].content == "balance: 1,250.00 EUR"
    assert fork.messages[:2] == first.messages[:2]
    assert (len(fork.steps), fork.done, fork.result.cost_usd) == (1, False, spent)
    page = json.loads(panel.steps.data.decode("utf-8"))  # the fork, sent whole
    assert len(page["runs"][0]["steps"]["cost"]) == 1
    assert "balance: 1,250.00 EUR" in page["strings"]  # in the context now
    panel.reset_button.click()  # Reset still goes back to the start
    assert panel.session.steps == ()
    assert panel.session.result.cost_usd == 0


def test_after_a_fork_the_banner_meter_and_chart_say_the_spend_it_carried() -> None:
    # issue 19, item 2: a fork's banner said $0.004449 for steps adding up to $0.002676, and
    # nothing said why
    panel = RunPanel(lambda: make([*turns(), *turns()[1:]]))  # the fork plays steps 1 and 2 again
    panel.run_button.click()
    assert panel.wait(10)
    source = panel.session.result
    editor = panel.open_fork(1)
    assert editor is not None
    editor.continue_button.click()
    panel.run_button.click()
    assert panel.wait(10)
    result = panel.session.result
    carried = result.carried_usd
    assert carried == pytest.approx(sum(s.cost_usd for s in source.steps[1:]))
    assert carried > 0
    steps_here = result.cost_usd - carried
    assert text_of(panel.status.value).startswith(
        f"Run ended: answered · 3 steps taken · {usd(result.cost_usd)} spent ({usd(carried)} of "
        f"it carried from the run this one was forked from, {usd(steps_here)} by the steps here)"
    )
    assert (
        f'<div class="bl-carried">spent includes {usd(carried)} carried from the run this one '
        "was forked from (its steps after the fork point): no step here accounts for it</div>"
    ) in panel.meter.value
    assert f"cost so far, from {usd(carried)} carried" in panel.charts.value
    # issue 29, item 2: step 0's meter said "spent $0.00 + ..." beside "spent includes ...
    # carried": the step the fork kept came before that money, so its meter does not say it
    assert decode(TraceView(result).data)["runs"][0]["steps"]["carry"] == [0, 1, 1]
    panel.steps.reset(panel.session)  # the panel's page, drawn whole
    assert Page(panel).first["runs"][0]["steps"]["carry"] == [0, 1, 1]
    assert result.steps[0].projection.spent_usd == 0  # type: ignore[union-attr]
    assert result.steps[1].projection.spent_usd == pytest.approx(  # type: ignore[union-attr]
        result.steps[0].cost_usd + carried
    )


def test_cancel_closes_the_editor_and_a_bad_fork_point_is_shown() -> None:
    panel = RunPanel(make)
    panel.step_button.click()
    fork_here(panel, 0)
    assert panel.editor is not None
    panel.editor.cancel_button.click()
    assert panel.editor is None
    assert panel.fork_area.children == ()
    assert panel.open_fork(5) is None
    assert (
        "Fork here raised ValueError: Session.fork: at must be a step index from 0 to 1, got 5."
        in (panel.error.value)
    )


def test_the_editor_shows_redacted_text_and_keeps_what_was_not_edited() -> None:
    secret = "hunter2"
    script = [
        Completion(text="a", tool_calls=[ToolCall("balance", {"account": "42"}, "b1")]),
        "done",
    ]
    panel = RunPanel(lambda: _secret_session(script, secret))
    panel.run_button.click()
    assert panel.wait(10)
    editor = panel.open_fork(1)
    assert editor is not None
    assert editor.texts[0].value == "What is the balance? password [REDACTED]"
    assert secret not in editor.texts[0].value
    unchanged = editor.messages()
    assert unchanged[0].content == f"What is the balance? password {secret}"
    editor.texts[2].value = "balance: 0"
    edited = editor.messages()
    assert (edited[0].content, edited[2].content) == (unchanged[0].content, "balance: 0")


def _secret_session(script: list[Any], secret: str) -> Session:
    model = ScriptedModel(script, price=PRICE, max_output_tokens=100)
    return start(
        model,
        f"What is the balance? password {secret}",
        tools=[balance],
        redact=lambda text: text.replace(secret, "[REDACTED]"),
    )


def test_editable_positions_and_edits_as_pure_functions() -> None:
    messages = [
        Message("system", "s"),
        Message("user", "first"),
        Message("assistant", None, (ToolCall("balance", "{}", "b1"),)),
        Message("tool", "r1", tool_call_id="b1", name="balance"),
        Message("user", "second"),
        Message("tool", "r2", tool_call_id="b2", name="balance"),
    ]
    assert editable_positions(messages) == [3, 4, 5]
    assert editable_positions([]) == []
    out = edited_messages(messages, messages, {3: "r1", 4: "changed"})
    assert out[3] is messages[3]
    assert out[4] == Message("user", "changed")
    with pytest.raises(
        ValueError,
        match=r"^fork editor: the messages shown must be the context's 6 messages, got 1\.$",
    ):
        edited_messages(messages, messages[:1], {})
    with pytest.raises(TypeError, match=r"^fork editor: message 3 must be text, got int\.$"):
        edited_messages(messages, messages, {3: 7})  # type: ignore[dict-item]


def test_a_shared_ledger_is_shown_beside_the_meter() -> None:
    ledger = MemoryLedger(0.5, period="day")
    panel = RunPanel(lambda: make(ledger=ledger))
    assert ledger_html(ledger) in panel.meter.value
    assert (
        "shared ledger</b> (MemoryLedger, every run sharing it, this day (UTC)): "
        "spent $0.00 · reserved $0.00 · limit $0.50"
    ) in panel.meter.value
    panel.step_button.click()
    spent = panel.session.result.cost_usd
    assert ledger.spent_usd() == spent
    assert f"spent {usd(spent)} · reserved $0.00 · limit $0.50" in panel.meter.value
    plain = RunPanel(make)
    assert "bl-ledger" not in plain.meter.value


def test_a_ledger_that_cannot_be_read_says_so() -> None:
    class Down:
        limit_usd = 1.0

        def spent_usd(self) -> float:
            raise ConnectionError(f"redis down {XSS}")

        def reserved_usd(self) -> float:
            return 0.0

    html = ledger_html(Down())
    assert html == (
        '<div class="bl-ledger"><b>shared ledger</b> (Down): could not be read: '
        "ConnectionError: redis down &lt;img src=x onerror=alert(1)&gt;</div>"
    )


def test_a_shared_budget_stop_is_said_in_words_and_every_stop_has_words() -> None:
    assert all(stop_means(stop) for stop in Stop)  # the core words each stop once
    ledger = MemoryLedger(0.0001)  # less than one turn's worst case
    panel = RunPanel(lambda: make(ledger=ledger))
    panel.step_button.click()
    assert panel.session.result.stop == "shared_budget"
    assert "Run ended: shared_budget — did NOT answer · 0 steps taken" in panel.status.value
    assert (
        '<div class="bl-stop-why">the shared ledger refused to reserve the next turn&#x27;s '
        "worst case: its limit is spent or reserved (by this run or others)</div>"
    ) in panel.status.value
    for stop in Stop:
        result = make().result
        shown = stop_html(_with_stop(result, stop))
        said = "answered · " if stop is Stop.ANSWERED else f"{stop.value} — did NOT answer · "
        assert f"Run ended: {said}" in shown
        assert stop_means(stop).replace("'", "&#x27;") in shown


def _with_stop(result: Result, stop: Stop) -> Result:
    return replace(result, stop=stop)


def test_each_step_of_a_long_run_sends_that_step_and_its_new_texts_only() -> None:
    # issue 19: appending a step sends one step, not the list, so a long run stays flat
    loop = Completion(text="again", tool_calls=[ToolCall("balance", {"account": "42"}, "b")])
    model = ScriptedModel([loop], repeat_last=True, price=PRICE, max_output_tokens=100)
    session = start(model, "go", tools=[balance], budget=Budget(max_steps=40), repeat_limit=None)
    panel = RunPanel(session)
    page = Page(panel)
    for _ in range(40):
        panel.step_button.click()
    assert [d["base"] for d in page.appends] == list(range(40))
    assert all(len(d["steps"]["cost"]) == 1 for d in page.appends)
    assert all(len(d["messages"]["c"]) == 2 for d in page.appends)  # its assistant and tool
    # the same texts every step: after the first few, a step sends only the core's words for
    # it (its head line, its cost, its projection, the meter's rows that changed: the seconds
    # row too when the clock has moved on)
    for d in page.appends[-10:-1]:
        for said in d["strings"]:
            assert said.startswith(("Step ", "$", "projected: ")) or " max_" in said, said
    sent = page.appends[-2]["strings"]
    assert sent[0].startswith("$")  # its cost, as the list shows it
    assert sent[1].startswith("Step 38 · $")
    rows = [said for said in sent if "max_seconds" not in said]  # the clock's row: if it moved
    assert rows[-3:] == [
        "38 of max_steps 40",
        "38 (no max_tool_calls)",
        "1,789 (no max_input_tokens)",
    ]
    assert page.appends[-1]["calls"]["st"] == [2]  # the last step's call, skipped at the stop
    assert page.steps() == 40
    strings = page.strings()
    assert len(strings) == len(set(strings))


def fork_here(panel: RunPanel, at: int) -> None:
    """What a click on Fork here in the page sends the kernel."""
    panel.steps._handle_custom_msg({"type": "fork", "at": at}, [])


def test_the_panel_is_driven_from_code_as_its_buttons_drive_it() -> None:
    # issue 29, item 14: stepping the panel from code needed its buttons' click(); the methods
    # do what each button does, and say nothing more than the buttons would
    panel = RunPanel(make())
    page = Page(panel)
    panel.step()
    assert len(panel.session.steps) == 1
    assert page.steps() == 1
    panel.run()
    assert panel.wait(10)
    result = panel.session.result
    assert (result.stop, len(result.steps), result.answer) == ("answered", 3, "moved 500")
    panel.step()  # the run has ended: nothing happens, as with the disabled button
    panel.run()
    assert len(panel.session.steps) == 3
    assert panel.error.value == ""
    first = panel.session
    panel.reset()
    assert panel.session is not first
    assert panel.session.steps == ()
    assert Page(panel).steps() == 0  # the page is drawn whole again


def test_print_of_a_panel_is_one_line_saying_where_the_run_is() -> None:
    # issue 29, item 15: print(panel) printed the widget tree with about 60 lines of CSS
    panel = RunPanel(make())
    assert repr(panel) == "<RunPanel: not started · $0.00 spent>"
    panel.step()
    assert (
        repr(panel)
        == f"<RunPanel: paused after 1 step · {usd(panel.session.result.cost_usd)} spent>"
    )
    panel.run()
    assert panel.wait(10)
    spent = usd(panel.session.result.cost_usd)
    assert repr(panel) == f"<RunPanel: Run ended: answered · 3 steps taken · {spent} spent>"
    assert str(panel) == repr(panel)
    assert "\n" not in repr(panel)


def test_the_stop_is_a_jump_only_once_the_run_has_stopped() -> None:
    # issue 29, item 1: "the stop (step N)" was offered while the run was paused, and in a
    # TraceView whose banner says "No stop recorded"
    panel = RunPanel(make())
    page = Page(panel)
    assert page.first["runs"][0]["jumps"]["the stop"] is None  # not started
    panel.step()
    assert page.appends[-1]["jumps"]["the stop"] is None  # paused after step 0
    paused = panel.session.result
    assert paused.stop is None
    view = TraceView(paused)
    assert decode(view.data)["runs"][0]["jumps"]["the stop"] is None
    assert view.jump("the stop") is None
    assert "the stop" not in view.summary()
    panel.run()
    assert panel.wait(10)
    assert panel.session.result.stop == "answered"
    assert page.appends[-1]["jumps"]["the stop"] == 2
    ended = TraceView(panel.session.result)
    assert decode(ended.data)["runs"][0]["jumps"]["the stop"] == 2
    assert ended.jump("the stop") == 2


def test_an_ended_run_has_no_next_step_in_the_meter() -> None:
    # issue 29, item 4: an answered run still showed "After the run: the next step ... fits"
    panel = RunPanel(make())
    panel.run()
    assert panel.wait(10)
    assert panel.session.result.stop == "answered"
    meter = text_of(panel.meter.value)
    assert meter.startswith("After the runthe run has ended: there is no next step")
    assert "fits" not in meter
    assert "projected" not in meter
    # a run the cost ceiling stopped still shows the turn that did not fit, and says so
    stopped = RunPanel(make(budget=Budget(max_steps=6, max_cost_usd=0.0015)))
    stopped.run()
    assert stopped.wait(10)
    assert stopped.session.result.stop == "max_cost_usd"
    meter = text_of(stopped.meter.value)
    assert meter.startswith("After the run: the step that did not fitprojected:")
