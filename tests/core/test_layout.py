"""The layout of the code and of the tests.

The package: no module imports, directly or through others, a module that imports it back
(imports inside functions count, relative ones resolved; those under ``if TYPE_CHECKING:`` never
run and are left out), and the core (``budgetloop``) never imports ``budgetloop_widgets``: the
widgets build on the core, the core reaches their viewer only through the entry point they
register. The families are folders. No module is over 600 lines, no class over 400.

The tests are grouped by subject: tests/core (the standard-library core, run on every
Python the package claims), tests/adapters (SDKs, tokenizers, OpenTelemetry, other
frameworks), tests/widgets (the notebook views and the browser). No test file sits outside
them, so tasks.py's one line ``tests/core`` is the core's whole suite."""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
PACKAGES = ("budgetloop", "budgetloop_widgets")
STDLIB = set(sys.stdlib_module_names) | {"budgetloop", "tests", "pytest", "hypothesis"}
# installed in the other Pythons' venvs too
STDLIB |= {"jsonschema", "redis", "regress", "_pytest"}


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


def module_sources(root: Path = ROOT) -> dict[str, tuple[str, bool, str]]:
    """Every module of the packages: its dotted name -> (source, is a package, file)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (
                path.read_text(encoding="utf-8"),
                is_package,
                str(path.relative_to(root)),
            )
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imports_of(sources: dict[str, tuple[str, bool, str]]) -> dict[str, dict[str, int]]:
    """Each module's imports of the packages' modules (``from a import b`` names ``a.b`` when
    that is a module; importing ``a.b.c`` runs ``a`` and ``a.b`` first, so they count too,
    unless they hold the importer), each with the line of the first one."""
    graph: dict[str, dict[str, int]] = {}
    for name, (source, is_package, _) in sources.items():
        package = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(source)
        skipped = _type_checking_only(tree)
        found: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in sources else module
                    for a in node.names
                ]
            for target in targets:
                while target and target not in sources:  # an attribute, or a third party
                    target = target.rpartition(".")[0]
                while target:
                    if target != name and not name.startswith(target + "."):
                        found.setdefault(target, node.lineno)
                    target = target.rpartition(".")[0]
        graph[name] = found
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One loop of imports through each group of modules that import each other."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in order:
            visit(v)
    loops = []
    for group in groups:  # a shortest way back to the first module, through the group
        start, inside = group[0], set(group)
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            for w in sorted(graph[v]):
                if w == start:
                    loops.append([*paths[v], start])
                    queue = []
                    break
                if w in inside and w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
    return loops


def describe(loop: list[str], graph: dict[str, dict[str, int]], sources: dict[str, Any]) -> str:
    return (
        " -> ".join(f"{a} ({sources[a][2]}:{graph[a][b]})" for a, b in itertools.pairwise(loop))
        + f" -> {loop[-1]}"
    )


def test_the_cycle_check_sees_imports_inside_functions_and_relative_ones() -> None:
    sources = {
        "pkg": ("", True, "pkg/__init__.py"),
        "pkg.data": ("def load():\n    from .read import read\n", False, "pkg/data.py"),
        "pkg.read": ("from . import data\n", False, "pkg/read.py"),
        "pkg.sub": ("", True, "pkg/sub/__init__.py"),
        "pkg.sub.a": ("from ..data import load\n", False, "pkg/sub/a.py"),
        "pkg.view": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.a import x\n",
            False,
            "pkg/view.py",
        ),
    }
    graph = imports_of(sources)
    assert graph["pkg.sub.a"] == {"pkg.data": 1}
    assert graph["pkg.view"] == {}  # under TYPE_CHECKING: never run
    [loop] = cycles(graph)
    assert describe(loop, graph, sources) == (
        "pkg.data (pkg/data.py:2) -> pkg.read (pkg/read.py:1) -> pkg.data"
    )


def test_no_module_imports_itself_back_through_others() -> None:
    sources = module_sources()
    graph = imports_of(sources)
    assert {"budgetloop._trace._result", "budgetloop._schema._tool"} <= graph.keys()
    found = [describe(loop, graph, sources) for loop in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


def widget_imports(sources: dict[str, tuple[str, bool, str]]) -> list[str]:
    """Where the core imports the widgets or names their modules, any import included."""
    found = []
    for name, (source, _, file) in sources.items():
        if name.split(".")[0] != "budgetloop":
            continue
        for node in ast.walk(ast.parse(source)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value]  # importlib.import_module("budgetloop_widgets...")
            found += [
                f"{file}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] == "budgetloop_widgets"
            ]
    return found


def test_the_core_never_imports_the_widgets() -> None:
    sources = module_sources()
    source = "def view():\n    from budgetloop_widgets._page import result_html\n"
    assert widget_imports({"budgetloop.x": (source, False, "budgetloop/x.py")}) == [
        "budgetloop/x.py:2 budgetloop_widgets._page"
    ]
    assert widget_imports(sources) == []


def test_each_family_is_a_folder() -> None:
    package = ROOT / "budgetloop"
    folders = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert {"_importers", "_ledgers", "_schema", "_trace", "adapters"} <= folders
    schema = {"_tool", "_check", "_arg_error", "_fit", "_shapes", "_classes", "_hints",
              "_docstring", "_strict"}  # fmt: skip
    schema |= {"_field", "_written"}
    trace = {"_result", "_read", "_read_fast", "_journal", "_files", "_fork", "_html"}
    assert {p.stem for p in (package / "_schema").glob("_*.py")} >= schema
    assert {p.stem for p in (package / "_trace").glob("_*.py")} >= trace
    beside = {p.stem for p in package.glob("*.py")}  # none of them back beside the loop
    assert beside & (schema | trace | {"_schema", "_trace", "_validate_trace"}) == set()


def ceilings_named(sources: dict[str, tuple[str, bool, str]]) -> dict[str, set[str]]:
    """Each module that names a ceiling in its code (its ``Budget`` field, its ``Stop`` member,
    or the field as a keyword or a string; docstrings and comments left out), with those named."""
    from budgetloop._rules._ceilings import CEILINGS

    fields = {c.name for c in CEILINGS}
    members = {name.upper() for name in fields}
    found: dict[str, set[str]] = {}
    for name, (source, _, _) in sources.items():
        tree = ast.parse(source)
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            said = None
            if isinstance(node, ast.Attribute) and node.attr in fields | members:
                said = node.attr.lower()
            elif isinstance(node, ast.keyword) and node.arg in fields:
                said = node.arg
            elif isinstance(node, ast.Constant) and node.value in fields:
                said = None if id(node) in docstrings else str(node.value)
            if said is not None:
                found.setdefault(name, set()).add(said)
    return found


def test_a_ceiling_is_one_class_and_names_nothing_else() -> None:
    # _ceilings.py's word: a new ceiling is a Stop member, a Budget field and its class. Nothing
    # else names one but for what is more than a check: the deadline the drivers keep
    # (max_seconds), money (max_cost_usd) and the peers' limits an importer maps to ours
    sources = {
        name: entry
        for name, entry in module_sources().items()
        if name.split(".")[0] == "budgetloop"
        and name not in ("budgetloop._rules._ceilings", "budgetloop._engine._types")
    }
    assert ceilings_named(sources) == {
        "budgetloop._engine._commit": {"max_seconds"},  # a call abandoned at the deadline
        "budgetloop._engine._session": {"max_seconds"},
        "budgetloop._engine._async": {"max_seconds"},  # a streamed reply cut at the deadline
        "budgetloop._engine._stream": {"max_seconds"},
        "budgetloop._engine._setup": {"max_seconds"},
        "budgetloop._engine._reading": {"max_cost_usd"},  # it needs a price
        "budgetloop._rules._budget": {"max_cost_usd"},
        "budgetloop._features._replay": {"max_cost_usd"},
        "budgetloop._features._report": {"max_cost_usd", "max_steps"},  # what it suggests
        "budgetloop._importers._build": {"max_steps"},
        "budgetloop._importers._ends": {"max_steps", "max_tool_calls"},
    }
    hypothetical = "class MaxBatch(Ceiling):\n    name = 'max_batch'\n"
    assert ceilings_named({"budgetloop.x": ("x = now.budget.max_steps\n", False, "")}) == {
        "budgetloop.x": {"max_steps"}
    }
    assert ceilings_named({"budgetloop.x": (hypothetical, False, "")}) == {}


def sizes_over(sources: dict[str, tuple[str, bool, str]]) -> list[str]:
    """Each module over 600 lines and each class over 400, with its length."""
    found = []
    for source, _, file in sources.values():
        lines = len(source.splitlines())
        if lines > 600:
            found.append(f"{file}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > 400:
                    found.append(f"{file}: class {node.name}, {length} lines")
    return found


def test_no_module_is_over_600_lines_nor_a_class_over_400() -> None:
    big = "class Big:\n" + "    x = 1\n" * 400
    assert sizes_over({"pkg.a": (big, False, "pkg/a.py")}) == ["pkg/a.py: class Big, 401 lines"]
    assert sizes_over({"pkg.a": ("x = 1\n" * 601, False, "pkg/a.py")}) == ["pkg/a.py: 601 lines"]
    assert sizes_over({"pkg.a": ("x = 1\n" * 600, False, "pkg/a.py")}) == []
    sources = module_sources()  # every module of the core and of the widgets, none left out
    assert {"budgetloop._trace._read", "budgetloop_widgets._panel"} <= sources.keys()
    assert sizes_over(sources) == []
