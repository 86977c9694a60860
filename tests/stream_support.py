"""Server-sent events served through httpx's MockTransport to the real openai and anthropic SDK
clients: the recorded SSE bodies of tests/adapters/sse/, and a server that streams them (and can
break off). bench.py's timing of a long stream is benchmarks/chat_stream.py's
(``time_chat_stream``), checked here on a short one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from benchmarks.chat_stream import time_chat_stream
from tests.provider_server import http_library

__all__ = ["BROKEN", "Streamer", "recorded", "time_chat_stream"]

SSE = Path(__file__).parent / "adapters" / "sse"
BROKEN = "peer closed connection without sending complete message body (incomplete chunked read)"


def recorded(name: str) -> list[bytes]:
    """A recorded SSE body, as its events (each with its blank line)."""
    body = (SSE / f"{name}.sse").read_bytes()
    return [event + b"\n\n" for event in body.split(b"\n\n") if event]


class Streamer:
    """Answers each request with ``events`` as a ``text/event-stream`` body, a network chunk
    each; ``broken``: the connection breaks off after that many events. Keeps the request
    bodies the SDK sent, how many events of the last body were sent, and whether the client
    closed it."""

    def __init__(self, sdk: str, events: list[bytes], *, broken: int | None = None) -> None:
        self.http = http_library(sdk)
        self.events = events
        self.broken = broken
        self.bodies: list[dict[str, Any]] = []
        self.sent = 0
        self.closed = False

    def _answer(self, request: Any, body: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        self.sent, self.closed = 0, False
        return self.http.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    def _events(self) -> Iterator[bytes]:
        for i, event in enumerate(self.events):
            if i == self.broken:
                raise self.http.RemoteProtocolError(BROKEN)
            self.sent += 1
            yield event

    def client(self) -> Any:
        server = self

        class Body(self.http.SyncByteStream):  # type: ignore[name-defined,misc]
            def __iter__(self) -> Iterator[bytes]:
                return server._events()

            def close(self) -> None:
                server.closed = True

        return self.http.Client(
            transport=self.http.MockTransport(lambda request: self._answer(request, Body()))
        )

    def async_client(self) -> Any:
        server = self

        class Body(self.http.AsyncByteStream):  # type: ignore[name-defined,misc]
            async def __aiter__(self) -> AsyncIterator[bytes]:
                for event in server._events():
                    await asyncio.sleep(0)  # a network read: other tasks run between chunks
                    yield event

            async def aclose(self) -> None:
                server.closed = True

        return self.http.AsyncClient(
            transport=self.http.MockTransport(lambda request: self._answer(request, Body()))
        )
