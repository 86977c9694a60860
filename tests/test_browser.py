"""The stepping notebook in a real JupyterLab, in headless Chromium: the panel renders and steps.

Only this level sees a widget that renders but cannot be clicked. It needs /usr/bin/chromium
(Debian's package; Playwright cannot download its own browser here).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TOKEN = "budgetloop-browser-test"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

KERNEL_IDLE = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    const kernel = widget && widget.sessionContext && widget.sessionContext.session
        && widget.sessionContext.session.kernel;
    return kernel && kernel.status === 'idle';
}"""

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def private_env(home: Path) -> dict[str, str]:
    """Jupyter, IPython and chromium write into $HOME and /tmp: give them a folder of their own."""
    env = dict(os.environ)
    places = {
        "HOME": "home",
        "TMPDIR": "tmp",
        "XDG_CACHE_HOME": "cache",
        "XDG_CONFIG_HOME": "config",
        "JUPYTER_CONFIG_DIR": "jupyter-config",
        "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
        "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
        "IPYTHONDIR": "ipython",
    }
    for name, sub in places.items():
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    settings = home / "lab-settings" / "@jupyterlab"
    write_json(
        settings / "apputils-extension" / "notification.jupyterlab-settings",
        {"fetchNews": "false", "checkForUpdates": False},
    )
    write_json(
        settings / "docmanager-extension" / "plugin.jupyterlab-settings", {"autosave": False}
    )
    return env


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def expected_meter() -> tuple[str, str]:
    """The meter's projection before and after one step, computed here from the notebook's own
    setup cell, so the browser must show exactly what the core computes."""
    from budgetloop_widgets import projection_text

    nb = nbformat.read(ROOT / "notebooks" / "stepping.ipynb", as_version=4)
    setup = next(c.source for c in nb.cells if "def make_session" in c.source)
    namespace: dict[str, Any] = {}
    exec(setup, namespace)
    session = namespace["make_session"]()
    before = projection_text(session.projection)
    session.step()
    return before, projection_text(session.projection)


def stripped_copy(source: Path, target: Path) -> None:
    """The notebook without outputs or saved widget state, so only a live widget can pass."""
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, target)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"NO BROWSER TEST: {CHROMIUM} is missing (apt-get install chromium)")
    # chromium's singleton socket path must stay short: not under pytest's deep tmp_path
    home = Path(tempfile.mkdtemp(prefix="blb-"))
    env = private_env(home)
    root = tmp_path / "root"
    root.mkdir()
    stripped_copy(ROOT / "notebooks" / "stepping.ipynb", root / "stepping.ipynb")
    port = free_port()
    log = (tmp_path / "lab.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
            "--LabApp.news_url=None", "--LabApp.expose_app_in_browser=True",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.close()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
            time.sleep(0.25)
        yield base, env
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def test_stepping_notebook_panel_steps_in_jupyterlab(
    lab: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, env = lab
    before, after = expected_meter()
    errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            env=env,
            viewport={"width": 1280, "height": 1800},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{base}/lab/tree/stepping.ipynb?token={TOKEN}")
            page.wait_for_function(
                "() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=30_000
            )
            page.wait_for_function(KERNEL_IDLE, timeout=30_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            panel = page.locator(".bl-panel")
            expect(panel).to_be_visible(timeout=30_000)
            meter = panel.locator(".bl-projection")
            expect(meter).to_have_text(before, timeout=15_000)
            expect(panel.locator(".bl-running")).to_have_text("running: 0 steps taken")
            step = panel.get_by_role("button", name="Step", exact=True)
            expect(step).to_be_enabled()
            step.click()
            expect(panel.locator(".bl-step-head").first).to_contain_text("Step 0", timeout=15_000)
            expect(meter).to_have_text(after)
            assert before != after
            expect(panel.locator(".bl-running")).to_have_text("running: 1 steps taken")
            expect(panel.locator("td.bl-status").first).to_have_text("ok")
            expect(panel.locator("svg.bl-chart")).to_have_count(2)
            panel.scroll_into_view_if_needed()
            box = panel.bounding_box()
            assert box is not None
            page.screenshot(
                path=str(ARTIFACTS / "panel-step.png"),
                clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": 1000},
            )
            panel.get_by_role("button", name="Run", exact=True).click()
            stop = panel.locator(".bl-stop-head")
            expect(stop).to_contain_text(
                "Run ended: max_cost_usd — did NOT answer", timeout=15_000
            )
            expect(step).to_be_disabled()
            panel.screenshot(path=str(ARTIFACTS / "panel.png"))
        finally:
            context.close()
    assert errors == []
