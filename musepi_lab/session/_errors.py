"""Problems met while reading session files: data in lenient mode, an exception in strict mode."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReadProblem:
    """One problem met while reading a session file.

    Attributes:
        path: The file the problem is in.
        line: 1-based line number (None when it concerns the whole file).
        kind: A short machine-readable kind (`malformed-json`, `truncated-line`,
            `missing-header`, `duplicate-id`, `dangling-parent`, `parent-cycle`,
            `invalid-utf8`, `empty-file`, `binary-file`, `not-an-object`, `missing-id`,
            `unknown-entry-type`, `unpaired-tool-result`, ...).
        message: A human-readable explanation.
    """

    path: str
    line: int | None
    kind: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message} [{self.kind}]"


class SessionReadError(ValueError):
    """A session file could not be read (strict mode, or a path that is not a file).

    Attributes:
        path: The file.
        line: 1-based line number, or None when it concerns the whole file.
        kind: The problem kind (see `ReadProblem.kind`).
    """

    def __init__(self, path: str, line: int | None, kind: str, message: str) -> None:
        self.path = path
        self.line = line
        self.kind = kind
        self.problem = ReadProblem(path, line, kind, message)
        super().__init__(str(self.problem))

    @classmethod
    def from_problem(cls, problem: ReadProblem) -> SessionReadError:
        """The exception for one recorded problem."""
        return cls(problem.path, problem.line, problem.kind, problem.message)


class ProblemLog:
    """Collects problems; in strict mode the first one raises `SessionReadError`."""

    __slots__ = ("path", "problems", "strict")

    def __init__(self, path: str, *, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.problems: list[ReadProblem] = []

    def add(self, line: int | None, kind: str, message: str) -> None:
        """Record a problem (or raise it in strict mode)."""
        problem = ReadProblem(self.path, line, kind, message)
        if self.strict:
            raise SessionReadError.from_problem(problem)
        self.problems.append(problem)
