"""An optional extra's package hidden from a fresh interpreter: what budgetloop then says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def printed_without(module: str, code: str) -> str:
    """What ``code`` prints in a fresh interpreter (run from the repository's root) in which
    ``module`` cannot be imported."""
    program = f"import sys; sys.modules[{module!r}] = None\n{code}"
    out = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()
