"""The cell cache that makes runs resumable: one small JSON file per finished cell, named by
the cell's key, written atomically as each cell finishes, with a checksum of its row: a
digit changed in place still parses, so a resume trusts a file only when its row matches
(`check_cell`); one that does not is recomputed and reported."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .._atomic import write_bytes_atomic
from ._files import remove_stale_temporaries
from ._grid import Cell
from ._score import COLUMNS


def cell_path(cache_dir: str | os.PathLike[str], cell: Cell) -> Path:
    """The file a finished cell is stored in: `<cache_dir>/<key[:2]>/<key>.json`."""
    key = cell.key
    return Path(cache_dir) / key[:2] / f"{key}.json"


def row_digest(row: Mapping[str, Any]) -> str:
    """Hex sha256 of a row as stored (sorted keys; what JSON cannot hold as text), so the row
    written and the one read back give the same."""
    data = orjson.dumps(dict(row), option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(data).hexdigest()


def check_cell(
    cache_dir: str | os.PathLike[str], cell: Cell
) -> tuple[dict[str, Any] | None, str | None]:
    """`(row, None)` for a cached cell whose row matches its checksum; `(None, why)` for a
    file that is there but damaged; `(None, None)` when the cell is not done (no file, or
    one written before rows had checksums)."""
    path = cell_path(cache_dir, cell)
    try:
        stored = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None, None
    except (OSError, orjson.JSONDecodeError) as exc:
        return None, f"cannot be read ({exc})"
    row = stored.get("row") if isinstance(stored, dict) else None
    if not isinstance(row, dict) or stored.get("key") != cell.key:
        return None, "not a cell file of this cell"
    if "sha256" not in stored:
        return None, None
    if row_digest(row) != stored["sha256"]:
        return None, "its row does not match its checksum"
    return {column: row.get(column) for column in COLUMNS}, None


def read_cell(cache_dir: str | os.PathLike[str], cell: Cell) -> dict[str, Any] | None:
    """A cached row, or None when the cell is not done (or its file is unreadable or
    damaged: see `check_cell`)."""
    return check_cell(cache_dir, cell)[0]


def write_cell(cache_dir: str | os.PathLike[str], cell: Cell, row: Mapping[str, Any]) -> Path:
    """Store a finished row atomically (write a temporary file, then rename)."""
    path = cell_path(cache_dir, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = {
        "key": cell.key,
        "inputs": cell.key_material(),
        "row": dict(row),
        "sha256": row_digest(row),
    }
    data = orjson.dumps(stored, option=orjson.OPT_INDENT_2, default=str)
    # Not synced: a cell lost to a power cut is only recomputed.
    return write_bytes_atomic(path, data, durable=False)


def clean_cache(cache_dir: str | os.PathLike[str]) -> int:
    """Remove the temporaries of cell writes cut short by a killed run; returns how many."""
    base = Path(cache_dir)
    folders = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
    return sum(len(remove_stale_temporaries(folder)) for folder in folders)
