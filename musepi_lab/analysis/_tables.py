"""The frame functions: sessions in, one pandas DataFrame out (its read problems on it).

Each function has the same backbone: load the sessions (`load_sessions`), give each a
frame id (`SessionView`), make rows, extract every column of every row into a plain dict
record, and make the DataFrame once at the end (`build_frame`); the problems go on the
frame (`with_problems`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import pandas as pd

from ..session._errors import SessionReadError
from ..session._messages import entry_to_message
from ._columns import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TOOL_CALL_COLUMNS,
    Column,
)
from ._load import (
    CounterSpec,
    SessionSource,
    StrPath,
    build_frame,
    load_sessions,
    resolve_counter,
    session_views,
)
from ._problems import with_problems
from ._rows import (
    EntryRow,
    SessionView,
    TokenScope,
    ToolCallRow,
    all_entries,
    entries_of_type,
    tool_result_entries,
)
from ._sources import takes_sources

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


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
) -> pd.DataFrame:
    if cache_dir is not None or progress:  # file by file, cached: `_cache`, `_bundle`
        from ._bundle import cached_table
        from ._cache import FrameSpec

        spec = FrameSpec(rows, columns, token_scope, counter)
        return cached_table(source, spec, strict=strict, cache_dir=cache_dir, progress=progress)
    sessions, problems = load_sessions(source, strict=strict)
    views = session_views(sessions, resolve_counter(counter), token_scope)
    frame = build_frame(rows(views), columns, problems)
    if strict and problems:  # reading raised already: these are values a column could not take
        raise SessionReadError.from_problem(problems[0], problems)
    return with_problems(frame, problems)


# -- public frame functions ----------------------------------------------------------------


_FRAME_DOC = """
    `session_id` is the header id, made unique within the call (`<id>#2` for a second
    session with the same id), so frames built from the same input join on `session_id`,
    `entry_id`, `parent_id` and `line`.

    Args:
        source: A `Session`, a session file or folder (read with `iter_sessions`), or a
            list of those.
        strict: Raise on the first problem instead of keeping the problems on the frame.
        counter: Token counter for the token columns: a `TokenCounter` (share one across
            calls to reuse its per-entry cache), a method name (`pi`, `musepi`,
            `o200k_base`, `cl100k_base`), or None for `pi`.
        columns: The columns to build (default: all of this frame's columns).
        cache_dir: Build the frame file by file through a Parquet cache in this folder
            (see `musepi_lab.analysis.dask_frame`): a file whose content is unchanged is
            not read again. None (the default) reads every session into memory.
        progress: Show a progress bar over the files (tqdm, notebook-aware).

    Returns:
        The DataFrame, keeping every valid record. The problems met travel with it as data,
        `frame.attrs["problems"]`, read back with `problems_of(frame)`: every `ReadProblem`
        (files that could not be read, then each session's problems, then values a column
        could not extract, kind `column-error`), each naming file and line.

    Raises:
        SessionReadError: A path does not exist; with `strict=True`, a file cannot be
            read, a session has read problems or a column cannot extract a value.
"""
"""The arguments, result and errors every frame function shares (appended to its docstring)."""


def _frame_doc(function: F) -> F:
    """Append the shared arguments/returns/raises section to a frame function's docstring."""
    function.__doc__ = (
        inspect.cleandoc(function.__doc__ or "") + "\n\n" + inspect.cleandoc(_FRAME_DOC)
    )
    return function


@takes_sources
@_frame_doc
def entries_df(
    source: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = ENTRY_COLUMNS,
) -> pd.DataFrame:
    """One row per entry of every session, in file order.

    Columns are `ENTRY_COLUMNS`: ids, `type`, `role` (of the runtime message, for entries
    that put one in the LLM context), `timestamp`, `on_path` (on the leaf's path),
    `children`, `label`, `tokens`, `tool_calls`, `custom_type`, `model`, `stop_reason`.

    """
    return _table(source, _entry_rows, columns, strict, counter, all_entries, cache_dir, progress)


@takes_sources
@_frame_doc
def messages_df(
    source: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = MESSAGE_COLUMNS,
) -> pd.DataFrame:
    """One row per entry that puts a message in the LLM context.

    `message` entries, and `custom_message`, `branch_summary` and `compaction` entries as
    the `custom`, `branchSummary` and `compactionSummary` messages they become. Columns are
    `MESSAGE_COLUMNS`: ids, `entry_type`, `role`, `text`, `tokens`, tool-result fields,
    model and usage.

    """
    return _table(source, _message_rows, columns, strict, counter, all_entries, cache_dir, progress)


@takes_sources
@_frame_doc
def tool_calls_df(
    source: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[ToolCallRow]] = TOOL_CALL_COLUMNS,
) -> pd.DataFrame:
    """One row per tool call, joined to the tool result that answers it.

    Columns are `TOOL_CALL_COLUMNS`: ids of the calling entry, `call_id`, `tool_name`,
    `arguments` (JSON) and `arguments_chars`, `path`, then `has_result`,
    `result_entry_id`, `result_line`, `result_tokens`, `is_error` and `useless` of the
    result (missing when there is none).

    """
    return _table(
        source,
        _tool_call_rows,
        columns,
        strict,
        counter,
        tool_result_entries,
        cache_dir,
        progress,
    )


@takes_sources
@_frame_doc
def compactions_df(
    source: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[EntryRow]] = COMPACTION_COLUMNS,
) -> pd.DataFrame:
    """One row per compaction entry.

    Columns are `COMPACTION_COLUMNS`: ids, `method`, `summary_chars`, `summary_tokens`,
    `tokens_before`, `tokens_after`, `first_kept_entry_id` (and its `first_kept_line`),
    `read_files` and `modified_files` counts of the details, `from_extension`.

    """
    return _table(
        source,
        _compaction_rows,
        columns,
        strict,
        counter,
        entries_of_type("compaction"),
        cache_dir,
        progress,
    )


@takes_sources
@_frame_doc
def sessions_df(
    source: SessionSource,
    *,
    strict: bool = False,
    counter: CounterSpec = None,
    cache_dir: StrPath | None = None,
    progress: bool = False,
    columns: Sequence[Column[SessionView]] = SESSION_COLUMNS,
) -> pd.DataFrame:
    """One row per session.

    Columns are `SESSION_COLUMNS`: `session_id`, `header_id`, `source_path`, `format`,
    counts of entries, messages (all, and per role), tool calls, compactions, branch
    summaries, branches (leaves) and read errors, first and last timestamp, `tokens`.

    """
    return _table(source, _session_rows, columns, strict, counter, all_entries, cache_dir, progress)
