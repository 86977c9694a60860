"""fast_init: frozen records that store only what differs from their defaults, and nothing
else about them changed."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import typing
from dataclasses import FrozenInstanceError, InitVar, dataclass, field

import pytest

from budgetloop import (
    CallRecord,
    Completion,
    Message,
    Projection,
    Result,
    Step,
    ToolCall,
    Usage,
)
from budgetloop._engine._frozen import fast_init, unchecked
from budgetloop._trace._result import Request

RECORDS = (ToolCall, Message, Usage, Completion, Request, CallRecord, Step, Projection, Result)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_a_record_takes_its_fields_in_order_with_their_defaults(cls: type) -> None:
    fields = dataclasses.fields(cls)
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [f.name for f in fields]
    for f, p in zip(fields, parameters, strict=True):
        if f.default_factory is not dataclasses.MISSING:
            assert repr(p.default) == "<factory>"  # as the dataclass's own signature shows it
        elif f.default is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty
        else:
            assert p.default is f.default
    assert cls.__init__.__qualname__ == f"{cls.__name__}.__init__"
    hints = typing.get_type_hints(cls.__init__)  # resolved in the class's module, as before
    assert list(hints) == [*(f.name for f in fields), "return"]


def test_a_record_stores_what_differs_from_its_defaults() -> None:
    message = Message("user", "hi")
    assert vars(message) == {"role": "user", "content": "hi"}  # the rest are the class's
    assert (message.tool_calls, message.tool_call_id, message.name) == ((), None, None)
    assert vars(Message("user", "hi", (), None, "ann")) == {"role": "user", "content": "hi",
                                                            "name": "ann"}  # fmt: skip
    assert Message("user", "hi", name=None) == message
    assert pickle.loads(pickle.dumps(message)).name is None


def test_a_record_stays_frozen_and_checked() -> None:
    message = Message("user", "hi")
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'content'"):
        message.content = "changed"  # type: ignore[misc]
    assert message == Message("user", "hi")
    assert hash(message) == hash(Message("user", "hi"))
    assert dataclasses.replace(message, content="bye") == Message("user", "bye")
    assert pickle.loads(pickle.dumps(message)) == message
    with pytest.raises(ValueError, match=r"^Message: role must be one of system, user, assistant, "
                       r"tool, got 'robot'\.$"):  # fmt: skip
        Message("robot")  # __post_init__ still runs
    record = CallRecord("add", "c1", "{}", {}, "ok", coerced=["a"])  # type: ignore[arg-type]
    assert record.coerced == ("a",)  # and may still set a field
    with pytest.raises(TypeError, match=r"^Message.__init__\(\) missing 1 required positional "
                       "argument: 'role'$"):  # fmt: skip
        Message()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Message("user", colour="red")  # type: ignore[call-arg]


def test_a_record_made_fast_is_the_record_the_dataclass_makes() -> None:
    def point() -> type:
        @dataclass(frozen=True)
        class Point:
            x: int
            tags: list[str] = field(default_factory=list)
            label: str = "origin"
            weight: float = field(default=1.0, kw_only=True)

            def __post_init__(self) -> None:
                object.__setattr__(self, "label", self.label.upper())

        return Point

    plain, fast = point(), fast_init(point())
    names = [f.name for f in dataclasses.fields(plain)]
    for args, kwargs in [((1,), {}), ((2, ["a"], "b"), {"weight": 3.0}), ((), {"x": 4})]:
        made, expected = fast(*args, **kwargs), plain(*args, **kwargs)
        assert [getattr(made, n) for n in names] == [getattr(expected, n) for n in names]
        assert repr(made).split("(", 1)[1] == repr(expected).split("(", 1)[1]
    assert fast(1).tags is not fast(1).tags  # each default made anew
    assert str(inspect.signature(fast)) == str(inspect.signature(plain))
    assert str(inspect.signature(fast)) == (
        "(x: 'int', tags: 'list[str]' = <factory>, label: 'str' = 'origin', *, "
        "weight: 'float' = 1.0) -> None"
    )
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments but 5"):
        fast(1, [], "a", 2.0)


def test_what_fast_init_cannot_stand_for_is_refused_when_defined() -> None:
    class NotOne:
        pass

    @dataclass
    class Thawed:
        x: int

    @dataclass(frozen=True, slots=True)
    class Slotted:
        x: int

    @dataclass(frozen=True)
    class WithInitVar:
        x: int
        seed: InitVar[int] = 0

    @dataclass(frozen=True)
    class WithDerived:
        x: int
        y: int = field(init=False, default=0)

    cases = [
        (NotOne, "must be a dataclass with a __dict__, got <class "),
        (Slotted, "must be a dataclass with a __dict__, got <class "),
        (Thawed, "cls must be a frozen dataclass, got one that is not frozen."),
        (WithInitVar, "the parameters of __init__ must be the fields ['x'], got ['x', 'seed'] "
                      "(an InitVar or a field with init=False is not supported)."),
        (WithDerived, "the parameters of __init__ must be the fields ['x', 'y'], got ['x'] "),
    ]  # fmt: skip
    for cls, words in cases:
        with pytest.raises(TypeError) as error:
            fast_init(cls)
        assert str(error.value).startswith(f"fast_init({cls.__qualname__}): ")
        assert words in str(error.value)


def test_a_default_the_class_does_not_hold_is_stored() -> None:
    @dataclass(frozen=True)
    class Setting:
        level: int = 1

    Setting.level = 2  # type: ignore[misc]  # the class's attribute is no longer the default
    made = fast_init(Setting)()
    assert made.level == 1
    assert vars(made) == {"level": 1}


def test_an_unchecked_record_is_the_record_its_class_makes_without_its_checks() -> None:
    cases = [
        (Message, ("assistant", "hi", (ToolCall("add", {"a": 1}, "c1"),), None, None)),
        (Message, ("tool", "3", (), "c1", "add")),
        (Usage, (10, 2, 3, 4, 1)),
        (CallRecord, ("add", "c1", {"a": 1}, {"a": 1}, "ok", "3", None, 0.5, ("a",), None,
                      "tb", None, None)),
        (Projection, (10, None, 0.1, 0.0, None, True, None, None)),
    ]  # fmt: skip
    for cls, args in cases:
        made, expected = unchecked(cls)(*args), cls(*args)
        assert type(made) is cls
        assert made == expected
        assert repr(made) == repr(expected)
        assert vars(made) == vars(expected)  # the defaults left to the class, as fast_init does
        assert pickle.loads(pickle.dumps(made)) == expected
    assert unchecked(Message)("robot").role == "robot"  # no __post_init__: the caller checked
    with pytest.raises(ValueError, match="role must be one of"):
        Message("robot")
    assert unchecked(CallRecord)("a", "c", "{}", None, "ok").coerced == ()  # defaults as made
