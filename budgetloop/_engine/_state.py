"""``RunState``: what a run has done so far, in one object. The loop's turn changes it; the
policies that decide how a run ends (``_finish``) read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._rules._money import Money
from .._trace._result import Step
from ._turn import Ending
from ._types import Message


@dataclass(eq=False, slots=True)
class RunState:
    """What a run has done so far: the one object a turn changes, and the policies read."""

    steps: list[Step]  # every step taken, a fork's inherited ones first
    messages: list[Message]  # the context: what the next model call is sent
    trace_messages: list[Message]  # the context as the trace keeps it (through redact=)
    money: Money  # what the run has spent, and its shared ledger
    executed: int = 0  # tool calls run (ok or error)
    elapsed: float = 0.0  # seconds spent inside step()
    ending: Ending | None = None  # why the run ended, once it has
    answer: str | None = None  # the final answer, as the trace keeps it
    finishing: Ending | None = None  # finish=True: the stop a final answer comes before
    final_tokens: int | None = None  # finish=True: the last final answer's tokens
    growth: int = 0  # finish=True: the most those grew in a turn
    output: Any = None  # output=T: the final answer, an instance of T, once one fits
    unanswered: bool = False  # output=T: the last reply was text; the next request asks again
