"""The loop: project the next turn, dispatch it, record it, run its tools, append the results.

``Session`` is the loop with the ``while`` taken out, so a notebook can drive it one turn at a
time; ``run()`` is ``start(...).run()``.
"""

from __future__ import annotations

import functools
import json
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, ParamSpec

from ._budget import (
    REQUEST_OVERHEAD,
    CountTokens,
    Projection,
    estimate_message,
    estimate_tools,
    project,
)
from ._dispatch import ABANDONED, not_run, run_batch
from ._pool import Workers
from ._schema import Tool, tool
from ._trace import Result, Step
from ._types import PICO, Budget, Completion, Message, Price, Stop, ToolCall, to_pico

Model = Callable[[list[Message], list[dict[str, Any]]], Completion]
Clock = Callable[[], float]
P = ParamSpec("P")


class Session:
    """One run, advanced a turn at a time with ``step()``. Build it with ``start(...)``."""

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
    ) -> None:
        self.complete = complete
        self.budget = budget if budget is not None else Budget()
        self.price = price if price is not None else getattr(complete, "price", None)
        if max_output_tokens is None:
            max_output_tokens = getattr(complete, "max_output_tokens", None)
        self.max_output_tokens = max_output_tokens
        self.count_tokens = count_tokens
        self.repeat_limit = repeat_limit
        self.clock = clock
        self.tools = _tool_table(tools)
        self.schemas = [t.schema for t in self.tools.values()]
        self._check_setup(complete, max_workers)
        self._messages = _initial_messages(prompt, system)
        self._steps: list[Step] = []
        self._spent = 0  # picodollars
        self._elapsed = 0.0
        self._executed = 0
        self._batches: list[str] = []  # signature of each turn's tool calls, for the repeat guard
        self._stop: Stop | None = None
        self._answer: str | None = None
        self._error: str | None = None
        self._detail: str | None = None
        self._tokens = REQUEST_OVERHEAD + estimate_tools(self.schemas)
        self._tokens += sum(estimate_message(m) for m in self._messages)
        self._workers = Workers(max_workers)
        weakref.finalize(self, self._workers.close)

    def _check_setup(self, complete: Any, max_workers: int | None) -> None:
        if not callable(complete):
            raise TypeError(
                f"run: complete must be a callable (messages, tools) -> Completion, "
                f"got {type(complete).__name__}."
            )
        if self.budget.max_cost_usd is not None and (
            self.price is None or self.max_output_tokens is None
        ):
            missing = " and ".join(
                n for n, v in (("price=Price(...)", self.price),
                               ("max_output_tokens=...", self.max_output_tokens)) if v is None
            )  # fmt: skip
            raise ValueError(
                f"run: Budget(max_cost_usd=...) needs {missing} to project the next turn's cost "
                "before it is sent; pass them to run()/start(), or give the model callable "
                "those attributes."
            )
        if self.price is not None and not isinstance(self.price, Price):
            raise TypeError(f"run: price must be a Price, got {type(self.price).__name__}.")
        mot = self.max_output_tokens
        if mot is not None and (isinstance(mot, bool) or not isinstance(mot, int) or mot < 0):
            raise ValueError(f"run: max_output_tokens must be an int >= 0, got {mot!r}.")
        if self.repeat_limit is not None and (
            isinstance(self.repeat_limit, bool)
            or not isinstance(self.repeat_limit, int)
            or self.repeat_limit < 2
        ):
            raise ValueError(
                f"run: repeat_limit must be an int >= 2 or None, got {self.repeat_limit!r}."
            )
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"run: max_workers must be >= 1 or None, got {max_workers!r}.")

    # -- what a caller reads ------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._stop is not None

    @property
    def messages(self) -> list[Message]:
        """The context as it stands: what the next model call would be sent."""
        return list(self._messages)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    @property
    def projection(self) -> Projection:
        """What the next turn would cost at worst, computed without calling the model."""
        return self._project(self._messages)[0]

    @property
    def result(self) -> Result:
        """The run so far; final once ``done``."""
        return Result(
            stop=self._stop,
            answer=self._answer,
            steps=tuple(self._steps),
            messages=tuple(self._messages),
            cost_usd=self._spent / PICO,
            seconds=self._elapsed,
            budget=self.budget,
            error=self._error,
            detail=self._detail,
            price=self.price,
            max_output_tokens=self.max_output_tokens,
            tools=tuple(self.schemas),
        )

    def run(self) -> Result:
        """Step until the run stops, and return the result."""
        while not self.done:
            self.step()
        return self.result

    # -- the loop -----------------------------------------------------------------------------

    def step(self) -> Step | None:
        """Take one turn: a model call and its tool batch. None if the run stopped before it."""
        if self.done:
            return None
        started = self.clock()
        try:
            return self._turn(started)
        finally:
            self._elapsed += self.clock() - started
            if self.done:
                self._workers.close()

    def _turn(self, started: float) -> Step | None:
        # 1. guards before the model call: steps, time, and the projected cost of this turn
        projection, projected_pico = self._project(self._messages)
        stop = self._stop_before_call(started, projection)
        if stop is not None:
            self._finish(*stop)
            return None
        # 2. dispatch
        completion, error = self._call_model(started, projected_pico)
        # 3. record the model's part
        index = len(self._steps)
        cost = self._charge(completion, projected_pico, error)
        if completion is None:
            step = Step(index, None, (), None, cost, projection, self._since(started), error)
            self._steps.append(step)
            self._finish(Stop.MAX_SECONDS if error == _ABANDONED else Stop.MODEL_ERROR,
                         error=error)  # fmt: skip
            return step
        calls = [(c, c.id or f"call_{index}_{i}") for i, c in enumerate(completion.tool_calls)]
        assistant = Message(
            "assistant", completion.text, tuple(ToolCall(c.name, c.arguments, i) for c, i in calls)
        )
        self._append(assistant)
        if not calls:
            self._answer = completion.text if completion.text is not None else ""
            self._finish(Stop.ANSWERED)
            step = Step(index, completion.text, (), completion.usage, cost, projection,
                        self._since(started))  # fmt: skip
            self._steps.append(step)
            return step
        # 4. run the batch, unless no model call could read its results
        block = self._stop_before_batch(started, index, calls)
        if block is not None:
            reason = f"the run stopped ({block[1]})"
            records = [not_run(c, i, "skipped", reason) for c, i in calls]
            self._finish(*block)
        else:
            records = run_batch(self.tools, calls, self.clock, self._workers, self._left(started))
            self._executed += len(records)
            if any(r.error == ABANDONED for r in records):
                self._finish(Stop.MAX_SECONDS, "a tool was still running at the deadline")
        # 5. append the results, in request order
        for record in records:
            self._append(Message("tool", record.content, tool_call_id=record.id, name=record.name))
        step = Step(index, completion.text, tuple(records), completion.usage, cost, projection,
                    self._since(started))  # fmt: skip
        self._steps.append(step)
        return step

    # -- guards: each is one function, called at one place ---------------------------------------

    def _stop_before_call(self, started: float, projection: Projection) -> tuple[Stop, str] | None:
        budget = self.budget
        if budget.max_steps is not None and len(self._steps) >= budget.max_steps:
            return Stop.MAX_STEPS, f"{budget.max_steps} of {budget.max_steps} steps taken"
        if self._out_of_time(started):
            return Stop.MAX_SECONDS, f"{budget.max_seconds} s passed"
        if not projection.fits:
            return Stop.MAX_COST_USD, _cost_detail(projection)
        return None

    def _stop_before_batch(
        self, started: float, index: int, calls: list[tuple[ToolCall, str]]
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
        if self._repeated(calls):
            return Stop.REPEATED, (
                f"the same tool calls were requested {self.repeat_limit} turns running"
            )
        # The cheapest next turn carries the results empty; if even that cannot fit, none can.
        empties = [Message("tool", "", tool_call_id=i, name=c.name) for c, i in calls]
        cheapest = self._project([*self._messages, *empties])[0]
        if not cheapest.fits:
            return Stop.MAX_COST_USD, "no turn to read the results fits: " + _cost_detail(cheapest)
        return None

    def _repeated(self, calls: list[tuple[ToolCall, str]]) -> bool:
        signature = json.dumps([[c.name, _canonical(c.arguments)] for c, _ in calls])
        self._batches.append(signature)
        n = self.repeat_limit
        return n is not None and len(self._batches) >= n and len(set(self._batches[-n:])) == 1

    def _out_of_time(self, started: float) -> bool:
        left = self._left(started)
        return left is not None and left <= 0

    # -- bookkeeping ------------------------------------------------------------------------------

    def _left(self, started: float) -> float | None:
        """Seconds left before ``max_seconds``, counting only time spent inside ``step()``."""
        if self.budget.max_seconds is None:
            return None
        return self.budget.max_seconds - self._elapsed - (self.clock() - started)

    def _since(self, started: float) -> float:
        return self.clock() - started

    def _project(self, messages: Sequence[Message]) -> tuple[Projection, int | None]:
        if self.count_tokens is not None:
            tokens = self.count_tokens(list(messages), self.schemas)
        else:
            tokens = self._tokens + sum(
                estimate_message(m) for m in messages[len(self._messages) :]
            )
        return project(tokens, self.max_output_tokens, self.price, self._spent, self.budget)

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        self._tokens += estimate_message(message)

    def _call_model(
        self, started: float, projected_pico: int | None
    ) -> tuple[Completion | None, str | None]:
        messages, schemas = list(self._messages), list(self.schemas)
        left = self._left(started)
        try:
            if left is None:
                completion = self.complete(messages, schemas)
            else:
                future = self._workers.submit(self.complete, messages, schemas)
                try:
                    completion = future.result(timeout=max(left, 0.0))
                except FutureTimeout:
                    return None, _ABANDONED
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the model's failure ends the run, with the steps kept
            return None, f"{type(exc).__name__}: {exc}"
        if not isinstance(completion, Completion):
            return None, (
                f"TypeError: the model returned {type(completion).__name__}, expected a "
                "Completion(text=..., tool_calls=[...])"
            )
        return completion, None

    def _charge(
        self, completion: Completion | None, projected: int | None, error: str | None
    ) -> float:
        """Add a call's cost to the spend: as reported, else priced from usage, else projected."""
        if completion is not None and completion.cost_usd is not None:
            pico = to_pico(completion.cost_usd)
        elif completion is not None and completion.usage is not None and self.price is not None:
            usage = completion.usage
            pico = self.price.pico(usage.input_tokens, usage.output_tokens)
        elif error is not None and error != _ABANDONED:
            pico = 0  # the call failed; nothing came back to bill
        else:
            pico = projected or 0  # no usage reported: assume the worst case it was allowed
        self._spent += pico
        return pico / PICO

    def _finish(self, stop: Stop, detail: str | None = None, error: str | None = None) -> None:
        self._stop, self._detail, self._error = stop, detail, error


_ABANDONED = "TimeoutError: the model call was still running when max_seconds passed; abandoned"


def _cost_detail(p: Projection) -> str:
    return (
        f"next turn projected ${p.cost_usd:.6f} ({p.input_tokens} in + {p.output_tokens} out) "
        f"on ${p.spent_usd:.6f} spent exceeds max_cost_usd=${p.limit_usd}"
    )


def _canonical(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return str(arguments)
    try:
        return json.dumps(arguments, sort_keys=True)
    except (TypeError, ValueError):
        return repr(arguments)


def _tool_table(tools: Sequence[Callable[..., Any]]) -> dict[str, Tool]:
    if isinstance(tools, (str, bytes)) or not isinstance(tools, (list, tuple)):
        raise TypeError(f"run: tools must be a list of functions, got {type(tools).__name__}.")
    table: dict[str, Tool] = {}
    for fn in tools:
        t = tool(fn)
        if t.name in table:
            raise ValueError(
                f"run: two tools are named {t.name!r}; pass name=... to tell them apart."
            )
        table[t.name] = t
    return table


def _initial_messages(prompt: str | Sequence[Message], system: str | None) -> list[Message]:
    messages = [Message("system", system)] if system is not None else []
    if isinstance(prompt, str):
        return [*messages, Message("user", prompt)]
    prompt = list(prompt)
    for i, m in enumerate(prompt):
        if not isinstance(m, Message):
            raise TypeError(
                f"run: prompt[{i}] is {type(m).__name__}; pass a str or a list of Message."
            )
    return [*messages, *prompt]


def _then_run(make: Callable[P, Session]) -> Callable[P, Result]:
    @functools.wraps(make)
    def run(*args: P.args, **kwargs: P.kwargs) -> Result:
        return make(*args, **kwargs).run()

    return run


start = Session
"""``start(complete, prompt, **options)``: a session that has called nothing yet."""

run = _then_run(Session)
run.__name__ = run.__qualname__ = "run"
run.__doc__ = """Run the loop until the model answers or a ceiling stops it: ``start(...).run()``.

A stop is a ``Result`` whose ``stop`` names the reason; it never raises. Configuration mistakes
(a cost ceiling without a price, a tool without type hints) raise here, before any call.
"""
