"""What `convert` writes: every session of an input, each to its own file, and what it could
not carry.

Pure planning beside one writing function, so the command line stays a thin edge: a file
can hold several sessions (an OpenHands evaluation or resolver output, one per instance)
and a Claude Code session links subagent sessions; each becomes one pi/MusePi JSONL file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..session._errors import ReadProblem
from ..session._session import Session
from ._registry import iter_sessions

NOT_CARRIED_KINDS: frozenset[str] = frozenset(
    {
        # Lines or documents that were dropped, whole or in part.
        "malformed-json",
        "truncated-line",
        "truncated-json",
        "not-an-object",
        "extra-header",
        "nested-too-deeply",
        "missing-history",
        # Inspect AI logs: an archive member, a sample's messages or a tool call not read.
        "bad-member",
        "not-an-inspect-log",
        "missing-messages",
        "bad-tool-call",
        # opencode storage: an id that is a path, a file or folder resolving outside it.
        "unsafe-id",
        "outside-storage",
        # Files that gave nothing.
        "empty-file",
        "binary-file",
        "not-found",
        "unreadable",
        "not-a-file",
        "is-a-directory",
        "reader-error",
    }
)
"""Problem kinds that mean part of the input is not in the converted session."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Plan:
    """What to write: `(session, destination)` pairs, and what cannot be carried."""

    writes: tuple[tuple[Session, Path], ...]
    not_carried: tuple[ReadProblem, ...]
    empty: tuple[Session, ...]


def with_linked(sessions: Iterable[Session]) -> Iterator[Session]:
    """Each session followed by the sessions linked to it (subagents), depth first."""
    for session in sessions:
        yield session
        yield from with_linked(session.linked)


def file_name(session_id: str) -> str:
    """A file name for a session id (`S/agent-x` → `S__agent-x`, `a/b#7` → `a__b_7`)."""
    name = _UNSAFE.sub("_", session_id.replace("/", "__")).strip("._")
    return name or "session"


def not_carried(sessions: Iterable[Session]) -> tuple[ReadProblem, ...]:
    """The problems of the sessions that mean something was dropped, each once."""
    seen: dict[ReadProblem, None] = {}
    for session in sessions:
        for problem in session.errors:
            if problem.kind in NOT_CARRIED_KINDS:
                seen.setdefault(problem, None)
    return tuple(seen)


def destinations(sessions: list[Session], output: Path) -> list[Path]:
    """Where each session goes.

    One session and an output that is not a folder: the output itself. Several: one file
    each, in the output folder (`<id>.jsonl`), or beside an output named `*.jsonl`
    (`<stem>.<id>.jsonl`). Names that collide get `-2`, `-3`, ...
    """
    if len(sessions) == 1 and not output.is_dir():
        return [output]
    beside = output.suffix == ".jsonl" and not output.is_dir()
    taken: set[str] = set()
    out = []
    for session in sessions:
        stem = file_name(session.id)
        name, n = stem, 1
        while name in taken:
            n += 1
            name = f"{stem}-{n}"
        taken.add(name)
        out.append(
            output.parent / f"{output.stem}.{name}.jsonl" if beside else output / f"{name}.jsonl"
        )
    return out


def plan_conversion(
    source: str | os.PathLike[str], output: str | os.PathLike[str], *, strict: bool = False
) -> Plan:
    """Read every session of `source` (a file or a folder) and say where each one goes.

    Raises:
        SessionReadError: The source does not exist, or (strict) has a problem.
    """
    sessions = list(with_linked(iter_sessions(source, strict=strict)))
    writable = [s for s in sessions if s.entries]
    empty = tuple(s for s in sessions if not s.entries)
    paths = destinations(writable, Path(output)) if writable else []
    return Plan(tuple(zip(writable, paths, strict=True)), not_carried(sessions), empty)


def write_plan(plan: Plan) -> list[Path]:
    """Write every planned session (atomically, each); the paths written.

    Raises:
        OSError: A destination cannot be written (the ones before it are kept).
        FileExistsError: A destination is the file its session was read from.
    """
    return [session.write(path) for session, path in plan.writes]
