"""Context policies: what of a long run's context each request is sent.

Pass one as ``context=`` to any entry point (``run``, ``start``, ``arun``, ``run_many``,
``fork``, ``resume``, ``replay``). Before each model call the loop hands the policy the whole
context and sends what it returns; the guard projects the turn on that request, so a budget
holds on what is sent, and the trace records what the policy left out (``Step.context``).

A *turn* is an assistant message and what follows it up to the next assistant message (its
tool results, and any note the loop added). The *head* is what comes before the first assistant
message: the system message and the task, as the prompt gave them. No built-in policy drops the
head or separates a tool call from its result.

- ``KeepLast(turns=N)``: the head and the last N turns.
- ``DropToolResults(older_than=N, keep_chars=200)``: each tool result of a turn before the last
  N keeps its first ``keep_chars`` characters and a mark saying how many were dropped.
- ``Summarize(model, when_input_tokens_over=T, keep_last=K)``: once the request passes T input
  tokens, the turns before the last K are replaced by a summary ``model`` writes (a model call
  of the run: projected, checked against every ceiling, billed and recorded); a summary that
  would not fit the budget is not asked for, and those turns are dropped instead.

Any callable ``policy(messages) -> list[Message]`` works as well. What a policy returns is
checked before anything is sent: a configuration mistake, so it raises (``TypeError`` for what
is not a list of ``Message``, ``ValueError`` for a request that is not a conversation: the head
dropped, a message moved, a tool result without its call or a call without its result), naming
the policy, before the model is called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._engine._types import Message, Price
from ._engine._valid import check_int, must, type_name

__all__ = ["DropToolResults", "KeepLast", "Policy", "Summarize"]

Policy = Callable[[list[Message]], list[Message]]


def head_end(messages: Sequence[Message]) -> int:
    """How many messages the head is: those before the first assistant message."""
    for i, message in enumerate(messages):
        if message.role == "assistant":
            return i
    return len(messages)


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """The index of each turn's assistant message, in order."""
    return [i for i, m in enumerate(messages) if m.role == "assistant"]


def last_turns_start(messages: Sequence[Message], turns: int) -> int:
    """Where the last ``turns`` turns begin (the end of the head when there are no more)."""
    starts = turn_starts(messages)
    if len(starts) <= turns:
        return head_end(messages)
    return starts[len(starts) - turns]


@dataclass(frozen=True)
class KeepLast:
    """The head (system message and task) and the last ``turns`` turns; the turns before them
    are dropped whole, so a call is never separated from its result."""

    turns: int

    def __post_init__(self) -> None:
        check_int("KeepLast", "turns", self.turns, least=1)

    def __call__(self, messages: list[Message]) -> list[Message]:
        cut = last_turns_start(messages, self.turns)
        return [*messages[: head_end(messages)], *messages[cut:]]


@dataclass(frozen=True)
class DropToolResults:
    """Every tool result of a turn before the last ``older_than`` turns cut to its first
    ``keep_chars`` characters, followed by a mark saying how many characters were dropped.
    A result the cut would not make shorter (the mark included) is sent as it is; no message
    is removed."""

    older_than: int
    keep_chars: int = 200

    def __post_init__(self) -> None:
        check_int("DropToolResults", "older_than", self.older_than, least=1)
        check_int("DropToolResults", "keep_chars", self.keep_chars, least=0)

    def __call__(self, messages: list[Message]) -> list[Message]:
        cut = last_turns_start(messages, self.older_than)
        start = head_end(messages)
        out = list(messages)
        for i in range(start, cut):
            message = messages[i]
            text = message.content
            if message.role != "tool" or text is None or len(text) <= self.keep_chars:
                continue
            short = text[: self.keep_chars] + dropped_mark(len(text) - self.keep_chars)
            if len(short) < len(text):  # a cut the mark would make longer is not made
                out[i] = Message(
                    "tool", short, tool_call_id=message.tool_call_id, name=message.name
                )
        return out


def dropped_mark(chars: int) -> str:
    """What ends a tool result ``DropToolResults`` cut."""
    return f"\n[{chars:,} more characters dropped by the context policy]"


SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below for the assistant that continues it: the facts found, "
    "the tool results that matter, what was decided and what is left to do. Be brief."
)
SUMMARY_PREFIX = "Summary of the earlier turns (written for the context policy):\n"


@dataclass(frozen=True)
class Summarize:
    """Once a request passes ``when_input_tokens_over`` input tokens, the turns before the last
    ``keep_last`` (and any earlier summary) are replaced by one user message after the head: a
    summary ``model`` writes. The summary stands for those turns in the requests that follow,
    until the context passes the threshold again and it is rewritten with what followed.

    ``model`` is a model callable ``model(messages, tools)``, priced as ``run()`` prices a
    model: by its ``price`` (a ``Price``) and ``max_output_tokens`` attributes, which it must
    carry (the adapters' models and ``ScriptedModel`` do). The summary call is a call of the
    run: its worst case (its input tokens and ``max_output_tokens`` at ``price``), together
    with the worst case of the turn that reads it, is checked against every ceiling before it
    is sent; it is billed into the run's cost and its shared ledger, and recorded in the step
    (``Step.context``). When it would not fit, it is not sent: the turns before the last
    ``keep_last`` are dropped instead (as ``KeepLast(keep_last)``), and the step says so. A
    summary written too long for the turn that reads it to fit ``max_cost_usd`` is billed and
    recorded, and those turns are dropped as well.

    It needs the loop to make its call, so it is not itself a ``policy(messages)`` callable.
    """

    model: Any
    when_input_tokens_over: int
    keep_last: int = 2
    price: Price = field(init=False, repr=False, compare=False)
    max_output_tokens: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = "Summarize"
        if not callable(self.model):
            raise TypeError(must(where, "model", "a model callable", type_name(self.model)))
        price = getattr(self.model, "price", None)
        if not isinstance(price, Price):
            raise TypeError(
                must(where, "model.price", "a Price (the summarizer is priced)", type_name(price))
            )
        most = getattr(self.model, "max_output_tokens", None)
        check_int(where, "model.max_output_tokens", most, least=1)
        check_int(where, "when_input_tokens_over", self.when_input_tokens_over, least=0)
        check_int(where, "keep_last", self.keep_last, least=1)
        object.__setattr__(self, "price", price)
        object.__setattr__(self, "max_output_tokens", most)

    def request(self, older: Sequence[Message]) -> list[Message]:
        """What the summarizer is sent for ``older`` messages: its instructions, and those
        messages written out as one text (no tool schemas, so any provider takes it)."""
        return [Message("system", SUMMARY_INSTRUCTIONS), Message("user", transcript(older))]


def summary_message(text: str) -> Message:
    """The message a summary stands as in the requests."""
    return Message("user", SUMMARY_PREFIX + text)


def transcript(messages: Sequence[Message]) -> str:
    """Messages written out as text, one paragraph each."""
    lines = []
    for m in messages:
        calls = "".join(f"\n  calls {c.name}({c.arguments_text})" for c in m.tool_calls)
        who = m.role if m.name is None or m.role != "tool" else f"tool {m.name}"
        lines.append(f"{who}: {m.content or ''}{calls}")
    return "\n\n".join(lines)


def policy_name(policy: object) -> str:
    """How an error and the trace name a policy: a built-in one by its repr, a function by its
    qualified name."""
    if isinstance(policy, (KeepLast, DropToolResults, Summarize)):
        return repr(policy)
    return getattr(policy, "__qualname__", None) or type(policy).__name__


def checked_request(
    policy: object, context: Sequence[Message], returned: object
) -> tuple[list[Message], tuple[int | None, ...]]:
    """What ``policy`` returned for ``context``, checked to be a request that can be sent; and
    for each of its messages the index of the context message it is (None: one the policy
    wrote, such as a cut result or a summary). Raises as the module's text says."""
    where = f"context policy {policy_name(policy)}"
    if not isinstance(returned, list):
        raise TypeError(must(where, "what it returns", "a list of Message", type_name(returned)))
    for i, m in enumerate(returned):
        if not isinstance(m, Message):
            raise TypeError(must(where, f"returned[{i}]", "a Message", type_name(m)))
    head = head_end(context)
    at: list[int | None] = []
    after = -1
    for i, m in enumerate(returned):
        found = _find(context, m, after + 1)
        if found is None and _find(context, m, 0) is not None:
            raise ValueError(
                must(
                    where, f"returned[{i}]", "in the context's order", f"a {m.role} message moved"
                )
            )
        if found is not None:
            after = found
        at.append(found)
    if at[:head] != list(range(head)):
        raise ValueError(
            must(where, "what it returns", "the context's head first (the system message "
                 "and the task)", "a request without it"))  # fmt: skip
    _paired(where, returned, head)
    return returned, tuple(at)


def _find(context: Sequence[Message], message: Message, start: int) -> int | None:
    for j in range(start, len(context)):
        if context[j] is message:
            return j
    for j in range(start, len(context)):
        if context[j] == message:
            return j
    return None


def _paired(where: str, request: Sequence[Message], head: int) -> None:
    """After the head (the prompt, as given): each tool result follows the assistant message
    that called it, before the next one, and each call of an assistant message has its
    result."""
    waiting: dict[str, str] = {}  # call id -> tool name, of the last assistant message
    for i, m in enumerate(request):
        if i < head:
            continue
        if m.role == "assistant":
            _no_call_left(where, waiting)
            waiting = {c.id: c.name for c in m.tool_calls if c.id is not None}
        elif m.role == "tool":
            if m.tool_call_id not in waiting:
                raise ValueError(
                    must(where, f"returned[{i}]", "a tool result after the call it answers",
                         f"an orphaned result of call {m.tool_call_id!r}"))  # fmt: skip
            del waiting[m.tool_call_id]
    _no_call_left(where, waiting)


def _no_call_left(where: str, waiting: dict[str, str]) -> None:
    if waiting:
        first = next(iter(waiting))
        raise ValueError(
            must(where, "what it returns", "each tool call followed by its result",
                 f"call {first!r} ({waiting[first]}) without its result"))  # fmt: skip
