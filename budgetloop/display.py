"""What a view shows of a run, made by the core: every word, figure and count, formatted.

The notebook panel and the viewer (``budgetloop_widgets``) lay these out and compute nothing:
what each stop means (``stop_means``), the projection and its worst case in words, the meter
(the cost bar's figures and a row for each ceiling, ``meter``), what the next step will do
(``next_turn_text``), what kind of figure a projection is (``why_text``), a batch held for a
person as a view shows it, through ``redact=`` (``held_batch``), and what an edit of it
written over the redacted form means (``edited_arguments``), a run that ended held opened for
a person to decide in a view and taken once decided (``open_held``, ``take_held``), a step's
head line (``step_head``), a fork's carried spend and what a run spent (``spent_text``), each
chart's figures and ceilings (``Tally``, ``charts``: money summed in picodollars), money
(``format_usd``), counts (``count``), a message as a trace writes it (``message_to_dict``) and
a value of the wrong type as an error names it (``type_name``), and a saved run's list read from
its file without building every step (``read_columns``, ``Columns``; its first steps' alone,
``first=``; a step's full record when it is opened, ``read_step_at``). The ceilings' words come
from the ceilings themselves (``_ceilings``), so a new ceiling shows in every view without a line
of the views changing.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ._engine._reading import Model
from ._engine._session import Session
from ._engine._turn import NextTurn
from ._engine._types import Budget, Stop, format_usd
from ._engine._valid import type_name
from ._features._resume import open_held as _open_held
from ._features._resume import take_held as _take_held
from ._forms._charts import (
    Chart,
    Tally,
    ceiling_lines,
    charts,
    spent_text,
    tally,
    whole_context_pico,
)
from ._forms._printable import first_chunk
from ._forms._redact import WITHHOLD, Redactor
from ._rules._budget import Projection
from ._rules._ceilings import (
    BY_NAME,
    Used,
    calls_run,
    clock_text,
    count,
    meter_rows,
    stop_means,
)
from ._tools._approval import Decision, PendingCall
from ._trace._columns import Columns, columns_of, read_columns, read_step_at
from ._trace._result import Result, Step, message_to_dict

if TYPE_CHECKING:
    from ._engine._loop import Loop

__all__ = [
    "BAR_TITLE",
    "NO_PROJECTION",
    "Chart",
    "Columns",
    "HeldBatch",
    "HeldCall",
    "Meter",
    "Tally",
    "Used",
    "carried_text",
    "ceiling_lines",
    "charts",
    "clock_text",
    "columns_of",
    "count",
    "edited_arguments",
    "format_usd",
    "held_batch",
    "message_to_dict",
    "meter",
    "next_turn_text",
    "open_held",
    "plural",
    "projection_text",
    "read_columns",
    "read_step_at",
    "redacted_text",
    "refused_by_projection",
    "spent_text",
    "step_head",
    "stop_means",
    "take_held",
    "tally",
    "type_name",
    "under_projected_text",
    "used_after",
    "used_by",
    "whole_context_pico",
    "why_text",
    "worst_case_text",
]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 step``, ``2 steps``, ``0 steps``: the count and the word in the right form."""
    return f"{count(n)} {word if n == 1 else (words or word + 's')}"


def projection_text(p: Projection) -> str:
    """The projection of the next step in one line, with its verdict. With no
    ``max_output_tokens`` the reply's tokens are not counted: it says 0 out, as it costs it
    (``Projection.tokens_text``, the words a stop's detail and the static page use too). A
    turn fitted to what the budget had left (``min_output_tokens``) ends with
    ``Projection.fitted_text``: ``asked for 312 of 1,000 output tokens: what the budget had
    left``."""
    line = _projection_line(p)
    fitted = p.fitted_text
    return line if fitted is None else f"{line}; {fitted}"


def _projection_line(p: Projection) -> str:
    head = f"projected: {p.tokens_text}"
    if p.cost_usd is None:
        return head + "; no price, so no cost projected"
    head += f" = {format_usd(p.cost_usd)}"
    spent = (
        f"spent {format_usd(p.spent_usd)} + {format_usd(p.cost_usd)} = {format_usd(p.total_usd)}"
    )
    if p.limit_usd is None:
        return f"{head}; {spent}, no max_cost_usd"
    verdict = "fits" if p.fits else "does NOT fit"
    return f"{head}; {spent} of max_cost_usd {format_usd(p.limit_usd)}: {verdict}"


def worst_case_text(p: Projection) -> str:
    """The output tokens the projection assumes, and where from (``Projection.assumed_text``)."""
    return p.assumed_text


def why_text(p: Projection) -> str:
    """What kind of figure the projection is, in one line: a worst case (the reply at
    ``max_output_tokens``), or, with no ``max_output_tokens``, not one (its output uncounted)."""
    if p.output_tokens is None:
        return (
            f"not a worst case: {worst_case_text(p)}, so the reply's output is not counted and "
            "a step's reported cost is higher by what the model writes"
        )
    return (
        f"worst case: {worst_case_text(p)}; the model usually writes fewer, so a step's "
        "reported cost is lower"
    )


def carried_text(carried: float) -> str:
    """Why a fork's spend is more than its steps add up to."""
    return (
        f"spent includes {format_usd(carried)} carried from the run this one was forked from "
        "(its steps after the fork point): no step here accounts for it"
    )


@dataclass(frozen=True)
class Meter:
    """The budget meter at one point of a run, every figure made.

    ``bar`` is the cost bar: the spent part, the projected next step and the ceiling, each as a
    percentage of the bar's width, and whether the next step fits (None: no cost ceiling or
    no price). ``projection`` and ``worst_case`` say the projection in words (None: none was
    made), ``why`` what kind of figure it is (``why_text``), ``tier`` the price tier it was
    projected at, when the price has tiers, and ``rows`` is each ceiling's label and what is
    used of it, and of what."""

    bar: tuple[float, float, float, bool] | None
    projection: str | None
    worst_case: str | None
    rows: tuple[tuple[str, str], ...]
    tier: str | None = None
    why: str | None = None


NO_PROJECTION = "no projection: an imported run's step"
BAR_TITLE = "spent, projected next step, max_cost_usd"  # what the meter's cost bar shows


def meter(projection: Projection | None, used: Used, budget: Budget) -> Meter:
    """The meter for a run that has used ``used`` of ``budget``, before a step projected at
    ``projection``."""
    rows = tuple(meter_rows(budget, used, projection))
    if projection is None:
        return Meter(None, None, None, rows)
    return Meter(
        _bar(projection),
        projection_text(projection),
        worst_case_text(projection),
        rows,
        projection.tier_note,
        why_text(projection),
    )


def _bar(p: Projection) -> tuple[float, float, float, bool] | None:
    if p.limit_usd is None or p.cost_usd is None:
        return None
    scale = max(p.limit_usd, p.spent_usd + p.cost_usd) or 1.0
    return (100 * p.spent_usd / scale, 100 * p.cost_usd / scale, 100 * p.limit_usd / scale, p.fits)


def used_by(result: Result) -> Used:
    """What ``result`` has used of each ceiling."""
    return Used(len(result.steps), result.seconds, calls_run(result.steps))


def used_after(before: Used, steps: Sequence[Step]) -> Used:
    """What a run had used after ``steps``, having used ``before`` before them (a tool call
    counts when its tool was called: ok or error, ``calls_run``)."""
    seconds = before.seconds + sum(s.seconds for s in steps)
    return Used(before.steps + len(steps), seconds, before.tool_calls + calls_run(steps))


def refused_by_projection(stop: Stop) -> bool:
    """``stop`` is a ceiling's that judges a call by its projection: the run ended before a
    call whose projection it refused (which a chart still draws)."""
    ceiling = BY_NAME.get(stop.value)
    return ceiling is not None and ceiling.projects


def next_turn_text(nxt: NextTurn) -> str | None:
    """What the next step will do, in one sentence, when it is not an ordinary call (None)."""
    if nxt.action == "stop":
        why = f": {nxt.detail}" if nxt.detail else ""
        return f"The next step will not call the model: the run stops there ({nxt.stop}){why}."
    if nxt.action == "held":
        return f"The run holds a batch for a person: {nxt.detail or ''}."
    if nxt.action == "final_answer":
        return (
            "The next step is the final answer: the model is called without tools, then the "
            f"run ends ({nxt.stop}): {nxt.detail or ''}."
        )
    return None


def under_projected_text(step: Step) -> str | None:
    """The warning for a step whose model reported more input tokens than its projection
    counted (None: it did not)."""
    under = step.under_projected
    if not under:
        return None
    return (
        f"▲ under-projected: the model reported {plural(under, 'input token')} more than projected"
    )


def step_head(step: Step) -> str:
    """A step's head line: its number, its cost and tokens (reported, or projected when the
    call reported none) and its time (a streamed reply's first chunk's too)."""
    parts = [f"Step {step.index}"]
    usage, p = step.usage, step.projection
    if usage is None and p is None:
        cost = "cost unknown" if step.cost_usd is None else f"{format_usd(step.cost_usd)} reported"
        parts += [cost, "no tokens reported"]
    elif usage is None:
        assert p is not None
        if step.error is not None and step.cost_usd == 0:
            parts += ["nothing charged: the model raised", "no tokens reported"]
        else:
            parts += [
                f"{format_usd(step.cost_usd)} charged at the projection",
                f"{count(p.input_tokens)} in tokens projected, none reported",
            ]
    else:
        cost = "cost unknown" if step.cost_usd is None else f"{format_usd(step.cost_usd)} reported"
        thought = usage.reasoning_tokens
        said = f" ({count(thought)} of them reasoning)" if thought else ""
        tokens = f"{count(usage.input_tokens)} in / {count(usage.output_tokens)} out"
        parts += [cost, f"{tokens} tokens reported{said}"]
    parts.append(f"{step.seconds:.3f} s{first_chunk(step.first_chunk_seconds)}")
    return " · ".join(parts)


# -- a batch held for a person, as a view shows it: through ``redact=`` ------------------------


@dataclass(frozen=True)
class HeldCall:
    """One call of a held batch as a view shows it, every text through the session's
    ``redact=`` (as its trace keeps it): the tool's ``name``, the call's ``shown_id``, its
    arguments as the model wrote them (``written``) and as checked (``checked``, JSON), the
    checked arguments as an editor starts from them (``editable``, indented JSON: a redaction
    mark stands where a hidden value is, see ``edited_arguments``), and the person's decision
    in words (None while it waits). ``call`` is the call itself, real values and all: what the
    session is asked to decide by, never shown. ``hidden`` names the paths of its arguments a
    run that ended held recorded redacted (``PendingCall.redacted``): such a call runs only
    with arguments a person gives (Edit), never approved as recorded."""

    call: PendingCall
    name: str
    shown_id: str
    written: str
    checked: str
    editable: str
    decision: str | None
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeldBatch:
    """The batch a stepped session holds for a person, as a view shows it: the held turn's
    ``step`` (the model's reply, billed: its text, usage and cost, through ``redact=``; its
    calls are not in it until the batch runs) and each held call (``HeldCall``), in request
    order, decided or not."""

    step: Step
    calls: tuple[HeldCall, ...]

    @property
    def waiting(self) -> int:
        """How many calls wait for a decision."""
        return sum(1 for c in self.calls if c.decision is None)


def held_batch(session: Loop) -> HeldBatch | None:
    """The batch ``session`` holds for a person, as a view shows it (None: it holds none)."""
    held = session._held
    if held is None:
        return None
    redactor = _shown_by(session)
    calls = tuple(
        replace(_held_call(redactor, c, held.decisions.get(c.id)), hidden=held.hidden(c))
        for c in held.pending
    )
    return HeldBatch(held.step, calls)


def open_held(
    trace: Result | str | os.PathLike[str],
    complete: Model,
    *,
    tools: Sequence[Callable[..., Any]],
    where: str = "open_held",
    **options: Any,
) -> Session:
    """A run that ended held (``approve="hold"``), opened for a person to decide in a view: a
    ``Session`` holding its batch again as ``resume`` would (the same run id, spend, time and
    standing rules; ``options`` as ``resume`` takes them), with nothing decided but what a
    standing rule decides, and nothing taken. The person decides each call with
    ``session.approve`` and ``session.deny`` (``always=True`` makes a standing rule), then
    ``take_held`` takes the batch before ``step()`` or ``run()`` runs it. ``trace`` is the held
    ``Result`` or the path of its trace; a run that is not held is a ValueError (from a path
    whose batch was taken already: saying when). ``where`` names the caller in an error."""
    return _open_held(Session, where, trace, complete, tools, options)


def take_held(
    session: Session, trace: Result | str | os.PathLike[str], where: str = "take_held"
) -> None:
    """The held batch of a session ``open_held`` opened from ``trace``, every call decided in
    it, taken as ``resume`` takes it: from a path, in that file, once (a ValueError saying when
    and by whom it was taken, if it was; the session then runs nothing), the run then going on
    writing to it; a ``Result`` passed as an object is the caller's to go on from once. A call
    still waiting is a RuntimeError naming it."""
    _take_held(session, where, trace)


def redacted_text(session: Loop, text: str) -> str:
    """``text`` as the session's output forms keep it (through ``redact=``): for words a
    view shows that may quote a held call's values (an error the core raised about an edit)."""
    try:
        return session._redactor.text(text)
    except Exception:
        return WITHHOLD.text(text)


def _shown_by(session: Loop) -> Redactor:
    return session._redactor


def _held_call(redactor: Redactor, call: PendingCall, decision: Decision | None) -> HeldCall:
    try:
        return _shown_call(redactor, call, decision)
    except Exception:  # redact raised: nothing of the call is shown, as a trace withholds it
        return _shown_call(WITHHOLD, call, decision)


def _shown_call(redactor: Redactor, call: PendingCall, decision: Decision | None) -> HeldCall:
    name = redactor.value(call.name)
    shown_id = redactor.value(call.id)
    checked = redactor.value(call.arguments)
    words: str | None = None
    if decision is not None:
        words = decision.approval
        if decision.approval == "edited":
            words = f"edited to {redactor.json(decision.arguments)}"
        elif decision.approval == "denied" and decision.reason:
            words = f"denied (reason: {redactor.text(decision.reason)})"
    return HeldCall(
        call=call,
        name=name if isinstance(name, str) else str(name),
        shown_id=shown_id if isinstance(shown_id, str) else str(shown_id),
        written=redactor.arguments_text(call.raw_arguments),
        checked=redactor.json(call.arguments),
        editable=json.dumps(checked, ensure_ascii=False, indent=1, default=repr),
        decision=words,
    )


def edited_arguments(session: Loop, call: PendingCall, edited: dict[str, Any]) -> dict[str, Any]:
    """The arguments a person wrote in a view's editor, started from ``HeldCall.editable``
    (the checked arguments through ``redact=``), with each redaction mark left in place
    standing for the value it hides: a value (or key) equal to the one shown at the same place
    (the same keys down to it; a list the same length) is the real one. A mark moved elsewhere
    or edited is refused (a ValueError), since it would send the mark's text and not the
    value: write the value itself, or put the mark back where it was shown."""
    redactor = _shown_by(session)
    try:
        shown = redactor.value(call.arguments)
    except Exception:
        redactor, shown = WITHHOLD, WITHHOLD.value(call.arguments)
    if shown == call.arguments:  # nothing is hidden: the edit is what was written
        return edited
    marks = sorted(set(_marks(redactor, shown, call.arguments)), key=len, reverse=True)
    restored = _unmarked(redactor, edited, shown, call.arguments, marks, "arguments")
    assert isinstance(restored, dict)
    return restored


def _unmarked(
    redactor: Redactor, edited: Any, shown: Any, real: Any, marks: Sequence[str], path: str
) -> Any:
    """``edited`` with what is still as shown at its place put back to the real value."""
    if shown != real and _same(edited, shown):
        return copy.deepcopy(real)
    if isinstance(edited, dict) and isinstance(shown, dict) and isinstance(real, dict):
        keys = _shown_keys(redactor, real)
        out: dict[str, Any] = {}
        for key, value in edited.items():
            real_key = keys.get(key)
            if real_key is None or key not in shown:  # a key not shown here: as typed
                _refuse_marks(key, marks, f"{path} key {key!r}")
                out[key] = _unmarked(redactor, value, None, None, marks, f"{path}.{key}")
            else:
                out[real_key] = _unmarked(
                    redactor, value, shown[key], real[real_key], marks, f"{path}.{key}"
                )
        return out
    if (
        isinstance(edited, list)
        and isinstance(shown, list)
        and isinstance(real, list)
        and len(edited) == len(shown) == len(real)
    ):
        return [
            _unmarked(redactor, e, s, r, marks, f"{path}[{i}]")
            for i, (e, s, r) in enumerate(zip(edited, shown, real, strict=True))
        ]
    for where, text in _texts(edited, path):  # as typed: no mark may be in it
        _refuse_marks(text, marks, where)
    return edited


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON says it (``1`` is not ``true``)."""
    return type(a) is type(b) and a == b if not isinstance(a, (dict, list)) else a == b


def _shown_keys(redactor: Redactor, real: dict[str, Any]) -> dict[str, str | None]:
    """Each key as shown, and the real key it stands for (None: it stands for more than one)."""
    keys: dict[str, str | None] = {}
    for key in real:
        shown = next(iter(redactor.value({key: None})))
        keys[shown] = None if shown in keys else key
    return keys


def _marks(redactor: Redactor, shown: Any, real: Any) -> Iterator[str]:
    """The redaction marks in ``shown``: what stands where ``real`` differs, in a text the
    common start and end cut away."""
    if isinstance(shown, dict) and isinstance(real, dict):
        keys = _shown_keys(redactor, real)
        for key, value in shown.items():
            real_key = keys.get(key)
            if real_key != key:
                yield from _mark(key, real_key)
            if real_key is not None:
                yield from _marks(redactor, value, real[real_key])
    elif isinstance(shown, list) and isinstance(real, list) and len(shown) == len(real):
        for s, r in zip(shown, real, strict=True):
            yield from _marks(redactor, s, r)
    elif shown != real and isinstance(shown, str):
        yield from _mark(shown, real)


def _mark(shown: str, real: Any) -> Iterator[str]:
    if not isinstance(real, str):
        if shown:
            yield shown
        return
    start = 0
    while start < min(len(shown), len(real)) and shown[start] == real[start]:
        start += 1
    end = 0
    while end < min(len(shown), len(real)) - start and shown[-1 - end] == real[-1 - end]:
        end += 1
    mark = shown[start : len(shown) - end]
    if mark:
        yield mark


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every text in a JSON value (keys too), with where it is."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path} key {key!r}", key
            yield from _texts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _texts(item, f"{path}[{i}]")


def _refuse_marks(text: str, marks: Sequence[str], where: str) -> None:
    for mark in marks:
        if mark in text:
            raise ValueError(
                f"edit: {where} must be the value itself, or a redaction mark left where it "
                f"was shown (a mark stands for the value it hides only there), got the mark "
                f"{mark!r} moved or changed."
            )
