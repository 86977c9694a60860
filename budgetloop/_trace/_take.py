"""Taking a held batch in its trace file, once: the step that makes ``resume`` from a path run a
held batch exactly once, whichever processes try.

A run that ended held (``approve="hold"``) ends its JSON Lines trace with an end line whose
``stop`` is ``"held"``. ``take`` locks the file (an advisory lock the system lets go of when the
process holding it dies), reads it, and, if its last word is still that held end line, appends a
``taken`` line saying when and by whom, flushed to the disk, before letting go. Two processes
cannot both find it waiting; a process killed after the take leaves the line, so the batch is
never taken again; one killed before it leaves the file as it was. The resumed run then writes
its steps after that line (``Journal(path, going_on=True)``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
from collections.abc import Iterator
from typing import IO, Any

from .._engine._valid import must


@contextlib.contextmanager
def _locked(fh: IO[bytes]) -> Iterator[None]:
    """The whole file locked against other processes' ``take``, for the block."""
    try:
        import fcntl
    except ImportError:  # Windows: a lock on the file's first byte, held while the block runs
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _last_word(raw: bytes) -> dict[str, Any] | None:
    """The last ``taken`` line, or held end line, of a trace's lines; None when neither comes
    after the last step (the file is no held run)."""
    for line in reversed(raw.split(b"\n")[:-1]):  # whole lines only: a torn last one is not
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            return None
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == "taken" or (kind == "end" and entry.get("stop") == "held"):
            return entry  # type: ignore[no-any-return]
        if kind != "end":
            break
    return None


def refuse_taken(path: str | os.PathLike[str], where: str) -> None:
    """A ValueError saying when the last held batch of the trace at ``path`` was taken, if one
    was (a resume that finds the file already gone on from its hold); else nothing."""
    with open(path, "rb") as fh:
        raw = fh.read()
    _refuse_any(path, raw, where)


def _refuse_any(path: str | os.PathLike[str], raw: bytes, where: str) -> None:
    """``refuse_taken`` of a trace's bytes: the last ``taken`` line in them, if any."""
    for line in reversed(raw.split(b"\n")):
        if b'"taken"' in line:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("kind") == "taken":
                _refuse(path, entry, where)


def _refuse(path: str | os.PathLike[str], word: dict[str, Any], where: str) -> None:
    name = f"the held batch of {os.path.basename(os.fspath(path))}"
    raise ValueError(
        must(
            where, name, "waiting for a decision", f"taken at {word.get('at')} by {word.get('by')}"
        )
        + " A held batch runs once."
    )


def take(path: str | os.PathLike[str], step: int, where: str) -> None:
    """Take the batch held at step ``step`` in the trace at ``path``, or raise a ValueError
    saying why it cannot be: it was taken (when, and by whom; so too when the run has gone on
    since it was read), or the file does not end held at that step (it is not a JSON Lines trace
    of a held run)."""
    shown = os.fspath(path)
    with open(path, "rb+") as fh, _locked(fh):
        fh.seek(0)
        raw = fh.read()
        word = _last_word(raw)
        if word is not None and word.get("kind") == "taken":
            _refuse(path, word, where)
        if word is None:  # it went on since it was read: taken, then run on, if it says so
            _refuse_any(path, raw, where)
        held = None if word is None else word.get("held")
        at = held.get("step", {}).get("index") if isinstance(held, dict) else None
        if at != step:
            expected = f"a JSON Lines trace (trace_path=) that ends held at step {step}"
            raise ValueError(must(where, shown, expected, "a file that does not"))
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        by = f"process {os.getpid()} on {socket.gethostname()}"
        line = json.dumps({"kind": "taken", "step": step, "at": now, "by": by}) + "\n"
        fh.seek(0, os.SEEK_END)
        fh.write(line.encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
