"""Problems as data on a frame: every frame function returns the DataFrame, and the read
problems met making it travel with it in `frame.attrs["problems"]`; `problems_of(frame)`
gives them back as `ReadProblem`s.

They are kept as plain records (`path`, `line`, `kind`, `message`), so a frame written to
Parquet (which stores `attrs` as JSON) keeps them, and pandas' copies stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..session._errors import ReadProblem, problem_record

PROBLEMS = "problems"
"""The `DataFrame.attrs` key that holds a frame's read problems."""

COLUMN_ERROR = "column-error"
"""The problem kind of a value a column could not extract (the cell is left missing)."""


def with_problems(frame: pd.DataFrame, problems: Iterable[ReadProblem]) -> pd.DataFrame:
    """The frame, its `attrs["problems"]` set to these problems (as plain records)."""
    frame.attrs[PROBLEMS] = [problem_record(p) for p in problems]
    return frame


def problems_of(frame: pd.DataFrame) -> list[ReadProblem]:
    """The read problems a frame function met making `frame`, in the order met.

    Each names its file and line (files that could not be read, then each session's
    problems, then values a column could not extract, kind `column-error`); an empty list
    when the input read cleanly. pandas carries `attrs` through most operations on the
    frame (`head`, selections, `copy`, a Parquet round trip), not through `merge`.

    Raises:
        TypeError: `frame` is not a DataFrame.
        KeyError: The frame holds no problems record (it was not made by a frame function,
            or an operation dropped its `attrs`): none is made up.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"problems_of expects a pandas DataFrame; got {type(frame).__name__}")
    if PROBLEMS not in frame.attrs:
        raise KeyError(
            "this frame holds no problems record (attrs['problems']): it was not made by a"
            " musepi-lab frame function, or an operation dropped its attrs"
        )
    return [_problem(r) for r in frame.attrs[PROBLEMS]]


def _problem(record: Any) -> ReadProblem:
    if isinstance(record, ReadProblem):
        return record
    if not isinstance(record, Mapping):
        raise TypeError(f"attrs['problems'] holds a {type(record).__name__}, not a record")
    line = record.get("line")
    return ReadProblem(
        str(record["path"]),
        None if line is None else int(line),
        str(record["kind"]),
        str(record["message"]),
    )


def _where(row: Any) -> tuple[str, int | None]:
    """The file and line of a row (an entry row, a tool-call row or a session view)."""
    view = getattr(row, "view", row)
    session = getattr(view, "session", None)
    path = getattr(session, "source_path", None) or getattr(session, "id", None) or "<session>"
    entry = getattr(row, "entry", None)
    line = getattr(entry, "line", None)
    return str(path), line if isinstance(line, int) else None


def extract_values(
    row: Any,
    extractors: Sequence[tuple[str, Callable[[Any], Any]]],
    problems: list[ReadProblem],
) -> dict[str, Any]:
    """Every column's value of one row; a column whose extractor raises gets None, and a
    `column-error` problem naming the row's file and line and the column goes to
    `problems` (the exception does not escape)."""
    try:  # the common case, at the speed of one comprehension (extractors are pure)
        return {name: extract(row) for name, extract in extractors}
    except Exception:  # an extractor's failure is data, not a crash: column by column
        return _each_value(row, extractors, problems)


def _each_value(
    row: Any,
    extractors: Sequence[tuple[str, Callable[[Any], Any]]],
    problems: list[ReadProblem],
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, extract in extractors:
        try:
            values[name] = extract(row)
        except Exception as exc:
            path, line = _where(row)
            message = f"column {name!r} could not be extracted: {type(exc).__name__}: {exc}"
            problems.append(ReadProblem(path, line, COLUMN_ERROR, message))
            values[name] = None
    return values
