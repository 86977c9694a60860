"""Real MCP servers for the tests, written with the ``mcp`` SDK.

``demo()`` is an ``MCPServer`` with a tool of each kind of answer: text, a structured value, an
error it reports (``isError``), an exception, an image, a call that hangs, and (over stdio
only) one that makes the server exit mid-run. ``hostile()`` is a low-level server whose tools
have the names, descriptions and schemas a hostile or careless server might list; each answers
with the arguments it got, so a test sees what reached the server. ``python
tests/mcp_servers.py`` serves ``demo(can_exit=True)`` over stdio (``--chatty``: saying so on its
stderr as it starts and as it ends); ``serve_http`` serves one over streamable HTTP on 127.0.0.1
on a free port, in a thread, until the block ends. ``NEVER_ANSWERS`` (a script) and
``never_answering_http`` are servers that take the request to start and never answer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server import Server
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PNG = b"\x89PNG\r\n\x1a\n" + bytes(92)  # 100 bytes the model must never see


def demo(*, can_exit: bool = False) -> MCPServer:
    server = MCPServer("demo")

    @server.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!"

    @server.tool(structured_output=False)
    def lines(count: int) -> list[str]:
        """Some lines of text, as content blocks."""
        return [f"line {i}" for i in range(count)]

    @server.tool()
    def refuse(reason: str) -> str:
        """Refuse, for a reason."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def boom() -> str:
        """Raise."""
        raise ValueError("kaboom")

    @server.tool()
    def picture() -> Image:
        """A picture."""
        return Image(data=PNG, format="png")

    @server.tool()
    async def hang(seconds: float = 60.0) -> str:
        """Take a long time."""
        await asyncio.sleep(seconds)
        return "done at last"

    if can_exit:

        @server.tool()
        def exit_now(code: int = 3) -> str:
            """Make the server exit."""
            sys.stderr.write("demo: exiting as asked\n")
            sys.stderr.flush()
            os._exit(code)

    return server


@dataclass
class Box:
    w: int
    h: int | None = None
    note: str = "none"


def boxes() -> MCPServer:
    """A tool whose schema strict mode can express: optional fields, a nested class."""
    server = MCPServer("boxes")

    @server.tool()
    def place(name: str, box: Box, count: int = 1) -> str:
        """Place a box."""
        return f"{name} {box} {count}"

    return server


_DEEP: dict[str, Any] = {"type": "integer"}
for _ in range(100):
    _DEEP = {"type": "object", "properties": {"x": _DEEP}}

HOSTILE_TOOLS = [
    types.Tool(  # a name no provider accepts, markup and control characters in the text
        name="files.read/v2 <b>",
        description="<script>alert(1)</script>\x1b[31m\u202e reads a file",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    types.Tool(
        name="huge",
        description="x" * 200_000,
        input_schema={
            "type": "object",
            "properties": {f"p{i}": {"type": "integer", "minimum": i} for i in range(2_000)},
        },
    ),
    types.Tool(
        name="deep",
        description=None,
        input_schema={"type": "object", "properties": {"root": _DEEP}},
    ),
    types.Tool(
        name="refs",
        description="refers",
        input_schema={
            "type": "object",
            "properties": {
                "node": {"$ref": "#/$defs/Node"},
                "old": {"$ref": "#/definitions/Old"},
                "far": {"$ref": "https://example.com/schema.json"},
            },
            "required": ["node"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                }
            },
            "definitions": {"Old": {"type": "string", "maxLength": 3}},
        },
    ),
    types.Tool(
        name="choice",
        description="anyOf and more",
        input_schema={
            "type": "object",
            "properties": {
                "pick": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["a", "b"]}]},
                "when": {
                    "type": "string",
                    "format": "date-time",
                    "not": {"const": "never"},
                    "if": {"minLength": 3},
                },
                "count": {"type": "integer", "minimum": "five"},
            },
            "patternProperties": {"^x-": {"type": "string"}},
        },
    ),
    types.Tool(name="bare", description="no properties", input_schema={"type": "object"}),
]


def hostile(name: str = "hostile", tools: list[types.Tool] = HOSTILE_TOOLS) -> Server[Any]:
    """A low-level server listing ``tools`` as written; each answers with what it got."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="ok")],
            structured_content={"tool": params.name, "got": params.arguments or {}},
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_http(server: MCPServer) -> Iterator[str]:
    """``server`` over streamable HTTP on 127.0.0.1, on a free port, until the block ends:
    yields its URL."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP HTTP server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        thread.join(30)
        sock.close()


NEVER_ANSWERS = """\
import sys
sys.stderr.write("stuck: reading stdin, answering nothing\\n")
sys.stderr.flush()
for line in sys.stdin:
    pass
"""  # a stdio server that reads every request and answers none (it ends when its stdin does)


@contextlib.contextmanager
def never_answering_http() -> Iterator[str]:
    """A server on 127.0.0.1 that accepts each connection and never answers on it, until the
    block ends: yields a URL on it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)
    done = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        done.set()
        thread.join(10)
        listener.close()
        for sock in held:
            sock.close()


if __name__ == "__main__":
    chatty = "--chatty" in sys.argv[1:]
    if chatty:
        sys.stderr.write("demo: up on stdio\n")
        sys.stderr.flush()
    demo(can_exit=True).run("stdio")
    if chatty:
        sys.stderr.write("demo: stdin closed, bye\n")
        sys.stderr.flush()
