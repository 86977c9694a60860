"""Trace files on disk: a new trace never truncates an old one, and reading refuses what is not
a regular file before reading a byte of it.

Writing: an existing file at the path is first renamed aside to the first free
``<stem>.<N><suffix>`` (``run.jsonl`` -> ``run.1.jsonl``, then ``run.2.jsonl``, ...), and the new
trace is created with mode ``"x"``, so a file that appears in between is never truncated either.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

from .._engine._valid import must, type_name

ATTEMPTS = 100  # how many times a path that keeps reappearing is moved aside before giving up


def _fspath(path: object, where: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where} must be a str or os.PathLike path, got {type_name(path)}.")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{where} must be a str path, got {type_name(text)}.")
    return text


def _what(mode: int) -> str:
    """A non-regular file's kind, as an error message names it."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a file of another kind"


def check_trace_path(
    path: str | os.PathLike[str], where: str | None = None, name: str = "trace_path"
) -> None:
    """A path a trace can be written to: its folder exists and it is not a directory (or another
    non-regular file). An existing regular file is fine: it is renamed aside, never truncated.

    ``where`` is the entry point that was given the path as ``name``: an error reads
    ``run: trace_path must be ..., got ...``; without ``where`` it starts ``name``.
    """
    if where is None:
        text = _fspath(path, name)
    elif isinstance(path, (str, os.PathLike)) and isinstance(os.fspath(path), str):
        text = os.fspath(path)
    else:
        got = type_name(os.fspath(path) if isinstance(path, os.PathLike) else path)
        expected = "a str or os.PathLike path" + (" or None" if name == "trace_path" else "")
        raise TypeError(must(where, name, expected, got))
    problem = _trace_path_problem(text)
    if problem is not None:
        raise ValueError(must(where or "", name, *problem))


def _trace_path_problem(text: str) -> tuple[str, str] | None:
    """None for a path a trace can be written to; else what it must be, and what it is."""
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        return "a path in a folder that exists", f"{text!r} (no folder {folder!r})"
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return "a path that can be inspected", f"{text!r} ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    renamed = "(an existing file there is renamed aside, never overwritten)"
    return f"the path of a file {renamed}", f"{text!r}, {_what(mode)}"


def aside_name(path: str, n: int) -> str:
    """``run.jsonl`` with ``n=2`` is ``run.2.jsonl``; ``trace`` is ``trace.2``."""
    p = Path(path)
    return os.fspath(p.with_name(f"{p.stem}.{n}{p.suffix}"))


def move_aside(path: str) -> str | None:
    """Rename the file at ``path`` to the first free ``<stem>.<N><suffix>``; return that name,
    or None when the file went away meanwhile. Hard-linking first means a name taken in between
    is never overwritten; where hard links are not supported, a plain rename is used."""
    n = 1
    while True:
        target = aside_name(path, n)
        n += 1
        if os.path.lexists(target):
            continue
        try:
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except FileNotFoundError:
            return None
        except (OSError, NotImplementedError):
            try:
                os.rename(path, target)
            except FileNotFoundError:
                return None
            return target
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return target


def open_new(
    path: str | os.PathLike[str], where: str | None = None, name: str = "trace_path"
) -> tuple[IO[str], str | None]:
    """A new, empty text file at ``path`` for a trace, and where an old file there was moved
    (None if there was none). Strings that cannot be UTF-8 (lone surrogates) are written as
    ``\\udXXX`` escapes, which inside a JSON string read back as the same string."""
    said = name if where is None else f"{where}: {name}"
    check_trace_path(path, where, name)
    text = os.fspath(path)
    moved: str | None = None
    for _ in range(ATTEMPTS):
        check_trace_path(text, where, name)
        if os.path.lexists(text):
            moved = move_aside(text) or moved
        try:
            fh = open(text, "x", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        except FileExistsError:
            continue
        return fh, moved
    raise FileExistsError(
        f"{said} must be a path a new file can be created at, got {text!r}, where a file keeps "
        "appearing; none was overwritten."
    )


def write_new(path: str | os.PathLike[str], text: str, *, where: str = "write_new") -> str | None:
    """Write ``text`` to a new file at ``path`` (UTF-8), as ``Result.save`` writes a trace: an
    existing file there is first renamed to the first free ``<stem>.<N><suffix>``, never
    overwritten, and that name is returned (None when there was no file). ``where`` names the
    caller in an error, in the one grammar (``write_new: path must be ..., got ...``)."""
    fh, moved = open_new(path, where, "path")
    with fh:
        fh.write(text)
    return moved


MAX_TRACE_BYTES = 1 << 30  # 1 GiB: a trace is read whole, so a larger file is not read


def read_regular(path: str | os.PathLike[str], where: str = "load_trace") -> bytes:
    """The bytes of a regular file; anything else (a directory, a FIFO, a device such as
    ``/dev/zero``, a symlink to one), or a file over ``MAX_TRACE_BYTES``, is a ValueError
    before a byte is read. ``where`` (the function called) names an error."""
    with open_regular(path, where) as fh:
        size = os.fstat(fh.fileno()).st_size
        raw = b"" if size > MAX_TRACE_BYTES else fh.read(MAX_TRACE_BYTES + 1)
        if size > MAX_TRACE_BYTES or len(raw) > MAX_TRACE_BYTES:  # (it may grow as it is read)
            raise ValueError(
                f"{where}: {fh.name}: the file must be at most the 1 GiB ({MAX_TRACE_BYTES:,} "
                f"bytes) a trace may hold, got {max(size, len(raw)):,} bytes; it was not loaded."
            )
        return raw


def open_regular(path: str | os.PathLike[str], where: str, buffering: int = -1) -> IO[bytes]:
    """A regular file opened to read bytes from (``fh.name`` its path as a str); anything else
    is a ValueError, as ``read_regular`` says, before a byte is read."""
    text = _fspath(path, f"{where}: path")
    mode = os.stat(text).st_mode
    if not stat.S_ISREG(mode):
        raise ValueError(_not_regular(where, text, mode))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fh = open(text, "rb", buffering, opener=lambda name, _: os.open(name, flags))  # noqa: SIM115
    mode = os.fstat(fh.fileno()).st_mode  # what was opened, if it changed since the stat
    if not stat.S_ISREG(mode):
        fh.close()
        raise ValueError(_not_regular(where, text, mode))
    return fh


def _not_regular(where: str, text: str, mode: int) -> str:
    said = f"got {_what(mode)}; nothing was read"
    return f"{where}: {text}: the file must be a regular file, {said}."
