"""budgetloop on OpenAI's Responses API, with a reasoning model calling a tool:
pip install 'budgetloop[adapters]', set OPENAI_API_KEY.

python examples/openai_responses_example.py
"""

import os
import sys

import openai

from budgetloop import Budget, Price, run, tool
from budgetloop.adapters import openai_responses

if not os.environ.get("OPENAI_API_KEY"):
    sys.exit("examples/openai_responses_example.py: set OPENAI_API_KEY to run it against OpenAI.")


@tool
def population(city: str) -> int:
    """The number of people living in a city.

    Args:
        city: the city's name
    """
    return {"stockholm": 984_748, "oslo": 717_710}.get(city.lower(), 0)


# reasoning={...} marks a reasoning model: its reasoning goes back with each tool result.
# Rates to check against the provider's price list before relying on the ceiling.
model = openai_responses(
    openai.OpenAI(),
    "gpt-5-mini",
    max_tokens=2_000,
    price=Price(0.25, 2.00, cache_read_per_mtok=0.025),
    reasoning={"effort": "low"},
)
result = run(
    model,
    "Which has more people, Stockholm or Oslo? Use the tool for both.",
    tools=[population],
    budget=Budget(max_steps=4, max_cost_usd=0.05),
)
print(result.format())
thinking = sum(s.usage.reasoning_tokens for s in result.steps if s.usage is not None)
print(f"reasoning tokens: {thinking}")
