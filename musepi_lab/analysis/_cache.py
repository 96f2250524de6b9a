"""Frames of many files, one file at a time, with a Parquet cache keyed by file content.

A frame call over a folder reads each file on its own into a *part*: the file's rows as an
Arrow table (with the file-local session ordinal in `session_id`), its sessions' header ids,
and its read problems. The parts are joined once at the end, where `session_id` is made
unique over the whole call (`frame_ids`, the rule of `frame_session_ids`), so the frame is
the one `_tables` builds from all the sessions at once, dtypes included.

With a `cache_dir`, every part is also a Parquet file
`<cache_dir>/v<CACHE_VERSION>/<frame key>/<ab>/<part key>.parquet` whose schema metadata holds
the header ids and the problems. The part key is a blake2b of the file's bytes and its path
as given (rows carry `source_path`); the frame key names the code version, the rows, the
columns, the token scope and the counter method, so a cache made by other code or another
counter is never read. `index.json` keeps each file's `(size, mtime_ns)` and digest, so an
unchanged file is not even hashed again; a changed one is hashed, read and written anew, and
the parts of a file that is gone are deleted. Part files and the index are written
atomically; a part that cannot be read, or whose metadata does not match, is rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson
import pandas as pd

from .._atomic import write_bytes_atomic, write_files_atomic
from .._version import __version__
from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._columns import Column
from ._load import (
    StrPath,
    build_frame,
    read_file_sessions,
    resolve_counter,
    session_file_entries_of,
    session_files,
    typed_series,
)
from ._part_values import arrow_table, timestamp_units
from ._problems import extract_values
from ._rows import SessionView, TokenScope, unique_ids

CACHE_VERSION = 2
"""Bump when a frame's rows or columns change in a way the package version does not show
(2: parts written in batches)."""

BATCH_FILES = 512
"""How many files' parts one batch (one Parquet file) holds at most."""

_META = b"musepi_lab.part"
_INDEX = "index.json"
_HASH_CHUNK = 1 << 20

Rows = Callable[[list[SessionView]], Iterable[Any]]
R = TypeVar("R")


@dataclass(frozen=True)
class Part:
    """One input's piece of a frame: its rows, its sessions' header ids and its problems."""

    table: Any  # pyarrow.Table of the extracted values; session_id: local ordinal "0", ...
    header_ids: tuple[str, ...]
    file_problems: tuple[ReadProblem, ...]
    session_problems: tuple[ReadProblem, ...]
    timestamp_units: Mapping[str, str] = field(default_factory=dict)
    rows: int = 0

    def without_table(self) -> Part:
        """The part's ids, problems and units, its rows dropped."""
        return replace(self, table=None)


def frame_ids(header_ids: Iterable[str]) -> list[str]:
    """Header ids made unique in order (`<id>#2` for the second), as `frame_session_ids`."""
    return unique_ids(header_ids)


def _problem_rows(problems: Iterable[ReadProblem]) -> list[list[Any]]:
    return [[p.path, p.line, p.kind, p.message] for p in problems]


def _problems(rows: Iterable[Sequence[Any]]) -> tuple[ReadProblem, ...]:
    return tuple(
        ReadProblem(str(a), None if b is None else int(b), str(c), str(d)) for a, b, c, d in rows
    )


# -- building one part ---------------------------------------------------------------------


@dataclass(frozen=True)
class FrameSpec:
    """What a frame is made of: its rows, columns, token scope and counter."""

    rows: Rows
    columns: Sequence[Column[Any]]
    token_scope: TokenScope
    counter: TokenCounter | str | None

    def key(self) -> str:
        """The frame key: code version, rows, columns, token scope and counter method."""
        counter = (
            resolve_counter(self.counter)
            if not isinstance(self.counter, TokenCounter)
            else self.counter
        )
        spec = (
            __version__,
            CACHE_VERSION,
            _qualname(self.rows),
            [(c.name, c.dtype, _qualname(c.extract)) for c in self.columns],
            _qualname(self.token_scope),
            _qualname(type(counter)),
            counter.method,
        )
        return hashlib.blake2b(repr(spec).encode(), digest_size=12).hexdigest()

    def counter_for_file(self) -> TokenCounter:
        # A counter given is shared (the caller's cache); a fresh one per file keeps the
        # per-entry cache from growing with the folder.
        return (
            self.counter
            if isinstance(self.counter, TokenCounter)
            else resolve_counter(self.counter)
        )

    def part(self, sessions: list[Session], file_problems: Iterable[ReadProblem] = ()) -> Part:
        """The part of these sessions (ids are file-local ordinals until joined).

        The table holds the values the columns extract, untyped (timestamps as their
        strings): the frame is typed once, when the parts are joined, as `build_frame`
        types it. Building a pandas frame per file would cost more than reading it.
        """
        counter = self.counter_for_file()
        views = [SessionView(str(k), s, counter, self.token_scope) for k, s in enumerate(sessions)]
        extractors = [(c.name, c.extract) for c in self.columns]
        values: dict[str, list[Any]] = {name: [] for name, _ in extractors}
        failed: list[ReadProblem] = []  # values a column could not extract
        for row in self.rows(views):
            for name, value in extract_values(row, extractors, failed).items():
                values[name].append(value)
        table = arrow_table(values, self.columns)
        return Part(
            table,
            tuple(s.id for s in sessions),
            tuple(file_problems),
            (*(p for s in sessions for p in s.errors), *failed),
            timestamp_units(values, self.columns),
            table.num_rows,
        )

    def read_part(self, path: Path) -> Part:
        """Read one file (leniently) into its part."""
        sessions, failed = read_file_sessions(path, strict=False)
        return self.part(sessions, failed)


def _qualname(function: object) -> str:
    return (
        f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', repr(function))}"
    )


# -- the Parquet cache ---------------------------------------------------------------------


def file_digest(path: Path) -> str:
    """blake2b (16 bytes) of a file's content."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class PartCache:
    """The Parquet parts of one frame key under a cache folder, and the file index."""

    def __init__(self, cache_dir: StrPath, frame_key: str) -> None:
        self.root = Path(cache_dir) / f"v{CACHE_VERSION}"
        self.frame_key = frame_key
        self.index_path = self.root / _INDEX
        self.index: dict[str, dict[str, Any]] = self._load_index()
        self.changed = False
        self.rebuilt: list[str] = []  # paths read from their files in this call
        self._lock = threading.Lock()
        self._batches: dict[tuple[str, bool], tuple[Any, list[dict[str, Any]]] | None] = {}
        self._pending: list[tuple[Path, str, Part]] = []
        self._call = secrets.token_hex(6)  # this call's batches' names
        self._batch_rel = ""
        self._written = 0
        self._released: set[str] = set()  # batches a file stopped using in this call

    def _load_index(self) -> dict[str, dict[str, Any]]:
        try:
            index = orjson.loads(self.index_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return index if isinstance(index, dict) else {}

    def digest(self, path: Path) -> str:
        """The file's content digest, from the index when its size and mtime are unchanged."""
        stat = path.stat()
        name = os.fspath(path)
        known = self.index.get(name) or {}
        if known.get("size") == stat.st_size and known.get("mtime_ns") == stat.st_mtime_ns:
            return str(known["digest"])
        digest = file_digest(path)
        parts = dict(known.get("parts", {}))
        if known.get("digest") != digest:  # new content: the old parts are garbage
            self._delete(parts.values())
            parts = {}
        self.index[name] = {
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "digest": digest,
            "parts": parts,
        }
        self.changed = True
        return digest

    def locate(self, path: Path) -> tuple[str | None, str]:
        """Where the part of a file lives (`<batch>#<member>` under the cache root, None
        when it has none yet), and the key its metadata must hold."""
        digest = self.digest(path)
        ref = (self.index[os.fspath(path)].get("parts") or {}).get(self.frame_key)
        return (ref if isinstance(ref, str) else None), f"{self.frame_key}:{digest}"

    def _batch(self, rel: str, tables: bool) -> tuple[Any, list[dict[str, Any]]] | None:
        """A batch file's table (None with `tables=False`) and member metadata, read once
        a call; None when it is missing, corrupt or not ours."""
        import pyarrow.parquet as pq

        with self._lock:
            if (rel, tables) in self._batches:
                return self._batches[(rel, tables)]
        try:
            target = self.root / rel
            if tables:
                table = pq.read_table(target)
                schema, rows = table.schema, table.num_rows
            else:
                footer = pq.ParquetFile(target)
                table, schema, rows = None, footer.schema_arrow, footer.metadata.num_rows
            members = orjson.loads((schema.metadata or {})[_META])["members"]
            if sum(int(m["rows"]) for m in members) != rows:
                raise ValueError("rows and members disagree")
            if table is not None:
                table = table.replace_schema_metadata(
                    {k: v for k, v in (schema.metadata or {}).items() if k != _META}
                )
            found: tuple[Any, list[dict[str, Any]]] | None = (table, members)
        except Exception:  # any unreadable batch is rebuilt, never trusted
            found = None
        with self._lock:
            self._batches[(rel, tables)] = found
        return found

    def load(self, ref: str | None, expected: str, *, tables: bool = True) -> Part | None:
        """The part stored at `ref` (`<batch>#<member>`), or None when it is missing,
        corrupt or not ours. With `tables=False` only the footer is read (ids and problems;
        `table` is None)."""
        if ref is None or "#" not in ref:
            return None
        rel, _, member = ref.rpartition("#")
        batch = self._batch(rel, tables)
        if batch is None or not member.isdigit() or int(member) >= len(batch[1]):
            return None
        table, members = batch
        meta = members[int(member)]
        if meta["key"] != expected:
            return None
        start = sum(int(m["rows"]) for m in members[: int(member)])
        return Part(
            table.slice(start, int(meta["rows"])) if table is not None else None,
            tuple(meta["header_ids"]),
            _problems(meta["file_problems"]),
            _problems(meta["session_problems"]),
            dict(meta["timestamp_units"]),
            int(meta["rows"]),
        )

    def add(self, path: Path, expected: str, part: Part) -> str:
        """Queue a part for the next batch; its ref (the batch is written by `flush`)."""
        if len(self._pending) >= BATCH_FILES:
            self.flush()
        if not self._pending:
            self._batch_rel = f"{self.frame_key}/{self._call}-{self._written:05}.parquet"
        ref = f"{self._batch_rel}#{len(self._pending)}"
        self._pending.append((path, expected, part))
        entry = self.index[os.fspath(path)]
        entry.setdefault("parts", {})[self.frame_key] = ref
        self.changed = True
        return ref

    def flush(self) -> None:
        """Write the queued parts as one batch, atomically, their ids and problems in the
        schema metadata."""
        import pyarrow.parquet as pq

        if not self._pending:
            return
        members = [
            {
                "key": expected,
                "rows": part.table.num_rows,
                "header_ids": list(part.header_ids),
                "file_problems": _problem_rows(part.file_problems),
                "session_problems": _problem_rows(part.session_problems),
                "timestamp_units": dict(part.timestamp_units),
            }
            for _, expected, part in self._pending
        ]
        table = concat_parts([part for _, _, part in self._pending])
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), _META: orjson.dumps({"members": members})}
        )
        target = self.root / self._batch_rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_files_atomic({target: lambda tmp: pq.write_table(table, tmp)}, durable=False)
        self._pending = []
        self._written += 1

    def rebuild(self, spec: FrameSpec, path: Path, expected: str) -> tuple[Part, str]:
        """Read a file into its part and queue it for the cache; the part and its ref."""
        part = spec.read_part(path)
        self.rebuilt.append(os.fspath(path))
        return part, self.add(path, expected, part)

    def forget_missing(self, under: Iterable[Path]) -> None:
        """Drop index entries (and their parts) for files under these folders that are gone."""
        roots = [os.fspath(p) + os.sep for p in under]
        for name in list(self.index):
            if any(name.startswith(r) for r in roots) and not os.path.exists(name):
                self._delete(self.index.pop(name).get("parts", {}).values())
                self.changed = True

    def _delete(self, relative: Iterable[str]) -> None:
        """Let go of parts: a batch file is deleted once no file's part is in it."""
        self._released.update(str(rel).rpartition("#")[0] or str(rel) for rel in relative)

    def _drop_unused(self) -> None:
        used = {
            str(ref).rpartition("#")[0]
            for entry in self.index.values()
            for ref in (entry.get("parts") or {}).values()
        }
        for rel in self._released - used:
            try:
                (self.root / rel).unlink()
            except OSError:
                pass
        self._released = set()

    def save(self) -> None:
        """Write the queued batch, drop the batches no file uses any more, and write the
        index (atomically) if this call changed it."""
        self.flush()
        self._drop_unused()
        if self.changed:
            self.root.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(self.index_path, orjson.dumps(self.index), durable=False)
            self.changed = False


# -- a frame from parts --------------------------------------------------------------------


def iter_inputs(source: Any, cache_dir: StrPath | None = None) -> Iterator[Session | Path]:
    """Every session given and every file under the paths given, in input order; files of
    the cache itself (its `index.json`) are left out when it sits inside a folder read."""
    items = [source] if isinstance(source, (Session, str, os.PathLike)) else source
    cache = os.path.realpath(cache_dir) if cache_dir is not None else None
    for item in items:
        if isinstance(item, Session):
            yield item
        elif isinstance(item, (str, os.PathLike)):
            if cache is None:
                yield from session_files(item)
            else:
                yield from _outside(session_file_entries_of(item), cache)
        else:
            raise TypeError(f"expected a Session or a path, got {type(item).__name__}")


def _outside(found: Iterable[tuple[Path, os.DirEntry[str] | None]], cache: str) -> Iterator[Path]:
    """The files whose resolved path is not under `cache` (a resolved folder): each folder
    resolved once, a file itself only when it is a symlink."""
    prefix = cache if cache.endswith(os.sep) else cache + os.sep
    folders: dict[str, str] = {}
    for file, entry in found:
        if entry is None or entry.is_symlink():
            resolved = os.path.realpath(file)
        else:
            folder, _, name = entry.path.rpartition(os.sep)
            real = folders.get(folder)
            if real is None:
                real = folders[folder] = os.path.realpath(folder or os.sep)
            resolved = os.path.join(real, name)
        if resolved != cache and not resolved.startswith(prefix):
            yield file


def _folders(source: Any) -> list[Path]:
    items = [source] if isinstance(source, (Session, str, os.PathLike)) else source
    return [Path(i) for i in items if isinstance(i, (str, os.PathLike)) and Path(i).is_dir()]


def progress_bar(items: Iterable[R], progress: bool, desc: str, total: int) -> Iterable[R]:
    """`items` with a tqdm bar (notebook-aware) when `progress`, else as they are."""
    if not progress:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="file", total=total)


def _cached_parts(
    inputs: list[Session | Path], spec: FrameSpec, cache: PartCache, tables: bool, progress: bool
) -> Iterator[tuple[Part, str | None]]:
    located = [None if isinstance(i, Session) else cache.locate(i) for i in inputs]

    def load(where: tuple[str | None, str] | None) -> Part | None:
        return None if where is None else cache.load(*where, tables=tables)

    with ThreadPoolExecutor(max_workers=4) as pool:  # Arrow reads release the GIL
        loaded = pool.map(load, located)
        steps = zip(inputs, located, loaded, strict=True)
        for item, where, part in progress_bar(steps, progress, "reading sessions", len(inputs)):
            if isinstance(item, Session) or where is None:
                yield spec.part([item] if isinstance(item, Session) else []), None
                continue
            ref = where[0]
            if part is None:
                if ref is not None:  # a part that cannot be read is let go
                    cache._delete([ref])
                part, ref = cache.rebuild(spec, item, where[1])
                if not tables:
                    part = part.without_table()
            yield part, os.fspath(cache.root / ref) if ref is not None else None


def iter_parts(
    source: Any,
    spec: FrameSpec,
    cache_dir: StrPath | None,
    progress: bool,
    *,
    tables: bool = True,
    inputs: Sequence[Session | Path] | None = None,
) -> Iterator[tuple[Part, str | None]]:
    """Each input's part, in order, with where it lives in the cache (`part_ref`: a batch
    file under the cache root and the member, written by the end of the call; None if not
    cached).

    With `tables=False` (cache only) parts carry no rows: they are read or written one at a
    time and dropped, so a folder of any size goes through in bounded memory. `inputs`:
    what `iter_inputs(source, cache_dir)` gave, when the caller has it already.
    """
    inputs = list(iter_inputs(source, cache_dir)) if inputs is None else list(inputs)
    if cache_dir is None:
        for item in progress_bar(inputs, progress, "reading sessions", len(inputs)):
            yield (spec.part([item]) if isinstance(item, Session) else spec.read_part(item)), None
        return
    cache = PartCache(cache_dir, spec.key())
    try:
        yield from _cached_parts(inputs, spec, cache, tables, progress)
        cache.forget_missing(_folders(source))
    finally:
        cache.save()


def read_part_tables(refs: Sequence[str]) -> list[Any]:
    """The tables of cached parts given as `iter_parts` names them (`<batch file>#<member>`),
    each batch file read once."""
    import pyarrow.parquet as pq

    batches: dict[str, tuple[Any, list[int]]] = {}
    out = []
    for ref in refs:
        path, _, member = ref.rpartition("#")
        if path not in batches:
            table = pq.read_table(path)
            members = orjson.loads((table.schema.metadata or {})[_META])["members"]
            starts = np.cumsum([0] + [int(m["rows"]) for m in members]).tolist()
            batches[path] = (table, starts)
        table, starts = batches[path]
        i = int(member)
        out.append(table.slice(starts[i], starts[i + 1] - starts[i]))
    return out


def joined_problems(parts: Sequence[Part]) -> list[ReadProblem]:
    """Problems in `load_sessions` order: files that could not be read, then each session's."""
    return [p for part in parts for p in part.file_problems] + [
        p for part in parts for p in part.session_problems
    ]


def raise_first(problems: Sequence[ReadProblem], parts: Sequence[Part]) -> None:
    """Strict mode: raise the first problem, as `load_sessions(strict=True)` would."""
    first = next((p for part in parts for p in part.file_problems), None)
    if first is None and problems:
        first = problems[0]
    if first is not None:
        raise SessionReadError.from_problem(first)


def global_session_ids(parts: Sequence[Part]) -> list[list[str]]:
    """Per part, the frame `session_id` of each of its sessions (unique over the call)."""
    ids = frame_ids(h for part in parts for h in part.header_ids)
    out, start = [], 0
    for part in parts:
        out.append(ids[start : start + len(part.header_ids)])
        start += len(part.header_ids)
    return out


def typed_frame(table: Any, columns: Sequence[Column[Any]]) -> pd.DataFrame:
    """A joined table as the frame `build_frame` makes: each column typed once, whole."""
    frame: pd.DataFrame = table.to_pandas()
    for column in columns:
        if column.dtype is not None:
            frame[column.name] = typed_series(frame[column.name], column.dtype)
    return frame


def _global_ids(table: Any, parts_ids: Sequence[Sequence[str]], sizes: Sequence[int]) -> Any:
    """The table with each row's local session ordinal replaced by its frame id."""
    import pyarrow as pa

    if "session_id" not in table.column_names or table.num_rows == 0:
        return table
    offsets = np.cumsum([0] + [len(ids) for ids in parts_ids[:-1]])
    rows = np.repeat(offsets, sizes)
    local = np.asarray(table.column("session_id").to_numpy(zero_copy_only=False), dtype=np.int64)
    flat = np.asarray([i for ids in parts_ids for i in ids] or [""], dtype=object)
    ids = pa.array(flat[rows + local], type=pa.string())
    return table.set_column(table.column_names.index("session_id"), "session_id", ids)


def part_frame(
    table: Any,
    ids: Sequence[Sequence[str]],
    sizes: Sequence[int],
    columns: Sequence[Column[Any]],
    meta: pd.DataFrame,
) -> pd.DataFrame:
    """Consecutive parts (concatenated, each part's frame `session_id`s and row count) as a
    pandas frame, typed, with the meta's dtypes."""
    frame = typed_frame(_global_ids(table, ids, sizes), columns)
    return frame.astype(meta.dtypes.to_dict())


def concat_parts(parts: Sequence[Part]) -> Any:
    """The parts' tables as one Arrow table (types widened where parts differ)."""
    import pyarrow as pa

    return pa.concat_tables([p.table for p in parts], promote_options="permissive")


def join_parts(
    parts: Sequence[Part], columns: Sequence[Column[Any]], table: Any = None
) -> pd.DataFrame:
    """The frame of all parts (their tables, or `table`, the tables already concatenated):
    session ids made unique over the call, each column typed once."""
    if not parts:
        return build_frame([], columns)
    table = concat_parts(parts) if table is None else table
    sizes = [p.rows for p in parts]
    return typed_frame(_global_ids(table, global_session_ids(parts), sizes), columns)
