"""The data the loop passes around: messages, tool calls, completions, prices, budgets, stops."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

ROLES = ("system", "user", "assistant", "tool")

# Money is kept as whole picodollars so that sums and comparisons are exact:
# a ceiling of $0.585 and a spend of $0.585 are equal, not a rounding error apart.
PICO = 10**12


def to_pico(usd: float) -> int:
    """Dollars as written (the shortest decimal that round-trips the float) in picodollars."""
    return int((Decimal(repr(float(usd))) * PICO).to_integral_value())


def from_pico(pico: int) -> float:
    return pico / PICO


class Stop(str, enum.Enum):
    """Why a run ended. Compares equal to its string value."""

    ANSWERED = "answered"
    MAX_STEPS = "max_steps"
    MAX_SECONDS = "max_seconds"
    MAX_COST_USD = "max_cost_usd"
    MAX_TOOL_CALLS = "max_tool_calls"
    REPEATED = "repeated"
    MODEL_ERROR = "model_error"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it: ``arguments`` is a JSON string or a dict."""

    name: str
    arguments: str | dict[str, Any] = "{}"
    id: str | None = None


@dataclass(frozen=True)
class Message:
    """One entry of the conversation sent to the model."""

    role: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(
                f"Message.role: expected one of {', '.join(ROLES)}, got {self.role!r}."
            )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", _calls_tuple(self.tool_calls, "Message"))


@dataclass(frozen=True)
class Usage:
    """Tokens a model call consumed, as the provider reported them."""

    input_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Usage.{name}: expected an int >= 0, got {value!r}.")


@dataclass(frozen=True)
class Completion:
    """What the model returned: text, tool calls, or both. No tool calls means an answer."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", _calls_tuple(self.tool_calls, "Completion"))
        if self.text is not None and not isinstance(self.text, str):
            raise TypeError(f"Completion.text: expected str or None, got {_kind(self.text)}.")
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise TypeError(f"Completion.usage: expected Usage or None, got {_kind(self.usage)}.")
        cost = self.cost_usd
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, (int, float))
            or not math.isfinite(cost)
            or cost < 0
        ):
            raise ValueError(f"Completion.cost_usd: expected a number >= 0 or None, got {cost!r}.")


def _calls_tuple(calls: Any, owner: str) -> tuple[ToolCall, ...]:
    if not isinstance(calls, (list, tuple)):
        raise TypeError(f"{owner}.tool_calls: expected a list of ToolCall, got {_kind(calls)}.")
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise TypeError(f"{owner}.tool_calls[{i}]: expected ToolCall, got {_kind(call)}.")
    return tuple(calls)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


@dataclass(frozen=True)
class Price:
    """Dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float
    _in: int = field(init=False, repr=False, compare=False)
    _out: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"Price.{name}: expected a number, got {_kind(value)}.")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"Price.{name}: expected a finite number >= 0, got {value!r}.")
        # picodollars per token = dollars per million tokens x 10**6, rounded up
        object.__setattr__(self, "_in", -(-to_pico(self.input_per_mtok) // 10**6))
        object.__setattr__(self, "_out", -(-to_pico(self.output_per_mtok) // 10**6))

    def pico(self, input_tokens: int, output_tokens: int) -> int:
        """Exact cost in picodollars."""
        return input_tokens * self._in + output_tokens * self._out

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Cost in dollars of a call with these token counts."""
        return from_pico(self.pico(input_tokens, output_tokens))


@dataclass(frozen=True)
class Budget:
    """Ceilings for one run. A step is one model call. Only ``max_steps`` has a default."""

    max_steps: int | None = 10
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    max_tool_calls: int | None = None
    limit_pico: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tool_calls"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Budget.{name}: expected an int >= 0 or None, got {value!r}.")
        for name in ("max_seconds", "max_cost_usd"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"Budget.{name}: expected a number >= 0 or None, got {value!r}.")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"Budget.{name}: expected a number >= 0 or None, got {value!r}.")
        limit = None if self.max_cost_usd is None else to_pico(self.max_cost_usd)
        object.__setattr__(self, "limit_pico", limit)
