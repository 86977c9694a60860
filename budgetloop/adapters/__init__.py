"""Provider adapters: a model callable over the user's own SDK client, and exact token counts.

No SDK is imported here; each adapter calls the client it is given. The callables carry
``price`` and ``max_output_tokens``, so ``run(model, prompt, budget=Budget(max_cost_usd=...))``
needs neither repeated. ``openai_chat`` speaks Chat Completions, ``openai_responses`` the
Responses API, ``anthropic_messages`` the Messages API. Each made with ``stream=True`` returns
the reply as it arrives, an iterator of ``budgetloop.Chunk`` (a ``ChunkStream``; an
``AsyncChunkStream`` from an async client) rather than a ``Completion``.

A reply the provider sent, and billed, that an adapter cannot read raises
``budgetloop.UnreadableReply`` with the usage the reply reports, so the run ends as a
``model_error`` and the call is billed at that usage, or at its worst case when there is none.
An HTTP error is passed on as the SDK raised it: the provider refused the call, which bills no
tokens, so it costs $0.
"""

from ._anthropic import (
    AnthropicTokenCounter,
    anthropic_count_tokens,
    anthropic_messages,
    completion_from_anthropic,
)
from ._model import AsyncChatModel, AsyncChunkStream, ChatModel, ChunkStream
from ._openai import completion_from_openai, openai_chat
from ._responses import completion_from_responses, openai_responses
from ._tokens import TokenCounter, encoding_for_model, tiktoken_counter

__all__ = [
    "AnthropicTokenCounter",
    "AsyncChatModel",
    "AsyncChunkStream",
    "ChatModel",
    "ChunkStream",
    "TokenCounter",
    "anthropic_count_tokens",
    "anthropic_messages",
    "completion_from_anthropic",
    "completion_from_openai",
    "completion_from_responses",
    "encoding_for_model",
    "openai_chat",
    "openai_responses",
    "tiktoken_counter",
]
