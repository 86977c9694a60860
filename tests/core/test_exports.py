"""The public API is what ``__all__`` says, sorted; every export says it comes from budgetloop,
and the entry points have their full signatures."""

from __future__ import annotations

import inspect

import budgetloop


def test_all_is_sorted_and_complete() -> None:
    assert budgetloop.__all__ == sorted(budgetloop.__all__)
    public = {
        name
        for name, value in vars(budgetloop).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", "").startswith("budgetloop")
    }
    assert public == set(budgetloop.__all__)


def test_every_export_says_it_comes_from_budgetloop() -> None:
    wrong = {
        name: value.__module__
        for name in budgetloop.__all__
        if (value := getattr(budgetloop, name)).__module__
        not in ("budgetloop", "budgetloop.ledger")
    }
    assert wrong == {}
    assert repr(budgetloop.Budget) == "<class 'budgetloop.Budget'>"


def test_the_entry_points_are_plain_functions_with_the_same_options() -> None:
    run, start = inspect.signature(budgetloop.run), inspect.signature(budgetloop.start)
    assert run.return_annotation == "Result"
    assert start.return_annotation == "Session"
    assert inspect.signature(budgetloop.arun).return_annotation == "Result"
    assert inspect.signature(budgetloop.astart).return_annotation == "AsyncSession"
    assert inspect.iscoroutinefunction(budgetloop.arun)
    names = list(run.parameters)
    assert names[:2] == ["complete", "prompt"]
    assert "budget" in names
    assert "trace_path" in names
    for fn in (budgetloop.start, budgetloop.arun, budgetloop.astart):
        assert list(inspect.signature(fn).parameters) == names, fn
    assert not hasattr(budgetloop.run, "step")  # a function, not a copy of Session


def test_the_public_modules() -> None:
    from budgetloop import breakpoints, ledger

    assert callable(breakpoints.on_tool)
    assert ledger.MemoryLedger is budgetloop.MemoryLedger


def test_printable_is_public_for_the_views_to_share() -> None:
    shown = budgetloop.printable("a\u202eb\u200bc\x1b[0m\nd")
    assert shown == "a\\u202eb\\u200bc\\x1b[0m\\nd"
    assert budgetloop.printable("x\ny", keep_newlines=True) == "x\ny"
