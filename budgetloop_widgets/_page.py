"""The viewer component in a page with no kernel: ``to_html``'s file and ``Result._repr_html_``.

Both carry the run's data (``_data``) in a ``<script type="application/json">`` element and the
component (``viewer.js``, unchanged) in one inline module script that draws it, so a notebook
and a file show the same viewer as the widgets. Nothing is fetched. The file's
Content-Security-Policy allows that one script and that one stylesheet by their hashes, and
nothing else. Before the script runs (or where scripts do not run: an untrusted notebook,
nbviewer, GitHub) the page shows a short summary of the run in plain HTML.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from html import escape
from importlib import resources
from typing import Any

from budgetloop import Result
from budgetloop.display import Columns, columns_of

from ._data import Strings, document, escaped, reading_data, run_data, unstyled
from ._log import jump_targets, request_of, sent_counts
from ._status import reading_lines, saved_words, stop_lines
from ._text import plural, text
from ._views import chart_svgs, message_content

CONTEXT_SHOWN = 40  # messages of a step's context shown, the latest

BOOT = "\nboot();\n"
# the file's own page: no margin to speak of, and dark around the viewer in a dark scheme
PAGE_CSS = (
    "body { margin: 0; padding: 8px; }"
    " @media (prefers-color-scheme: dark) { body { background: #151515; } }"
)


def asset(name: str) -> str:
    """A file shipped with the package (``viewer.js``, ``viewer.css``), as text."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def trace_document(
    result: Result,
    title: str,
    origin: str = "",
    *,
    messages: bool = True,
    later: bool = False,
    rows: Columns | None = None,
) -> tuple[dict[str, Any], Strings]:
    """What the component draws for one run (its data, with the charts), and its strings.
    Without ``messages`` the page asks for a step's context and request when it opens it; with
    ``later`` it asks for the calls' texts once it has drawn the rows (``_data.later_data``);
    with ``rows`` (the run's columns) it is sent only what the list shows and asks for a
    step's detail when it opens it (``_data.run_data``)."""
    strings = Strings()
    run = run_data(result, strings, messages=messages, later=later, rows=rows)
    run["charts"] = unstyled(
        chart_svgs(result.steps, result.budget, carried=run["carried"], price=result.price)
    )
    return document("trace", title, [run], strings, origin=origin), strings


def reading_document(
    columns: Columns, title: str, error: str | None = None
) -> tuple[dict[str, Any], Strings]:
    """What the component draws of a long saved run before it is read whole: the rows of its
    first steps (``columns``), under a banner saying the rest is being read (``reading_lines``;
    with ``error``, why it could not be)."""
    strings = Strings()
    shown = len(columns.index)
    run = reading_data(columns, strings, reading_lines(shown, error))
    if error is not None:
        run["partial"] = False  # nothing more will come
    return document("trace", title, [run], strings), strings


FIRST_STEPS = 2_000  # of a longer run: drawn at once, while the rest is read

REQUEST_CHARS = 2_000_000  # of a request's JSON sent to the page; the rest is said, not sent


def context_answer(result: Result, index: int, shown_: int = CONTEXT_SHOWN) -> dict[str, Any]:
    """The latest ``shown_`` messages step ``index`` was sent, as the page's context rows."""
    upto = sent_counts(result)[index]
    first = max(upto - shown_, 0)
    texts = escaped([message_content(m) for m in result.messages[first:upto]])
    rows = [[first + k, m.role, texts[k], None] for k, m in enumerate(result.messages[first:upto])]
    return {"upto": upto, "first": first, "rows": rows, "tokens": False}


def request_text(result: Result, index: int) -> str:
    """The request step ``index`` sent, as the page shows it: a line saying what it holds, then
    its JSON (cut at ``REQUEST_CHARS``, saying so)."""
    request = request_of(result, index)
    tools = (
        "no tool schemas (the final answer is asked for without tools)"
        if result.steps[index].final_answer
        else plural(len(request["tools"]), "tool schema")
    )
    head = (
        f"Request of step {index}: {plural(len(request['messages']), 'message')} and {tools}, "
        "as the trace holds them"
    )
    body = json.dumps(request, ensure_ascii=False, indent=1, default=repr)
    if len(body) > REQUEST_CHARS:
        more = len(body) - REQUEST_CHARS
        said = f"({plural(more, 'more character')}: TraceView.request() has it all)"
        body = f"{body[:REQUEST_CHARS]}\n… {said}"
    return escaped([f"{head}\n\n{body}"])[0]


def script_json(data: dict[str, Any]) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` appears."""
    out = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def module_script() -> str:
    """The inline module: the component, then the call that draws every viewer in the page."""
    code = asset("viewer.js") + BOOT
    if "</script" in code.lower():  # pragma: no cover - the shipped file is checked by a test
        raise RuntimeError("viewer page: viewer.js must be free of '</script', got one.")
    return code


def sha256(source: str) -> str:
    """A CSP hash source for an inline element's exact text."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def policy() -> str:
    """The file's Content-Security-Policy: the one script and the one stylesheet, by hash, and
    the search's worker, which that script makes from its own text (a ``blob:`` URL)."""
    return (
        f"default-src 'none'; script-src {sha256(module_script())}; worker-src blob:; "
        f"style-src {sha256(asset('viewer.css'))} {sha256(PAGE_CSS)}; base-uri 'none'; "
        "form-action 'none'"
    )


NOT_RUN = (
    "<div><i>The interactive viewer did not run here: it needs scripts (in Jupyter, a "
    "trusted notebook; or write the run with budgetloop_widgets.to_html).</i></div>"
)


def fallback(result: Result, title: str) -> str:
    """The run in a few lines of plain HTML, for where the viewer's script does not run."""
    lines = [f"<div><b>{text(title)}</b></div>"]
    for kind, line in stop_lines(result):
        if kind != "answer":
            lines.append(f"<div>{text(line)}</div>")
    places = [
        f"{name}: step {at}"
        for name, at in jump_targets(result.steps, stopped=result.stop is not None).items()
        if at is not None
    ]
    if places:
        lines.append(f"<div>{escape(' · '.join(places))}</div>")
    lines.append(NOT_RUN)
    return f'<div class="blv-fallback">{"".join(lines)}</div>'


def reading_fallback(title: str, shown: int, path: str) -> str:
    """A long saved run in plain HTML before it is read whole: its title, where it is, and
    that it has more than ``shown`` steps (``saved_words``)."""
    said = saved_words(shown, path)
    said = said[:1].upper() + said[1:] + "."
    return (
        f'<div class="blv-fallback"><div><b>{text(title)}</b></div><div>{text(said)}</div>'
        f"{NOT_RUN}</div>"
    )


def viewer_html(
    data: dict[str, Any],
    summary: str,
    *,
    packed: bool = False,
    first: dict[str, Any] | None = None,
) -> str:
    """The viewer as one ``<div>``: ``summary`` (plain HTML, shown until the script runs, and
    where it does not), the data (``packed``: as ``packed_json`` writes it), the stylesheet and
    the script; ``first``, a long run's first steps (``reading_document``), drawn while the
    data is read."""
    element = (
        f'<script type="application/json" data-encoding="{PACKED}">{packed_json(data)}</script>'
        if packed
        else f'<script type="application/json">{script_json(data)}</script>'
    )
    if first is not None:
        element = (
            f'<script type="application/json" data-first="">{script_json(first)}</script>'
            + element
        )
    return (
        f'<div class="blv-page" data-blv="">{summary}{element}'
        f"<style>{asset('viewer.css')}</style>"
        f'<script type="module">{module_script()}</script></div>'
    )


PACKED = "gzip-base64"  # a page's data element says it holds its JSON so (``data-encoding``)


def packed_json(data: dict[str, Any]) -> str:
    """The data's JSON in UTF-8, gzipped (with no time in its header: the same run makes the same
    file) and written in base64: what ``to_html``'s page holds, which the page inflates with the
    browser's own ``DecompressionStream``. A long run's texts repeat their words, so this is
    a small part of the JSON; base64 holds no ``<``, ``>`` or ``&``."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, 6, mtime=0)).decode("ascii")


def page_html(
    data: dict[str, Any], summary: str, title: str, first: dict[str, Any] | None = None
) -> str:
    """A whole HTML document of the viewer, with its Content-Security-Policy, the data packed
    (``packed_json``) and a long run's ``first`` steps apart (``viewer_html``)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{PAGE_CSS}</style></head>"
        f"<body>{viewer_html(data, summary, packed=True, first=first)}</body></html>\n"
    )


def result_html(result: Result, title: str = "budgetloop run") -> str:
    """A run in the viewer, for a notebook's output (``Result._repr_html_``)."""
    return viewer_html(trace_document(result, title)[0], fallback(result, title))


def result_page(result: Result, title: str) -> str:
    """A run in the viewer, as a file (``to_html``); a run of more than ``FIRST_STEPS`` steps
    with its first steps apart, drawn while the browser inflates the rest."""
    first = None
    if len(result.steps) > FIRST_STEPS:
        first = reading_document(columns_of(result.steps[:FIRST_STEPS]), title)[0]
    return page_html(trace_document(result, title)[0], fallback(result, title), title, first)
