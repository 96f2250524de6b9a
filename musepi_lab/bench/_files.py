"""Writing result files so a crash never leaves a half-written one.

Every file is written to a temporary name in the same folder (`.<name>.<pid>.<n>.tmp`) and
renamed over the target, so a reader sees either the old file or the new one, never a
part; several files written together (`results.parquet`, `results.csv`, `config.json`)
are all staged first and renamed one after another, so they come from the same frame.
Temporaries are created by the writers with the usual permissions (0666 less the umask),
and the ones left by a process killed mid-write are removed by the next writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import write_files_atomic
from .._process import pid_running
from ._layout import CONFIG_JSON, RESULTS_CSV, RESULTS_PARQUET

if TYPE_CHECKING:
    import pandas as pd


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporaries that writers killed mid-write left in `folder` (those
    whose process has ended); returns what was removed."""
    removed = []
    for tmp in Path(folder).glob(".*.tmp"):
        pid = tmp.name.rsplit(".", 3)[-3] if tmp.name.count(".") >= 4 else ""
        if pid.isdigit() and not pid_running(int(pid)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def write_benchmark(
    df: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
) -> Path:
    """Write a benchmark frame as `results.parquet` and `results.csv`, with `config.json`
    (default: `df.attrs["config"]`) beside them.

    The three files are staged and renamed together, so an interrupted write (even
    `kill -9`) leaves the previous results whole, and the Parquet and CSV files always
    hold the same frame.

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    cfg = dict(config if config is not None else df.attrs.get("config", {}))
    plain = df.copy()
    plain.attrs = {}
    config_text = json.dumps(cfg, indent=2, sort_keys=True, default=str) + "\n"
    write_files_atomic(
        {
            out / RESULTS_PARQUET: lambda tmp: plain.to_parquet(tmp, index=False),
            out / RESULTS_CSV: lambda tmp: plain.to_csv(tmp, index=False),
            out / CONFIG_JSON: lambda tmp: tmp.write_text(config_text, encoding="utf-8"),
        }
    )
    return out


def read_benchmark(out_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a result folder: `results.parquet` written by `write_benchmark`, or the parts
    of a run on Dask (`results/part-*.parquet` listed by `results/_SUCCESS.json`), whichever
    was written last; the configuration is in `df.attrs["config"]`.

    Raises:
        FileNotFoundError: The folder holds neither (the message names it), or a run on
            Dask that has not finished (rerun it to resume).
    """
    import pandas as pd

    from ._parts import MANIFEST, RESULTS_DIR, read_parts

    base = Path(out_dir)
    path = base / RESULTS_PARQUET
    manifest = base / RESULTS_DIR / MANIFEST
    parts_dir = base / RESULTS_DIR
    if parts_dir.is_dir() and (
        not path.is_file()
        or (manifest.is_file() and manifest.stat().st_mtime_ns > path.stat().st_mtime_ns)
    ):
        df = read_parts(base)
    elif path.is_file():
        df = pd.read_parquet(path)
    else:
        raise FileNotFoundError(
            f"{path}: not a benchmark result folder (no {RESULTS_PARQUET}, no {RESULTS_DIR}/)"
        )
    config_path = base / CONFIG_JSON
    df.attrs["config"] = (
        json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    )
    return df
