"""A saved run as one static, self-contained HTML page: no network, no kernel, standard library.

``Result._repr_html_()`` shows it (a bare ``result`` in a notebook cell renders a read-only view
that survives in nbviewer and on GitHub, with no script) unless a package registers a viewer in
the ``budgetloop.viewers`` entry-point group, as the ``widgets`` extra does (``viewer``).
Everything a model, a tool or a trace produced is shown with control characters escaped, then
HTML-escaped: shown, never interpreted. It shows the trace as it is: its texts went through the
run's ``Redactor`` when it was made, and the arguments are written as text by the same rule
(``Redactor.arguments_text``).
Colours come from JupyterLab's ``--jp-*`` variables with light fallbacks.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from .._engine._types import format_usd as _usd
from .._forms._printable import first_chunk, printable
from .._forms._redact import PLAIN

if TYPE_CHECKING:
    from ._result import CallRecord, Result, Step

VIEWERS = "budgetloop.viewers"  # the entry-point group of the page a bare result shows
PREVIEW = 2000  # characters of one text shown before it is cut
MAX_CARDS = 1000  # step cards drawn; the table lists every step

CSS = """
.blh { --fg: var(--jp-ui-font-color1, #222); --muted: var(--jp-ui-font-color2, #555);
  --bg: var(--jp-layout-color1, #fff); --alt: var(--jp-layout-color2, #f0f0f0);
  --line: var(--jp-border-color2, #ddd); --bad: var(--jp-error-color1, #c0392b);
  --good: var(--jp-success-color1, #2e7d32); --accent: var(--jp-brand-color1, #1976d2);
  font: 13px var(--jp-ui-font-family, sans-serif); color: var(--fg); background: var(--bg); }
.blh table { border-collapse: collapse; width: 100%; }
.blh th, .blh td { border: 1px solid var(--line); padding: 2px 6px; text-align: left;
  vertical-align: top; color: var(--fg); }
.blh th { background: var(--alt); }
.blh td.n { text-align: right; }
.blh pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: 12px;
  color: var(--fg); }
.blh .stop { padding: 6px 8px; border: 2px solid var(--bad); background: var(--alt); }
.blh .stop.ok { border-color: var(--good); }
.blh .muted { color: var(--muted); }
.blh .err { color: var(--bad); font-weight: 600; }
.blh details { border: 1px solid var(--line); margin: 4px 0; padding: 2px 6px; }
.blh details:target, .blh details.sel { border-color: var(--accent); }
.blh summary { cursor: pointer; font-weight: 600; }
.blh .box { max-height: 30em; overflow: auto; }
.blh nav a { margin-right: 12px; color: var(--accent); }
.blh tr.hidden, .blh details.hidden { display: none; }
"""


def _t(value: object) -> str:
    return escape(printable(value, keep_newlines=True), quote=True)


def _cut(value: str) -> str:
    if len(value) <= PREVIEW:
        return value
    return f"{value[:PREVIEW]}… ({len(value) - PREVIEW:,} more characters)"


def _spent(result: Result) -> str:
    return "cost unknown" if result.cost_usd is None else f"{_usd(result.cost_usd)} spent"


def _n(value: int, word: str) -> str:
    return f"{value:,} {word if value == 1 else word + 's'}"


def _under(step: Step) -> int:
    return step.under_projected


def _args(call: CallRecord) -> str:
    """The arguments as the model wrote them; for a call a person edited, then those it ran
    with."""
    raw = PLAIN.arguments_text(call.raw_arguments)
    if call.approval != "edited" or call.arguments is None:
        return raw
    return f"{raw}\nedited to: {PLAIN.arguments_text(call.arguments)}"


def _row(step: Step) -> str:
    status = "model error" if step.error is not None else (
        ", ".join(sorted({c.status for c in step.tool_calls})) or "answer"
    )  # fmt: skip
    tokens = "—" if step.usage is None else f"{step.usage.input_tokens:,}"
    projected = "—" if step.projection is None else f"{step.projection.input_tokens:,}"
    first = (step.text or step.error or "").split("\n", 1)[0][:80]
    return (
        f'<tr data-step="{step.index}"><td class="n">'
        f'<a href="#blh-step-{step.index}">{step.index}</a></td>'
        f'<td class="n">{_usd(step.cost_usd)}</td>'
        f'<td class="n">{projected}</td><td class="n">{tokens}</td>'
        f'<td class="n">{len(step.tool_calls)}</td><td>{_t(status)}</td>'
        f"<td>{_t(printable(first))}</td></tr>"
    )


def _card(step: Step) -> str:
    if step.usage is None and step.error is not None and not step.cost_usd:
        numbers = "nothing charged: the model raised"
    elif step.usage is None:
        numbers = (
            "cost unknown, no usage reported"
            if step.cost_usd is None
            else f"{_usd(step.cost_usd)} charged at the projection, no usage reported"
        )
    else:
        cost = "cost unknown" if step.cost_usd is None else f"{_usd(step.cost_usd)} reported"
        thought = step.usage.reasoning_tokens
        numbers = (
            f"{cost} · {step.usage.input_tokens:,} in / "
            f"{step.usage.output_tokens:,} out tokens reported"
            + (f" ({thought:,} of them reasoning)" if thought else "")
        )
    parts = [
        f'<details id="blh-step-{step.index}"><summary>Step {step.index} · {numbers} · '
        f"{step.seconds:.3f} s{first_chunk(step.first_chunk_seconds)}</summary>",
    ]
    p = step.projection
    if p is None:
        parts.append('<div class="muted">no projection: an imported run\'s step</div>')
    else:
        parts.append(
            f'<div class="muted">before it, projected: {p.tokens_text} = {_usd(p.cost_usd)}'
            f" ({p.assumed_text})</div>"
        )
    under = _under(step)
    if under:
        parts.append(f'<div class="err">under-projected by {_n(under, "input token")}</div>')
    if step.error is not None:
        parts.append(f'<div class="err">model error: {_t(step.error)}</div>')
    if step.text:
        parts.append(f"<pre>{_t(_cut(step.text))}</pre>")
    if step.tool_calls:
        parts.append(
            "<table><tr><th>tool</th><th>arguments</th><th>status</th><th>result / error</th></tr>"
        )
        for call in step.tool_calls:
            outcome = call.result if call.status == "ok" else call.error
            if call.status == "denied":
                outcome = call.content
            status: str = call.status
            if call.approval in ("approved", "edited"):
                status = f"{status} ({call.approval})"
            cls = ' class="err"' if call.status == "error" else ""
            parts.append(
                f"<tr><td><code>{_t(call.name)}</code></td><td><pre>{_t(_cut(_args(call)))}"
                f"</pre></td><td{cls}>{_t(status)}</td>"
                f"<td><pre>{_t(_cut(outcome or ''))}</pre></td></tr>"
            )
        parts.append("</table>")
    parts.append("</details>")
    return "".join(parts)


def _jumps(steps: tuple[Step, ...]) -> str:
    def first(test: object) -> int | None:
        return next((s.index for s in steps if test(s)), None)  # type: ignore[operator]

    places = {
        "first error": first(
            lambda s: s.error is not None or any(c.status == "error" for c in s.tool_calls)
        ),
        "first skipped": first(lambda s: any(c.status == "skipped" for c in s.tool_calls)),
        "first under-projected": first(lambda s: _under(s) > 0),
        "most expensive": (
            max(steps, key=lambda s: s.cost_usd or 0.0).index
            if any(s.cost_usd is not None for s in steps)
            else None
        ),
        "the stop": steps[-1].index if steps else None,
    }
    links = [
        f'<a href="#blh-step-{at}">{name} (step {at})</a>'
        for name, at in places.items()
        if at is not None
    ]
    return f"<nav>{''.join(links)}</nav>" if links else ""


def render(result: Result, *, max_cards: int | None = MAX_CARDS) -> str:
    """The view as one ``<div>`` with its own ``<style>`` and no script: a table of every step
    (its row's number links to its card) and a folded card per step, the first and last
    ``max_cards // 2`` of them when there are more than ``max_cards``."""
    steps = result.steps
    stop = "running" if result.stop is None else result.stop.value
    verdict = "answered" if result.answered else f"{_t(stop)} — did NOT answer"
    head = (
        f"Run ended: {verdict} · {_n(len(steps), 'step')} taken · "
        f"{_spent(result)} · {result.seconds:.2f} s"
        if result.stop is not None
        else f"ended without an answer: {_n(len(steps), 'step')} taken · {_spent(result)}"
        if result.imported is not None
        else f"No stop recorded: {_n(len(steps), 'step')} taken · {_spent(result)}"
    )
    parts = [
        '<div class="blh tex2jax_ignore mathjax_ignore">',
        f"<style>{CSS}</style>",
        f'<div class="stop{" ok" if result.answered else ""}"><b>{head}</b>',
    ]
    if result.imported is not None:
        parts.append(f'<div class="muted">{_t(result.imported.describe())}</div>')
    if result.detail:
        parts.append(f"<div>{_t(result.detail)}</div>")
    if result.error:
        parts.append(f"<div>error: {_t(result.error)}</div>")
    if result.answered and result.answer:
        parts.append(f"<pre>{_t(_cut(result.answer))}</pre>")
    parts.append("</div>")
    parts.append(_jumps(steps))
    parts.append(
        '<div class="box"><table><tr><th>step</th><th>cost</th><th>in tokens projected</th>'
        "<th>in tokens reported</th><th>calls</th><th>status</th><th>text</th></tr>"
    )
    parts.extend(_row(s) for s in steps)
    parts.append("</table></div>")
    cards = list(steps)
    if max_cards is not None and len(cards) > max_cards:
        half = max_cards // 2
        left_out = len(cards) - 2 * half
        parts.extend(_card(s) for s in cards[:half])
        parts.append(
            f'<div class="muted">{_n(left_out, "step")} in the middle not drawn as cards '
            "(the table lists every step)</div>"
        )
        cards = cards[-half:] if half else []
    parts.extend(_card(s) for s in cards)
    parts.append(f'<div class="muted">{_n(len(result.messages), "message")} in the context</div>')
    parts.append("</div>")
    return "".join(parts)


def viewer() -> Callable[[Result], str]:
    """The page a bare ``result`` shows in a notebook: the first viewer registered in the
    ``budgetloop.viewers`` entry-point group that loads (the ``widgets`` extra registers its
    viewer there, and it does not load without ipywidgets and anywidget), else ``render``.
    Looked up at each call, so a package installed in a running kernel is used."""
    for point in importlib.metadata.entry_points(group=VIEWERS):
        try:
            found: Callable[[Result], str] = point.load()
        except ImportError:
            continue
        return found
    return render
