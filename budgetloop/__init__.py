"""budgetloop: the tool-calling loop, written out. Schemas from type hints, parallel calls,
budgets that stop a run before it overspends, and a trace that is plain data."""

from ._async import AsyncSession
from ._budget import Projection, estimate_tokens, max_turns_for, worst_case_cost
from ._check import ArgumentError
from ._journal import load_trace
from ._many import run_many
from ._report import BudgetReport, budget_report
from ._run import arun, astart, run, start
from ._schema import Tool, tool
from ._scripted import Request, ScriptedModel
from ._session import Session
from ._trace import CallRecord, Result, Step
from ._types import Budget, Completion, Message, Price, Stop, ToolCall, Usage
from .ledger import Ledger, MemoryLedger, RedisLedger, Reservation, SqliteLedger

__all__ = [
    "ArgumentError",
    "AsyncSession",
    "Budget",
    "BudgetReport",
    "CallRecord",
    "Completion",
    "Ledger",
    "MemoryLedger",
    "Message",
    "Price",
    "Projection",
    "RedisLedger",
    "Request",
    "Reservation",
    "Result",
    "ScriptedModel",
    "Session",
    "SqliteLedger",
    "Step",
    "Stop",
    "Tool",
    "ToolCall",
    "Usage",
    "arun",
    "astart",
    "budget_report",
    "estimate_tokens",
    "load_trace",
    "max_turns_for",
    "run",
    "run_many",
    "start",
    "tool",
    "worst_case_cost",
]

__version__ = "0.1.0"
