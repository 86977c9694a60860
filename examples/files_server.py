"""A tiny MCP server, written with the ``mcp`` SDK: the text files of one folder, read-only.

    python examples/files_server.py examples/files    # serves over stdio; connect() starts it

The README's MCP snippet starts it with ``budgetloop.mcp.connect``. Its two tools are
``list_files`` and ``read_file``; a name that would reach outside the folder is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def files_server(folder: Path) -> MCPServer:
    root = folder.resolve(strict=True)
    server = MCPServer("files")

    def inside(name: str) -> Path | None:
        """The file ``name`` is in the folder, or None: a path or a link out of it is not."""
        path = (root / name).resolve()
        return path if path.parent == root and path.is_file() else None

    @server.tool()
    def list_files() -> list[str]:
        """The names of the files in the folder, sorted."""
        return sorted(p.name for p in root.iterdir() if inside(p.name))

    @server.tool()
    def read_file(name: str) -> str:
        """Read one file of the folder as text.

        Args:
            name: the file's name, as list_files gives it
        """
        path = inside(name)
        if path is None:
            raise ToolError(f"read_file: name must be a file in the folder, got {name!r}.")
        return path.read_text(encoding="utf-8", errors="replace")

    return server


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit(f"usage: python examples/files_server.py FOLDER (a folder), got {sys.argv[1:]}")
    files_server(Path(sys.argv[1])).run("stdio")
