"""anthropic_messages with extended thinking, over the real anthropic SDK client: a tool-use
turn goes back with its thinking and redacted-thinking blocks first, unchanged and in order, as
the API requires, and the thinking tokens are the usage's reasoning tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic

from budgetloop import Budget, Message, ToolCall, Usage, arun, start
from tests.adapter_support import ANTHROPIC
from tests.provider_server import Provider, payload

THINKING = {"type": "enabled", "budget_tokens": 1024}
THOUGHT = {
    "type": "thinking",
    "thinking": "Two independent lookups: weather and elevation, both for Denver.",
    "signature": "EqQBCkYIBxgCKkDsig-of-the-thought==",
}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlx=="}


def thinking_turn() -> dict[str, Any]:
    body = payload("anthropic_messages_two_tool_use")
    body["content"] = [THOUGHT, REDACTED, *body["content"]]
    body["usage"]["output_tokens_details"] = {"thinking_tokens": 70}
    anthropic.types.Message.model_validate(body)  # the shape the SDK parses
    return body


def final_turn() -> dict[str, Any]:
    body = payload("anthropic_messages_final_text")
    body["content"] = [{**THOUGHT, "signature": "EqQBCkYIBxgC-second=="}, *body["content"]]
    body["usage"]["output_tokens_details"] = {"thinking_tokens": 12}
    anthropic.types.Message.model_validate(body)
    return body


def test_a_tool_use_turn_goes_back_with_its_thinking_blocks_first_and_unchanged() -> None:
    provider = Provider("anthropic", (200, thinking_turn()), (200, final_turn()))
    result = ANTHROPIC.run(ANTHROPIC.over(provider, thinking=THINKING))

    assert (result.stop, result.answer) == ("answered", ANTHROPIC.answer)
    first, second = provider.bodies
    assert first["thinking"] == THINKING
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    weather, elevation = ANTHROPIC.call_ids
    assert assistant["content"] == [
        THOUGHT,
        REDACTED,
        {"type": "text", "text": "I'll get the weather and elevation information for Denver."},
        {"type": "tool_use", "id": weather, "name": "get_weather", "input": {"city": "Denver"}},
        {
            "type": "tool_use",
            "id": elevation,
            "name": "get_elevation",
            "input": {"city": "Denver"},
        },
    ]
    # the thinking is no text of the step: the answer and the trace hold what the model said
    assert result.steps[0].text == "I'll get the weather and elevation information for Denver."
    assert [s.usage for s in result.steps] == [
        Usage(612, 101, reasoning_tokens=70),
        Usage(798, 50, reasoning_tokens=12),
    ]
    assert result.to_dict()["steps"][0]["usage"]["reasoning_tokens"] == 70
    assert result.cost_usd == ANTHROPIC.cost(*ANTHROPIC.usages)  # thinking billed as output


def test_the_thinking_goes_back_on_every_later_request_of_the_run() -> None:
    # a third request (the run went on) still carries the first turn's thinking
    second_tools = thinking_turn()
    second_tools["id"] = "msg_second"
    for block, new_id in zip(second_tools["content"][3:], ("toolu_C", "toolu_D"), strict=True):
        block["id"] = new_id
    second_tools["content"][0] = {**THOUGHT, "signature": "sig-of-the-second-turn"}
    provider = Provider(
        "anthropic", (200, thinking_turn()), (200, second_tools), (200, final_turn())
    )
    session = start(
        ANTHROPIC.over(provider, thinking=THINKING),
        ANTHROPIC.prompt,
        tools=list(ANTHROPIC.tools),
        budget=Budget(max_steps=5),
    )
    result = session.run()

    assert result.stop == "answered"
    third = provider.bodies[2]["messages"]
    assert [m["content"][0]["type"] for m in third if m["role"] == "assistant"] == [
        "thinking",
        "thinking",
    ]
    assert third[1]["content"][0] == THOUGHT
    assert third[3]["content"][0]["signature"] == "sig-of-the-second-turn"


def test_a_turn_edited_in_a_fork_goes_back_as_edited_without_thinking() -> None:
    provider = Provider(
        "anthropic", (200, thinking_turn()), (200, final_turn()), (200, final_turn())
    )
    session = start(
        ANTHROPIC.over(provider, thinking=THINKING), ANTHROPIC.prompt, tools=list(ANTHROPIC.tools)
    )
    session.step()
    edited = list(session.messages)
    edited[1] = Message("assistant", None, (ToolCall("get_weather", {"city": "Oslo"}, "toolu_X"),))
    edited[2:4] = [Message("tool", "Rain", tool_call_id="toolu_X")]
    session.fork(at=1, messages=edited).step()

    sent = provider.bodies[-1]["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_X", "name": "get_weather", "input": {"city": "Oslo"}}
        ],
    }


def test_the_async_client_carries_the_thinking_too() -> None:
    provider = Provider("anthropic", (200, thinking_turn()), (200, final_turn()))
    client = ANTHROPIC.async_client(provider)
    model = ANTHROPIC.adapter(
        client, ANTHROPIC.model, max_tokens=ANTHROPIC.max_tokens, price=ANTHROPIC.price,
        thinking=THINKING,
    )  # fmt: skip
    result = asyncio.run(arun(model, ANTHROPIC.prompt, tools=list(ANTHROPIC.tools)))

    assert result.stop == "answered"
    assert provider.bodies[1]["messages"][1]["content"][:2] == [THOUGHT, REDACTED]
