"""Response bodies of the shapes the OpenAI Responses API returns, each checked against the
openai SDK's own ``Response`` type before a test serves it: message, refusal, function_call and
reasoning items, usage with cached and reasoning tokens, a completed or incomplete status."""

from __future__ import annotations

from typing import Any

from openai.types.responses import Response

MODEL = "gpt-5-mini-2025-08-07"


def message(text: str, *, refusal: bool = False, item_id: str = "msg_01") -> dict[str, Any]:
    part = (
        {"type": "refusal", "refusal": text}
        if refusal
        else {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    )
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }


def function_call(name: str, arguments: str, call_id: str, item_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning(item_id: str, *, encrypted: str | None, summary: str = "") -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def response(
    output: list[dict[str, Any]],
    *,
    usage: tuple[int, int, int, int] = (100, 20, 0, 0),  # input, output, cached, reasoning
    status: str = "completed",
    incomplete: str | None = None,
    response_id: str = "resp_01",
    model: str = MODEL,
) -> dict[str, Any]:
    inp, out, cached, thinking = usage
    body: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 1764640000,
        "status": status,
        "error": None,
        "incomplete_details": None if incomplete is None else {"reason": incomplete},
        "instructions": None,
        "max_output_tokens": 256,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "low", "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": thinking},
            "total_tokens": inp + out,
        },
        "metadata": {},
    }
    Response.model_validate(body)  # the shape the SDK parses, or the test is wrong
    return body
