"""An MCP server's tool as a budgetloop ``Tool``, and what it answers as the text a model reads.

The model is sent the tool's ``inputSchema`` as the server wrote it (with ``"properties": {}``
added where it has none: providers refuse an object schema without them). The arguments are
checked against it by the same check as an ``@tool``'s, with the same coercion and the same
words; what the check does not enforce is passed on unchecked and named in ``unchecked`` (and
in the tool's repr). The answer: ``isError`` is an error the model reads; structured content is
the result, as JSON (a lone ``{"result": x}`` that the server's output schema wraps around a
plain value is ``x``); otherwise the text blocks, one after another, with a short line for each
image, audio clip or resource saying what came back, never its bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._engine._valid import type_name
from .._schema._classes import _given as given
from .._schema._shapes import Shapes
from .._schema._strict import make_strict
from .._schema._tool import Tool
from .._schema._written import checkable

if TYPE_CHECKING:
    from ._connection import Connection

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")
# What may stand beside an object's properties at the top of a schema strict mode takes.
_STRICT_TOP = frozenset(["type", "properties", "required", "additionalProperties", "title",
                         "description", "$defs", "$schema"])  # fmt: skip


class McpToolError(Exception):
    """The server's tool answered with ``isError``: its text is what the model reads."""


class ServerError(Exception):
    """The MCP server could not answer a call: it is gone, it refused it, or it was too slow."""


class McpTool(Tool):
    """One tool of an MCP server: its name (with the connection's prefix), its description and
    its schema as the server lists them; calling it asks the server."""

    is_async = True

    def __init__(self, connection: Connection, listed: Any) -> None:
        self.connection = connection
        self.remote_name: str = listed.name
        self.name = local_name(listed.name, connection.prefix)
        description = listed.description
        self.description = description if isinstance(description, str) else ""
        written = dict(listed.input_schema) if isinstance(listed.input_schema, dict) else {}
        if "properties" not in written:
            written["properties"] = {}
        self._written = written
        self._sent = written  # the parameters the model is sent
        self.not_strict: str | None = None  # strict=True: why this tool could not be
        self._shapes: Shapes | None = None
        if connection.strict:
            self._make_strict(written)
        found = checkable(self._sent)
        self.parameters = found.parameters
        self.required = found.required
        self._defs = found.defs
        self.extra_arguments = found.extra
        self.unchecked: tuple[str, ...] = found.unchecked
        self._wraps = _wraps_result(listed.output_schema)
        self.fn = self._call
        self.__name__ = self.name
        self.__doc__ = self.description

    @property
    def server(self) -> str:  # type: ignore[override]
        """The name of the server the tool is on."""
        return self.connection.name

    @property
    def schema(self) -> dict[str, Any]:
        """The dict handed to the model: the server's schema as it wrote it (its strict form,
        with ``strict=True`` where strict mode can express it)."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        out["parameters"] = self._sent
        if self.strict:
            out["strict"] = True
        return out

    def _make_strict(self, written: dict[str, Any]) -> None:
        """The strict form ``@tool(strict=True)`` would write of this schema, or why there is
        none (the tool is then sent as written, not strict)."""
        extra = set(written) - _STRICT_TOP
        if extra:
            self.not_strict = f"the keyword {sorted(extra)[0]!r} at the top level"
            return
        shapes = Shapes(strict=True)
        defs = written.get("$defs") or {}
        required = written.get("required") or []
        try:
            if not isinstance(defs, dict) or not isinstance(required, list):
                raise TypeError(
                    f"tool {self.name}: $defs and required must be an object and a list, got "
                    f"{type_name(defs)} and {type_name(required)}."
                )
            shapes.defs = dict(defs)
            where = f"tool {self.name}"
            params, strict_defs, dropped = make_strict(
                dict(written["properties"]), tuple(required), shapes, where
            )
        except Exception as exc:  # a schema strict mode cannot express, or cannot read
            self.not_strict = str(exc).removeprefix(f"tool {self.name}: ").rstrip(".")
            return
        sent: dict[str, Any] = {"type": "object", "properties": params}
        sent.update(required=list(params), additionalProperties=False)
        if strict_defs:
            sent["$defs"] = strict_defs
        self._sent, self._shapes, self._dropped, self.strict = sent, shapes, dropped, True

    def arguments_for(self, args: dict[str, Any], choices: dict[str, int]) -> dict[str, Any]:
        """What the server is sent: with ``strict``, without the nulls that mean "not given"
        (at any depth), as an ``@tool(strict=True)`` function's defaults would apply."""
        out = super().arguments_for(args, choices)
        shapes = self._shapes
        if shapes is None:
            return out
        properties = self._sent["properties"]
        return {
            key: given(shapes, properties[key], value, f"{self.name}.{key}", choices, 0)
            if key in properties
            else value
            for key, value in out.items()
        }

    async def _call(self, **arguments: Any) -> Any:
        answer = await self.connection.call(self.remote_name, arguments)
        return result_of(answer, self._wraps)

    def __repr__(self) -> str:
        unchecked = f"; not checked: {', '.join(self.unchecked)}" if self.unchecked else ""
        strict = "; strict" if self.strict else ""
        if self.not_strict is not None:
            strict = f"; not strict: {self.not_strict}"
        return f"<McpTool {self.name} on MCP server {self.server!r}{strict}{unchecked}>"


def local_name(name: Any, prefix: str | None) -> str:
    """The name the model calls a server's tool by: letters, digits, ``_`` and ``-`` only (each
    other character written ``_``), after ``{prefix}_``, at most 64 characters."""
    text = _NOT_A_NAME.sub("_", name if isinstance(name, str) else str(name)) or "_"
    if prefix is not None:
        text = f"{prefix}_{text}"
    return text[:64]


def tool_names(tools: Sequence[McpTool], server: str) -> None:
    """A ValueError if two of one server's tools would have one name."""
    seen: dict[str, McpTool] = {}
    for t in tools:
        other = seen.setdefault(t.name, t)
        if other is not t:
            raise ValueError(
                f"connect: the names of an MCP server's tools must be distinct once written as "
                f"a model calls them, got {other.remote_name!r} and {t.remote_name!r} of "
                f"{server!r}, both {t.name!r}."
            )


def _wraps_result(output_schema: Any) -> bool:
    """Whether the server's output schema wraps a plain value as ``{"result": x}``."""
    if not isinstance(output_schema, dict):
        return False
    properties = output_schema.get("properties")
    return isinstance(properties, dict) and list(properties) == ["result"]


def result_of(answer: Any, wraps: bool) -> Any:
    """What the model reads of a ``CallToolResult`` (a str as it is, anything else as JSON);
    an ``isError`` answer raises ``McpToolError`` with its text."""
    if getattr(answer, "is_error", False):
        text = content_text(getattr(answer, "content", None) or [])
        # the model reads this
        raise McpToolError(text or "the tool reported an error and said nothing more")
    structured = getattr(answer, "structured_content", None)
    if structured is not None:
        if wraps and isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    return content_text(getattr(answer, "content", None) or [])


def content_text(blocks: Sequence[Any]) -> str:
    """The content blocks as text: text as it is; for anything binary, a line saying what it
    was."""
    return "\n".join(_block(block) for block in blocks)


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", "") or "of an unknown type"
        return f"[{kind} content: {mime}, {_decoded_size(getattr(block, 'data', ''))}]"
    if kind == "resource_link":
        name = getattr(block, "name", None)
        named = f" ({name})" if isinstance(name, str) and name else ""
        return f"[a link to the resource {getattr(block, 'uri', '')}{named}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        mime = getattr(resource, "mime_type", None) or "of an unknown type"
        size = _decoded_size(getattr(resource, "blob", ""))
        return f"[resource {getattr(resource, 'uri', '')}: {mime}, {size}]"
    return f"[{kind if isinstance(kind, str) else 'unknown'} content, not shown]"


def _decoded_size(data: Any) -> str:
    """The size of base64 ``data`` once decoded, in words."""
    if not isinstance(data, str):
        return "size unknown"
    size = len(data) * 3 // 4 - data[-2:].count("=")
    return f"{size:,} bytes"
