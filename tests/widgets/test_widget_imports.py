"""budgetloop_widgets is built on the public API: it imports only names in the ``__all__`` of
``budgetloop`` and of its public modules ``budgetloop.breakpoints`` and ``budgetloop.display``."""

from __future__ import annotations

import ast
from pathlib import Path

import budgetloop
import budgetloop.breakpoints
import budgetloop.display

# The public modules and the names each exports.
PUBLIC = {
    "budgetloop": budgetloop.__all__,
    "budgetloop.breakpoints": budgetloop.breakpoints.__all__,
    "budgetloop.display": budgetloop.display.__all__,
    "budgetloop.events": budgetloop.events.__all__,
}

PACKAGE = Path(__file__).resolve().parents[2] / "budgetloop_widgets"


def core_imports(source: str) -> list[str]:
    """Every core name or module the source imports, as ``module:name``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("budgetloop"):
            found += [f"{node.module}:{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [f"{a.name}:" for a in node.names if a.name.startswith("budgetloop")]
    return found


def test_the_check_sees_private_imports() -> None:
    assert core_imports("from budgetloop._trace import printable\nimport budgetloop._budget") == [
        "budgetloop._trace:printable",
        "budgetloop._budget:",
    ]


def test_the_widgets_import_only_public_names() -> None:
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) >= 8
    seen = set()
    for path in files:
        for item in core_imports(path.read_text(encoding="utf-8")):
            module, name = item.split(":")
            if module.startswith("budgetloop_widgets"):
                continue
            assert module in PUBLIC, f"{path.name} imports from {module}"
            assert name in PUBLIC[module], f"{path.name} imports {name}, not in {module}.__all__"
            seen.add(name)
    assert {"Result", "Session", "Step", "as_result", "format_usd", "NextTurn"} <= seen
