"""The calls a session holds for a person, in the panel: each with its raw and checked arguments,
the batch's worst case against the ceiling, and Approve, Edit (a JSON editor filled with the
checked arguments) and Deny (with a reason).

Every decision is the core's: Approve and Deny call ``session.approve`` and ``session.deny``,
and an edit is checked by ``session.approve(call_id, arguments=...)`` itself; an edit it refuses
(or text that is not a JSON object) shows the error and is not sent. Each control is a plain
button or text box, so the keyboard reaches it (Tab, then Enter or Space).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

import ipywidgets as widgets

from budgetloop import PendingCall, Session

from ._text import text
from ._views import projection_text

Decided = Callable[[], None]  # the panel redraws after a decision


def pending_head(call: PendingCall) -> str:
    """A held call's header: the tool, its id, and its arguments as written and as checked."""
    raw = call.raw_arguments
    written = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    checked = json.dumps(call.arguments, ensure_ascii=False)
    return (
        f'<div class="bl-pending-head"><b>{text(call.name)}</b> '
        f'<span class="bl-muted">call {text(call.id)}, step {call.step}</span></div>'
        f'<div class="bl-pending-args"><span class="bl-muted">as the model wrote them</span> '
        f"<code>{text(written)}</code></div>"
        f'<div class="bl-pending-args"><span class="bl-muted">as checked</span> '
        f"<code>{text(checked)}</code></div>"
    )


def batch_html(pending: tuple[PendingCall, ...]) -> str:
    """What the held batch is about to cost: the turn that reads its results, at worst, against
    the ceiling (the core's projection, as the cost guard made it)."""
    n = len(pending)
    head = (
        f"{n} call{'s' if n != 1 else ''} of this batch wait{'s' if n == 1 else ''} for your "
        "decision; nothing in the batch runs until each is decided"
    )
    projection = pending[0].projection if pending else None
    worst = (
        "the turn that reads its results: no price, so no cost projected"
        if projection is None
        else f"the turn that reads its results, {projection_text(projection)}"
    )
    return (
        f'<div class="bl-pending-batch"><div class="bl-warn">{escape(head)}</div>'
        f'<div class="bl-projection">{escape(worst)}</div></div>'
    )


class PendingRow(widgets.VBox):  # type: ignore[misc]
    """One held call: what it is, and Approve, Edit, Deny."""

    def __init__(self, session: Session, call: PendingCall, decided: Decided):
        self.session = session
        self.call = call
        self._decided = decided
        self.head = widgets.HTML(pending_head(call))
        self.approve_button = widgets.Button(
            description="Approve", tooltip="run this call as checked"
        )
        self.edit_button = widgets.Button(
            description="Edit", tooltip="run this call with arguments you write"
        )
        self.deny_button = widgets.Button(
            description="Deny", tooltip="do not run this call; the model reads the reason"
        )
        # Typed text reaches the kernel when the box loses focus (before the button pressed
        # next is), not keystroke by keystroke: a press never meets half of what was typed.
        self.reason = widgets.Text(
            placeholder="reason the model reads (optional)",
            continuous_update=False,
            layout=widgets.Layout(width="320px"),
        )
        self.editor = widgets.Textarea(
            value=json.dumps(call.arguments, ensure_ascii=False, indent=1),
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
                    [self.approve_button, self.edit_button, self.deny_button, self.reason]
                ),
                self.editor,
                widgets.HBox([self.send_button, self.cancel_button]),
                self.error,
            ]
        )
        self.add_class("bl-pending-call")

    def approve(self) -> None:
        self._decide(lambda: self.session.approve(self.call.id))

    def deny(self) -> None:
        self._decide(lambda: self.session.deny(self.call.id, self.reason.value))

    def open_editor(self) -> None:
        for part in (self.editor, self.send_button, self.cancel_button):
            part.layout.display = None

    def close_editor(self) -> None:
        for part in (self.editor, self.send_button, self.cancel_button):
            part.layout.display = "none"
        self.error.value = ""

    def send_edit(self) -> None:
        """Run the call with the editor's arguments, if the core takes them; else say why."""
        try:
            value = json.loads(self.editor.value)
        except ValueError as exc:
            self.error.value = _error(f"not JSON: {exc}; nothing was sent")
            return
        if not isinstance(value, dict):
            kind = type(value).__name__
            self.error.value = _error(f"expected a JSON object of arguments, got {kind}")
            return
        self._decide(lambda: self.session.approve(self.call.id, arguments=value))

    def _decide(self, decide: Callable[[], None]) -> None:
        try:
            decide()
        except (TypeError, ValueError) as exc:  # the core refused it: said, not sent
            self.error.value = _error(str(exc))
            return
        self.error.value = ""
        self._decided()

    def set_disabled(self, disabled: bool) -> None:
        for part in (
            self.approve_button,
            self.edit_button,
            self.deny_button,
            self.reason,
            self.editor,
            self.send_button,
            self.cancel_button,
        ):
            part.disabled = disabled


def _error(message: str) -> str:
    return f'<div class="bl-error-title">{text(message)}</div>'


class PendingCalls(widgets.VBox):  # type: ignore[misc]
    """The calls a session holds, a row each, redrawn when they change; empty when none."""

    def __init__(self, decided: Decided) -> None:
        self._decided = decided
        self._shown: tuple[object, tuple[str, ...]] = (None, ())
        self.batch = widgets.HTML()
        self.rows: tuple[PendingRow, ...] = ()
        super().__init__([])
        self.add_class("bl-pending")

    def update(self, session: Session, busy: bool) -> None:
        """Show the calls ``session`` holds now: a decided call's row goes, the others stay as
        they are (what is typed in them, and the focus, with them)."""
        pending = session.pending
        key = (session, tuple(c.id for c in pending))
        if key != self._shown:
            kept = {r.call.id: r for r in self.rows if r.session is session}
            self._shown = key
            self.rows = tuple(
                kept.get(call.id) or PendingRow(session, call, self._decided) for call in pending
            )
            self.batch.value = batch_html(pending) if pending else ""
            self.children = (self.batch, *self.rows) if pending else ()
        for row in self.rows:
            row.set_disabled(busy)
