"""Rewrite ``trace.json`` and execute the notebooks in place, storing their outputs for nbval.

python notebooks/execute.py

Run it after a change to the core moves any number the notebooks print; review the diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
NOTEBOOKS = (
    "stepping.ipynb",
    "inspect_trace.ipynb",
    "choosing_a_budget.ipynb",
    "many_runs.ipynb",
    "cached_and_final.ipynb",
    "debugging.ipynb",
    "other_frameworks.ipynb",
    "approvals.ipynb",
    "mcp_tools.ipynb",
    "streaming.ipynb",
)


def quiet(nb: nbformat.NotebookNode) -> None:
    """Drop what changes on every run and is not output: timestamps and saved widget state
    (the widgets are live in a kernel; their text outputs remain)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def main() -> None:
    subprocess.run([sys.executable, str(HERE / "make_trace.py")], check=True)
    for name in NOTEBOOKS:
        path = HERE / name
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
        )
        client.execute()
        quiet(nb)
        nbformat.write(nb, path)
        print(f"executed {name}")


if __name__ == "__main__":
    main()
