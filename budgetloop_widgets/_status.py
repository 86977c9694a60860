"""The panel's status lines: how a run ended (every ``Stop``, in words), a pause, a shared
ledger's totals, and a traceback folded under its one-line message. Pure functions."""

from __future__ import annotations

from html import escape
from typing import Any

from budgetloop import Result, Stop

from ._text import plural, preview, text, usd

# What each stop means, in the words of the README's table; a test holds that every Stop has one.
STOP_WORDS: dict[Stop, str] = {
    Stop.ANSWERED: "the model replied with no tool calls",
    Stop.MAX_STEPS: "the step ceiling (max_steps) was reached; a step is one model call",
    Stop.MAX_SECONDS: "the wall-clock ceiling (max_seconds) passed",
    Stop.MAX_COST_USD: (
        "the next turn's worst case would have taken spend past max_cost_usd, so the model was "
        "not called"
    ),
    Stop.MAX_TOOL_CALLS: "the next batch would have taken executed tool calls past max_tool_calls",
    Stop.REPEATED: (
        "the model kept making the same tool calls, or a cycle of them (repeat_limit, cycle_limit)"
    ),
    Stop.MODEL_ERROR: "the model raised, or returned something that is not a Completion",
    Stop.SHARED_BUDGET: (
        "the shared ledger refused to reserve the next turn's worst case: its limit is spent "
        "or reserved (by this run or others)"
    ),
}


def stop_words(stop: Stop) -> str:
    """What ``stop`` means, in one sentence."""
    return STOP_WORDS.get(stop, f"stopped: {stop.value}")


def imported_html(result: Result) -> str:
    """For a run imported from another framework: where it came from and what its source
    lacks (nothing for budgetloop's own runs)."""
    if result.imported is None:
        return ""
    return f'<div class="bl-imported">{text(result.imported.describe())}</div>'


def stop_html(result: Result) -> str:
    """How the run ended, impossible to miss; a quiet line while it is still going. An
    imported run says first where it came from and what its source lacks."""
    steps = plural(len(result.steps), "step")
    if result.stop is None and result.imported is not None:
        return (
            f'{imported_html(result)}<div class="bl-stop bl-unanswered"><div class="bl-stop-head">'
            f"Ended without an answer · {steps} taken · {_spent(result)}</div><div>the source "
            "does not say why: its last model reply asked for tools</div></div>"
        )
    if result.stop is None:
        return f'<div class="bl-running">running: {steps} taken</div>'
    answered = result.answered
    verdict = "answered" if answered else "did NOT answer"
    parts = [
        imported_html(result),
        f'<div class="bl-stop {"bl-answered" if answered else "bl-unanswered"}">',
        f'<div class="bl-stop-head">Run ended: {escape(result.stop.value)} — {verdict}'
        f" · {steps} taken · {_spent(result)}</div>",
        f'<div class="bl-stop-why">{escape(stop_words(result.stop))}</div>',
    ]
    if result.detail:
        parts.append(f"<div>{text(result.detail)}</div>")
    if result.error:
        parts.append(f"<div>error: {text(result.error)}</div>")
    if answered and result.answer:
        parts.append(f'<pre class="bl-text">{text(preview(result.answer))}</pre>')
    parts.append("</div>")
    return "".join(parts)


def _spent(result: Result) -> str:
    return "cost unknown" if result.cost_usd is None else f"{usd(result.cost_usd)} spent"


def running_html(steps: int) -> str:
    """The line shown while a Run goes on in the background."""
    return (
        f'<div class="bl-running bl-live">Run going: {plural(steps, "step")} taken; '
        "Pause stops it after the turn in flight</div>"
    )


def paused_html(steps: int, why: str) -> str:
    """The line shown when a Run paused: the run is not over, Run or Step goes on."""
    return (
        f'<div class="bl-paused">paused after {plural(steps, "step")} ({text(why)}); '
        "the run is not over: Run or Step goes on</div>"
    )


def traceback_html(traceback: str | None) -> str:
    """A traceback folded under a one-line summary; nothing when there is none."""
    if not traceback:
        return ""
    lines = traceback.rstrip("\n").count("\n") + 1
    return (
        f'<details class="bl-traceback"><summary>traceback ({plural(lines, "line")})</summary>'
        f"<pre>{text(traceback)}</pre></details>"
    )


def error_html(title: str, detail: str) -> str:
    """An exception raised while driving the session: its one line, its traceback folded."""
    return f'<div class="bl-error"><b>{text(title)}</b>{traceback_html(detail)}</div>'


def ledger_html(ledger: Any) -> str:
    """A shared ledger's spent, reserved and limit (all runs sharing it, this period)."""
    name = escape(type(ledger).__name__)
    try:
        spent, reserved, limit = ledger.spent_usd(), ledger.reserved_usd(), ledger.limit_usd
    except Exception as exc:  # a store that cannot be reached: say so where the numbers go
        return (
            f'<div class="bl-ledger"><b>shared ledger</b> ({name}): could not be read: '
            f"{text(type(exc).__name__)}: {text(exc)}</div>"
        )
    period = getattr(ledger, "period", None)
    span = f"this {escape(str(period))} (UTC)" if period else "no period"
    return (
        f'<div class="bl-ledger"><b>shared ledger</b> ({name}, every run sharing it, {span}): '
        f"spent {usd(spent)} · reserved {usd(reserved)} · limit {usd(limit)}</div>"
    )
