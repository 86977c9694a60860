"""The panel's status lines: how a run ended (every ``Stop``, in words), a pause, a shared
ledger's totals, and a traceback folded under its one-line message. Pure functions."""

from __future__ import annotations

from html import escape
from typing import Any

from budgetloop import Result
from budgetloop.display import HeldBatch, spent_text, stop_means

from ._text import plural, preview, text, usd

stop_words = stop_means  # what each stop means, in the core's words (``budgetloop.display``)


def spent_words(result: Result, carried: float | None = None) -> str:
    """What the run spent; for a fork, how much of it was carried from the run it came from
    (``carried``: ``result.carried_usd``, when it is known already). The core's words and
    figures (``budgetloop.display.spent_text``)."""
    if result.cost_usd is None:
        return spent_text(None, 0.0)
    return spent_text(result.cost_usd, result.carried_usd if carried is None else carried)


def _price_line(result: Result) -> list[tuple[str, str]]:
    """Where the run's price came from, when it records that (a catalog's price)."""
    price = result.price
    if price is None or price.source is None:
        return []
    return [("price", f"priced at: {price.describe()}")]


def stop_lines(result: Result, carried: float | None = None) -> list[tuple[str, str]]:
    """How the run ended, line by line, each with its kind: ``head`` (the stop, the steps,
    the spend), ``why`` (what the stop means), ``price`` (where a catalog's price came from),
    ``detail``, ``error``, ``output`` (a typed answer, ``output=``: said before its JSON) and
    ``answer``."""
    taken = f"{plural(len(result.steps), 'step')} taken · {spent_words(result, carried)}"
    source = [] if result.imported is None else [("imported", result.imported.describe())]
    if result.stop is None and result.imported is not None:
        return [
            *source,
            ("head", f"Ended without an answer: {taken}"),
            ("why", "the source does not say why: its last model reply asked for tools"),
            *_price_line(result),
        ]
    if result.stop is None:
        return [
            ("head", f"No stop recorded: {taken}"),
            ("why", "the run had not ended when this trace was written"),
            *_price_line(result),
        ]
    if result.answered:
        head = f"Run ended: answered · {taken}"
    else:
        head = f"Run ended: {result.stop.value} — did NOT answer · {taken}"
    why = stop_words(result.stop)
    if result.answered and result.output is not None:
        why = "the model called final_answer with an answer that fits the output type"
    lines = [*source, ("head", head), ("why", why), *_price_line(result)]
    if result.detail:
        lines.append(("detail", result.detail))
    if result.error:
        lines.append(("error", f"error: {result.error}"))
    if result.output is not None and result.answer is not None:  # output=T: a typed answer
        lines.append(("output", "output: the answer given by calling final_answer, as JSON"))
        lines.append(("answer", result.answer))
    elif result.answered and result.answer:
        lines.append(("answer", result.answer))
    return lines


def reading_lines(shown: int, error: str | None = None) -> list[tuple[str, str]]:
    """The banner of a long saved run whose first ``shown`` steps are drawn while the rest is
    read; with ``error``, why the rest could not be read."""
    first = f"its first {plural(shown, 'step')} are shown"
    if error is None:
        return [
            ("head", f"Reading the rest of the run: {first}"),
            ("why", "how it ended, what it spent and its charts follow once every step is read"),
        ]
    return [("head", f"The run could not be read whole: {first}"), ("error", f"error: {error}")]


def saved_words(shown: int, path: str) -> str:
    """A long saved run not read whole yet, in words: more than ``shown`` steps, at ``path``."""
    return f"a saved run of more than {plural(shown, 'step')}, at {path}"


def stop_html(result: Result) -> str:
    """How the run ended, impossible to miss (``stop_lines`` as HTML)."""
    kind = "bl-answered" if result.answered else "bl-unanswered"
    if result.stop is None:
        kind = "bl-running"
    parts = [f'<div class="bl-stop {kind}">']
    for line_kind, line in stop_lines(result):
        if line_kind == "answer":
            parts.append(f'<pre class="bl-text">{text(preview(line))}</pre>')
        else:
            parts.append(f'<div class="bl-stop-{line_kind}">{text(line)}</div>')
    parts.append("</div>")
    return "".join(parts)


def idle_html(steps: int) -> str:
    """The panel's line when no Run is going and the run has not ended."""
    if not steps:
        return (
            '<div class="bl-idle">not started: Step takes one turn, Run goes on to the end</div>'
        )
    return (
        f'<div class="bl-idle">paused after {plural(steps, "step")}: the run is not over; '
        "Step or Run goes on</div>"
    )


def running_html(steps: int) -> str:
    """The line shown while a Run goes on in the background."""
    return (
        f'<div class="bl-running bl-live">running: {plural(steps, "step")} taken; '
        "Pause stops it after the turn in flight</div>"
    )


def paused_html(steps: int, why: str) -> str:
    """The line shown when a Run paused: the run is not over, Run or Step goes on."""
    return (
        f'<div class="bl-paused">paused after {plural(steps, "step")} ({text(why)}); '
        "the run is not over: Run or Step goes on</div>"
    )


def held_words(steps: int, batch: HeldBatch, spent: str, *, for_you: bool = True) -> str:
    """A held batch in words: the turn was taken (the model called, its reply billed: what the
    run has ``spent``), and how many calls wait for a decision, or that every call is decided.
    ``for_you``: said to the person at the panel (the controls are below)."""
    taken = f"held after {plural(steps, 'step')}: step {batch.step.index} called the model"
    taken += f" ({spent} so far)" if for_you else f", {spent}"
    waiting = batch.waiting
    if not waiting:
        return f"{taken}; every call is decided: Step or Run runs the batch, then goes on"
    calls = plural(waiting, "call waits", "calls wait")
    if not for_you:
        return f"{taken}; {calls} for a decision"
    return (
        f"{taken}; {calls} for your decision below (Approve, Edit or Deny each); Step and Run "
        "go on once every call is decided"
    )


def waiting_html(steps: int, batch: HeldBatch, spent: str) -> str:
    """The line shown while the session holds a batch for a person's decisions."""
    return f'<div class="bl-paused bl-waiting">{text(held_words(steps, batch, spent))}</div>'


def held_note(batch: HeldBatch) -> str:
    """What the step list says beside its count while a turn is held: where it is."""
    return f"step {batch.step.index} is held above: recorded here once its batch runs"


def held_html(why: str) -> str:
    """The line shown when a Run took no step: its breakpoint held before the first one."""
    return (
        f'<div class="bl-paused">Run took no step: {text(why)} already, so nothing was sent. '
        "Step takes one turn anyway; a larger amount lets Run go on</div>"
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
