"""How fast the panel and the viewer are: the panel's refresh in Python, and the viewer in a real
browser (JupyterLab 4 in headless Chromium, driven by Playwright), each beside its target.

    python benchmarks/bench_widgets.py            # every row (a few minutes)
    python benchmarks/bench_widgets.py --quick    # a smoke run: fewer repeats, 10,000 steps
    python benchmarks/bench_widgets.py --profile  # the panel refresh's view functions, timed
    python benchmarks/bench_widgets.py --read     # reading a saved run: parsers, load_trace,
                                                  # beside main's code (--against REV)
    python benchmarks/bench_widgets.py --static   # the static page opened in Chromium, too
    python benchmarks/bench_widgets.py --viewer   # TraceView(path) in JupyterLab and marimo,
                                                  # beside d194bae's code (--against REV)

The viewer's rows (issue 19), each measured in the page with performance.now():
- a 10,000-step trace on screen within 300 ms of its cell's output appearing;
- a 100,000-step trace on screen within 1.5 s after load_trace returns (from running the cell
  `TraceView(trace)`: the Python side builds the data, the kernel sends it, the page draws), with
  under 300 MB added to the page's JavaScript heap (measured after a garbage collection);
- a jump, a filter, a search keystroke, a row move and a scroll, each until the page has drawn
  its next frame, within 50 ms at 100,000 steps (the slowest of several);
- opening a step's detail within 100 ms (its context comes from the kernel after; timed too).
The 100,000-step rows run twice: on bench.py's journal (every step the same texts, as a loop
that repeats itself) and on one whose every step has its own text and result.

Issue 39's rows (``--viewer``, in the full run too), on the trace whose every step has its own
texts, as minimum / median / maximum of five (or the slowest / median of every sample), this
tree's code and an older one's alternating in one run, each side's kernel importing its own code
and reading a trace its own code wrote: ``TraceView(path)`` of 100,000 steps in JupyterLab, from
running the cell to the first rows painted (at most 1.0 s) and to every row, the banner and the
charts (no ``aria-busy="true"`` left in the view); a row move, a jump and a search keystroke (at
most 16 ms to the painted frame); a step's detail opened (at most 50 ms); the page's JavaScript
heap after opening and closing the view ten times (flat: the 10th within 20 MB or 10% of the
1st, whichever is larger); and 10,000 steps in ``marimo run``, from navigation to rows (at most
1.0 s).

The panel's rows (issue 12): a RunPanel refresh at step 400 against one at step 10 (at most
1.5x), and at step 4,000 against step 400 (no target). And, live (issue 36): the messages per
second the panel sends the browser while a reply streams 5,000 chunks as fast as they come (at
most one per 16 ms, a frame). Timing never fails the script.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest  # the browser helpers' (tests/jupyter_browser.py) failures
from bench import journal_file  # the same long trace as bench.py's row

from budgetloop import (
    Budget,
    Completion,
    Price,
    ScriptedModel,
    Session,
    ToolCall,
    Usage,
    start,
    tool,
)
from budgetloop_widgets import RunPanel
from budgetloop_widgets._live import FRAME

ROOT = Path(__file__).resolve().parent.parent
PRICE = Price(3.0, 15.0)  # assumed rates
Row = tuple[str, str, str, bool | None]  # name, measured, target, met


@tool
def read(topic: str) -> str:
    """Read about a topic.

    Args:
        topic: what to read about
    """
    return f"notes on {topic}. " * 30


def session(scripted_usage: bool = False) -> Session:
    """A run reading one topic a turn; ``scripted_usage`` gives every turn a fixed ``Usage``
    (an O(1) model), else the model counts its request (``ScriptedModel``'s default)."""
    turn = Completion(
        text="reading",
        tool_calls=[ToolCall("read", {"topic": "budgets"})],
        usage=Usage(1_000, 20) if scripted_usage else None,
    )
    model = ScriptedModel([turn], price=PRICE, max_output_tokens=500, repeat_last=True)
    return start(model, "Go.", tools=[read], budget=Budget(max_steps=100_000), repeat_limit=None)


def panel_ratio(
    repeats: int, first: int = 10, second: int = 400, scripted_usage: bool = False
) -> tuple[float, float]:
    """The refresh that follows a step (as a click on Step does), at two step counts,
    alternating so that both see the same machine."""
    early, late = RunPanel(session(scripted_usage)), RunPanel(session(scripted_usage))
    for _ in range(first):
        early.session.step()
    for _ in range(second):
        late.session.step()
    early.refresh()
    late.refresh()
    small, large = [], []
    for _ in range(repeats):
        for panel, times in ((early, small), (late, large)):
            panel.session.step()  # not timed: the model's turn
            started = time.perf_counter()
            panel.refresh()
            times.append(time.perf_counter() - started)
    return statistics.median(small), statistics.median(large)


def live_messages(chunks: int = 5_000, gap: float = 0.0) -> tuple[int, float]:
    """A reply of ``chunks`` 2-character chunks, ``gap`` seconds apart, streamed through a
    panel's Step: how many messages its live view sent the browser, and the seconds it took."""
    model = ScriptedModel(["ab" * chunks], stream=True, chunk_chars=2, chunk_seconds=gap)
    panel = RunPanel(start(model, "Go.", budget=Budget(max_seconds=600)))
    sent: list[object] = []
    panel.live.observe(sent.append, names="value")  # each new value: one message on its comm
    started = time.perf_counter()
    panel.step()
    return len(sent), time.perf_counter() - started


def refresh_profile(repeats: int = 41) -> None:
    """Each view the panel draws, timed inside the refresh that follows a step (medians, us),
    at step 10 and step 400."""
    from budgetloop_widgets import _panel_view as _panel  # where the panel draws its views
    from budgetloop_widgets._steplist import StepList

    names = ("stop_html", "meter_html", "charts_html")
    spent: dict[str, list[float]] = {name: [] for name in (*names, "steps")}
    originals = {name: getattr(_panel, name) for name in names}
    update = StepList.update

    def timed(name: str, fn: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            out = fn(*args, **kwargs)
            spent[name].append(time.perf_counter() - started)
            return out

        return call

    print("at step | " + " | ".join((*names, "steps")) + " | whole refresh")
    try:
        for name in names:
            setattr(_panel, name, timed(name, originals[name]))
        StepList.update = timed("steps", update)  # type: ignore[method-assign]
        for steps in (10, 400):
            panel = RunPanel(session(True))
            for _ in range(steps):
                panel.session.step()
            panel.refresh()
            for times in spent.values():
                times.clear()
            whole = []
            for _ in range(repeats):
                panel.session.step()
                started = time.perf_counter()
                panel.refresh()
                whole.append(time.perf_counter() - started)
            cells = [f"{statistics.median(spent[n]) * 1e6:.0f}" for n in (*names, "steps")]
            print(f"{steps} | " + " | ".join(cells) + f" | {statistics.median(whole) * 1e6:.0f}")
    finally:
        for name, original in originals.items():
            setattr(_panel, name, original)
        StepList.update = update  # type: ignore[method-assign]


JOURNAL = """
import sys
sys.path.insert(0, sys.argv[1])  # bench.py, beside this file
from bench import journal_file
journal_file(sys.argv[2], 1)
"""


def varied_file(path: str, steps: int, tree: Path | None = None) -> int:
    """bench.py's journal, but every step with its own text, arguments and result (its end
    line's cost what the repeated steps cost, as journal_file's, so the file loads). With
    ``tree`` (a folder whose ``budgetloop`` a fresh process imports), the step it repeats is
    written by that code, in the trace format it writes (version 1 before format 2, where a
    step line keeps its texts in its messages too: they are made the step's own as well)."""
    if tree is None:
        journal_file(path, 1)
    else:
        subprocess.run(
            [sys.executable, "-c", JOURNAL, str(ROOT / "benchmarks"), path],
            env={**os.environ, "PYTHONPATH": str(tree)}, cwd=Path(path).parent, check=True,
        )  # fmt: skip
    with open(path, encoding="utf-8") as fh:
        header, step, end = fh.read().split("\n")[:3]
    entry, last = json.loads(step), json.loads(end)
    last["cost_usd"] = steps * entry["step"]["cost_usd"]
    call = entry["step"]["tool_calls"][0]
    said, answer = (entry["messages"] + [{}, {}])[:2] if "messages" in entry else ({}, {})
    asked = said.get("tool_calls", [{}])[0]
    dump = functools.partial(json.dumps, ensure_ascii=False, separators=(",", ":"))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(header + "\n")
        for i in range(steps):
            entry["step"]["index"] = i
            entry["step"]["text"] = f"reading part {i}"
            call["id"] = f"call_{i}_0"
            call["raw_arguments"] = {"topic": f"part {i}"}  # its arguments: the same (left out)
            call["result"] = f"notes on part {i}. " * 25
            if "arguments" in call:  # version 1 writes them
                call["arguments"] = call["raw_arguments"]
            if said:  # version 1: the assistant's message and the tool's, the same texts
                said["content"] = entry["step"]["text"]
                asked.update(id=call["id"], arguments=call["raw_arguments"])
                answer.update(content=call["result"], tool_call_id=call["id"])
            fh.write(dump(entry) + "\n")
        fh.write(dump(last) + "\n")
    return os.path.getsize(path)


# -- in the page ----------------------------------------------------------------------------------

RUN_CELL = """async (k) => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[k];
  notebook.activeCellIndex = k;
  const started = performance.now();
  let output = null;
  const drawn = new Promise((resolve) => {
    const seen = () => {
      if (output === null && cell.querySelector('.jp-OutputArea-output')) {
        output = performance.now();
      }
      if (cell.querySelector('.blv-row')) { observer.disconnect(); resolve(performance.now()); }
    };
    const observer = new MutationObserver(seen);
    observer.observe(cell, { childList: true, subtree: true });
  });
  app.commands.execute('notebook:run-cell');
  const rows = await drawn;
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));  // on screen
  const painted = performance.now();
  return { fromRun: painted - started, fromOutput: painted - output, rowsAt: rows - started };
}"""

# Each action, from just before it to the page's next frame, drawn.
INTERACT = """async ([k, query]) => {
  const view = document.querySelectorAll('.jp-Notebook .jp-Cell')[k].querySelector('.blv');
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const timed = async (act) => {
    const t = performance.now();
    act();
    await frame();
    return performance.now() - t;
  };
  const fire = (el, type) => el.dispatchEvent(new Event(type));
  const out = { jump: [], filter: [], search: [], move: [], scroll: [], detail: [], context: [] };
  for (const button of view.querySelectorAll('button[data-jump]:not([disabled])')) {
    out.jump.push(await timed(() => button.click()));
  }
  const status = view.querySelectorAll('select')[1];
  for (const value of ['ok', 'error', 'answer', '']) {
    out.filter.push(await timed(() => { status.value = value; fire(status, 'change'); }));
  }
  const search = view.querySelector('input.blv-search');
  for (const ch of query) {
    out.search.push(await timed(() => { search.value += ch; fire(search, 'input'); }));
  }
  out.search.push(await timed(() => { search.value = ''; fire(search, 'input'); }));
  const list = view.querySelector('.blv-scroll');
  const key = new KeyboardEvent('keydown', { key: 'j', bubbles: true });
  for (let i = 0; i < 20; i += 1) {
    out.move.push(await timed(() => list.dispatchEvent(key)));
  }
  for (const fraction of [0.5, 0.9, 0.1, 0.999]) {
    out.scroll.push(await timed(() => {
      list.scrollTop = fraction * list.scrollHeight;
      fire(list, 'scroll');
    }));
  }
  const appear = (selector) => new Promise((resolve) => {
    const detail = view.querySelector('.blv-detail');
    const check = () => {
      if (detail.querySelector(selector)) { observer.disconnect(); resolve(performance.now()); }
    };
    const observer = new MutationObserver(check);
    observer.observe(detail, { childList: true, subtree: true });
    check();
  });
  for (let i = 0; i < 5; i += 1) {
    await new Promise((r) => setTimeout(r, 300));  // the last move's detail is drawn
    const rows = view.querySelectorAll('.blv-row:not([hidden]):not(.blv-selected)');
    const row = rows[Math.min(3 + i, rows.length - 1)];
    const step = row.dataset.e;
    const started = performance.now();
    const card = appear(`.blv-card[data-step="${step}"]`);
    const context = appear(`.blv-card[data-step="${step}"] ~ .blv-context`);
    row.click();
    await card;
    await frame();
    out.detail.push(performance.now() - started);
    out.context.push((await context) - started);
  }
  return out;
}"""

PAGE_NOTEBOOK = (
    "from budgetloop import load_trace\n"
    "from budgetloop_widgets import TraceView\n"
    "small = load_trace('small.jsonl')\n"
    "same = load_trace('same.jsonl')\n"
    "varied = load_trace('varied.jsonl')\n"
    "print(len(small.steps), len(same.steps), len(varied.steps))",
    "TraceView(small)",
    "TraceView(same)",
    "TraceView(varied)",
)


def heap_mb(cdp: object) -> tuple[float, int]:
    """The page's JavaScript heap in use after a garbage collection, MB, and its DOM nodes."""
    cdp.send("HeapProfiler.collectGarbage")  # type: ignore[attr-defined]
    metrics = cdp.send("Performance.getMetrics")["metrics"]  # type: ignore[attr-defined]
    by_name = {m["name"]: m["value"] for m in metrics}
    return by_name["JSHeapUsedSize"] / 1e6, int(by_name["Nodes"])


def browser_rows(big: int, small: int, repeats: int = 3) -> list[Row]:
    """The viewer's targets, measured in JupyterLab 4 in headless Chromium."""
    sys.path.insert(0, str(ROOT))
    from tests.jupyter_browser import (
        CHROMIUM,
        KERNEL_IDLE,
        chromium,
        jupyter_server,
        wait_until_idle,
        write_notebook,
    )

    if not Path(CHROMIUM).exists():
        return [("viewer in the browser", f"not measured: {CHROMIUM} is missing", "", None)]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        root.mkdir()
        journal_file(str(root / "small.jsonl"), small)
        size_same = journal_file(str(root / "same.jsonl"), big)
        size_varied = varied_file(str(root / "varied.jsonl"), big)
        write_notebook(root / "bench.ipynb", *PAGE_NOTEBOOK)
        with (
            jupyter_server("lab", root, Path(folder)) as lab,
            chromium(lab, Path(folder) / "profile") as browser,
        ):
            page = browser.page
            page.set_default_timeout(300_000)
            page.goto(lab.url("lab/tree/bench.ipynb"))
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            page.evaluate("window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0")
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
            wait_until_idle(page)
            page.wait_for_function(KERNEL_IDLE, timeout=600_000)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")

            shown = page.evaluate(RUN_CELL, 1)
            wait_until_idle(page)
            rows.append((f"{small:,} steps: on screen after the cell's output appears",
                         f"{shown['fromOutput']:.0f} ms", "<= 300 ms",
                         shown["fromOutput"] <= 300))  # fmt: skip
            rows.append(("  from running the cell (Python builds it, the kernel sends it)",
                         f"{shown['fromRun']:.0f} ms", "", None))  # fmt: skip
            for k, name, size in ((2, "the same texts each step", size_same),
                                  (3, "its own texts each step", size_varied)):  # fmt: skip
                times = []
                for _ in range(repeats):  # the same cell again: its output is replaced
                    before, _ = heap_mb(cdp)
                    times.append(page.evaluate(RUN_CELL, k)["fromRun"])
                    wait_until_idle(page)
                    after, nodes = heap_mb(cdp)
                label = f"{big:,} steps, {name} ({size / 1e6:.0f} MB of JSON Lines)"
                median = statistics.median(times)
                rows.append((f"{label}: on screen after running TraceView(trace), median of "
                             f"{repeats}", f"{median / 1e3:.2f} s", "<= 1.5 s",
                             median <= 1500))  # fmt: skip
                rows.append(("  JavaScript heap added (after a GC)", f"{after - before:.0f} MB",
                             "< 300 MB", after - before < 300))  # fmt: skip
                rows.append(("  DOM nodes in the page", f"{nodes:,}", "", None))
                query = f"part {big - 7}"
                times = page.evaluate(INTERACT, [k, query])
                for key, what in (("jump", "a jump"), ("filter", "a status filter"),
                                  ("search", "a search keystroke"), ("move", "a row move (j)"),
                                  ("scroll", "a scroll")):  # fmt: skip
                    slowest = max(times[key])
                    rows.append((f"  {what}, the slowest of {len(times[key])}",
                                 f"{slowest:.0f} ms", "<= 50 ms", slowest <= 50))  # fmt: skip
                slowest = max(times["detail"])
                rows.append((f"  opening a step's detail, the slowest of {len(times['detail'])}",
                             f"{slowest:.0f} ms", "<= 100 ms", slowest <= 100))  # fmt: skip
                rows.append(("  its context, from the kernel",
                             f"{max(times['context']):.0f} ms", "", None))  # fmt: skip
    return rows


OPEN = """
import resource, sys, time
from budgetloop import load_trace
from budgetloop_widgets import TraceView
started = time.perf_counter()
trace = load_trace(sys.argv[1])
loaded = time.perf_counter()
view = TraceView(trace)
opened = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(loaded - started, opened - loaded, peak, len(view.result.steps), len(view.data))
"""


READ = """
import sys, time
from budgetloop import load_trace
from budgetloop.display import read_columns
how, path = sys.argv[1], sys.argv[2]
started, cpu = time.perf_counter(), time.process_time()
if how == "columns":
    count = len(read_columns(path).index)
else:
    count = len(load_trace(path, _stdlib=how == "stdlib").steps)
print(time.perf_counter() - started, count, time.process_time() - cpu)
"""

PARSE = """
import importlib, json, sys, time
lines = open(sys.argv[2], "rb").read().split(b"\\n")[:-1]
if sys.argv[1] == "json":
    parse = lambda line: json.loads(line.decode("utf-8"))
elif sys.argv[1] == "msgspec":
    parse = importlib.import_module("msgspec.json").Decoder().decode
else:
    parse = importlib.import_module("orjson").loads
started = time.perf_counter()
for line in lines:
    parse(line)
print(time.perf_counter() - started, len(lines))
"""


def spread(times: list[float]) -> str:
    """Seconds as minimum / median / maximum."""
    return f"{min(times):.2f} / {statistics.median(times):.2f} / {max(times):.2f} s"


def tree_at(rev: str, into: Path) -> Path:
    """``budgetloop`` and ``budgetloop_widgets`` as they are at ``rev`` (git archive), in
    ``into``: a directory to put first on a child process's PYTHONPATH."""
    archive = subprocess.run(
        ["git", "archive", rev, "budgetloop", "budgetloop_widgets"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def read_rows(big: int, repeats: int = 5, against: str | None = "main") -> list[Row]:
    """Reading a saved run of ``big`` steps, each in a fresh process, ``repeats`` times: the
    JSON parsers on its lines, ``load_trace`` (msgspec where installed; the standard library's
    JSON alone) and ``read_columns``, on both traces the browser rows use. With ``against`` (a
    git revision), the same figures for its code, each run beside this tree's (the order
    alternating), so that both see the same machine."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        trees = {"now": ROOT}
        if against is not None:
            trees[against] = tree_at(against, Path(folder) / "rev")
        cpus: dict[str, list[float]] = {}  # the last timed's CPU seconds, by tree (load aside)
        for name, make in (("the same texts each step", journal_file),
                           ("its own texts each step", varied_file)):  # fmt: skip
            path = str(Path(folder) / "trace.jsonl")
            size = make(path, big)
            rows.append((f"{big:,} steps, {name} ({size / 1e6:.0f} MB), min / median / max "
                         f"of {repeats}", "", "", None))  # fmt: skip

            def timed(
                script: str, how: str, path: str = path, alone: bool = False
            ) -> dict[str, list[float] | None]:
                which = ["now"] if alone else list(trees)
                times: dict[str, list[float] | None] = {tree: [] for tree in which}
                cpus.clear()
                for k in range(repeats):
                    order = which if k % 2 == 0 else which[::-1]
                    for tree in order:
                        env = {**os.environ, "PYTHONPATH": str(trees[tree])}
                        # run in the scratch folder: ``python -c`` puts its working directory
                        # before PYTHONPATH, so from a checkout's root it imports that checkout
                        out = subprocess.run([sys.executable, "-c", script, how, path],
                                             capture_output=True, text=True, env=env,
                                             cwd=folder)  # fmt: skip
                        got = times[tree]
                        if out.returncode or got is None:
                            times[tree] = None  # not installed, or this code cannot
                        else:
                            said = out.stdout.split()
                            got.append(float(said[0]))
                            if len(said) > 2:
                                cpus.setdefault(tree, []).append(float(said[2]))
                return times

            for how in ("json", "msgspec", "orjson"):
                said = timed(PARSE, how, alone=True)["now"]  # the parser's, not budgetloop's
                shown = "not installed" if said is None else spread(said)
                rows.append((f"  parse every line with {how}", shown, "", None))
            for how, what in (("fast", "load_trace"),
                              ("stdlib", "load_trace, the standard library's JSON alone"),
                              ("columns", "read_columns (the list, no step built)")):  # fmt: skip
                for tree, times in timed(READ, how).items():
                    target = "<= 1.5 s" if how == "fast" and tree == "now" else ""
                    met = None if not target or times is None else statistics.median(times) <= 1.5
                    rows.append((f"  {what}" + ("" if tree == "now" else f", at {against}"),
                                 "failed" if times is None else spread(times),
                                 target, met))  # fmt: skip
                    if how != "columns" and tree in cpus:  # the machine's load aside
                        rows.append(("    its CPU seconds", spread(cpus[tree]), "", None))
    return rows


STATIC = """
import sys
from budgetloop_widgets import to_html
to_html(sys.argv[1], sys.argv[2])
"""

# From the page's navigation start to its rows drawn and the next frame painted.
PAINTED = """() => new Promise((r) => requestAnimationFrame(() => setTimeout(
  () => r(performance.now()), 0)))"""


# When the first rows were painted, noted in the page itself: the page may be busy after (a long
# run's whole data read once its first steps are drawn), which would hold up a question from here.
ROWS_PAINTED = """new MutationObserver((_, seen) => {
  if (!document.querySelector('.blv-row')) { return; }
  seen.disconnect();
  requestAnimationFrame(() => setTimeout(() => { window.__rowsPainted = performance.now(); }, 0));
}).observe(document, { subtree: true, childList: true });"""
WHOLE = """(said) => {
  const count = document.querySelector('.blv-count');
  return count && count.textContent === said && !document.querySelector('[aria-busy="true"]');
}"""


def static_rows(big: int, repeats: int = 5, against: str | None = "main") -> list[Row]:
    """The static page (``to_html``) of ``big`` steps with their own texts: its size, and from
    opening it in headless Chromium to its rows on screen, ``repeats`` times (min / median /
    max), for this tree's page and (``against``) a git revision's, alternating; each tree's
    page of a trace its own code wrote (``varied_file``'s ``tree``)."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.jupyter_browser import CHROMIUM

    if not Path(CHROMIUM).exists():
        return [("the static page", f"not measured: {CHROMIUM} is missing", "", None)]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        trees = {"now": ROOT}
        if against is not None:
            trees[against] = tree_at(against, Path(folder) / "rev")
        pages: dict[str, Path] = {}
        for tree, where in trees.items():
            trace = str(Path(folder) / f"{tree}.jsonl")  # each tree's in the format it writes
            varied_file(trace, big, None if tree == "now" else where)
            pages[tree] = Path(folder) / f"{tree}.html"
            subprocess.run(
                [sys.executable, "-c", STATIC, trace, str(pages[tree])],
                check=True,
                env={**os.environ, "PYTHONPATH": str(where)},
                cwd=folder,  # so that it imports the tree on PYTHONPATH (read_rows)
            )
        times: dict[str, list[float]] = {tree: [] for tree in trees}
        wholes: dict[str, list[float]] = {tree: [] for tree in trees}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM)
            try:
                for k in range(repeats):
                    for tree in list(trees) if k % 2 == 0 else list(trees)[::-1]:
                        page = browser.new_page()
                        page.set_default_timeout(300_000)
                        page.add_init_script(ROWS_PAINTED)
                        page.goto(pages[tree].as_uri(), wait_until="commit")
                        page.wait_for_function("() => window.__rowsPainted !== undefined")
                        times[tree].append(page.evaluate("() => window.__rowsPainted") / 1e3)
                        # a long run's first steps are drawn apart: then the whole run
                        page.wait_for_function(WHOLE, arg=f"{big:,} steps")
                        wholes[tree].append(page.evaluate(PAINTED) / 1e3)
                        page.close()
            finally:
                browser.close()
        for tree in trees:
            size = pages[tree].stat().st_size / 1e6
            label = f"static page of {big:,} steps, own texts ({size:.0f} MB): opened to rows"
            median = statistics.median(times[tree])
            at = "" if tree == "now" else f", at {against}"
            rows.append((label + at, spread(times[tree]), "<= 1.0 s" if tree == "now" else "",
                         median <= 1.0 if tree == "now" else None))  # fmt: skip
            rows.append(("  ... to every step listed" + at, spread(wholes[tree]), "", None))
    return rows


# -- issue 39's viewer goals: TraceView(path) in JupyterLab and in marimo, beside an older code --

OLD = "d194bae"  # main before issue 39's work: no TraceView(path), trace format version 1
FLAT_MB, FLAT_SHARE = 20.0, 0.10  # "flat": the 10th heap within the larger of these of the 1st

# From running cell k (its output cleared before) to its first rows painted, and to every row,
# the banner and the charts painted: rows, and no [aria-busy="true"] left in the view (a view
# that fills in a long file after its first rows marks its list aria-busy until then; on code
# without the attribute the two are the same moment). Milliseconds from running the cell.
OPEN_VIEW = """async ([k, limit]) => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  const cell = notebook.widgets[k].node;
  notebook.activeCellIndex = k;
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const whole = () => {
    const view = cell.querySelector('.blv');
    return view && view.querySelector('.blv-row') && !view.querySelector('[aria-busy="true"]');
  };
  let rowsSeen = null;
  let wholeSeen = null;
  let observer = null;
  const seen = new Promise((resolve) => {
    const check = () => {
      const now = performance.now();
      if (rowsSeen === null && cell.querySelector('.blv .blv-row')) { rowsSeen = now; }
      if (rowsSeen !== null && wholeSeen === null && whole()) {
        wholeSeen = now;
        observer.disconnect();
        resolve();
      }
    };
    observer = new MutationObserver(check);
    observer.observe(cell, { childList: true, subtree: true, attributes: true,
                             attributeFilter: ['aria-busy'] });
  });
  const started = performance.now();
  app.commands.execute('notebook:run-cell');
  const deadline = started + limit;
  while (rowsSeen === null && performance.now() < deadline) { await frame(); }
  if (rowsSeen === null) { observer.disconnect(); return { error: 'no rows drawn in time' }; }
  await frame();
  const first = performance.now() - started;
  await Promise.race([seen, new Promise((r) => setTimeout(r, deadline - performance.now()))]);
  if (wholeSeen === null) {
    observer.disconnect();
    return { first, error: 'aria-busy="true" still in the view' };
  }
  if (wholeSeen - started > first) { await frame(); }
  return { first, whole: Math.max(first, performance.now() - started) };
}"""

# In the view of cell k, each action from its input event to the page's next frame painted:
# a step's detail opened by a click (its card drawn: asked of the kernel for a path view), the
# jump buttons, ArrowDown on the focused list, one more character typed in the search box, and
# a no-op timed the same way (what waiting for a frame costs alone). Milliseconds.
ACT = """async ([k, query]) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[k].node;
  const view = cell.querySelector('.blv');
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const pause = (ms) => new Promise((r) => setTimeout(r, ms));
  const timed = async (act) => {
    const t = performance.now();
    act();
    await frame();
    return performance.now() - t;
  };
  const out = { detail: [], jump: [], move: [], search: [], answer: [], none: [], errors: [] };
  for (let i = 0; i < 10; i += 1) { out.none.push(await timed(() => {})); await pause(20); }
  const detail = view.querySelector('.blv-detail');
  const clicked = new Set([...view.querySelectorAll('.blv-row.blv-selected')]
    .map((row) => row.dataset.e));
  for (let i = 0; i < 5; i += 1) {
    await pause(300);  // the last answer drawn
    const row = [...view.querySelectorAll('.blv-row:not([hidden])')]
      .find((r) => r.dataset.e !== undefined && !clicked.has(r.dataset.e));
    if (!row) { out.errors.push('no row left to open'); break; }
    const step = row.dataset.e;
    clicked.add(step);
    const drawn = () => detail.querySelector(`.blv-card[data-step="${step}"]`)
      || detail.querySelector('.blv-detail-error');
    const started = performance.now();
    row.click();
    while (!drawn() && performance.now() - started < 30000) { await frame(); }
    const found = drawn();
    if (!found || found.classList.contains('blv-detail-error')) {
      out.errors.push(found ? found.textContent : `step ${step}'s detail not drawn in 30 s`);
      continue;
    }
    out.detail.push(performance.now() - started);
  }
  const buttons = [...view.querySelectorAll('button[data-jump]:not([disabled])')];
  for (let round = 0; round < 4; round += 1) {
    for (const button of buttons) {
      await pause(50);
      out.jump.push(await timed(() => button.click()));
    }
  }
  const list = view.querySelector('.blv-scroll');
  list.focus();
  for (let i = 0; i < 20; i += 1) {
    await pause(50);
    const key = new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true });
    out.move.push(await timed(() => list.dispatchEvent(key)));
  }
  const search = view.querySelector('input.blv-search');
  const count = view.querySelector('.blv-count');
  search.focus();
  for (const ch of query) {
    await pause(50);
    // the search's answer listed (the count is written, whatever it says), then painted
    const listed = new Promise((resolve) => {
      const observer = new MutationObserver(() => {
        observer.disconnect();
        resolve(frame().then(() => performance.now()));
      });
      observer.observe(count, { childList: true, characterData: true, subtree: true });
    });
    const t = performance.now();
    out.search.push(await timed(() => {
      search.value += ch;
      search.dispatchEvent(new Event('input', { bubbles: true }));
    }));
    const answered = await Promise.race([listed, pause(10000).then(() => null)]);
    if (answered === null) { out.errors.push(`no answer listed for ${search.value}`); }
    else { out.answer.push(answered - t); }
  }
  search.value = '';
  search.dispatchEvent(new Event('input', { bubbles: true }));
  return out;
}"""

SETUP = """import gc
import budgetloop_widgets
from budgetloop import load_trace
from budgetloop_widgets import TraceView

view = None


def close(widget):
    if widget is not None:
        widget.close()
    gc.collect()


try:
    TraceView({tiny!r})
    how = "path"
except Exception as exc:
    how = f"load_trace ({{type(exc).__name__}})"
print("FILE", budgetloop_widgets.__file__)
print("HOW", how)"""

MARIMO_APP = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    import budgetloop_widgets
    from budgetloop import load_trace
    from budgetloop_widgets import TraceView

    view = {view}
    view
    return budgetloop_widgets, mo


@app.cell
def _(budgetloop_widgets, mo):
    mo.md("FILE `" + budgetloop_widgets.__file__ + "`")
    return


if __name__ == "__main__":
    app.run()
"""


class Failed(Exception):
    """A measurement that could not be made, and why."""


def why(exc: BaseException) -> str:
    """Why a measurement failed, in a line: the exception's type and its message's first line."""
    said = str(exc).splitlines()
    return f"{type(exc).__name__}: {said[0] if said else ''}"


def ms_row(name: str, samples: list[float], target: float | None = 16.0) -> Row:
    """Milliseconds as the slowest / median of ``samples``, beside ``target`` (met: the
    slowest within it)."""
    if not samples:
        return (name, "failed: no sample", "", None)
    slowest, median = max(samples), statistics.median(samples)
    shown = f"{slowest:.0f} / {median:.0f} ms ({len(samples)})"
    if target is None:
        return (name, shown, "", None)
    return (name, shown, f"<= {target:.0f} ms", slowest <= target)


def probe_how(tree: Path, tiny: str, folder: str) -> str:
    """How a cell opens a trace file in a view with ``tree``'s code: ``TraceView(path)``, or
    ``TraceView(load_trace(path))`` where the former raises."""
    script = f"from budgetloop_widgets import TraceView\nTraceView({tiny!r})\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=folder,
                         env={**os.environ, "PYTHONPATH": str(tree)})  # fmt: skip
    return "TraceView(path)" if out.returncode == 0 else "TraceView(load_trace(path))"


def kernel_spec(where: Path, name: str, tree: Path) -> None:
    """A kernel whose PYTHONPATH is ``tree``, so that it imports that code (``JUPYTER_PATH``)."""
    spec = where / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python", "env": {"PYTHONPATH": str(tree)},
    }), encoding="utf-8")  # fmt: skip


def lab_rows(
    big: int, repeats: int, cycles: int, trees: dict[str, Path], folder: Path
) -> list[Row]:
    """Goals 1 to 4 in JupyterLab: each tree's notebook (its own kernel) opened afresh for each
    of ``repeats`` runs, the trees alternating; then the heap over ``cycles`` opens and closes."""
    import nbformat

    from tests.jupyter_browser import KERNEL_IDLE, TOKEN, chromium, jupyter_server

    root = folder / "lab"
    root.mkdir()
    specs = folder / "jupyter-path"
    hows: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for i, (tree, where) in enumerate(trees.items()):
        sizes[tree] = varied_file(str(root / f"trace-{i}.jsonl"), big, where)
        varied_file(str(root / f"tiny-{i}.jsonl"), 3, where)
        kernel_spec(specs, f"bench-{i}", where)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(s) for s in (
            SETUP.format(tiny=f"tiny-{i}.jsonl"),
            "close(view)\nview = None",
            f"view = TraceView('trace-{i}.jsonl')\ndisplay(view)",
            f"view = TraceView(load_trace('trace-{i}.jsonl'))\ndisplay(view)",
        )]  # fmt: skip
        nb.metadata["kernelspec"] = {"name": f"bench-{i}", "display_name": f"bench-{i}",
                                     "language": "python"}  # fmt: skip
        nbformat.write(nb, root / f"bench-{i}.ipynb")
    opened: dict[str, list[float]] = {tree: [] for tree in trees}
    whole: dict[str, list[float]] = {tree: [] for tree in trees}
    acts: dict[str, dict[str, list[float]]] = {tree: {} for tree in trees}
    heaps: dict[str, list[float]] = {tree: [] for tree in trees}
    failed: dict[str, str] = {}
    os.environ["JUPYTER_PATH"] = str(specs)  # the server's environment: it finds the kernels
    try:
        with (
            jupyter_server("lab", root, folder) as lab,
            chromium(lab, folder / "profile") as browser,
        ):
            page = browser.page
            page.set_default_timeout(300_000)

            def run(k: int, wait: float = 600) -> None:
                """Run cell k; the command's promise settles once the kernel has replied."""
                page.evaluate(f"""() => {{
                  const notebook = window.jupyterapp.shell.currentWidget.content;
                  notebook.activeCellIndex = {k};
                  return window.jupyterapp.commands.execute('notebook:run-cell');
                }}""")
                idle(wait)

            def idle(wait: float = 600) -> None:
                page.wait_for_timeout(200)  # the kernel's busy first
                page.wait_for_function(KERNEL_IDLE, timeout=wait * 1000)

            def clear(k: int) -> None:
                page.evaluate(f"""() => {{
                  const notebook = window.jupyterapp.shell.currentWidget.content;
                  notebook.activeCellIndex = {k};
                  window.jupyterapp.commands.execute('notebook:clear-cell-output');
                }}""")

            def open_notebook(i: int, tree: str) -> int:
                """Open tree's notebook in a fresh page and run its setup: the cell to time.
                (The page before is closed without its "leave the page?" question.)"""
                nonlocal page
                page.close()
                page = browser.page.context.new_page()
                page.set_default_timeout(300_000)
                page.goto(f"{lab.base}/lab/workspaces/bench{i}/tree/bench-{i}.ipynb"
                          f"?token={TOKEN}")  # fmt: skip
                page.wait_for_function(
                    """() => window.jupyterapp
                    && window.jupyterapp.shell.currentWidget""",
                    timeout=180_000,
                )
                page.wait_for_function(KERNEL_IDLE, timeout=180_000)
                run(0)
                said = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content
                    .widgets[0].node.querySelector('.jp-OutputArea').innerText""")
                file = said.split("FILE", 1)[-1].split()[0] if "FILE" in said else said
                if not Path(file).is_relative_to(trees[tree]):
                    raise Failed(f"the kernel imported {file}, not {trees[tree]}")
                hows[tree] = "TraceView(path)" if "HOW path" in said else (
                    "TraceView(load_trace(path))")  # fmt: skip
                if tree not in acts or not acts[tree]:
                    print(
                        f"  {tree}: the kernel imports {file}; cells run {hows[tree]}",
                        file=sys.stderr,
                    )
                run(1)
                return 2 if hows[tree] == "TraceView(path)" else 3

            def open_view(k: int) -> dict[str, float]:
                clear(k)
                shown = page.evaluate(OPEN_VIEW, [k, 300_000])
                idle()
                if "error" in shown:
                    raise Failed(shown["error"])
                return shown

            names = list(trees)
            for rep in range(repeats):
                for tree in names if rep % 2 == 0 else names[::-1]:
                    if tree in failed:
                        continue
                    try:
                        k = open_notebook(names.index(tree), tree)
                        shown = open_view(k)
                        opened[tree].append(shown["first"] / 1e3)
                        whole[tree].append(shown["whole"] / 1e3)
                        got = page.evaluate(ACT, [k, f"part {big - 7}"])
                        for key, values in got.items():
                            acts[tree].setdefault(key, []).extend(values)
                        run(1)
                    except (Exception, pytest.fail.Exception) as exc:
                        failed[tree] = why(exc)
            for tree in names:  # the heap: a fresh page, the view opened and closed
                if tree in failed:
                    continue
                try:
                    k = open_notebook(names.index(tree), tree)
                    cdp = page.context.new_cdp_session(page)
                    for _ in range(cycles):
                        open_view(k)
                        run(1)  # the view closed in the kernel: its model closes in the page
                        clear(k)
                        page.wait_for_timeout(500)
                        cdp.send("HeapProfiler.collectGarbage")
                        heaps[tree].append(cdp.send("Runtime.getHeapUsage")["usedSize"] / 1e6)
                    cdp.detach()
                except (Exception, pytest.fail.Exception) as exc:
                    failed[tree] = why(exc)
    except (Exception, pytest.fail.Exception) as exc:
        reason = why(exc)
        for tree in trees:
            failed.setdefault(tree, reason)
    finally:
        del os.environ["JUPYTER_PATH"]
    return lab_table(big, sizes, repeats, trees, hows, opened, whole, acts, heaps, failed)


def lab_table(
    big: int,
    sizes: dict[str, int],
    repeats: int,
    trees: dict[str, Path],
    hows: dict[str, str],
    opened: dict[str, list[float]],
    whole: dict[str, list[float]],
    acts: dict[str, dict[str, list[float]]],
    heaps: dict[str, list[float]],
    failed: dict[str, str],
) -> list[Row]:
    """The Lab rows: for each measure, this tree's row, and the others' under it."""
    written = ", ".join(f"{tree} {size / 1e6:.0f} MB" for tree, size in sizes.items())
    rows: list[Row] = [(f"JupyterLab, {big:,} steps, own texts (as each side writes them: "
                        f"{written})", "", "", None)]  # fmt: skip

    def said(tree: str, name: str) -> str:
        how = hows.get(tree, "TraceView(path)")
        return name.replace("TraceView(path)", how) + ("" if tree == "now" else f", at {tree}")

    def seconds(name: str, by_tree: dict[str, list[float]], target: float | None) -> None:
        for tree, times in by_tree.items():
            label = said(tree, name)
            if tree in failed and len(times) < repeats:
                rows.append((label, f"failed: {failed[tree]}", "", None))
                continue
            goal = target if tree == "now" else None
            rows.append((label, spread(times), "" if goal is None else f"<= {goal} s",
                         None if goal is None else statistics.median(times) <= goal))  # fmt: skip

    seconds(f"  TraceView(path): run to first rows painted, min / median / max of {repeats}",
            opened, 1.0)  # fmt: skip
    seconds("  ... to every row, the banner and the charts (no aria-busy)", whole, None)
    for key, what, target in (
        ("move", "a row move (ArrowDown on the list)", 16.0),
        ("jump", "a jump (each enabled jump button)", 16.0),
        ("search", "a search keystroke (one more character)", 16.0),
        ("answer", "  ... to its answer listed and painted", 16.0),
        ("detail", "a step's detail, clicked until drawn", 50.0),
        ("none", "no action, timed the same (a frame's own wait)", None),
    ):
        for tree in trees:
            label = said(tree, f"  {what}, slowest / median ms (samples)")
            if tree in failed and not acts[tree].get(key):
                rows.append((label, f"failed: {failed[tree]}", "", None))
            else:
                rows.append(ms_row(label, acts[tree].get(key, []),
                                   target if tree == "now" else None))  # fmt: skip
        for tree in trees:
            for error in sorted(set(acts[tree].get("errors", []))) if key == "detail" else ():
                rows.append((said(tree, "    failed"), str(error)[:60], "", None))
    for tree, heap in heaps.items():
        label = said(tree, "  JS heap after opening and closing the view, 1st / last (of n)")
        if len(heap) < 2:
            rows.append((label, f"failed: {failed.get(tree, 'no heap read')}", "", None))
            continue
        bound = max(FLAT_MB, FLAT_SHARE * heap[0])
        rows.append((label.replace("of n", f"of {len(heap)}"),
                     f"{heap[0]:.0f} / {heap[-1]:.0f} MB",
                     f"flat: +{bound:.0f} MB at most" if tree == "now" else "",
                     heap[-1] - heap[0] <= bound if tree == "now" else None))  # fmt: skip
    return rows


# marimo's own part: this tree's app with a line of text where the view is, timed to it painted
FLOOR = "the floor"
FLOOR_TEXT = "no view here"


def marimo_rows(steps: int, repeats: int, trees: dict[str, Path], folder: Path) -> list[Row]:
    """Goal 5: TraceView in a ``marimo run`` app of each tree, from the page's navigation start
    to its rows painted, ``repeats`` times alternating (after one page each, not timed, that
    also shows which code the app imported); and in the same turns the same app of this tree
    with a line of text for the view (``FLOOR``), to that text painted: marimo's own part."""
    from playwright.sync_api import sync_playwright

    from tests.jupyter_browser import ARGS, CHROMIUM, marimo_app

    trees = {**trees, FLOOR: trees["now"]}
    times: dict[str, list[float]] = {tree: [] for tree in trees}
    hows: dict[str, str] = {}
    failed: dict[str, str] = {}
    try:
        with contextlib.ExitStack() as stack:
            urls = {}
            for i, (tree, where) in enumerate(trees.items()):
                app = folder / f"marimo-{i}"
                app.mkdir()
                varied_file(str(app / "trace.jsonl"), steps, where)
                hows[tree] = probe_how(where, "trace.jsonl", str(app))
                source = "'trace.jsonl'" if hows[tree] == "TraceView(path)" else (
                    "load_trace('trace.jsonl')")  # fmt: skip
                view = f"mo.ui.anywidget(TraceView({source}))" if tree != FLOOR else (
                    f"mo.md({FLOOR_TEXT!r})")  # fmt: skip
                (app / "app.py").write_text(MARIMO_APP.format(view=view), encoding="utf-8")
                urls[tree] = stack.enter_context(marimo_app(app, app, where))
            p = stack.enter_context(sync_playwright())
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            stack.callback(browser.close)

            def timed(tree: str, check: bool = False) -> float:
                page = browser.new_page()
                try:
                    page.set_default_timeout(300_000)
                    page.goto(urls[tree], wait_until="commit")
                    if tree == FLOOR:
                        page.get_by_text(FLOOR_TEXT).wait_for()
                    else:
                        page.wait_for_selector(".blv-row")
                    painted: float = page.evaluate(PAINTED) / 1e3
                    if check:
                        said = page.get_by_text("FILE ").first.inner_text(timeout=120_000)
                        file = said.split("FILE", 1)[-1].split()[0]
                        if not Path(file).is_relative_to(trees[tree]):
                            raise Failed(f"the app imported {file}, not {trees[tree]}")
                        runs = "a line of text" if tree == FLOOR else hows[tree]
                        print(f"  marimo {tree}: imports {file}; runs {runs}", file=sys.stderr)
                    return painted
                finally:
                    page.close()

            names = list(trees)
            for tree in names:
                try:
                    timed(tree, check=True)
                except (Exception, pytest.fail.Exception) as exc:
                    failed[tree] = why(exc)
            for rep in range(repeats):
                for tree in names if rep % 2 == 0 else names[::-1]:
                    if tree in failed:
                        continue
                    try:
                        times[tree].append(timed(tree))
                    except (Exception, pytest.fail.Exception) as exc:
                        failed[tree] = why(exc)
    except (Exception, pytest.fail.Exception) as exc:
        reason = why(exc)
        for tree in trees:
            failed.setdefault(tree, reason)
    rows: list[Row] = []
    for tree in trees:
        how = hows.get(tree, "TraceView(path)")
        label = (
            f"marimo run, {steps:,} steps, own texts, {how}: navigation to rows painted, "
            f"min / median / max of {repeats}"
        ) + ("" if tree == "now" else f", at {tree}")
        if tree == FLOOR:
            label = ("marimo run, the same app with a line of text for the view (marimo and "
                     f"the imports: {FLOOR}): navigation to it painted, min / median / max of "
                     f"{repeats}")  # fmt: skip
        if tree in failed and len(times[tree]) < repeats:
            rows.append((label, f"failed: {failed[tree]}", "", None))
        elif tree == "now":
            median = statistics.median(times[tree])
            rows.append((label, spread(times[tree]), "<= 1.0 s", median <= 1.0))
        else:
            rows.append((label, spread(times[tree]), "", None))
    return rows


def viewer_rows(
    big: int, marimo_steps: int, repeats: int = 5, cycles: int = 10, against: str | None = OLD
) -> list[Row]:
    """Issue 39's browser goals for ``TraceView`` of a trace file, this tree's code beside the
    code at ``against`` (each side's kernel and app import its own code, which writes its own
    trace format), in headless Chromium: JupyterLab at ``big`` steps, marimo at
    ``marimo_steps``."""
    sys.path.insert(0, str(ROOT))
    from tests.jupyter_browser import CHROMIUM

    if not Path(CHROMIUM).exists():
        return [("the viewer in the browser", f"not measured: {CHROMIUM} is missing", "", None)]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        trees = {"now": ROOT}
        if against is not None:
            try:
                trees[against] = tree_at(against, folder / "rev")
            except subprocess.CalledProcessError as exc:
                print(
                    f"  {against}: {exc.stderr.decode(errors='replace').strip()}", file=sys.stderr
                )
        rows = lab_rows(big, repeats, cycles, trees, folder)
        return rows + marimo_rows(marimo_steps, repeats, trees, folder)


def python_rows(repeats: int, big: int) -> list[Row]:
    rows: list[Row] = []
    small, large = panel_ratio(repeats)
    rows.append(("RunPanel refresh, step 400 / step 10", f"{large / small:.2f}x",
                 "<= 1.5x", large / small <= 1.5))  # fmt: skip
    small, large = panel_ratio(repeats, scripted_usage=True)
    rows.append(("  the same, model of fixed usage (warm caches)", f"{large / small:.2f}x",
                 "<= 1.5x", large / small <= 1.5))  # fmt: skip
    small, large = panel_ratio(repeats, 400, 4_000)
    both = f"{large / small:.2f}x ({small * 1e3:.1f} / {large * 1e3:.1f} ms)"
    rows.append(("RunPanel refresh, step 4,000 / step 400", both, "none: it grows", None))
    # one message a frame at most, and one at the step's end
    for gap in (0.0, 0.0002):
        sent, seconds = live_messages(5_000, gap)
        bound = int(seconds / FRAME) + 2
        rows.append((f"RunPanel live, 5,000 chunks {gap * 1e3:g} ms apart: messages to the page",
                     f"{sent / seconds:.0f}/s ({sent} in {seconds:.2f} s)",
                     f"<= {bound}: 1 a frame, 1 at the end", sent <= bound))  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        size = journal_file(str(path), big)
        out = subprocess.run(
            [sys.executable, "-c", OPEN, str(path)],
            capture_output=True, text=True, check=True, env={**os.environ},
        )  # fmt: skip
        load, view, peak, count, sent = out.stdout.split()
        rows.append((f"{int(count):,}-step JSON Lines ({size / 1e6:.0f} MB): load_trace",
                     f"{float(load):.2f} s", "", None))  # fmt: skip
        rows.append(("  then TraceView(trace) builds its data, Python side",
                     f"{float(view):.2f} s ({int(sent) / 1e6:.1f} MB)", "", None))  # fmt: skip
        rows.append(("  peak memory of the process", f"{int(peak) / 1e6:.0f} MB", "", None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 10,000 steps")
    parser.add_argument("--profile", action="store_true", help="the refresh's views, timed")
    parser.add_argument("--no-browser", action="store_true", help="the Python rows only")
    parser.add_argument("--browser-only", action="store_true", help="the browser rows only")
    parser.add_argument("--read", action="store_true", help="reading a saved run only")
    parser.add_argument("--static", action="store_true", help="the static page only")
    parser.add_argument(
        "--viewer",
        action="store_true",
        help="TraceView of a trace file only, in JupyterLab and marimo",
    )
    parser.add_argument("--against", metavar="REV",
                        help="git revision whose code is timed beside this tree's: for --read "
                             f"and --static main, for --viewer {OLD}; "
                             "'none' for this tree alone")  # fmt: skip
    args = parser.parse_args()
    if args.profile:
        refresh_profile()
        return
    big = 10_000 if args.quick else 100_000
    against = None if args.against == "none" else args.against or "main"
    older = OLD if args.against is None else against
    viewer = functools.partial(viewer_rows, big, 1_000 if args.quick else 10_000,
                               1 if args.quick else 5, 3 if args.quick else 10, older)  # fmt: skip
    if args.read:
        print_rows(read_rows(big, 1 if args.quick else 5, against))
        return
    if args.static:
        print_rows(static_rows(big, 1 if args.quick else 5, against))
        return
    if args.viewer:
        print_rows(viewer())
        return
    rows = [] if args.browser_only else python_rows(3 if args.quick else 15, big)
    if not args.no_browser:
        rows += browser_rows(big, 1_000 if args.quick else 10_000, 1 if args.quick else 3)
        rows += viewer()
    print_rows(rows)


def print_rows(rows: list[Row]) -> None:
    width = max(len(r[0]) for r in rows)
    for name, measured, target, met in rows:
        verdict = "" if met is None else ("met" if met else "MISSED")
        print(f"{name:<{width}}  {measured:>22}  {target:<12} {verdict}".rstrip())


if __name__ == "__main__":
    main()
