"""The README's example, offline: a scripted model, two tools, a budget.

python examples/offline.py
"""

from budgetloop import Budget, Completion, Price, ScriptedModel, ToolCall, run, tool

PRICES = {"SE0000108656": 118.4}


@tool
def price(isin: str) -> float:
    """Look up the last price for an instrument.

    Args:
        isin: the twelve-character identifier
    """
    if isin not in PRICES:
        raise LookupError(f"{isin} is not in the price list")
    return PRICES[isin]


@tool
def convert(amount: float, rate: float) -> float:
    """Convert an amount of money at an exchange rate.

    Args:
        amount: the amount in the source currency
        rate: units of the target currency per unit of the source currency
    """
    return round(amount * rate, 2)


# What a model would say, turn by turn. Usage is counted from what the loop sends, so it grows
# with the context just as a real provider's does.
complete = ScriptedModel(
    [
        Completion(
            text="Looking both of them up.",
            tool_calls=[
                ToolCall("price", {"isin": "SE0000108656"}),
                ToolCall("price", {"isin": "SE0000000000"}),
            ],
        ),
        Completion(
            text="One of those is unknown. Converting the one that resolved.",
            tool_calls=[ToolCall("convert", {"amount": "118.4", "rate": 0.091})],
        ),
        "SE0000108656 is 118.40 SEK, about 10.77 USD.",
    ],
    price=Price(input_per_mtok=1.25, output_per_mtok=9.00),
    max_output_tokens=500,
)

result = run(
    complete,
    "What is SE0000108656 worth?",
    tools=[price, convert],
    budget=Budget(max_steps=6, max_cost_usd=0.05),
)

print(result.format())
