"""Two commands for a fresh clone with only python3 (see the README's Quick start).

    python3 tasks.py demo    # set up, run the offline example, open the notebooks in JupyterLab
    python3 tasks.py check   # set up, run every test (notebooks and browser included) and lint

Both create ``.venv`` on first use and install the project into it, editable, with its extras.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def sh(*args: str | os.PathLike[str]) -> None:
    print("$", " ".join(str(a) for a in args), flush=True)
    code = subprocess.call([str(a) for a in args], cwd=ROOT)
    if code:
        sys.exit(code)


def setup(extras: str) -> None:
    stamp = VENV / f".installed-{extras}"
    if stamp.exists() and stamp.stat().st_mtime >= (ROOT / "pyproject.toml").stat().st_mtime:
        return
    if not PY.exists():
        sh(sys.executable, "-m", "venv", VENV)
        sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    sh(PY, "-m", "pip", "install", "--quiet", "-e", f".[{extras}]")
    stamp.touch()


def demo() -> None:
    setup("notebooks")
    sh(PY, "examples/offline.py")
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    sh(PY, "-m", "jupyterlab", *as_root, "notebooks/")


def check() -> None:
    setup("dev")
    sh(BIN / "ruff", "check", ".")
    sh(BIN / "ruff", "format", "--check", ".")
    sh(BIN / "mypy")
    sh(PY, "benchmarks/bench.py", "--quick")  # a smoke run: fails only if a workload breaks
    sh(PY, "-m", "pytest", "-q", "--nbval-lax", "--nbval-current-env", "tests", "notebooks")


if __name__ == "__main__":
    commands = {"demo": demo, "check": check}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(commands)}}}")
    commands[sys.argv[1]]()
