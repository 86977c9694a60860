"""A run that waits for a person elsewhere: four processes, one trace file, one shared budget.

    python examples/approve_elsewhere.py worker  DIR   # runs until a transfer needs approval
    python examples/approve_elsewhere.py pending DIR   # what a web page lists: the calls waiting
    python examples/approve_elsewhere.py decide  DIR   # a person's answers, saved for the resumer
    python examples/approve_elsewhere.py resume  DIR   # runs the decided batch, then goes on
    python examples/approve_elsewhere.py resume  DIR   # again: refused, the batch ran once

With no arguments it runs all five, each as its own process, in a temporary folder. The worker
writes DIR/run.jsonl and ends ``held``; nothing of the batch has run. The resumer takes the held
batch in that file (an atomic step: a second resume, from any process, is refused and says when
it was taken), runs it as decided and goes on writing to the same file, under the same budget,
spend and run id. The shared budget is a SQLite ledger in DIR: no money is reserved while the run
waits, and the ledger is asked for the next turn before the decided batch runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from budgetloop import (
    Completion,
    Price,
    ScriptedModel,
    SqliteLedger,
    ToolCall,
    load_trace,
    resume,
    run,
    tool,
)

PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)


@tool(needs_approval=lambda args: args["amount"] > 1000)
def transfer(to: str, amount: float) -> str:
    """Send money."""
    return f"sent {amount:g} to {to}"


def worker(folder: Path) -> None:
    complete = ScriptedModel([
        Completion(text="paying", tool_calls=[
            ToolCall("transfer", {"to": "ann", "amount": 50}, "c1"),
            ToolCall("transfer", {"to": "bob", "amount": 9000}, "c2"),
            ToolCall("transfer", {"to": "cy", "amount": 20000}, "c3"),
        ]),
    ])  # fmt: skip
    ledger = SqliteLedger(folder / "budget.db", limit_usd=1.0)
    result = run(complete, "Pay the invoices.", tools=[transfer], price=PRICE, ledger=ledger,
                 max_output_tokens=500,
                 approve="hold", trace_path=folder / "run.jsonl")  # fmt: skip
    print(f"worker: stop={result.stop} waiting={len(result.pending)}")


def pending(folder: Path) -> None:
    for call in load_trace(folder / "run.jsonl").pending:
        print(f"pending: {call.id} {call.name}({json.dumps(call.arguments)})")


def decide(folder: Path) -> None:
    decisions = {"c2": {"to": "bob", "amount": 5000}, "c3": "over the daily limit"}
    (folder / "decisions.json").write_text(json.dumps(decisions), encoding="utf-8")
    print("decide: c2 edited to 5000, c3 denied")


def resumer(folder: Path) -> None:
    decisions = json.loads((folder / "decisions.json").read_text(encoding="utf-8"))
    complete = ScriptedModel(["Paid ann 50 and bob 5,000; the 20,000 to cy was denied."])
    ledger = SqliteLedger(folder / "budget.db", limit_usd=1.0)
    try:
        session = resume(folder / "run.jsonl", complete, tools=[transfer], ledger=ledger,
                         decisions=decisions)  # fmt: skip
    except ValueError as refused:
        print(f"resume refused: {str(refused).split(' got ')[0]}")
        return
    result = session.run()
    print(f"resume: stop={result.stop} answer={result.answer!r}")
    print(result.format())


def main() -> None:
    if len(sys.argv) == 3:
        steps = {"worker": worker, "pending": pending, "decide": decide, "resume": resumer}
        steps[sys.argv[1]](Path(sys.argv[2]))
        return
    with tempfile.TemporaryDirectory() as folder:
        for name in ("worker", "pending", "decide", "resume", "resume"):
            subprocess.run([sys.executable, __file__, name, folder], check=True)


if __name__ == "__main__":
    main()
