"""The public API is what ``__all__`` says, sorted, and nothing private leaks into it."""

from __future__ import annotations

import budgetloop


def test_all_is_sorted_and_complete() -> None:
    assert budgetloop.__all__ == sorted(budgetloop.__all__)
    public = {
        name
        for name, value in vars(budgetloop).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("budgetloop")
    }
    assert public == set(budgetloop.__all__)


def test_public_objects_say_they_come_from_the_package() -> None:
    for name in budgetloop.__all__:
        assert hasattr(budgetloop, name), name
