"""Every message a user reads when budgetloop refuses something says it one way:
``where: name must be <expected>, got <what arrived>.`` (``where`` the entry point or class the
user called, ``name`` the option, field or path; a sentence may follow). A reader handed a path
(``steps[3].status``) may start with it, its caller adding ``where``; a message that only adds
``where`` to another (``f"{where}: {exc}"``) passes that one on. Messages the model reads (tool
errors, its arguments checked) are its own contract (README) and are marked
``# the model reads this``.

The test reads every ``raise`` in ``budgetloop/`` and ``budgetloop_widgets/`` whose message is
written there (a string, an f-string, or both joined with ``+``) and lists each one outside the
grammar by file and line.
``NOT_YET`` holds the messages written before the grammar that are still to be rewritten: it
only shrinks (a new message outside the grammar fails, and so does an entry no longer there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "budgetloop", ROOT / "budgetloop_widgets")  # the core, and the views
MODEL_READS = "# the model reads this"
GRAMMAR = re.compile(
    r"(?s)^(?:[^\s:{][^:]*?: |\{[^}]+\}: |\{[^}]+\} )?"  # where: (or a path a caller prefixes)
    r"\S.*? must be \S.*?, got \S.*?\.(?: \S.*)?$"  # name must be expected, got arrived.
)
# Written before the grammar: each goes when its module is rewritten (file, message). The list only
# shrinks: a message added outside the grammar fails, and so does an entry that is gone.
NOT_YET: set[tuple[str, str]] = set()  # every message is in the grammar now

PASSED_ON = re.compile(r"^(?:[^\s:{][^:]*?: |\{[^}]+\}:(?:\{[^}]+\}:)? )\{(?P<name>\w+)\}\.?$")


def template(node: ast.expr) -> str | None:
    """The message as written, each value put in as ``{expression}``; None when it is not
    written at the raise (a variable, a call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        return None if left is None or right is None else left + right
    return None


def handler_names(tree: ast.AST) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}


def offenders(source: str, file: str) -> list[str]:
    tree = ast.parse(source)
    lines = source.splitlines()
    caught = handler_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
            continue
        text = template(node.exc.args[0])
        if text is None:
            continue
        above = lines[node.lineno - 2].strip()  # a comment line just above, or the raise's own
        near = [above if above.startswith("#") else ""]
        near += lines[node.lineno - 1 : node.exc.args[0].end_lineno or node.lineno]
        if any(MODEL_READS in line for line in near):
            continue
        passed = PASSED_ON.match(text)
        if GRAMMAR.match(text) or (passed and passed["name"] in caught):
            continue
        found.append(f"{file}:{node.lineno}: {ast.unparse(node.exc.func)}({text!r})")
    return found


def test_the_check_reads_messages_as_they_are_written() -> None:
    source = """
def f(where, value, exc):
    raise TypeError(f"{where}: budget must be a Budget, got {type(value).__name__}.")
    raise ValueError("run: " + f"max_steps must be an int >= 0, got {value!r}. Pass 3.")
    raise ValueError(f"{path} must be a list, got {kind(value)}.")
    try:
        pass
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    raise LookupError("the recorded run has no result")  # the model reads this
    raise ValueError(f"{where}: expected a list, got {value!r}.")
    raise RuntimeError("something went wrong")
    raise ValueError(message)
"""
    assert offenders(source, "x.py") == [
        "x.py:11: ValueError('{where}: expected a list, got {value}.')",
        "x.py:12: RuntimeError('something went wrong')",
    ]


def test_every_message_a_user_reads_is_in_the_one_grammar() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            found += offenders(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    written = {(f.split(":", 2)[0], f.split(":", 2)[2].strip()) for f in found}
    new = [f for f in found if (f.split(":", 2)[0], f.split(":", 2)[2].strip()) not in NOT_YET]
    assert new == [], f"{len(new)} messages outside the grammar:\n" + "\n".join(new)
    gone = sorted(NOT_YET - written)
    assert gone == [], "rewritten or removed: take them off NOT_YET:\n" + "\n".join(map(str, gone))
