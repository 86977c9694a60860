"""Where load_trace's time goes, for the working tree's core and one at an earlier revision.

    python benchmarks/profile_load.py REV      # e.g. 13402bb, the core before this round

For a 100,000-step JSON Lines file (bench.py's), in a fresh process per core, CPU seconds
(``time.process_time``): JSON decoding alone with the garbage collector off, load_trace with
the collector off, one full collection after that, and load_trace as the core ships it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import bench
from before_after import ROOT, core_at

PROFILE = """
import gc, io, json, sys, time
from budgetloop import load_trace
path = sys.argv[1]
with open(path, "rb") as fh:
    raw = fh.read()
gc.disable()
t = time.process_time(); out = [json.loads(line.decode()) for line in io.BytesIO(raw)]
json_s = time.process_time() - t
del out
t = time.process_time(); trace = load_trace(path); off = time.process_time() - t
t = time.process_time(); gc.collect(); collect = time.process_time() - t
del trace
gc.enable()
t = time.process_time(); trace = load_trace(path); shipped = time.process_time() - t
print(f"{json_s:.2f} {off:.2f} {collect:.2f} {shipped:.2f}")
"""


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rev = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        core_at(rev, folder)  # budgetloop_at_rev/: put back under its own name for the child
        (folder / "rev").mkdir()
        (folder / "budgetloop_at_rev").rename(folder / "rev" / "budgetloop")
        path = folder / "trace.jsonl"
        bench.journal_file(str(path), 100_000)
        print("CPU s: json (collector off), load_trace (collector off), full collection, shipped")
        for name, where in ((rev, folder / "rev"), ("now", ROOT)):
            out = subprocess.run(
                [sys.executable, "-c", PROFILE, str(path)],
                capture_output=True, text=True, check=True, cwd=folder,
                env={**os.environ, "PYTHONPATH": str(where)},
            ).stdout.split()  # fmt: skip
            print(f"  {name:>8}: " + "  ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
