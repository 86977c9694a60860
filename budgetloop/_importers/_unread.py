"""Files of formats ``load_trace`` does not read, recognised so that the error says what was
found rather than only what is read: a LangSmith run export, smolagents' memory steps.
(OpenLLMetry's spans are OTLP JSON: ``_otlp`` names them.)"""

from __future__ import annotations

from typing import Any

LANGSMITH = (
    "a LangSmith run export (runs with run_type, inputs and outputs), which load_trace does "
    "not read"
)
SMOLAGENTS = (
    "smolagents' memory steps (step_number, model_output, observations), which load_trace does "
    "not read"
)


def _records(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        for key in ("runs", "steps", "data"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def named(document: Any) -> str | None:
    """What a file that no importer reads holds, when it is a format known not to be read."""
    records = _records(document)
    if any({"run_type", "inputs", "outputs"} <= r.keys() for r in records):
        return LANGSMITH
    if any("step_number" in r and ("observations" in r or "model_output" in r) for r in records):
        return SMOLAGENTS
    return None
