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
        "budgetloop/_approval.py",
        "TypeError('approve returned {type(value).__name__}; expected {_RETURNS}')",
    ),
    (
        "budgetloop/_budget.py",
        "ValueError('max_turns_for: a turn that costs nothing fits any number of times.')",
    ),
    (
        "budgetloop/_held.py",
        "RuntimeError('{where}: the run holds calls waiting for a decision: {names}; decide each with session.approve(call_id) or session.deny(call_id, reason) first.')",
    ),
    (
        "budgetloop/_redact.py",
        "TypeError('a Said has two forms: .real for the model, Redactor.text(said) for an output form')",
    ),
    (
        "budgetloop/_report.py",
        'ValueError("BudgetReport.budget: the {name} ceiling for p{_num(percentile)} is past a float\'s range, so no Budget can hold it.")',
    ),
    (
        "budgetloop/_report.py",
        "ValueError('BudgetReport.budget: fewer than {percentile}% of the {self.runs} runs answered, so no ceiling from these traces lets that many finish.')",
    ),
    (
        "budgetloop/_report.py",
        "ValueError('BudgetReport.budget: percentile {percentile} is not one of {list(self.percentiles)}.')",
    ),
    (
        "budgetloop/_report.py",
        "ValueError('BudgetReport.budget: the cost of {len(self.unknown_cost)} of the {self.runs} runs is unknown (their traces hold none), so no cost ceiling can be derived; replay them with a price= first.')",
    ),
    (
        "budgetloop/_report.py",
        "ValueError('budget_report: no *.json or *.jsonl traces in {str(path)}.')",
    ),
    ("budgetloop/_report.py", "ValueError('budget_report: no traces given.')"),
    ("budgetloop/_report.py", "ValueError('budget_report: percentiles must not be empty.')"),
    (
        "budgetloop/_report.py",
        "ValueError('budget_report: traces must include one that can be read, got {len(skipped)} that cannot ({listed}).')",
    ),
    (
        "budgetloop/_scripted.py",
        "IndexError('ScriptedModel: call {index + 1} but the script has {len(self.script)} entries; {self._past_end}.')",
    ),
    (
        "budgetloop/_scripted.py",
        "ValueError('ScriptedModel: repeat_last needs at least one entry to repeat.')",
    ),
    (
        "budgetloop/adapters/_anthropic.py",
        "TypeError('anthropic_count_tokens: expected an anthropic.Anthropic client (with messages.count_tokens), got {type(client).__name__}.')",
    ),
    (
        "budgetloop/adapters/_anthropic.py",
        "TypeError('anthropic_count_tokens: the loop counts tokens synchronously; pass an anthropic.Anthropic client, not an AsyncAnthropic one.')",
    ),
    (
        "budgetloop/adapters/_anthropic.py",
        'ValueError("anthropic_count_tokens: expected the response\'s input_tokens to be an int >= 0, got {tokens}.")',
    ),
    (
        "budgetloop/adapters/_model.py",
        "TypeError(\"{caller}: {', '.join(clash)} cannot be passed as extra parameters; the adapter sets them from its arguments and the loop's messages and tools.\")",
    ),
    ("budgetloop/adapters/_openai.py", "ValueError('openai_chat: the response has no choices.')"),
    (
        "budgetloop/adapters/_openai.py",
        "ValueError('openai_chat: the tool call to {call.name} has no id; OpenAI pairs each tool result with its call by id.')",
    ),
    (
        "budgetloop/adapters/_openai.py",
        "ValueError('openai_chat: tool call {call.id} is of type {call.type}; only function tool calls are supported.')",
    ),
    (
        "budgetloop/adapters/_responses.py",
        "ValueError('openai_responses: the response failed ({said}).')",
    ),
    (
        "budgetloop/adapters/_responses.py",
        "ValueError('openai_responses: the tool call to {call.name} has no id; the Responses API pairs each tool result with its call by call_id.')",
    ),
    (
        "budgetloop/adapters/_tokens.py",
        "ImportError(\"tiktoken_counter needs a tokenizer: pip install 'budgetloop[tokens]'.\")",
    ),
    (
        "budgetloop/adapters/_tokens.py",
        "TypeError('tiktoken_counter: expected a model name, an encoding name or an encoding with encode(), got {type(model_or_encoding).__name__}.')",
    ),
    (
        "budgetloop/adapters/_tokens.py",
        "ValueError(\"tiktoken_counter: no known encoding for model {model}; pass one of {', '.join(ENCODINGS)} instead.\")",
    ),
    (
        "budgetloop/breakpoints.py",
        "ValueError('on_step({n}): {are} taken already, so a run asked after its next step never pauses there; choose a larger number.')",
    ),
    (
        "budgetloop/mcp/__init__.py",
        "ImportError(\"budgetloop.mcp needs the MCP SDK: pip install 'budgetloop[mcp]' (the mcp package).\")",
    ),
    (
        "budgetloop/mcp/_connection.py",
        "RuntimeError('connect: the connection to {self.name} is open already, or was; call connect() again for a new one.')",
    ),
    (
        "budgetloop/mcp/_connection.py",
        "RuntimeError('connect: the tools of {self.name} are known once it is open; use them inside `with connect(...) as server:` (or `async with`).')",
    ),
    (
        "budgetloop/mcp/_connection.py",
        "ServerError('the MCP server {self.name} did not answer within {self.timeout} s')",
    ),
    ("budgetloop/mcp/_tools.py", "TypeError('$defs or required is not what JSON Schema says')"),
    (
        "budgetloop/mcp/_tools.py",
        "ValueError('connect: the tools of an MCP server must have distinct names once written as a model calls them, got {other.remote_name} and {t.remote_name} of {server}, both {t.name}.')",
    ),
    (
        "budgetloop/otel.py",
        "ImportError(\"budgetloop.otel needs OpenTelemetry: pip install 'budgetloop[otel]' (opentelemetry-api and opentelemetry-sdk).\")",
    ),
    (
        "budgetloop/prices.py",
        "ImportError(\"price_of: genai-prices is not installed; pip install 'budgetloop[prices]', or give the price yourself: Price(input_per_mtok, output_per_mtok).\")",
    ),
    (
        "budgetloop/prices.py",
        '_Unknown("price_of: no model {model}{within} in genai-prices\' catalog; the closest names: {_names(close)}.")',
    ),
    (
        "budgetloop/prices.py",
        '_Unknown("price_of: no provider {provider} in genai-prices\' catalog; the closest: {_names(close)}.")',
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
