"""Problems met while reading session files: data in lenient mode, an exception in strict mode."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._errors import MusepiLabError


@dataclass(frozen=True, slots=True)
class ReadProblem:
    """One problem met while reading a session file.

    Attributes:
        path: The file the problem is in.
        line: 1-based line number (None when it concerns the whole file).
        kind: A short machine-readable kind. Lines that were dropped: `malformed-json`,
            `truncated-line`, `not-an-object`, `extra-header`. Lines kept with a repair:
            `invalid-utf8`, `lone-surrogate`. Structure: `missing-header`, `bad-header`,
            `misplaced-header`, `bad-version`, `unknown-version`, `missing-id`,
            `missing-parent-id`, `missing-type`, `unknown-entry-type`, `duplicate-id`,
            `dangling-parent`, `parent-cycle`, `bad-first-kept`, `bridged` (a link the file does
            not hold, made by the reader: a Claude Code compaction attached to the message
            before it). Whole file: `empty-file`, `binary-file`, `not-a-session` (a file
            that sits beside sessions but is none, e.g. Claude Code's `agent-*.meta.json`),
            `is-a-directory`, `not-a-file`, `not-found`, `unreadable`. Importers add their
            own: JSON documents `truncated-json` (cut short) and `malformed-json`; records
            kept in another shape `bad-message` (Claude Code line without a message object),
            `bad-record` (Codex payload that is not an object), `unknown-item-type`,
            `unknown-role`, `unknown-event`; a forked Codex rollout whose copied records
            neither its parent's file nor their timestamps tell apart
            `unseparated-fork-prefix`; tool results `unpaired-tool-result` (no call
            with that id before it), `duplicate-tool-result` (a second output for a call);
            nothing read `missing-history` (SWE-agent, OpenHands); whole file
            `multiple-sessions` (an OpenHands file holding several, read as one),
            `wrong-format` (read as pi, but another agent's records). Values later steps
            could not take: `nested-too-deeply` (cut at 200 levels, or the line dropped
            when no parser goes that deep), `number-out-of-range` (kept as its text),
            `bad-usage` (a usage count read as 0, the original kept). OpenHands:
            `inferred-source` (older events without `source`), `no-messages`. opencode storage:
            `unsafe-id` (an id holding a path separator, `..` or a NUL, not used as a
            path), `outside-storage` (a file or folder resolving outside the storage root). A file a
            lenient folder read could not read at all: `reader-error`. `analysis.usage_df` adds
            `usage-without-reply` (Codex requests no assistant item answers, billed from
            their `token_count` events) and `negative-usage` (a negative token count or
            recorded cost). opencode's database: `invalid-utf8` also for a column name or
            text value that is not UTF-8. A frame function adds `column-error`: a value a
            column could not extract (its cell left missing).
        message: A human-readable explanation.
    """

    path: str
    line: int | None
    kind: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message} [{self.kind}]"


def problem_record(problem: ReadProblem) -> dict[str, Any]:
    """A read problem as plain data (JSON, a frame's attrs): file, line, kind, message."""
    return {
        "path": problem.path,
        "line": problem.line,
        "kind": problem.kind,
        "message": problem.message,
    }


def _file_order(problem: ReadProblem) -> tuple[int, int]:
    # Whole-file problems first, then by line; sorted() is stable, so problems on one
    # line keep the order they were found in.
    return (0, 0) if problem.line is None else (1, problem.line)


def in_file_order(problems: Iterable[ReadProblem]) -> tuple[ReadProblem, ...]:
    """Problems sorted by line, whole-file problems (line None) first; ties keep their order."""
    return tuple(sorted(problems, key=_file_order))


class SessionReadError(MusepiLabError, ValueError):
    """A session file could not be read (strict mode, or a path that is not a file).

    `str(err)` starts with `path:line` (or `path` for whole-file problems).

    Attributes:
        path: The file.
        line: 1-based line number, or None when it concerns the whole file.
        kind: The problem kind (see `ReadProblem.kind`).
        problem: The problem as a `ReadProblem`.
        problems: Every problem found when the reader looked at the whole file before
            raising (the first of them is `problem`); just `(problem,)` otherwise.
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        kind: str,
        message: str,
        *,
        problems: Iterable[ReadProblem] = (),
    ) -> None:
        self.path = path
        self.line = line
        self.kind = kind
        self.problem = ReadProblem(path, line, kind, message)
        self.problems: tuple[ReadProblem, ...] = tuple(problems) or (self.problem,)
        super().__init__(str(self.problem))

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only fields would be lost by the default pickling of exceptions, and
        # errors cross process boundaries in benchmark runs.
        return (
            _rebuild_error,
            (self.path, self.line, self.kind, self.problem.message, self.problems),
        )

    @classmethod
    def from_problem(
        cls, problem: ReadProblem, problems: Iterable[ReadProblem] = ()
    ) -> SessionReadError:
        """The exception for one recorded problem (optionally with all of the file's)."""
        return cls(problem.path, problem.line, problem.kind, problem.message, problems=problems)


def _rebuild_error(
    path: str, line: int | None, kind: str, message: str, problems: tuple[ReadProblem, ...]
) -> SessionReadError:
    return SessionReadError(path, line, kind, message, problems=problems)


class ProblemLog:
    """Collects the problems of one file.

    In strict mode `add` raises `SessionReadError` at once, unless the log is `deferred`:
    then every problem is collected and `finish()` raises the one earliest in the file,
    so strict mode names the same first problem that lenient mode lists first.
    """

    __slots__ = ("deferred", "path", "problems", "strict")

    def __init__(self, path: str, *, strict: bool, deferred: bool = False) -> None:
        self.path = path
        self.strict = strict
        self.deferred = deferred
        self.problems: list[ReadProblem] = []

    def add(self, line: int | None, kind: str, message: str) -> None:
        """Record a problem (or raise it in strict mode, unless deferred)."""
        problem = ReadProblem(self.path, line, kind, message)
        if self.strict and not self.deferred:
            raise SessionReadError.from_problem(problem)
        self.problems.append(problem)

    def merge(self, problems: Iterable[ReadProblem]) -> None:
        """Add problems collected elsewhere (e.g. by a scratch log), as `add` would."""
        for problem in problems:
            self.add(problem.line, problem.kind, problem.message)

    def finish(self) -> tuple[ReadProblem, ...]:
        """The problems in file order; in strict mode, raise the first one if any.

        Raises:
            SessionReadError: Strict mode and at least one problem was recorded.
        """
        ordered = in_file_order(self.problems)
        if self.strict and ordered:
            raise SessionReadError.from_problem(ordered[0], ordered)
        return ordered
