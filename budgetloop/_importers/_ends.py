"""How another framework's run ended, in budgetloop's words: the limit it names, else the
exception it raised, as a ``Stop`` and the sentence that says which.

A source's limit that has a budgetloop ceiling of the same meaning is that ceiling's stop
(pydantic-ai's ``request_limit`` and openai-agents' ``max_turns`` count model calls, as
``max_steps`` does; ``tool_calls_limit`` counts tool runs, as ``max_tool_calls`` does). Any
other end the source records (an exception, a limit budgetloop has no ceiling for, a tripped
guardrail) is ``model_error``, the stop of a run that raised, with the source's words kept.
"""

from __future__ import annotations

import re

from .._engine._types import Stop

LIMITS = {
    "request_limit": Stop.MAX_STEPS,
    "max_turns": Stop.MAX_STEPS,
    "tool_calls_limit": Stop.MAX_TOOL_CALLS,
}
_NAMED_LIMIT = re.compile(r"\b(\w+_limit)\b")


def limit_named(message: str) -> str | None:
    """The limit a pydantic-ai ``UsageLimitExceeded`` message names (``request_limit``)."""
    found = _NAMED_LIMIT.search(message)
    return found.group(1) if found else None


def ended(said: str, limit: str | None = None) -> tuple[Stop, str]:
    """The stop and the detail for a run the source says ended with ``said`` (its exception,
    as ``Kind: message``), past the source's ``limit`` when it names one."""
    if limit is not None:
        stop = LIMITS.get(limit, Stop.MODEL_ERROR)
        return stop, f"the source's {limit} stopped the run: {said}"
    return Stop.MODEL_ERROR, f"the source's run raised {said}"


def guarded(kind: str, name: str | None) -> tuple[Stop, str]:
    """The stop and the detail for a run a tripped guardrail ended (``kind``: input, output)."""
    which = f"{kind} guardrail {name!r}" if name else f"an {kind} guardrail"
    withheld = "; the answer was withheld" if kind == "output" else ""
    return Stop.MODEL_ERROR, f"the source's {which} tripped{withheld}"
