"""budgetloop: the tool-calling loop, written out. Schemas from type hints, parallel calls,
budgets that stop a run before it overspends, and a trace that is plain data."""

from ._async import AsyncSession
from ._budget import Projection, estimate_tokens, max_turns_for, worst_case_cost
from ._check import ArgumentError
from ._journal import load_trace
from ._run import arun, astart, resume, run, start
from ._schema import Tool, tool
from ._scripted import Request, ScriptedModel
from ._session import Session
from ._trace import CallRecord, Result, Step
from ._types import Budget, Completion, Message, Price, Stop, ToolCall, Usage

__all__ = [
    "ArgumentError",
    "AsyncSession",
    "Budget",
    "CallRecord",
    "Completion",
    "Message",
    "Price",
    "Projection",
    "Request",
    "Result",
    "ScriptedModel",
    "Session",
    "Step",
    "Stop",
    "Tool",
    "ToolCall",
    "Usage",
    "arun",
    "astart",
    "estimate_tokens",
    "load_trace",
    "max_turns_for",
    "resume",
    "run",
    "start",
    "tool",
    "worst_case_cost",
]

__version__ = "0.1.0"

# Everything public says it comes from ``budgetloop``, not from the private module it is
# written in: reprs, tracebacks and documentation show the path a user imports.
for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith("budgetloop._"):
        _value.__module__ = __name__
del _name, _value
