"""The cell cache that makes runs resumable: one small JSON file per finished cell, named by
the cell's key, written atomically as each cell finishes."""

from __future__ import annotations

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


def read_cell(cache_dir: str | os.PathLike[str], cell: Cell) -> dict[str, Any] | None:
    """A cached row, or None when the cell is not done (or its file is unreadable)."""
    path = cell_path(cache_dir, cell)
    try:
        stored = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    row = stored.get("row") if isinstance(stored, dict) else None
    if not isinstance(row, dict) or stored.get("key") != cell.key:
        return None
    return {column: row.get(column) for column in COLUMNS}


def write_cell(cache_dir: str | os.PathLike[str], cell: Cell, row: Mapping[str, Any]) -> Path:
    """Store a finished row atomically (write a temporary file, then rename)."""
    path = cell_path(cache_dir, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(
        {"key": cell.key, "inputs": cell.key_material(), "row": dict(row)},
        option=orjson.OPT_INDENT_2,
        default=str,
    )
    # Not synced: a cell lost to a power cut is only recomputed.
    return write_bytes_atomic(path, data, durable=False)


def clean_cache(cache_dir: str | os.PathLike[str]) -> int:
    """Remove the temporaries of cell writes cut short by a killed run; returns how many."""
    base = Path(cache_dir)
    folders = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
    return sum(len(remove_stale_temporaries(folder)) for folder in folders)
