"""The loop: project the next turn, dispatch it, record it, run its tools, append the results.

A turn is written once, as a generator that yields what it needs done (a model call, then a
tool batch) and is sent back the outcome; ``Session.step`` does those on threads and
``AsyncSession.step`` awaits them, so both drivers obey the same guards by construction.

A turn is committed whole at its end (step, messages, spend, stop), so an interrupted or
cancelled turn leaves the trace as it was after the previous one.
"""

from __future__ import annotations

import json
import os
import time
import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ._budget import (
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    CountTokens,
    Projection,
    estimate_message,
    estimate_tools,
)
from ._budget import project as project_cost
from ._check import ArgumentError, parse_arguments
from ._dispatch import ABANDONED, Calls, Dispatch, Parsed, not_run
from ._journal import Journal
from ._pool import Workers
from ._redact import Redact, redact_message, redact_step
from ._setup import check_setup, initial_messages, is_async, tool_table
from ._trace import CallRecord, Result, Step
from ._types import PICO, Budget, Completion, Message, Price, Stop, ToolCall, to_pico

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
Clock = Callable[[], float]

ABANDONED_MODEL = "TimeoutError: the model call was still running when max_seconds passed"
MAX_RESULT_CHARS = 100_000


@dataclass(frozen=True)
class ModelCall:
    """What a turn asks its driver for first: one model call, within ``timeout`` seconds."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    timeout: float | None


@dataclass(frozen=True)
class Batch:
    """What a turn asks its driver for next: these tool calls, at once, within ``timeout``."""

    calls: Calls
    parsed: list[Parsed]
    timeout: float | None


L = TypeVar("L", bound="Loop")
Turn = Generator[ModelCall | Batch, Any, Step | None]


class Loop:
    """The loop's state and its turn; ``Session`` and ``AsyncSession`` drive it."""

    def __init__(
        self,
        complete: Model,
        prompt: str | Sequence[Message],
        *,
        tools: Sequence[Callable[..., Any]] = (),
        budget: Budget | None = None,
        price: Price | None = None,
        max_output_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
        system: str | None = None,
        repeat_limit: int | None = 3,
        clock: Clock = time.monotonic,
        max_workers: int | None = None,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        redact: Redact | None = None,
        trace_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._setup: tuple[Model, str | Sequence[Message], dict[str, Any]] = (
            complete,
            prompt,
            {
                "tools": tools, "budget": budget, "price": price,
                "max_output_tokens": max_output_tokens, "count_tokens": count_tokens,
                "system": system, "repeat_limit": repeat_limit, "clock": clock,
                "max_workers": max_workers, "max_result_chars": max_result_chars,
                "redact": redact, "trace_path": trace_path,
            },
        )  # fmt: skip
        self.complete = complete
        self.budget = budget if budget is not None else Budget()
        self.price = price if price is not None else getattr(complete, "price", None)
        if max_output_tokens is None:
            max_output_tokens = getattr(complete, "max_output_tokens", None)
        self.max_output_tokens = max_output_tokens
        self.count_tokens = count_tokens
        self.repeat_limit = repeat_limit
        self.clock = clock
        self.redact = redact
        self.tools = tool_table(tools)
        self.schemas = [t.schema for t in self.tools.values()]
        check_setup(self, complete, max_workers, max_result_chars, trace_path)
        self._async_model = is_async(complete)
        self._messages: list[Message] = []
        self._trace_messages = self._messages if redact is None else []
        self._steps: list[Step] = []
        self._spent = 0  # picodollars
        self._elapsed = 0.0
        self._executed = 0
        self._batches: list[str] = []  # each turn's tool calls, for the repeat guard
        self._stop: Stop | None = None
        self._answer: str | None = None
        self._error: str | None = None
        self._detail: str | None = None
        self._tokens = REQUEST_OVERHEAD + estimate_tools(self.schemas)
        self._offset = 0  # true input tokens of the last request minus our estimate of it
        self._sent = 0  # our estimate of the request in flight
        self._estimates: dict[int, tuple[Message, int]] = {}  # this turn's, by identity
        self._message_tokens: list[int] = []  # each message's count, as added to _tokens
        for message in initial_messages(prompt, system):
            self._append(message)
        self._workers = Workers(max_workers)
        self._dispatch = Dispatch(self.tools, clock, self._workers, max_result_chars)
        self._journal = None if trace_path is None else Journal(trace_path)
        weakref.finalize(self, self._workers.close)

    def fresh(self: L) -> L:
        """A new session with this one's model, prompt, tools, budget and every option, at
        its first step: what a notebook's Reset needs. (A scripted model keeps its place:
        ``ScriptedModel.reset()`` rewinds it.)"""
        complete, prompt, options = self._setup
        return type(self)(complete, prompt, **options)

    # -- what a caller reads ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._stop is not None

    @property
    def messages(self) -> list[Message]:
        """The context as it stands: what the next model call would be sent."""
        return list(self._messages)

    @property
    def message_tokens(self) -> tuple[int, ...]:
        """Each message of ``messages``' tokens as this session counted it (no re-estimate)."""
        return tuple(self._message_tokens)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    @property
    def projection(self) -> Projection:
        """What the next turn would cost at worst, computed without calling the model."""
        return self._project(self._context_tokens())[0]

    @property
    def result(self) -> Result:
        """The run so far; final once ``done``."""
        return Result(
            stop=self._stop,
            answer=self._answer,
            steps=tuple(self._steps),
            messages=tuple(self._trace_messages),
            cost_usd=self._spent / PICO,
            seconds=self._elapsed,
            budget=self.budget,
            error=self._error,
            detail=self._detail,
            price=self.price,
            max_output_tokens=self.max_output_tokens,
            tools=tuple(self.schemas),
        )

    # -- the turn ---------------------------------------------------------------------------------

    def _turn(self, started: float) -> Turn:
        # 1. project this turn's worst case; stop before it if any ceiling says so
        projection, projected = self._project(self._context_tokens())
        stop = self._stop_before_call(started, projection)
        if stop is not None:
            self._finish(*stop)
            return None
        # 2. dispatch
        self._sent = self._tokens
        completion, error = yield ModelCall(
            list(self._messages), list(self.schemas), self._left(started)
        )
        # 3. record what the model said and what it cost
        index = len(self._steps)
        cost = self._cost(completion, projected, error)
        if completion is None:
            step = Step(
                index, None, (), None, cost / PICO, projection, self._since(started), error
            )
            stop_reason = Stop.MAX_SECONDS if error == ABANDONED_MODEL else Stop.MODEL_ERROR
            self._commit(step, [], cost, (stop_reason, None, error))
            return step
        calls = _with_ids(completion.tool_calls, index)
        parsed = [_parse(c) for c, _ in calls]
        signature = _signature(calls, parsed) if calls else None
        assistant = Message("assistant", completion.text, tuple(c for c, _ in calls))
        # 4. run the batch, unless no model call could ever read its results
        records: list[CallRecord] = []
        end: tuple[Stop, str | None, str | None] | None = None
        if not calls:
            end = (Stop.ANSWERED, None, None)
        elif block := self._stop_before_batch(started, index, calls, assistant, signature, cost):
            records = [not_run(c, i, "skipped", f"the run stopped ({block[1]})") for c, i in calls]
            end = (block[0], block[1], None)
        else:
            records = yield Batch(calls, parsed, self._left(started))
            if any(r.error == ABANDONED for r in records):
                end = (Stop.MAX_SECONDS, "a tool was still running at the deadline", None)
        # 5. append the assistant turn and its results, in request order
        results = [Message("tool", r.content, tool_call_id=r.id, name=r.name) for r in records]
        step = Step(index, completion.text, tuple(records), completion.usage, cost / PICO,
                    projection, self._since(started))  # fmt: skip
        if end is not None and end[0] is Stop.ANSWERED:
            self._answer = self._traced(completion.text or "")
        self._commit(step, [assistant, *results], cost, end, signature)
        return step

    # -- guards: each is one function, called at one place ----------------------------------------

    def _stop_before_call(self, started: float, projection: Projection) -> tuple[Stop, str] | None:
        budget = self.budget
        if budget.max_steps is not None and len(self._steps) >= budget.max_steps:
            return Stop.MAX_STEPS, f"max_steps={budget.max_steps} reached"
        if self._out_of_time(started):
            return Stop.MAX_SECONDS, f"max_seconds={budget.max_seconds} passed"
        if not projection.fits:
            return Stop.MAX_COST_USD, _cost_detail(projection)
        return None

    def _stop_before_batch(
        self,
        started: float,
        index: int,
        calls: Calls,
        assistant: Message,
        signature: str | None,
        cost: int,
    ) -> tuple[Stop, str] | None:
        budget = self.budget
        if budget.max_steps is not None and index + 1 >= budget.max_steps:
            return Stop.MAX_STEPS, f"max_steps={budget.max_steps}: no step is left to read results"
        if self._out_of_time(started):
            return Stop.MAX_SECONDS, f"max_seconds={budget.max_seconds} passed"
        limit = budget.max_tool_calls
        if limit is not None and self._executed + len(calls) > limit:
            return Stop.MAX_TOOL_CALLS, (
                f"max_tool_calls={limit}: {self._executed} run, this turn asks for {len(calls)}"
            )
        if self._repeated(signature):
            return Stop.REPEATED, f"the same tool calls {self.repeat_limit} turns running"
        # The cheapest next turn carries empty results; if even that cannot fit, none can.
        if budget.max_cost_usd is None:
            return None
        if self.count_tokens is None:  # a lower bound: an overhead per result, nothing in it
            tokens = self._context_tokens([assistant]) + MESSAGE_OVERHEAD * len(calls)
        else:
            empty = [Message("tool", "", tool_call_id=i, name=c.name) for c, i in calls]
            tokens = self._context_tokens([assistant, *empty])
        cheapest = self._project(tokens, self._spent + cost)[0]
        if not cheapest.fits:
            return Stop.MAX_COST_USD, "no turn to read the results fits: " + _cost_detail(cheapest)
        return None

    def _repeated(self, signature: str | None) -> bool:
        n = self.repeat_limit
        if n is None:
            return False
        recent = [*self._batches[-(n - 1) :], signature]
        return len(recent) == n and len(set(recent)) == 1

    def _out_of_time(self, started: float) -> bool:
        left = self._left(started)
        return left is not None and left <= 0

    # -- bookkeeping ------------------------------------------------------------------------------

    def _begin(self) -> float:
        if self._journal is not None and not self._journal.started:
            self._journal.header(self.result)
        return self.clock()

    def _end(self, started: float) -> None:
        self._elapsed += self.clock() - started
        if self.done:
            self._workers.close()
            if self._journal is not None:
                self._journal.end(self.result)
                self._journal = None

    def _left(self, started: float) -> float | None:
        """Seconds left before ``max_seconds``, counting only time spent inside ``step()``."""
        if self.budget.max_seconds is None:
            return None
        return self.budget.max_seconds - self._elapsed - (self.clock() - started)

    def _since(self, started: float) -> float:
        return self.clock() - started

    def _context_tokens(self, extra: Sequence[Message] = ()) -> int:
        """The input tokens of the next request, with ``extra`` messages appended."""
        if self.count_tokens is not None:
            return self.count_tokens([*self._messages, *extra], self.schemas)
        # exact for what was already sent (calibrated by usage), estimated since
        return self._tokens + self._offset + sum(self._estimate(m) for m in extra)

    def _project(self, tokens: int, spent: int | None = None) -> tuple[Projection, int | None]:
        spent = self._spent if spent is None else spent
        return project_cost(tokens, self.max_output_tokens, self.price, spent, self.budget)

    def _estimate(self, message: Message) -> int:
        """A message's estimate, remembered for the turn: the assistant message is projected
        before its batch and appended after it, and is counted once."""
        key = id(message)
        if key not in self._estimates:
            self._estimates[key] = (message, estimate_message(message))
        return self._estimates[key][1]

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        tokens = self._estimate(message)
        self._message_tokens.append(tokens)
        self._tokens += tokens
        if self.redact is not None:
            self._trace_messages.append(redact_message(message, self.redact))

    def _cost(
        self, completion: Completion | None, projected: int | None, error: str | None
    ) -> int:
        """A model call's cost in picodollars: as reported, else priced usage, else projected."""
        if completion is not None and completion.cost_usd is not None:
            return to_pico(completion.cost_usd)
        if completion is not None and completion.usage is not None and self.price is not None:
            return self.price.pico(completion.usage.input_tokens, completion.usage.output_tokens)
        if completion is None and error != ABANDONED_MODEL:
            return 0  # the call failed; nothing came back to bill
        return projected or 0  # no usage reported: assume the worst case it was allowed

    def _commit(
        self,
        step: Step,
        messages: list[Message],
        cost: int,
        end: tuple[Stop, str | None, str | None] | None,
        signature: str | None = None,
    ) -> None:
        """Make a finished turn part of the run, all of it at once."""
        if signature is not None:
            self._batches.append(signature)
        if self.redact is not None:
            step = redact_step(step, self.redact)
        for message in messages:
            self._append(message)
        self._estimates.clear()
        self._steps.append(step)
        self._spent += cost
        if step.usage is not None:
            self._offset = step.usage.input_tokens - self._sent
        self._executed += sum(1 for r in step.tool_calls if r.status != "skipped")
        if self._journal is not None:
            self._journal.step(step, self._trace_messages[-len(messages) :] if messages else [])
        if end is not None:
            self._finish(*end)

    def _finish(self, stop: Stop, detail: str | None = None, error: str | None = None) -> None:
        self._stop = stop
        self._detail = None if detail is None else self._traced(detail)
        self._error = None if error is None else self._traced(error)

    def _traced(self, text: str) -> str:
        """Text as it may enter the trace: through ``redact`` when there is one."""
        return text if self.redact is None else self.redact(text)


def as_completion(value: Any) -> tuple[Completion | None, str | None]:
    if not isinstance(value, Completion):
        return None, (
            f"TypeError: the model returned {type(value).__name__}, expected a "
            "Completion(text=..., tool_calls=[...])"
        )
    return value, None


def _with_ids(calls: Sequence[ToolCall], index: int) -> list[tuple[ToolCall, str]]:
    """Each call with its id; a missing id is made up, a repeated one made unique."""
    out: list[tuple[ToolCall, str]] = []
    seen: set[str] = set()
    for i, call in enumerate(calls):
        call_id = call.id if isinstance(call.id, str) and call.id else f"call_{index}_{i}"
        if call_id in seen:
            call_id = f"{call_id}_{i}"
        seen.add(call_id)
        out.append((ToolCall(call.name, call.arguments, call_id), call_id))
    return out


def _parse(call: ToolCall) -> Parsed:
    try:
        return parse_arguments(call.name, call.arguments)
    except ArgumentError as exc:
        return exc


def _signature(calls: Calls, parsed: list[Parsed]) -> str:
    """The turn's calls, names and arguments, in a form that ignores key order and spacing."""
    shown = [
        [c.name, str(c.arguments) if isinstance(p, ArgumentError) else p]
        for (c, _), p in zip(calls, parsed, strict=True)
    ]
    return json.dumps(shown, sort_keys=True, default=repr)


def _cost_detail(p: Projection) -> str:
    return (
        f"next turn projected ${p.cost_usd or 0:.6f} ({p.input_tokens} in + {p.output_tokens} out)"
        f" on ${p.spent_usd:.6f} spent exceeds max_cost_usd=${p.limit_usd}"
    )
