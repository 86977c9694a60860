"""``output=T``: a typed final answer, given by calling the ``final_answer`` tool.

The tool's schema is ``T``'s, as ``@tool`` writes a parameter of type ``T``: an object type (a
dataclass, a ``TypedDict``, a pydantic model) is its arguments; any other type is one argument,
``answer``. Its arguments are checked and converted as any tool's, so the output is an instance
of ``T``; the answer's text is its JSON as the check left it. A recorded run (``replay``,
``resume``) gives the schema itself instead of ``T``: the answer is then checked, not converted,
and the output is its JSON value.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any

from .._engine._turn import Call, checked
from .._engine._types import ToolCall
from .._engine._valid import must, type_name
from .._schema._check import ArgumentError
from .._schema._classes import Classes
from .._schema._hints import hint_name
from .._schema._shapes import SUPPORTED, Convert
from .._schema._tool import Tool

FINAL_ANSWER = "final_answer"
_WRAPPED = "answer"
ASK_AGAIN = (
    f"[budgetloop] Give your final answer by calling {FINAL_ANSWER}, with the answer as its "
    "arguments; an answer in plain text is not taken."
)
_DESCRIBE = (
    "Give your final answer: call this once you have it, with the answer as its arguments. "
    "The run ends when an answer that fits is given."
)


def final_ask(note: str) -> str:
    """The final-answer turn's note (``finish=True``), asking for the answer as a T."""
    return (
        note.replace(
            "tools are no longer available",
            f"tools other than {FINAL_ANSWER} are no longer available",
        ).rstrip(".")
        + f", by calling {FINAL_ANSWER}."
    )


@dataclass(frozen=True)
class Answer:
    """A final answer that fits: the output (an instance of ``T``), its JSON text, and the
    checked arguments as the trace keeps them."""

    output: Any
    text: str
    arguments: dict[str, Any]
    coerced: tuple[str, ...]


class FinalAnswer(Tool):
    """The ``final_answer`` tool of a run with ``output=``."""

    is_async = False

    def __init__(self, output: Any, where: str) -> None:
        self.name = FINAL_ANSWER
        self.description = _DESCRIBE
        self.fn = _unreachable
        self.output = output
        self._convert: Convert | None = None
        self.__name__ = FINAL_ANSWER
        if isinstance(output, dict):  # as a trace records it: checked, not converted
            self._read(output, where)
            return
        shapes = Classes()
        try:
            schema, self._convert = shapes.build(output, f"{where}: output")
        except TypeError as exc:
            if not str(exc).startswith(f"{where}: output: type "):
                raise  # a class that is read, with something wrong inside: said there
            shown = hint_name(output) if _is_hint(output) else type_name(output)
            expected = f"a type @tool accepts for a parameter ({SUPPORTED})"
            raise TypeError(must(where, "output", expected, shown)) from None
        schema = _resolved(schema, shapes.defs)
        self.wraps = schema.get("type") != "object" or "properties" not in schema
        if self.wraps:
            self.parameters, self.required = {_WRAPPED: schema}, (_WRAPPED,)
        else:
            self.parameters = dict(schema["properties"])
            self.required = tuple(schema.get("required", ()))
        self._defs = shapes.defs

    def _read(self, recorded: dict[str, Any], where: str) -> None:
        params, wraps = recorded.get("parameters"), recorded.get("wraps")
        properties = params.get("properties") if isinstance(params, dict) else None
        required = params.get("required", []) if isinstance(params, dict) else None
        defs = params.get("$defs", {}) if isinstance(params, dict) else None
        if not (
            isinstance(properties, dict)
            and isinstance(required, list)
            and isinstance(defs, dict)
            and isinstance(wraps, bool)
        ):
            expected = "a type, or the output a trace records ({'parameters': ..., 'wraps': ...})"
            raise ValueError(must(where, "output", expected, repr(recorded)[:80]))
        self.parameters, self.required, self._defs = dict(properties), tuple(required), defs
        self.wraps = wraps

    @property
    def recorded(self) -> dict[str, Any]:
        """What a trace records of it (``Result.options["output"]``): the schema sent, and
        whether the answer is its one argument ``answer``; a replay checks answers by it."""
        return {"parameters": self.schema["parameters"], "wraps": self.wraps}

    def arguments_for(self, args: dict[str, Any], choices: dict[str, int]) -> dict[str, Any]:
        """Checked arguments that T's own checks refuse (a validator, a ``__post_init__``) are
        an error the model reads, as a tool's are: raised here, for the batch to record."""
        self._made(args, choices)
        return args

    def _made(self, args: dict[str, Any], choices: dict[str, int]) -> Any:
        value = args[_WRAPPED] if self.wraps else args
        if self._convert is None:
            return value
        path = f"{FINAL_ANSWER}.{_WRAPPED}" if self.wraps else FINAL_ANSWER
        return self._convert(value, path, choices)

    def accept(self, call: Call) -> Answer | ArgumentError | Exception:
        """The answer ``call`` gives, if its arguments fit; else why not (an ``ArgumentError``
        the model reads, or an error from the type's own conversion)."""
        outcome = checked(call, self)
        if isinstance(outcome, Exception):
            return outcome
        args, coerced, choices = outcome
        try:
            output = self._made(args, choices)
        except Exception as exc:
            return exc
        text = json.dumps(args[_WRAPPED] if self.wraps else args, ensure_ascii=False)
        return Answer(output, text, args, coerced)

    def read_back(self, value: Any) -> Any:
        """A final answer as a trace keeps it (its JSON) made an instance of ``T`` again, checked
        as it was when it was given; the JSON as it is where it no longer fits."""
        args = {_WRAPPED: value} if self.wraps else value
        if not isinstance(args, dict):
            return value
        answer = self.accept(Call(ToolCall(FINAL_ANSWER, args, "read_back"), "read_back", args))
        return answer.output if isinstance(answer, Answer) else value

    def __repr__(self) -> str:
        kind = "a recorded schema" if isinstance(self.output, dict) else hint_name(self.output)
        return f"<FinalAnswer for {kind}>"


def _is_hint(value: Any) -> bool:
    return isinstance(value, type) or typing.get_origin(value) is not None


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A class that refers to itself is written as a ``$ref``: its definition."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = defs.get(ref[len("#/$defs/") :])
        if isinstance(found, dict):
            return found
    return schema


def _unreachable(**arguments: Any) -> str:
    # The loop takes an answer that fits before any call; one that does not fit is refused by
    # the check. Nothing else reaches here.
    return "accepted"
