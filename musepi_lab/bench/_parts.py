"""Partitioned results: one Parquet part per session, and a manifest written at the end.

A grid run on a cluster (`_dask`) never gathers its rows in one place. Each session's
cells are one task; the task writes that session's rows as
`<out>/results/part-<name>.parquet`, where `name` is a hash of the cells' keys (so of the
session file's bytes and the whole grid configuration, see `Cell.key`). The name being a
function of the work, not of when or where it ran, is what makes faults harmless:

- a task rerun after its worker died writes the same part again (atomically, temporary +
  rename), so it replaces the first copy instead of adding a second;
- a rerun of the whole run finds the parts already written and skips their sessions
  (a part holding a failed cell is recomputed, as the cell cache retries failed cells).

Each part carries its key, its row and error counts and a checksum of its rows
(`content_digest`) in the Parquet footer. A footer can be whole over damaged data pages
(a float changed in place reads back as another float, without complaint), so a resume
trusts a part only once its rows are read back whole and match the checksum
(`check_part`); one that does not is recomputed and reported, and `read_parts` refuses it.
When every part is written, `_SUCCESS.json` lists them in grid order with their row counts
(written atomically, last): a folder without it is a run that has not finished, and readers
say so instead of returning part of a grid.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import write_bytes_atomic, write_files_atomic
from ._grid import Cell
from ._layout import CONFIG_JSON
from ._score import COLUMNS

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

RESULTS_DIR = "results"
"""The folder of parts inside a run's output folder."""

MANIFEST = "_SUCCESS.json"
"""The manifest inside `RESULTS_DIR`, written when every part is."""

PARTS_FORMAT = 2
"""Bumped when the meaning of a part changes (2: the footer holds `content_digest`)."""

_META_KEY = b"musepi_lab.part"


def part_key(cells: Sequence[Cell]) -> str:
    """Hex sha256 of the cells' keys in order: what a part's name and footer hold."""
    digest = hashlib.sha256(f"parts:{PARTS_FORMAT}\n".encode())
    for cell in cells:
        digest.update(cell.key.encode() + b"\n")
    return digest.hexdigest()


def part_file(key: str) -> str:
    """The part's file name for a `part_key`."""
    return f"part-{key[:32]}.parquet"


def _column(values: list[Any]) -> pa.Array:
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # A column mixing kinds (never seen; a new strategy's odd value): kept as text
        # rather than losing the part.
        return pa.array([None if v is None else str(v) for v in values], pa.large_string())


def content_digest(table: pa.Table) -> str:
    """Hex sha256 of a table's rows: its column names and values in order (metadata left
    out), as Python values, so the table written and the one read back give the same."""
    import orjson

    digest = hashlib.sha256()
    for name in table.column_names:
        digest.update(orjson.dumps([name, table.column(name).to_pylist()], default=str))
    return digest.hexdigest()


def part_table(key: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """The rows as an Arrow table with `COLUMNS`; the key, counts and `content_digest` in
    its metadata."""
    import pyarrow as pa

    table = pa.table({c: _column([row.get(c) for row in rows]) for c in COLUMNS})
    errors = sum(1 for row in rows if row.get("error") is not None)
    meta = {
        "format": PARTS_FORMAT,
        "key": key,
        "rows": len(rows),
        "errors": errors,
        "sha256": content_digest(table),
    }
    return table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})


def write_part(
    results: str | os.PathLike[str], key: str, rows: Sequence[Mapping[str, Any]]
) -> Path:
    """Write one session's rows as its part, atomically (a rerun replaces it whole).

    Returns:
        The part's path.
    """
    import pyarrow.parquet as pq

    path = Path(results) / part_file(key)
    table = part_table(key, rows)
    # Not synced one by one (thousands of small files): the manifest, written last, is.
    write_files_atomic({path: lambda tmp: pq.write_table(table, tmp)}, durable=False)
    return path


def _footer(meta: Mapping[bytes, bytes] | None) -> dict[str, Any] | None:
    try:
        info = json.loads((meta or {})[_META_KEY])
    except (KeyError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("format") == PARTS_FORMAT else None


def part_info(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A part's footer metadata (`key`, `rows`, `errors`, `sha256`), or None when the file
    is missing or not a whole part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return _footer(pq.read_metadata(path).metadata)
    except (OSError, ValueError, pa.ArrowException):
        return None


def read_part(path: str | os.PathLike[str]) -> tuple[pa.Table, dict[str, Any] | None]:
    """A part's rows and its footer metadata, the file opened once (`ParquetFile`: about
    half the time of `read_table` on a file this small).

    Raises:
        OSError, pyarrow.ArrowException: The file cannot be read.
    """
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read()
    return table, _footer(table.schema.metadata)


def damage_of(table: pa.Table, info: Mapping[str, Any]) -> str | None:
    """What is wrong with a part's rows (read back in full) against its footer `info`, or
    None when their count and `content_digest` are the footer's."""
    if table.num_rows != info.get("rows"):
        return f"{table.num_rows} rows, its footer says {info.get('rows')}"
    if content_digest(table) != info.get("sha256"):
        return "its rows do not match the checksum in its footer"
    return None


def check_part(
    results: str | os.PathLike[str], key: str, cells: int
) -> tuple[dict[str, Any] | None, str | None]:
    """`(footer, None)` when the part for `key` is whole, its rows prove it (`damage_of`)
    and it holds no failed cell, so a rerun may skip its session; else `(None, why)` for a
    part that is there but damaged (to recompute and report), `(None, None)` for one that
    is missing or holds a failed cell (to recompute)."""
    import pyarrow as pa

    path = Path(results) / part_file(key)
    if not path.exists():
        return None, None
    try:
        table, info = read_part(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        return None, f"it cannot be read ({type(exc).__name__}: {exc})"
    if info is None:
        return None, "its footer holds no part metadata"
    if info.get("key") != key or info.get("rows") != cells:
        return None, f"its footer is for other cells ({info.get('rows')} rows)"
    damage = damage_of(table, info)
    if damage is not None:
        return None, damage
    return (info, None) if info.get("errors") == 0 else (None, None)


def write_manifest(
    out: str | os.PathLike[str],
    parts: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any],
) -> Path:
    """Write `config.json` and, last, the manifest listing `parts` (dicts with `file`,
    `rows`, `errors`, in grid order); remove parts of other runs from the folder, so the
    folder's `part-*.parquet` are exactly the manifest's.

    Returns:
        The manifest's path.
    """
    base = Path(out)
    results = base / RESULTS_DIR
    listed = [
        {"file": p["file"], "rows": int(p["rows"]), "errors": int(p["errors"])} for p in parts
    ]
    manifest = {
        "format": PARTS_FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": sum(p["rows"] for p in listed),
        "errors": sum(p["errors"] for p in listed),
        "parts": listed,
    }
    config_text = json.dumps(dict(config), indent=2, sort_keys=True, default=str) + "\n"
    write_bytes_atomic(base / CONFIG_JSON, config_text.encode())
    path = write_bytes_atomic(results / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    keep = {p["file"] for p in listed}
    for stray in results.glob("part-*.parquet"):
        if stray.name not in keep:
            stray.unlink(missing_ok=True)
    return path


def remove_manifest(out: str | os.PathLike[str]) -> None:
    """Forget a previous run's manifest (a run starting in the folder is not finished)."""
    (Path(out) / RESULTS_DIR / MANIFEST).unlink(missing_ok=True)


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a partitioned result folder.

    Raises:
        FileNotFoundError: No manifest: the folder holds no partitioned results, or a run
            that has not finished (rerun it to resume; the message says which).
    """
    base = Path(out)
    path = base / RESULTS_DIR / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if any((base / RESULTS_DIR).glob("part-*.parquet")):
            raise FileNotFoundError(
                f"{path}: missing; the run that writes {base / RESULTS_DIR} has not "
                "finished (rerun it to resume from the parts written)"
            ) from None
        raise
    return manifest


def benchmark_parts(out: str | os.PathLike[str]) -> list[Path]:
    """The part files of a finished partitioned run, in grid order (for
    `pyarrow.dataset`, `dask.dataframe.read_parquet` or reading a part at a time).

    Raises:
        FileNotFoundError: The run has not finished, or the folder is not one.
    """
    results = Path(out) / RESULTS_DIR
    return [results / p["file"] for p in read_manifest(out)["parts"]]


def read_parts(out: str | os.PathLike[str]) -> pd.DataFrame:
    """The frame of a finished partitioned run: its parts in grid order, with the types
    a frame built from all rows at once gets (a part whose column is all None or all
    ints takes the column's type from the others).

    Raises:
        FileNotFoundError: The run has not finished, or a listed part is gone.
        ValueError: A part's row count differs from the manifest's, or its rows from the
            checksum in its footer (damaged since it was written).
    """
    import pandas as pd
    import pyarrow as pa

    manifest = read_manifest(out)
    results = Path(out) / RESULTS_DIR
    tables = []
    for part in manifest["parts"]:
        path = results / part["file"]
        table, info = read_part(path)
        if table.num_rows != part["rows"]:
            raise ValueError(f"{path}: {table.num_rows} rows, the manifest says {part['rows']}")
        if info is None or content_digest(table) != info.get("sha256"):
            raise ValueError(
                f"{path}: damaged: its rows do not match the checksum in its footer "
                "(rerun the benchmark into the folder to recompute it)"
            )
        tables.append(table.replace_schema_metadata(None))
    if not tables:
        return pd.DataFrame(columns=list(COLUMNS))
    frame: pd.DataFrame = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    return frame
