"""budgetloop: the tool-calling loop, written out. Schemas from type hints, parallel calls,
budgets that stop a run before it overspends, and a trace that is plain data."""

from . import breakpoints as breakpoints  # the public module budgetloop.breakpoints
from . import context as context  # the public module budgetloop.context
from . import display as display  # the public module budgetloop.display
from . import events as events  # the public module budgetloop.events
from ._engine._async import AsyncSession
from ._engine._run import aresume, arun, astart, resume, run, start
from ._engine._session import Session
from ._engine._turn import NextTurn
from ._engine._types import (
    Budget,
    Chunk,
    Completion,
    Message,
    Price,
    Stop,
    ToolCall,
    UnreadableReply,
    Usage,
    format_usd,
)
from ._features._many import run_many
from ._features._replay import first_divergence, replay
from ._features._report import BudgetReport, budget_report
from ._features._scripted import ScriptedModel
from ._forms._printable import printable
from ._rules._budget import (
    Projection,
    estimate_tokens,
    max_turns_for,
    strict_tokens,
    worst_case_cost,
)
from ._schema._check import ArgumentError
from ._schema._tool import Tool, tool
from ._tools._approval import PendingCall
from ._trace._files import write_new
from ._trace._journal import as_result, load_trace, load_traces
from ._trace._result import (
    CallRecord,
    ContextEdit,
    HeldTurn,
    Imported,
    Request,
    Result,
    Rule,
    Step,
    Summary,
)
from .ledger import Ledger, LedgerError, MemoryLedger, RedisLedger, Reservation, SqliteLedger

__all__ = [
    "ArgumentError",
    "AsyncSession",
    "Budget",
    "BudgetReport",
    "CallRecord",
    "Chunk",
    "Completion",
    "ContextEdit",
    "HeldTurn",
    "Imported",
    "Ledger",
    "LedgerError",
    "MemoryLedger",
    "Message",
    "NextTurn",
    "PendingCall",
    "Price",
    "Projection",
    "RedisLedger",
    "Request",
    "Reservation",
    "Result",
    "Rule",
    "ScriptedModel",
    "Session",
    "SqliteLedger",
    "Step",
    "Stop",
    "Summary",
    "Tool",
    "ToolCall",
    "UnreadableReply",
    "Usage",
    "aresume",
    "arun",
    "as_result",
    "astart",
    "budget_report",
    "estimate_tokens",
    "first_divergence",
    "format_usd",
    "load_trace",
    "load_traces",
    "max_turns_for",
    "printable",
    "replay",
    "resume",
    "run",
    "run_many",
    "start",
    "strict_tokens",
    "tool",
    "worst_case_cost",
    "write_new",
]

__version__ = "0.1.0"

# Everything public says it comes from ``budgetloop``, not from the private module it is
# written in: reprs, tracebacks and documentation show the path a user imports.
for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith("budgetloop._"):
        _value.__module__ = __name__
del _name, _value
