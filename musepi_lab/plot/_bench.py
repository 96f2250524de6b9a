"""Figures of a benchmark result, and the report that puts them beside the summary tables.

Drawn on a plain `matplotlib.figure.Figure` when no Axes is given, so they work headless
and never touch pyplot's global state (the report writer runs in scripts and CI).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._atomic import write_files_atomic
from ..bench._files import read_benchmark
from ..bench._summary import strategy_labels, write_summary
from ._comparison import plot_strategy_comparison

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

REPORT_FIGURES: tuple[str, ...] = ("fact_retention.png", "token_reduction.png", "tradeoff.png")
"""The PNG files `write_benchmark_report` draws."""


def _new_figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(8.0, 4.5), layout="constrained")


def _new_axes() -> Axes:
    return _new_figure().add_subplot()


def plot_benchmark(
    df: pd.DataFrame, metric: str = "fact_retention", *, ax: Axes | None = None
) -> Axes:
    """One line per strategy: the mean of `metric` over sessions against the budget.

    Args:
        df: A benchmark frame (`run_benchmark`, `read_benchmark`); failed cells are left
            out.
        metric: A numeric column (`fact_retention`, `token_reduction`, ...).
        ax: Axes to draw on (default: a new headless figure's).

    Returns:
        The Axes.
    """
    import pandas as pd

    ax = _new_axes() if ax is None else ax
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
    (means over sessions, labelled with the budget): up and to the right is better."""
    return plot_strategy_comparison(
        df,
        x="token_reduction",
        y="fact_retention",
        title="what is saved against what is kept",
        ax=_new_axes() if ax is None else ax,
    )


def _figure_writer(draw: Callable[[Axes], Axes]) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        figure = _new_figure()
        draw(figure.add_subplot())
        # The temporary's name ends in `.tmp`, so the format is given rather than guessed.
        figure.savefig(tmp, dpi=110, format="png")

    return write


def write_benchmark_report(
    out_dir: str | os.PathLike[str], df: pd.DataFrame | None = None
) -> dict[str, Path]:
    """Write `summary.md`, `summary.csv` and the plots of `REPORT_FIGURES` into a result
    folder, each file atomically.

    Args:
        out_dir: The folder (read with `read_benchmark` when `df` is None).
        df: The frame, if already in memory.

    Returns:
        Name → path of every file written.
    """
    base = Path(out_dir)
    frame = read_benchmark(base) if df is None else df
    written = write_summary(base, frame)
    draws: dict[str, Callable[[Axes], Axes]] = {
        "fact_retention.png": lambda ax: plot_benchmark(frame, "fact_retention", ax=ax),
        "token_reduction.png": lambda ax: plot_benchmark(frame, "token_reduction", ax=ax),
        "tradeoff.png": lambda ax: plot_tradeoff(frame, ax=ax),
    }
    figures = {name: base / name for name in REPORT_FIGURES}
    write_files_atomic({figures[name]: _figure_writer(draws[name]) for name in REPORT_FIGURES})
    return {**written, **figures}
