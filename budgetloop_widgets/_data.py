"""A run as the viewer component reads it: compact, JSON-ready columns, every text as text.

The component (``viewer.js``) gets a run once, in this form, and does the rest in the browser:
the rows, filters, search, jumps, the keyboard and the chosen step's detail. Columns hold one
entry per step (``steps``), per tool call (``calls``) and, where the page has no kernel to ask,
per message (``messages``). Every text is kept once in a string table, cut at ``CUT``
characters and written by the core's ``printable`` (control and format characters, U+202E
and the zero-width ones among them, as escapes); the
component puts strings in the page with ``textContent`` only.

What the component says about a run in words (its banner, each step's head line and cost, the
meter before each step) is worded here, by the core's functions (``budgetloop.display``); the
component formats no money, words no projection and sums no ceiling.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from budgetloop import (
    Budget,
    CallRecord,
    ContextEdit,
    Message,
    Result,
    Step,
    format_usd,
    printable,
)
from budgetloop.display import (
    BAR_TITLE,
    NO_PROJECTION,
    Columns,
    Tally,
    Used,
    carried_text,
    columns_of,
    meter,
    step_head,
    under_projected_text,
    used_after,
)

from ._log import BITS, FINAL, JUMPS, STATUSES, Jumps, column_flags, sent_counts
from ._status import stop_lines
from ._views import context_marks, edited_text

CUT = 20_000  # characters of one text sent to the page; the rest is fetched on demand
ROLES = ("system", "user", "assistant", "tool")
CALL_STATUSES = {"ok": 0, "error": 1, "skipped": 2, "denied": 3}
APPROVALS = {None: 0, "approved": 1, "edited": 2, "denied": 3}  # a person's decision, if any
_SEP = "\ue000"  # joins the table for one escaping pass; a private-use character, kept as is


class Strings:
    """The string table: each distinct text once (by id), cut at ``cut`` characters."""

    def __init__(self, cut: int = CUT) -> None:
        self.cut = cut
        self.ids: dict[str, int] = {}
        self.items: list[str] = []  # as given, cut
        self.full: dict[int, str] = {}  # the texts that were cut, whole, by id
        self.sent = 0  # how many items have gone to the page

    def id(self, value: str | None) -> int:
        """The id of ``value`` (-1 for None), added on first sight."""
        if value is None:
            return -1
        found = self.ids.get(value)
        if found is not None:
            return found
        index = self.ids[value] = len(self.items)
        if len(value) > self.cut:
            self.full[index] = value
            value = value[: self.cut]
        self.items.append(value)
        return index

    def whole(self, index: int) -> str:
        """The text of ``index`` uncut, as the page shows it (asked for on demand)."""
        return escaped([self.full.get(index, self.items[index])])[0]

    def cut_lengths(self, start: int = 0) -> dict[str, int]:
        """The full length of each text from ``start`` on that was cut, by id."""
        return {str(i): len(v) for i, v in self.full.items() if i >= start}

    def take(self) -> tuple[int, list[str]]:
        """The texts not yet sent to the page, escaped, and the id of the first."""
        start, self.sent = self.sent, len(self.items)
        return start, escaped(self.items[start:])


def shown(text: str) -> str:
    """A text as the page may show it: the core's one rule (``printable``), newlines kept."""
    return printable(text, keep_newlines=True)


# The ASCII characters ``printable`` writes as escapes, asked of it once: a table with none of them
# (the usual case) is checked in one pass over its bytes instead of escaped character by character.
_ASCII_SHOWN = bytes(c for c in range(128) if shown(chr(c)) != chr(c))


def escaped(items: list[str]) -> list[str]:
    """``printable`` of each text (newlines kept), in one pass over them all, and any lone
    surrogate written as an escape so that the page's JSON is UTF-8."""
    if not items:
        return []
    probe = "\n".join(items)  # a character shown keeps
    if probe.isascii():
        raw = probe.encode("ascii")
        if len(raw.translate(None, _ASCII_SHOWN)) == len(raw):
            return items  # nothing in them to escape
    joined = _SEP.join(items)
    if joined.count(_SEP) != len(items) - 1:  # a text holds the separator itself
        out = [shown(item) for item in items]
    else:
        out = shown(joined).split(_SEP)
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        out = [_encodable(item) for item in out]
    return out


def _encodable(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    return value


def json_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False)`` (``repr`` for what JSON cannot hold), as one
    encoder for many values: building the encoder is most of the cost of dumping a small dict.
    Use one per batch (it is not for two threads at once)."""
    encoder = json.JSONEncoder(ensure_ascii=False, default=repr)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator in this Python: the plain way
        return encoder.encode
    one = make(
        {}, encoder.default, json.encoder.encode_basestring, None,
        ": ", ", ", False, False, True,
    )  # fmt: skip

    def dump(value: Any) -> str:
        if isinstance(value, str):
            return encoder.encode(value)
        try:
            return "".join(one(value, 0))
        except (ValueError, RecursionError):  # a cycle: said, as the core says it
            return repr(value)

    return dump


json_text = json_encoder()


def arguments_json(
    arguments: str | dict[str, Any] | None, dump: Callable[[Any], str] = json_text
) -> str:
    """Arguments as text: a string as the model wrote it, anything else as JSON."""
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else dump(arguments)


RULES_START = "// -- the core's rules, as _data.py's viewer_rules writes them --"
RULES_END = "// -- end of the core's rules --"
AHEAD = 64  # steps whose details the page asks for ahead in one question, at most


def viewer_rules() -> str:
    """What ``viewer.js`` keeps of the rules the columns are written by (the status bits, the
    jumps, the roles, a call's statuses and decisions), written from them: the component holds
    this block as it is, and a test holds it equal to what this writes."""
    values = {
        "STATUS": list(STATUSES),
        "BITS": BITS,
        "FINAL": FINAL,
        "JUMPS": list(JUMPS),
        "ROLES": list(ROLES),
        "CALL_STATUS": sorted(CALL_STATUSES, key=CALL_STATUSES.__getitem__),
        "APPROVAL": [a or "" for a in sorted(APPROVALS, key=APPROVALS.__getitem__)],
        "DETAIL_IDS": DETAIL_IDS,
        "AHEAD": AHEAD,
    }
    lines = [
        f"const {name} = {json.dumps(value, ensure_ascii=False)};"
        for name, value in values.items()
    ]
    return "\n".join([RULES_START, *lines, RULES_END])


def row_columns(
    columns: Columns, sid: Callable[[str | None], int], first_call: int = 0
) -> dict[str, list[Any]]:
    """What the list shows and filters of each step, from its columns
    (``budgetloop.display.Columns``, a file's or a loaded run's): its cost (``usd``, as the
    core writes it), tokens, projected input tokens (``pin``), seconds, its tags as
    ``_log.bits_of`` and its calls as the index of the first (``c0``)."""
    calls = itertools.accumulate((len(c) for c in columns.calls), initial=first_call)
    return {
        "cost": list(columns.cost_usd),
        "usd": [sid(format_usd(c, column=True)) for c in columns.cost_usd],  # one precision
        "in": list(columns.input_tokens),
        "out": list(columns.output_tokens),
        "pin": list(columns.projected),  # None: an imported step
        "s": list(columns.seconds),  # as loaded: any finite float
        "fl": column_flags(columns),
        "c0": list(itertools.islice(calls, len(columns.index))),
    }


def step_columns(
    steps: Sequence[Step], sid: Callable[[str | None], int], first_call: int = 0
) -> dict[str, list[Any]]:
    """One entry per step: its ``row_columns``, and the rest of its figures and texts (numbers
    as numbers, texts as string ids)."""
    p = [s.projection for s in steps]
    u = [s.usage for s in steps]
    return {
        **row_columns(columns_of(steps), sid, first_call),
        "rsn": [0 if x is None else x.reasoning_tokens for x in u],  # part of "out"
        "pout": [None if x is None else x.output_tokens for x in p],
        "pcost": [None if x is None else x.cost_usd for x in p],
        "pspent": [None if x is None else x.spent_usd for x in p],
        "plimit": [None if x is None else x.limit_usd for x in p],
        "pfits": [1 if x is None or x.fits else 0 for x in p],
        "ptier": [-1 if x is None or (n := x.tier_note) is None else sid(n) for x in p],
        "text": [-1 if (t := s.text) is None else sid(t) for s in steps],
        "err": [-1 if (e := s.error) is None else sid(e) for s in steps],
        "tb": [-1 if (b := s.traceback) is None else sid(b) for s in steps],
        "cx": [marks_data(s.context, sid) for s in steps],
    }


def marks_data(
    edit: ContextEdit | None, sid: Callable[[str | None], int], whose: str = "this step's request"
) -> dict[str, Any] | None:
    """What the page marks of a context policy's request (``_views.context_marks``), its texts
    as string ids: the line saying what the policy did (``h``), each context message not sent as
    it was with its label (``d``: [index, label]), and each message the policy wrote (``w``:
    [the context message it stands after, label, role, text]); None where no policy edited it."""
    if edit is None:
        return None
    line, marks, written = context_marks(edit, whose)
    return {
        "h": sid(line),
        "d": [[i, sid(label)] for i, label in marks],
        "w": [[after, sid(label), sid(role), sid(body)] for after, label, role, body in written],
    }


def step_texts(
    steps: Sequence[Step],
    budget: Budget,
    sid: Callable[[str | None], int],
    before: Used,
    figures: Tally | None = None,
) -> dict[str, list[Any]]:
    """What the viewer says of each step, every word and figure made by the core
    (``budgetloop.display``): its head line (``head``) and the meter before it: the warning
    when its model reported more input tokens than projected (``under``), the projection and
    its worst case in words (``proj``, ``worst``), the cost bar's
    figures (``bar``) and each ceiling's row (``mr``, in the order of ``meter_labels``), and
    whether the spend its meter says holds money a fork carried (``carry``: 1 from the first
    step after the fork point, 0 for the steps the fork kept, which came before that money).
    ``before`` is what the run had used before the first of ``steps``, ``figures`` the core's
    count of its steps before them (``budgetloop.display.Tally``), which counts ``steps`` too."""
    out: dict[str, list[Any]] = {
        k: [] for k in ("head", "under", "proj", "worst", "bar", "mr", "carry")
    }
    used = before
    figures = Tally() if figures is None else figures
    for step in steps:
        p = step.projection
        out["carry"].append(int(figures.add(step)))
        shown = meter(p, used, budget)
        out["head"].append(sid(step_head(step)))
        out["under"].append(sid(under_projected_text(step)))
        out["proj"].append(sid(shown.projection or NO_PROJECTION))
        out["worst"].append(sid(shown.why))
        out["bar"].append(None if shown.bar is None else [*shown.bar[:3], int(shown.bar[3])])
        out["mr"].append([sid(text) for _, text in shown.rows])
        used = used_after(used, (step,))
    return out


def meter_labels(budget: Budget, sid: Callable[[str | None], int]) -> list[int]:
    """The label of each row of the meter (``step_texts``' ``mr``)."""
    return [sid(label) for label, _ in meter(None, Used(0, 0.0, 0), budget).rows]


def call_columns(
    calls: Sequence[CallRecord], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """One entry per tool call, in order: ``call_rows`` and ``call_texts`` together."""
    return {**call_rows(calls, sid), **call_texts(calls, sid)}


def call_rows(
    calls: Sequence[CallRecord], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """What the rows and filters need of each call: its tool, status, a person's decision
    (``ap``, as ``APPROVALS``) and microseconds."""
    return {
        "name": [sid(c.name) for c in calls],
        "st": [CALL_STATUSES[c.status] for c in calls],
        "ap": [APPROVALS[c.approval] for c in calls],
        "s": [float(c.seconds) for c in calls],
    }


def call_texts(
    calls: Sequence[CallRecord], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """The rest of each call, for the search and the detail: the arguments as the model wrote
    them (``raw``) and as the tool got them (``args``, -1 when they were not checked), the
    argument paths that were coerced (``co``), its result or error (for a denied call, what the
    model read, and what an approve raised or returned instead of a decision), traceback and
    full length if it was cut for the model (``tr``); and the MCP server of each call (``srv``,
    -1 for a function's), when any call was an MCP tool's."""
    dump = json_encoder()
    raw = [arguments_json(c.raw_arguments, dump) for c in calls]
    servers = {"srv": [sid(c.server) for c in calls]} if any(c.server for c in calls) else {}
    return {
        **servers,
        "raw": [sid(text) for text in raw],
        "args": [_checked(c, text, sid, dump) for c, text in zip(calls, raw, strict=True)],
        "co": [[sid(path) for path in c.coerced] if c.coerced else None for c in calls],
        "out": [sid(_outcome(c)) for c in calls],
        "tb": [-1 if (b := c.traceback) is None else sid(b) for c in calls],
        "tr": [c.truncated for c in calls],
    }


def _outcome(call: CallRecord) -> str | None:
    """A call's result or error as the detail shows it."""
    if call.status == "ok":
        return call.result
    if call.status == "denied":
        return call.content if call.error is None else f"{call.content}\n{call.error}"
    return call.error


def later_data(result: Result, strings: Strings) -> dict[str, Any]:
    """What a page drawn from ``run_data(..., later=True)`` is sent next: each call's texts,
    and the texts they add to the string table."""
    calls = call_texts(calls_of(result.steps), strings.id)
    start, items = strings.take()
    return {
        "strings_from": start,
        "strings": items,
        "cut": strings.cut_lengths(start),
        "calls": calls,
    }


def step_detail(step: Step, budget: Budget, before: Used, carry: bool) -> dict[str, Any]:
    """Step ``step``'s whole detail as the page asks for it when the step is opened: each of
    its ``step_columns`` and ``step_texts`` (one value each, not a list) in ``step``, each of
    its calls' ``call_columns`` in ``calls``, with a string table of its own (``strings``,
    escaped, and ``cut``: the full length of each text cut) that its ids index (the keys that
    hold ids are ``DETAIL_IDS``). ``before`` is what the run had used before it, ``carry``
    what ``Tally.add`` said of it in its run."""
    return detail_and_strings(step, budget, before, carry)[0]


def detail_and_strings(
    step: Step, budget: Budget, before: Used, carry: bool
) -> tuple[dict[str, Any], Strings]:
    """``step_detail`` and its string table (whose ``whole`` gives a text it cut)."""
    strings = Strings()
    sid = strings.id
    one = {**step_columns([step], sid), **step_texts([step], budget, sid, before)}
    one["carry"] = [int(carry)]
    calls = call_columns(step.tool_calls, sid)
    start, items = strings.take()
    detail = {
        "index": step.index,
        "step": {name: values[0] for name, values in one.items() if name not in ("c0", "cx")},
        "calls": calls,
        "strings": items,
        "cut": strings.cut_lengths(start),
    }
    return detail, strings


DETAIL_IDS = {  # the keys of a step's detail that hold string ids (a list of them: mr, co)
    "step": ["usd", "ptier", "text", "err", "tb", "head", "under", "proj", "worst", "mr"],
    "calls": ["name", "srv", "raw", "args", "co", "out", "tb"],
}


def _checked(
    call: CallRecord, raw: str, sid: Callable[[str | None], int], dump: Callable[[Any], str]
) -> int:
    """The id of the checked arguments' text (-1: not checked); the raw text when equal."""
    if call.arguments is None:
        return -1
    return sid(raw if call.arguments == call.raw_arguments else dump(call.arguments))


def message_columns(
    messages: Sequence[Message], sid: Callable[[str | None], int]
) -> dict[str, list[Any]]:
    """One entry per message: role, content, name, call id and its tool calls."""
    dump = json_encoder()
    return {
        "role": [ROLES.index(m.role) if m.role in ROLES else sid(m.role) + 10 for m in messages],
        "c": [sid(m.content) for m in messages],
        "nm": [sid(m.name) for m in messages],
        "id": [sid(m.tool_call_id) for m in messages],
        "tc": [
            [[sid(c.name), sid(arguments_json(c.arguments, dump)), sid(c.id)] for c in calls]
            if (calls := m.tool_calls)
            else None
            for m in messages
        ],
    }


def calls_of(steps: Sequence[Step]) -> list[CallRecord]:
    return [c for s in steps for c in s.tool_calls]


_STYLE = re.compile(r' style="[^"]*"')  # _svg writes every attribute value escaped, in "..."


def unstyled(svgs: Sequence[str]) -> list[str]:
    """The package's charts without their inline styles: the viewer's stylesheet colours them
    by class, and a page whose policy allows no inline style logs nothing."""
    return [_STYLE.sub("", svg) for svg in svgs]


def run_data(
    result: Result,
    strings: Strings,
    *,
    name: str = "",
    charts: Sequence[str] = (),
    messages: bool = True,
    tokens: Sequence[int] | None = None,
    later: bool = False,
    rows: Columns | None = None,
) -> dict[str, Any]:
    """One run: its banner (in words), ceilings, steps, calls and jumps; its messages too
    unless ``messages`` is False (a widget sends a step's context when it is opened). With
    ``later`` only what the rows need of each call is here, and ``later_data`` is the rest (a
    long run is on screen before its calls' texts have been sent). With ``rows`` (the run's
    columns) its steps and calls are only what the list shows and filters (``rows_data``:
    each step's text a preview) and the page asks for a step's detail (``step_detail``) when
    it is opened."""
    steps = result.steps
    b = result.budget
    sid = strings.id
    carried = result.carried_usd  # a pass over every step: once
    if rows is not None:
        columns, calls = rows_data(rows, sid)
    else:
        columns = step_columns(steps, sid)
        columns.update(step_texts(steps, b, sid, Used(0, 0.0, 0)))  # steps before: none
        calls = (call_rows if later else call_columns)(calls_of(steps), sid)
    head = {
        "banner": [[kind, sid(line)] for kind, line in stop_lines(result, carried)],
        "answered": result.answered,
        "ended": result.stop is not None,
        "meter_labels": meter_labels(b, sid),
        "carried": carried,
        "carried_text": sid(carried_text(carried)) if carried else -1,
        "edited": list(result.edited),
        "edited_text": sid(edited_text(result)) if result.edited else -1,
        "schemas": sid(json.dumps(list(result.tools), ensure_ascii=False, indent=1)),
        "ntools": len(result.tools),
        "sent": sent_counts(result),
    }
    return {
        **_run(sid, name, head, columns, calls, stopped=result.stop is not None),
        "later": later and rows is None,
        "rows": rows is not None,
        "messages": message_columns(result.messages, sid) if messages else None,
        "tokens": None if tokens is None else list(tokens),
        "charts": unstyled(charts),
    }


def reading_data(
    columns: Columns, strings: Strings, banner: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """The first steps of a long saved run, drawn while the rest is read (``partial``: the page
    asks the kernel for the whole run once they are drawn, and asks for no step's detail
    before): their rows (``rows_data``) under ``banner``'s lines; what only the whole run
    says (its stop, spend, tools, the messages each step was sent) is not here yet."""
    sid = strings.id
    steps, calls = rows_data(columns, sid)
    head = {
        "banner": [[kind, sid(line)] for kind, line in banner],
        "answered": False,
        "ended": False,
        "meter_labels": [],
        "carried": 0.0,
        "carried_text": -1,
        "edited": [],
        "edited_text": -1,
        "schemas": sid("[]"),
        "ntools": 0,
        "sent": [],
    }
    return {
        **_run(sid, "", head, steps, calls, stopped=False),
        "later": False,
        "rows": True,
        "partial": True,
        "messages": None,
        "tokens": None,
        "charts": [],
    }


def _run(
    sid: Callable[[str | None], int],
    name: str,
    head: dict[str, Any],
    steps: dict[str, list[Any]],
    calls: dict[str, list[Any]],
    *,
    stopped: bool,
) -> dict[str, Any]:
    """What every run's data holds: its name, its ``head`` (what the banner, the meter and a
    step's request say of the run), its steps and calls, and its jumps over them."""
    return {
        "name": sid(name),
        **head,
        "bar_title": sid(BAR_TITLE),
        "steps": steps,
        "calls": calls,
        "jumps": Jumps().extend(steps["cost"], steps["fl"], stopped=stopped),
    }


def rows_data(
    columns: Columns, sid: Callable[[str | None], int]
) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """A run's steps and calls as far as its list shows and filters them, from its columns
    alone: each step's ``row_columns`` and its preview (``text``; ``err`` is -1: a model
    error's preview is its text), each call's tool and status (``name``, ``st``) and a
    person's decision (``ap``)."""
    steps = row_columns(columns, sid)
    steps["text"] = [sid(p) for p in columns.preview]
    steps["err"] = [-1] * len(columns.preview)
    calls: dict[str, list[Any]] = {
        "name": [sid(name) for tools in columns.tools for name in tools],
        "st": [CALL_STATUSES[s] for c in columns.calls for s, _ in c],
        "ap": [APPROVALS[a] for c in columns.calls for _, a in c],
    }
    return steps, calls


def document(
    kind: str, title: str, runs: list[dict[str, Any]], strings: Strings, **extra: Any
) -> dict[str, Any]:
    """What the component renders: a ``kind`` ("trace", "compare", "panel") of ``runs``, and
    the string table (every text not yet sent)."""
    start, items = strings.take()
    return {
        "v": 1,
        "kind": kind,
        "title": title,
        "strings": items,
        "cut": strings.cut_lengths(start),
        "runs": runs,
        **extra,
    }
