"""Docstrings as users write them: Google, NumPy and Sphinx parameter sections fill the
parameters' descriptions; the description is the text before the first section.

Most cases restate the docstring tests of smolagents, pydantic-ai and openai-agents: their
docstring shape and expected descriptions, written again here with functions of our own.
"""

from __future__ import annotations

from typing import Annotated

import pytest

from budgetloop._schema._tool import parse_docstring
from tests.schema_support import made, properties


def descriptions(fn: object) -> dict[str, str | None]:
    t = made(fn)  # type: ignore[arg-type]
    return {name: p.get("description") for name, p in properties(t).items()}


# -- Google --------------------------------------------------------------------------------------


def test_google_args_with_a_blank_line_before_them() -> None:
    # pydantic-ai's google docstring: a one-line summary, a blank line, Args.
    def find(code: int, region: str) -> str:
        """Find a postal code, once.

        Args:
            code: The code to look up.
            region: The region it is in.
        """
        return ""

    t = made(find)
    assert t.description == "Find a postal code, once."
    assert descriptions(find) == {"code": "The code to look up.", "region": "The region it is in."}


def test_google_args_right_under_the_summary_give_the_same_schema() -> None:
    # openai-agents: a summary followed by Args: with no blank line parses as with one.
    def tight(city: str, units: str) -> str:
        """Weather for a city.
        Args:
            city: Which city.
            units: Which units.
        """
        return ""

    def spaced(city: str, units: str) -> str:
        """Weather for a city.

        Args:
            city: Which city.
            units: Which units.
        """
        return ""

    assert made(tight).description == made(spaced).description == "Weather for a city."
    assert made(tight).schema["parameters"] == made(spaced).schema["parameters"]
    assert descriptions(tight) == {"city": "Which city.", "units": "Which units."}


def test_google_args_right_after_another_section_body() -> None:
    # openai-agents: Args: directly under a Note's body, no blank line between.
    def weather(city: str, units: str) -> str:
        """Weather for a city.

        Note:
            Answers are cached for an hour.
        Args:
            city: Which city.
            units: Which units.
        """
        return ""

    t = made(weather)
    assert t.description == "Weather for a city."
    assert descriptions(weather) == {"city": "Which city.", "units": "Which units."}


def test_google_description_on_the_next_line_keeps_every_later_argument() -> None:
    # The case: "city:" alone, its text on the lines under it, used to end the section.
    def weather(city: str, units: str, days: int) -> str:
        """Weather for a city.

        Args:
            city:
                The city to report on,
                by its English name.
            units: Celsius or Fahrenheit.
            days:
                How many days ahead.
        """
        return ""

    assert descriptions(weather) == {
        "city": "The city to report on, by its English name.",
        "units": "Celsius or Fahrenheit.",
        "days": "How many days ahead.",
    }


def test_google_typed_names_and_continuation_lines() -> None:
    # smolagents: "x (int): ..." keeps only the text; a complex type in brackets too.
    def calculate(x: int, data: dict[str, list[int]]) -> float:
        """Work a number out.

        Args:
            x (int): A whole number, its type
                written in the docstring too.
            data (Dict[str, List[int]]): Lists of numbers by name.

        Returns:
            float: The result.
        """
        return 0.0

    assert descriptions(calculate) == {
        "x": "A whole number, its type written in the docstring too.",
        "data": "Lists of numbers by name.",
    }
    assert made(calculate).description == "Work a number out."


def test_section_words_inside_the_description_are_text() -> None:
    # smolagents: "Args:" or "Returns:" in the middle of a line are not sections.
    def shout(value: str) -> str:
        """A description that mentions Args: and Returns: in passing.

        Args:
            value: Text to shout.

        Returns:
            str: The text, louder.
        """
        return value

    t = made(shout)
    assert t.description == "A description that mentions Args: and Returns: in passing."
    assert descriptions(shout) == {"value": "Text to shout."}


def test_google_returns_section_does_not_reach_the_description() -> None:
    # pydantic-ai folds Returns into the description; budgetloop leaves it out (by choice).
    def echo(x: int) -> str:
        """Say a number back.

        Args:
            x: The number.

        Returns:
            str: It, as text.
        """
        return str(x)

    assert made(echo).description == "Say a number back."
    assert descriptions(echo) == {"x": "The number."}


def test_only_an_args_section_leaves_the_description_empty() -> None:
    # pydantic-ai's docstring with no body: the description is empty, the parameters are not.
    def pair(foo: int, bar: str) -> str:
        """
        Args:
            foo: The first.
            bar: The second.
        """
        return ""

    t = made(pair)
    assert t.description == ""
    assert descriptions(pair) == {"foo": "The first.", "bar": "The second."}


def test_the_description_is_every_paragraph_before_the_first_section() -> None:
    def report(day: str) -> str:
        """Make the daily report.

        It covers sales and returns,
        by region.

        Args:
            day: The day, ISO format.
        """
        return ""

    assert made(report).description == (
        "Make the daily report.\n\nIt covers sales and returns, by region."
    )


# -- NumPy ---------------------------------------------------------------------------------------


def test_numpy_parameters() -> None:
    # pydantic-ai's numpy docstring, keyword-only parameters included.
    def find(*, code: int, region: str) -> str:
        """Find a postal code.

        Parameters
        ----------
        code : int
            The code to look up.
        region : str
            The region it is in,
            in full.

        Returns
        -------
        str
            The place.
        """
        return ""

    t = made(find)
    assert t.description == "Find a postal code."
    assert descriptions(find) == {
        "code": "The code to look up.",
        "region": "The region it is in, in full.",
    }


def test_numpy_two_names_on_one_line_and_a_name_without_a_type() -> None:
    def move(x: float, y: float, label: str) -> None:
        """Move a point.

        Parameters
        ----------
        x, y : float
            Where to.
        label
            What to call it.
        """

    assert descriptions(move) == {"x": "Where to.", "y": "Where to.", "label": "What to call it."}


# -- Sphinx --------------------------------------------------------------------------------------


def test_sphinx_params_types_and_returns() -> None:
    # pydantic-ai's sphinx docstrings: :param:, with :type:, :rtype: and :return: around it.
    def scale(x: int, factor: float) -> str:
        """Scale a number.

        :param x: The number to scale.
        :type x: int
        :param float factor: How much,
            as a float.
        :rtype: str
        :return: The scaled number as text.
        """
        return ""

    t = made(scale)
    assert t.description == "Scale a number."
    assert descriptions(scale) == {"x": "The number to scale.", "factor": "How much, as a float."}


# -- names with stars, and what the signature and docstring disagree on ---------------------------


@pytest.mark.parametrize(
    "doc",
    [
        "Add.\n\nArgs:\n    base: The start.\n    *numbers: What to add.\n",
        "Add.\n\nParameters\n----------\nbase : int\n    The start.\n*numbers : float\n    What to add.\n",
        "Add.\n\n:param base: The start.\n:param numbers: What to add.\n",
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_a_documented_name_with_stars_describes_the_parameter_of_that_name(doc: str) -> None:
    # openai-agents: "*numbers:" documents the parameter named numbers, in all three styles.
    def add(base: int, numbers: list[float]) -> float:
        return 0.0

    add.__doc__ = doc
    assert descriptions(add) == {"base": "The start.", "numbers": "What to add."}


def test_documented_but_absent_and_present_but_undocumented_are_no_error() -> None:
    def lookup(code: int, region: str = "") -> str:
        """Look a code up.

        Args:
            code: The code.
            country: Documented, but no such parameter.
        """
        return ""

    assert descriptions(lookup) == {"code": "The code.", "region": None}


def test_the_docstring_wins_over_an_annotated_description() -> None:
    # openai-agents: a docstring description is used over Annotated metadata; Annotated fills
    # in where the docstring says nothing. (pydantic-ai prefers the Field's description.)
    def add(
        a: Annotated[int, "From Annotated, for a"],
        b: Annotated[int, "From Annotated, for b"],
    ) -> int:
        """Add two numbers.

        Args:
            a: From the docstring.
        """
        return a + b

    assert descriptions(add) == {"a": "From the docstring.", "b": "From Annotated, for b"}


def test_parse_docstring_on_an_empty_docstring() -> None:
    assert parse_docstring("") == ("", {})
