"""budgetloop on a real Anthropic client: pip install 'budgetloop[adapters]', set
ANTHROPIC_API_KEY.

python examples/anthropic_example.py
"""

import os
import sys

import anthropic

from budgetloop import Budget, Price, run
from budgetloop.adapters import anthropic_messages

if not os.environ.get("ANTHROPIC_API_KEY"):
    sys.exit("examples/anthropic_example.py: set ANTHROPIC_API_KEY to run it against Anthropic.")

# Rates to check against the provider's price list before relying on the ceiling.
model = anthropic_messages(
    anthropic.Anthropic(), "claude-haiku-4-5", max_tokens=512, price=Price(1.0, 5.0)
)
result = run(model, "In one sentence: what is a token?", budget=Budget(max_cost_usd=0.01))
print(result.stop, result.answer, f"${result.cost_usd:.6f}", sep="\n")
