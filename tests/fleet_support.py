"""Support for the fleet tests (``run_many(..., executor=...)``): what the worker processes
unpickle must be importable there, so the models and tools live in this module, not in a test
file. Workers import it as ``tests.fleet_support`` with this worktree on ``PYTHONPATH``."""

from __future__ import annotations

import os
import time
from typing import Any

from budgetloop import (
    Completion,
    Message,
    Price,
    ScriptedModel,
    ToolCall,
    UnreadableReply,
    Usage,
    tool,
)

PRICE = Price(1.0, 1.0)  # assumed rates for the tests, not quoted prices
STEP = Usage(1000, 50)  # each step: 1,050 tokens at $1 per million, $0.00105


@tool
def search(query: str) -> str:
    """Search the corpus.

    Args:
        query: what to look for
    """
    return f"found {query}"


def runaway() -> ScriptedModel:
    """A model that asks for ``search`` forever, each step costing $0.00105."""
    call = Completion(tool_calls=[ToolCall("search", {"query": "more"})], usage=STEP)
    return ScriptedModel([call], repeat_last=True, price=PRICE, max_output_tokens=100)


class HangsOnce:
    """A runaway model (or, with ``answer``, one that answers at once), except that the run whose
    prompt is ``"hang"`` writes its process id to ``marker`` at its ``after``-th call and then
    sleeps until it is killed (once: with ``marker`` written, it no longer hangs). The other
    runs wait for ``marker`` before each call."""

    price = PRICE
    max_output_tokens = 100

    def __init__(self, marker: str, after: int = 3, *, answer: bool = False) -> None:
        self.marker = marker
        self.after = after
        self.answer = answer

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        calls = sum(1 for m in messages if m.role == "assistant")
        first = not os.path.exists(self.marker)  # a task run again does not hang again
        if messages[0].content != "hang":
            _wait_for_file(self.marker)  # so no run spends the ledger before the hang
        elif calls + 1 == self.after and first:
            with open(self.marker + ".tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.replace(self.marker + ".tmp", self.marker)
            time.sleep(600)
        if self.answer:
            return Completion(text="done", usage=STEP)
        return Completion(tool_calls=[ToolCall("search", {"query": f"q{calls}"})], usage=STEP)


def _wait_for_file(path: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


async def async_answer(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    """An ``async def`` model that answers with the id of the process it ran in."""
    return Completion(text=f"pid {os.getpid()}", usage=STEP)


async_answer.price = PRICE  # type: ignore[attr-defined]
async_answer.max_output_tokens = 100  # type: ignore[attr-defined]


def thousand(messages: list[Message], tools: list[dict[str, Any]]) -> int:
    """Every request counted as the 1,000 input tokens ``STEP`` reports."""
    return 1000


def echo_prompt(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    """Answers with the prompt and the id of the process it ran in."""
    return Completion(text=f"{messages[-1].content} (in {os.getpid()})", usage=STEP)


echo_prompt.price = PRICE  # type: ignore[attr-defined]
echo_prompt.max_output_tokens = 100  # type: ignore[attr-defined]


def worker_pid(result: Any) -> str:
    """The process id an ``echo_prompt`` run's answer names."""
    return str(result.answer).rpartition("(in ")[2].rstrip(")")


def unreadable(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    """A reply the provider billed (``STEP``) that could not be read."""
    raise UnreadableReply(f"not read in {os.getpid()}", STEP)


unreadable.price = PRICE  # type: ignore[attr-defined]
unreadable.max_output_tokens = 100  # type: ignore[attr-defined]
