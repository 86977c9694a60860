"""Callables as users have them: a ``functools.partial``, a callable object, bound methods,
classmethods and staticmethods decorate, and run in the loop; a return hint is never resolved;
``*args``, ``**kwargs`` and positional-only parameters are errors that say what to write.

Several cases restate openai-agents' class-based function tests (an instance method, a
classmethod and a staticmethod each giving the schema of their parameters, and running).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import TYPE_CHECKING, Annotated, Any

import pytest

from budgetloop import Completion, ScriptedModel, ToolCall, run, tool
from tests.schema_support import made, properties

if TYPE_CHECKING:  # for type checkers only: the name does not exist at run time
    from decimal import Decimal as NeverImported


def called(t: Any, arguments: dict[str, Any]) -> str | None:
    """The result the model reads after one call to ``t`` with ``arguments``."""
    model = ScriptedModel([Completion(tool_calls=[ToolCall(t.name, arguments, "c1")]), "done"])
    result = run(model, "go", tools=[t])
    call = result.steps[0].tool_calls[0]
    assert call.status == "ok", call.error
    return call.result


def convert(amount: float, rate: float, currency: str = "SEK") -> str:
    """Convert an amount.

    Args:
        amount: How much.
        rate: The exchange rate.
        currency: The currency to convert to.
    """
    return f"{amount * rate:.2f} {currency}"


def test_a_partial_leaves_its_bound_parameters_out_of_the_schema() -> None:
    t = made(functools.partial(convert, rate=2.0))
    assert t.name == "convert"
    assert t.description == "Convert an amount."
    assert properties(t) == {
        "amount": {"type": "number", "description": "How much."},
        "currency": {"type": "string", "description": "The currency to convert to.", "default": "SEK"},
    }  # fmt: skip
    assert t.required == ("amount",)
    assert called(t, {"amount": 3}) == "6.00 SEK"
    positional = made(functools.partial(convert, 10.0), name="convert_ten")
    assert list(properties(positional)) == ["rate", "currency"]
    assert called(positional, {"rate": 0.5}) == "5.00 SEK"


class Weather:
    """Report the weather for a city."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, city: str, days: int = 1) -> str:
        """Ignored: the class's docstring describes the tool.

        Args:
            city: The city.
            days: How many days ahead.
        """
        return f"{self.prefix}: {city} for {days}"


def test_a_callable_object_reads_its_call_method() -> None:
    t = made(Weather("sunny"))
    assert (t.name, t.description) == ("Weather", "Report the weather for a city.")
    assert properties(t) == {
        "city": {"type": "string", "description": "The city."},
        "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
    }
    assert called(t, {"city": "Oslo"}) == "sunny: Oslo for 1"


class Calculator:
    def __init__(self, offset: int) -> None:
        self.offset = offset

    def add(self, a: int, b: int = 5) -> int:
        """Add two numbers and the offset."""
        return a + b + self.offset

    @classmethod
    def scaled(cls, a: int, b: int = 5) -> int:
        """Multiply two numbers."""
        return a * b

    @staticmethod
    def halved(a: int, b: int = 5) -> float:
        """Halve a sum."""
        return (a + b) / 2

    async def later(self, a: int) -> int:
        """Add the offset, later."""
        await asyncio.sleep(0)
        return a + self.offset


@pytest.mark.parametrize(
    ("method", "name", "result"),
    [
        (Calculator(100).add, "add", "103"),
        (Calculator.scaled, "scaled", "2"),
        (Calculator.halved, "halved", "1.5"),
    ],
)
def test_methods_classmethods_and_staticmethods(method: Any, name: str, result: str) -> None:
    t = made(method)
    assert t.name == name
    assert properties(t) == {"a": {"type": "integer"}, "b": {"type": "integer", "default": 5}}
    assert t.required == ("a",)
    assert called(t, {"a": 1, "b": 2}) == result


def test_an_async_bound_method_is_an_async_tool() -> None:
    t = made(Calculator(10).later)
    assert t.is_async
    assert called(t, {"a": 1}) == "11"


def test_a_staticmethod_object_decorates_and_a_classmethod_object_says_how() -> None:
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    t = made(staticmethod(double))  # type: ignore[arg-type]
    assert (t.name, called(t, {"x": 4})) == ("double", "8")
    with pytest.raises(TypeError) as info:
        tool(classmethod(double))  # type: ignore[arg-type]
    assert str(info.value) == (
        "tool: fn must be a function, got a classmethod object; decorate the method as its "
        "class reaches it: tool(TheClass.method)."
    )


def test_a_return_hint_that_names_a_type_checking_import_does_not_stop_decoration() -> None:
    def price(isin: str) -> NeverImported:  # a name that only exists for type checkers
        """Price."""
        return 1.5  # type: ignore[return-value]

    t = made(price)
    assert properties(t) == {"isin": {"type": "string"}}
    assert called(t, {"isin": "X"}) == "1.5"


def test_annotated_metadata_is_never_evaluated() -> None:
    # openai-agents' Annotated descriptions, with string annotations (this module's
    # ``from __future__ import annotations``): the text must not be read as code.
    def add(
        a: Annotated[int, "First number to add"],
        b: Annotated[int, "Second number to add"],
    ) -> int:
        return a + b

    assert properties(made(add)) == {
        "a": {"type": "integer", "description": "First number to add"},
        "b": {"type": "integer", "description": "Second number to add"},
    }


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "def f(x: int, *items: int) -> None: ...",
            "tool f: parameter 'items' must be one a model can pass, got *items (a model sends "
            "named arguments); take a list instead: items: list[...].",
        ),
        (
            "def f(x: int, **options: str) -> None: ...",
            "tool f: parameter 'options' must be one a model can pass, got **options (a model "
            "sends only the arguments the schema names); name each parameter, or take a dict: "
            "options: dict[str, ...].",
        ),
        (
            "def f(x: int, /, y: int) -> None: ...",
            "tool f: parameter 'x' must be one a model can pass, got a positional-only one (a "
            "model sends named arguments); remove the '/' from the signature.",
        ),
    ],
    ids=["args", "kwargs", "positional-only"],
)
def test_parameters_a_model_cannot_pass_say_what_to_write_instead(
    source: str, message: str
) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(TypeError) as info:
        tool(namespace["f"])
    assert str(info.value) == message


def test_a_partial_that_binds_a_positional_only_parameter_decorates() -> None:
    def scale(factor: float, /, x: float) -> float:
        """Scale."""
        return factor * x

    t = made(functools.partial(scale, 3.0))
    assert properties(t) == {"x": {"type": "number"}}
    assert called(t, {"x": 2}) == "6.0"


@dataclasses.dataclass
class Greeter:
    greeting: str

    def __call__(self, name: str) -> str:
        """Greet someone by name."""
        return f"{self.greeting}, {name}"


def test_a_callable_dataclass_is_described_by_its_call_not_its_generated_docstring() -> None:
    t = made(Greeter("Hello"))
    assert (t.name, t.description) == ("Greeter", "Greet someone by name.")
    assert called(t, {"name": "Ada"}) == "Hello, Ada"
