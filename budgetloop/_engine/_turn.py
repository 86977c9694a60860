"""The values one turn passes between the loop and its driver (plain slotted dataclasses: made
several times a turn, and never kept beyond it).

A turn (``Loop._turn``) is a generator of requests (``REQUESTS``). It yields a ``ModelCall``;
the driver makes the call and sends back a ``Reply``. If the model asked for tools, it yields a
``Batch``; the driver runs the calls and sends back a ``BatchDone``: each call's outcome
(``Ran``) in request order. The generator then returns the ``Step`` it committed (None when the
run stopped before calling the model). When the driver's work raises (``KeyboardInterrupt``, a
cancelled task), the driver throws the exception into the turn, which records what is known
(money first) and lets it go on. Each driver answers a request through its one table of request
type to handler, so a new kind of request is a class here and an entry in each table.

``received`` turns the model's tool calls into the turn's ``Call``s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._forms._redact import Said
from .._rules._budget import Projection
from .._schema._check import (
    ArgumentError,
    check_arguments,
    nested_too_deeply,
    parse_arguments,
    too_deep,
)
from .._tools._approval import Decision, PendingCall
from .._trace._result import CallRecord
from ._types import Completion, Message, Stop, ToolCall
from ._valid import type_name

if TYPE_CHECKING:
    from .._schema._tool import Tool

ONLY_STR = frozenset({str})  # the type of every id a batch keeps as given (``_unique_ids``)
Parsed = dict[str, Any] | ArgumentError  # a call's arguments as a dict, or why they are not one
# A call's arguments checked against its tool, with the paths of the values coerced; or what
# the check raised (an ArgumentError, or any other exception of a check that broke).
Checked = tuple[dict[str, Any], tuple[str, ...], dict[str, int]] | Exception


@dataclass(slots=True)
class Call:
    """One tool call of a turn: as the model sent it (with its id filled in), its arguments
    parsed, and, once ``checked`` has been asked, their check against the tool."""

    request: ToolCall
    id: str
    parsed: Parsed
    check: tuple[Tool, Checked] | None = None  # made by ``checked``, once

    @property
    def name(self) -> str:
        return self.request.name


def reaches_tool(call: Call, tools: Mapping[str, Tool]) -> bool:
    """Whether ``call`` would reach its tool: a tool of that name, and arguments that fit it
    (checked once per call, as the batch checks them)."""
    name = call.name
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None or isinstance(call.parsed, ArgumentError):
        return False
    return not isinstance(checked(call, tool), Exception)


def checked(call: Call, tool: Tool) -> Checked:
    """``call``'s parsed arguments (not an ``ArgumentError``) checked against ``tool``, made
    once per call: the repetition guard compares calls as the tools receive them, and the
    batch runs them with the same checked arguments."""
    made = call.check
    if made is not None and made[0] is tool:
        return made[1]
    outcome: Checked
    try:
        choices: dict[str, int] = {}  # the branch each union's value fitted, by path
        args, coerced = check_arguments(tool, call.parsed, choices)
        outcome = (args, tuple(coerced), choices)
    except Exception as exc:  # refused, or a check that broke: each reader says which
        outcome = exc
    call.check = (tool, outcome)
    return outcome


@dataclass(slots=True)
class ModelCall:
    """What a turn asks its driver for first: one model call, within ``timeout`` seconds,
    passed ``keywords`` besides the messages and tools (``max_output_tokens`` and ``settings``,
    those the model takes); of ``model`` when given, else of the run's model."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    timeout: float | None
    keywords: dict[str, Any]
    model: Any = None  # another model than the run's (a context policy's summarizer)


@dataclass(slots=True)
class Reply:
    """What became of a model call: a completion, or why there is none."""

    completion: Completion | None
    error: str | None = None
    abandoned: bool = False  # still running at the deadline: billed at the worst case
    traceback: str | None = None
    # what a reply that arrived but could not be read (``UnreadableReply``) reported to bill
    # it by: its usage and cost, billed as a completion's are
    unread: Completion | None = None
    # a streamed reply: why it was cut before it ended (its completion is what arrived), and
    # the seconds from the step's start to its first chunk
    cut: Stop | None = None
    first_chunk: float | None = None


def unsent() -> Reply:
    """The reply for a model call not sent: ``interrupt()`` came after the turn began and
    before the call went out (from ``on_event``'s ``TurnStarted``, or another thread)."""
    return Reply(None, cut=Stop.INTERRUPTED)


@dataclass(slots=True)
class Batch:
    """What a turn asks its driver for next: these tool calls, at once, within ``timeout``."""

    calls: list[Call]
    timeout: float | None


@dataclass(slots=True)
class Hold:
    """What a turn asks its driver for before a batch that holds calls for a person: a
    decision for each (``Decided``), or None when there is no one to ask now (no ``approve``,
    or ``ask`` is False: a breakpoint holds it for the person at the session). Then the
    session holds the batch, and its next step runs it once every call is decided."""

    pending: tuple[PendingCall, ...]
    ask: bool


@dataclass(slots=True)
class Decided:
    """The decisions on a held batch's calls, by call id, and the seconds spent waiting for
    them (which do not count against ``max_seconds``)."""

    decisions: dict[str, Decision]
    waited: float = 0.0


@dataclass(slots=True)
class Ran:
    """One call's outcome, twice: as the model reads it and as the trace keeps it."""

    record: CallRecord  # the real values: what the model is sent
    trace: CallRecord  # redacted (before any cut) when there is a ``redact``; else ``record``
    redact_error: BaseException | None = None  # ``redact`` raised: ``trace`` withholds every text
    message: Message = field(init=False, repr=False, compare=False)  # the result the model reads
    trace_message: Message = field(init=False, repr=False, compare=False)  # as the trace keeps it

    def __post_init__(self) -> None:
        r, t = self.record, self.trace
        # by position (tool_calls, tool_call_id, name), as project() makes a Projection
        message = Message("tool", r.content, (), r.id, r.name)
        self.message = message
        if t is not r:  # already redacted: not to be redacted again
            message = Message("tool", t.content, (), t.id, t.name)
        self.trace_message = message


@dataclass(slots=True)
class BatchDone:
    """The outcomes of a batch in request order, and whether the deadline abandoned any."""

    records: list[Ran]
    abandoned: bool = False


@dataclass(slots=True)
class Ending:
    """Why the run ends: the stop, in words, and the model's error when there was one. A
    ``detail`` that quotes tool calls is a ``Said`` (the loop writes each form of it)."""

    stop: Stop
    detail: str | Said | None = None
    error: str | None = None
    final_next: bool = False  # finish=True: the run ends after one call without tools


@dataclass(slots=True)
class Plan:
    """A turn before it is taken: what its request adds to the context (``extra``: the budget
    line, or the final-answer note), its worst case, and the stop before it or the stop its
    final answer comes before (``finish=True``). ``seen`` is the final answer's token count
    and growth this plan measured, for the turn to keep (a look from outside keeps nothing)."""

    extra: list[Message]
    projection: Projection
    projected: int | None  # picodollars; None without a price
    ending: Ending | None  # the run stops before this turn's call
    final: Ending | None  # this turn is the final answer, before this stop
    seen: tuple[int, int] | None = None
    # a context policy's request, and each of its messages' index in the context (None: one
    # the policy wrote); None: the whole context is sent
    sent: tuple[list[Message], tuple[int | None, ...]] | None = None


# Every request a turn yields. Each driver answers them through one table of request type to
# handler (``Session._answers``, ``Session._handed``, ``AsyncSession._answers``): a new request
# is a class here and one entry in each.
REQUESTS = (ModelCall, Hold, Batch)
Request = ModelCall | Hold | Batch

Action = Literal["call", "final_answer", "stop", "done", "held"]


@dataclass(frozen=True, slots=True)
class NextTurn:
    """What the next ``Session.step()`` will do, as the loop decides it (``Session.next_turn``).

    ``action`` is ``"call"`` (the model is called with tools), ``"final_answer"`` (the model
    is called without tools for a final answer, then the run ends with ``stop``), ``"stop"``
    (the run ends with ``stop`` before calling the model), ``"done"`` (it has ended) or
    ``"held"`` (a batch waits for a person's decisions, ``Session.pending``; once each call
    is decided, the next step runs it, then goes on; ``detail`` says which). ``projection``
    is the worst case of the call it would make, or of the call that the stop refused, or for
    a held batch the turn that will read its results (as ``PendingCall.projection``); None
    once done. A shared ledger is asked only when the step is taken."""

    action: Action
    stop: Stop | None
    detail: str | None
    projection: Projection | None


def received(calls: Sequence[ToolCall], index: int) -> list[Call]:
    """The model's calls as the loop keeps them: each with an id (a missing one made up, a
    repeated one made unique), a name that is text, and arguments parsed. Malformed parts are
    made plain text here, so nothing downstream meets a name that is not a str or arguments
    that JSON cannot write; the argument check then reports them to the model."""
    out: list[Call] = []
    for call, call_id in zip(calls, _unique_ids([c.id for c in calls], index), strict=True):
        name, arguments = call.name, call.arguments
        parsed: Parsed
        if not isinstance(name, str):
            name = "" if name is None else _shown(name)
        if type(arguments) is str:
            parsed = parse(name, arguments)
        elif nested_too_deeply(arguments):  # before JSON meets it, so no depth raises
            arguments = _shown(arguments)
            parsed = too_deep(name)
        elif _json_safe(arguments):
            parsed = parse(name, arguments)
        else:
            arguments = _shown(arguments)
            parsed = ArgumentError(
                f"{name}: arguments must be a JSON object, got {type(call.arguments).__name__}"
            )
        same = name is call.name and arguments is call.arguments and call_id is call.id
        out.append(Call(call if same else ToolCall(name, arguments, call_id), call_id, parsed))
    return out


def _unique_ids(given: list[Any], index: int) -> list[str]:
    """One id for each call of turn ``index``, none the same as another: a given id (a
    non-empty str) is kept where it first appears; a missing one is made up as
    ``call_{index}_{i}`` and a repeated one as ``{id}_{i}`` (``i`` the call's position), the
    number counted on past any id the batch already holds or gives later. So the model reads
    each result under an id of its own, and a decision kept by id is one call's."""
    if ONLY_STR.issuperset(map(type, given)):  # the common case: ids all given, all distinct
        distinct = set(given)
        if len(distinct) == len(given) and "" not in distinct:
            return given
    wanted = [g if isinstance(g, str) and g else None for g in given]
    taken = {g for g in wanted if g is not None}  # each given id stays free for its own call
    kept: set[str] = set()
    counted: dict[str, int] = {}  # per stem, the next number to try (never tried twice)
    out: list[str] = []
    for i, own in enumerate(wanted):
        if own is not None and own not in kept:
            kept.add(own)
            out.append(own)
            continue
        stem = f"call_{index}_{i}" if own is None else own
        made, n = stem, max(i, counted.get(stem, i))
        if own is not None or made in taken:
            while (made := f"{stem}_{n}") in taken:
                n += 1
            counted[stem] = n + 1
        taken.add(made)
        out.append(made)
    return out


def _json_safe(arguments: Any) -> bool:
    """Arguments that JSON can write as they are (a str is parsed later, as the model's JSON)."""
    if isinstance(arguments, str):
        return True
    try:
        json.dumps(arguments, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _shown(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def parse(name: str, arguments: str | dict[str, Any]) -> Parsed:
    try:
        return parse_arguments(name, arguments)
    except ArgumentError as exc:
        return exc


def as_reply(value: Any) -> Reply:
    """What a model returned, as the turn takes it: a ``Completion``, or why it is not one."""
    if not isinstance(value, Completion):
        return Reply(None, f"TypeError: the model returned {type_name(value)}, expected a "
                     "Completion(text=..., tool_calls=[...])")  # fmt: skip
    return Reply(value)


def interrupted(why: str) -> str:
    """The error of a call whose batch an interrupt broke."""
    return (
        f"interrupted ({why}) before the batch finished; this call may or may not have run, "
        "and it was not run again"
    )
