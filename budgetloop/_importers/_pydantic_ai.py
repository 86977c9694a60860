"""pydantic-ai's own record of a run: ``result.all_messages_json()``, a JSON array of requests
and responses (``"kind": "request"`` / ``"response"``), each a list of parts (``part_kind``).

Each response is a step: its ``text`` parts, its ``tool-call`` parts, its usage, model, response
id and finish reason. A request's ``tool-return`` (or older ``retry-prompt``) parts are the
tool results, paired by call id; one whose ``outcome`` is ``failed`` or ``retried`` is an error.
The request parts before the first response (system and user prompts, instructions) are the
context. A run whose last request returns pydantic-ai's ``Final result processed.`` for a call
of the last response ended on a structured answer: that call's arguments are the answer, as
JSON. Parts that say nothing of the conversation (thinking, files, instruction deltas) are left
out; a part kind not named here is refused, never skipped in silence. The record has no time.
"""

from __future__ import annotations

from typing import Any

from .._engine._types import Message, Stop, Usage, arguments_text
from .._trace._read import _at as at  # a path and one more step: a.b, a[3]
from .._trace._read import get_key as get  # a field, or the error naming it missing
from ._build import Call, Execution, Run, Turn
from ._fields import content_hash, count, data, dollars, items, obj, text, tokens_cached
from ._genai import as_text

KINDS = ("request", "response")
FINAL = "Final result processed."  # what pydantic-ai returns for its output tool's call
REQUEST_PARTS = ("system-prompt", "user-prompt", "tool-return", "retry-prompt")
RESPONSE_PARTS = ("text", "tool-call")
LEFT_OUT = (  # parts that hold no message, call or result of the conversation
    "builtin-tool-return", "builtin-tool-call", "retry-feedback", "instruction",
    "instruction-delta", "tool-availability-delta", "capability-load-delta",
    "model-settings-delta", "instruction-digest", "instruction-baseline", "thinking",
    "compaction", "file", "speech",
)  # fmt: skip
ERRORS = ("failed", "retried")


def looks_like(value: Any) -> bool:
    """A list of objects each with a ``kind`` of request or response and a ``parts`` list."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(m, dict) and m.get("kind") in KINDS and isinstance(m.get("parts"), list)
            for m in value
        )
    )


def _parts(message: dict[str, Any], path: str, known: tuple[str, ...]) -> list[Any]:
    out = []
    where = at(path, "parts")
    for i, raw in enumerate(items(get(message, path, "parts"), where)):
        part = obj(raw, at(where, i))
        kind = text(get(part, at(where, i), "part_kind"), at(at(where, i), "part_kind"),
                    optional=False)  # fmt: skip
        if kind in LEFT_OUT:
            continue
        if kind not in known:
            expected = ", ".join((*known, *LEFT_OUT))
            raise ValueError(f"{at(at(where, i), 'part_kind')} must be one of {expected}, "
                             f"got {kind!r}.")  # fmt: skip
        out.append((kind, part, at(where, i)))
    return out


def _prompt(value: Any, path: str) -> str:
    """A user prompt's text: a string, or the strings of a list (files in it left out)."""
    if isinstance(value, str):
        return value
    return "".join(v for v in items(value, path) if isinstance(v, str))


def _usage(raw: Any, path: str) -> Usage | None:
    if raw is None:
        return None
    usage = obj(raw, path)
    numbers = {
        key: count(usage.get(key), at(path, key)) or 0
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    }
    cached = numbers["cache_read_tokens"] + numbers["cache_write_tokens"]
    tokens_cached(at(path, "input_tokens"), numbers["input_tokens"], cached)
    return Usage(*numbers.values())


def _response(message: dict[str, Any], path: str, position: int) -> Turn:
    turn = Turn(float(position), float(position), order=position)
    texts = []
    for kind, part, where in _parts(message, path, RESPONSE_PARTS):
        if kind == "text":
            texts.append(str(text(get(part, where, "content"), at(where, "content"),
                                  optional=False)))  # fmt: skip
        else:
            turn.calls.append(
                Call(
                    text(get(part, where, "tool_name"), at(where, "tool_name"), optional=False),
                    text(part.get("tool_call_id"), at(where, "tool_call_id")),
                    data(part.get("args") or {}, at(where, "args")),
                )
            )
    turn.text = "".join(texts) if texts else None
    turn.usage = _usage(message.get("usage"), at(path, "usage"))
    usage = message.get("usage")
    if isinstance(usage, dict):
        turn.cost = dollars(usage.get("cost"), at(at(path, "usage"), "cost"))
    turn.model = text(message.get("model_name"), at(path, "model_name"))
    turn.response_id = text(message.get("provider_response_id"), at(path, "provider_response_id"))
    turn.finish_reason = text(message.get("finish_reason"), at(path, "finish_reason"))
    return turn


def _result(kind: str, part: dict[str, Any], where: str, position: int) -> Execution:
    """A tool's result as the request gave it to the model (``content``: its text or JSON)."""
    content = data(part.get("content"), at(where, "content"))
    said = as_text("" if content is None else content)
    failed = kind == "retry-prompt" or part.get("outcome") in ERRORS
    return Execution(
        text(part.get("tool_name"), at(where, "tool_name")),
        text(part.get("tool_call_id"), at(where, "tool_call_id")),
        None,
        float(position),
        result=None if failed else said,
        error=said if failed else None,
        order=position,
        read=said,
    )


def _request(
    message: dict[str, Any], path: str, position: int, first: bool
) -> tuple[list[Message], list[Execution]]:
    """A request: its prompts (the context, before the first response) and its tool results."""
    said: list[Message] = []
    if first and isinstance(message.get("instructions"), str):
        said.append(Message("system", message["instructions"]))
    results = []
    for kind, part, where in _parts(message, path, REQUEST_PARTS):
        if kind == "system-prompt":
            content = text(get(part, where, "content"), at(where, "content"), optional=False)
            said.append(Message("system", content))
        elif kind == "user-prompt":
            said.append(
                Message("user", _prompt(get(part, where, "content"), at(where, "content")))
            )
        else:
            results.append(_result(kind, part, where, position))
    return said, results


def run(document: Any, path: str | None, raw: bytes) -> Run:
    """The messages as one run (see the module's text)."""
    context: list[Message] = []
    turns: list[Turn] = []
    executions: list[Execution] = []
    last_results: list[Execution] = []
    for position, raw_message in enumerate(items(document, "")):
        where = at("", position)
        message = obj(raw_message, where)
        if get(message, where, "kind") == "response":
            turns.append(_response(message, where, position))
            last_results = []
            continue
        said, last_results = _request(message, where, position, first=not turns)
        if not turns:
            context += said
        executions += last_results
    found = Run(
        format="pydantic-ai",
        source="pydantic-ai messages",
        path=path,
        turns=turns,
        context=context,
        executions=executions,
        run_id=content_hash(raw),
        seconds=0.0,
        timed=False,
    )
    _final(found, last_results)
    return found


def _final(found: Run, last_results: list[Execution]) -> None:
    """A run that ended on its output tool: answered, that call's arguments the answer."""
    if not found.turns or not last_results:
        return
    asked = {c.call_id: c for c in found.turns[-1].calls if c.call_id}
    for execution in last_results:
        call = asked.get(execution.call_id) if execution.call_id else None
        if call is not None and execution.result == FINAL:
            found.stop, found.stop_known = Stop.ANSWERED, True
            arguments = call.raw_arguments
            found.answer = arguments_text(arguments)
            return
