"""Write ``trace.json``, the saved run that ``inspect_trace.ipynb`` opens.

python notebooks/make_trace.py

The run is scripted and its clock is fake (a quarter second a reading), so the file is the same
every time it is written: nbval compares the notebook's printed outputs against it.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, run, tool

HERE = Path(__file__).resolve().parent

NOTES = {
    "tokens": "A token is about four characters of English. ",
    "budgets": "A ceiling is checked before a turn is sent, against the worst case. ",
    "context": "Every turn resends the whole context, so input grows each turn. ",
}


@tool
def read_notes(topic: str, pages: int) -> str:
    """Read pages of the team's notes on a topic.

    Args:
        topic: one of tokens, budgets, context
        pages: how many pages to read
    """
    if topic not in NOTES:
        raise LookupError(f"no notes on {topic!r}; try one of {', '.join(NOTES)}")
    return NOTES[topic] * 6 * pages


def script() -> list[Completion]:
    """A model that never settles: it keeps reading, a little more each turn."""
    turns = [
        Completion(
            text="Reading the notes on tokens and budgets.",
            tool_calls=[
                ToolCall("read_notes", {"topic": "tokens", "pages": 1}),
                ToolCall("read_notes", '{"topic": "budgets", "pages": "1"}'),
            ],
        ),
        Completion(
            text="Checking the weather notes too.",
            tool_calls=[ToolCall("read_notes", {"topic": "weather", "pages": 1})],
        ),
    ]
    topics = itertools.cycle(NOTES)
    for pages in range(1, 30):
        turns.append(
            Completion(
                text=f"Not sure yet; reading {pages} more page(s).",
                tool_calls=[ToolCall("read_notes", {"topic": next(topics), "pages": pages})],
            )
        )
    return turns


def fake_clock() -> float:
    fake_clock.now += 0.25  # type: ignore[attr-defined]
    return fake_clock.now  # type: ignore[attr-defined,no-any-return]


fake_clock.now = 0.0  # type: ignore[attr-defined]


def main() -> None:
    model = ScriptedModel(script(), price=Price(3.00, 15.00), max_output_tokens=500)
    result = run(
        model,
        "Why do long agent runs cost so much? Read the notes, then answer.",
        tools=[read_notes],
        budget=Budget(max_steps=30, max_cost_usd=0.25),
        clock=fake_clock,
        # A tool's traceback names this file; the trace keeps the path relative to the repo,
        # so the committed trace says nothing about the machine it was made on.
        redact=lambda text: text.replace(str(HERE.parent) + os.sep, ""),
    )
    (HERE / "trace.json").unlink(missing_ok=True)  # regenerated on purpose: nothing to keep
    result.save(HERE / "trace.json")
    print(f"wrote trace.json: {len(result.steps)} steps, stop={result.stop}")


if __name__ == "__main__":
    main()
