"""The tests are grouped by subject: tests/core (the standard-library core, run on every
Python the package claims), tests/adapters (SDKs, tokenizers, OpenTelemetry, other
frameworks), tests/widgets (the notebook views and the browser). No test file sits outside
them, so tasks.py's one line ``tests/core`` is the core's whole suite."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names) | {"budgetloop", "tests", "pytest", "hypothesis"}
STDLIB |= {"jsonschema", "redis", "_pytest"}  # installed in the other Pythons' venvs too


def test_every_test_file_is_in_a_subject_folder() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    assert {p.parent.name for p in TESTS.rglob("test_*.py")} == {"core", "adapters", "widgets"}


def test_the_core_tests_import_only_what_every_python_venv_has() -> None:
    for path in sorted((TESTS / "core").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # top-level imports: an optional package is imported lazily
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in STDLIB, f"{path.name} imports {name}"
