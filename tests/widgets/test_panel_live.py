"""RunPanel while a reply streams, driven from Python: its text and each call's arguments shown as
they arrive (as text), the browser sent at most one update a frame however fast the chunks come,
and Stop cutting a reply with the text received kept."""

from __future__ import annotations

import threading
import time

from budgetloop import Budget, Chunk, Completion, ScriptedModel, Stop, ToolCall, start, tool
from budgetloop_widgets import RunPanel
from budgetloop_widgets._live import FRAME

XSS = "<img src=x onerror=alert(1)>"
LONG = "".join(f"word{n} " for n in range(400)) + XSS  # 3,000 characters


@tool
def lookup(query: str) -> str:
    """Look a thing up."""
    return f"found {query}"


def updates(panel: RunPanel) -> list[str]:
    """Every value the live view sent to the browser (each a message on its comm)."""
    sent: list[str] = []
    panel.live.observe(lambda change: sent.append(change["new"]), names="value")
    return sent


def test_a_fast_stream_is_shown_whole_at_its_end_in_a_bounded_number_of_messages() -> None:
    model = ScriptedModel([
        Completion(LONG, [ToolCall("lookup", {"query": "x" * 600 + XSS}, "c1")]),
        Completion("done"),
    ], stream=True, chunk_chars=2, chunk_seconds=0.0)  # fmt: skip
    panel = RunPanel(start(model, "go", tools=[lookup], budget=Budget(max_seconds=60)))
    sent = updates(panel)
    began = time.monotonic()
    panel.step()
    elapsed = time.monotonic() - began
    assert panel.live.reply_text == LONG  # every piece, in order
    assert panel.live.call_arguments == {0: '{"query": "' + "x" * 600 + XSS + '"}'}
    shown = sent[-1]
    assert "step 0 reply: ended" in shown
    assert "of max_seconds 60 s" in shown
    assert "word399 &lt;img src=x onerror=alert(1)&gt;" in shown  # text, never markup
    assert XSS not in shown
    assert "call 0: lookup" in shown
    # 1,700 chunks: at most one message a frame, and the last one at the step's end
    assert len(sent) == panel.live.drawn
    assert 1 <= len(sent) <= elapsed / FRAME + 3
    assert panel.session.steps[0].text == LONG


def test_the_live_view_shows_a_reply_before_its_step_ends() -> None:
    model = ScriptedModel(["one two three four five six"], stream=True, chunk_chars=4,
                          chunk_seconds=0.05)  # fmt: skip
    panel = RunPanel(start(model, "go"))
    sent = updates(panel)
    panel.run()
    assert panel.stop_button.disabled is False  # a Run is going
    deadline = time.monotonic() + 10
    while not any("streaming" in value and "one " in value for value in sent):
        assert time.monotonic() < deadline, sent
        time.sleep(0.01)
    assert panel.session.steps == ()  # the step has not ended yet
    assert panel.wait(10)
    assert "step 0 reply: ended" in sent[-1]
    assert panel.session.result.answer == "one two three four five six"
    assert panel.stop_button.disabled is True  # nothing to stop


def test_stop_during_a_slow_stream_ends_the_run_interrupted_with_the_text_received() -> None:
    text = "".join(f"w{n} " for n in range(200))  # 200 chunks of 0.05 s: 10 seconds unstopped
    model = ScriptedModel([Completion(text, [ToolCall("lookup", {"query": "q"}, "c1")]), "end"],
                          stream=True, chunk_chars=4, chunk_seconds=0.05)  # fmt: skip
    panel = RunPanel(start(model, "go", tools=[lookup]))
    assert panel.stop_button.disabled is True
    panel.run()
    deadline = time.monotonic() + 10
    while len(panel.live.reply_text) < 12:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    panel.stop_button.click()  # what a click does
    assert panel.wait(5)
    result = panel.session.result
    assert result.stop is Stop.INTERRUPTED
    (step,) = result.steps
    assert step.finish_reason == "cut"
    assert 12 <= len(step.text or "") < len(text)
    assert panel.live.reply_text == step.text  # the text received, kept and shown
    assert step.tool_calls == ()  # its call had not arrived: nothing ran
    assert "interrupted" in panel.status.value
    assert panel.stop_button.disabled is True


def test_stop_cuts_a_step_taken_on_another_thread() -> None:
    model = ScriptedModel(["a b c d e f g h i j k l m n o p"], stream=True, chunk_chars=2,
                          chunk_seconds=0.05)  # fmt: skip
    panel = RunPanel(start(model, "go"))
    stepper = threading.Thread(target=panel.step)
    stepper.start()
    deadline = time.monotonic() + 10
    while panel.stop_button.disabled or not panel.live.reply_text:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    panel.stop()
    stepper.join(10)
    assert panel.session.result.stop is Stop.INTERRUPTED
    assert panel.session.steps[0].text == panel.live.reply_text
    assert panel.stop_button.disabled is True


def test_stop_does_nothing_while_nothing_runs() -> None:
    panel = RunPanel(start(ScriptedModel(["hi", "again"]), "go"))
    panel.stop()
    panel.step()
    assert panel.session.result.stop is Stop.ANSWERED  # the interrupt was never asked
    assert panel.session.steps[0].text == "hi"


def test_with_redact_the_live_view_shows_only_what_the_events_carry() -> None:
    secret = "sk-live-0123456789"
    model = ScriptedModel([f"the key is {secret} ok"], stream=True, chunk_chars=3)
    session = start(model, "go", redact=lambda text: text.replace(secret, "[redacted]"))
    panel = RunPanel(session)
    sent = updates(panel)
    panel.step()
    assert panel.live.reply_text == "the key is [redacted] ok"
    for value in sent:
        for piece in ("sk-", "0123", "6789"):
            assert piece not in value


def test_reset_listens_to_the_new_session_and_close_stops_listening() -> None:
    model = ScriptedModel(["first reply"], stream=True, chunk_chars=5)
    panel = RunPanel(start(model, "go"))
    old = panel.session
    panel.step()
    panel.reset()
    assert panel.session is not old
    panel.step()
    assert panel.live.reply_text == "first reply"
    panel.reset()
    drawn = panel.live.drawn
    panel.close()
    assert panel.session.run().answer == "first reply"  # heard by no one
    assert panel.live.drawn == drawn


def test_a_step_that_raises_mid_stream_leaves_no_reply_drawn_as_streaming() -> None:
    def model(messages: object, tools: object) -> object:
        def chunks() -> object:
            yield Chunk("half a rep")
            raise KeyboardInterrupt  # out of the model: the step raises, shown in the panel

        return chunks()

    panel = RunPanel(start(model, "go"))
    panel.step()
    assert "Step raised KeyboardInterrupt" in panel.error.value
    assert "step 0 reply: ended" in panel.live.value
    assert panel.live._timer is None  # no timer left drawing
    assert panel.stop_button.disabled is True
