"""budgetloop's spans in a real MLflow tracking server (issue 28): MLflow shows what budgetloop
billed, at every level, not its own price of the tokens.

MLflow runs from a venv of its own (``.venv-mlflow``, which ``.ci/run`` makes, as it makes
Phoenix's), bound to 127.0.0.1 on a free port, its database in a temp dir; its start (database
migrations) is waited for at most 180 s, and the server's process group is stopped at the end.
A run is sent over OTLP/HTTP naming a model MLflow has a price for (gpt-4o-mini), at rates far
from it, and read back with MLflow's own client, in MLflow's venv: the trace's cost and each
model call's cost are budgetloop's, with the input, output and total MLflow's UI shows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MLFLOW_PYTHON = Path(
    os.environ.get("BUDGETLOOP_MLFLOW_PYTHON", ROOT / ".venv-mlflow" / "bin" / "python")
)
try:
    HAVE_EXPORTER = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
except ModuleNotFoundError:  # no opentelemetry at all
    HAVE_EXPORTER = False

pytestmark = [
    pytest.mark.skipif(
        not MLFLOW_PYTHON.exists(),
        reason=f"no MLflow at {MLFLOW_PYTHON}: .ci/run installs mlflow into .venv-mlflow "
        "(python3 -m venv .venv-mlflow && .venv-mlflow/bin/pip install mlflow)",
    ),
    pytest.mark.skipif(not HAVE_EXPORTER, reason="needs the OTLP/HTTP exporter (the dev extra)"),
    pytest.mark.timeout(300),
]

READ_BACK = """
import json, sys
import mlflow
mlflow.set_tracking_uri(sys.argv[1])
out = []
for trace in mlflow.search_traces(locations=["0"], return_type="list"):
    spans = [(s.name, s.attributes.get("mlflow.llm.cost")) for s in trace.data.spans]
    out.append({"cost": trace.info.cost, "spans": spans})
print(json.dumps(out))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An MLflow tracking server on loopback for this module; its base URL."""
    folder = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    command = [str(MLFLOW_PYTHON), "-m", "mlflow", "server", "--host", "127.0.0.1",
               "--port", str(port), "--workers", "1",
               "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
               "--default-artifact-root", str(folder / "artifacts")]  # fmt: skip
    log = (folder / "mlflow.log").open("wb")
    server = subprocess.Popen(
        command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # its database migrations take most of a minute here
        while True:
            if server.poll() is not None:
                pytest.fail(f"MLflow exited ({server.returncode}); see {folder / 'mlflow.log'}")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5):  # loopback only
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"MLflow did not answer in 180 s; see {folder / 'mlflow.log'}")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and the workers it started
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def traces_of(base: str) -> list[dict[str, Any]]:
    """The default experiment's traces, as MLflow's client reads them, once one has a cost."""
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(
            [str(MLFLOW_PYTHON), "-c", READ_BACK, base],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        found: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        if (found and found[0]["cost"]) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_mlflow_shows_what_budgetloop_billed(mlflow_server: str) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from budgetloop.otel import OtelHook
    from tests.otel_support import ceiling_run

    provider = TracerProvider()
    exporter = OTLPSpanExporter(
        endpoint=f"{mlflow_server}/v1/traces", headers={"x-mlflow-experiment-id": "0"}
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = OtelHook(provider, content=True, agent_name="pricer", model="gpt-4o-mini")
    result = ceiling_run(on_step=hook).run()
    provider.shutdown()
    assert result.cost_usd == 0.0123  # at the run's Price(2.5, 10.0), not gpt-4o-mini's

    (trace,) = traces_of(mlflow_server)
    # the trace: what budgetloop billed (180 output tokens at $10 a million, the rest input)
    assert trace["cost"] == {"input_cost": 0.0105, "output_cost": 0.0018, "total_cost": 0.0123}
    costs = dict(trace["spans"])
    assert costs["invoke_agent pricer"] == trace["cost"]  # the run span carries it
    chats = [cost for name, cost in trace["spans"] if name.startswith("chat ")]
    assert [c["total_cost"] for c in chats] == [s.cost_usd for s in result.steps]
    assert [c["output_cost"] for c in chats] == [0.0006, 0.0004, 0.0004, 0.0004]
    assert [round(c["input_cost"], 10) for c in chats] == [0.003, 0.00225, 0.0025, 0.00275]
    tools = [cost for name, cost in trace["spans"] if name.startswith("execute_tool ")]
    assert tools == [None] * 4  # a tool costs nothing, and MLflow does not price it
