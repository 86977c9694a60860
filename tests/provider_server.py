"""A provider played by ``httpx.MockTransport``: serves recorded bodies in order, keeps what the
real SDK client sent."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx

PAYLOADS = Path(__file__).parent / "fixtures" / "provider-payloads"


def payload(name: str) -> dict[str, Any]:
    """A recorded response body, as a fresh dict the test may change."""
    return copy.deepcopy(json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8")))


class Provider:
    """Answers each request with the next ``(status, body)``; records path and JSON body."""

    def __init__(self, *responses: tuple[int, dict[str, Any]]) -> None:
        self.responses = list(responses)
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content))
        if not self.responses:
            return httpx.Response(500, json={"error": {"message": "no response left"}})
        status, body = self.responses.pop(0)
        return httpx.Response(status, json=body)

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))
