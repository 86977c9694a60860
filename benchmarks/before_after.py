"""The loop's overhead per turn at an earlier revision and now, measured side by side.

    python benchmarks/before_after.py REV          # e.g. a commit before an optimisation
    python benchmarks/before_after.py REV --load   # and load_trace of 100,000 steps, both cores

The core of REV (``budgetloop/`` at that commit, read with ``git archive``) is imported under
another name beside the working tree's, and both run bench.py's overhead workload (50 turns of
two calls) twice, with the cost guard on and with every ceiling on (a deadline too), all five
alternating with the bare loop, so the figures share one machine state. Medians of the per-run
times; ratios are medians of back-to-back pairs. With ``--load``, bench.py's 100,000-step JSON
Lines file is also loaded by each core in turn, three times each, every load in a fresh process.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import bench

ROOT = Path(__file__).resolve().parent.parent


def core_at(rev: str, into: Path) -> ModuleType:
    """``budgetloop`` as it was at ``rev``, importable as ``budgetloop_at_rev``."""
    archive = subprocess.run(
        ["git", "archive", rev, "budgetloop"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "budgetloop").rename(into / "budgetloop_at_rev")
    sys.path.insert(0, str(into))
    return importlib.import_module("budgetloop_at_rev")


def prepare(core: ModuleType, every_ceiling: bool = False) -> bench.Prepare:
    """bench.py's overhead workload, built from ``core``'s own types; with ``every_ceiling``,
    its "all guards on" configuration (``max_seconds`` and ``max_tool_calls`` as well)."""
    script = [
        *(
            core.Completion(
                tool_calls=[
                    core.ToolCall(n, json.dumps(a), f"call_{t}_{i}")
                    for i, (n, a) in enumerate(bench.call_args(t))
                ],
                usage=core.Usage(120, 20),
            )
            for t in range(bench.TURNS)
        ),
        core.Completion(text="done", usage=core.Usage(120, 20)),
    ]
    tools = [core.tool(bench.add), core.tool(bench.echo)]
    ceilings: dict[str, Any] = (
        {"max_seconds": 3600.0, "max_tool_calls": 10_000} if every_ceiling else {}
    )
    options: dict[str, Any] = {
        "budget": core.Budget(max_steps=bench.TURNS + 5, max_cost_usd=1000.0, **ceilings),
        "price": core.Price(1.25, 10.0),
        "max_output_tokens": 500,
    }

    def make() -> Any:
        model = core.ScriptedModel(script)

        def go() -> None:
            result = core.run(model, "go", tools=tools, **options)
            bench.expect(len(result.tool_calls) == bench.TURNS * bench.CALLS, result.stop)

        return go

    return make


def loads(rev: str, into: Path, steps: int = 100_000, rounds: int = 3) -> None:
    """``load_trace`` of one ``steps``-step journal by REV's core and by the working tree's,
    alternating, each in a fresh process: median wall and CPU seconds, largest peak memory."""
    (into / "rev").mkdir()
    archive = subprocess.run(
        ["git", "archive", rev, "budgetloop"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into / "rev", filter="data")
    path = into / "trace.jsonl"
    size = bench.journal_file(str(path), steps)
    got: dict[str, list[list[float]]] = {rev: [], "now": []}
    for _ in range(rounds):
        for name, where in ((rev, into / "rev"), ("now", ROOT)):
            out = subprocess.run(
                [sys.executable, "-c", bench.LOAD, str(path)],
                capture_output=True, text=True, check=True, cwd=into,
                env={**os.environ, "PYTHONPATH": str(where)},
            ).stdout.split()  # fmt: skip
            got[name].append([float(x) for x in out[:3]])
    print(
        f"load_trace of a {steps:,}-step JSON Lines file ({size / 1e6:.0f} MB), fresh processes:"
    )
    for name, runs in got.items():
        wall = bench.median([r[0] for r in runs])
        cpu = bench.median([r[1] for r in runs])
        peak = max(r[2] for r in runs) / 1e6
        print(f"  {name:>12}: {wall:5.2f} s (cpu {cpu:5.2f} s), peak {peak:4.0f} MB")
    ratio = bench.median([a[0] / b[0] for a, b in zip(got["now"], got[rev], strict=True)])
    print(f"  now / {rev}: {ratio:.2f}")


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--load"]
    if len(args) != 1:
        sys.exit(__doc__)
    rev = args[0]
    import budgetloop

    bench.warn_if_elsewhere("before_after.py")

    if "--load" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            loads(rev, Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        before = core_at(rev, Path(tmp))
        cases = {
            "bare loop": bench.prepare_bare,
            f"cost {rev}": prepare(before),
            "cost now": prepare(budgetloop),
            f"all {rev}": prepare(before, every_ceiling=True),
            "all now": prepare(budgetloop, every_ceiling=True),
        }
        times = bench.interleaved(cases, rounds=41, warmup=5)

    def per_turn(name: str) -> str:
        return f"{bench.median(times[name]) / bench.TURNS * 1e6:7.1f} us/turn"

    def bare(name: str) -> str:
        return f"{bench.paired_ratio(times, name, 'bare loop'):5.1f}x bare"

    print(f"overhead per turn, {bench.TURNS} turns of {bench.CALLS} calls:")
    print(f"  {'bare loop':>28}: {per_turn('bare loop')}")
    for label, key in (("cost guard on", "cost"), ("every ceiling on", "all")):
        for who in (rev, "now"):
            name = f"{key} {who}"
            print(f"  {label + ', ' + who:>28}: {per_turn(name)} = {bare(name)}")
        print(f"  {label + ', now / ' + rev:>28}: "
              f"{bench.paired_ratio(times, f'{key} now', f'{key} {rev}'):.2f}")  # fmt: skip
    for who in (rev, "now"):
        print(f"  {'every ceiling / cost guard, ' + who:>28}: "
              f"{bench.paired_ratio(times, f'all {who}', f'cost {who}'):.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
