"""The charts' per-step figures, kept across refreshes, equal a fresh pass."""

from __future__ import annotations

from budgetloop import Completion, Price, ScriptedModel, Step, ToolCall, start, tool
from budgetloop.display import Tally, tally
from budgetloop_widgets._series import series_of
from budgetloop_widgets._views import charts_html


@tool
def read(topic: str) -> str:
    """Read."""
    return f"notes on {topic}"


def figures(made: Tally) -> tuple[list[int], list[float], list[int]]:
    return made.tokens, made.spent, made.calls


def fresh(steps: tuple[Step, ...]) -> tuple[list[int], list[float], list[int]]:
    return figures(tally(steps))


def test_figures_follow_a_growing_run_a_fork_and_a_shorter_one() -> None:
    turn = Completion(
        text="reading",
        tool_calls=[ToolCall("read", {"topic": "a"}), ToolCall("nope", {})],
    )
    model = ScriptedModel([turn], price=Price(3.0, 15.0), max_output_tokens=50, repeat_last=True)
    session = start(model, "Go.", tools=[read], repeat_limit=None)
    seen = []
    for _ in range(12):
        session.step()
        steps = session.result.steps
        assert figures(series_of(steps)) == fresh(steps)
        seen.append(steps)
    assert figures(series_of(seen[3])) == fresh(seen[3])  # shorter than the figures kept
    fork = session.fork(at=5)
    fork.step()
    assert fork.result.steps[:5] == seen[-1][:5]
    assert figures(series_of(fork.result.steps)) == fresh(fork.result.steps)
    assert figures(series_of(())) == ([], [], [])
    result = session.result
    assert len(result.steps) == 10  # max_steps by default; a step after that stops the run
    # counted by the core: the 9 calls of a tool that exists ran; the 9 of 'nope' never did
    assert (session.used.tool_calls, len(result.tool_calls)) == (9, 18)
    for steps in (seen[0], seen[-1], fork.result.steps):  # any order of runs
        assert charts_html(steps, session.budget) == charts_html(list(steps), session.budget)
