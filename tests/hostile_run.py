"""A scripted run whose every free-text field is hostile: markup, ANSI escapes and NUL bytes.

Imported by the tests, and copied next to the notebook the browser test serves, where the
kernel imports it too: it needs nothing but budgetloop. Tool names are the one field budgetloop
checks (``^[A-Za-z0-9_-]{1,64}$``), so they stay plain; the markup goes everywhere else.
"""

from __future__ import annotations

from typing import Any

from budgetloop import (
    Budget,
    Completion,
    Message,
    Result,
    ScriptedModel,
    Session,
    ToolCall,
    run,
    start,
    tool,
)

PAYLOADS = (
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "</style><style>body{display:none}</style>",
    "<svg onload=alert(1)>",
    "\x1b[31mred\x1b[0m",
    "nul\x00byte",
)
HOSTILE = " ".join(PAYLOADS)


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return f"echo: {text} {HOSTILE}"


@tool
def explode(why: str) -> str:
    """Fail, loudly.

    Args:
        why: the reason
    """
    raise RuntimeError(f"exploded: {why} {HOSTILE}")


def model_fails(_messages: list[Message], _tools: list[dict[str, Any]]) -> Completion:
    raise ValueError(f"the model broke: {HOSTILE}")


def script(*, answer: bool) -> list[Any]:
    """A turn whose text and calls carry the payloads; then an answer, or a model error."""
    first = Completion(
        text=f"thinking {HOSTILE}",
        tool_calls=(
            ToolCall("echo", {"text": HOSTILE}),
            ToolCall("explode", {"why": HOSTILE}),
            ToolCall("echo", {HOSTILE: 1}),  # an argument name that is markup
            ToolCall("echo", f'{{"text": "{PAYLOADS[0]}"'),  # raw arguments, not JSON
        ),
    )
    return [first, f"the answer {HOSTILE}" if answer else model_fails]


PROMPT = [Message("system", f"system {HOSTILE}"), Message("user", f"user {HOSTILE}")]


def make_session(*, answer: bool = True) -> Session:
    """A live session for a RunPanel: it answers on its second turn."""
    model = ScriptedModel(script(answer=answer))
    return start(model, PROMPT, tools=[echo, explode], budget=Budget(max_steps=5))


def make_trace(path: str) -> Result:
    """Run to the model's error on the second turn and save the trace at ``path``."""
    model = ScriptedModel(script(answer=False))
    result = run(model, PROMPT, tools=[echo, explode], budget=Budget(max_steps=5))
    result.save(path)
    return result
