"""Session.message_tokens: each message's count as the session holds it."""

from __future__ import annotations

from budgetloop import Completion, ScriptedModel, ToolCall, estimate_tokens, start, tool


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text * 3


def test_one_count_per_message_and_they_sum_to_the_estimate() -> None:
    model = ScriptedModel(
        [Completion(text="look", tool_calls=[ToolCall("echo", {"text": "hi"})]), "done"]
    )
    session = start(model, "say hi", tools=[echo], system="be brief")
    assert len(session.message_tokens) == 2
    session.step()
    counts = session.message_tokens
    messages = session.messages
    assert len(counts) == len(messages) == 4
    assert all(isinstance(c, int) and c > 0 for c in counts)
    schemas = [echo.schema]
    assert sum(counts) + estimate_tokens([], schemas) == estimate_tokens(messages, schemas)
    assert counts[:2] == session.fresh().message_tokens
