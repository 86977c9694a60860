"""An MCP server's tools as budgetloop tools: ``with connect(target) as server:
run(..., tools=[*server.tools, my_tool])``.

``pip install 'budgetloop[mcp]'`` (the official ``mcp`` SDK). ``import budgetloop`` never imports
this package; importing it without the SDK is an ImportError naming the extra.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401 - only to say which extra is missing
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "budgetloop.mcp: the MCP SDK must be installed, got none; pip install 'budgetloop[mcp]' "
        "(the mcp package)."
    ) from exc

from ._connection import Connection, connect
from ._tools import McpTool

__all__ = ["Connection", "McpTool", "connect"]

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
