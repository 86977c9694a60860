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
        "budgetloop/_ledgers/_base.py",
        'LedgerError("Reservation.settle: the store did not record ${actual_usd} ({type(failure).__name__}: {failure}); it is kept pending and recorded by the ledger\'s next operation that reaches the store.")',
    ),
    (
        "budgetloop/_ledgers/_base.py",
        "LedgerError('{type(self).__name__}.{where}: {format_usd(self.pending_usd())} of settled spend is not recorded yet ({type(failure).__name__}: {failure}); the store must take it before the ledger can answer.')",
    ),
    (
        "budgetloop/_ledgers/_base.py",
        "TypeError('{type(self).__name__}: clock must return a finite number of seconds, got {now}.')",
    ),
    (
        "budgetloop/_ledgers/_base.py",
        "ValueError('Reservation.settle: reservation {self.id} is already settled.')",
    ),
    (
        "budgetloop/_ledgers/_memory.py",
        "TypeError('MemoryLedger: it cannot be pickled: {NOT_SENT}.')",
    ),
    (
        "budgetloop/_ledgers/_redis.py",
        "ImportError(\"RedisLedger needs redis-py: pip install 'budgetloop[redis]'.\")",
    ),
    (
        "budgetloop/_ledgers/_redis.py",
        "TypeError('RedisLedger: one made from a redis.Redis client cannot be pickled (its connections belong to this process); make it from a redis:// URL to send it to other processes.')",
    ),
    (
        "budgetloop/_ledgers/_sqlite.py",
        "LedgerError('SqliteLedger: the file {self.path} is busy: another connection held its lock for the whole timeout of {self._timeout} s ({type(exc).__name__}: {exc}); try again, or give a longer timeout.')",
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
        "budgetloop/_schema/_classes.py",
        'TypeError("{where}: the model\'s JSON schema could not be made ({exc}).")',
    ),
    (
        "budgetloop/_schema/_classes.py",
        "TypeError('{where}: cannot resolve the hint of field {name}: {exc}.')",
    ),
    (
        "budgetloop/_schema/_classes.py",
        "TypeError('{where}: its __init__ needs {param.name}, which is not a field a model can send (an InitVar, or an __init__ of its own); give it a default.')",
    ),
    (
        "budgetloop/_schema/_field.py",
        "TypeError(\"{where}: a default_factory that takes the validated data has none to take here (a tool's parameters are not a model's fields); give one that takes no arguments.\")",
    ),
    ("budgetloop/_schema/_hints.py", "TypeError('the annotation {hint} is nested too deeply')"),
    (
        "budgetloop/_schema/_hints.py",
        "TypeError('{where}: cannot read the parameters of {fn} ({exc}).')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: Literal lists the value {value} twice.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: Literal values must be str, int, float, bool, None or members of an Enum with such values.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: Literal[()] has no values, so no argument could fit it.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: pattern={text} applies to strings only.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: the Enum {cls.__name__} has no members to choose from.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: the Enum {cls.__name__} has values that are not str, int, float, bool or None, so no JSON value could name its members.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: type {hint_name(hint)} is not supported; use {SUPPORTED}.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: {attr}={value} applies to numbers only.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: {attr}={value} applies to strings, lists and dicts.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: {name} needs its item type ({name}[str], {name}[int]...), so the model knows what to send.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "TypeError('{where}: {name}[{hint_name(args[0])}] cannot be built: its items are not hashable; use list[{hint_name(args[0])}], or {name} of a hashable type.')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "ValueError('{where}: pattern {text} is not a regular expression ({exc}).')",
    ),
    (
        "budgetloop/_schema/_shapes.py",
        "ValueError('{where}: the value {value} cannot be sent: JSON has no NaN or infinity.')",
    ),
    (
        "budgetloop/_schema/_strict.py",
        "TypeError('{where}: a value of any type (Any) cannot be expressed in strict mode, which needs a type for every value; give it one, or use strict=False.')",
    ),
    (
        "budgetloop/_schema/_strict.py",
        "TypeError('{where}: strict mode cannot express a list of any values; say what it holds (list[str], list[int]...).')",
    ),
    (
        "budgetloop/_schema/_strict.py",
        "TypeError('{where}: strict mode cannot express an object with keys of its own choosing (dict[str, T]); it lists every key. Use a TypedDict or a dataclass.')",
    ),
    (
        "budgetloop/_schema/_strict.py",
        "TypeError('{where}: strict mode cannot express this: the keyword {key} is not accepted.')",
    ),
    (
        "budgetloop/_schema/_strict.py",
        "TypeError('{where}: strict mode cannot express this: {_WHY[key]}.')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError(\"{where}: parameter {pname} is positional-only, which a model cannot pass (it sends named arguments); remove the '/' from the signature.\")",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('tool: expected a function, got a classmethod object; decorate the method as its class reaches it: tool(TheClass.method).')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('tool: expected a function, got {type(fn).__name__}.')",
    ),
    ("budgetloop/_schema/_tool.py", "TypeError('{where}: cannot resolve type hints: {exc}.')"),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('{where}: parameter {pname} has no type hint; add one ({SUPPORTED}).')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('{where}: parameter {pname} is **{pname}, which a model cannot pass (it sends only the arguments the schema names); name each parameter, or take a dict: {pname}: dict[str, ...].')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('{where}: parameter {pname} is *{pname}, which a model cannot pass (it sends named arguments); take a list instead: {pname}: list[...].')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "TypeError('{where}: {exc} ({default} does not fit the hint {hint_name(hint)}).')",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "ValueError(\"tool {self.name}: a tool name is 1 to 64 letters, digits, '_' or '-'; pass name=... to choose one.\")",
    ),
    (
        "budgetloop/_schema/_tool.py",
        "ValueError(\"{where}: default {default} {what} not a finite number; a default is shown to the model as JSON, which has no NaN or infinity (use None for 'no value').\")",
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
