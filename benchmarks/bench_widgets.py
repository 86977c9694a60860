"""How fast the Jupyter panel and the trace viewer are, Python side, measured in one run.

    python benchmarks/bench_widgets.py            # the rows below (about half a minute)
    python benchmarks/bench_widgets.py --quick    # a smoke run: the same code, fewer repeats

Rows, each with the issue's target:
- a RunPanel refresh at step 400 against one at step 10 (a ratio: at most 1.5x), after a step
  of a fake model that counts its whole request (so the refresh starts on CPU caches that walk
  evicted) and after one of fixed usage (the refresh's own growth alone); at step 4,000 against
  step 400 (no target: it shows what still grows with the run, the passes over
  every step that the charts and the meter make before bucketing);
- a TraceView of 10,000 steps built and drawn (at most 1 s);
- moving that view to a step, the slowest of many steps spread over it (at most 50 ms);
- a 100,000-step JSON Lines trace (written by ``run(..., trace_path=...)``'s format) loaded
  and opened in a TraceView, in a fresh process: seconds and peak memory (5 s, 1 GB).

Every time is a median after a warm-up; the panel's two refreshes alternate so a noisy neighbour
slows both. Timing never fails the script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import journal_file  # the same 100,000-step trace as bench.py's row

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
from budgetloop_widgets import RunPanel, TraceView

PRICE = Price(3.0, 15.0)  # assumed rates


@tool
def read(topic: str) -> str:
    """Read about a topic.

    Args:
        topic: what to read about
    """
    return f"notes on {topic}. " * 30


def session(scripted_usage: bool = False) -> Session:
    """A run reading one topic a turn. By default the fake model counts its whole request
    each turn (as ``ScriptedModel`` does), which walks the whole context: the refresh after
    it starts on cold CPU caches. ``scripted_usage`` gives every turn a fixed ``Usage``
    instead (an O(1) model, as in bench.py), so only the refresh's own growth is measured."""
    turn = Completion(
        text="reading",
        tool_calls=[ToolCall("read", {"topic": "budgets"})],
        usage=Usage(1_000, 20) if scripted_usage else None,
    )
    model = ScriptedModel([turn], price=PRICE, max_output_tokens=500, repeat_last=True)
    return start(model, "Go.", tools=[read], budget=Budget(max_steps=100_000), repeat_limit=None)


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    action()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def panel_ratio(
    repeats: int, first: int = 10, second: int = 400, scripted_usage: bool = False
) -> tuple[float, float]:
    """The refresh that follows a step (as a click on Step does), at two step counts."""
    early, late = RunPanel(session(scripted_usage)), RunPanel(session(scripted_usage))
    for _ in range(first):
        early.session.step()
    for _ in range(second):
        late.session.step()
    early.refresh()
    late.refresh()
    small, large = [], []
    for _ in range(repeats):  # alternate, so both see the same machine
        for panel, times in ((early, small), (late, large)):
            panel.session.step()  # not timed: the model's turn
            started = time.perf_counter()
            panel.refresh()
            times.append(time.perf_counter() - started)
    return statistics.median(small), statistics.median(large)


def refresh_profile(repeats: int = 41) -> None:
    """Each view function the panel calls, timed inside the refresh that follows a step (medians,
    us), at step 10 and step 400, after a counting model's step and after a fixed-usage one."""
    from budgetloop_widgets import _panel

    names = ("stop_html", "meter_html", "steps_html", "charts_html", "context_html")
    spent: dict[str, list[float]] = {name: [] for name in names}
    originals = {name: getattr(_panel, name) for name in names}

    def timed(name: str) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            out = originals[name](*args, **kwargs)
            spent[name].append(time.perf_counter() - started)
            return out

        return call

    print("refresh after a step of | at step | " + " | ".join(names) + " | whole refresh")
    try:
        for name in names:
            setattr(_panel, name, timed(name))
        for scripted in (False, True):
            for steps in (10, 400):
                panel = RunPanel(session(scripted))
                for _ in range(steps):
                    panel.session.step()
                panel.refresh()
                spent.update({name: [] for name in names})
                whole = []
                for _ in range(repeats):
                    panel.session.step()
                    started = time.perf_counter()
                    panel.refresh()
                    whole.append(time.perf_counter() - started)
                cells = [f"{statistics.median(spent[n]) * 1e6:.0f}" for n in names]
                model = "a fixed-usage model" if scripted else "a counting model"
                print(f"{model} | {steps} | " + " | ".join(cells) +
                      f" | {statistics.median(whole) * 1e6:.0f}")  # fmt: skip
    finally:
        for name, original in originals.items():
            setattr(_panel, name, original)


OPEN = """
import resource, sys, time
from budgetloop import load_trace
from budgetloop_widgets import TraceView
started = time.perf_counter()
trace = load_trace(sys.argv[1])
loaded = time.perf_counter()
view = TraceView(trace)
view.show(len(view.result.steps) - 1)
opened = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(loaded - started, opened - loaded, peak, len(view.result.steps))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="few repeats, 10,000-line journal")
    parser.add_argument(
        "--profile", action="store_true", help="only the refresh's view functions, timed"
    )
    args = parser.parse_args()
    if args.profile:
        refresh_profile()
        return
    repeats = 3 if args.quick else 15
    rows = []

    small, large = panel_ratio(repeats)
    rows.append(("RunPanel refresh, step 400 / step 10", f"{large / small:.2f}x",
                 f"{small * 1e3:.1f} ms / {large * 1e3:.1f} ms", "<= 1.5x"))  # fmt: skip
    small, large = panel_ratio(repeats, scripted_usage=True)
    rows.append(("  the same, model of fixed usage (warm caches)", f"{large / small:.2f}x",
                 f"{small * 1e3:.1f} ms / {large * 1e3:.1f} ms", "<= 1.5x"))  # fmt: skip
    small, large = panel_ratio(repeats, 400, 4_000)
    rows.append(("RunPanel refresh, step 4,000 / step 400", f"{large / small:.2f}x",
                 f"{small * 1e3:.1f} ms / {large * 1e3:.1f} ms", "none: it grows"))  # fmt: skip

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        journal_file(str(path), 10_000)
        from budgetloop import load_trace

        trace = load_trace(path)
        opened = median_seconds(lambda: TraceView(trace), max(repeats // 3, 1))
        rows.append(("TraceView of 10,000 steps opens", f"{opened:.3f} s", "", "<= 1 s"))
        view = TraceView(trace)
        spread = range(0, 10_000, 10_000 // (20 if args.quick else 200))
        slowest = max(median_seconds(lambda i=i: view.show(i), 1) for i in [*spread, 9_999])
        rows.append(
            ("move to a step (slowest of many)", f"{slowest * 1e3:.1f} ms", "", "<= 50 ms")
        )

        big = 10_000 if args.quick else 100_000
        journal_file(str(path), big)
        size = path.stat().st_size
        out = subprocess.run(
            [sys.executable, "-c", OPEN, str(path)],
            capture_output=True, text=True, check=True, env={**os.environ},
        )  # fmt: skip
        load, view_open, peak, count = out.stdout.split()
        total = float(load) + float(view_open)
        rows.append(
            (
                f"{int(count):,}-step JSON Lines ({size / 1e6:.0f} MB) loads and opens",
                f"{total:.2f} s",
                f"peak {int(peak) / 1e6:.0f} MB",
                "<= 5 s, <= 1 GB",
            )
        )
        rows.append(("  of which load_trace (the core)", f"{float(load):.2f} s", "", ""))
        rows.append(("  of which TraceView opens", f"{float(view_open):.2f} s", "", ""))

    width = max(len(r[0]) for r in rows)
    for name, value, detail, target in rows:
        print(f"{name:<{width}}  {value:>9}  {detail:<22}  target {target}")


if __name__ == "__main__":
    main()
