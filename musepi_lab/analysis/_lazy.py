"""Frames of folders larger than memory: a `dask.dataframe` over the Parquet cache's parts.

`dask_frame` fills the cache file by file (`_cache.iter_parts` without tables: one session
file in memory at a time), then returns a lazy frame whose partitions are the cached parts
of a few files each (`files_per_partition`), with the call's unique `session_id`s and the
frame's dtypes, so `dask_frame(kind, folder, cache_dir=...).compute()` is the frame
`<kind>_df(folder)` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pandas as pd

from ._cache import (
    FrameSpec,
    Part,
    Rows,
    global_session_ids,
    iter_parts,
    joined_problems,
    part_frame,
    raise_first,
    read_part_tables,
)
from ._columns import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TIMESTAMP,
    TOOL_CALL_COLUMNS,
    Column,
)
from ._load import CounterSpec, SessionSource, StrPath, build_frame
from ._rows import TokenScope, all_entries, entries_of_type, tool_result_entries
from ._tables import (
    _compaction_rows,
    _entry_rows,
    _message_rows,
    _session_rows,
    _tool_call_rows,
)

FRAME_KINDS: dict[str, tuple[Rows, Sequence[Column[Any]], TokenScope]] = {
    "entries": (_entry_rows, ENTRY_COLUMNS, all_entries),
    "messages": (_message_rows, MESSAGE_COLUMNS, all_entries),
    "sessions": (_session_rows, SESSION_COLUMNS, all_entries),
    "tool_calls": (_tool_call_rows, TOOL_CALL_COLUMNS, tool_result_entries),
    "compactions": (_compaction_rows, COMPACTION_COLUMNS, entries_of_type("compaction")),
}
"""The frames `dask_frame` makes, by name: their rows, default columns and token scope."""


def _load_partition(
    group: list[tuple[str, list[str]]], specs: Sequence[Column[Any]], template: pd.DataFrame
) -> pd.DataFrame:
    """One partition: the parts of a few files (target, their frame session ids), typed."""
    import pyarrow as pa

    tables = read_part_tables([target for target, _ in group])
    table = pa.concat_tables(tables, promote_options="permissive")
    return part_frame(
        table, [ids for _, ids in group], [t.num_rows for t in tables], specs, template
    )


def _meta(parts: Sequence[Part], columns: Sequence[Column[Any]]) -> pd.DataFrame:
    """The empty frame of the columns, each timestamp at the finest unit of any part.

    One parse of all the strings (what the pandas frame does) gives that unit: pandas
    parses to `s` when there is nothing, `us` for ISO strings, `ns` when they need it.
    """
    meta = build_frame([], columns)
    order = {"s": 0, "ms": 1, "us": 2, "ns": 3}
    for column in columns:
        units = [p.timestamp_units.get(column.name, "s") for p in parts]
        finest = max(units, key=order.__getitem__, default="s")
        if column.dtype == TIMESTAMP:
            meta[column.name] = meta[column.name].astype(cast(Any, f"datetime64[{finest}, UTC]"))
    return meta


def dask_frame(
    kind: str,
    sessions: SessionSource,
    *,
    cache_dir: StrPath,
    strict: bool = False,
    counter: CounterSpec = None,
    columns: Sequence[Column[Any]] | None = None,
    progress: bool = False,
    files_per_partition: int = 32,
) -> Any:
    """A frame as a `dask.dataframe.DataFrame` over the Parquet parts of the session files.

    The cache is filled first, one file in memory at a time (files whose content is
    unchanged are not read again); the frame itself reads a part only when computed.
    Its `.compute()` equals the pandas frame of the same call (`entries_df(...)` for
    `"entries"`, and so on): same rows, same unique `session_id`s, same dtypes.

    Args:
        kind: `entries`, `messages`, `sessions`, `tool_calls` or `compactions`.
        sessions: A session file or folder, or a list of those (Sessions in memory are
            not accepted: every partition is a file of the cache).
        cache_dir: The Parquet cache folder (made if missing).
        strict: Raise on the first read problem instead of returning the problems.
        counter: Token counter (see `entries_df`).
        columns: The columns to build (default: all of this kind's columns).
        progress: Show a progress bar while the cache is filled.
        files_per_partition: How many files' parts make one partition (a partition per
            file would spend more time in the scheduler than in the reads).

    Returns:
        With `strict=False` a tuple `(frame, errors)`, the errors as `problems_of` gives
        them for the pandas frame (a dask frame has no `attrs` to carry them); with
        `strict=True` the frame alone.

    Raises:
        ValueError: An unknown `kind`, or a Session given in `sessions`.
        SessionReadError: A path does not exist; with `strict=True`, any read problem.
    """
    import dask.dataframe as dd

    if kind not in FRAME_KINDS:
        raise ValueError(f"unknown frame kind {kind!r}; expected one of {', '.join(FRAME_KINDS)}")
    rows, default_columns, scope = FRAME_KINDS[kind]
    spec = FrameSpec(rows, columns or default_columns, scope, counter)
    found = list(iter_parts(sessions, spec, cache_dir, progress, tables=False))
    if any(target is None for _, target in found):
        raise ValueError("dask_frame reads files only: pass paths, not Session objects")
    parts = [part for part, _ in found]
    problems = joined_problems(parts)
    if strict:
        raise_first(problems, parts)
    targets = [target for _, target in found if target is not None]
    meta = _meta(parts, spec.columns)
    if not targets:
        frame = dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
    else:
        pairs = list(zip([str(t) for t in targets], global_session_ids(parts), strict=True))
        size = max(1, files_per_partition)
        groups = [pairs[i : i + size] for i in range(0, len(pairs), size)]
        frame = dd.from_map(  # type: ignore[no-untyped-call]
            _load_partition,
            groups,
            meta=meta,
            specs=spec.columns,
            template=meta,
        )
    return frame if strict else (frame, problems)
