"""Sessions from what a frame function is given: a Session, a file, a folder or a list of
those (no pandas here: `usage` reads through it without loading pandas)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeAlias

from ..formats._registry import iter_session_files, iter_sessions
from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ._sources import EXPECTED_SOURCE, check_source

StrPath: TypeAlias = str | os.PathLike[str]
SessionSource: TypeAlias = Session | StrPath | Iterable[Session | StrPath]
"""What a frame function accepts: a Session, a file or folder, or a list of those."""


# -- loading -------------------------------------------------------------------------------


def session_files(path: StrPath) -> Iterator[Path]:
    """The file itself, or a folder's session files (`iter_session_files`).

    Raises:
        SessionReadError: The path does not exist.
    """
    base = Path(path)
    if base.is_file():
        yield base
    elif base.is_dir():
        yield from iter_session_files(base)
    else:
        raise SessionReadError(os.fspath(path), None, "not-found", "no such file or folder")


def read_file_sessions(path: Path, strict: bool) -> tuple[list[Session], list[ReadProblem]]:
    """The sessions of one file; lenient, a file that cannot be read is its problem."""
    sessions: list[Session] = []
    try:
        for session in iter_sessions(path, strict=strict):
            sessions.append(session)
    except SessionReadError as exc:
        if strict:
            raise
        return sessions, [exc.problem]
    return sessions, []


def load_sessions(
    source: SessionSource, *, strict: bool = False
) -> tuple[list[Session], list[ReadProblem]]:
    """Sessions from a Session, a file, a folder, or a list of those, with their problems.

    Args:
        source: What to load. Folders are read with `iter_session_files`.
        strict: Raise on the first problem (a file that cannot be read, or a session with
            read errors, given or read).

    Returns:
        The sessions in input order, and every problem: files that could not be read at
        all, then each session's `errors`.

    Raises:
        SessionReadError: A path that does not exist; in strict mode, any problem.
    """
    check_source(source, "load_sessions")
    items: Iterable[Session | StrPath]
    items = [source] if isinstance(source, (Session, str, os.PathLike)) else source
    sessions: list[Session] = []
    problems: list[ReadProblem] = []
    for item in items:
        if isinstance(item, Session):
            sessions.append(item)
            continue
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                f"expected {EXPECTED_SOURCE}; got an item that is a {type(item).__name__}"
            )
        for file in session_files(item):
            read, failed = read_file_sessions(file, strict)
            sessions.extend(read)
            problems.extend(failed)
    for session in sessions:
        if strict and session.errors:
            raise SessionReadError.from_problem(session.errors[0])
        problems.extend(session.errors)
    return sessions, problems
