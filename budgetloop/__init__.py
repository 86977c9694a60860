"""budgetloop: the tool-calling loop, written out. Schemas from type hints, parallel calls,
budgets that stop a run before it overspends, and a trace that is plain data."""

from ._budget import Projection, estimate_tokens, max_turns_for, worst_case_cost
from ._check import ArgumentError
from ._schema import Tool, tool
from ._scripted import Request, ScriptedModel
from ._session import Session, run, start
from ._trace import CallRecord, Result, Step, load_trace
from ._types import Budget, Completion, Message, Price, Stop, ToolCall, Usage

__all__ = [
    "ArgumentError",
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
    "estimate_tokens",
    "load_trace",
    "max_turns_for",
    "run",
    "start",
    "tool",
    "worst_case_cost",
]

__version__ = "0.1.0"
