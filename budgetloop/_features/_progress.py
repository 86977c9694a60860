"""Progress of a batch: an ipywidgets bar in a notebook, tqdm in a terminal, else plain lines on
stderr. Neither ipywidgets nor tqdm is needed: each is imported only when it is used."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections import Counter
from html import escape
from typing import IO, Any

from .._engine._types import format_usd
from .._trace._result import Result

IGNORE_MATH = ("tex2jax_ignore", "mathjax_ignore")  # classes MathJax 2 and 3 leave alone


class Progress:
    """Counts finished runs by stop reason and says what was spent; prints lines to a stream.

    On a terminal the line is rewritten in place; elsewhere (a log) a line is printed at every
    tenth of the batch and at its end.
    """

    def __init__(self, total: int, ledger: Any = None, stream: IO[str] | None = None) -> None:
        self.total = total
        self.ledger = ledger
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.stops: Counter[str] = Counter()
        self.cost_usd = 0.0
        self._lock = threading.Lock()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._shown_tenth = -1

    def update(self, result: Result) -> None:
        with self._lock:
            self.done += 1
            self.stops["running" if result.stop is None else result.stop.value] += 1
            self.cost_usd += result.cost_usd or 0.0  # a run of its own: always known
            self.show()

    def spent(self) -> str:
        if self.ledger is None:
            return f"spent {format_usd(self.cost_usd)}"
        try:
            spent, limit = self.ledger.spent_usd(), self.ledger.limit_usd
        except Exception as exc:  # a store that is down must not stop the batch's display
            return f"spent $? of the ledger ({type(exc).__name__})"
        return f"spent {format_usd(spent)} of {format_usd(limit)}"

    def summary(self) -> str:
        stops = " · ".join(f"{stop} {n}" for stop, n in sorted(self.stops.items()))
        parts = [f"{self.done}/{self.total} runs", *([stops] if stops else []), self.spent()]
        return " · ".join(parts)

    def show(self) -> None:
        if self._tty:
            self.stream.write("\r" + self.summary())
            self.stream.flush()
            return
        tenth = self.done * 10 // max(self.total, 1)
        if tenth != self._shown_tenth or self.done == self.total:
            self._shown_tenth = tenth
            self.stream.write(self.summary() + "\n")
            self.stream.flush()

    def close(self) -> None:
        with self._lock:
            if self._tty:
                self.stream.write("\n")
                self.stream.flush()


class TqdmProgress(Progress):
    """A tqdm bar, the stop reasons and the spend in its postfix."""

    def __init__(self, total: int, ledger: Any = None) -> None:
        super().__init__(total, ledger)
        tqdm = importlib.import_module("tqdm")
        self.bar = tqdm.tqdm(total=total, unit="run", file=sys.stderr)

    def show(self) -> None:
        stops = " ".join(f"{stop}={n}" for stop, n in sorted(self.stops.items()))
        self.bar.set_postfix_str(f"{stops} {self.spent()}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        with self._lock:
            self.bar.close()


class WidgetProgress(Progress):
    """An ipywidgets bar with the summary as text: HTML-escaped, in an element MathJax leaves
    alone (a Label is typeset as math, so "spent $6.87 of $25.00" lost its dollars)."""

    def __init__(self, total: int, ledger: Any = None) -> None:
        super().__init__(total, ledger)
        widgets = importlib.import_module("ipywidgets")
        display = importlib.import_module("IPython.display").display

        self.bar = widgets.IntProgress(value=0, min=0, max=max(total, 1), description="runs")
        self.label = widgets.HTML(value=self.line())
        self.box = widgets.VBox([self.bar, self.label])
        for name in IGNORE_MATH:
            self.box.add_class(name)
        # the widget, and the summary as the text a saved notebook shows where it is not drawn
        self.shown = display(self.bundle(), raw=True, display_id=True)

    def bundle(self) -> dict[str, Any]:
        """The box as a notebook displays it, its plain text the summary (not its repr)."""
        data = dict(self.box._repr_mimebundle_())
        data["text/plain"] = self.summary()
        return data

    def line(self) -> str:
        """The summary as the widget shows it."""
        return f'<span class="{" ".join(IGNORE_MATH)}">{escape(self.summary())}</span>'

    def show(self) -> None:
        self.bar.value = self.done
        self.label.value = self.line()

    def close(self) -> None:
        with self._lock:
            self.bar.bar_style = "success"
            self.label.value = self.line()
            if self.shown is not None:
                self.shown.update(self.bundle(), raw=True)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython already imported, with a kernel)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def choose(enabled: bool, total: int, ledger: Any) -> Progress | None:
    if not enabled:
        return None
    if in_notebook() and has("ipywidgets"):
        return WidgetProgress(total, ledger)
    if sys.stderr.isatty() and has("tqdm"):
        return TqdmProgress(total, ledger)
    return Progress(total, ledger)
