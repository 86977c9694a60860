"""A person's decisions in the viewer's data: each call's decision, the status filter's tags and
the jump to the first denied call (viewer.js reads the same columns and bits)."""

from __future__ import annotations

from budgetloop import replay, run
from budgetloop_widgets import CompareView, TraceView
from budgetloop_widgets._log import BITS, flags, jump_targets
from tests.core.test_approvals import THREE, decided_run, model, payments
from tests.widgets.test_widgets import data_of


def test_the_page_gets_each_calls_decision_and_a_jump_to_the_first_denied() -> None:
    result = decided_run()
    data = data_of(TraceView(result))
    strings = data["strings"]
    run = data["runs"][0]
    calls = run["calls"]
    assert calls["st"] == [0, 0, 3]  # ok, ok, denied
    assert calls["ap"] == [0, 2, 3]  # none, edited, denied
    assert strings[calls["out"][2]] == "denied: not run (reason: over the limit)"
    assert strings[calls["args"][1]] == '{"to": "bob", "amount": 900.0}'  # as it ran
    assert strings[calls["raw"][1]] == '{"to": "bob", "amount": 9000}'  # as the model wrote
    assert run["steps"]["fl"][0] == BITS["ok"] | BITS["denied"] | BITS["edited"]
    tagged = {name for name, bit in BITS.items() if flags(result.steps[0]) & bit}
    assert tagged == {"ok", "denied", "edited"}  # what the status filter matches
    assert run["jumps"]["first denied"] == 0
    assert jump_targets(result.steps, stopped=True)["first denied"] == 0
    view = TraceView(result)
    assert view.jump("first denied") == 0


def test_an_approve_that_raised_shows_what_it_raised() -> None:
    def approve(call: object) -> bool:
        raise RuntimeError("the approval service is down")

    result = run(model(THREE), "pay", tools=payments([]), approve=approve)
    data = data_of(TraceView(result))
    out = data["runs"][0]["calls"]["out"]
    assert data["strings"][out[1]] == (
        "denied: not run (reason: the approval failed (RuntimeError))\n"
        "approve raised RuntimeError: the approval service is down"
    )


def test_compare_view_sets_a_denial_beside_the_approval() -> None:
    result = decided_run()
    other = replay(result, approve=lambda call: True)
    data = data_of(CompareView(result, other))
    assert [r["calls"]["ap"] for r in data["runs"]] == [[0, 2, 3], [0, 1, 1]]
