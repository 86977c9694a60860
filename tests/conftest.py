"""Fixtures shared by the tests: scripted models whose context grows per turn, a counting search
tool, and a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from budgetloop import Completion, Message, Price, ToolCall, Usage, tool

# Assumed rates for the tests, not quoted prices.
PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)
RESULT = "r" * 2000  # each tool result adds 2,000 tokens to the context under growing_count


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def growing_count(start: int = 12_000) -> Callable[[list[Message], list[dict[str, Any]]], int]:
    """A token count that starts at ``start`` and grows by one token per character of tool
    results, so that each turn's tool result makes the next request larger."""

    def count(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return start + sum(len(m.content or "") for m in messages if m.role == "tool")

    return count


def always_calls(
    name: str = "search",
    *,
    output_tokens: int = 400,
    count: Callable[[list[Message], list[dict[str, Any]]], int] | None = None,
    vary: bool = True,
    log: list[tuple[str, int]] | None = None,
) -> Callable[[list[Message], list[dict[str, Any]]], Completion]:
    """A runaway model: every turn asks for ``name`` again (with fresh arguments when ``vary``),
    reporting the input it was sent (via ``count``) and ``output_tokens`` of output."""
    counter = count or growing_count()
    turns = [0]

    def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        turns[0] += 1
        if log is not None:
            log.append(("model", turns[0]))
        args = {"query": f"q{turns[0]}"} if vary else {"query": "same"}
        return Completion(
            tool_calls=[ToolCall(name, args, id=f"c{turns[0]}")],
            usage=Usage(counter(messages, tools), output_tokens),
        )

    return complete


def make_search(log: list[tuple[str, int]] | None = None) -> Any:
    """A ``search`` tool that returns ``RESULT``, counts its runs in ``search.count[0]`` and, given
    ``log``, appends ``("tool", n)`` to it on its n-th run."""
    calls = [0]

    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        calls[0] += 1
        if log is not None:
            log.append(("tool", calls[0]))
        return RESULT

    search.count = calls  # type: ignore[attr-defined]
    return search
