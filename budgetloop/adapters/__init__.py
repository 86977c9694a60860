"""Provider adapters: a model callable over the user's own SDK client, and exact token counts.

No SDK is imported here; each adapter calls the client it is given. The callables carry
``price`` and ``max_output_tokens``, so ``run(model, prompt, budget=Budget(max_cost_usd=...))``
needs neither repeated.
"""

from ._anthropic import (
    AnthropicTokenCounter,
    anthropic_count_tokens,
    anthropic_messages,
    completion_from_anthropic,
)
from ._model import AsyncChatModel, ChatModel
from ._openai import completion_from_openai, openai_chat
from ._tokens import TokenCounter, encoding_for_model, tiktoken_counter

__all__ = [
    "AnthropicTokenCounter",
    "AsyncChatModel",
    "ChatModel",
    "TokenCounter",
    "anthropic_count_tokens",
    "anthropic_messages",
    "completion_from_anthropic",
    "completion_from_openai",
    "encoding_for_model",
    "openai_chat",
    "tiktoken_counter",
]
