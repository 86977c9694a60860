"""``TraceView``: a saved run in the viewer component, read-only, fast at 100,000 steps."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

import anywidget
import traitlets

from budgetloop import Result, Step
from budgetloop.display import (
    Columns,
    Tally,
    Used,
    columns_of,
    read_columns,
    read_step_at,
    used_after,
)

from ._data import AHEAD, Strings, detail_and_strings, later_data
from ._log import jump_target, request_of
from ._page import (
    FIRST_STEPS,
    asset,
    context_answer,
    fallback,
    reading_document,
    reading_fallback,
    request_text,
    trace_document,
)
from ._status import saved_words, stop_lines
from ._views import as_result
from ._wire import encode, encode_binary

Source = Result | Mapping[str, Any] | str | os.PathLike[str]


class Viewer(anywidget.AnyWidget):
    """The component (``viewer.js``) as a widget: the data once, the selection both ways, and a
    text cut for the page sent whole when the page asks for it."""

    _esm = asset("viewer.js")
    _css = asset("viewer.css")
    data = traitlets.Bytes(b"").tag(sync=True)
    selected = traitlets.Int(-1).tag(sync=True)

    def __init__(
        self, data: dict[str, Any], strings: Strings, *, binary: bool = True, **kwargs: Any
    ) -> None:
        """``binary``: the columns of numbers as raw arrays (``_wire.encode_binary``); a view
        that appends to its columns (the panel's) keeps them JSON."""
        self._strings = strings
        super().__init__(data=encode_binary(data) if binary else encode(data), **kwargs)
        self.on_msg(self._on_message)

    def _on_message(self, _widget: object, content: Any, _buffers: object) -> None:
        """A question from the page (``ask`` numbers it): the answer goes back with it."""
        if not isinstance(content, dict):
            return
        ask = content.get("ask")
        answer = self.answer(content)
        if answer is not None and isinstance(ask, int):
            self.send({"type": "answer", "ask": ask, **answer})

    def answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """What the page asked for: a text it has cut (``full``); None when it is not known."""
        if content.get("type") == "full":
            index = content.get("id")
            if isinstance(index, int) and 0 <= index < len(self._strings.items):
                return {"text": self._strings.whole(index)}
        return None


class TraceView(Viewer):
    """A saved run, step by step: a table of every step (only the rows in view are drawn),
    filters by tool and status, a search as you type over the model's text, the arguments,
    results and errors, jumps to the first error, the first skipped call, the first call a
    person denied, the first under-projected step, the most expensive step and the stop (the
    status filter takes a person's decisions too: denied, edited, approved), and beside it
    the chosen step's meter, card, the context it was sent and the request as sent. All of it
    runs in the browser; ``selected`` is the chosen step's number, set by a click or a key
    there (the kernel is told once the choice has rested for 0.15 s) or by ``show()`` here.
    ``source`` is a Result, ``Result.to_dict()`` data or the path of a saved trace; for a
    path, ``columns`` (the list) are read from the file without building a step, the page is
    sent only them (the search covers the first line of each step's text and its tools'
    names), and it asks for a step's whole detail when the step is opened (``detail_answer``:
    ``record(i)`` reads the step's full record from its line), and for those of the rows in
    view and the jumps' steps ahead (``details_answer``). A file of more than
    ``FIRST_STEPS`` steps is drawn from its first steps, read from the start of the file alone
    (``reading``), and the page asks for the rest once they are drawn (``rest``)."""

    def __init__(self, source: Source, *, title: str = "budgetloop trace") -> None:
        if not isinstance(title, str):
            raise TypeError(f"TraceView: title must be a str, got {type(title).__name__}.")
        self.path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
        self.title = title
        self._source = source
        self._broken: str | None = None  # why a long file could not be read whole
        self._result: Result | None = None  # a long file's: read when first asked for
        self._columns: Columns | None = None  # read when first asked for
        self._first: Columns | None = None  # a long file's first steps, while they are all
        self._later: bytes | None = None  # the calls' texts, once built: sent when asked
        self._before: tuple[list[Used], list[bool]] | None = None  # counted when first asked
        if self.path is not None:
            with contextlib.suppress(OSError, ValueError):  # said by as_result, naming us
                self._first = read_columns(self.path, first=FIRST_STEPS)
            if self._first is not None and len(self._first.index) < FIRST_STEPS:
                self._columns, self._first = self._first, None  # the whole run: no more
        if self._first is not None:
            data, strings = reading_document(self._first, title)
            shown = len(self._first.index)
        else:
            result = self._result = as_result(source)
            rows = None if self.path is None else self.columns  # a file's: only the list
            data, strings = trace_document(
                result, title, messages=False, later=rows is None, rows=rows
            )
            shown = len(result.steps)
        super().__init__(data, strings, selected=0 if shown else -1)

    @property
    def result(self) -> Result:
        """The run. A saved trace of more than ``FIRST_STEPS`` steps is read whole when this
        is first asked for (the page asks for it once it has drawn the first steps)."""
        if self._result is None:
            self._result = as_result(self._source)
        return self._result

    @property
    def reading(self) -> bool:
        """Whether the page has only a long saved trace's first steps so far (``rest`` sends
        it the whole run)."""
        return self._first is not None

    def _unread(self) -> tuple[int, str] | None:
        """A long saved trace not read whole yet: the steps the page has, and its path."""
        if self._result is None and self._first is not None and self.path is not None:
            return len(self._first.index), self.path
        return None

    def rest(self) -> None:
        """Give the page the whole run of a long saved trace whose first steps it has drawn
        (``reading``): the run read (``result``, ``columns``) and sent as ``data``, so a view
        shown after has it too; when the file cannot be read whole now, the first steps stay,
        under a banner that says why. Nothing when the page has the whole run already; a read
        cut short (an interrupted kernel) leaves the first steps to be asked for again."""
        first = self._first
        if first is None:
            return
        try:
            data, strings = trace_document(
                self.result, self.title, messages=False, rows=self.columns
            )
        except (OSError, ValueError) as exc:
            self._broken = str(exc)
            data, strings = reading_document(first, self.title, error=self._broken)
        self._first = None
        self._strings = strings
        self.data = encode_binary(data)

    def answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """The context a step was sent and its request, which the page asks for when the step
        is opened (a long run's messages are not sent with its rows), and a step's whole
        detail (``detail``)."""
        step = content.get("step")
        kind = content.get("type")
        if kind == "step":
            return self.detail_answer(step)
        if kind == "steps":  # the rows in view and the jumps' steps, asked for ahead
            return self.details_answer(content.get("steps"))
        if kind == "full" and step is not None:  # a text a step's detail cut
            return self.detail_text(step, content.get("id"))
        if kind == "rest":  # the first steps are drawn: the whole run, as the new data
            self.rest()
            return None
        if kind == "later":  # the rows are drawn: the calls' texts, as one binary buffer
            self.send({"type": "later"}, buffers=[self.later()])
            return None
        if kind not in ("context", "request"):
            return super().answer(content)
        if isinstance(step, bool) or not isinstance(step, int):
            return None
        if not 0 <= step < len(self.result.steps):
            return None
        if kind == "context":
            return context_answer(self.result, step)
        return {"text": request_text(self.result, step)}

    def detail_answer(self, index: object) -> dict[str, Any]:
        """What the page is sent for a ``{"type": "step", "step": index}`` question: step
        ``index``'s detail (``_data.step_detail``) from its full record (``record``: its line
        in the file, or the kernel's copy), with its own string table; for a question that
        names no step of the run, ``error`` saying so (the page shows it as text)."""
        found = self._detail(index)
        return found if isinstance(found, dict) else found[0]

    def details_answer(self, indexes: object) -> dict[str, Any]:
        """What the page is sent for ``{"type": "steps", "steps": [i, ...]}``, the rows in view
        and the jumps' steps asked for ahead (at most ``AHEAD`` of them): ``details``, each
        step's ``detail_answer`` in the order asked; ``error`` for a question that is not such
        a list."""
        if not isinstance(indexes, list) or len(indexes) > AHEAD:
            got = f"{len(indexes)} items" if isinstance(indexes, list) else type(indexes).__name__
            return {
                "error": f"TraceView: steps must be a list of at most {AHEAD} steps, got {got}."
            }
        return {"details": [self.detail_answer(i) for i in indexes]}

    def detail_text(self, index: object, text: object) -> dict[str, Any]:
        """A text of step ``index``'s detail whole (``text``: its id in the detail's own string
        table), as the page asks for one the detail cut; ``error`` for a question that names
        no such text."""
        found = self._detail(index)
        if isinstance(found, dict):
            return found
        strings = found[1]
        if isinstance(text, bool) or not isinstance(text, int):
            return {"error": f"TraceView: id must be an int, got {type(text).__name__}."}
        if not 0 <= text < len(strings.items):
            return {
                "error": f"TraceView: id must be a text of step {index}'s detail (0 to "
                f"{len(strings.items) - 1}), got {text}."
            }
        return {"text": strings.whole(text)}

    def _detail(self, index: object) -> dict[str, Any] | tuple[dict[str, Any], Strings]:
        """Step ``index``'s detail and its string table, or an answer saying why not."""
        if self._broken is not None:
            return {"error": f"the run could not be read whole: {self._broken}"}
        steps = self.result.steps
        if isinstance(index, bool) or not isinstance(index, int):
            return {"error": f"TraceView: step must be an int, got {type(index).__name__}."}
        if not 0 <= index < len(steps):
            return {
                "error": f"TraceView: step must be a step of the run (0 to {len(steps) - 1}), "
                f"got {index}."
            }
        try:
            step = self.record(index)
        except (OSError, ValueError) as exc:  # the file unreadable now: said, not raised
            return {"error": str(exc)}
        used, carry = self.before()
        return detail_and_strings(step, self.result.budget, used[index], carry[index])

    def before(self) -> tuple[list[Used], list[bool]]:
        """What the run had used before each step (``used_after``) and whether its meter's
        spend holds money a fork carried (``Tally.add``), counted in one pass when a step's
        detail is first asked for."""
        if self._before is None:
            used, counted, figures = Used(0, 0.0, 0), [], Tally()
            carries = []
            for step in self.result.steps:
                counted.append(used)
                carries.append(figures.add(step))
                used = used_after(used, (step,))
            self._before = (counted, carries)
        return self._before

    @property
    def columns(self) -> Columns:
        """The list's columns (``budgetloop.display.Columns``): each step's number, status,
        cost, tokens, a preview of its text and seconds. For a view of a saved trace, read
        from its file without building a step (``read_columns``); else from the run."""
        if self._columns is None:
            if self.path is None:
                self._columns = columns_of(self.result.steps)
            else:
                self._columns = read_columns(self.path)
        return self._columns

    def record(self, index: int) -> Step:
        """Step ``index``'s full record, as a step is read when it is opened: from its line
        in the file for a view of a JSON Lines trace (by the offset ``columns`` keeps), else,
        or when another file has been put at that path since, from the run in the kernel."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"TraceView.record: index must be an int, got {type(index).__name__}.")
        if not 0 <= index < len(self.result.steps):
            raise ValueError(
                f"TraceView.record: index must be a step of the run (0 to "
                f"{len(self.result.steps) - 1}), got {index}."
            )
        if self.path is not None and self.columns.offsets is not None:
            with contextlib.suppress(FileNotFoundError, ValueError):  # moved, replaced, cut
                return read_step_at(self.path, self.columns, index)
        return self.result.steps[index]

    def show(self, index: int) -> None:
        """Choose step ``index`` (0-based, as ``Step.index``; clamped to the steps there are)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"TraceView.show: index must be an int, got {type(index).__name__}.")
        if self.result.steps:
            self.selected = min(max(index, 0), len(self.result.steps) - 1)

    def jump(self, name: str) -> int | None:
        """Choose the step a jump names (``first error``, ``first skipped``, ``first denied``,
        ``first under-projected``, ``most expensive``, ``the stop``); its number, or None when the
        trace has no such step."""
        target = jump_target(self.result, name)
        if target is not None:
            self.selected = target
        return target

    def later(self) -> bytes:
        """What the page is sent once it has drawn the rows: each call's arguments, result or
        error and traceback, and the texts they add (JSON, UTF-8; built once)."""
        if self._later is None:
            self._later = encode(later_data(self.result, self._strings))
        return self._later

    def request(self, index: int) -> dict[str, Any]:
        """The request step ``index`` sent, whole: its messages (as the trace holds them) and
        the tool schemas it was offered (none for a final answer)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(
                f"TraceView.request: index must be an int, got {type(index).__name__}."
            )
        if not 0 <= index < len(self.result.steps):
            raise ValueError(
                f"TraceView.request: index must be a step of the run (0 to "
                f"{len(self.result.steps) - 1}), got {index}."
            )
        return request_of(self.result, index)

    def summary(self) -> str:
        """The run in one line of plain text (what a notebook shows without the widget): how it
        ended, or, for a long saved trace not read whole yet, where it is."""
        unread = self._unread()
        if unread is not None:
            return f"TraceView of {self.title!r}: {saved_words(*unread)}"
        head = stop_lines(self.result)[0][1]
        return f"TraceView of {self.title!r}: {head}"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if bundle is not None else ({}, {})
        data["text/plain"] = self.summary()
        unread = self._unread()  # a long file not read whole: not read for this
        if unread is not None:
            data["text/html"] = reading_fallback(self.title, *unread)
        else:
            data["text/html"] = fallback(self.result, self.title)
        return data, meta
