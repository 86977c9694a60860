"""``connect``: one MCP server, opened on an event loop of its own, its tools as budgetloop tools.

The client (``mcp.Client``) is entered and left by one task on the connection's loop (the SDK's
task groups ask for that), which holds it open until ``close()``. Each tool call is a task of
its own there, reached from any thread or loop (``LoopThread``). A server that exits, a
connection that breaks, a call past ``timeout``: each is an error result for that call, and the
connection, once lost, answers every later call at once with why, so a run never hangs or
raises on it. A start that does not finish within ``timeout`` is cut short by the SDK's own
cancellation (which still stops a subprocess), and ``close()`` waits a bounded time for that:
a stuck server costs its ``timeout`` and a little more, never a wait of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TextIO, cast

import anyio
import mcp
from mcp.client.stdio import stdio_client

from .._engine._valid import must, type_name
from .._schema._tool import NeedsApproval, check_needs_approval
from ._thread import LoopThread
from ._tools import McpTool, ServerError, tool_names

__all__ = ["Connection", "connect"]

_OPEN_TIMEOUT = 30.0  # seconds to start and list the tools, when ``timeout`` is None
_CLOSE_TIMEOUT = 10.0  # seconds to wait for an open client to close before it is cut short
_CUT_SHORT = 0.5  # seconds to wait for a start cut short to end; the rest ends on its own loop
_STDERR_TAIL = 2_000  # characters of a subprocess's stderr an error message quotes
_PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_URL = re.compile(r"([a-z]+://)([^/?#]*)(.*)", re.DOTALL)  # scheme, authority, the rest


def connect(
    target: Sequence[str] | str | Any,
    *,
    prefix: str | None = None,
    timeout: float | None = None,
    needs_approval: NeedsApproval | Mapping[str, NeedsApproval] = False,
    strict: bool = False,
) -> Connection:
    """One MCP server, to use as ``with connect(target) as server: run(..., tools=server.tools)``
    (``async with`` under ``arun``).

    ``target`` is a command (a list of strings: the server is started as a subprocess and
    spoken to over stdio, stopped at exit, its stderr kept for error messages), an ``http://``
    or ``https://`` URL (streamable HTTP), or an MCP server object in this process
    (``mcp.server.mcpserver.MCPServer`` or a low-level ``mcp.server.Server``). ``prefix``
    names the tools ``{prefix}_{name}``, to tell two servers' tools apart. ``timeout`` is the
    seconds a call may take before it is an error result (None: no limit of its own; the
    run's ``max_seconds`` still abandons it), and the seconds to start (default 30).
    ``needs_approval`` holds calls for a person as ``@tool(needs_approval=...)`` does: True, or
    a predicate of a call's arguments, for every tool of the server; or a dict of those by tool
    name, as the server lists its tools. ``strict=True`` sends each tool whose schema strict
    mode can express in the strict form ``@tool(strict=True)`` writes (its repr says why one
    could not be); the others are sent as written.
    """
    return Connection(
        target, prefix=prefix, timeout=timeout, needs_approval=needs_approval, strict=strict
    )


class Connection:
    """An MCP server's connection: ``.tools`` are its tools while it is open (``with`` or
    ``async with``); ``.name`` is the server's name, as it gives it (else one made from the
    target); ``.stderr`` what a subprocess wrote to its stderr so far, kept after it closes."""

    def __init__(
        self,
        target: Any,
        *,
        prefix: str | None = None,
        timeout: float | None = None,
        needs_approval: NeedsApproval | Mapping[str, NeedsApproval] = False,
        strict: bool = False,
    ) -> None:
        self._client_target, self.name = _read_target(target)
        # what error messages call an HTTP target: its URL as given (a password hidden)
        self._url = _shown_url(target) if isinstance(target, str) else None
        self._approval = _read_approval(needs_approval)
        if not isinstance(strict, bool):
            raise TypeError(must("connect", "strict", "True or False", type_name(strict)))
        self.strict = strict
        if prefix is not None and (not isinstance(prefix, str) or not _PREFIX.match(prefix)):
            expected = "1 to 32 letters, digits, '_' or '-', or None"
            got = type_name(prefix) if not isinstance(prefix, str) else repr(prefix)
            error = TypeError if not isinstance(prefix, str) else ValueError
            raise error(must("connect", "prefix", expected, got))
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        ):
            raise TypeError(must("connect", "timeout", "a number > 0 or None", type_name(timeout)))
        if timeout is not None and not timeout > 0:
            raise ValueError(must("connect", "timeout", "a number > 0 or None", repr(timeout)))
        self.prefix = prefix
        self.timeout = None if timeout is None else float(timeout)
        self._tools: list[McpTool] | None = None
        self._thread: LoopThread | None = None
        self._client: Any = None
        self._closing = asyncio.Event()  # set on the loop by close(): the client is left
        self._opening: anyio.CancelScope | None = None  # cancelled to cut a start short
        self._held: concurrent.futures.Future[None] | None = None
        self._closed = False
        self._lost: str | None = None  # why the connection is gone, once it is
        self._stderr: TextIO | None = None
        self._stderr_kept = ""  # what the file held when it was closed
        self._lock = threading.Lock()

    # -- opening and closing --------------------------------------------------------------------

    def open(self) -> Connection:
        """Open the connection without a ``with`` block (a notebook's cells); ``close()``
        ends it."""
        return self.__enter__()

    def __enter__(self) -> Connection:
        ready = self._start()
        try:
            listed = ready.result(self.timeout or _OPEN_TIMEOUT)
        except BaseException as exc:
            error = self._unreachable(exc)
            self._close(_CUT_SHORT)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise error from None
        self._made(listed)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Connection:
        ready = self._start()
        try:
            listed = await asyncio.wait_for(
                asyncio.wrap_future(ready), self.timeout or _OPEN_TIMEOUT
            )
        except BaseException as exc:
            error = self._unreachable(exc)
            await asyncio.to_thread(self._close, _CUT_SHORT)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise error from None
        self._made(listed)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def _start(self) -> concurrent.futures.Future[list[Any]]:
        with self._lock:
            if self._thread is not None:
                raise RuntimeError(
                    f"connect: the connection to {self.name!r} must be a new one, got one "
                    "opened already (open or closed); call connect() again for a new one."
                )
            self._thread = LoopThread(f"budgetloop-mcp-{self.name}")
            if isinstance(self._client_target, mcp.StdioServerParameters):
                # the subprocess writes to it, error messages quote it, close() keeps it
                self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._held = self._thread.submit(self._hold(ready))
        return ready

    def close(self) -> None:
        """Close the connection (a subprocess is stopped); its tools answer with an error
        result from then on. Closing twice is fine."""
        self._close(_CLOSE_TIMEOUT if self._client is not None else _CUT_SHORT)

    def _close(self, seconds: float) -> None:
        """Leave the client, waiting ``seconds`` at most: a client still starting is cut short,
        one that takes longer to close is cut short then, and what is left of either ends on
        the connection's loop, which stops once it has (a subprocess is still stopped)."""
        with self._lock:
            thread, held = self._thread, self._held
            if thread is None or held is None or self._closed:
                return
            self._closed = True
        self._lost = self._lost or f"the connection to the MCP server {self.name!r} was closed"
        self._on_loop(thread, self._leave)
        with contextlib.suppress(BaseException):
            held.result(seconds)
        if held.done():
            thread.stop()
        else:
            self._on_loop(thread, self._cut_short)
            held.add_done_callback(lambda _: thread.stop())
        self._keep_stderr()

    @staticmethod
    def _on_loop(thread: LoopThread, callback: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed already
            thread.loop.call_soon_threadsafe(callback)

    def _leave(self) -> None:
        """On the loop: an open client is left as it closes; a start is cut short."""
        self._closing.set()
        if self._client is None:
            self._cut_short()

    def _cut_short(self) -> None:
        """On the loop: cancel the client's task by the SDK's own means (anyio), under which it
        still stops a subprocess; cancelling the task itself could leave one running."""
        if self._opening is not None:
            self._opening.cancel()

    async def _hold(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """Open the client, list the tools, and keep it open until ``close()``."""
        try:
            with anyio.CancelScope() as self._opening:
                if self._closing.is_set():  # closed before this task began
                    return
                async with mcp.Client(self._transport()) as client:
                    listed = await _list_tools(client)
                    # The SDK checks each answer with jsonschema, imported at its first call
                    # (some seconds on a busy machine): imported now, so no call pays for it.
                    with contextlib.suppress(ImportError):
                        importlib.import_module("jsonschema")
                    info = getattr(client, "server_info", None)
                    name = getattr(info, "name", None)
                    if isinstance(name, str) and name.strip():
                        self.name = name
                    self._client = client
                    if not ready.done():  # else given up on (``async with`` cancels it)
                        ready.set_result(listed)
                    await self._closing.wait()
        except BaseException as exc:  # kept as why the connection is gone
            if not ready.done():
                ready.set_exception(exc)
            self._lost = self._lost or self._why(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._lost = self._lost or f"the MCP server {self.name!r} closed the connection"
            if not ready.done():  # cut short by close()
                ready.set_exception(ConnectionError(self._lost))

    def _transport(self) -> Any:
        target = self._client_target
        if isinstance(target, mcp.StdioServerParameters):
            if self._stderr is None:  # closed before this task began
                raise ConnectionError(self._lost)
            return stdio_client(target, errlog=self._stderr)
        return target

    def _keep_stderr(self) -> None:
        """Keep what the subprocess wrote, as the file that holds it is closed."""
        with self._lock:
            file = self._stderr
            if file is None:
                return
            self._stderr_kept = self._read_stderr(file)
            self._stderr = None
            with contextlib.suppress(OSError):
                file.close()

    def _made(self, listed: list[Any]) -> None:
        tools = [McpTool(self, spec) for spec in listed]
        try:
            tool_names(tools, self.name)
        except ValueError:
            self.close()
            raise
        rules = self._approval
        if isinstance(rules, Mapping):
            unknown = [name for name in rules if name not in {t.remote_name for t in tools}]
            if unknown:
                self.close()
                listed_names = ", ".join(repr(t.remote_name) for t in tools) or "none"
                raise ValueError(
                    must(
                        "connect",
                        "needs_approval",
                        f"a dict of the tools {self.name!r} lists ({listed_names})",
                        f"{unknown[0]!r}",
                    )
                )
        for t in tools:
            t.needs_approval = (
                rules.get(t.remote_name, False) if isinstance(rules, Mapping) else rules
            )
        self._tools = tools

    # -- what callers read ----------------------------------------------------------------------

    @property
    def tools(self) -> list[McpTool]:
        """The server's tools, as budgetloop tools for ``tools=``."""
        if self._tools is None:
            raise RuntimeError(
                f"connect: the connection to {self.name!r} must be opened for its tools to be "
                "known, got one not opened yet; use them inside `with connect(...) as server:` "
                "(or `async with`)."
            )
        return list(self._tools)

    @property
    def stderr(self) -> str:
        """What the server's subprocess wrote to its stderr so far, kept after ``close()`` ("" for
        other targets)."""
        with self._lock:
            file = self._stderr
            return self._stderr_kept if file is None else self._read_stderr(file)

    @staticmethod
    def _read_stderr(file: TextIO) -> str:
        try:
            file.flush()
            return os.pread(file.fileno(), 1 << 20, 0).decode("utf-8", "replace")
        except (OSError, ValueError):  # ValueError: closed
            return ""

    def __repr__(self) -> str:
        state = "open" if self._tools is not None and self._lost is None else "not open"
        count = len(self._tools or ())
        return f"<Connection to MCP server {self.name!r}: {state}, {count} tools>"

    # -- calls ----------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The server's answer to one call (``mcp``'s ``CallToolResult``), from any thread's
        event loop; a connection that is gone or a call past ``timeout`` is a
        ``ServerError`` saying so."""
        thread = self._thread
        if self._lost is not None or thread is None or thread.loop.is_closed():
            # the model reads this
            raise ServerError(self._lost or f"the MCP server {self.name!r} is not open")
        try:
            return await thread.wait(self._call(name, arguments))
        except RuntimeError as exc:  # the loop closed under the call
            raise ServerError(self._lost or str(exc)) from None  # the model reads this

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        client = self._client
        try:
            if self.timeout is None:
                return await client.call_tool(name, arguments)
            return await asyncio.wait_for(client.call_tool(name, arguments), self.timeout)
        except asyncio.TimeoutError:
            raise ServerError(  # the model reads this
                f"the MCP server {self.name!r} did not answer within {self.timeout:g} s"
            ) from None
        except mcp.MCPError as exc:
            if exc.code != mcp.types.CONNECTION_CLOSED:  # the server refused this request
                raise ServerError(  # the model reads this
                    f"the MCP server {self.name!r} refused the call: {exc}"
                ) from None
            self._lost = self._lost or self._why(exc)
            raise ServerError(self._lost) from None  # the model reads this
        except Exception as exc:  # a broken stream, a transport that failed
            self._lost = self._lost or self._why(exc)
            raise ServerError(self._lost) from None  # the model reads this

    def _why(self, exc: BaseException) -> str:
        """Why the connection is gone, with the end of the server's stderr if it wrote any."""
        inner = _innermost(exc)
        said = f"{type(inner).__name__}: {inner}" if str(inner) else type(inner).__name__
        why = f"the connection to the MCP server {self.name!r} is lost ({said})"
        tail = self.stderr.strip()[-_STDERR_TAIL:]
        return f"{why}; its stderr ends: {tail}" if tail else why

    def _unreachable(self, exc: BaseException) -> Exception:
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)):
            reason = f"it did not start within {self.timeout or _OPEN_TIMEOUT:g} s"
        else:
            inner = _innermost(exc)
            reason = f"{type(inner).__name__}: {inner}"
        tail = self.stderr.strip()[-_STDERR_TAIL:]
        if tail:
            reason += f"; its stderr ends: {tail}"
        shown = self._url or self.name
        return ConnectionError(
            must("connect", "target", "an MCP server that answers", f"{shown!r} ({reason})")
        )


async def _list_tools(client: Any) -> list[Any]:
    """Every tool the server lists, page by page (at most 100 pages)."""
    tools: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _read_approval(value: Any) -> NeedsApproval | Mapping[str, NeedsApproval]:
    """``needs_approval`` as ``connect`` takes it: one rule, or a dict of rules by tool name."""
    if isinstance(value, Mapping):
        for name, rule in value.items():
            if not isinstance(name, str):
                raise TypeError(
                    must(
                        "connect",
                        "needs_approval",
                        "a dict keyed by tool name",
                        f"a key of type {type_name(name)}",
                    )
                )
            check_needs_approval(rule, f"connect: needs_approval[{name!r}]")
        return dict(value)
    if isinstance(value, bool) or callable(value):
        return cast(NeedsApproval, value)
    expected = "True, False, a function (arguments) -> bool, or a dict of those by tool name"
    raise TypeError(must("connect", "needs_approval", expected, type_name(value)))


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what failed)."""
    for _ in range(20):
        inner = getattr(exc, "exceptions", None)
        if not isinstance(inner, tuple) or not inner or not isinstance(inner[0], BaseException):
            break
        exc = inner[0]
    return exc


def _read_target(target: Any) -> tuple[Any, str]:
    """What ``mcp.Client`` is given for ``target``, and a name for the server until it says
    its own."""
    expected = "a command (a list of str), an http:// or https:// URL, or an MCP server object"
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            host = target.split("//", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
            return target, host
        raise ValueError(
            must("connect", "target", expected, repr(target))
            + " Write a command as a list: ['python', 'server.py']."
        )
    if isinstance(target, (list, tuple)):
        if not target or not all(isinstance(part, str) for part in target):
            raise TypeError(
                must("connect", "target", expected, "a list holding " + _kinds(target))
            )
        params = mcp.StdioServerParameters(command=target[0], args=list(target[1:]))
        return params, _command_name(target)
    if isinstance(target, (mcp.server.Server, mcp.server.mcpserver.MCPServer)):
        name = getattr(target, "name", None)
        return target, name if isinstance(name, str) and name else type(target).__name__
    raise TypeError(must("connect", "target", expected, type_name(target)))


def _shown_url(url: str) -> str:
    """``url`` as given, but a password in it (``http://ann:***@host/mcp``)."""
    parts = _URL.match(url)
    if parts is None:
        return url
    start, authority, rest = parts.groups()
    userinfo, at, host = authority.rpartition("@")
    if ":" in userinfo:
        authority = userinfo.split(":", 1)[0] + ":***" + at + host
    return start + authority + rest


def _command_name(command: Sequence[str]) -> str:
    """A command's name for messages until the server says its own: the file name of its last
    argument that looks like one (``server.py``), else the program's."""
    for part in reversed(command[1:]):
        if part and not part.startswith("-") and not any(c.isspace() for c in part):
            return os.path.basename(part.rstrip("/")) or part
    return os.path.basename(command[0]) or command[0]


def _kinds(items: Sequence[Any]) -> str:
    if not items:
        return "nothing"
    return ", ".join(sorted({type_name(i) for i in items}))
