"""The entry points: ``start``/``run`` for a Session, ``astart``/``arun`` for an AsyncSession,
and ``resume`` for a saved run."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._features._resume import aheld_session, held_session
from .._trace._fork import context_before, fork_point
from .._trace._journal import as_result
from .._trace._result import Result
from .._trace._take import refuse_taken
from ._async import AsyncSession
from ._options import (
    ResumeOptions,
    StartOptions,
    check_names,
    option_names,
    require_approver,
    takes_options,
)
from ._reading import Model
from ._session import Session
from ._types import Message
from ._valid import must

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; the annotations are never evaluated on 3.10


@takes_options
def start(
    complete: Model, prompt: str | Sequence[Message], **options: Unpack[StartOptions]
) -> Session:
    """A ``Session`` that has called nothing yet: ``step()`` takes one turn, ``run()`` them all.

    Configuration mistakes (a cost ceiling without a price, a tool without type hints, an
    option of the wrong type) raise here, before any call.
    """
    return Session._open("start", complete, prompt, options)


@takes_options
def run(
    complete: Model,
    prompt: str | Sequence[Message],
    **options: Unpack[StartOptions],
) -> Result:
    """Run the loop until the model answers or a ceiling stops it: ``start(...).run()``.

    A stop is a ``Result`` whose ``stop`` names the reason; it never raises. Configuration
    mistakes raise here, before any call.
    """
    session = Session._open("run", complete, prompt, options)
    require_approver("run", session.options)
    return session.run()


@takes_options
def astart(
    complete: Model,
    prompt: str | Sequence[Message],
    **options: Unpack[StartOptions],
) -> AsyncSession:
    """``start`` for an async model and async tools: ``await session.step()``."""
    return AsyncSession._open("astart", complete, prompt, options)


@takes_options
async def arun(
    complete: Model,
    prompt: str | Sequence[Message],
    **options: Unpack[StartOptions],
) -> Result:
    """``await arun(...)``: ``run`` for an async model and async tools."""
    session = AsyncSession._open("arun", complete, prompt, options)
    require_approver("arun", session.options)
    return await session.run()


def resume(
    trace: Result | dict[str, Any] | str | os.PathLike[str],
    complete: Model,
    *,
    tools: Sequence[Callable[..., Any]],
    at: int | None = None,
    messages: Sequence[Message] | None = None,
    decisions: Mapping[str, Any] | None = None,
    **options: Unpack[ResumeOptions],
) -> Session:
    """A ``Session`` that goes on from a saved run, as ``Session.fork`` does from a live one.

    A run that ended held (``stop`` ``"held"``, ``approve="hold"``) goes on instead as the same
    run (its run id, spend, time and standing rules), its held batch decided: ``decisions``
    maps each id of ``Result.pending`` to what ``approve`` would return (True, False or a
    reason, a dict of the arguments to run with); ``approve=`` decides the calls it leaves out.
    ``session.run()`` then runs the batch, without calling the model again for that step, and
    goes on. Refused before anything runs (a ValueError): an id that is not waiting, a call
    waiting with no decision and no ``approve=``, arguments that do not fit the tool's schema,
    ``decisions`` for a run that is not held. From a path, the held batch is taken in that file
    first, once (a second resume, from any process, is a ValueError saying when it was taken),
    and the run goes on writing to that file (``trace_path=`` writes it to another instead); a
    held ``Result`` passed as an object is the caller's to resume once.

    The functions are not in the trace, so ``complete`` and ``tools`` are passed again; the
    budget, price, ``max_output_tokens`` and the options the trace records (``Result.options``)
    default to the trace's. The context is the trace's messages (as the trace kept them:
    redacted, if the run was) before step ``at``; a trace that holds fewer messages than its
    steps from ``at`` on appended is a ValueError. A run whose cost is unknown (an imported
    log) goes on unknown: the session's ``cost_usd`` is None, and so is each step's cost that
    nothing priced.
    """
    check_names("resume", options, option_names(ResumeOptions))
    result = as_result(trace, "resume")
    if result.held is not None and at is None and messages is None:
        return held_session(Session, "resume", trace, result, complete, tools, decisions, options)
    if decisions is not None and isinstance(trace, (str, os.PathLike)):
        refuse_taken(trace, "resume")  # it went on from a hold: taken already, and when
    if decisions is not None:
        expected = "given only for a run that ended held (stop 'held', at and messages not given)"
        raise ValueError(must("resume", "decisions", expected, f"stop {result.stop}"))
    given: dict[str, Any] = {
        **result.options,
        "budget": result.budget,
        "price": result.price,
        "max_output_tokens": result.max_output_tokens,
        **options,
        "tools": tools,
    }
    if messages is None:
        context_before(
            result.messages, result.steps, fork_point(result.steps, at, "resume"), "resume"
        )
    saved = Session.restore(result, complete, "resume", given)
    return saved._fork("resume", at, messages, {})


async def aresume(
    trace: Result | dict[str, Any] | str | os.PathLike[str],
    complete: Model,
    *,
    tools: Sequence[Callable[..., Any]],
    decisions: Mapping[str, Any] | None = None,
    **options: Unpack[ResumeOptions],
) -> AsyncSession:
    """``await aresume(...)``: ``resume`` of a run that ended held, for an async model and async
    tools, as an ``AsyncSession`` (``await session.run()``); an ``async def`` approve is
    awaited. Refused, taken and written as ``resume`` does."""
    check_names("aresume", options, option_names(ResumeOptions))
    result = as_result(trace, "aresume")
    if result.held is None and isinstance(trace, (str, os.PathLike)):
        refuse_taken(trace, "aresume")
    if result.held is None:
        expected = "a run that ended held (stop 'held')"
        raise ValueError(must("aresume", "trace", expected, f"stop {result.stop}"))
    return await aheld_session(
        AsyncSession, "aresume", trace, result, complete, tools, decisions, options
    )
