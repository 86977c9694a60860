"""A tool's description and its parameters' descriptions, from a Google, NumPy or Sphinx
docstring (already cleaned by ``inspect.getdoc``).

The description is the text before the first section, its paragraphs kept apart by a blank
line. A parameter is described by whichever style documents it first; a parameter the
docstring documents but the signature lacks is ignored, and the reverse is no error.
"""

from __future__ import annotations

import functools
import re

# Google section headers, each on a line of its own: ``Args:``, ``Returns:``...
_GOOGLE_PARAMS = frozenset(
    ["args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
     "other parameters"]
)  # fmt: skip
_GOOGLE_SECTIONS = _GOOGLE_PARAMS | frozenset(
    ["returns", "return", "yields", "yield", "raises", "raise", "except", "exceptions",
     "examples", "example", "note", "notes", "attributes", "todo", "see also", "warning",
     "warnings", "warns", "references", "methods"]
)  # fmt: skip
_NUMPY_PARAMS = frozenset(["parameters", "other parameters", "keyword arguments", "params"])
_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?\s*:(?:\s+(.*))?$")
_SPHINX_ANY = re.compile(r"^[ \t]*:\w", re.MULTILINE)
_SPHINX_PARAMS = frozenset(["param", "parameter", "arg", "argument", "key", "keyword"])


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description, and each documented parameter's description."""
    summary, args = _parsed(doc)
    return summary, dict(args)


@functools.lru_cache(maxsize=256)
def _parsed(doc: str) -> tuple[str, dict[str, str]]:
    """Cached: a plain function passed to ``run(tools=...)`` is decorated on every run."""
    lines = doc.expandtabs().splitlines()
    end = _first_section(lines)
    args: dict[str, str] = {}
    styles = [_google]
    if "---" in doc:
        styles.append(_numpy)
    if _SPHINX_ANY.search(doc):
        styles.append(_sphinx)
    for style in styles:
        for name, text in style(lines).items():
            args.setdefault(name, text)
    return _paragraphs(lines[:end]), args


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_header(line: str) -> str | None:
    if not line.endswith(":") and not line.rstrip().endswith(":"):
        return None
    match = _HEADER.match(line.strip())
    if match is None:
        return None
    name = " ".join(match.group(1).lower().split())
    return name if name in _GOOGLE_SECTIONS else None


def _numpy_header(lines: list[str], i: int) -> bool:
    """``lines[i]`` is a NumPy section title: a line of words over a line of dashes."""
    return (
        i + 1 < len(lines)
        and "---" in lines[i + 1]
        and bool(lines[i].strip())
        and _DASHES.match(lines[i + 1]) is not None
        and not _DASHES.match(lines[i])
    )


def _first_section(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        stripped = line.strip()
        if (
            _google_header(line) is not None
            or _numpy_header(lines, i)
            or (stripped.startswith(":") and _SPHINX_FIELD.match(stripped))
        ):
            return i
    return len(lines)


def _paragraphs(lines: list[str]) -> str:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(p) for p in paragraphs if p)


def _join(parts: list[str]) -> str:
    return " ".join(p for p in parts if p)


def _google(lines: list[str]) -> dict[str, str]:
    """``Args:`` sections: ``name: text``, ``name (type): text``, ``*name: text``, with the
    text on the same line or the lines under it (more indented)."""
    out: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        header = _google_header(lines[i])
        if header not in _GOOGLE_PARAMS:
            i += 1
            continue
        base = _indent(lines[i])
        entry_indent = -1
        current: list[str] | None = None
        i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            indent = _indent(line)
            if indent <= base:
                break  # the section ended: another header, or text back at its level
            if entry_indent < 0:
                entry_indent = indent
            match = _GOOGLE_ARG.match(line.strip()) if indent <= entry_indent else None
            if match is not None:
                current = out.setdefault(match.group(1).lstrip("*"), [])
                current.append(match.group(2) or "")
            elif current is not None:
                current.append(line.strip())
            i += 1
    return {name: _join(parts) for name, parts in out.items()}


def _numpy(lines: list[str]) -> dict[str, str]:
    """``Parameters`` over a line of dashes; ``name : type`` (or ``a, b : type``) lines with
    the text indented under them."""
    out: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        if not (_numpy_header(lines, i) and lines[i].strip().lower() in _NUMPY_PARAMS):
            i += 1
            continue
        base = _indent(lines[i])
        current: list[list[str]] = []
        i += 2
        while i < len(lines):
            line = lines[i]
            if _numpy_header(lines, i):
                break
            if not line.strip():
                i += 1
                continue
            indent = _indent(line)
            if indent < base:
                break
            if indent == base:
                names = line.split(":", 1)[0].split(",")
                current = [out.setdefault(n.strip().lstrip("*"), []) for n in names if n.strip()]
            else:
                for parts in current:
                    parts.append(line.strip())
            i += 1
    return {name: _join(parts) for name, parts in out.items()}


def _sphinx(lines: list[str]) -> dict[str, str]:
    """``:param x: text`` (or ``:param int x: text``), the text going on over the more
    indented lines under it; other fields (``:type x:``, ``:returns:``) end it."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    field_indent = 0
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_FIELD.match(stripped) if stripped.startswith(":") else None
        if match is not None:
            current = None
            field_indent = _indent(line)
            words = (match.group(2) or "").split()
            if match.group(1) in _SPHINX_PARAMS and words:
                current = out.setdefault(words[-1].lstrip("*"), [])
                current.append(match.group(3) or "")
        elif current is not None:
            if stripped and _indent(line) > field_indent:
                current.append(stripped)
            elif stripped:
                current = None
    return {name: _join(parts) for name, parts in out.items()}
