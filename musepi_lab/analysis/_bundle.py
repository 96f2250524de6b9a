"""A frame call through the cache: one bundle per call when nothing changed, else the parts.

Reading 10,000 small Parquet parts costs a few milliseconds each, so a repeated call would
spend most of its time opening files. After a call has joined its parts it also writes them
as one *bundle* (`<cache>/v<N>/<frame key>/bundles/<sources>.parquet`): the concatenated
part tables, with each part's header ids, problems, timestamp units and row count in the
metadata, under a key made of every input file's path and content digest. The next call
with the same sources stats the files (the digests come from the index while size and
mtime are unchanged), and when the key matches reads that one file; when it does not (a
file changed, came or went) it goes through the parts, reading only the changed files,
and replaces the bundle.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from .._atomic import write_files_atomic
from ..session._session import Session
from ._cache import (
    FrameSpec,
    Part,
    PartCache,
    _problem_rows,
    _problems,
    concat_parts,
    iter_inputs,
    iter_parts,
    join_parts,
    joined_problems,
    raise_first,
)
from ._load import StrPath
from ._problems import with_problems

_BUNDLE_META = b"musepi_lab.bundle"


def _part_meta(part: Part) -> list[Any]:
    return [
        list(part.header_ids),
        _problem_rows(part.file_problems),
        _problem_rows(part.session_problems),
        dict(part.timestamp_units),
        part.rows,
    ]


def _meta_part(meta: Sequence[Any]) -> Part:
    ids, files, sessions, units, rows = meta
    return Part(None, tuple(ids), _problems(files), _problems(sessions), dict(units), int(rows))


def bundle_path(cache: PartCache, source: Any) -> Path:
    """Where the bundle of a call's sources lives (one per list of sources and frame)."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    names = repr([os.fspath(item) for item in items]).encode()
    name = hashlib.blake2b(names, digest_size=16).hexdigest()
    return cache.root / cache.frame_key / "bundles" / f"{name}.parquet"


def inputs_key(cache: PartCache, files: Sequence[Path]) -> str:
    """The key of a bundle: the frame key, and every input file's path and digest."""
    located = [(os.fspath(f), cache.digest(f)) for f in files]
    return (
        cache.frame_key + ":" + hashlib.blake2b(repr(located).encode(), digest_size=16).hexdigest()
    )


def load_bundle(target: Path, key: str) -> tuple[Any, list[Part]] | None:
    """The bundle's table and parts (without tables), or None if missing, stale or corrupt."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(target)
        meta = orjson.loads((table.schema.metadata or {})[_BUNDLE_META])
        parts = [_meta_part(m) for m in meta["parts"]]
        if meta["key"] != key or sum(p.rows for p in parts) != table.num_rows:
            return None
    except Exception:  # any unreadable bundle is rebuilt, never trusted
        return None
    kept = {k: v for k, v in (table.schema.metadata or {}).items() if k != _BUNDLE_META}
    return table.replace_schema_metadata(kept), parts


def store_bundle(target: Path, key: str, table: Any, parts: Sequence[Part]) -> None:
    """Write a bundle atomically."""
    import pyarrow.parquet as pq

    meta = orjson.dumps({"key": key, "parts": [_part_meta(p) for p in parts]})
    stamped = table.replace_schema_metadata({**(table.schema.metadata or {}), _BUNDLE_META: meta})
    target.parent.mkdir(parents=True, exist_ok=True)
    write_files_atomic({target: lambda tmp: pq.write_table(stamped, tmp)}, durable=False)


def _result(parts: Sequence[Part], table: Any, spec: FrameSpec, strict: bool) -> pd.DataFrame:
    problems = joined_problems(parts)
    if strict:
        raise_first(problems, parts)
    return with_problems(join_parts(parts, spec.columns, table), problems)


def cached_table(
    source: Any,
    spec: FrameSpec,
    *,
    strict: bool,
    cache_dir: StrPath | None,
    progress: bool,
) -> pd.DataFrame:
    """A frame function's result built file by file (and cached when `cache_dir` is set)."""
    inputs = list(iter_inputs(source, cache_dir))
    if cache_dir is None or any(isinstance(item, Session) for item in inputs):
        parts = [part for part, _ in iter_parts(source, spec, cache_dir, progress, inputs=inputs)]
        return _result(parts, None, spec, strict)
    cache = PartCache(cache_dir, spec.key())
    files = [item for item in inputs if isinstance(item, Path)]
    key = inputs_key(cache, files)
    cache.save()  # the digests just computed, for the parts' pass below
    target = bundle_path(cache, source)
    found = load_bundle(target, key)
    if found is not None:
        table, parts = found
        return _result(parts, table, spec, strict)
    parts = [part for part, _ in iter_parts(source, spec, cache_dir, progress, inputs=inputs)]
    table = concat_parts(parts) if parts else None
    if table is not None:
        store_bundle(target, key, table, parts)
    return _result(parts, table, spec, strict)
