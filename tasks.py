"""Two commands for a fresh clone with only python3 (see the README's Quick start).

    python3 tasks.py demo    # set up, run the offline example, open the notebooks in JupyterLab
    python3 tasks.py check   # set up, run every test (notebooks and browser included) and lint

Both create ``.venv`` on first use and install the project into it, editable, with its extras.
"""

from __future__ import annotations

import os
import shutil
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
    setup("notebooks,mcp")  # mcp: notebooks/mcp_tools.ipynb serves and connects to an MCP server
    sh(PY, "examples/offline.py")
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    sh(PY, "-m", "jupyterlab", *as_root, "notebooks/")


# pytest as check runs it: quiet, and at the end every skipped test with its reason (-rs), so a
# missing chromium or redis-server is said where it is read, not only counted.
PYTEST = ["-m", "pytest", "-q", "-rs"]

# The core (standard library only) is tested on every other Python it claims, where one is here.
OTHER_PYTHONS = ("python3.10", "python3.12", "python3.13")
CORE_TESTS = ["tests/core"]  # the standard-library core's tests: tests/core, by subject


def find_python(name: str) -> str | None:
    """An interpreter called ``name`` that runs: on PATH, or installed by pyenv."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    version = name.removeprefix("python")
    candidates = [
        shutil.which(name),
        *sorted(map(str, pyenv.glob(f"versions/{version}.*/bin/{name}"))),
    ]
    for candidate in candidates:
        if (
            candidate
            and subprocess.call([candidate, "-c", "pass"], stderr=subprocess.DEVNULL) == 0
        ):
            return candidate
    return None


def check_other_pythons() -> None:
    for name in OTHER_PYTHONS:
        python = find_python(name)
        if python is None:
            print(f"note: {name} not found; the core is not tested on it here", flush=True)
            continue
        venv = ROOT / f".venv-{name}"
        bin_ = venv / ("Scripts" if os.name == "nt" else "bin")
        if not (bin_ / "python").exists():
            sh(python, "-m", "venv", venv)
        sh(bin_ / "python", "-m", "pip", "install", "--quiet", "-e", ".",
           "pytest", "pytest-timeout", "hypothesis", "jsonschema", "redis>=5",
           "regress>=2024.11")  # fmt: skip
        sh(bin_ / "python", *PYTEST, *CORE_TESTS)


def check() -> None:
    setup("dev")
    sh(BIN / "ruff", "check", ".")
    sh(BIN / "ruff", "format", "--check", ".")
    sh(BIN / "mypy")
    sh(PY, "benchmarks/bench.py", "--quick")  # a smoke run: fails only if a workload breaks
    check_other_pythons()
    sh(PY, *PYTEST, "--nbval-lax", "--nbval-current-env", "tests", "notebooks")


if __name__ == "__main__":
    commands = {"demo": demo, "check": check}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(commands)}}}")
    commands[sys.argv[1]]()
