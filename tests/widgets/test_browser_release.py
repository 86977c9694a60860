"""The viewer lets go of a run when its view is removed (issue 29, item 12): a re-run cell or
Clear Outputs removes the view, anywidget calls the function ``render`` returned, and the page can
free the run's data. Measured in headless Chromium on the viewer module as anywidget loads it
(its default export), with the page's garbage collected through the DevTools protocol."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from budgetloop import Budget, Completion, Message, Price, ScriptedModel, ToolCall, start, tool
from budgetloop_widgets import TraceView
from budgetloop_widgets._page import asset
from tests.jupyter_browser import ARGS, CHROMIUM, need_chromium

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><meta charset="utf-8"><body><script type="module">
import widget from "./viewer.js";
window.exported = Object.keys(await import("./viewer.js"));
const raw = new Uint8Array(await (await fetch("./data.bin")).arrayBuffer());
// A host as anywidget is one: the model keeps its listeners until they are taken off, and the
// host keeps the function render returned after it has called it.
const kept = [];
const live = [];
window.mount = () => {
  const el = document.createElement("div");
  document.body.append(el);
  const listeners = new Set();
  const model = { page: true, get: (k) => (k === "data" ? raw : -1), set() {}, save_changes() {},
                  on(name, f) { listeners.add(f); }, off(name, f) { listeners.delete(f); },
                  send() {}, listeners };
  const cleanup = widget.render({ model, el });
  live.push({ el, cleanup, model });
  rows.push(...[...el.querySelectorAll(".blv-row")].map((row) => new WeakRef(row)));
  return el.querySelectorAll(".blv-row").length;
};
const rows = [];
window.rowsAlive = () => rows.filter((row) => row.deref() !== undefined).length;
window.removeAll = () => {
  while (live.length) { const v = live.pop(); v.cleanup(); v.el.remove(); kept.push(v); }
};
window.ready = true;
</script></body>"""


@tool
def read(page: int) -> str:
    """Read a page."""
    return f"page {page}: " + "words of a page " * 20


def turn(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
    page = len(messages)  # each step's texts its own, as a real run's are
    return Completion(text=f"reading page {page}", tool_calls=[ToolCall("read", {"page": page})])


def long_run(steps: int) -> TraceView:
    model = ScriptedModel([turn], repeat_last=True, price=Price(1.0, 2.0), max_output_tokens=50)
    session = start(model, "go", tools=[read], budget=Budget(max_steps=steps), repeat_limit=None)
    result = session.run()
    assert len(result.steps) == steps
    return TraceView(result)


@contextmanager
def served(folder: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page.html"
    finally:
        server.shutdown()
        server.server_close()


def test_a_removed_view_lets_go_of_its_run_and_render_is_the_default_export(
    tmp_path: Path,
) -> None:
    need_chromium()
    from playwright.sync_api import sync_playwright

    view = long_run(5_000)
    (tmp_path / "viewer.js").write_text(asset("viewer.js"), encoding="utf-8")
    (tmp_path / "data.bin").write_bytes(view.data)
    (tmp_path / "page.html").write_text(PAGE, encoding="utf-8")
    with served(tmp_path) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.wait_for_function("() => window.ready === true", timeout=30_000)
            # anywidget warns on every view of a module that exports render by name
            assert "render" not in page.evaluate("() => window.exported")
            cdp = page.context.new_cdp_session(page)

            def heap() -> float:
                for _ in range(3):
                    cdp.send("HeapProfiler.collectGarbage")
                return float(cdp.send("Runtime.getHeapUsage")["usedSize"])

            before = heap()
            assert page.evaluate("() => window.mount()") > 0
            page.wait_for_timeout(100)  # a frame, and the list's observer has fired
            one = heap() - before  # what one view on screen holds
            page.evaluate("() => window.removeAll()")
            page.wait_for_timeout(100)
            after_one = heap()  # the first view removed (the module's own state stays)
            for _ in range(4):
                assert page.evaluate("() => window.mount()") > 0
                page.wait_for_timeout(100)
            page.evaluate("() => window.removeAll()")
            page.wait_for_timeout(100)
            # four more views drawn and removed, as a cell re-run four times: their host still
            # holds what it held (the model, the function render returned, the element)
            added = heap() - after_one
            alive = page.evaluate("() => window.rowsAlive()")
            assert errors == []
        finally:
            browser.close()
    assert alive == 0  # not one row of the five views is left
    assert one > 500_000, one  # the measure sees a view
    assert added < one / 4, (added, one)  # four removed views hold under a quarter of one
