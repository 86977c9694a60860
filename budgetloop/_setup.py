"""Reading ``run()``'s arguments: configuration mistakes fail here, before anything is sent."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._schema import tool
from ._types import Budget, Message, Price

if TYPE_CHECKING:
    from ._loop import Loop


def is_async(complete: Any) -> bool:
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
        getattr(complete, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    )


def tool_table(tools: Sequence[Callable[..., Any]]) -> dict[str, Any]:
    if isinstance(tools, (str, bytes)) or not isinstance(tools, (list, tuple)):
        raise TypeError(f"run: tools must be a list of functions, got {type(tools).__name__}.")
    table: dict[str, Any] = {}
    for fn in tools:
        t = tool(fn)
        if t.name in table:
            raise ValueError(
                f"run: two tools are named {t.name!r}; pass name=... to tell them apart."
            )
        table[t.name] = t
    return table


def initial_messages(prompt: str | Sequence[Message], system: str | None) -> list[Message]:
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


def check_setup(
    session: Loop,
    complete: Any,
    max_workers: int | None,
    max_result_chars: int | None,
    trace_path: str | os.PathLike[str] | None,
) -> None:
    """Configuration mistakes fail here, loudly, before anything is sent."""
    if trace_path is not None:
        folder = os.path.dirname(os.path.abspath(trace_path))
        if not os.path.isdir(folder):
            raise ValueError(f"run: trace_path {os.fspath(trace_path)!r}: no folder {folder!r}.")
    if not callable(complete):
        raise TypeError(
            "run: complete must be a callable (messages, tools) -> Completion, "
            f"got {type(complete).__name__}."
        )
    budget, price, mot = session.budget, session.price, session.max_output_tokens
    if not isinstance(budget, Budget):
        raise TypeError(f"run: budget must be a Budget, got {type(budget).__name__}.")
    if budget.max_cost_usd is not None and (price is None or mot is None):
        missing = [n for n, v in (("price=Price(...)", price), ("max_output_tokens=...", mot))
                   if v is None]  # fmt: skip
        raise ValueError(
            f"run: Budget(max_cost_usd=...) needs {' and '.join(missing)} to project the next "
            "turn's cost before it is sent; pass them to run()/start(), or give the model "
            "callable those attributes."
        )
    if price is not None and not isinstance(price, Price):
        raise TypeError(f"run: price must be a Price, got {type(price).__name__}.")
    for name, value, least in (
        ("max_output_tokens", mot, 0),
        ("repeat_limit", session.repeat_limit, 2),
        ("max_workers", max_workers, 1),
        ("max_result_chars", max_result_chars, 1),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < least
        ):
            raise ValueError(f"run: {name} must be an int >= {least} or None, got {value!r}.")
