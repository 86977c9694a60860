"""Argument checking: what passes, what is coerced, and the words a model gets back."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from budgetloop import ArgumentError, tool
from budgetloop._schema._check import check_arguments


@tool
def book(
    flight: str,
    seats: int,
    price: float,
    tags: list[str],
    meta: dict[str, int],
    cabin: Literal["economy", "business"] = "economy",
    note: str | None = None,
    extra: Any = None,
    window: bool = False,
) -> str:
    """Book."""
    return "ok"


GOOD = {"flight": "SK1", "seats": 2, "price": 10.5, "tags": ["a"], "meta": {"k": 1}}


def check(**changes: Any) -> tuple[dict[str, Any], list[str]]:
    return check_arguments(book, {**GOOD, **changes})


def test_valid_arguments_pass_unchanged() -> None:
    assert check() == (GOOD, [])
    assert check(note=None, extra={"any": [1]}, window=True, cabin="business")[0]["extra"] == {
        "any": [1]
    }


def test_json_string_arguments_are_parsed() -> None:
    assert check_arguments(book, '{"flight": "SK1", "seats": 2, "price": 1, "tags": [], "meta": {}}')[0] == {
        "flight": "SK1", "seats": 2, "price": 1.0, "tags": [], "meta": {},
    }  # fmt: skip


def test_empty_string_means_no_arguments() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert check_arguments(ping, "") == ({}, [])
    assert check_arguments(ping, "{}") == ({}, [])


@pytest.mark.parametrize(
    ("changes", "coerced", "path"),
    [
        ({"price": "118.4"}, 118.4, "book.price"),
        ({"price": "-2e3"}, -2000.0, "book.price"),
        ({"seats": "3"}, 3, "book.seats"),
        ({"meta": {"k": "7"}}, {"k": 7}, "book.meta.k"),
    ],
)
def test_a_number_written_as_a_string_is_coerced(
    changes: dict[str, Any], coerced: Any, path: str
) -> None:
    args, paths = check(**changes)
    key = next(iter(changes))
    assert args[key] == coerced
    assert paths == [path]


def test_integral_float_for_int_and_int_for_float() -> None:
    args, paths = check(seats=3.0, price=7)
    assert (args["seats"], type(args["seats"])) == (3, int)
    assert (args["price"], type(args["price"])) == (7.0, float)
    assert paths == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"price": "five"}, "book.price: expected number, got str"),
        ({"seats": "3.5"}, "book.seats: expected integer, got str"),
        ({"seats": 3.5}, "book.seats: expected integer, got 3.5"),
        ({"seats": True}, "book.seats: expected integer, got bool"),
        ({"price": "nan"}, "book.price: expected number, got str"),
        ({"flight": 12}, "book.flight: expected string, got int"),
        ({"window": "true"}, "book.window: expected boolean, got str"),
        ({"tags": "a"}, "book.tags: expected array, got str"),
        ({"tags": ["a", 2]}, "book.tags[1]: expected string, got int"),
        ({"meta": {"k": "x"}}, "book.meta.k: expected integer, got str"),
        ({"meta": []}, "book.meta: expected object, got list"),
        ({"cabin": "first"}, 'book.cabin: expected one of "economy", "business", got "first"'),
        ({"note": 5}, "book.note: expected string, got int"),
        ({"flight": None}, "book.flight: expected string, got null"),
        ({"zzz": 1}, "book.zzz: unknown argument; expected flight, seats, price, tags, meta, cabin, note, extra, window"),
    ],
)  # fmt: skip
def test_errors_name_the_argument_what_was_expected_and_what_arrived(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ArgumentError) as info:
        check(**changes)
    assert str(info.value) == message


def test_missing_argument_and_bad_json() -> None:
    with pytest.raises(ArgumentError, match=r"^book\.seats: missing required argument$"):
        check_arguments(book, {"flight": "x", "price": 1, "tags": [], "meta": {}})
    with pytest.raises(
        ArgumentError, match=r"^book: arguments are not valid JSON \(.*\); send a JSON object$"
    ):
        check_arguments(book, "{'single': 'quotes'}")
    with pytest.raises(
        ArgumentError, match=r"^book: arguments must be a JSON object, got number$"
    ):
        check_arguments(book, "42")


def test_enum_does_not_confuse_true_and_one() -> None:
    @tool
    def pick(n: Literal[1, 2]) -> int:
        """Pick."""
        return n

    with pytest.raises(ArgumentError, match="expected one of 1, 2, got true"):
        check_arguments(pick, {"n": True})
