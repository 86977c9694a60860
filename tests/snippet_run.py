"""Runs one ```python snippet of a Markdown page, as a reader who pasted it would, in this fresh
interpreter: ``python tests/snippet_run.py`` reads ``{"page", "line", "code"}`` as JSON on stdin.

Tracebacks name the page and its own line numbers (the code is compiled as the page's file,
its first line at the line after the fence). A snippet of ``>>>`` lines is a doctest: each
output shown must be the output printed. A bare expression with a comment that is itself a
Python expression (``result.output   # Quote(isin='SE0000108656', ...)``) is a claim: the
value's repr must be the comment, word for word.

Exit 0: it ran. Exit 3: an import of the snippet's own found a package not installed here (the
message names it), which the test reports as a skip; any other failure exits 1 with the
traceback. An import of a name budgetloop lacks is a failure, never a skip.
"""

from __future__ import annotations

import ast
import doctest
import io
import json
import sys
import tokenize
import types
from typing import Any

MISSING = 3
OURS = {"budgetloop", "budgetloop_widgets"}


def missing_package(exc: BaseException) -> str | None:
    """The top-level name of a package not installed here that made ``exc``, else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            top = seen.name.split(".")[0]
            return None if top in OURS else top
        seen = seen.__cause__
    return None


def comments(code: str) -> dict[int, str]:
    """Each line's comment, by line number, without its ``#``."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string[1:].strip()
    return found


def is_expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def claim(value: Any, said: str, line: int, page: str) -> None:
    if repr(value) != said:
        raise AssertionError(f"{page}:{line}: the comment says {said}, the value is {value!r}")


def with_claims(tree: ast.Module, code: str) -> ast.Module:
    """``tree`` with each top-level bare expression commented with an expression checked."""
    said = comments(code)
    for i, node in enumerate(tree.body):
        text = said.get(node.end_lineno or node.lineno, "")
        if isinstance(node, ast.Expr) and text and is_expression(text):
            check = ast.Call(
                ast.Name("__claim__", ast.Load()),
                [node.value, ast.Constant(text), ast.Constant(node.end_lineno)],
                [],
            )
            tree.body[i] = ast.copy_location(ast.Expr(check), node)
    return ast.fix_missing_locations(tree)


def run_doctest(page: str, line: int, code: str) -> int:
    test = doctest.DocTestParser().get_doctest(code, {}, page, page, line)
    runner = doctest.DocTestRunner()
    runner.run(test)
    return 1 if runner.failures else 0


def main() -> int:
    snippet = json.load(sys.stdin)
    page, line, code = snippet["page"], snippet["line"], snippet["code"]
    if code.lstrip().startswith(">>>"):
        return run_doctest(page, line, code)
    source = "\n" * line + code  # the snippet's lines at the page's line numbers
    tree = ast.parse(source, page)
    imports = ast.Module([n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)], [])
    try:
        exec(compile(imports, page, "exec"), {})
    except ImportError as exc:
        name = missing_package(exc)
        if name is None:
            raise
        print(f"needs {name}, which is not installed here", file=sys.stderr)
        return MISSING
    main = types.ModuleType("__main__")  # the snippet's own, as a pasted script's would be
    main.__dict__["__claim__"] = lambda value, said, at: claim(value, said, at, page)
    sys.modules["__main__"] = main
    exec(compile(with_claims(tree, source), page, "exec"), main.__dict__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
