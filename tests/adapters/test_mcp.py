"""``budgetloop.mcp``: an MCP server's tools in ``tools=``, against real servers written with the
``mcp`` SDK: in process, over stdio (a subprocess) and over streamable HTTP (127.0.0.1, a free
port). Each kind of answer, a tool that raises, one that hangs past the deadline, a server that
exits mid-run, and hostile names, descriptions and schemas.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp.types as types

from budgetloop import (
    Budget,
    CallRecord,
    Completion,
    Result,
    ScriptedModel,
    ToolCall,
    arun,
    replay,
    run,
    tool,
)
from budgetloop.mcp import connect
from tests.mcp_servers import (
    NEVER_ANSWERS,
    PNG,
    demo,
    hostile,
    never_answering_http,
    serve_http,
)

ROOT = Path(__file__).resolve().parents[2]
STDIO = [sys.executable, str(ROOT / "tests" / "mcp_servers.py")]


def calls(*turns: list[ToolCall], answer: str = "done") -> ScriptedModel:
    """A model that asks for each turn's calls, then answers."""
    return ScriptedModel([*(Completion(tool_calls=t) for t in turns), answer])


def outcomes(result: Result) -> list[tuple[str, str, str | None]]:
    return [
        (c.name, c.status, c.result if c.status == "ok" else c.error) for c in result.tool_calls
    ]


# -- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "options", "error", "message"),
    [
        ("python server.py", {}, ValueError,
         "connect: target must be a command (a list of str), an http:// or https:// URL, or an MCP server object, got 'python server.py'. Write a command as a list: ['python', 'server.py']."),
        (["python", 3], {}, TypeError,
         "connect: target must be a command (a list of str), an http:// or https:// URL, or an MCP server object, got a list holding int, str."),
        ([], {}, TypeError,
         "connect: target must be a command (a list of str), an http:// or https:// URL, or an MCP server object, got a list holding nothing."),
        (3.5, {}, TypeError,
         "connect: target must be a command (a list of str), an http:// or https:// URL, or an MCP server object, got float."),
        (["x"], {"prefix": "a b"}, ValueError,
         "connect: prefix must be 1 to 32 letters, digits, '_' or '-', or None, got 'a b'."),
        (["x"], {"prefix": 1}, TypeError,
         "connect: prefix must be 1 to 32 letters, digits, '_' or '-', or None, got int."),
        (["x"], {"timeout": 0}, ValueError, "connect: timeout must be a number > 0 or None, got 0."),
        (["x"], {"timeout": "5"}, TypeError, "connect: timeout must be a number > 0 or None, got str."),
    ],
)  # fmt: skip
def test_a_wrong_target_or_option_fails_before_anything_starts(
    target: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        connect(target, **options)
    assert str(info.value) == message


def test_the_tools_are_known_once_the_server_is_open() -> None:
    server = connect(demo())
    with pytest.raises(RuntimeError) as info:
        server.tools  # noqa: B018
    assert str(info.value) == (
        "connect: the connection to 'demo' must be opened for its tools to be known, got one "
        "not opened yet; use them inside `with connect(...) as server:` (or `async with`)."
    )


def test_a_connection_opens_once() -> None:
    server = connect(demo())
    with server:
        pass
    with pytest.raises(RuntimeError) as info, server:
        pass
    assert str(info.value) == (
        "connect: the connection to 'demo' must be a new one, got one opened already (open or "
        "closed); call connect() again for a new one."
    )


def test_two_tools_one_name_once_written_as_a_model_calls_them_fail_at_connect() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    listed = [types.Tool(name=n, input_schema=schema) for n in ("files.read", "files_read")]
    with (
        pytest.raises(ValueError, match=r"^connect: the names") as info,
        connect(hostile("twins", listed)),
    ):
        pass
    assert str(info.value) == (
        "connect: the names of an MCP server's tools must be distinct once written as a model "
        "calls them, got 'files.read' and 'files_read' of 'twins', both 'files_read'."
    )
    assert "budgetloop-mcp-twins" not in {t.name for t in threading.enumerate()}  # closed


def test_a_schema_whose_defs_are_not_an_object_is_sent_not_strict() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "$defs": [1]}
    with connect(hostile("odd", [types.Tool(name="t", input_schema=schema)]), strict=True) as s:
        (listed,) = s.tools
    assert (
        listed.not_strict == "$defs and required must be an object and a list, got list and list"
    )
    assert "strict" not in listed.schema


def test_a_command_that_is_not_a_server_fails_at_connect_with_its_stderr() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('no server here\\n')"]
    started = time.monotonic()
    with pytest.raises(ConnectionError) as info, connect(command, timeout=20):
        pass
    assert time.monotonic() - started < 20  # the exit is seen, not waited out
    message = str(info.value)
    assert message.startswith("connect: target must be an MCP server that answers, got 'python")
    assert message.endswith("; its stderr ends: no server here).")


# -- in process -----------------------------------------------------------------------------------


def test_each_kind_of_answer_is_what_the_model_reads() -> None:
    with connect(demo()) as server:
        assert server.name == "demo"
        assert [t.name for t in server.tools] == [
            "add", "greet", "lines", "refuse", "boom", "picture", "hang",
        ]  # fmt: skip
        model = calls([
            ToolCall("add", {"a": "3"}, "c1"),  # a number written as a string: coerced
            ToolCall("greet", {"name": "Ann"}, "c2"),
            ToolCall("lines", {"count": 2}, "c3"),
            ToolCall("refuse", {"reason": "not today"}, "c4"),
            ToolCall("boom", {}, "c5"),
            ToolCall("picture", {}, "c6"),
            ToolCall("add", {"a": "x"}, "c7"),
            ToolCall("add", {"b": 1}, "c8"),
        ])  # fmt: skip
        result = run(model, "go", tools=server.tools)
    assert result.answered
    assert outcomes(result) == [
        ("add", "ok", "5"),  # structured {"result": 5}, unwrapped as the output schema wraps it
        ("greet", "ok", "Hello, Ann!"),
        ("lines", "ok", "line 0\nline 1"),  # text blocks, one after another
        ("refuse", "error", "McpToolError: Error executing tool refuse: refused: not today"),
        ("boom", "error", "McpToolError: Error executing tool boom"),
        ("picture", "ok", "[image content: image/png, 100 bytes]"),
        ("add", "error", "add.a: expected integer, got str"),
        ("add", "error", "add.a: missing required argument"),
    ]
    assert result.tool_calls[0].coerced == ("add.a",)
    assert {c.server for c in result.tool_calls} == {"demo"}
    sent = json.dumps([m.content for m in model.requests[-1].messages])
    assert base64.b64encode(PNG).decode() not in sent  # never bytes in the context


def test_the_arguments_are_checked_in_the_words_of_a_functions_tool() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    wrong = [{"a": "x"}, {"a": 1.5}, {}, {"a": True}]
    asks = [ToolCall("add", args, f"c{i}") for i, args in enumerate(wrong)]
    with connect(demo()) as server:
        by_server = run(calls(asks), "go", tools=server.tools)
    by_function = run(calls(asks), "go", tools=[add])
    assert [c.error for c in by_server.tool_calls] == [
        "add.a: expected integer, got str",
        "add.a: expected integer, got 1.5",
        "add.a: missing required argument",
        "add.a: expected integer, got bool",
    ]
    assert [c.error for c in by_server.tool_calls] == [c.error for c in by_function.tool_calls]


def test_arguments_nested_too_deeply_are_said_to_be_and_never_sent() -> None:
    deep: list[Any] = []
    for _ in range(2999):
        deep = [deep]
    as_json = '{"a": ' + "[" * 3000 + "]" * 3000 + "}"
    asks = [ToolCall("add", {"a": deep}, "c1"), ToolCall("add", as_json, "c2")]
    with connect(demo()) as server:
        result = run(calls(asks, [ToolCall("add", {"a": 1}, "c3")]), "go", tools=server.tools)
    too_deep = "add: arguments must be nested at most 100 levels deep, got deeper"
    assert outcomes(result) == [("add", "error", too_deep), ("add", "error", too_deep),
                                ("add", "ok", "3")]  # fmt: skip


def test_the_schema_goes_to_the_model_as_the_server_wrote_it() -> None:
    with connect(demo()) as server:
        model = calls([])
        run(model, "go", tools=server.tools)
    add = next(s for s in model.requests[0].tools if s["name"] == "add")
    assert add == {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"title": "A", "type": "integer"},
                "b": {"default": 2, "title": "B", "type": "integer"},
            },
            "required": ["a"],
            "title": "addArguments",
        },
    }


def test_the_trace_names_each_calls_server_and_keeps_it_through_a_save(tmp_path: Path) -> None:
    @tool
    def local() -> str:
        """A function's tool."""
        return "here"

    path = tmp_path / "run.jsonl"
    with connect(demo()) as server:
        model = calls([ToolCall("greet", {"name": "Bo"}, "c1"), ToolCall("local", {}, "c2"),
                       ToolCall("greet", {}, "c3")])  # fmt: skip
        result = run(model, "go", tools=[*server.tools, local], trace_path=path)
    greet, own, wrong = result.tool_calls
    assert (greet.server, own.server, wrong.server) == ("demo", None, "demo")
    assert greet.to_dict()["server"] == "demo"
    assert "server" not in own.to_dict()  # a function's call is written as it always was
    assert CallRecord.from_dict(greet.to_dict()) == greet
    loaded = Result.from_dict(json.loads(json.dumps(result.to_dict())))
    assert [c.server for c in loaded.tool_calls] == ["demo", None, "demo"]
    from budgetloop import load_trace

    assert [c.server for c in load_trace(path).tool_calls] == ["demo", None, "demo"]
    replayed = replay(result)
    assert [c.server for c in replayed.tool_calls] == ["demo", None, "demo"]
    assert outcomes(replayed) == outcomes(result)


def test_redact_reaches_the_server_name() -> None:
    server_object = demo()
    server_object._lowlevel_server.name = "demo-sk-123"  # a name that carries a secret
    with connect(server_object) as server:
        result = run(calls([ToolCall("greet", {"name": "Al"}, "c1")]), "go",
                     tools=server.tools, redact=lambda s: s.replace("sk-123", "***"))  # fmt: skip
    assert result.tool_calls[0].server == "demo-***"


def test_two_servers_with_one_tool_name_need_a_prefix() -> None:
    with connect(demo()) as first, connect(demo()) as second:
        with pytest.raises(ValueError, match="two named 'add'") as info:
            run(calls([]), "go", tools=[*first.tools, *second.tools])
        assert str(info.value) == (
            "run: tools must be functions of distinct names, got two named 'add', one of the "
            "MCP server 'demo' and one of the MCP server 'demo'. Pass connect(..., prefix=...) "
            "to tell them apart."
        )

        @tool
        def greet(name: str) -> str:
            """Mine."""
            return name

        with pytest.raises(ValueError, match="two named 'greet'") as info:
            run(calls([]), "go", tools=[greet, *first.tools])
        assert str(info.value) == (
            "run: tools must be functions of distinct names, got two named 'greet', a function "
            "and one of the MCP server 'demo'. Pass connect(..., prefix=...) or @tool(name=...) "
            "to tell them apart."
        )
    with connect(demo(), prefix="a") as first, connect(demo(), prefix="b") as second:
        assert [t.name for t in first.tools][:2] == ["a_add", "a_greet"]
        model = calls(
            [ToolCall("a_add", {"a": 1}, "c1"), ToolCall("b_add", {"a": 2, "b": 5}, "c2")]
        )
        result = run(model, "go", tools=[*first.tools, *second.tools])
    assert outcomes(result) == [("a_add", "ok", "3"), ("b_add", "ok", "7")]


# -- calls that hang, servers that go away ---------------------------------------------------------


def test_a_call_past_max_seconds_is_abandoned_and_the_server_still_answers() -> None:
    with connect(demo()) as server:
        started = time.monotonic()
        result = run(calls([ToolCall("hang", {}, "c1"), ToolCall("add", {"a": 1}, "c2")]), "go",
                     tools=server.tools, budget=Budget(max_seconds=1.0))  # fmt: skip
        assert time.monotonic() - started < 10
        assert result.stop == "max_seconds"
        assert outcomes(result) == [
            ("hang", "error", "abandoned: still running when the max_seconds deadline passed"),
            ("add", "ok", "3"),
        ]
        again = run(calls([ToolCall("add", {"a": 4}, "c3")]), "go", tools=server.tools)
        assert outcomes(again) == [("add", "ok", "6")]


def test_a_call_past_the_connections_timeout_is_an_error_result() -> None:
    with connect(demo(), timeout=0.5) as server:
        model = calls([ToolCall("hang", {}, "c1")], [ToolCall("add", {"a": 1}, "c2")])
        result = run(model, "go", tools=server.tools)
    assert result.answered
    assert outcomes(result) == [
        ("hang", "error", "ServerError: the MCP server 'demo' did not answer within 0.5 s"),
        ("add", "ok", "3"),
    ]


def test_the_batchs_threads_reach_one_session_at_once() -> None:
    with connect(demo()) as server:
        model = calls([ToolCall("hang", {"seconds": 1.0}, f"c{i}") for i in range(6)])
        started = time.monotonic()
        result = run(model, "go", tools=server.tools)
        took = time.monotonic() - started
    assert outcomes(result) == [("hang", "ok", "done at last")] * 6
    assert took < 5  # six one-second calls overlapped, not one after another


def test_arun_awaits_the_calls_in_an_async_with() -> None:
    async def main() -> Result:
        async with connect(demo()) as server:
            model = calls([ToolCall("hang", {"seconds": 30}, "c1"), ToolCall("add", {"a": 2}, "c2")],
                          [ToolCall("greet", {"name": "Cy"}, "c3")])  # fmt: skip
            return await arun(model, "go", tools=server.tools, budget=Budget(max_seconds=1.5))

    started = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - started < 15
    assert result.stop == "max_seconds"
    assert outcomes(result) == [
        ("hang", "error", "abandoned: still running when the max_seconds deadline passed"),
        ("add", "ok", "4"),
    ]


def test_a_server_that_exits_mid_run_makes_each_later_call_a_clear_error() -> None:
    with connect(STDIO, timeout=30) as server:
        assert server.name == "demo"
        model = calls(
            [ToolCall("add", {"a": 1}, "c1")],
            [ToolCall("exit_now", {}, "c2")],
            [ToolCall("add", {"a": 2}, "c3"), ToolCall("greet", {"name": "Di"}, "c4")],
        )
        started = time.monotonic()
        result = run(model, "go", tools=server.tools)
        assert time.monotonic() - started < 20
        assert "demo: exiting as asked" in server.stderr
    assert result.answered  # nothing raised out of run(), nothing hung
    gone = (
        "ServerError: the connection to the MCP server 'demo' is lost (MCPError: Connection "
        "closed); its stderr ends: demo: exiting as asked"
    )
    assert outcomes(result) == [
        ("add", "ok", "3"),
        ("exit_now", "error", gone),
        ("add", "error", gone),
        ("greet", "error", gone),
    ]
    assert result.steps[2].tool_calls[0].seconds < 1  # answered at once, not waited out


def test_a_stdio_server_is_stopped_at_exit() -> None:
    before = set(_children())
    with connect(STDIO, timeout=30) as server:
        result = run(calls([ToolCall("greet", {"name": "Ed"}, "c1")]), "go", tools=server.tools)
        pids = set(_children()) - before
        assert pids  # the server runs as a subprocess
    assert outcomes(result) == [("greet", "ok", "Hello, Ed!")]
    deadline = time.monotonic() + 10
    while pids & set(_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pids & set(_children())
    assert server.tools[0].name == "add"  # still listed, but a call now says it is closed
    after = run(calls([ToolCall("greet", {"name": "Fi"}, "c2")]), "go", tools=server.tools)
    assert outcomes(after) == [
        ("greet", "error",
         "ServerError: the connection to the MCP server 'demo' was closed"),
    ]  # fmt: skip


def _children(script: str = "mcp_servers.py") -> list[int]:
    """This process's children that run ``script`` (other tests of the session may have
    children of their own, a redis-server or a kernel, coming and going)."""
    out = subprocess.run(["pgrep", "-P", str(__import__("os").getpid()), "-f", script],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return [int(p) for p in out.stdout.split()]


def _open_and_fail(server: Any, how: str) -> None:
    """Open ``server`` as a user would (``with``, ``open()`` then ``close()``, ``async with``),
    for a start that fails."""
    if how == "with":
        with server:
            pass
    elif how == "open, then close":
        try:
            server.open()
        finally:
            server.close()
    else:

        async def main() -> None:
            async with server:
                pass

        asyncio.run(main())


STARTS = ["with", "open, then close", "async with"]


@pytest.mark.parametrize("how", STARTS)
def test_a_stdio_server_that_never_answers_fails_within_its_timeout(
    tmp_path: Path, how: str
) -> None:
    script = tmp_path / "never_answers.py"
    script.write_text(NEVER_ANSWERS)
    server = connect([sys.executable, str(script)], timeout=1)
    started = time.monotonic()
    with pytest.raises(ConnectionError) as info:
        _open_and_fail(server, how)
    assert time.monotonic() - started < 3.5  # its 1 s and a second, on a busy machine (was 11 s)
    assert str(info.value) == (
        "connect: target must be an MCP server that answers, got 'never_answers.py' (it did "
        "not start within 1 s; its stderr ends: stuck: reading stdin, answering nothing)."
    )
    deadline = time.monotonic() + 10
    while _children("never_answers.py") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children("never_answers.py")  # stopped, if after the error
    started = time.monotonic()
    server.close()  # once more: at once
    assert time.monotonic() - started < 0.5


def test_the_stderr_of_a_stdio_server_is_kept_after_the_block() -> None:
    with connect([*STDIO, "--chatty"], timeout=30) as server:
        result = run(calls([ToolCall("greet", {"name": "Hal"}, "c1")]), "go", tools=server.tools)
        assert server.stderr == "demo: up on stdio\n"
    assert outcomes(result) == [("greet", "ok", "Hello, Hal!")]
    assert server.stderr == "demo: up on stdio\ndemo: stdin closed, bye\n"  # to its last line
    server.close()
    assert server.stderr == "demo: up on stdio\ndemo: stdin closed, bye\n"
    assert connect(demo()).stderr == ""  # a server in this process has none


# -- streamable HTTP --------------------------------------------------------------------------------


def test_a_server_over_streamable_http() -> None:
    with serve_http(demo()) as url, connect(url) as server:
        assert server.name == "demo"
        model = calls(
            [ToolCall("add", {"a": "2"}, "c1"), ToolCall("refuse", {"reason": "no"}, "c2")]
        )
        result = run(model, "go", tools=server.tools)

        async def in_async() -> Result:
            async with connect(url) as again:
                return await arun(calls([ToolCall("greet", {"name": "Gu"}, "c3")]), "go",
                                  tools=again.tools)  # fmt: skip

        async_result = asyncio.run(in_async())
    assert outcomes(result) == [
        ("add", "ok", "4"),
        ("refuse", "error", "McpToolError: Error executing tool refuse: refused: no"),
    ]
    assert outcomes(async_result) == [("greet", "ok", "Hello, Gu!")]


def test_a_url_with_no_server_behind_it_fails_at_connect_naming_the_url() -> None:
    from tests.mcp_servers import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ConnectionError) as info, connect(url, timeout=10):
        pass
    assert str(info.value).startswith(
        f"connect: target must be an MCP server that answers, got '{url}' (ConnectError: "
    )


@pytest.mark.parametrize("how", STARTS)
def test_a_url_that_never_answers_fails_within_its_timeout_naming_the_url(how: str) -> None:
    with never_answering_http() as url:
        server = connect(url, timeout=1)
        started = time.monotonic()
        with pytest.raises(ConnectionError) as info:
            _open_and_fail(server, how)
        assert time.monotonic() - started < 3.5  # its 1 s and a second, on a busy machine
    assert str(info.value) == (
        f"connect: target must be an MCP server that answers, got '{url}' (it did not start "
        "within 1 s)."
    )


def test_a_url_is_named_as_given_but_its_password() -> None:
    with never_answering_http() as url:
        given = url.replace("//", "//ann:s3cret@") + "/?session=a%20b#top"
        with pytest.raises(ConnectionError) as info, connect(given, timeout=0.5):
            pass
    assert str(info.value) == (
        "connect: target must be an MCP server that answers, got "
        f"'{url.replace('//', '//ann:***@')}/?session=a%20b#top' (it did not start within 0.5 s)."
    )
    assert connect(given).name == url.split("/")[2]


# -- hostile servers --------------------------------------------------------------------------------


def test_hostile_names_descriptions_and_schemas() -> None:
    with connect(hostile()) as server:
        tools = {t.name: t for t in server.tools}
        assert list(tools) == ["files_read_v2__b_", "huge", "deep", "refs", "choice", "bare"]
        odd = tools["files_read_v2__b_"]
        assert odd.remote_name == "files.read/v2 <b>"
        assert odd.description == "<script>alert(1)</script>\x1b[31m\u202e reads a file"
        assert len(tools["huge"].schema["parameters"]["properties"]) == 2_000
        assert tools["deep"].description == ""
        assert tools["bare"].schema["parameters"] == {"type": "object", "properties": {}}
        assert repr(tools["deep"]) == (
            "<McpTool deep on MCP server 'hostile'; not checked: schemas nested deeper than 60 levels>"
        )
        assert repr(tools["refs"]) == (
            "<McpTool refs on MCP server 'hostile'; not checked: $ref "
            "'https://example.com/schema.json' (the check follows only #/$defs/... and "
            "#/definitions/...)>"
        )
        assert repr(tools["choice"]) == (
            "<McpTool choice on MCP server 'hostile'; not checked: not, if, minimum (its value "
            "is not one the check can use), patternProperties (at the top level)>"
        )
        deep: dict[str, Any] = {"x": 1}
        for _ in range(98):  # {"root": deep}: 100 levels, as deep as a trace keeps arguments
            deep = {"x": deep}
        model = calls([
            ToolCall("files_read_v2__b_", {"path": "/etc/passwd"}, "c1"),
            ToolCall("huge", {"p5": "7"}, "c2"),
            ToolCall("huge", {"p5": 4}, "c3"),
            ToolCall("deep", {"root": deep}, "c4"),
            ToolCall("refs", {"node": {"value": 1, "children": [{"value": "2"}]}, "old": "ab", "far": [1]}, "c5"),
            ToolCall("refs", {"node": {"value": 1, "children": [{"value": 2, "extra": 0}]}}, "c6"),
            ToolCall("refs", {"node": {"value": 1}, "old": "abcd"}, "c7"),
            ToolCall("choice", {"pick": "c"}, "c8"),
            ToolCall("choice", {"pick": "7", "when": "never", "count": 1, "x-note": "hi"}, "c9"),
            ToolCall("bare", {"anything": [1, 2]}, "c10"),
        ])  # fmt: skip
        result = run(model, "go", tools=server.tools)
    got = [json.loads(c.result)["got"] if c.status == "ok" else c.error for c in result.tool_calls]
    assert got == [
        {"path": "/etc/passwd"},
        {"p5": 7},
        "huge.p5: expected a number >= 5, got 4",
        {"root": deep},
        {"node": {"value": 1, "children": [{"value": 2}]}, "old": "ab", "far": [1]},
        "refs.node.children[0].extra: unknown field; expected value, children",
        "refs.old: expected at most 3 characters, got 4",
        'choice.pick: expected integer or one of "a", "b", got str (as one of "a", "b": '
        'choice.pick: expected one of "a", "b", got "c")',
        {"pick": 7, "when": "never", "count": 1, "x-note": "hi"},  # what it cannot check passes
        {"anything": [1, 2]},
    ]
    assert json.loads(result.tool_calls[0].result)["tool"] == "files.read/v2 <b>"
    assert result.tool_calls[1].coerced == ("huge.p5",)


# -- the core stays standard library only -------------------------------------------------------------


def test_budgetloop_never_imports_mcp_and_says_which_extra_is_missing() -> None:
    code = (
        "import sys, budgetloop\n"
        "assert 'mcp' not in sys.modules, 'budgetloop imported mcp'\n"
        "sys.modules['mcp'] = None\n"
        "try:\n"
        "    import budgetloop.mcp\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)  # fmt: skip
    assert out.stdout.strip() == (
        "budgetloop.mcp: the MCP SDK must be installed, got none; pip install 'budgetloop[mcp]' "
        "(the mcp package)."
    )


def test_closing_twice_and_from_another_thread_is_fine() -> None:
    server = connect(demo())
    with server:
        pass
    server.close()
    done = threading.Event()

    def close_again() -> None:
        server.close()
        done.set()

    threading.Thread(target=close_again).start()
    assert done.wait(10)


def test_otel_names_the_server_of_each_mcp_call() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from budgetloop.otel import export_trace

    @tool
    def local() -> str:
        """Here."""
        return "ok"

    with connect(demo()) as server:
        result = run(calls([ToolCall("greet", {"name": "Jo"}, "c1"), ToolCall("local", {}, "c2")]),
                     "go", tools=[*server.tools, local])  # fmt: skip
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(result, provider)
    tools = {
        s.name: s.attributes
        for s in exporter.get_finished_spans()
        if s.name.startswith("execute_tool")
    }
    assert tools["execute_tool greet"]["budgetloop.tool.server"] == "demo"
    assert "budgetloop.tool.server" not in tools["execute_tool local"]


def test_the_public_module() -> None:
    import budgetloop.mcp as module

    assert module.__all__ == sorted(module.__all__) == ["Connection", "McpTool", "connect"]
    assert {getattr(module, name).__module__ for name in module.__all__} == {"budgetloop.mcp"}


def test_needs_approval_per_server_and_per_tool_name() -> None:
    asked: list[str] = []

    def approve(call: Any) -> Any:
        asked.append(f"{call.name} {call.arguments}")
        return True if call.name == "add" else "not that one"

    model = calls([ToolCall("add", {"a": 1}, "c1"), ToolCall("greet", {"name": "Ola"}, "c2")])
    with connect(demo(), needs_approval=True) as server:
        assert {t.needs_approval for t in server.tools} == {True}
        result = run(model, "go", tools=server.tools, approve=approve)
    assert asked == ["add {'a': 1}", "greet {'name': 'Ola'}"]
    assert [(c.name, c.status, c.approval) for c in result.steps[0].tool_calls] == [
        ("add", "ok", "approved"),
        ("greet", "denied", "denied"),
    ]
    asked.clear()
    big = lambda arguments: arguments.get("a", 0) > 100  # noqa: E731
    model = calls([ToolCall("add", {"a": 1}, "c1"), ToolCall("add", {"a": 500}, "c2"),
                   ToolCall("greet", {"name": "Pia"}, "c3")])  # fmt: skip
    with connect(demo(), needs_approval={"add": big}) as server:
        result = run(model, "go", tools=server.tools, approve=approve)
    assert asked == ["add {'a': 500}"]  # only the call the rule holds
    assert [c.status for c in result.steps[0].tool_calls] == ["ok", "ok", "ok"]


@pytest.mark.parametrize(
    ("rule", "error", "message"),
    [
        ("yes", TypeError, "connect: needs_approval must be True, False, a function (arguments) -> bool, or a dict of those by tool name, got str."),
        ({"add": "yes"}, TypeError, "connect: needs_approval['add']: needs_approval must be True, False or a function (arguments) -> bool, got str."),
        ({"sub": True}, ValueError, "connect: needs_approval must be a dict of the tools 'demo' lists ('add', 'greet', 'lines', 'refuse', 'boom', 'picture', 'hang'), got 'sub'."),
    ],
)  # fmt: skip
def test_a_wrong_needs_approval_is_said_before_any_call(
    rule: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info, connect(demo(), needs_approval=rule):
        pass
    assert str(info.value) == message


def test_each_kind_of_content_block_in_words() -> None:
    import mcp.types as types

    from budgetloop.mcp._tools import content_text

    blob = base64.b64encode(bytes(10)).decode()
    blocks = [
        types.TextContent(type="text", text="first"),
        types.AudioContent(type="audio", data=base64.b64encode(bytes(4_312)).decode(), mime_type="audio/wav"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///n.txt", text="inside")),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="file:///a.bin", blob=blob, mime_type="application/octet-stream")),
        types.ResourceLink(type="resource_link", uri="file:///notes.txt", name="notes"),
    ]  # fmt: skip
    assert content_text(blocks).split("\n") == [
        "first",
        "[audio content: audio/wav, 4,312 bytes]",
        "inside",
        "[resource file:///a.bin: application/octet-stream, 10 bytes]",
        "[a link to the resource file:///notes.txt (notes)]",
    ]


def test_strict_where_strict_mode_can_express_the_schema() -> None:
    from tests.mcp_servers import boxes

    with connect(boxes(), strict=True) as server, connect(hostile(), strict=True) as odd:
        (tool_,) = server.tools
        assert repr(tool_) == "<McpTool place on MCP server 'boxes'; strict>"
        sent = tool_.schema
        assert sent["strict"] is True
        assert sent["parameters"]["required"] == ["name", "box", "count"]
        assert sent["parameters"]["properties"]["count"] == {
            "description": "(default: 1; null means the default)",
            "title": "Count",
            "type": ["integer", "null"],
        }
        assert sent["parameters"]["$defs"]["Box"]["additionalProperties"] is False
        model = calls([
            ToolCall("place", {"name": "a", "box": {"w": 1, "h": None, "note": None}, "count": None}, "c1"),
            ToolCall("place", {"name": "b", "box": {"w": 2, "h": 3, "note": "x"}, "count": 4}, "c2"),
        ])  # fmt: skip
        result = run(model, "go", tools=server.tools)
        odd_tools = {t.name: t for t in odd.tools}
        assert (odd_tools["bare"].strict, odd_tools["refs"].strict) == (True, False)
        assert repr(odd_tools["refs"]).startswith(
            "<McpTool refs on MCP server 'hostile'; not strict: the keyword 'definitions' at the "
            "top level; not checked: "
        )
        assert "strict" not in odd_tools["refs"].schema  # sent as written, not strict
    # a null that means "not given" is left out, at any depth: the server's default applies
    assert outcomes(result) == [
        ("place", "ok", "a Box(w=1, h=None, note='none') 1"),
        ("place", "ok", "b Box(w=2, h=3, note='x') 4"),
    ]
    with pytest.raises(TypeError) as info:
        connect(demo(), strict="yes")  # type: ignore[arg-type]
    assert str(info.value) == "connect: strict must be True or False, got str."
