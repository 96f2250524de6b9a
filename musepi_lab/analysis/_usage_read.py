"""The sessions `usage_df` bills, read the cheapest way that gives the same rows.

A Claude Code file is read with `read_claude_code_usage` (the replies with usage and their
ids, no session tree); when that reader declines a file (it holds something only the full
reader handles, see `formats._claude_code_usage`), and for every other format, and always
in strict mode (which raises on any problem of the tree), the file is read as
`load_sessions` reads it. The fast path runs on worker processes when the files are large
enough (`_pool.map_files`); the sessions come back in the order of the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._pool import map_files
from ..formats._claude_code_usage import (
    FileParts,
    read_claude_code_usage,
    session_of_parts,
    session_parts,
)
from ..formats._registry import _gc_paused
from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ._load import SessionSource, load_sessions, read_file_sessions, source_items
from ._sources import check_source
from ._usage_rows import negative_usage, requests_without_reply, sessions_with_linked, usage_records


def _parts(file: Path) -> tuple[FileParts, list[FileParts]] | None:
    """A worker's share: one file's fast-path parts, or None (the file is read here)."""
    if file.suffix != ".jsonl":
        return None
    try:
        with _gc_paused():
            return session_parts(file)
    except SessionReadError:
        return None


def _fast(file: Path) -> Session | None:
    if file.suffix != ".jsonl":
        return None
    try:
        with _gc_paused():
            return read_claude_code_usage(file)
    except SessionReadError:
        return None  # the full reader says it the same way


def load_usage_sessions(
    source: SessionSource, *, strict: bool = False
) -> tuple[list[Session], list[ReadProblem]]:
    """As `load_sessions`, Claude Code files read for their usage only (lenient mode)."""
    if strict:
        return load_sessions(source, strict=True)
    check_source(source, "usage_df")
    given = list(source_items(source))
    files = [item for item in given if isinstance(item, Path)]
    found = iter(map_files(_parts, files))
    sessions: list[Session] = []
    problems: list[ReadProblem] = []
    for item in given:
        if isinstance(item, Session):
            sessions.append(item)
            continue
        parts = next(found)
        if parts is not None:
            main, subs = parts
            sessions.append(session_of_parts(main, [session_of_parts(sub) for sub in subs]))
            continue
        fast = _fast(item)  # the main file fast, a subagent file that needs it in full
        if fast is not None:
            sessions.append(fast)
            continue
        read, failed = read_file_sessions(item, False)
        sessions.extend(read)
        problems.extend(failed)
    for session in sessions:
        problems.extend(session.errors)
    return sessions, problems


def usage_rows(
    source: SessionSource, *, duplicate_rows: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[ReadProblem]]:
    """`usage_df`'s rows (lenient mode) before they are a frame: `usage_records`' rows and
    duplicates, and every problem (read problems, negative usage, Codex requests without a
    reply); `duplicate_rows` as `usage_records`'."""
    read, problems = load_usage_sessions(source)
    records, duplicates = usage_records(read, duplicate_rows=duplicate_rows)
    linked = [session for session, _ in sessions_with_linked(read)]
    negative = [p for session in linked for p in negative_usage(session)]
    notes = [p for session in linked for p in requests_without_reply(session)]
    return records, duplicates, [*problems, *negative, *notes]
