"""``resume`` of a run that ended held: the session restored with its batch held, the decisions
checked and made, and, from a path, the batch taken in its file (``_trace._take``) before the
session is handed back. Every refusal comes before the take, so a refused resume takes nothing.

``open_held`` and ``take_held`` are the same two halves for a person deciding in a view (the
notebook panel): the session opened holding its batch, nothing decided nor taken, then, once the
person has decided each call in it, the batch taken.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._engine._loop import Loop
from .._engine._options import ResumeOptions, check_names, option_names
from .._engine._reading import Model
from .._engine._valid import must, type_name
from .._tools._approval import APPROVED, Decision, PendingCall, aask, ask, denied
from .._trace._journal import Journal, as_result
from .._trace._result import Result
from .._trace._take import refuse_taken, take
from ._held import Held, unrunnable

L = TypeVar("L", bound=Loop)

_VALUES = "True, False, a str (deny, with the reason) or a dict (the arguments to run with)"


def _restored(
    cls: type[L],
    where: str,
    result: Result,
    complete: Model,
    tools: Sequence[Callable[..., Any]],
    decisions: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> tuple[L, dict[str, Decision], list[PendingCall]]:
    """The session holding the batch again, the given decisions checked and read, and the
    calls left for ``approve=`` to decide (a ValueError when there is no such approve)."""
    session = cls.restore_held(result, complete, where, _given(result, tools, options))
    held = session._held
    assert held is not None
    if decisions is None:
        decisions = {}
    if not isinstance(decisions, Mapping):
        expected = "a dict of call id -> decision"
        raise TypeError(must(where, "decisions", expected, type_name(decisions)))
    waiting = held.undecided()
    ids = [c.id for c in waiting]
    for key in decisions:
        if key not in ids:
            shown = ", ".join(map(repr, ids))
            expected = f"the id of a call waiting for a decision ({shown})"
            raise ValueError(must(where, "each key of decisions", expected, repr(key)))
    approve = session.options.values["approve"]
    rest = [c for c in waiting if c.id not in decisions]
    for call in rest:
        hidden = held.hidden(call)
        if hidden and call.rule == "approved":  # the rule would run it with the marks
            got = f"none (a standing rule approves every {call.name} call)"
            raise ValueError(unrunnable(where, f"decisions[{call.id!r}]", call, hidden, got))
    if rest and not callable(approve):
        names = ", ".join(f"{c.name} ({c.id})" for c in rest)
        raise ValueError(
            must(where, "decisions", "a decision for every call waiting", f"none for {names}")
            + " Give each one's decision, or approve=... to decide the rest."
        )
    made = {
        c.id: _read(where, session, held, c, decisions[c.id]) for c in waiting if c.id in decisions
    }
    return session, made, rest


def _given(
    result: Result, tools: Sequence[Callable[..., Any]], options: Mapping[str, Any]
) -> dict[str, Any]:
    """The options a held run goes on with: the trace's, then those given again."""
    return {
        **result.options,
        "budget": result.budget,
        "price": result.price,
        "max_output_tokens": result.max_output_tokens,
        **options,
        "tools": tools,
    }


def _read(where: str, session: Loop, held: Held, call: PendingCall, value: Any) -> Decision:
    name = f"decisions[{call.id!r}]"
    if value is True:
        hidden = held.hidden(call)
        if hidden:
            raise ValueError(unrunnable(where, name, call, hidden, "True"))
        return APPROVED
    if value is False:
        return denied()
    if isinstance(value, str):
        return denied(value)
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return session._edited(where, name, held, call, value)
    raise TypeError(must(where, name, _VALUES, type_name(value)))


def _asked(where: str, held: Held, call: PendingCall, decision: Decision) -> Decision:
    """What ``approve=`` decided for ``call``; approving as recorded a call whose arguments
    hold redaction marks is refused (before anything is taken)."""
    hidden = held.hidden(call)
    if hidden and decision is APPROVED:
        name = f"approve's decision on {call.id!r}"
        raise ValueError(unrunnable(where, name, call, hidden, "True"))
    return decision


def _taken(session: L, where: str, trace: object, decided: dict[str, Decision]) -> L:
    """The decisions made, and from a path the batch taken in its file, which the run then
    goes on writing (unless ``trace_path=`` names another)."""
    held = session._held
    assert held is not None
    held.decisions.update(decided)
    _take(session, where, trace)
    return session


def _take(session: Loop, where: str, trace: object) -> None:
    """From a path, the session's held batch taken in that file, which the run then goes on
    writing (unless it writes to a ``trace_path=`` of its own)."""
    held = session._held
    assert held is not None
    if isinstance(trace, (str, os.PathLike)):
        take(trace, held.step.index, where)
        if session._journal is None:
            session._journal = Journal(trace, going_on=True)


def held_session(
    cls: type[L],
    where: str,
    trace: object,
    result: Result,
    complete: Model,
    tools: Sequence[Callable[..., Any]],
    decisions: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> L:
    """``resume`` of a held run: the session, its batch decided (``approve`` asked here about
    the calls ``decisions`` leaves out), and taken."""
    session, made, rest = _restored(cls, where, result, complete, tools, decisions, options)
    approve, held = session.options.values["approve"], session._held
    assert held is not None
    for call in rest:
        assert callable(approve)  # (_restored refused the rest without one)
        made[call.id] = _asked(where, held, call, ask(approve, call))
    return _taken(session, where, trace, made)


async def aheld_session(
    cls: type[L],
    where: str,
    trace: object,
    result: Result,
    complete: Model,
    tools: Sequence[Callable[..., Any]],
    decisions: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> L:
    """``held_session`` with an ``async def`` approve awaited."""
    session, made, rest = _restored(cls, where, result, complete, tools, decisions, options)
    approve, held = session.options.values["approve"], session._held
    assert held is not None
    for call in rest:
        assert callable(approve)  # (_restored refused the rest without one)
        made[call.id] = _asked(where, held, call, await aask(approve, call))
    return _taken(session, where, trace, made)


def open_held(
    cls: type[L],
    where: str,
    trace: Result | str | os.PathLike[str],
    complete: Model,
    tools: Sequence[Callable[..., Any]],
    options: Mapping[str, Any],
) -> L:
    """A run that ended held, opened for a person to decide in the session itself: the session
    holding its batch again, as ``resume`` restores it, with nothing decided but what a
    standing rule decides, and nothing taken (``take_held`` takes it). A run that is not held is
    a ValueError (from a path whose batch was taken: saying when)."""
    check_names(where, options, option_names(ResumeOptions))
    result = as_result(trace, where)
    if result.held is None:
        if isinstance(trace, (str, os.PathLike)):
            refuse_taken(trace, where)
        expected = "a run that ended held (stop 'held')"
        raise ValueError(must(where, "trace", expected, f"stop {result.stop}"))
    return cls.restore_held(result, complete, where, _given(result, tools, options))


def take_held(session: Loop, where: str, trace: object) -> None:
    """The batch of a session ``open_held`` opened, once the person decided every call in it:
    from a path, taken in its file, once (a ValueError saying when it was taken, if it was);
    a ``Result`` is the caller's to go on from once. A call still waiting is a RuntimeError."""
    session._check_decided(where)
    _take(session, where, trace)
