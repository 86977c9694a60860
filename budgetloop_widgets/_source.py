"""What a ``RunPanel`` is given to show, told apart: a ``Session``, a function that builds one,
or a run that ended held (``approve="hold"``: its ``Result`` or the path of its trace), opened
as a live session holds its batch until the panel takes the batch and goes on."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from budgetloop import Result, Session
from budgetloop.display import open_held, take_held, type_name

Factory = Callable[[], Session]
HeldRun = Result | str | os.PathLike[str]  # a run that ended held, or the path of its trace


class HeldOpening:
    """A held run opened in a panel, until its batch is taken (Step or Run): where it came
    from, what goes on with it, and whether this panel went on from it (then Reset opens it no
    more: a held batch runs once)."""

    def __init__(
        self,
        source: HeldRun,
        complete: Any,
        tools: Sequence[Callable[..., Any]],
        options: dict[str, Any],
    ) -> None:
        self.source = source
        self.complete, self.tools, self.options = complete, tools, options
        self.untaken: Session | None = None  # the opened session whose batch is not taken yet
        self.gone_on = False  # this panel took the held run's batch: Reset opens it no more

    def open(self) -> Session:
        """The held run as a session holding its batch (``budgetloop.display.open_held``)."""
        if self.gone_on:
            raise ValueError(
                "RunPanel: the held run must be one this panel has not gone on from, got "
                "one it ran. A held batch runs once."
            )
        opened = open_held(
            self.source, self.complete, tools=self.tools, where="RunPanel", **self.options
        )
        self.untaken = opened
        return opened

    def take(self, session: Session) -> None:
        """Before ``session`` runs its batch: the batch taken, as ``resume`` takes it (from a
        path, once), when ``session`` is the one opened and not taken yet; a ValueError when it
        cannot be (taken already, by this or another process)."""
        if session is not self.untaken:
            return
        take_held(session, self.source, "RunPanel")
        self.untaken = None
        # a Result is the caller's to go on from once; a path says itself what it holds now
        self.gone_on = isinstance(self.source, Result)


def opened(
    source: Session | Factory | HeldRun,
    complete: Any,
    tools: Sequence[Callable[..., Any]],
    options: dict[str, Any],
) -> tuple[Factory, Session, HeldOpening | None]:
    """A panel's ``source``: what Reset builds a fresh session with, the session to show, and
    the held run it opened (None: it is not one). ``complete``, ``tools`` and ``resume``'s
    ``options`` go with a held run only."""
    if isinstance(source, (Result, str, os.PathLike)):
        if complete is None:
            raise TypeError(
                "RunPanel: complete must be the model to go on with (a held run's model is "
                "not in its trace), got None."
            )
        opening = HeldOpening(source, complete, tools, options)
        return opening.open, opening.open(), opening
    if complete is not None or tools or options:
        given = ", ".join(
            (["complete"] if complete is not None else [])
            + (["tools"] if tools else [])
            + list(options)
        )
        raise TypeError(
            "RunPanel: complete, tools and resume's options must be given only with a held "
            f"run (its Result or the path of its trace), got {given} with "
            f"{type_name(source)}."
        )
    if isinstance(source, Session):
        return source.fresh, source, None
    if callable(source):
        return source, built(source), None
    raise TypeError(
        "RunPanel: source must be a Session, a function returning one, or a held run "
        f"(its Result or the path of its trace), got {type(source).__name__}."
    )


def built(factory: Factory) -> Session:
    """A new session from a panel's factory; a TypeError when it returns something else."""
    session = factory()
    if not isinstance(session, Session):
        raise TypeError(
            f"RunPanel: factory's result must be a budgetloop Session, got {type_name(session)}."
        )
    return session
