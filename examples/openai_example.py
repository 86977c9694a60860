"""budgetloop on a real OpenAI client: pip install 'budgetloop[adapters]', set OPENAI_API_KEY.

python examples/openai_example.py
"""

import os
import sys

import openai

from budgetloop import Budget, Price, run
from budgetloop.adapters import openai_chat

if not os.environ.get("OPENAI_API_KEY"):
    sys.exit("examples/openai_example.py: set OPENAI_API_KEY to run it against OpenAI.")

# Rates to check against the provider's price list before relying on the ceiling.
model = openai_chat(openai.OpenAI(), "gpt-4o-mini", max_tokens=512, price=Price(0.15, 0.60))
result = run(model, "In one sentence: what is a token?", budget=Budget(max_cost_usd=0.01))
print(result.stop, result.answer, f"${result.cost_usd:.6f}", sep="\n")
