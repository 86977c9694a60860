"""Drive a real Jupyter front end (JupyterLab 4 or Notebook 7) in headless Chromium.

Shared by the browser tests. It needs /usr/bin/chromium (Debian's package; Playwright cannot
download its own browser here). Everything Jupyter, IPython and chromium write goes to a
private temp folder; each server runs in its own process group and only that group is stopped.
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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import nbformat
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

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

# The two front ends: how to start each, with its app object exposed as window.jupyterapp.
APPS = {
    "lab": ["-m", "jupyterlab", "--LabApp.news_url=None", "--LabApp.expose_app_in_browser=True"],
    "notebook": ["-m", "notebook", "--JupyterNotebookApp.expose_app_in_browser=True"],
}

KERNEL_IDLE = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    const kernel = widget && widget.sessionContext && widget.sessionContext.session
        && widget.sessionContext.session.kernel;
    return kernel && kernel.status === 'idle';
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def private_env(home: Path, theme: str | None = None) -> dict[str, str]:
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
    # the kernel imports this checkout's packages, not another copy installed in the venv
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    settings = home / "lab-settings" / "@jupyterlab"
    write_json(
        settings / "apputils-extension" / "notification.jupyterlab-settings",
        {"fetchNews": "false", "checkForUpdates": False},
    )
    write_json(
        settings / "docmanager-extension" / "plugin.jupyterlab-settings", {"autosave": False}
    )
    if theme is not None:  # e.g. "JupyterLab Dark", as the Settings menu names it
        write_json(
            settings / "apputils-extension" / "themes.jupyterlab-settings", {"theme": theme}
        )
    return env


def stripped_copy(source: Path, target: Path) -> None:
    """The notebook without outputs or saved widget state, so only a live widget can pass."""
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, target)


def write_notebook(path: Path, *sources: str) -> None:
    """A notebook of code cells, one per source, never run."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)


def need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"NO BROWSER TEST: {CHROMIUM} is missing (apt-get install chromium)")


@dataclass
class Server:
    """A running Jupyter server: its base URL and the environment it (and the browser) use."""

    base: str
    env: dict[str, str]
    log: Path

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}?token={TOKEN}"


@contextmanager
def jupyter_server(
    app: str, root: Path, workdir: Path, theme: str | None = None
) -> Iterator[Server]:
    """Start ``app`` ("lab" or "notebook") serving ``root`` in ``theme`` (the default theme
    when None); stop it (and its kernels) after."""
    need_chromium()
    # chromium's singleton socket path must stay short: not under pytest's deep tmp_path
    home = Path(tempfile.mkdtemp(prefix="blb-"))
    env = private_env(home, theme)
    port = free_port()
    log_path = workdir / f"{app}.log"
    log = log_path.open("wb")
    server = subprocess.Popen(
        [
            sys.executable, *APPS[app], "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(
            f"{base}/api/status?token={TOKEN}", server, log, log_path, f"Jupyter ({app})"
        )
        yield Server(base, env, log_path)
    finally:
        stop(server)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def marimo_app(folder: Path, workdir: Path, code: Path = ROOT) -> Iterator[str]:
    """``marimo run`` serving ``folder/app.py`` on a free port, in its own process group, with
    ``code`` (a checkout: this one unless said) first on the path; its URL. Stopped (and only
    it) afterwards."""
    need_chromium()
    home = Path(tempfile.mkdtemp(prefix="blm-"))
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])),
    }
    port = free_port()
    log_path = workdir / "marimo.log"
    log = log_path.open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", "app.py", "--headless", "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/health", server, log, log_path, "marimo")
        yield base
    finally:
        stop(server)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def stop(server: subprocess.Popen[bytes]) -> None:
    """End a server started in its own process group (and only that group): SIGTERM, then
    SIGKILL after 20 s."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@dataclass
class Browser:
    """One page in headless Chromium, with every page error and dialog it saw."""

    page: Page
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@contextmanager
def chromium(server: Server, profile: Path) -> Iterator[Browser]:
    from playwright.sync_api import Dialog, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            env=server.env,
            viewport={"width": 1280, "height": 1800},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            browser = Browser(page)

            def on_dialog(dialog: Dialog) -> None:
                browser.dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            page.on("pageerror", lambda exc: browser.errors.append(str(exc)))
            page.on("dialog", on_dialog)
            yield browser
        finally:
            context.close()


def open_and_run_all(page: Page, url: str) -> None:
    """Open a notebook, wait for its kernel to be idle, and run all its cells."""
    page.goto(url)
    page.wait_for_function(
        "() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=30_000
    )
    page.wait_for_function(KERNEL_IDLE, timeout=30_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def wait_until_idle(page: Page) -> None:
    """Wait until every cell has run: no cell shows ``[*]`` and the kernel is idle."""
    page.wait_for_function(
        """() => !Array.from(document.querySelectorAll('.jp-InputPrompt'))
                .some(p => p.textContent.includes('*'))""",
        timeout=30_000,
    )
    page.wait_for_function(KERNEL_IDLE, timeout=30_000)


def expected_meter() -> tuple[str, str]:
    """The meter's projection before and after one step, computed here from the stepping
    notebook's own setup cell, so the browser must show exactly what the core computes."""
    from budgetloop_widgets import projection_text

    nb = nbformat.read(ROOT / "notebooks" / "stepping.ipynb", as_version=4)
    setup = next(c.source for c in nb.cells if "def make_session" in c.source)
    namespace: dict[str, object] = {}
    exec(setup, namespace)
    session = namespace["make_session"]()  # type: ignore[operator]
    before = projection_text(session.projection)
    session.step()
    return before, projection_text(session.projection)


def wait_until_up(
    url: str, server: subprocess.Popen[bytes], log: IO[bytes], log_path: Path, what: str
) -> None:
    """Poll ``url`` until it answers 200; fail with the server's log if it exits or a minute
    passes first."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            log.flush()
            pytest.fail(f"{what} did not start:\n" + log_path.read_text())
        time.sleep(0.25)
