"""The loop's cost per run at an earlier revision and now, counted in machine instructions.

    python benchmarks/instructions.py REV        # e.g. the commit a round started from

Timings on a shared machine move by a tenth from one minute to the next; the instructions a
run executes do not. Each core (``budgetloop/`` at REV, read with ``git archive``, and the
working tree's) runs ``before_after.py``'s cost-guard workload (50 turns of two calls) under
valgrind's callgrind, once with 5 runs and once with 25, and the difference over 20 runs is one
run's instructions, start-up taken out. A batch never waits for a helper thread here (the
offer is put off past the run), so what valgrind's slowness does to the threads' timing does
not change the count. Needs ``valgrind`` on PATH. Counts repeat to about 0.3% (hash seeds,
run ids); instructions are not time, but the same interpreter running the same kind of work
spends them alike, so the ratio is the cost of one core's turn against the other's.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: argv is the core's folder (or "" for the working tree) and the
# number of runs. The core is imported under its own name, its dispatch told not to offer a
# batch to helper threads, and before_after.py's workload is run that many times after one.
CHILD = """
import importlib, sys
sys.path.insert(0, {bench!r})
folder, runs = sys.argv[1], int(sys.argv[2])
if folder:
    sys.path.insert(0, folder)
name = "budgetloop_at_rev" if folder else "budgetloop"
core = importlib.import_module(name)
try:  # the module that runs a batch: in _tools/ since the parts became folders
    dispatch = importlib.import_module(name + "._tools._dispatch")
except ModuleNotFoundError:
    dispatch = importlib.import_module(name + "._dispatch")
dispatch.OFFER_AFTER = 1e9
import before_after
make = before_after.prepare(core)
make()()
for _ in range(runs):
    make()()
"""


def counted(folder: str, runs: int) -> int:
    """The instructions valgrind counts for ``runs`` runs (and the interpreter's start)."""
    code = CHILD.format(bench=str(ROOT / "benchmarks"))
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", code, folder, str(runs)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stderr  # fmt: skip
    found = re.search(r"Collected : (\d+)", out)
    if found is None:
        sys.exit(f"instructions.py: valgrind said no count:\n{out[-2000:]}")
    return int(found.group(1))


def per_run(folder: str) -> float:
    return (counted(folder, 25) - counted(folder, 5)) / 20


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py: valgrind must be on PATH, got none (apt-get install valgrind).")
    rev = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", rev, "budgetloop"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        os.rename(Path(tmp) / "budgetloop", Path(tmp) / "budgetloop_at_rev")
        before, now = per_run(tmp), per_run("")
    turns = 51  # 50 turns of tool calls and the answer
    print("instructions per run of the cost-guard workload (50 turns of 2 calls), callgrind:")
    print(f"  {rev:>12}: {before / 1e6:7.2f} M ({before / turns / 1e3:5.1f} k a turn)")
    print(f"  {'now':>12}: {now / 1e6:7.2f} M ({now / turns / 1e3:5.1f} k a turn)")
    print(f"  now / {rev}: {now / before:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
