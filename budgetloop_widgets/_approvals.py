"""The batch a session holds for a person, in the panel: the held turn (its cost and text), each
call with its raw and checked arguments, the batch's worst case against the ceiling, Approve,
Edit (a JSON editor filled with the checked arguments) and Deny (with a reason), and each call
decided, with its decision, until the batch runs. "Always" beside Approve and Deny makes the
decision a standing rule (every later call of the tool in the run decided the same way), and the
run's standing rules are listed under the batch. What it shows is the core's view of the batch
(``budgetloop.display.held_batch``), through the session's ``redact=``; an edit is read back
by the core too (``edited_arguments``: a redaction mark left in place stands for its value).

Every decision is the core's: Approve and Deny call ``session.approve`` and ``session.deny``
(with ``always=True`` when "Always" is ticked),
and an edit is checked by ``session.approve(call_id, arguments=...)`` itself; an edit it refuses
(or text that is not a JSON object) shows the error and is not sent. Each control is a plain
button or text box, so the keyboard reaches it (Tab, then Enter or Space).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

import ipywidgets as widgets

from budgetloop import Rule, Session, Step
from budgetloop.display import (
    HeldBatch,
    HeldCall,
    edited_arguments,
    redacted_text,
    step_head,
)

from ._text import preview, text
from ._views import projection_text

Decided = Callable[[], None]  # the panel redraws after a decision


def pending_head(call: HeldCall) -> str:
    """A held call's header: the tool, its id, and its arguments as written and as checked,
    each as the session's output forms keep it (through ``redact=``)."""
    return (
        f'<div class="bl-pending-head"><b>{text(call.name)}</b> '
        f'<span class="bl-muted">call {text(call.shown_id)}, step {call.call.step}</span></div>'
        f'<div class="bl-pending-args"><span class="bl-muted">as the model wrote them</span> '
        f"<code>{text(call.written)}</code></div>"
        f'<div class="bl-pending-args"><span class="bl-muted">as checked</span> '
        f"<code>{text(call.checked)}</code></div>"
    )


def decided_html(call: HeldCall) -> str:
    """A decided call of the held batch, until Step runs it: what it is, and the decision (and
    that a standing rule made it, when one the run had already did)."""
    by_rule = " by a standing rule" if call.call.rule is not None else ""
    return (
        f'<div class="bl-decided"><b>{text(call.name)}</b> '
        f'<span class="bl-muted">call {text(call.shown_id)}, step {call.call.step}</span> '
        f"<code>{text(call.checked)}</code> → <b>{text(call.decision or '')}</b>{by_rule}"
        '<span class="bl-muted">: runs as decided when Step or Run goes on</span></div>'
    )


def rules_html(session: Session, rules: tuple[Rule, ...]) -> str:
    """The run's standing rules, the one that counts for each tool (the last made), as the
    session's output forms keep them (a denial's reason through ``redact=``)."""
    last = {rule.tool: rule for rule in rules}
    if not last:
        return ""
    lines = "".join(
        f"<li><b>{text(redacted_text(session, rule.tool))}</b>: every call "
        f"{'approved' if rule.approval == 'approved' else 'denied'}"
        f"{_reason(session, rule.reason)} without asking "
        f'<span class="bl-muted">(from call {text(redacted_text(session, rule.call_id))}, '
        f"step {rule.step})</span></li>"
        for rule in last.values()
    )
    return f'<div class="bl-rules">standing rules of this run<ul>{lines}</ul></div>'


def _reason(session: Session, reason: str) -> str:
    return f" (reason: {text(redacted_text(session, reason))})" if reason else ""


def held_step_html(step: Step) -> str:
    """The held turn: the model was called (its cost and tokens, its text); its step is
    recorded, in the list below, once its batch runs."""
    said = (
        f'<pre class="bl-text">{text(preview(step.text))}</pre>'
        if step.text
        else '<div class="bl-muted">the model wrote no text, only the calls</div>'
    )
    return (
        f'<div class="bl-held-step"><div class="bl-held-head">{text(step_head(step))} · held: '
        "the model was called and its reply billed; the step is recorded in the list below "
        f"once its batch runs</div>{said}</div>"
    )


def batch_html(batch: HeldBatch) -> str:
    """What the held batch is about to cost: the turn that reads its results, at worst, against
    the ceiling (the core's projection, as the cost guard made it)."""
    n = batch.waiting
    if n:
        head = (
            f"{n} call{'s' if n != 1 else ''} of this batch wait{'s' if n == 1 else ''} for "
            "your decision; nothing in the batch runs until each is decided"
        )
    else:
        head = "every call of this batch is decided: Step or Run runs the batch, then goes on"
    projection = batch.calls[0].call.projection if batch.calls else None
    worst = (
        "the turn that reads its results: no price, so no cost projected"
        if projection is None
        else f"the turn that reads its results, {projection_text(projection)}"
    )
    kind = "bl-warn" if n else "bl-ready"  # a call waits, or the batch is ready to run
    return (
        f'<div class="bl-pending-batch"><div class="{kind}">{escape(head)}</div>'
        f'<div class="bl-projection">{escape(worst)}</div></div>'
    )


class PendingRow(widgets.VBox):  # type: ignore[misc]
    """One held call waiting for a decision: what it is, and Approve, Edit, Deny."""

    def __init__(self, session: Session, shown: HeldCall, decided: Decided):
        self.session = session
        self.call = shown.call  # the call itself: what the session decides by, never shown
        self._decided = decided
        self._busy = False  # a Step or Run is going: nothing can be decided
        self.head = widgets.HTML(pending_head(shown))
        self._hidden = shown.hidden  # recorded redacted: it runs only with arguments given
        said = ", ".join(shown.hidden)
        self.approve_button = widgets.Button(
            description="Approve",
            tooltip=f"{said} redacted when the run was held: Edit to give the arguments"
            if shown.hidden
            else "run this call as checked",
            disabled=bool(shown.hidden),
        )
        self.edit_button = widgets.Button(
            description="Edit", tooltip="run this call with arguments you write"
        )
        self.deny_button = widgets.Button(
            description="Deny", tooltip="do not run this call; the model reads the reason"
        )
        # a standing rule: Approve or Deny decides every later call of the tool the same way
        self.always = widgets.Checkbox(
            value=False,
            description=f"Always: every {shown.name} call in this run",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.always.observe(lambda _change: self._edit_allowed(), names="value")
        # Typed text reaches the kernel when the box loses focus (before the button pressed
        # next is), not keystroke by keystroke: a press never meets half of what was typed.
        self.reason = widgets.Text(
            placeholder="reason the model reads (optional)",
            continuous_update=False,
            layout=widgets.Layout(width="320px"),
        )
        # the checked arguments as shown (through redact=): a mark left in place stands for the
        # value it hides (``budgetloop.display.edited_arguments``)
        self.editor = widgets.Textarea(
            value=shown.editable,
            rows=4,
            continuous_update=False,
            layout=widgets.Layout(width="100%", display="none"),
        )
        self.send_button = widgets.Button(
            description="Run with these", tooltip="run the call with the edited arguments",
            layout=widgets.Layout(display="none"),
        )  # fmt: skip
        self.cancel_button = widgets.Button(
            description="Cancel edit", layout=widgets.Layout(display="none")
        )
        self.error = widgets.HTML()
        for part, name in (
            (self.approve_button, "approve-button"),
            (self.edit_button, "edit-button"),
            (self.deny_button, "deny-button"),
            (self.always, "always"),
            (self.reason, "deny-reason"),
            (self.editor, "edit-json"),
            (self.send_button, "edit-send"),
            (self.cancel_button, "edit-cancel"),
            (self.error, "pending-error"),
        ):
            part.add_class(f"bl-{name}")
        self.approve_button.on_click(lambda _b: self.approve())
        self.edit_button.on_click(lambda _b: self.open_editor())
        self.deny_button.on_click(lambda _b: self.deny())
        self.send_button.on_click(lambda _b: self.send_edit())
        self.cancel_button.on_click(lambda _b: self.close_editor())
        super().__init__(
            [
                self.head,
                widgets.HBox(
                    [
                        self.approve_button,
                        self.edit_button,
                        self.deny_button,
                        self.reason,
                        self.always,
                    ]
                ),
                self.editor,
                widgets.HBox([self.send_button, self.cancel_button]),
                self.error,
            ]
        )
        self.add_class("bl-pending-call")

    def approve(self) -> None:
        always = self.always.value
        self._decide(lambda: self.session.approve(self.call.id, always=always))

    def deny(self) -> None:
        always, reason = self.always.value, self.reason.value
        self._decide(lambda: self.session.deny(self.call.id, reason, always=always))

    def open_editor(self) -> None:
        for part in (self.editor, self.send_button, self.cancel_button):
            part.layout.display = None
        self.editor.focus()

    def close_editor(self) -> None:
        for part in (self.editor, self.send_button, self.cancel_button):
            part.layout.display = "none"
        self.error.value = ""
        self.edit_button.focus()

    def send_edit(self) -> None:
        """Run the call with the editor's arguments, if the core takes them; else say why."""
        try:
            value = json.loads(self.editor.value)
        except RecursionError:
            self._refused("not JSON this panel can read: it nests too deeply; nothing was sent")
            return
        except ValueError as exc:
            self._refused(f"not JSON: {exc}; nothing was sent")
            return
        if not isinstance(value, dict):
            kind = type(value).__name__
            self._refused(f"expected a JSON object of arguments, got {kind}")
            return

        def send() -> None:
            arguments = edited_arguments(self.session, self.call, value)
            self.session.approve(self.call.id, arguments=arguments)

        self._decide(send)

    def _decide(self, decide: Callable[[], None]) -> None:
        self.error.value = ""
        try:
            decide()  # the panel, told of the decision (``on_decision``), draws the batch again
        except RecursionError:
            self._refused("the arguments nest too deeply to be read; nothing was sent")
            return
        except (TypeError, ValueError) as exc:  # the core refused it: said, not sent
            self._refused(str(exc))
            if self.call not in self.session.pending:  # decided elsewhere (in code): redrawn
                self._decided()
            return
        self._decided()

    def _refused(self, message: str) -> None:
        """Why nothing was sent, as the session's output forms keep it (an edit the core
        refuses may quote the value refused)."""
        self.error.value = _error(redacted_text(self.session, message))

    def _edit_allowed(self) -> None:
        """An edit is one call's: with "Always" ticked, Edit and its send wait (a standing rule
        runs the tool's calls as the model asks them)."""
        off = self._busy or self.always.value
        self.edit_button.disabled = self.send_button.disabled = off

    def set_disabled(self, disabled: bool) -> None:
        self._busy = disabled
        self.approve_button.disabled = disabled or bool(self._hidden)
        for part in (
            self.deny_button,
            self.always,
            self.reason,
            self.editor,
            self.cancel_button,
        ):
            part.disabled = disabled
        self._edit_allowed()


def _close_all(widget: widgets.Widget) -> None:
    """Close a widget and every widget in it: a closed one is in no saved widget state."""
    for child in getattr(widget, "children", ()):
        _close_all(child)
    widget.close()


def _error(message: str) -> str:
    return f'<div class="bl-error-title">{text(message)}</div>'


class PendingCalls(widgets.VBox):  # type: ignore[misc]
    """The batch a session holds, redrawn when it changes; empty when none: the held turn
    (what the model said and cost), a row for each call waiting (Approve, Edit, Deny), and
    each decided call with its decision until Step or Run runs the batch."""

    def __init__(self, decided: Decided) -> None:
        self._decided = decided
        self._shown: tuple[object, ...] = (None,)
        self.held_step = widgets.HTML()
        self.batch = widgets.HTML()
        self.decided = widgets.HTML()
        self.rules = widgets.HTML()
        self.rows: tuple[PendingRow, ...] = ()
        super().__init__([])
        self.add_class("bl-pending")

    def update(self, session: Session, batch: HeldBatch | None, busy: bool) -> None:
        """Show the batch ``session`` holds now (``budgetloop.display.held_batch``): a decided
        call's row goes (its decision is said instead), the others stay as they are (what is
        typed in them, and the focus, with them)."""
        calls = () if batch is None else batch.calls
        rules = session.result.rules if batch is not None else ()
        key = (session, batch is None, tuple((c.call.id, c.decision) for c in calls), rules)
        if key != self._shown:
            kept = {r.call.id: r for r in self.rows if r.session is session}
            self._shown = key
            waiting = [c for c in calls if c.decision is None]
            self.rows = tuple(
                kept.pop(c.call.id) if c.call.id in kept else PendingRow(session, c, self._decided)
                for c in waiting
            )
            for gone in kept.values():  # its call is decided: nothing of it stays live
                _close_all(gone)
            if batch is None:
                self.held_step.value = self.batch.value = self.decided.value = ""
                self.rules.value = ""
                self.children = ()
            else:
                self.held_step.value = held_step_html(batch.step)
                self.batch.value = batch_html(batch)
                self.decided.value = "".join(
                    decided_html(c) for c in calls if c.decision is not None
                )
                self.rules.value = rules_html(session, rules)
                self.children = (self.held_step, self.batch, *self.rows, self.decided, self.rules)
        for row in self.rows:
            row.set_disabled(busy)

    def focus_first(self) -> bool:
        """Put the focus on the first waiting call's Approve (its Edit, when it can only be
        edited); False when none waits."""
        if not self.rows:
            return False
        first = self.rows[0]
        (first.edit_button if first._hidden else first.approve_button).focus()
        return True
