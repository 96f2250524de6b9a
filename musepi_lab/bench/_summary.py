"""Summary tables of a benchmark frame: means per strategy × budget, as a DataFrame, Markdown
or plain text, and `write_summary` (`summary.md`, `summary.csv`). The figures of a report
are drawn by `musepi_lab.plot` (`write_benchmark_report`), the layer above this one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import write_files_atomic
from ..strategies._base import strategy_label

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_MD = "summary.md"
SUMMARY_CSV = "summary.csv"
SUMMARY_METRICS: tuple[str, ...] = ("token_reduction", "fact_retention")
"""What the summary table pivots by default (mean over sessions per strategy × budget)."""
REPLAY_SUMMARY_METRICS: tuple[str, ...] = (*SUMMARY_METRICS, "compactions", "replay_cost_usd")
"""The default pivot of replay results: also how often each strategy compacted and what
the replayed session cost."""


def default_metrics(df: pd.DataFrame) -> tuple[str, ...]:
    """The metrics a summary of this frame pivots: `REPLAY_SUMMARY_METRICS` for replay
    results, else `SUMMARY_METRICS`."""
    replay = not df.empty and bool((df["mode"] == "replay").all())
    return REPLAY_SUMMARY_METRICS if replay else SUMMARY_METRICS


def strategy_labels(df: pd.DataFrame) -> pd.Series:
    """The `label` column (strategy name and non-default parameters), or, for frames
    without one, `name(k=v, ...)` built from `strategy` and `params`."""
    if "label" in df.columns:
        return df["label"].astype(str).rename("label")

    def label(name: str, params: str) -> str:
        values = json.loads(params) if isinstance(params, str) and params else {}
        return strategy_label(name, values)

    return df.apply(lambda r: label(r["strategy"], r["params"]), axis=1).rename("label")


def summary_table(df: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean of each metric per strategy (with parameters) × budget, over sessions; failed
    cells are left out and counted in `errors`.

    Args:
        df: A benchmark frame.
        metrics: Numeric columns to pivot (default: `default_metrics(df)`).

    Returns:
        One row per strategy label; columns `(metric, budget)` plus `cells` and `errors`.
    """
    import pandas as pd

    if df.empty:
        return pd.DataFrame()
    metrics = default_metrics(df) if metrics is None else metrics
    ok = df[df["error"].isna()].copy()
    labels = strategy_labels(df)
    ok["label"] = labels[ok.index]
    pieces = []
    for metric in metrics:
        values = pd.to_numeric(ok[metric], errors="coerce")
        piece = (
            ok.assign(value=values)
            .pivot_table(index="label", columns="budget", values="value", aggfunc="mean")
            .sort_index(axis=1)
        )
        piece.columns = pd.MultiIndex.from_product([[metric], piece.columns])
        pieces.append(piece)
    table = pd.concat(pieces, axis=1) if pieces else pd.DataFrame()
    counts = labels.groupby(labels).size().rename("cells")
    errors = df["error"].notna().groupby(labels).sum().rename("errors")
    table = table.reindex(counts.index)
    table[("cells", "")] = counts
    table[("errors", "")] = errors
    return table


_COUNT_COLUMNS = ("cells", "errors")


def _cell(value: Any, column: tuple[Any, Any]) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if column[0] in _COUNT_COLUMNS:
        return str(int(value))
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _row_cells(row: pd.Series) -> list[str]:
    return [_cell(v, c) for c, v in zip(row.index.to_list(), row.to_list(), strict=True)]


def _header(column: Any) -> str:
    metric, budget = column
    return f"{metric} @ {budget}" if budget != "" else str(metric)


def table_markdown(table: pd.DataFrame) -> str:
    """A summary table as GitHub Markdown (no extra dependency)."""
    if table.empty:
        return "(no results)\n"
    headers = ["strategy", *(_header(c) for c in table.columns.to_list())]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for label, row in table.iterrows():
        lines.append("| " + " | ".join([str(label), *_row_cells(row)]) + " |")
    return "\n".join(lines) + "\n"


def table_text(table: pd.DataFrame) -> str:
    """A summary table as aligned plain text, for terminals."""
    if table.empty:
        return "(no results)"
    header = ["strategy", *(_header(c) for c in table.columns.to_list())]
    body = [[str(label), *_row_cells(row)] for label, row in table.iterrows()]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary_markdown(frame: pd.DataFrame, table: pd.DataFrame | None = None) -> str:
    """The `summary.md` text of a benchmark frame: mode, counts and the summary table."""
    table = summary_table(frame) if table is None else table
    config = frame.attrs.get("config", {})
    lines = [
        "# Benchmark summary",
        "",
        f"Mode: {config.get('mode', frame['mode'].iloc[0] if len(frame) else '?')}; "
        f"budget = {config.get('budget_meaning', 'tokens')}.",
        f"Cells: {len(frame)} ({int(frame['error'].notna().sum()) if len(frame) else 0} failed); "
        f"sessions: {frame['session_id'].nunique() if len(frame) else 0}.",
        "",
        "Means over sessions per strategy × budget.",
        "",
        table_markdown(table),
    ]
    return "\n".join(lines)


def write_summary(out_dir: str | os.PathLike[str], df: pd.DataFrame) -> dict[str, Path]:
    """Write `summary.md` and `summary.csv` (the summary table) into a result folder, each
    atomically.

    Returns:
        Name → path of every file written.
    """
    base = Path(out_dir)
    table = summary_table(df)
    flat = table.copy()
    flat.columns = [_header(c) for c in table.columns.to_list()]
    text = summary_markdown(df, table)
    written = {SUMMARY_CSV: base / SUMMARY_CSV, SUMMARY_MD: base / SUMMARY_MD}
    write_files_atomic(
        {
            written[SUMMARY_CSV]: lambda tmp: flat.to_csv(tmp, index_label="strategy"),
            written[SUMMARY_MD]: lambda tmp: tmp.write_text(text, encoding="utf-8"),
        }
    )
    return written
