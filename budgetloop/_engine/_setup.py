"""The base layer of the loop: a run set up from its options (its state, its counters, its
journal), the clock, the context as messages join it, and what a caller reads."""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from .._features._held import Held, Holding
from .._features._output import FINAL_ANSWER
from .._forms._redact import Redactor, Said, strict
from .._rules._ceilings import Used, calls_run
from .._rules._context import ContextTokens
from .._rules._guards import Guards
from .._rules._money import Money
from .._rules._repeats import Repeats
from .._schema._tool import Tool
from .._tools._dispatch import Dispatch
from .._tools._pool import Workers
from .._trace._journal import Journal
from .._trace._result import HeldTurn, Result, RunOptions, Step, new_run_id
from ._events import Emitter
from ._options import Options, is_async
from ._reading import Model
from ._state import RunState
from ._stream import OnPiece, Stream
from ._turn import ModelCall
from ._types import Budget, Chunk, Completion, Message, Price, from_pico


class Setup(Holding):
    """A run set up from its options, and what a caller reads of it; the layers above add
    the records, the plan, the commit and the turn."""

    # What most runs never set is a default of the class, not an attribute of each session:
    # CPython reads an object's attributes fastest while its dict shares its keys with the
    # class's other instances, which it does only up to 30 keys (a test keeps them fewer).
    _caller: str | None = None  # the entry point that runs it to the end, which names errors
    forked_from: str | None = None  # the run_id of the run this one was forked from
    edited: tuple[int, ...] = ()  # the messages a fork changed from its context
    _held: Held | None = None  # a batch waiting for a person (a stepped session)
    _hold_tools: frozenset[str] = frozenset()  # breakpoints.before_tool, while running
    _hold_calls: frozenset[tuple[int, str]] = frozenset()  # replay: the recorded holds
    _least: int | None = None  # min_output_tokens: a turn is fitted down to it
    _settings: str | None = None  # the run's settings, as JSON (a copy goes with each call)
    _events: Emitter | None = None  # on_event: the run's events on their way to its function
    _on_piece: OnPiece | None = None  # each piece of a streamed reply goes through it
    # a streamed reply: its model call and its stream (for the deadline to cut), and its
    # completion with the seconds to its first chunk (for its step)
    _streaming: tuple[ModelCall, Stream] | None = None
    _first_chunk: tuple[Completion | None, float] | None = None
    _compacts = False  # a context= policy (or a replay's recorded requests) makes the requests

    def _build(
        self,
        complete: Model,
        options: Options,
        context: Sequence[Message],
        history: Sequence[Step],
        spent: int,
    ) -> None:
        self.complete = complete
        self.options = options
        given = options.values
        self.run_id = new_run_id()  # this run's: its journal, its spans and its Result say it
        self.budget: Budget = options.budget  # these three are read on every turn
        self.price: Price | None = options.price
        self.max_output_tokens: int | None = given["max_output_tokens"]
        if given["min_output_tokens"] is not None:
            self._least = given["min_output_tokens"]
        if given["settings"]:
            self._settings = json.dumps(given["settings"])
        if given["context"] is not None:
            self._compacts = True
        redact = given["redact"]
        self._redactor = Redactor(None if redact is None else strict(redact))
        if given["on_event"] is not None:
            self._events = Emitter(given["on_event"], self._redactor)
            self._on_piece = self._piece
        self._async_model = is_async(complete)
        self._stepping = threading.Lock()  # one step at a time, from any thread or task
        self._count = ContextTokens(self.schemas, given["count_tokens"])
        self._trace_schemas = self._redactor.schemas(self.schemas)
        self._trace_options = self._recorded_options()
        final = options.output  # output=T: the one tool a final-answer turn is sent
        self._final_tools = [] if final is None else [final.schema]
        self.state = RunState(
            steps=[self._redactor.kept(step) for step in history],
            messages=[],
            trace_messages=[],
            money=Money(spent, given["ledger"]),  # the only place spend changes
            executed=calls_run(history),
        )
        self._kept = len(history)  # steps inherited by a fork, already in its journal header
        self._origin = 0.0  # when the time of the step being taken is counted from
        self._committed: list[Step] = []  # the steps the step being taken has recorded
        self._unraised: list[BaseException] = []  # raised while a step was made: see _record
        self._interrupt = threading.Event()  # set by interrupt(): the reply streaming is cut
        self._guards = Guards(options.budget)  # the only place a ceiling is checked
        self._repeats = Repeats(
            given["repeat_limit"], given["cycle_limit"], given["warn_repeats"], history, self.tools
        )
        clock = self._clock = given["clock"]
        self._last_clock = clock()
        for message in context:
            self._append(message)
        self._count.count()  # a broken count_tokens fails here, at start()
        self._workers = Workers(given["max_workers"])
        self._dispatch = Dispatch(
            self.tools, clock, self._workers, given["max_result_chars"], self._redactor
        )
        path = given["trace_path"]
        self._journal = None if path is None else Journal(path)
        weakref.finalize(self, self._workers.close)

    def _piece(self, chunk: Chunk) -> None:
        """A piece of the streamed reply of the step being taken, to ``on_event``."""
        assert self._events is not None
        self._events.streamed(len(self.state.steps), chunk)

    # -- what a caller reads ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state.ending is not None

    @property
    def tools(self) -> dict[str, Tool]:
        return self.options.tools

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return self.options.schemas

    @property
    def messages(self) -> list[Message]:
        """The context as it stands: what the next model call would be sent."""
        return list(self.state.messages)

    @property
    def message_tokens(self) -> tuple[int, ...]:
        """Each message of ``messages``' estimated tokens, as the session counted it."""
        return self._count.per_message

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self.state.steps)

    @property
    def used(self) -> Used:
        """What the run has used of each ceiling so far (the meter's figures)."""
        state = self.state
        return Used(len(state.steps), state.elapsed, state.executed)

    @property
    def result(self) -> Result:
        """The run so far; final once ``done``."""
        ending = self.state.ending
        detail = None if ending is None else ending.detail
        assert not isinstance(detail, Said)  # _end_run keeps the text the trace keeps
        return Result(
            stop=None if ending is None else ending.stop,
            answer=self.state.answer,
            steps=tuple(self.state.steps),
            messages=tuple(self.state.trace_messages),
            cost_usd=self.state.money.total_usd(),
            seconds=self.state.elapsed,
            budget=self.budget,
            error=None if ending is None else ending.error,
            detail=detail,
            price=self.price,
            max_output_tokens=self.max_output_tokens,
            tools=tuple(self._trace_schemas),
            options=self._trace_options,
            run_id=self.run_id,
            forked_from=self.forked_from,
            edited=self.edited,
            output=self.state.output,
            held_usd=0.0 if self._held is None else from_pico(self._held.taken.cost),
            event_errors=() if self._events is None else tuple(self._events.errors),
            **self._held_fields(),
        )

    def _held_fields(self) -> dict[str, Any]:
        """``Result.held``, ``pending`` and ``rules``: the turn and its calls of a batch held
        (the run ended held, or a stepped session waits), and the standing rules made."""
        out: dict[str, Any] = {"rules": self._rules} if self._rules else {}
        held = self._held
        if held is not None:
            assert held.message is not None
            out["held"] = HeldTurn(held.step, held.message)
            out["pending"] = held.shown
        return out

    def _recorded_options(self) -> RunOptions:
        """The options the trace records; ``output``'s schema as the tools' are kept (through
        ``redact=``)."""
        recorded = self.options.recorded
        final = recorded.get("output")
        if final is not None:
            sent = [s for s in self._trace_schemas if s.get("name") == FINAL_ANSWER]
            if sent:
                recorded["output"] = {**final, "parameters": sent[0].get("parameters")}
        return recorded

    def _left(self, started: float | None) -> float | None:
        """Seconds left before ``max_seconds``, counting only time spent inside ``step()``
        (``started``: when this step began; None outside a step)."""
        if self.budget.max_seconds is None:
            return None
        running = 0.0 if started is None else self._since(started)
        return self.budget.max_seconds - self.state.elapsed - running

    def _deadline(self) -> float | None:
        """The clock's reading at which ``max_seconds`` passes, for the step being taken."""
        seconds = self.budget.max_seconds
        return None if seconds is None else self._origin + seconds - self.state.elapsed

    def _since(self, started: float) -> float:
        now = self._clock()
        return max(0.0, now - started) if now == now else 0.0

    def _restart(self, started: float) -> float:
        """A held batch's step is recorded and the step goes on to a new turn: the time so
        far is the run's, and the new turn's is counted from now."""
        now = self._clock()
        self.state.elapsed += self._since(self._origin)
        self._origin = now
        return now

    def _append(self, message: Message) -> None:
        self.state.messages.append(message)
        self._count.append(message)
        self.state.trace_messages.append(self._traced_message(message))

    def _traced_message(self, message: Message) -> Message:
        return self._redactor.message(message)
