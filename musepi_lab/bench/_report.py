"""Benchmark results on disk, summary tables and plots.

A result folder holds `results.parquet` and `results.csv` (the same frame) and
`config.json` (the run's configuration). `write_report` adds `summary.md`, `summary.csv`
and PNG plots. Plots draw on a plain `matplotlib.figure.Figure` (Agg), so they work
headless and never touch pyplot's global state.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..strategies._base import strategy_label

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
CONFIG_JSON = "config.json"
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


def write_benchmark(
    df: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
) -> Path:
    """Write a benchmark frame as `results.parquet` and `results.csv`, with `config.json`
    (default: `df.attrs["config"]`) beside them.

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(config if config is not None else df.attrs.get("config", {}))
    plain = df.copy()
    plain.attrs = {}
    plain.to_parquet(out / RESULTS_PARQUET, index=False)
    plain.to_csv(out / RESULTS_CSV, index=False)
    (out / CONFIG_JSON).write_text(
        json.dumps(cfg, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    return out


def read_benchmark(out_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a result folder written by `write_benchmark`; the configuration is in
    `df.attrs["config"]`.

    Raises:
        FileNotFoundError: The folder has no `results.parquet` (the message names it).
    """
    import pandas as pd

    base = Path(out_dir)
    path = base / RESULTS_PARQUET
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not a benchmark result folder (no {RESULTS_PARQUET})")
    df = pd.read_parquet(path)
    config_path = base / CONFIG_JSON
    df.attrs["config"] = (
        json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    )
    return df


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


def _header(column: tuple[Any, Any]) -> str:
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


def plot_benchmark(
    df: pd.DataFrame, metric: str = "fact_retention", *, ax: Axes | None = None
) -> Axes:
    """One line per strategy: the mean of `metric` over sessions against the budget.

    Args:
        df: A benchmark frame.
        metric: A numeric column (`fact_retention`, `token_reduction`, ...).
        ax: Axes to draw on (default: a new headless figure's).

    Returns:
        The Axes.
    """
    import pandas as pd

    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(8.0, 4.5), layout="constrained").add_subplot()
    ok = df[df["error"].isna()].copy() if not df.empty else df
    if not ok.empty:
        ok["label"] = strategy_labels(ok)
        ok["value"] = pd.to_numeric(ok[metric], errors="coerce")
        means = ok.groupby(["label", "budget"])["value"].mean().unstack("label").sort_index()
        for label in means.columns:
            series = means[label].dropna()
            ax.plot(series.index, series.to_numpy(), marker="o", label=label)
        if len(means.columns):
            ax.legend(fontsize="small", loc="best")
    mode = str(df["mode"].iloc[0]) if not df.empty else "compact"
    ax.set_xlabel("context window (tokens)" if mode == "replay" else "keep-recent budget (tokens)")
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_title(f"{metric.replace('_', ' ')} by strategy")
    ax.grid(True, alpha=0.3)
    return ax


def plot_tradeoff(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Token reduction (x) against fact retention (y), one point per strategy × budget
    (means over sessions): up and to the right is better."""
    import pandas as pd

    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(8.0, 4.5), layout="constrained").add_subplot()
    ok = df[df["error"].isna()].copy() if not df.empty else df
    if not ok.empty:
        ok["label"] = strategy_labels(ok)
        for col in ("token_reduction", "fact_retention"):
            ok[col] = pd.to_numeric(ok[col], errors="coerce")
        means = ok.groupby(["label", "budget"])[["token_reduction", "fact_retention"]].mean()
        for label, group in means.groupby(level="label"):
            ax.plot(group["token_reduction"], group["fact_retention"], marker="o", label=str(label))
        ax.legend(fontsize="small")
    ax.set_xlabel("token reduction")
    ax.set_ylabel("fact retention")
    ax.set_title("what is saved against what is kept")
    ax.grid(True, alpha=0.3)
    return ax


def write_report(
    out_dir: str | os.PathLike[str], df: pd.DataFrame | None = None
) -> dict[str, Path]:
    """Write `summary.md`, `summary.csv` and plots (`fact_retention.png`,
    `token_reduction.png`, `tradeoff.png`) into a result folder.

    Args:
        out_dir: The folder (read with `read_benchmark` when `df` is None).
        df: The frame, if already in memory.

    Returns:
        Name → path of every file written.
    """
    base = Path(out_dir)
    frame = read_benchmark(base) if df is None else df
    table = summary_table(frame)
    written: dict[str, Path] = {}
    flat = table.copy()
    flat.columns = [_header(c) for c in table.columns.to_list()]
    flat.to_csv(base / "summary.csv", index_label="strategy")
    written["summary.csv"] = base / "summary.csv"
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
    (base / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    written["summary.md"] = base / "summary.md"
    for name, draw in (
        ("fact_retention.png", lambda: plot_benchmark(frame, "fact_retention")),
        ("token_reduction.png", lambda: plot_benchmark(frame, "token_reduction")),
        ("tradeoff.png", lambda: plot_tradeoff(frame)),
    ):
        ax = draw()
        ax.figure.savefig(base / name, dpi=110)
        written[name] = base / name
    return written
