"""A batch held for a person: which calls are held, what the decisions do to the batch, and a
stepped session's side of it (``pending``, ``approve``, ``deny``, and ``on_decision`` for a view
that draws the batch).

``Holding`` is the part of ``Loop`` that owns this; the turn asks it at one place, after the
guards have let the batch through and before any call of it runs (``Loop._commit_calls``). So
no decision can pass a ceiling: a held batch is one the guards already allowed, and a denied
call only takes a call away from it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .._engine._turn import Call, Plan, Ran, checked
from .._engine._types import Completion, Message, Price, ToolCall, from_pico
from .._engine._valid import must, type_name
from .._forms._redact import PLAIN, WITHHOLD, at
from .._schema._arg_error import ArgumentError
from .._schema._tool import needs_approval
from .._tools._approval import APPROVED, Decision, PendingCall, denied, edited
from .._trace._result import Approval, CallRecord, Rule, Step

if TYPE_CHECKING:
    from .._engine._state import RunState
    from .._forms._redact import Redactor, Said
    from .._rules._budget import Projection
    from .._schema._tool import Tool
    from .._tools._dispatch import Dispatch

_EDIT_MISFIT = "the arguments a person gave in place of the model's do not fit: "
_LISTENERS = threading.Lock()  # adding and removing a decision listener, from any thread

H = TypeVar("H", bound="Holding")


@dataclass(eq=False, slots=True)
class Taken:
    """A turn's reply with tool calls, as its batch needs it to be run and recorded."""

    plan: Plan
    completion: Completion
    cost: int  # picodollars billed for the model call
    index: int
    calls: list[Call]
    assistant: Message
    signature: str | None
    loop: Said | None
    warn: bool


@dataclass(eq=False, slots=True)
class Held:
    """A batch a stepped session holds: the turn, its calls held, the decisions so far, and
    the seconds its step took before the hold."""

    taken: Taken
    pending: tuple[PendingCall, ...]
    decisions: dict[str, Decision]  # by call id: one call's each, as a batch's ids are unique
    seconds: float
    step: Step  # the step as ``step()`` returned it: the model's reply, its batch not yet run
    message: Message | None = None  # the assistant message as the trace keeps it
    shown: tuple[PendingCall, ...] = ()  # ``pending`` as the trace keeps it (``Result.pending``)
    # restored from a trace: its calls are the ones recorded, each value ``redact=`` changed
    # holding the mark, not the value (``PendingCall.redacted``)
    recorded: bool = False

    def undecided(self) -> tuple[PendingCall, ...]:
        return tuple(c for c in self.pending if c.id not in self.decisions)

    def hidden(self, call: PendingCall) -> tuple[str, ...]:
        """Where ``call``'s arguments, as this batch holds them, are redaction marks and
        not the values they stand for: none in a live session, which holds the real ones."""
        return call.redacted if self.recorded else ()


def unrunnable(where: str, name: str, call: PendingCall, paths: Sequence[str], got: str) -> str:
    """The refusal of a decision that would run a recorded call with the marks ``redact=``
    left in its arguments at ``paths``."""
    said = ", ".join(paths) + (" was" if len(paths) == 1 else " were")
    expected = f"the arguments to run {call.name} with ({said} redacted when the run was held)"
    return must(where, name, expected, got)


def marks_left(
    given: Any, recorded: Any, paths: Sequence[str], path: str = "arguments"
) -> str | None:
    """The first of ``paths`` where ``given`` still holds the redaction mark ``recorded``
    holds there, if any: an edit that would send the mark's text, not the value."""
    if path in paths:
        return path if given == recorded else None
    if isinstance(given, Mapping) and isinstance(recorded, Mapping):
        for key, value in given.items():
            if key in recorded:
                found = marks_left(value, recorded[key], paths, at(path, key))
                if found is not None:
                    return found
    elif isinstance(given, (list, tuple)) and isinstance(recorded, (list, tuple)):
        for i, (g, r) in enumerate(zip(given, recorded, strict=False)):
            found = marks_left(g, r, paths, at(path, i))
            if found is not None:
                return found
    return None


class Holding:
    """The approvals half of ``Loop``: the attributes below are the loop's."""

    _dispatch: Dispatch
    _redactor: Redactor
    _held: Held | None
    _hold_tools: frozenset[str]
    _hold_calls: frozenset[tuple[int, str]]  # (step, call id): a replay's recorded holds
    _rules: tuple[Rule, ...] = ()  # standing decisions, in the order made (the last one counts)
    # ``on_decision``'s listeners: a default of the class until one is added, then a tuple
    # replaced whole, so a decision made on another thread calls the ones it read
    _listeners: tuple[Callable[[Any], object], ...] = ()

    state: RunState
    price: Price | None

    @property
    def _tool_table(self) -> dict[str, Tool]:
        return self._dispatch.tools

    _cheapest_next: Callable[[list[Call], Message], Projection]

    # -- which calls are held --------------------------------------------------------------------

    def _holding(self, taken: Taken) -> tuple[PendingCall, ...]:
        """The calls of a batch held for a person, in request order: each call of a tool that
        needs approval for its checked arguments (or that a breakpoint stops before). A call
        whose own arguments failed the check is not held: it is an error the model reads."""
        forced = self._hold_tools
        if not self._dispatch.any_marked and not forced and not self._hold_calls:
            return ()  # the common case: no call can be held
        table = self._tool_table
        held: list[tuple[Call, dict[str, Any], bool]] = []
        for call in taken.calls:
            name = call.name
            tool = table.get(name) if isinstance(name, str) else None
            if tool is None or isinstance(call.parsed, ArgumentError):
                continue
            outcome = checked(call, tool)
            if isinstance(outcome, Exception):
                continue
            args, _, choices = outcome
            marked = needs_approval(tool, args) or (taken.index, call.id) in self._hold_calls
            if not marked and name not in forced:
                continue
            try:
                tool.arguments_for(args, choices)
            except Exception:  # refused as its hint's type: an error the model reads
                continue
            held.append((call, args, marked))
        if not held:
            return ()
        projection = None
        if self.price is not None:  # the guard's own projection, made again
            projection = self._cheapest_next(taken.calls, taken.assistant)
        spent = from_pico(self.state.money.spent)
        return tuple(
            PendingCall(
                name=call.name,
                id=call.id,
                step=taken.index,
                raw_arguments=copy.deepcopy(call.request.arguments),
                arguments=copy.deepcopy(args),
                spent_usd=spent,
                projection=projection,
                tool_marked=marked,
                rule=self._rule(call.name) if marked else None,
            )
            for call, args, marked in held
        )

    def _rule(self, name: str) -> Approval | None:
        """What a standing rule of the run decides for a call of the tool ``name``, if any."""
        for rule in reversed(self._rules):
            if rule.tool == name:
                return rule.approval
        return None

    def _ruled(self, held: Sequence[PendingCall]) -> dict[str, Decision]:
        """The held calls a standing rule decides, by id, each decided as the rule says."""
        out: dict[str, Decision] = {}
        for call in held:
            if call.rule is not None:
                rule = next(r for r in reversed(self._rules) if r.tool == call.name)
                out[call.id] = APPROVED if rule.approval == "approved" else denied(rule.reason)
        return out

    def _asks(self, held: Sequence[PendingCall]) -> bool:
        """Whether ``approve`` is asked about a held batch: not when a breakpoint holds it for
        the person at the session."""
        return all(c.tool_marked for c in held) or not self._hold_tools

    # -- what the decisions do to the batch ------------------------------------------------------

    def _decided_batch(
        self, calls: Sequence[Call], decisions: Mapping[str, Decision]
    ) -> tuple[dict[int, Ran], list[Call]]:
        """The calls' outcomes known without running them (denied; edited to arguments that do
        not fit), by position, and the calls to run, an edited one with its new arguments."""
        if not decisions:  # nothing was held: the batch as the model asked for it
            return {}, list(calls)
        fixed: dict[int, Ran] = {}
        runnable: list[Call] = []
        for i, call in enumerate(calls):
            decision = decisions.get(call.id)
            if decision is None or decision.approval == "approved":
                runnable.append(call)
            elif decision.approval == "denied":
                fixed[i] = self._denied(call, decision)
            else:
                assert decision.arguments is not None
                made = self._edit(call, decision.arguments)
                if isinstance(made, Ran):
                    fixed[i] = made
                else:
                    runnable.append(made)
        return fixed, runnable

    def _edit(self, call: Call, arguments: dict[str, Any]) -> Call | Ran:
        """The call with a person's arguments, checked against the schema as the model's are;
        arguments that do not fit are an error the model reads."""
        request = ToolCall(call.name, arguments, call.id)
        edit = Call(request, call.id, dict(arguments))
        tool = self._tool_table[call.name]
        outcome = checked(edit, tool)
        if isinstance(outcome, ArgumentError):  # kept as given, so a replay can give them again
            error = ArgumentError(_EDIT_MISFIT, *outcome.parts)
            ran = self._dispatch.refuse(call.request, call.id, "error", error)
            record = replace(ran.record, arguments=dict(arguments))
            if ran.trace is ran.record:
                return Ran(record, record)
            try:
                trace = replace(ran.trace, arguments=self._redactor.value(dict(arguments)))
            except Exception as exc:
                return Ran(record, WITHHOLD.call(record), ran.redact_error or exc)
            return Ran(record, trace, ran.redact_error)
        return edit

    def _denied(self, call: Call, decision: Decision) -> Ran:
        """A call a person denied: not run; the model reads the reason."""
        tool = self._tool_table.get(call.name)
        outcome = None if tool is None else checked(call, tool)
        args = outcome[0] if isinstance(outcome, tuple) else None
        record = CallRecord(
            name=call.name,
            id=call.id,
            raw_arguments=call.request.arguments,
            arguments=args,
            status="denied",
            result=decision.reason,
            error=decision.error,
            traceback=PLAIN.traceback(decision.traceback),
            approval="denied",
        )
        if self._redactor.fn is None:
            return Ran(record, record)
        try:
            trace = replace(
                self._redactor.call(replace(record, traceback=None)),
                traceback=self._redactor.traceback(decision.traceback),
            )
        except Exception as exc:  # the loop records the step withheld, then raises this
            return Ran(record, WITHHOLD.call(record), exc)
        return Ran(record, trace)

    def _marked(
        self, calls: Sequence[Call], records: list[Ran], decisions: Mapping[str, Decision]
    ) -> list[Ran]:
        """Each decided call's outcome with its decision on it, and the arguments the model
        wrote kept as ``raw_arguments`` (an edited call ran with others)."""
        if not decisions:
            return records
        out = []
        for call, ran in zip(calls, records, strict=True):
            decision = decisions.get(call.id)
            if decision is None or ran.record.status == "denied":
                out.append(ran)
                continue
            out.append(self._mark(ran, decision.approval, call))
        return out

    def _mark(self, ran: Ran, approval: Approval, call: Call) -> Ran:
        raw = call.request.arguments
        record = replace(ran.record, raw_arguments=raw, approval=approval)
        if ran.trace is ran.record:
            return Ran(record, record, ran.redact_error)
        try:
            traced_raw = self._redactor.arguments(raw)
        except Exception as exc:
            return Ran(record, WITHHOLD.call(record), ran.redact_error or exc)
        trace = replace(ran.trace, raw_arguments=traced_raw, approval=approval)
        return Ran(record, trace, ran.redact_error)

    # -- a stepped session's side ----------------------------------------------------------------

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """The calls held for a person's decision and not yet decided, in request order (empty
        when none). Decide each with ``approve`` or ``deny``; the next ``step()`` or ``run()``
        then runs the batch and goes on."""
        held = self._held
        return () if held is None or self.state.ending is not None else held.undecided()

    def approve(
        self, call_id: str, arguments: Mapping[str, Any] | None = None, *, always: bool = False
    ) -> None:
        """Let the held call ``call_id`` run; with ``arguments``, run it with those instead
        (checked against the tool's schema now: arguments that do not fit are a ValueError,
        and the call stays pending). ``always=True`` makes it a standing rule (``Rule``): every
        later call of the same tool in this run is approved without asking, those of this
        batch still waiting too."""
        where = f"{type(self).__name__}.approve"
        held, call = self._pending_call(where, call_id)
        self._check_always(where, always, arguments is None)
        hidden = held.hidden(call)
        if arguments is None and hidden:
            raise ValueError(unrunnable(where, "arguments", call, hidden, "None"))
        if arguments is None:
            held.decisions[call.id] = APPROVED
            if always:
                self._stand(held, Rule(call.name, "approved", call.id, call.step))
            self._decided()
            return
        if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
            expected = "a dict of the tool's arguments or None"
            raise TypeError(must(where, "arguments", expected, type_name(arguments)))
        held.decisions[call.id] = self._edited(where, "arguments", held, call, arguments)
        self._decided()

    def _edited(
        self, where: str, name: str, held: Held, call: PendingCall, arguments: Mapping[str, Any]
    ) -> Decision:
        """The decision to run ``call`` with ``arguments``, checked against its tool's schema
        now: arguments that do not fit are a ValueError naming ``name``."""
        hidden = held.hidden(call)
        left = marks_left(arguments, call.arguments, hidden)
        if left is not None:
            got = f"the redaction mark recorded at {left}"
            raise ValueError(unrunnable(where, name, call, hidden, got))
        found = next(c for c in held.taken.calls if c.id == call.id)
        made = self._edit(found, dict(arguments))
        if isinstance(made, Ran):
            error = made.record.error or ""
            expected = f"arguments that fit {call.name}'s schema"
            got = error.removeprefix(_EDIT_MISFIT)
            raise ValueError(must(where, name, expected, got))
        return edited(call, arguments)

    def deny(self, call_id: str, reason: str = "", *, always: bool = False) -> None:
        """Do not run the held call ``call_id``; the model reads that it was denied, and
        ``reason`` when one is given. ``always=True`` makes it a standing rule (``Rule``):
        every later call of the same tool in this run is denied so, without asking."""
        where = f"{type(self).__name__}.deny"
        if not isinstance(reason, str):
            raise TypeError(must(where, "reason", "a str", type_name(reason)))
        held, call = self._pending_call(where, call_id)
        self._check_always(where, always, True)
        held.decisions[call.id] = denied(reason)
        if always:
            self._stand(held, Rule(call.name, "denied", call.id, call.step, reason))
        self._decided()

    @staticmethod
    def _check_always(where: str, always: object, plain: bool) -> None:
        if not isinstance(always, bool):
            raise TypeError(must(where, "always", "True or False", type_name(always)))
        if always and not plain:
            raise ValueError(
                must(where, "always", "False when arguments are given", "True")
                + " A standing rule approves or denies the tool's calls as the model asks them."
            )

    def _stand(self, held: Held, rule: Rule) -> None:
        """A standing rule is made: recorded, and the batch's calls of its tool still waiting
        (needing approval, not only stopped at by a breakpoint) decided by it."""
        self._rules = (*self._rules, rule)
        decision = APPROVED if rule.approval == "approved" else denied(rule.reason)
        for call in held.undecided():
            if call.name == rule.tool and call.tool_marked:
                if decision is APPROVED and held.hidden(call):
                    continue  # recorded with marks: it waits for the arguments to run with
                held.decisions[call.id] = decision

    def on_decision(self: H, listener: Callable[[H], object]) -> Callable[[], None]:
        """Call ``listener(session)`` after each decision on a held call (``approve``,
        ``deny``), on the thread that made it, so a view of the held batch can be drawn again;
        returns a function that removes it. A listener is this session's only (a ``fresh()``
        or ``fork`` session has none).

        The decision is made before any listener is called and stands whatever a listener
        does: every listener is called, then the first exception one raised, if any, is
        raised from ``approve`` or ``deny`` (``session.pending`` still says what is decided).
        """
        where = f"{type(self).__name__}.on_decision"
        if not callable(listener):
            raise TypeError(must(where, "listener", "a function (session)", type_name(listener)))
        with _LISTENERS:
            self._listeners = (*self._listeners, listener)

        def remove() -> None:
            with _LISTENERS:
                kept = list(self._listeners)
                if listener in kept:
                    kept.remove(listener)
                self._listeners = tuple(kept)

        return remove

    def _decided(self) -> None:
        """Tell each ``on_decision`` listener that a decision was made; the first exception one
        raised is raised once every one was called."""
        failed: BaseException | None = None
        for listener in self._listeners:
            try:
                listener(self)
            except Exception as exc:
                if failed is None:
                    failed = exc
        if failed is not None:
            raise failed

    def _pending_call(self, where: str, call_id: str) -> tuple[Held, PendingCall]:
        if not isinstance(call_id, str):
            raise TypeError(must(where, "call_id", "a str", type_name(call_id)))
        held = self._held
        waiting = () if held is None else held.undecided()
        for call in waiting:
            if call.id == call_id:
                assert held is not None
                return held, call
        ids = ", ".join(repr(c.id) for c in waiting) or "none: no call is waiting"
        raise ValueError(
            must(where, "call_id", f"the id of a pending call ({ids})", repr(call_id))
        )

    def _check_decided(self, where: str) -> None:
        """A step cannot be taken while a held call is undecided; the refusal names ``where``,
        the entry point the user called."""
        waiting = self.pending
        if waiting:
            names = ", ".join(f"{c.name} ({c.id})" for c in waiting)
            raise RuntimeError(
                f"{where}: the calls waiting for a decision must be none, got "
                f"{len(waiting)}: {names}; decide each with session.approve(call_id) or "
                "session.deny(call_id, reason) first."
            )

    def _held_detail(self) -> str:
        """What ``next_turn`` says of a held batch."""
        held = self._held
        assert held is not None
        waiting = held.undecided()
        if waiting:
            names = ", ".join(f"{c.name} ({c.id})" for c in waiting)
            return f"a batch waits for a decision on {names}"
        return "the batch is decided: the next step runs it, then goes on"
