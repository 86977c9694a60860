"""A provider played by ``httpx.MockTransport``: serves recorded bodies in order, keeps what the
real SDK client sent."""

from __future__ import annotations

import copy
import importlib
import json
from importlib.metadata import requires
from pathlib import Path
from types import ModuleType
from typing import Any

PAYLOADS = Path(__file__).parent / "fixtures" / "provider-payloads"


def http_library(sdk: str) -> ModuleType:
    """The HTTP client package an SDK is built on: newer openai and anthropic releases require
    ``httpx2`` (and refuse an ``httpx.Client``), older ones ``httpx``; both have MockTransport."""
    needs = {
        r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip()
        for r in requires(sdk) or []
    }
    return importlib.import_module("httpx2" if "httpx2" in needs else "httpx")


def payload(name: str) -> dict[str, Any]:
    """A recorded response body, as a fresh dict the test may change."""
    return copy.deepcopy(json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8")))


class Provider:
    """Answers each request with the next ``(status, body)``; records path and JSON body."""

    def __init__(self, sdk: str, *responses: tuple[int, dict[str, Any]]) -> None:
        self.http = http_library(sdk)
        self.responses = list(responses)
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content))
        if not self.responses:
            return self.http.Response(500, json={"error": {"message": "no response left"}})
        status, body = self.responses.pop(0)
        return self.http.Response(status, json=body)

    def client(self) -> Any:
        return self.http.Client(transport=self.http.MockTransport(self))

    def async_client(self) -> Any:
        return self.http.AsyncClient(transport=self.http.MockTransport(self))
