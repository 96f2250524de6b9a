"""Loading sessions and building frames: the pieces the frame functions (`_tables`), the
file-by-file cache (`_cache`, `_bundle`), the dask frame (`_lazy`) and the usage reader
(`_usage_read`) share, in a leaf none of them imports back.

Loading needs no pandas (`musepi-lab usage` reads through it without loading pandas);
pandas is imported when a frame is first built.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

from ..formats._registry import iter_sessions, session_file_entries
from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ..tokens._counter import DEFAULT_TOKEN_METHOD, TokenCounter
from ._columns import TIMESTAMP, Column, column_names
from ._rows import SessionView, TokenScope, all_entries, frame_session_ids
from ._sources import EXPECTED_SOURCE, check_source

if TYPE_CHECKING:
    import pandas as pd

StrPath: TypeAlias = str | os.PathLike[str]
SessionSource: TypeAlias = Session | StrPath | Iterable[Session | StrPath]
"""What a frame function accepts: a Session, a file or folder, or a list of those."""
CounterSpec: TypeAlias = TokenCounter | str | None
"""A `TokenCounter`, a method name, or None for the default estimator (`DEFAULT_TOKEN_METHOD`)."""

R = TypeVar("R")


# -- loading -------------------------------------------------------------------------------


def session_files(path: StrPath) -> Iterator[Path]:
    """The file itself, or a folder's session files (`iter_session_files`).

    Raises:
        SessionReadError: The path does not exist.
    """
    for file, _ in session_file_entries_of(path):
        yield file


def session_file_entries_of(path: StrPath) -> Iterator[tuple[Path, os.DirEntry[str] | None]]:
    """`session_files` with each folder file's `os.DirEntry` (None for a file given).

    Raises:
        SessionReadError: The path does not exist.
    """
    base = Path(path)
    if base.is_file():
        yield base, None
    elif base.is_dir():
        yield from session_file_entries(base)
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


def source_items(source: SessionSource) -> Iterator[Session | Path]:
    """The items of a (checked) source in input order: each Session as given, each path as
    its session files (a folder's found by `iter_session_files`).

    Raises:
        TypeError: An item that is neither a Session nor a path.
    """
    items: Iterable[Session | StrPath]
    items = [source] if isinstance(source, (Session, str, os.PathLike)) else source
    for item in items:
        if isinstance(item, Session):
            yield item
        elif isinstance(item, (str, os.PathLike)):
            yield from session_files(item)
        else:
            raise TypeError(
                f"expected {EXPECTED_SOURCE}; got an item that is a {type(item).__name__}"
            )


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
    sessions: list[Session] = []
    problems: list[ReadProblem] = []
    for item in source_items(source):
        if isinstance(item, Session):
            sessions.append(item)
            continue
        read, failed = read_file_sessions(item, strict)
        sessions.extend(read)
        problems.extend(failed)
    for session in sessions:
        if strict and session.errors:
            raise SessionReadError.from_problem(session.errors[0])
        problems.extend(session.errors)
    return sessions, problems


def resolve_counter(counter: CounterSpec) -> TokenCounter:
    """The counter a frame uses: the one given, one for a method name, or the default estimator."""
    if counter is None:
        return TokenCounter(DEFAULT_TOKEN_METHOD)
    if isinstance(counter, str):
        return TokenCounter(counter)
    return counter


def session_views(
    sessions: list[Session], counter: TokenCounter, token_scope: TokenScope = all_entries
) -> list[SessionView]:
    """One view per session, with `session_id`s unique within the call."""
    ids = frame_session_ids(sessions)
    return [SessionView(sid, s, counter, token_scope) for sid, s in zip(ids, sessions, strict=True)]


# -- building ------------------------------------------------------------------------------


def typed_series(series: pd.Series, dtype: str) -> pd.Series:
    """A column as its spec's dtype (timestamps parsed as UTC, unparseable ones missing)."""
    import pandas as pd

    if dtype == TIMESTAMP:
        return pd.to_datetime(series, utc=True, format="ISO8601", errors="coerce")
    typed: pd.Series = series.astype(cast(Any, dtype))  # dtype names are checked by the specs
    return typed


def build_frame(
    rows: Iterable[R], columns: Sequence[Column[R]], problems: list[ReadProblem] | None = None
) -> pd.DataFrame:
    """Extract every column of every row into dict records; make the DataFrame once.

    A value a column cannot extract is left missing and a `column-error` problem (naming
    the row's file and line) goes to `problems`; with `problems` None it is raised as a
    `SessionReadError`.
    """
    import pandas as pd

    from ._problems import extract_values

    names = column_names(columns)
    extractors = [(c.name, c.extract) for c in columns]
    failed: list[ReadProblem] = []
    records = [extract_values(row, extractors, failed) for row in rows]
    if failed and problems is None:
        raise SessionReadError.from_problem(failed[0], failed)
    if problems is not None:
        problems.extend(failed)
    frame = pd.DataFrame.from_records(records, columns=names)
    for column in columns:
        if column.dtype is not None:
            frame[column.name] = typed_series(frame[column.name], column.dtype)
    return frame
