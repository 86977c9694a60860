"""Fork from a step: the context as it stood before it, in an editor, to go on from.

The context comes from the core (``Session.fork(at).messages``). What the editor shows is the
trace's form of each message (``Session.result.messages``: through ``redact=`` when the session
has one), so a secret never reaches the page; a message left as shown goes to the fork as the
session held it, and only an edited one takes the edited text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape

import anywidget
import ipywidgets as widgets

from budgetloop import Message, Session
from budgetloop.display import type_name

from ._text import plural, preview, text
from ._views import message_content


def editable_positions(messages: Sequence[Message]) -> list[int]:
    """The messages an editor lets you change: every tool result, and the last user message."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    tools = [i for i, m in enumerate(messages) if m.role == "tool"]
    return sorted(set(tools) | set(users[-1:]))


def edited_messages(
    real: Sequence[Message], shown: Sequence[Message], edits: Mapping[int, str]
) -> list[Message]:
    """``real`` with each edited message's content replaced; ``edits`` maps a position to the
    editor's text, and a text equal to what was shown (``shown[i].content``) changes nothing."""
    if len(real) != len(shown):
        raise ValueError(
            f"fork editor: the messages shown must be the context's "
            f"{plural(len(real), 'message')}, got {len(shown)}."
        )
    out = list(real)
    for i, value in edits.items():
        if not isinstance(value, str):
            raise TypeError(f"fork editor: message {i} must be text, got {type_name(value)}.")
        if value != (shown[i].content or ""):
            out[i] = replace(real[i], content=value)
    return out


def context_before(session: Session, at: int) -> tuple[list[Message], list[Message]]:
    """The context before step ``at``: as the session holds it, and as its trace shows it."""
    real = session.fork(at).messages
    shown = list(session.result.messages[: len(real)])
    return real, shown


class ScrollHere(anywidget.AnyWidget):
    """Nothing to see: when the page draws it, it scrolls itself (and what follows) into view."""

    _esm = (
        "export default { render({ el }) {"
        " requestAnimationFrame(() => el.scrollIntoView({ block: 'start' })); } };"
    )


class ForkEditor(widgets.VBox):  # type: ignore[misc]
    """The context before step ``at``, each tool result and the last user message in a text
    box; Continue and Cancel are wired by the panel."""

    def __init__(self, at: int, real: Sequence[Message], shown: Sequence[Message]) -> None:
        self.at = at
        self.real = list(real)
        self.shown = list(shown)
        self.texts: dict[int, widgets.Textarea] = {}
        rows: list[widgets.Widget] = [
            ScrollHere(),  # opened from a step lower down: the editor comes into view
            widgets.HTML(
                f'<div class="bl-fork-head">Fork before step {at}: the context as it stood '
                f"({plural(len(shown), 'message')}). Edit a tool result or the last user "
                "message, then Continue: the panel goes on with the fork. Money spent stays "
                "spent; Reset still goes back to the start.</div>"
            ),
        ]
        editable = set(editable_positions(shown))
        for i in range(len(shown)):
            if i in editable:
                rows.append(self._box(i))
            else:
                rows.append(widgets.HTML(_fixed_row(i, shown[i])))
        self.continue_button = widgets.Button(
            description="Continue", tooltip="go on from this context, in this panel"
        )
        self.cancel_button = widgets.Button(description="Cancel", tooltip="close the editor")
        self.continue_button.add_class("bl-continue-button")
        self.cancel_button.add_class("bl-cancel-button")
        rows.append(widgets.HBox([self.continue_button, self.cancel_button]))
        super().__init__(rows)
        self.add_class("bl-fork")

    def _box(self, i: int) -> widgets.Widget:
        m = self.shown[i]
        who = f"[{m.name}] " if m.role == "tool" and m.name else ""
        label = widgets.HTML(
            f'<div class="bl-fork-label">#{i} {escape(m.role)} {text(who)}(editable)</div>'
        )
        box = widgets.Textarea(value=m.content or "", layout=widgets.Layout(width="98%"))
        box.add_class("bl-fork-text")
        box.add_class(f"bl-fork-text-{i}")
        self.texts[i] = box
        return widgets.VBox([label, box])

    def messages(self) -> list[Message]:
        """The context to fork with: the session's messages, with the edits applied."""
        return edited_messages(
            self.real, self.shown, {i: box.value for i, box in self.texts.items()}
        )


def _fixed_row(i: int, m: Message) -> str:
    return (
        f'<div class="bl-fork-fixed"><span class="bl-muted">#{i} {escape(m.role)}</span> '
        f"<pre>{text(preview(message_content(m), 300))}</pre></div>"
    )
