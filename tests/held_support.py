"""Support for the tests of runs held for a person elsewhere: each step of such a run as its own
process (``python -m tests.held_support MODE SPEC``), on one trace file and one shared ledger
(``tests.ledger_support.open_ledger``).

``worker``: runs until its batch of transfers is held (``approve="hold"``), prints the result's
stop, cost and pending ids as JSON; with ``"linger"`` it then sleeps until it is killed.
``resume``: resumes the trace with ``spec["decisions"]`` and runs it to its end, printing its
stop, cost and answer, or ``{"refused": message}``. Every transfer that runs appends a line to
``spec["ran"]``, so a test counts what ran across every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from budgetloop import Completion, Price, ScriptedModel, ToolCall, resume, run, tool
from tests.ledger_support import open_ledger

PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0)
CALLS = (("c1", "ann", 50), ("c2", "bob", 9000), ("c3", "cy", 20000))


def transfers(ran: str) -> Any:
    @tool(needs_approval=lambda args: args["amount"] > 1000)
    def transfer(to: str, amount: float) -> str:
        """Send money."""
        fd = os.open(ran, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (json.dumps([to, amount]) + "\n").encode())
        finally:
            os.close(fd)
        return f"sent {amount:g} to {to}"

    return transfer


def held_model() -> ScriptedModel:
    return ScriptedModel([
        Completion(text="paying", tool_calls=[
            ToolCall("transfer", {"to": to, "amount": amount}, id) for id, to, amount in CALLS
        ]),
    ])  # fmt: skip


def main(mode: str, spec: dict[str, Any]) -> None:
    ledger = None if spec.get("ledger") is None else open_ledger(spec["ledger"])
    options: dict[str, Any] = {"price": PRICE, "max_output_tokens": 500, "ledger": ledger}
    transfer = transfers(spec["ran"])
    if mode == "worker":
        result = run(held_model(), "Pay the invoices.", tools=[transfer], approve="hold",
                     trace_path=spec["trace"], **options)  # fmt: skip
        print(json.dumps({"stop": str(result.stop), "cost": result.cost_usd,
                          "pending": [c.id for c in result.pending]}))  # fmt: skip
        sys.stdout.flush()
        if spec.get("linger"):
            time.sleep(600)
        return
    try:
        session = resume(spec["trace"], ScriptedModel(["paid"]), tools=[transfer],
                         decisions=spec["decisions"], **options)  # fmt: skip
    except ValueError as exc:
        print(json.dumps({"refused": str(exc)}))
        return
    result = session.run()
    print(json.dumps({"stop": str(result.stop), "cost": result.cost_usd, "answer": result.answer,
                      "detail": result.detail}))  # fmt: skip


def start(mode: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.held_support", mode, json.dumps(spec)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=env,
    )  # fmt: skip


def done(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
