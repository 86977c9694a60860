"""tasks.py, the one command: what its test run says at the end."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_check_says_which_tests_were_skipped_and_why(tmp_path: Path) -> None:
    # issue 19, item 10: without chromium the run ended "957 passed, 6 skipped", no reason shown
    sys.path.insert(0, str(ROOT))
    try:
        import tasks
    finally:
        sys.path.remove(str(ROOT))
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "def test_needs_a_browser():\n"
        "    pytest.skip('NO BROWSER TEST: /usr/bin/chromium is missing')\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, *tasks.PYTEST, "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    tail = out.stdout.strip().splitlines()
    assert tail[-1].startswith("1 passed, 1 skipped")
    assert tail[-2].startswith("SKIPPED [1] test_one.py:")
    assert tail[-2].endswith("NO BROWSER TEST: /usr/bin/chromium is missing")


def demo_extras() -> list[str]:
    """The extras ``tasks.py demo`` installs: the argument of the ``setup(...)`` it calls."""
    tree = ast.parse((ROOT / "tasks.py").read_text(encoding="utf-8"))
    demo = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "demo")
    calls = [
        n.args[0].value
        for n in ast.walk(demo)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setup"
        if isinstance(n.args[0], ast.Constant)
    ]
    assert len(calls) == 1, "demo sets up one environment"
    return str(calls[0]).split(",")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parts(requirement: str) -> tuple[str, list[str], str]:
    """A requirement's name, the extras it asks for, and its environment marker."""
    spec, _, marker = requirement.partition(";")
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
    assert found, requirement
    asked = [e.strip() for e in (found.group(2) or "").split(",") if e.strip()]
    return found.group(1), asked, marker.strip()


def notebook_imports(path: Path) -> set[str]:
    """The top-level modules a notebook's code cells import (its magics left out)."""
    found = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        code = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_demo_installs_every_package_the_notebooks_it_opens_import() -> None:
    # issue 34, item 22: demo installed the notebooks extra alone, and mcp_tools.ipynb imports mcp
    tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with tomllib (3.11+)")
    from importlib import metadata

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    wanted = [r for extra in demo_extras() for r in extras[extra]]
    installed: set[str] = set()
    while wanted:  # the extras' requirements, and theirs, as installed here
        requirement = wanted.pop()
        name, asked, marker = parts(requirement)
        if normal(name) == "budgetloop":
            wanted += [r for extra in asked for r in extras[extra]]
            continue
        if "extra" in marker or normal(name) in installed:
            continue
        try:
            wanted += metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            if marker:
                continue  # for another platform or Python
            pytest.skip(f"{name} is not installed here: demo's packages are read from the venv")
        installed.add(normal(name))
    provided = {
        module
        for module, dists in metadata.packages_distributions().items()
        if any(normal(d) in installed for d in dists)
    }
    known = set(sys.stdlib_module_names) | {"budgetloop", "budgetloop_widgets"} | provided
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 9
    missing = [(p.name, m) for p in notebooks for m in sorted(notebook_imports(p) - known)]
    assert missing == [], f"demo installs {demo_extras()}, which leave these imports unmet"
