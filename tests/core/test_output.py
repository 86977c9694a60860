"""``output=T``: a typed final answer, given by calling ``final_answer``, on every entry point;
checked and converted as a tool's arguments; retries bounded by the ceilings; kept by the trace
as JSON and shown again by ``replay``."""

from __future__ import annotations

import asyncio
import enum
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from budgetloop import (
    Budget,
    Completion,
    Result,
    ScriptedModel,
    ToolCall,
    arun,
    load_trace,
    replay,
    resume,
    run,
    run_many,
    start,
    tool,
)
from budgetloop._features._output import ASK_AGAIN, FinalAnswer


@dataclass
class City:
    name: str
    population: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@tool
def look(q: str) -> str:
    """Look something up."""
    return "Paris has 2.1 million people"


def answer(arguments: object, call_id: str = "fa") -> Completion:
    return Completion(tool_calls=[ToolCall("final_answer", arguments, call_id)])  # type: ignore[arg-type]


def test_the_answer_is_an_instance_and_its_json() -> None:
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("look", {"q": "Paris"}, "a")]),
        "It is Paris, with 2.1 million people.",  # text: asked again
        answer({"name": "Paris", "population": "many"}),  # does not fit: the model reads why
        Completion(tool_calls=[ToolCall("final_answer", {"name": "Paris", "population": "2100000"}, "b"),
                               ToolCall("look", {"q": "again"}, "c")]),
    ])  # fmt: skip
    result = run(model, "Which city?", tools=[look], output=City)
    assert result.answered
    assert result.output == City("Paris", 2_100_000)
    assert result.answer == '{"name": "Paris", "population": 2100000}'
    assert [(s.text, [(c.name, c.status, c.result or c.error) for c in s.tool_calls])
            for s in result.steps] == [
        (None, [("look", "ok", "Paris has 2.1 million people")]),
        ("It is Paris, with 2.1 million people.", []),
        (None, [("final_answer", "error", "final_answer.population: expected integer, got str")]),
        (None, [("final_answer", "ok", '{"name": "Paris", "population": 2100000}'),
                ("look", "skipped", "the run ended with the final answer")]),
    ]  # fmt: skip
    assert model.calls == 4
    # the text reply was answered by a request to use final_answer: sent, not kept
    assert model.requests[2].messages[-1].content == ASK_AGAIN
    assert ASK_AGAIN not in [m.content for m in result.messages]
    assert [m.role for m in model.requests[3].messages][-2:] == ["assistant", "tool"]
    assert model.requests[0].tools[-1] == {
        "name": "final_answer",
        "description": "Give your final answer: call this once you have it, with the answer as "
        "its arguments. The run ends when an answer that fits is given.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["name", "population"],
            "additionalProperties": False,
        },
    }


def test_an_answer_nested_too_deeply_is_said_to_be_and_asked_again() -> None:
    deep: list[object] = []
    for _ in range(2999):
        deep = [deep]
    as_json = '{"answer": ' + "[" * 3000 + "]" * 3000 + "}"
    model = ScriptedModel([answer({"answer": deep}, "a"), answer(as_json, "b"),
                           answer({"answer": [[1]]}, "c")])  # fmt: skip
    result = run(model, "go", output=list[list[int]])
    too_deep = "final_answer: arguments must be nested at most 100 levels deep, got deeper"
    assert [c.error for s in result.steps for c in s.tool_calls] == [too_deep, too_deep, None]
    assert (result.stop, result.output) == ("answered", [[1]])


@pytest.mark.parametrize(
    ("output", "sent", "expected", "text"),
    [
        (list[City], [{"name": "A", "population": 1}], [City("A", 1)], '[{"name": "A", "population": 1}]'),
        (Literal["yes", "no"], "no", "no", '"no"'),
        (Color, "blue", Color.BLUE, '"blue"'),
        (int, "42", 42, "42"),
        (dict[str, int], {"a": 1}, {"a": 1}, '{"a": 1}'),
    ],
)  # fmt: skip
def test_a_type_that_is_not_an_object_is_one_argument_answer(
    output: object, sent: object, expected: object, text: str
) -> None:
    model = ScriptedModel([answer({"answer": sent})])
    result = run(model, "go", output=output)
    assert result.answered
    assert result.output == expected
    assert result.answer == text
    parameters = model.requests[0].tools[0]["parameters"]
    assert list(parameters["properties"]) == ["answer"]
    assert parameters["required"] == ["answer"]


def test_every_ceiling_bounds_the_retries() -> None:
    model = ScriptedModel(["I think it is Paris."], repeat_last=True)
    result = run(model, "go", output=City, budget=Budget(max_steps=3))
    assert result.stop == "max_steps"
    assert not result.answered
    assert result.output is None
    assert result.answer is None
    assert model.calls == 3
    assert [r.messages[-1].content for r in model.requests] == ["go", ASK_AGAIN, ASK_AGAIN]
    assert "output" not in result.to_dict()


def test_finish_asks_the_final_answer_turn_for_the_type() -> None:
    model = ScriptedModel([
        Completion(tool_calls=[ToolCall("look", {"q": "x"}, "a")]),
        answer({"name": "Paris", "population": 2}),
    ])  # fmt: skip
    result = run(model, "go", tools=[look], output=City, finish=True, budget=Budget(max_steps=2))
    assert result.stop == "max_steps"  # the ceiling still ended the run
    assert result.output == City("Paris", 2)
    assert result.answer == '{"name": "Paris", "population": 2}'
    assert result.steps[-1].final_answer
    last = model.requests[-1]
    assert [t["name"] for t in last.tools] == ["final_answer"]  # the only tool it is sent
    assert last.messages[-1].content == (
        "[budgetloop] This is the last step the budget allows (max_steps=2): tools other than "
        "final_answer are no longer available. Give your final answer now, from what you "
        "have, by calling final_answer."
    )
    text = ScriptedModel([Completion(tool_calls=[ToolCall("look", {"q": "x"}, "a")]), "Paris."])
    plain = run(text, "go", tools=[look], output=City, finish=True, budget=Budget(max_steps=2))
    assert (plain.stop, plain.answer, plain.output) == ("max_steps", "Paris.", None)


def test_the_output_round_trips_through_the_trace_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = ScriptedModel(["Paris.", answer({"name": "Paris", "population": 2})])
    result = run(model, "go", output=City, trace_path=path)
    data = result.to_dict()
    assert data["output"] == {"name": "Paris", "population": 2}
    assert data["options"]["output"] == {
        "parameters": model.requests[0].tools[0]["parameters"],
        "wraps": False,
    }
    for back in (Result.from_dict(json.loads(json.dumps(data))), load_trace(path)):
        assert back == result
        assert back.output == {"name": "Paris", "population": 2}  # its JSON: T is not saved
        assert back.options["output"] == data["options"]["output"]
    again = replay(result)
    assert again.answered
    assert again.output == {"name": "Paris", "population": 2}
    assert again.answer == result.answer
    assert [s.tool_calls for s in again.steps] == [s.tool_calls for s in result.steps]
    # a lower ceiling: the replay stops before the answer, and has none
    cut = replay(result, budget=Budget(max_steps=1))
    assert (cut.stop, cut.output, cut.answered) == ("max_steps", None, False)
    # resume goes on with the recorded output, or a type given anew
    model.reset()
    resumed = resume(
        result, ScriptedModel([answer({"name": "Rome", "population": 3})]), tools=[], at=1
    )
    assert resumed.run().output == {"name": "Rome", "population": 3}
    typed = resume(result, ScriptedModel([answer({"name": "Rome", "population": 3})]), tools=[],
                   at=1, output=City)  # fmt: skip
    assert typed.run().output == City("Rome", 3)


def test_every_entry_point_takes_it() -> None:
    def script() -> ScriptedModel:
        return ScriptedModel([answer({"answer": "yes"})])

    session = start(script(), "go", output=Literal["yes", "no"])
    session.step()
    assert session.result.output == "yes"
    assert session.fork(at=0, complete=script()).run().output == "yes"

    async def async_model(messages: object, tools: object) -> Completion:
        return answer({"answer": "no"})

    assert asyncio.run(arun(async_model, "go", output=Literal["yes", "no"])).output == "no"
    model = ScriptedModel([answer({"answer": "yes"})], repeat_last=True)
    many = run_many(model, ["a", "b"], output=Literal["yes", "no"], concurrency=1, progress=False)
    assert [r.output for r in many] == ["yes", "yes"]


def test_redact_reaches_the_answer_and_the_recorded_schema() -> None:
    @dataclass
    class Secret:
        key: str = "sk-123"

    model = ScriptedModel([answer({"key": "sk-123"})])
    result = run(model, "go", output=Secret, redact=lambda s: s.replace("sk-123", "***"))
    assert result.output == Secret("sk-123")  # the caller gets the real value
    assert result.answer == '{"key": "***"}'
    dumped = json.dumps(result.to_dict())
    assert "sk-123" not in dumped
    assert result.to_dict()["output"] == {"key": "***"}


def test_a_tool_named_final_answer_is_refused_with_output() -> None:
    @tool(name="final_answer")
    def mine() -> str:
        """Mine."""
        return ""

    with pytest.raises(ValueError, match="final_answer") as info:
        run(ScriptedModel(["x"]), "go", tools=[mine], output=int)
    assert str(info.value) == (
        "run: tools must be free of the name 'final_answer' with output= given, got a tool "
        "named 'final_answer'. The model gives its answer by calling that tool; rename yours."
    )


def test_an_answer_read_back_from_its_json_is_an_instance_again() -> None:
    @dataclass
    class Point:
        x: int
        y: int = 0

    point = FinalAnswer(Point, "test")
    assert point.read_back({"x": "2"}) == Point(2, 0)  # checked (and coerced) as it was given
    assert point.read_back({"x": "two"}) == {"x": "two"}  # no longer fits: the JSON as it is
    assert point.read_back([1, 2]) == [1, 2]

    class Colour(enum.Enum):
        RED = "red"

    assert FinalAnswer(Colour, "test").read_back("red") is Colour.RED  # a wrapped answer
    assert FinalAnswer(Literal["yes", "no"], "test").read_back("no") == "no"
