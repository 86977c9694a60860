"""A long Chat Completions stream served as server-sent events to the real openai SDK over a
mock transport, and the seconds to read it with the SDK alone and through the loop
(``run(openai_chat(..., stream=True), ...)``): bench.py's cost per chunk. The adapters' tests
time it too (tests/stream_support.py), on a short stream."""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai

from budgetloop import Budget, Price, run
from budgetloop.adapters import openai_chat

PRICE = Price(input_per_mtok=2.5, output_per_mtok=10.0)


def _event(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> bytes:
    chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1756419066,
             "model": "gpt-4o-2024-08-06", "choices": choices, "usage": usage}  # fmt: skip
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def chat_events(pieces: int) -> list[bytes]:
    """A Chat Completions SSE body: the assistant's role, ``pieces`` text chunks of a word
    each, the finish, the usage chunk (``stream_options``' ``include_usage``) and ``[DONE]``."""
    delta = [{"index": 0, "delta": {"content": " word"}, "finish_reason": None}]
    return [
        _event(
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
        ),
        *[_event(delta)] * pieces,
        _event([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        _event(
            [], {"prompt_tokens": 12, "completion_tokens": pieces, "total_tokens": 12 + pieces}
        ),
        b"data: [DONE]\n\n",
    ]


def chat_client(events: list[bytes]) -> openai.OpenAI:
    """The real ``OpenAI`` client, each request answered with ``events`` (one network chunk
    each) by the mock transport of the HTTP package the SDK is built on (httpx or httpx2)."""
    http = importlib.import_module(openai.DefaultHttpxClient.__bases__[0].__module__.split(".")[0])

    def answer(request: Any) -> Any:
        body: Iterator[bytes] = iter(events)
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = http.MockTransport(answer)
    return openai.OpenAI(
        api_key="sk-bench", max_retries=0, http_client=http.Client(transport=transport)
    )


def sdk_alone(client: openai.OpenAI) -> Callable[[], Any]:
    """Iterate the SDK's stream: every chunk parsed, nothing done with it."""

    def go() -> None:
        stream = client.chat.completions.create(model="gpt-4o", messages=[], stream=True)
        for _ in stream:
            pass

    return go


def through_the_loop(client: openai.OpenAI, pieces: int) -> Callable[[], Any]:
    """One run whose reply is the stream: the adapter's chunks, put together by the loop into
    the step (with the cost guard on)."""
    model = openai_chat(client, "gpt-4o", max_tokens=2 * pieces, price=PRICE, stream=True)

    def go() -> None:
        result = run(model, "go", budget=Budget(max_cost_usd=1.0))
        if result.answer != " word" * pieces:
            raise RuntimeError(
                f"the streamed run's answer is wrong: {result.stop}, {result.error}"
            )

    return go


def time_chat_stream(pieces: int = 1000) -> tuple[float, float]:
    """Seconds to read a ``pieces``-chunk stream once with the SDK alone, and once through
    the loop."""
    client = chat_client(chat_events(pieces))
    timed = []
    for go in (sdk_alone(client), through_the_loop(client, pieces)):
        began = time.perf_counter()
        go()
        timed.append(time.perf_counter() - began)
    return timed[0], timed[1]
