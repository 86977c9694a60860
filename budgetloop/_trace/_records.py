"""The trace's records: what one call to the model was sent (``Request``), each step and its
tool calls (``Step``, ``CallRecord``), and what a run that ended held keeps for a person
(``PendingCall``, ``Rule``, ``HeldTurn``), each as plain data and back (``READERS``).
``_result`` builds the run's ``Result`` from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._engine._frozen import fast_init
from .._engine._types import Message, Price, Usage, to_pico
from .._rules._budget import Projection

if TYPE_CHECKING:
    from ._result import Result

STATUSES = ("ok", "error", "skipped", "denied")
Status = Literal["ok", "error", "skipped", "denied"]
APPROVALS = ("approved", "edited", "denied")
_UNDECIDED = frozenset({"ok", "error", "skipped"})  # the statuses a call no one decided has
Approval = Literal["approved", "edited", "denied"]
T = TypeVar("T")


@fast_init
@dataclass(frozen=True)
class Request:
    """What one call to the model was sent. ``messages`` reads as a tuple (a
    ``ScriptedModel``'s requests share the messages they have in common, not copies).
    ``max_output_tokens`` is the most output tokens it asked for (its turn's projection's;
    None: the run set none, or a model that takes no such keyword was not told), ``settings``
    the run's settings it was sent with (None: none)."""

    messages: Sequence[Message]
    tools: tuple[dict[str, Any], ...]
    max_output_tokens: int | None = None
    settings: dict[str, Any] | None = None


@fast_init
@dataclass(frozen=True)
class CallRecord:
    """One tool call: as the model wrote it, as it was checked, and what came of it.

    ``approval`` is a person's decision on a call that needed one: None (none was needed),
    ``"approved"``, ``"edited"`` (``raw_arguments`` are the model's, ``arguments`` those it ran
    with, or those given when they did not fit the schema: then the status is ``"error"``) or
    ``"denied"`` (status ``"denied"``: not run, the reason in ``result``; ``error`` and
    ``traceback`` say what an ``approve`` function raised, when it did).
    """

    name: str
    id: str
    raw_arguments: str | dict[str, Any]
    arguments: dict[str, Any] | None
    status: Status
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0
    coerced: tuple[str, ...] = ()
    truncated: int | None = None  # the result's full length, when it was cut for the model
    traceback: str | None = field(default=None, compare=False, repr=False)  # its failure's
    approval: Approval | None = None  # a person's decision, when the call needed one
    server: str | None = None  # the MCP server the tool is on; None for a function's

    def __post_init__(self) -> None:
        if self.approval is None and self.status in _UNDECIDED and type(self.coerced) is tuple:
            return  # the loop's every call that needed no decision: nothing to check
        if self.status not in STATUSES:
            raise ValueError(
                f"CallRecord: status must be one of {', '.join(STATUSES)}, got {self.status!r}."
            )
        if self.approval is not None and self.approval not in APPROVALS:
            raise ValueError(
                f"CallRecord: approval must be None or one of {', '.join(APPROVALS)}, "
                f"got {self.approval!r}."
            )
        if (self.status == "denied") != (self.approval == "denied"):
            raise ValueError(
                "CallRecord: approval must be 'denied' exactly when status is 'denied', got "
                f"approval {self.approval!r} with status {self.status!r}."
            )
        if not isinstance(self.coerced, tuple):
            object.__setattr__(self, "coerced", tuple(self.coerced))

    @property
    def content(self) -> str:
        """What the model reads as this call's result."""
        if self.status == "ok":
            return self.result or ""
        if self.status == "skipped":
            return f"skipped: {self.error}"
        if self.status == "denied":
            return denial(self.result)
        return f"error: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "id": self.id,
            "raw_arguments": self.raw_arguments,
            "arguments": self.arguments,
            "coerced": list(self.coerced),
            "status": self.status,
            "result": self.result,
            "error": self.error,
            "seconds": self.seconds,
            "truncated": self.truncated,
            "traceback": self.traceback,
        }
        if self.approval is not None:  # only a call held for a person has it (older readers)
            out["approval"] = self.approval
        if self.server is not None:  # only an MCP tool's call has it
            out["server"] = self.server
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        """A CallRecord from ``to_dict()`` data; a ValueError names a field that is wrong."""
        return reading("CallRecord.from_dict", READERS.call, data)


@dataclass(frozen=True)
class Summary:
    """A summary a ``Summarize`` policy had written for a request: the context's messages it
    replaced (by index), and its own model call: its worst case projected before it was sent,
    its usage and its cost (part of the run's cost, not of the step's ``cost_usd``)."""

    replaced: tuple[int, ...]
    cost_usd: float
    usage: Usage | None
    projection: Projection

    def to_dict(self) -> dict[str, Any]:
        usage = self.usage
        return {
            "replaced": list(self.replaced),
            "cost_usd": self.cost_usd,
            "usage": None if usage is None else usage_to_dict(usage),
            "projection": self.projection.to_dict(),
        }


@dataclass(frozen=True)
class ContextEdit:
    """What a step's context policy (``context=``) made of its request. ``sent`` is the request,
    message by message: the index of a context message (``Result.messages``) sent as it was, or
    a message the policy wrote (a cut tool result, a summary). ``dropped`` are the indexes of the
    context messages not sent as they were (left out, cut, or summarized), ``dropped_tokens``
    the input tokens the request counts fewer than the whole context (negative when it counts
    more). ``summary`` is a summary's call, when one was made for this step; ``fallback`` says
    why a summary was not asked for and the turns it would have replaced were dropped."""

    policy: str
    sent: tuple[int | Message, ...]
    dropped: tuple[int, ...]
    dropped_tokens: int
    summary: Summary | None = None
    fallback: str | None = None

    def messages(self, context: Sequence[Message]) -> tuple[Message, ...]:
        """The request's messages, from the context they were made of."""
        return tuple(context[x] if isinstance(x, int) else x for x in self.sent)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.policy,
            "sent": [x if isinstance(x, int) else message_to_dict(x) for x in self.sent],
            "dropped": list(self.dropped),
            "dropped_tokens": self.dropped_tokens,
        }
        if self.summary is not None:
            out["summary"] = self.summary.to_dict()
        if self.fallback is not None:
            out["fallback"] = self.fallback
        return out


@fast_init
@dataclass(frozen=True)
class Step:
    """One turn: the model call, the projection made before it, and its tool batch.

    budgetloop's own steps always have a ``cost_usd`` and a ``projection``; a step of a run
    imported from another framework (``load_trace``) has None where its source holds none.
    ``final_answer`` marks a turn made after a ceiling to get an answer; ``traceback`` is the
    model call's, when it raised. Tracebacks are left out of comparisons.
    """

    index: int
    text: str | None
    tool_calls: tuple[CallRecord, ...]
    usage: Usage | None
    cost_usd: float | None  # None: not known (a run imported from a source that has no cost)
    projection: Projection | None  # None: none was made (an imported run)
    seconds: float
    error: str | None = None
    final_answer: bool = False
    traceback: str | None = field(default=None, compare=False, repr=False)
    model: str | None = None  # the model that served the reply, as the provider said
    response_id: str | None = None  # the provider's id of the reply
    finish_reason: str | None = None  # why the reply ended, as the provider said
    first_chunk_seconds: float | None = None  # a streamed reply: from the step's start
    context: ContextEdit | None = None  # what a context policy made of its request

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    @property
    def under_projected(self) -> int:
        """How many input tokens the provider reported beyond the projection made before this
        step (0 when it reported none, or no more than projected)."""
        if self.usage is None or self.projection is None:
            return 0
        return max(self.usage.input_tokens - self.projection.input_tokens, 0)

    def to_dict(self) -> dict[str, Any]:
        """The step as plain data."""
        usage = self.usage
        out: dict[str, Any] = {
            "index": self.index,
            "text": self.text,
            "usage": None if usage is None else usage_to_dict(usage),
            "cost_usd": self.cost_usd,
            "projection": None if self.projection is None else self.projection.to_dict(),
            "seconds": self.seconds,
            "error": self.error,
            "final_answer": self.final_answer,
            "under_projected": self.under_projected,
            "traceback": self.traceback,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
        }
        for name in ("model", "response_id", "finish_reason", "first_chunk_seconds"):  # if known
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.context is not None:
            out["context"] = self.context.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        """A Step from ``to_dict()`` data; a ValueError names a field that is wrong."""
        return reading("Step.from_dict", READERS.step, data)


@dataclass(frozen=True)
class PendingCall:
    """A tool call held for a person's decision, after its arguments were checked and before
    any call of its batch runs.

    ``step`` is the index of the step whose model call asked for it; ``raw_arguments`` are
    what the model wrote, ``arguments`` the checked value (JSON, as the trace keeps it).
    ``spent_usd`` is what the run has spent so far; ``projection`` is the turn that will read
    the batch's results, projected as the cost guard projected it before holding the batch
    (its results empty; None without a price). ``tool_marked`` is False for a call held only
    because a breakpoint asked to stop before its tool (``breakpoints.before_tool``).
    ``rule`` is ``"approved"`` or ``"denied"`` when a standing rule of the run (``Rule``:
    ``session.approve(call_id, always=True)``) decided the call without asking; None else.
    ``redacted`` names where the run's ``redact=`` changed its checked arguments
    (``arguments.key``; the paths only, no value): its arguments here are the redacted ones,
    and ``resume`` runs it only with arguments a person gives for it.
    """

    name: str
    id: str
    step: int
    raw_arguments: str | dict[str, Any]
    arguments: dict[str, Any]
    spent_usd: float
    projection: Projection | None
    tool_marked: bool = True
    rule: Approval | None = None
    redacted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    """A standing decision a person made on the call ``call_id`` of step ``step``
    (``session.approve(call_id, always=True)``, ``session.deny(call_id, reason, always=True)``):
    every later call of ``tool`` that needs approval in this run is decided the same way,
    without asking. ``approval`` is ``"approved"`` or ``"denied"``; ``reason`` is a denial's."""

    tool: str
    approval: Literal["approved", "denied"]
    call_id: str
    step: int
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "approval": self.approval, "call_id": self.call_id,
                "step": self.step, "reason": self.reason}  # fmt: skip


@dataclass(frozen=True)
class HeldTurn:
    """The turn a run ended held on (``approve="hold"``): ``step`` is the model's reply, billed,
    its calls not yet in its ``tool_calls``; ``message`` is the assistant message with every
    call of the batch as the model asked for it (each with its id). ``resume`` runs the batch
    from these, without calling the model again."""

    step: Step
    message: Message

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step.to_dict(), "message": message_to_dict(self.message)}


class Readers:
    """How ``to_dict()`` data is read back, each reader taking ``(data, path)``, and how a
    trace is written as a file (``document``, format version 2). ``._read`` and ``._compact``
    build these classes and ``Result``, so neither this module nor ``._result`` can import
    them: they set these when they
    are imported, which ``import budgetloop`` does before anything can call ``from_dict`` or
    ``save``."""

    call: Callable[[Any, str], CallRecord]
    step: Callable[[Any, str], Step]
    result: Callable[[Any, str], Result]
    document: Callable[[Result], str]


READERS = Readers()


def denial(reason: str | None) -> str:
    """What the model reads for a call a person denied: that it was not run, and why."""
    return f"denied: not run (reason: {reason})" if reason else "denied: not run"


def reading(where: str, read: Callable[[Any, str], T], data: Any) -> T:
    try:
        return read(data, "")
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def usage_to_dict(usage: Usage) -> dict[str, int]:
    """A usage as plain data; the cache and reasoning counts only when there are some (older
    readers)."""
    out = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        out["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        out["cache_write_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        out["reasoning_tokens"] = usage.reasoning_tokens
    return out


def summaries_pico(steps: Sequence[Step]) -> int:
    """What the summaries the steps' context policy had written cost, in picodollars: spend of
    the run that no step's ``cost_usd`` holds."""
    return sum(
        to_pico(s.context.summary.cost_usd)
        for s in steps
        if s.context is not None and s.context.summary is not None
    )


def message_to_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments, "id": c.id} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


def pending_to_dict(call: PendingCall) -> dict[str, Any]:
    """A held call as plain data (``PendingCall``'s fields; its projection as a step's)."""
    projection = call.projection
    return {
        "name": call.name,
        "id": call.id,
        "step": call.step,
        "raw_arguments": call.raw_arguments,
        "arguments": call.arguments,
        "spent_usd": call.spent_usd,
        "projection": None if projection is None else projection.to_dict(),
        "tool_marked": call.tool_marked,
        "rule": call.rule,
        **({"redacted": list(call.redacted)} if call.redacted else {}),  # older readers
    }


def price_to_dict(price: Price) -> dict[str, Any]:
    """A price as plain data; the cache prices and the source only when they are set and the
    tiers only when there are some (older readers), the tiers as a list of
    ``{"above": n, "price": {...}}`` in threshold order (JSON objects take no int keys)."""
    out: dict[str, Any] = {
        "input_per_mtok": price.input_per_mtok,
        "output_per_mtok": price.output_per_mtok,
    }
    if price.cache_read_per_mtok is not None:
        out["cache_read_per_mtok"] = price.cache_read_per_mtok
    if price.cache_write_per_mtok is not None:
        out["cache_write_per_mtok"] = price.cache_write_per_mtok
    if price.source is not None:
        out["source"] = price.source
    if price.tiers:
        out["tiers"] = [
            {"above": above, "price": price_to_dict(tier)} for above, tier in price.tiers.items()
        ]
    return out
