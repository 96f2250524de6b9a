"""The frame functions: sessions in, one pandas DataFrame out (and the read problems).

Each function has the same backbone: load the sessions (`load_sessions`), give each a
frame id (`SessionView`), make rows, extract every column of every row into a plain dict
record, and make the DataFrame once at the end (`build_frame`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, cast, overload

import pandas as pd

from ..session._errors import ReadProblem
from ..session._messages import entry_to_message
from ..session._session import Session
from ..tokens._counter import DEFAULT_TOKEN_METHOD, TokenCounter
from ._columns import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TIMESTAMP,
    TOOL_CALL_COLUMNS,
    Column,
    column_names,
)
from ._load import SessionSource as SessionSource
from ._load import StrPath as StrPath
from ._load import load_sessions as load_sessions
from ._rows import (
    EntryRow,
    SessionView,
    TokenScope,
    ToolCallRow,
    all_entries,
    entries_of_type,
    frame_session_ids,
    tool_result_entries,
)
from ._sources import takes_sources

CounterSpec: TypeAlias = TokenCounter | str | None
"""A `TokenCounter`, a method name, or None for the default estimator (`DEFAULT_TOKEN_METHOD`)."""

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


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


def _typed(series: pd.Series, dtype: str) -> pd.Series:
    if dtype == TIMESTAMP:
        return pd.to_datetime(series, utc=True, format="ISO8601", errors="coerce")
    typed: pd.Series = series.astype(cast(Any, dtype))  # dtype names are checked by the specs
    return typed


def build_frame(rows: Iterable[R], columns: Sequence[Column[R]]) -> pd.DataFrame:
    """Extract every column of every row into dict records; make the DataFrame once."""
    names = column_names(columns)
    extractors = [(c.name, c.extract) for c in columns]
    records = [{name: extract(row) for name, extract in extractors} for row in rows]
    frame = pd.DataFrame.from_records(records, columns=names)
    for column in columns:
        if column.dtype is not None:
            frame[column.name] = _typed(frame[column.name], column.dtype)
    return frame


def _entry_rows(views: Iterable[SessionView]) -> Iterator[EntryRow]:
    for view in views:
        for entry in view.session.entries:
            yield EntryRow(view, entry, entry_to_message(entry))


def _message_rows(views: Iterable[SessionView]) -> Iterator[EntryRow]:
    for view in views:
        for entry, message in view.messages:
            yield EntryRow(view, entry, message)


def _tool_call_rows(views: Iterable[SessionView]) -> Iterator[ToolCallRow]:
    for view in views:
        yield from view.tool_call_rows()


def _compaction_rows(views: Iterable[SessionView]) -> Iterator[EntryRow]:
    for view in views:
        for entry in view.session.entries:
            if entry.type == "compaction":
                yield EntryRow(view, entry, entry_to_message(entry))


def _session_rows(views: Iterable[SessionView]) -> Iterator[SessionView]:
    return iter(views)


def _table(
    source: SessionSource,
    rows: Callable[[list[SessionView]], Iterable[R]],
    columns: Sequence[Column[R]],
    strict: bool,
    counter: CounterSpec,
    token_scope: TokenScope = all_entries,
    cache_dir: StrPath | None = None,
    progress: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    if cache_dir is not None or progress:  # file by file, cached: `_cache`, `_bundle`
        from ._bundle import cached_table
        from ._cache import FrameSpec

        spec = FrameSpec(rows, columns, token_scope, counter)
        return cached_table(source, spec, strict=strict, cache_dir=cache_dir, progress=progress)
    sessions, problems = load_sessions(source, strict=strict)
    views = session_views(sessions, resolve_counter(counter), token_scope)
    frame = build_frame(rows(views), columns)
    return frame if strict else (frame, problems)


# -- public frame functions ----------------------------------------------------------------


_FRAME_DOC = """
    `session_id` is the header id, made unique within the call (`<id>#2` for a second
    session with the same id), so frames built from the same input join on `session_id`,
    `entry_id`, `parent_id` and `line`.

    Args:
        sessions: A `Session`, a session file or folder (read with `iter_sessions`), or a
            list of those.
        strict: Raise on read problems instead of returning them beside the frame.
        counter: Token counter for the token columns: a `TokenCounter` (share one across
            calls to reuse its per-entry cache), a method name (`pi`, `musepi`,
            `o200k_base`, `cl100k_base`), or None for `pi`.
        columns: The columns to build (default: all of this frame's columns).
        cache_dir: Build the frame file by file through a Parquet cache in this folder
            (see `musepi_lab.analysis.dask_frame`): a file whose content is unchanged is
            not read again. None (the default) reads every session into memory.
        progress: Show a progress bar over the files (tqdm, notebook-aware).

    Returns:
        With `strict=False` (the default) a tuple `(frame, errors)`: `errors` lists every
        `ReadProblem` met (files that could not be read, then each session's problems,
        each naming file and line) and the frame keeps every valid record. With
        `strict=True`, the frame alone.

    Raises:
        SessionReadError: A path does not exist; with `strict=True`, a file cannot be
            read or a session has read problems.
"""
"""The arguments, result and errors every frame function shares (appended to its docstring)."""


def _frame_doc(function: F) -> F:
    """Append the shared arguments/returns/raises section to a frame function's docstring."""
    function.__doc__ = (
        inspect.cleandoc(function.__doc__ or "") + "\n\n" + inspect.cleandoc(_FRAME_DOC)
    )
    return function


@overload
def entries_df(
    sessions: SessionSource,
    *,
    strict: Literal[True],
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> pd.DataFrame: ...
@overload
def entries_df(
    sessions: SessionSource,
    *,
    strict: Literal[False] = ...,
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> tuple[pd.DataFrame, list[ReadProblem]]: ...
@takes_sources
@_frame_doc
def entries_df(
    sessions: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = ENTRY_COLUMNS,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    """One row per entry of every session, in file order.

    Columns are `ENTRY_COLUMNS`: ids, `type`, `role` (of the runtime message, for entries
    that put one in the LLM context), `timestamp`, `on_path` (on the leaf's path),
    `children`, `label`, `tokens`, `tool_calls`, `custom_type`, `model`, `stop_reason`.

    """
    return _table(sessions, _entry_rows, columns, strict, counter, all_entries, cache_dir, progress)


@overload
def messages_df(
    sessions: SessionSource,
    *,
    strict: Literal[True],
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> pd.DataFrame: ...
@overload
def messages_df(
    sessions: SessionSource,
    *,
    strict: Literal[False] = ...,
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> tuple[pd.DataFrame, list[ReadProblem]]: ...
@takes_sources
@_frame_doc
def messages_df(
    sessions: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = MESSAGE_COLUMNS,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    """One row per entry that puts a message in the LLM context.

    `message` entries, and `custom_message`, `branch_summary` and `compaction` entries as
    the `custom`, `branchSummary` and `compactionSummary` messages they become. Columns are
    `MESSAGE_COLUMNS`: ids, `entry_type`, `role`, `text`, `tokens`, tool-result fields,
    model and usage.

    """
    return _table(
        sessions, _message_rows, columns, strict, counter, all_entries, cache_dir, progress
    )


@overload
def tool_calls_df(
    sessions: SessionSource,
    *,
    strict: Literal[True],
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[ToolCallRow]] = ...,
) -> pd.DataFrame: ...
@overload
def tool_calls_df(
    sessions: SessionSource,
    *,
    strict: Literal[False] = ...,
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[ToolCallRow]] = ...,
) -> tuple[pd.DataFrame, list[ReadProblem]]: ...
@takes_sources
@_frame_doc
def tool_calls_df(
    sessions: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[ToolCallRow]] = TOOL_CALL_COLUMNS,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    """One row per tool call, joined to the tool result that answers it.

    Columns are `TOOL_CALL_COLUMNS`: ids of the calling entry, `call_id`, `tool_name`,
    `arguments` (JSON) and `arguments_chars`, `path`, then `has_result`,
    `result_entry_id`, `result_line`, `result_tokens`, `is_error` and `useless` of the
    result (missing when there is none).

    """
    return _table(
        sessions,
        _tool_call_rows,
        columns,
        strict,
        counter,
        tool_result_entries,
        cache_dir,
        progress,
    )


@overload
def compactions_df(
    sessions: SessionSource,
    *,
    strict: Literal[True],
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> pd.DataFrame: ...
@overload
def compactions_df(
    sessions: SessionSource,
    *,
    strict: Literal[False] = ...,
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[EntryRow]] = ...,
) -> tuple[pd.DataFrame, list[ReadProblem]]: ...
@takes_sources
@_frame_doc
def compactions_df(
    sessions: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = COMPACTION_COLUMNS,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    """One row per compaction entry.

    Columns are `COMPACTION_COLUMNS`: ids, `method`, `summary_chars`, `summary_tokens`,
    `tokens_before`, `tokens_after`, `first_kept_entry_id` (and its `first_kept_line`),
    `read_files` and `modified_files` counts of the details, `from_extension`.

    """
    return _table(
        sessions,
        _compaction_rows,
        columns,
        strict,
        counter,
        entries_of_type("compaction"),
        cache_dir,
        progress,
    )


@overload
def sessions_df(
    sessions: SessionSource,
    *,
    strict: Literal[True],
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[SessionView]] = ...,
) -> pd.DataFrame: ...
@overload
def sessions_df(
    sessions: SessionSource,
    *,
    strict: Literal[False] = ...,
    counter: CounterSpec = ...,
    cache_dir: StrPath | None = ...,
    progress: bool = ...,
    columns: Sequence[Column[SessionView]] = ...,
) -> tuple[pd.DataFrame, list[ReadProblem]]: ...
@takes_sources
@_frame_doc
def sessions_df(
    sessions: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[SessionView]] = SESSION_COLUMNS,
) -> pd.DataFrame | tuple[pd.DataFrame, list[ReadProblem]]:
    """One row per session.

    Columns are `SESSION_COLUMNS`: `session_id`, `header_id`, `source_path`, `format`,
    counts of entries, messages (all, and per role), tool calls, compactions, branch
    summaries, branches (leaves) and read errors, first and last timestamp, `tokens`.

    """
    return _table(
        sessions, _session_rows, columns, strict, counter, all_entries, cache_dir, progress
    )
