"""The trace: a run's ``Result``, what it started with and how it ended, its views (the
requests its steps were sent, its text) and its data (``to_dict``, ``save``). Its steps and
their calls are ``_records``'s."""

from __future__ import annotations

import functools
import json
import math
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from .._engine._frozen import fast_init
from .._engine._types import Budget, Message, Price, Stop, from_pico
from .._engine._valid import must, type_name
from .._forms._printable import printable
from .._rules._ceilings import (
    EXECUTED as EXECUTED,  # the statuses of a call that was run (or refused)
)
from .._rules._ceilings import budget_fields
from ._files import open_new
from ._fork import context_starts
from ._html import viewer

# the records a Result holds, where they have always been imported from
from ._records import APPROVALS as APPROVALS
from ._records import READERS as READERS
from ._records import STATUSES as STATUSES
from ._records import Approval as Approval
from ._records import CallRecord as CallRecord
from ._records import ContextEdit as ContextEdit
from ._records import HeldTurn as HeldTurn
from ._records import PendingCall as PendingCall
from ._records import Request as Request
from ._records import Rule as Rule
from ._records import Status as Status
from ._records import Step as Step
from ._records import Summary as Summary
from ._records import denial as denial
from ._records import message_to_dict as message_to_dict
from ._records import pending_to_dict as pending_to_dict
from ._records import price_to_dict as price_to_dict
from ._records import reading
from ._records import summaries_pico as summaries_pico
from ._records import usage_to_dict as usage_to_dict

FORMAT = "budgetloop-trace"
VERSION = 1  # the shape of to_dict(): every field, every message whole
VERSIONS = (1, 2)  # the formats read: 2 is what files are written as (``_compact``)


class RunOptions(TypedDict, total=False):
    """The ``start()`` options a trace records besides the budget, price and
    ``max_output_tokens``: those that decide what the loop does and are plain values (the
    functions, ``count_tokens``, ``redact``, ``clock``, ``ledger``, ``on_step``, ``on_event``,
    are not)."""

    finish: bool
    budget_note: bool
    warn_repeats: bool
    repeat_limit: int | None
    cycle_limit: int | None
    max_result_chars: int | None
    output: dict[str, Any]  # output=T: the final_answer schema the answers were checked by
    min_output_tokens: int  # a turn's request fitted to what the budget has left, down to it
    settings: dict[str, Any]  # the model's settings, sent with every request


RECORDED_OPTIONS = tuple(RunOptions.__annotations__)


def new_run_id() -> str:
    """A new run's id: 32 random hex digits."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Imported:
    """Where a run imported from another framework came from (``load_trace``).

    ``format`` is the importer that read it (``otlp``, ``openai-agents``, ``pydantic-ai``,
    ``anthropic``, ``responses`` or ``chat``),
    ``source`` what wrote it as the file says (``pydantic-ai 2.68.0``), ``path`` the file, and
    ``lacks`` what budgetloop's own traces hold that this source does not (``cost``,
    ``projections``...): left absent in the ``Result``, never invented.
    """

    format: str
    source: str
    path: str | None = None
    lacks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.lacks, tuple):
            object.__setattr__(self, "lacks", tuple(self.lacks))

    def describe(self) -> str:
        """One line: ``imported from pydantic-ai 2.68.0 (otlp, run.json); the source has no
        cost, projections``."""
        where = (
            self.format if self.path is None else f"{self.format}, {os.path.basename(self.path)}"
        )
        line = f"imported from {self.source} ({where})"
        if self.lacks:
            line += f"; the source has no {', '.join(self.lacks)}"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "path": self.path,
            "lacks": list(self.lacks),
        }


@fast_init
@dataclass(frozen=True)
class Result:
    """How a run ended, and everything it did on the way. Valid for a run still going too.

    ``budget``, ``price``, ``max_output_tokens``, ``tools`` (the schemas sent) and ``options``
    (``finish``, ``budget_note``, ``warn_repeats``, ``repeat_limit``, ``cycle_limit``,
    ``max_result_chars``) are what the run was started with; ``options`` is empty for a trace
    written before budgetloop recorded them.
    ``run_id`` names the run (in its journal, its spans and ``to_dict()``); ``forked_from`` is
    the ``run_id`` of the run it was forked from (``Session.fork``, ``resume``), or None. Both
    are the run's identity, not its content, and are left out of ``==``. ``edited`` are the
    indexes in ``messages`` of the messages a fork changed (``fork(at, messages=...)``: edited,
    added, or put where another was) from the context it was forked at; empty for a run that
    no fork edited. ``cost_usd`` is None
    only for a run imported from a source that records no cost (``imported`` says which).
    ``held_usd`` is what the model call of a batch a stepped session holds for a person cost:
    billed, so in ``cost_usd``, but its step is recorded only once the batch runs.
    A run that ended held (``stop`` ``"held"``, ``approve="hold"``) keeps that turn in ``held``
    and its calls waiting for a person in ``pending`` (``PendingCall``s, in request order; one a
    standing rule decided says so in its ``rule``); ``resume(result, ..., decisions=...)`` runs
    it. ``rules`` are the standing decisions made in the run (``Rule``), kept by ``resume`` and
    ``fork``. ``event_errors`` is what ``on_event``'s function raised, each as ``"<Event>: <Type>:
    <message>"`` (through ``redact=``), in order; it never stopped the run.
    """

    stop: Stop | None
    answer: str | None
    steps: tuple[Step, ...]
    messages: tuple[Message, ...]
    cost_usd: float | None
    seconds: float
    budget: Budget = field(default_factory=Budget)
    error: str | None = None
    detail: str | None = None
    price: Price | None = None
    max_output_tokens: int | None = None
    tools: tuple[dict[str, Any], ...] = ()
    options: RunOptions = field(default_factory=lambda: RunOptions())
    run_id: str = field(default_factory=new_run_id, compare=False)
    forked_from: str | None = field(default=None, compare=False)
    edited: tuple[int, ...] = ()
    imported: Imported | None = None
    # output=T: the final answer, an instance of T (its JSON once read back from a trace, as
    # ``answer`` holds it as text); None when the run gave no answer that fits
    output: Any = field(default=None, compare=False)
    # a stepped session holding a batch for a person: what its model call cost, billed (in
    # ``cost_usd``) while its step is not recorded yet
    held_usd: float = 0.0
    pending: tuple[PendingCall, ...] = ()
    held: HeldTurn | None = None
    rules: tuple[Rule, ...] = ()
    event_errors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        edited = self.edited
        if edited and (
            not isinstance(edited, tuple)
            or any(type(i) is not int or not 0 <= i < len(self.messages) for i in edited)
        ):
            expected = f"a tuple of indexes of messages (0 to {len(self.messages) - 1})"
            raise ValueError(must("Result", "edited", expected, repr(edited)))

    if not TYPE_CHECKING:  # a type checker sees ``messages`` as the field it is

        def __getattr__(self, name: str) -> Any:
            # Python asks this only for an attribute the instance and its class lack: the
            # ``messages`` of a Result from ``messages_later`` that no one has read yet
            state = vars(self)
            if name == "messages":
                make = state.get(_MAKE_MESSAGES)
                if make is not None:
                    made = state.setdefault("messages", make())  # a thread's first: kept
                    state.pop(_MAKE_MESSAGES, None)
                    return made
                if "messages" in state:  # made by another thread since this one looked
                    return state["messages"]
            return object.__getattribute__(self, name)  # Python's own AttributeError

    def __getstate__(self) -> dict[str, Any]:
        """What pickle and ``copy`` keep of the instance: its fields, ``messages`` among them
        (made now when they were still to be made, ``messages_later``)."""
        state = vars(self)
        if _MAKE_MESSAGES in state:
            self.messages  # noqa: B018  (made and stored in place of the function)
        return state

    @property
    def answered(self) -> bool:
        return self.stop is Stop.ANSWERED

    @property
    def carried_usd(self) -> float:
        """Spend no step of this run accounts for: what the run it was forked from spent
        after the fork point (0.0 for a run that was not forked), and a context policy's
        summary billed for a turn that a ceiling (``max_seconds``) then stopped before its
        call. ``cost_usd`` includes it. (A step that was taken accounts for its context
        policy's summary: ``summaries_usd``.)"""
        costs = [s.cost_usd for s in self.steps]
        if self.cost_usd is None or None in costs:
            return 0.0  # an imported run's cost not known step by step: nothing to carry
        steps = math.fsum(c for c in costs if c is not None)
        carried = self.cost_usd - self.held_usd - steps - self.summaries_usd
        return carried if carried > 1e-12 else 0.0

    @property
    def summaries_usd(self) -> float:
        """What the summaries a context policy had written (``Summarize``) cost: part of
        ``cost_usd``, and of no step's ``cost_usd`` (each step's ``context.summary`` says its
        own)."""
        return from_pico(summaries_pico(self.steps))

    @property
    def tool_calls(self) -> tuple[CallRecord, ...]:
        """The calls that were executed (ok or error), in order; skipped and denied calls are
        left out."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status in EXECUTED)

    @property
    def failed(self) -> tuple[CallRecord, ...]:
        """The executed calls that ended in an error."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status == "error")

    @property
    def skipped(self) -> tuple[CallRecord, ...]:
        """Calls the model asked for that were not run because the run stopped."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status == "skipped")

    @property
    def denied(self) -> tuple[CallRecord, ...]:
        """Calls a person denied (``CallRecord.approval``): not run."""
        return tuple(c for s in self.steps for c in s.tool_calls if c.status == "denied")

    @functools.cached_property
    def _context_starts(self) -> tuple[list[int | None], str | None]:
        """How many messages each step was sent before its own (read once: a Result does not
        change), and what is wrong with the messages where that cannot be said."""
        return context_starts(self.messages, self.steps, "Result.request")

    def sent_counts(self) -> tuple[int | None, ...]:
        """How many of ``messages`` each step's model call was sent, by step, as ``request``
        reads them (a final answer's note included); None where the trace's messages are too
        few to say. Read in one pass, once."""
        starts = self._context_starts[0]
        return tuple(
            None if start is None else start + (step.final_answer and step.error is None)
            for start, step in zip(starts, self.steps, strict=True)
        )

    def request(self, index: int) -> Request:
        """What step ``index``'s model call was sent, as the trace holds it: the messages before
        the step (as its context policy sent them: ``Step.context``) and the tool schemas; for
        a final-answer step, the messages and the note that asked for the answer, and no
        tools. (Not in the trace, so not here: a failed final call's note, and the line
        ``budget_note=True`` ends each request with.) A trace whose messages are fewer than its
        steps appended is a ValueError."""
        where, steps = "Result.request", self.steps
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"{where}: index must be an int, got {type_name(index)}.")
        if not 0 <= index < len(steps):
            which = f"from 0 to {len(steps) - 1}" if steps else "of a run with steps (it has none)"
            raise ValueError(f"{where}: index must be a step index {which}, got {index}.")
        step = steps[index]
        sent = self._context_starts[0][index]
        if sent is None:
            said = f"{where}: messages must be the ones this run's steps appended, got others."
            raise ValueError(self._context_starts[1] or said)
        asked = None if step.projection is None else step.projection.output_tokens
        settings = self.options.get("settings")
        settings = None if settings is None else dict(settings)
        edit = step.context  # a context policy's request: what it sent of the context
        context = self.messages[:sent]
        messages = tuple(context) if edit is None else edit.messages(context)
        if not step.final_answer:
            return Request(messages, tuple(self.tools), asked, settings)
        told = 1 if step.error is None else 0  # a failed call's note was not kept
        return Request((*messages, *self.messages[sent : sent + told]), (), asked, settings)

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data; ``Result.from_dict`` reads it back."""
        price = self.price
        usage = [s.usage for s in self.steps if s.usage is not None]
        return {
            "format": FORMAT,
            "version": VERSION,
            "run_id": self.run_id,
            "forked_from": self.forked_from,
            "edited": list(self.edited),
            "imported": None if self.imported is None else self.imported.to_dict(),
            "stop": None if self.stop is None else self.stop.value,
            "answered": self.answered,
            "answer": self.answer,
            "error": self.error,
            "detail": self.detail,
            "cost_usd": self.cost_usd,
            **({"held_usd": self.held_usd} if self.held_usd else {}),  # older readers
            "seconds": self.seconds,
            "budget": budget_fields(self.budget),
            "price": None if price is None else price_to_dict(price),
            "max_output_tokens": self.max_output_tokens,
            "options": dict(self.options),
            "totals": {
                "steps": len(self.steps),
                "tool_calls": len(self.tool_calls),
                "failed": len(self.failed),
                "skipped": len(self.skipped),
                "denied": len(self.denied),
                "input_tokens": sum(u.input_tokens for u in usage),
                "output_tokens": sum(u.output_tokens for u in usage),
                "cost_usd": self.cost_usd,
            },
            "tools": list(self.tools),
            "steps": [s.to_dict() for s in self.steps],
            "messages": [message_to_dict(m) for m in self.messages],
            **self._output_dict(),
            **self.held_dict(),
        }

    def held_dict(self) -> dict[str, Any]:
        """``held``, ``pending``, ``rules`` and ``event_errors`` as plain data, each only when
        set (older readers): what ``to_dict`` and a journal's end line add."""
        out: dict[str, Any] = {}
        if self.held is not None:
            out["held"] = self.held.to_dict()
        if self.pending:
            out["pending"] = [pending_to_dict(c) for c in self.pending]
        if self.rules:
            out["rules"] = [r.to_dict() for r in self.rules]
        if self.event_errors:
            out["event_errors"] = list(self.event_errors)
        return out

    def _output_dict(self) -> dict[str, Any]:
        """``output``, as the trace keeps it: the JSON of ``answer`` (redacted as it is), only
        for a run whose final answer fitted its ``output=`` type."""
        if self.output is None or self.answer is None:
            return {}
        try:
            return {"output": json.loads(self.answer)}
        except ValueError:  # a redact that broke the JSON: the answer's text says what it can
            return {}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A Result from ``to_dict()`` data. Every field is checked: a ValueError names the field
        and what was wrong (``Result.from_dict: steps[3].tool_calls[0].status: ...``)."""
        return reading("Result.from_dict", READERS.result, data)

    def save(self, path: str | os.PathLike[str]) -> str | None:
        """Write the trace as JSON (format version 2: each text once, docs/traces.md);
        ``load_trace`` reads it back. An existing file at ``path`` is never overwritten: it is
        renamed to ``<stem>.<N><suffix>`` first, and that name is returned (None when there was
        no file)."""
        fh, moved = open_new(path, "Result.save", "path")
        with fh:
            fh.write(READERS.document(self))
        return moved

    def _repr_html_(self) -> str:
        """What Jupyter shows for a bare ``result`` in a cell: the viewer a package registers
        (``_html.viewer``). With the ``widgets`` extra installed, the viewer of
        ``budgetloop_widgets.to_html`` (the run's data and the viewer's script inline; a short
        summary where scripts do not run, as in nbviewer or an untrusted notebook). Without
        it: a read-only view of every step, no script."""
        return viewer()(self)

    def format(self) -> str:
        """The run as readable text: each step, each call and its outcome, then the totals.

        Every line says where it comes from: ``step N:`` starts a step (the model's text
        follows; each further line of that text starts with ``  | ``), ``  -``/``  x``/``  .``
        is a call that ran, failed or was skipped, ``  !`` one a person denied (on one line, its
        newlines escaped; a person's decision follows the arguments in brackets: ``[approved]``,
        ``[edited to {...}]`` with the arguments it ran with, ``[denied]``), then a blank line,
        the ``stop=`` totals (``denied=`` when a person denied calls) and the run's detail.
        Control and format characters (ANSI escapes, NUL, bidi and zero-width marks) are shown
        as escapes.
        """
        lines = []
        for step in self.steps:
            head = f"step {step.index}:"
            if step.error is not None:
                head += f" model error: {printable(step.error)}"
            elif step.text:
                first, *rest = printable(step.text, keep_newlines=True).split("\n")
                head += " " + first
                head = "\n".join([head, *(f"  | {line}" if line else "  |" for line in rest)])
            lines.append(head)
            for call in step.tool_calls:
                mark = {"ok": "-", "error": "x", "skipped": ".", "denied": "!"}[call.status]
                args = call.raw_arguments
                shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                lines.append(
                    f"  {mark} {printable(call.name)}({printable(shown)}){_decision(call)}"
                    f" -> {printable(call.content)}"
                )
        stop = "running" if self.stop is None else self.stop.value
        lines.append("")
        lines.append(
            f"stop={stop} tools={len(self.tool_calls)} failed={len(self.failed)}"
            f"{f' denied={len(self.denied)}' if self.denied else ''}"
            f" cost={'unknown' if self.cost_usd is None else f'${self.cost_usd:.4f}'}"
        )
        if self.detail:
            lines.append(printable(self.detail))
        return "\n".join(lines)


_MAKE_MESSAGES = "_make_messages"  # where ``messages_later`` keeps the function


def messages_later(result: Result, make: Callable[[], tuple[Message, ...]]) -> Result:
    """``result`` with its ``messages`` made by ``make()`` when they are first read, not before
    (a journal's steps append theirs: a trace of many steps loads without making each message
    first). Nothing else about it changes: reading ``messages``, comparing, the repr, pickling,
    ``copy``, ``dataclasses.replace`` and every method see them as made; ``make`` is called at
    most once a thread, and every reader gets the same tuple. ``result``'s own ``messages``
    (those ``edited`` was checked against) are dropped; ``make`` must not fail."""
    state = vars(result)
    del state["messages"]
    state[_MAKE_MESSAGES] = make
    return result


def _decision(call: CallRecord) -> str:
    """A person's decision on a call, as ``format`` writes it after the arguments."""
    if call.approval is None:
        return ""
    if call.approval == "edited" and call.arguments is not None:
        ran = json.dumps(call.arguments, ensure_ascii=False)
        return f" [edited to {printable(ran)}]"
    return f" [{call.approval}]"


def check_header(data: Any) -> None:
    """The data says it is a budgetloop trace of a version this budgetloop reads."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = repr(data.get("format")) if isinstance(data, dict) else type_name(data)
        raise ValueError(f"format must be {FORMAT!r}, got {got}: not a budgetloop trace.")
    version = data.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise ValueError(
            f"version must be 1 or 2, the trace formats this budgetloop reads, got "
            f"{version!r}. Upgrade budgetloop to read newer traces."
        )
