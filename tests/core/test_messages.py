"""Every message a user reads when budgetloop refuses something says it one way:
``where: name must be <expected>, got <what arrived>.`` (``where`` the entry point or class the
user called, ``name`` the option, field or path; a sentence may follow). A reader handed a path
(``steps[3].status``) may start with it, its caller adding ``where``; a message that only adds
``where`` to another (``f"{where}: {exc}"``) passes that one on. Messages the model reads (tool
errors, its arguments checked) are its own contract (README) and are marked
``# the model reads this``.

The test reads every ``raise`` in ``budgetloop/`` whose message is written there (a string, an
f-string, or both joined with ``+``) and lists each one outside the grammar by file and line.
``NOT_YET`` holds the messages written before the grammar that are still to be rewritten: it
only shrinks (a new message outside the grammar fails, and so does an entry no longer there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "budgetloop"
MODEL_READS = "# the model reads this"
GRAMMAR = re.compile(
    r"(?s)^(?:[^\s:{][^:]*?: |\{[^}]+\}: |\{[^}]+\} )?"  # where: (or a path a caller prefixes)
    r"\S.*? must be \S.*?, got \S.*?\.(?: \S.*)?$"  # name must be expected, got arrived.
)
# Written before the grammar: each goes when its module is rewritten (file, message). The list only
# shrinks: a message added outside the grammar fails, and so does an entry that is gone.
NOT_YET = {
    (
        "budgetloop/_importers/__init__.py",
        "ValueError('{_READERS[fmt][2]} is one JSON document, not JSON Lines.')",
    ),
    ("budgetloop/_importers/__init__.py", "ValueError('{where}: nested too deeply to read.')"),
    ("budgetloop/_importers/__init__.py", "ValueError('{where}: {named or NOT_A_TRACE}')"),
    (
        "budgetloop/_importers/__init__.py",
        "ValueError('{where}:{number}: JSON nested too deeply to read.')",
    ),
    (
        "budgetloop/_importers/__init__.py",
        "ValueError('{where}:{number}: not a JSON line: {exc}.')",
    ),
    (
        "budgetloop/_importers/_agents.py",
        "ValueError(\"{at(path, 'input_tokens')}: {inputs_n} input tokens is fewer than the {cached_n + written_n} read from and written to the cache.\")",
    ),
    (
        "budgetloop/_importers/_agents.py",
        "ValueError(\"{at(path, 'output_tokens')}: {outputs_n} output tokens is fewer than the {reasoning_n} spent reasoning.\")",
    ),
    ("budgetloop/_importers/_agents.py", "ValueError(\"{at(where, 'started_at')}: missing.\")"),
    (
        "budgetloop/_importers/_agents.py",
        "ValueError('holds openai-agents spans but no run: none is a generation, response or agent span; the span types are {shown}.')",
    ),
    (
        "budgetloop/_importers/_anthropic.py",
        "ValueError(\"{at(at(where, i), 'type')}: expected 'text', got {part.get('type')}.\")",
    ),
    (
        "budgetloop/_importers/_anthropic.py",
        "ValueError(\"{at(at(where, i), 'type')}: expected one of {', '.join(BLOCKS)}, got {kind}.\")",
    ),
    (
        "budgetloop/_importers/_anthropic.py",
        "ValueError(\"{at(mpath, 'role')}: expected user or assistant, got {role}.\")",
    ),
    (
        "budgetloop/_importers/_chat.py",
        "ValueError(\"{at(where, 'type')}: expected one of {', '.join((*TEXT_PARTS, *LEFT_OUT))}, got {kind}{hint}.\")",
    ),
    (
        "budgetloop/_importers/_fields.py",
        "ValueError('{_named(path)}expected a list, got {type_name(value)}.')",
    ),
    (
        "budgetloop/_importers/_fields.py",
        "ValueError('{_named(path)}expected an object, got {type_name(value)}.')",
    ),
    (
        "budgetloop/_importers/_fields.py",
        "ValueError('{path}: its JSON is nested more than {MAX_DEPTH} levels deep.')",
    ),
    (
        "budgetloop/_importers/_openinference.py",
        "ValueError(\"{span.where(keys['input'])}: {n['input']} input tokens is fewer than the {n['read'] + n['write']} read from and written to the cache.\")",
    ),
    (
        "budgetloop/_importers/_openinference.py",
        "ValueError('{where}: expected a string, got {type(value).__name__}.')",
    ),
    (
        "budgetloop/_importers/_otlp.py",
        "ValueError(\"{span.where(names['input'])}: {counts['input']} input tokens is fewer than the {counts['read'] + counts['write']} read from and written to the cache.\")",
    ),
    (
        "budgetloop/_importers/_otlp.py",
        "ValueError(\"{span.where(names['output'])}: {counts['output']} output tokens is fewer than the {reasoning} spent reasoning.\")",
    ),
    (
        "budgetloop/_importers/_otlp.py",
        "ValueError('{path}: arrays nested more than {MAX_VALUE_DEPTH} deep.')",
    ),
    (
        "budgetloop/_importers/_pydantic_ai.py",
        "ValueError(\"{at(at(where, i), 'part_kind')}: expected one of {expected}, got {kind}.\")",
    ),
    (
        "budgetloop/_importers/_pydantic_ai.py",
        "ValueError(\"{at(path, 'input_tokens')}: {numbers['input_tokens']} input tokens is fewer than the {numbers['cache_read_tokens'] + numbers['cache_write_tokens']} read from and written to the cache.\")",
    ),
    ("budgetloop/_importers/_responses.py", "ValueError(\"{at(ipath, 'role')}: missing.\")"),
    (
        "budgetloop/_importers/_responses.py",
        "ValueError(\"{at(path, 'type')}: expected one of {', '.join(TYPES)}, got {kind}.\")",
    ),
    (
        "budgetloop/_replay.py",
        "LookupError('{self.name}: the recorded run has no result for this call (it was not run there), so a replay cannot say what the tool would have returned')",
    ),
    (
        "budgetloop/_replay.py",
        "ValueError('{where}: expected a tool schema with a name and parameters.properties, got {json.dumps(schema, default=repr)[:80]}.')",
    ),
    (
        "budgetloop/_trace/_files.py",
        "FileExistsError('{said} {text}: a file keeps appearing there; not overwritten.')",
    ),
    (
        "budgetloop/_trace/_files.py",
        "ValueError('{text}: {_what(mode)}, not a regular file; nothing was read.')",
    ),
    (
        "budgetloop/_trace/_files.py",
        "ValueError('{text}: {max(size, len(raw))} bytes, more than the 1 GiB ({MAX_TRACE_BYTES} bytes) a trace file may hold; it was not loaded.')",
    ),
    (
        "budgetloop/_trace/_fork.py",
        'ValueError("{where}: messages must hold the {added} messages that steps {at} to {len(steps) - 1} appended, got {len(messages)}; the messages are not this run\'s.")',
    ),
    (
        "budgetloop/_trace/_journal.py",
        "ValueError('load_trace: {os.fspath(path)} must hold one run, got {what}; load_traces(path) returns every run a file holds, as a list.')",
    ),
    (
        "budgetloop/_trace/_read.py",
        "ValueError(\"{_at(path, 'approval')}: expected 'denied' exactly when status is 'denied', got {approval} with status {status}.\")",
    ),
    (
        "budgetloop/_trace/_read.py",
        "ValueError(\"{_at(path, 'approval')}: expected null or one of {', '.join(APPROVALS)}, got {approval}.\")",
    ),
    (
        "budgetloop/_trace/_read.py",
        "ValueError('{path} must have string keys, got a key that is {type_name(key)}.')",
    ),
    (
        "budgetloop/_trace/_result.py",
        "ValueError(\"CallRecord.approval: expected 'denied' exactly when status is 'denied', got approval {self.approval} with status {self.status}.\")",
    ),
    (
        "budgetloop/_trace/_result.py",
        "ValueError(\"CallRecord.approval: expected None or one of {', '.join(APPROVALS)}, got {self.approval}.\")",
    ),
}

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
    for path in sorted(PACKAGE.rglob("*.py")):
        found += offenders(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    written = {(f.split(":", 2)[0], f.split(":", 2)[2].strip()) for f in found}
    new = [f for f in found if (f.split(":", 2)[0], f.split(":", 2)[2].strip()) not in NOT_YET]
    assert new == [], f"{len(new)} messages outside the grammar:\n" + "\n".join(new)
    gone = sorted(NOT_YET - written)
    assert gone == [], "rewritten or removed: take them off NOT_YET:\n" + "\n".join(map(str, gone))
