"""What every importer fills in, and the one way it becomes a ``Result``.

An importer reads its format into ``Turn``s (one per model call: what the model said and the
calls it asked for) and ``Execution``s (each tool run the source recorded). ``pair`` gives each
execution to the call it answers: by call id, else by order and name (the first call of that
name not yet answered, in the latest model call that started before the execution; an
execution that names no tool takes the first call not yet answered). ``build``
makes the steps, the context and the run, with what the source does not hold left absent.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._engine._types import Budget, Message, Stop, ToolCall, Usage, from_pico, to_pico
from .._rules._budget import Projection
from .._trace._result import (
    Approval,
    CallRecord,
    Imported,
    Result,
    RunOptions,
    Status,
    Step,
    new_run_id,
)

NO_RESULT = "the source records no result for this call"


@dataclass
class Execution:
    """A tool run as the source recorded it."""

    name: str | None
    call_id: str | None
    arguments: Any  # as the source recorded them (a JSON string or data), or None
    start: float
    seconds: float = 0.0
    result: str | None = None
    error: str | None = None  # set when the run failed
    traceback: str | None = None  # the failure's, where the source keeps one
    status: str | None = None  # budgetloop's own spans say it
    checked: dict[str, Any] | None = None  # budgetloop's own: the arguments the tool got
    coerced: tuple[str, ...] = ()
    truncated: int | None = None
    approval: str | None = None  # budgetloop's own: a person's decision on the call
    order: int = 0  # where the source has it: what happened at the same time comes in this order
    read: str | None = None  # what the model was sent as the result, where the source has it


@dataclass
class Call:
    """A tool call the model asked for, and the execution that answered it, once paired."""

    name: str | None
    call_id: str | None
    raw_arguments: Any
    execution: Execution | None = None


@dataclass
class Turn:
    """A model call: when, what it said, what it cost."""

    start: float
    end: float
    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    usage: Usage | None = None
    cost: float | None = None
    error: str | None = None
    traceback: str | None = None  # the model call's failure's, where the source keeps one
    model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    projection: Projection | None = None
    skipped: list[str] = field(default_factory=list)  # budgetloop's own: why calls were skipped
    order: int = 0  # as Execution.order


@dataclass
class Run:
    """Everything an importer read about one run, before it is a ``Result``."""

    format: str
    source: str
    path: str | None
    turns: list[Turn]
    context: list[Message]  # what the first model call was sent
    executions: list[Execution] = field(default_factory=list)
    tools: tuple[dict[str, Any], ...] = ()
    run_id: str | None = None
    stop: Stop | None = None  # as the source says it; else derived from the last reply
    stop_known: bool = False  # the source says how the run ended (None: it had not ended)
    detail: str | None = None
    error: str | None = None
    answer: str | None = None
    cost: float | None = None  # the source's total, when it has one
    seconds: float | None = None
    budget: Budget | None = None
    max_output_tokens: int | None = None
    timed: bool = True  # the source records when things happened
    content: bool = True  # the source records what was said
    flags_errors: bool = True  # the source marks a tool's result that is an error
    read: dict[str, str] = field(default_factory=dict)  # call id -> what a model call was sent
    raised: bool = False  # the source's run ended in ``error`` (an exception, a tripped guard)
    options: dict[str, Any] = field(default_factory=dict)  # the run options it records


def pair(turns: list[Turn], executions: Sequence[Execution]) -> None:
    """Give each execution to the call it answers (see the module's text). An execution no
    call asked for (a source that records the runs but not the replies) becomes a call of the
    latest model call that started before it. Each execution is placed in time by a binary
    search, and each call is answered once, so a long run pairs in n log n."""
    keys = [(t.start, t.order) for t in turns]
    by_id, by_name = _Waiting(), _Waiting()
    for index, turn in enumerate(turns):
        for call in turn.calls:
            if call.call_id:
                by_id.add(call.call_id, index, call)
            by_name.add(call.name, index, call)
            by_name.add(_ANY, index, call)
    for execution in sorted(executions, key=lambda e: (e.start, e.order)):
        latest = max(bisect_right(keys, (execution.start, execution.order)) - 1, 0)
        found = None
        if execution.call_id:
            found = by_id.take(execution.call_id, latest, execution.name, after=True)
        if found is None:  # no id, or none that matches: by order and name
            key = _ANY if execution.name is None else execution.name
            found = by_name.take(
                key, latest, execution.name, after=False, arguments=execution.arguments
            )
        if found is None and turns:
            arguments = "{}" if execution.arguments is None else execution.arguments
            found = Call(execution.name, execution.call_id, arguments)
            turns[latest].calls.append(found)
        if found is not None:
            found.execution = execution


_ANY = object()  # the key under which every call waits, for an execution that names no tool


class _Waiting:
    """Calls not yet answered, under a key (a call id, a tool name), by the model call that
    asked for them; answered calls are dropped as they are met."""

    def __init__(self) -> None:
        self._turns: dict[Any, list[int]] = {}  # key -> model calls with calls waiting, in order
        self._calls: dict[Any, dict[int, deque[Call]]] = {}

    def add(self, key: Any, index: int, call: Call) -> None:
        turns = self._turns.setdefault(key, [])
        if not turns or turns[-1] != index:
            turns.append(index)
        self._calls.setdefault(key, {}).setdefault(index, deque()).append(call)

    def take(
        self, key: Any, latest: int, name: str | None, *, after: bool, arguments: Any = None
    ) -> Call | None:
        """The call waiting under ``key`` in the latest model call at or before ``latest``
        (with ``after``, else the earliest after it): in that call, the first of the tool
        ``name`` asked with these ``arguments`` (as the execution recorded them) if there is
        one, else the first of the tool ``name``, else the first."""
        turns = self._turns.get(key)
        if not turns:
            return None
        pos = bisect_right(turns, latest) - 1
        while pos >= 0:
            found = self._from(key, turns, pos, name, arguments)
            if found is not None:
                return found
            pos = min(pos, len(turns)) - 1
        pos = bisect_right(turns, latest)
        while after and pos < len(turns):
            found = self._from(key, turns, pos, name, arguments)
            if found is not None:
                return found
        return None

    def _from(
        self, key: Any, turns: list[int], pos: int, name: str | None, arguments: Any = None
    ) -> Call | None:
        """The call to answer in the model call ``turns[pos]``; an emptied one is dropped
        (the caller's position then holds the next one)."""
        waiting = self._calls[key][turns[pos]]
        while waiting and waiting[0].execution is not None:
            waiting.popleft()
        if not waiting:
            del self._calls[key][turns[pos]]
            turns.pop(pos)
            return None
        first = waiting[0]
        if name is None or (first.name == name and _same(first.raw_arguments, arguments)):
            return first  # (no name to look for: the first waiting)
        unanswered = [c for c in waiting if c.execution is None and c.name == name]
        same = (c for c in unanswered if _same(c.raw_arguments, arguments))
        chosen = next(same, unanswered[0] if unanswered else None)
        return first if chosen is None else chosen


def _same(asked: Any, ran: Any) -> bool:
    """Whether a call's arguments are those an execution recorded (JSON text compared as the
    data it holds); an execution that recorded none matches any."""
    if ran is None:
        return True
    return bool(_data(asked) == _data(ran))


def _data(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            return value
    return value


def _record(call: Call, skipped: list[str], unread: str | None = None) -> CallRecord:
    """The call as the trace keeps it. ``unread``: why no model read its result (the run ended
    first), for a call the source records no run of: it was not run. A call the source records
    running was run, read or not: it is ``ok`` or ``error`` as its run says."""
    run = call.execution
    raw = call.raw_arguments
    if run is None:
        why = unread if unread is not None else skipped.pop(0) if skipped else NO_RESULT
        name = cast(str, call.name)  # a call may have no name; the trace keeps None
        return CallRecord(name, call.call_id or "", raw, None, "skipped", error=why)
    status: Status = "error" if run.error is not None else "ok"
    if run.status in ("ok", "error"):
        status = "ok" if run.status == "ok" else "error"
    checked = run.checked if run.checked is not None else _as_object(raw)
    if run.status == "denied":  # a person denied it: not run, the reason as its result
        return CallRecord(
            name=cast(str, call.name),
            id=call.call_id or run.call_id or "",
            raw_arguments=raw,
            arguments=checked,
            status="denied",
            result=run.result,
            error=run.error,
            approval="denied",
        )
    approval: Approval | None = None
    if run.approval == "approved":
        approval = "approved"
    elif run.approval == "edited":
        approval = "edited"
    return CallRecord(
        name=cast(str, call.name),
        id=call.call_id or run.call_id or "",
        raw_arguments=raw,
        arguments=checked,
        status=status,
        result=(run.read if run.read is not None else run.result) if status == "ok" else None,
        error=(run.read or run.error or "") if status == "error" else None,
        traceback=run.traceback if status == "error" else None,
        seconds=run.seconds,
        coerced=run.coerced,
        truncated=run.truncated,
        approval=approval,
    )


def _as_read(turns: list[Turn], read: dict[str, str]) -> None:
    """What later model calls were sent as each call's result (``Run.read``), given to the
    call: as its execution's ``read``, or as the execution of a call the source records no run
    of (a structured answer's tool, a handoff)."""
    if not read:
        return
    for turn in turns:
        for call in turn.calls:
            said = read.get(call.call_id) if call.call_id else None
            if said is None:
                continue
            if call.execution is None:
                call.execution = Execution(call.name, call.call_id, None, turn.end, result=said)
            call.execution.read = said


def _unread(run: Run) -> str | None:
    """Why the last model call's tool results were read by no model: the run ended in an
    error first. None when the source records no such end."""
    if not run.raised:
        return None
    return f"the run ended before a model read its result: {run.error}"


def _sent(record: CallRecord, execution: Execution | None) -> Message:
    """A call's result as the next model call was sent it: the words the source records it
    read, else what budgetloop would have sent."""
    said = execution.read if execution is not None else None
    content = record.content if said is None or record.status == "skipped" else said
    return Message("tool", content, tool_call_id=record.id or None, name=record.name)


def _as_object(raw: Any) -> dict[str, Any] | None:
    """The arguments as an object, when they are one (a JSON string of one, or one)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            return None
    return raw if isinstance(raw, dict) else None


def _step(index: int, turn: Turn, records: tuple[CallRecord, ...], timed: bool) -> Step:
    ends = [
        turn.end,
        *(
            c.execution.start + c.execution.seconds
            for c in turn.calls
            if c.execution is not None and timed
        ),
    ]
    return Step(
        index=index,
        text=turn.text,
        tool_calls=records,
        usage=turn.usage,
        cost_usd=turn.cost,
        projection=turn.projection,
        seconds=max(0.0, max(ends) - turn.start) if timed else 0.0,
        error=turn.error,
        traceback=turn.traceback,
        model=turn.model,
        response_id=turn.response_id,
        finish_reason=turn.finish_reason,
    )


def build(run: Run) -> Result:
    """The run as a ``Result``: steps in time order, the context they built, and what the source
    lacks named in ``Result.imported``."""
    turns = sorted(run.turns, key=lambda t: (t.start, t.order))
    pair(turns, run.executions)
    _as_read(turns, run.read)
    steps: list[Step] = []
    messages = list(run.context)
    for index, turn in enumerate(turns):
        reasons = list(turn.skipped)  # to the skipped calls, in the order they were asked for
        unread = _unread(run) if index == len(turns) - 1 else None
        records = tuple(_record(c, reasons, unread) for c in turn.calls)
        steps.append(_step(index, turn, records, run.timed))
        if turn.error is not None:
            continue
        calls = tuple(ToolCall(r.name, r.raw_arguments, r.id or None) for r in records)
        messages.append(Message("assistant", turn.text, calls))
        if unread is None:  # a run that raised sent its last calls' results to no model
            messages += [_sent(r, c.execution) for r, c in zip(records, turn.calls, strict=True)]
    stop, answer = run.stop, run.answer
    last = steps[-1] if steps else None
    if (
        not run.stop_known
        and stop is None
        and last is not None
        and last.error is None
        and not last.tool_calls
    ):
        stop = Stop.ANSWERED
    if run.raised:
        stop, answer = stop or Stop.MODEL_ERROR, None
    if stop is Stop.ANSWERED and answer is None and last is not None and run.content:
        answer = last.text or ""  # a source that records no content: the answer is unknown
    return Result(
        stop=stop,
        answer=answer,
        steps=tuple(steps),
        messages=tuple(messages),
        cost_usd=_cost(run.cost, _total(steps)),
        seconds=run.seconds if run.seconds is not None else _span(turns, steps),
        budget=run.budget or Budget(max_steps=None),
        error=run.error,
        detail=run.detail,
        price=None,
        max_output_tokens=run.max_output_tokens,
        tools=run.tools,
        options=cast(RunOptions, run.options),
        run_id=run.run_id or new_run_id(),
        imported=Imported(run.format, run.source, run.path, _lacks(run, steps)),
    )


def _cost(run: float | None, steps: float | None) -> float | None:
    """The run's cost as its source says; never below what its steps cost (a source whose
    total is less than its parts is taken at the larger: money spent is never forgotten)."""
    if run is None or steps is None:
        return run if run is not None else steps
    return max(run, steps)


def _total(steps: list[Step]) -> float | None:
    """The run's cost when every step's is known; else unknown."""
    costs = [s.cost_usd for s in steps]
    if not costs or any(c is None for c in costs):
        return None
    return from_pico(sum(to_pico(c) for c in costs if c is not None))


def _span(turns: list[Turn], steps: list[Step]) -> float:
    if not turns:
        return 0.0
    end = max(t.start + s.seconds for t, s in zip(turns, steps, strict=True))
    return max(0.0, end - turns[0].start)


def _lacks(run: Run, steps: list[Step]) -> tuple[str, ...]:
    """What budgetloop's own traces hold and this source did not."""
    out = []
    if not run.content:
        out.append("message content")
    if any(s.cost_usd is None for s in steps) or (
        steps and run.cost is None and _total(steps) is None
    ):
        out.append("cost")
    if any(s.usage is None for s in steps):
        out.append("token usage" if all(s.usage is None for s in steps) else "some token usage")
    if any(s.projection is None for s in steps):
        out.append("projections")
    out.append("price")
    if run.budget is None:
        out.append("budget")
    if run.max_output_tokens is None:
        out.append("max_output_tokens")
    if not run.tools:
        out.append("tool schemas")
    if not run.timed:
        out.append("timing")
    if any(not c.id for s in steps for c in s.tool_calls):
        out.append("tool call ids")
    if not run.flags_errors and any(c.status == "ok" for s in steps for c in s.tool_calls):
        out.append("tool error flags")  # a call shown ok may have failed
    return tuple(out)
