"""Figures of a benchmark result, and the report that puts them beside the summary tables.

Drawn on a plain `matplotlib.figure.Figure` when no Axes is given, so they work headless
and never touch pyplot's global state (the report writer runs in scripts and CI).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._atomic import write_files_atomic
from ..bench._files import read_benchmark
from ..bench._summary import summary_table, write_summary
from ._comparison import (
    OVERLAP_OFFSET_POINTS,
    budget_text,
    has_cost_interval,
    overlap_ranks,
    plot_cost,
    plot_strategy_comparison,
    series_style,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

REPORT_FIGURES: tuple[str, ...] = (
    "fact_retention.png",
    "retention_upper.png",
    "token_reduction.png",
    "tradeoff.png",
)
"""The PNG files `write_benchmark_report` draws. `fact_retention.png` is the lower bound
(snapcompact's imaged pages unread), `retention_upper.png` the upper (read perfectly)."""


REPLAY_REPORT_FIGURES: tuple[str, ...] = ("replay_cost.png",)
"""Drawn too for a replay frame with cost intervals: the expected bill per strategy and
window with its 90% prediction interval (`plot_cost`)."""


def _new_figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(8.0, 4.5), layout="constrained")


def _new_axes() -> Axes:
    return _new_figure().add_subplot()


def benchmark_series(
    df: pd.DataFrame, metric: str
) -> dict[str, list[tuple[Any, float, float | None, float | None]]]:
    """`(budget, mean, ci_low, ci_high)` per strategy label, budgets ascending: the summary
    table's mean over the cells where `metric` is defined and its bootstrap interval
    (None below two sessions). Budgets where it is defined on no cell are left out."""
    table = summary_table(df, [metric]) if not df.empty else None
    series: dict[str, list[tuple[Any, float, float | None, float | None]]] = {}
    if table is None or table.empty:
        return series
    for key, row in table.iterrows():
        label, budget = cast(tuple[Any, Any], key)
        if int(row[f"{metric}_n"]) == 0:
            continue
        low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
        series.setdefault(str(label), []).append(
            (
                budget,
                float(row[metric]),
                None if low is None or low != low else float(low),
                None if high is None or high != high else float(high),
            )
        )
    return series


def plot_benchmark(
    df: pd.DataFrame, metric: str = "fact_retention", *, ax: Axes | None = None
) -> Axes:
    """One line per strategy: `metric` against the budget, as the summary table has it (the
    mean over the cells where the metric is defined, with its bootstrap 95% interval across
    sessions as error bars). Each series has its own marker and dashes, and a series lying
    on an earlier one is nudged on screen and says so in the legend, so none hides another;
    the x ticks are the budgets run.

    Args:
        df: A benchmark frame (`run_benchmark`, `read_benchmark`); failed cells are left
            out.
        metric: A numeric column (`fact_retention`, `token_reduction`, ...).
        ax: Axes to draw on (default: a new headless figure's).

    Returns:
        The Axes.
    """
    from matplotlib.transforms import offset_copy

    ax = _new_axes() if ax is None else ax
    series = benchmark_series(df, metric)
    ranks = overlap_ranks([[(float(b), m) for b, m, _, _ in rows] for rows in series.values()])
    budgets: set[Any] = set()
    for n, (label, rows) in enumerate(series.items()):
        budgets.update(b for b, *_ in rows)
        shift = ranks[n] * OVERLAP_OFFSET_POINTS
        transform = offset_copy(
            ax.transData, fig=cast(Any, ax.figure), x=shift, y=-shift, units="points"
        )
        means = [m for _, m, _, _ in rows]
        below = [m - lo if lo is not None else 0.0 for _, m, lo, _ in rows]
        above = [hi - m if hi is not None else 0.0 for _, m, _, hi in rows]
        ax.errorbar(
            [b for b, *_ in rows],
            means,
            yerr=[below, above],
            capsize=3,
            lw=1.2,
            markersize=6,
            label=label + (" (nudged: overlaps)" if ranks[n] else ""),
            transform=transform,
            zorder=2 + n,
            **series_style(n),
        )
    # The nudged transforms keep the artists out of the data limits: set them from the data.
    corners = [
        (float(b), y)
        for rows in series.values()
        for b, m, lo, hi in rows
        for y in (m, m if lo is None else lo, m if hi is None else hi)
    ]
    if corners:
        ax.update_datalim(corners)
        ax.autoscale_view()
    if budgets:
        ticks = sorted(budgets)
        ax.set_xticks(ticks)
        ax.set_xticklabels([budget_text(b) for b in ticks])
        ax.legend(fontsize="small", loc="best")
    mode = str(df["mode"].iloc[0]) if not df.empty else "compact"
    ax.set_xlabel("context window (tokens)" if mode == "replay" else "keep-recent budget (tokens)")
    ax.set_ylabel(metric.replace("_", " ") + " (mean where defined, 95% CI)")
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
    """Write `summary.md`, `summary.csv` and the plots of `REPORT_FIGURES` (and, for a
    replay frame with cost intervals, `REPLAY_REPORT_FIGURES`) into a result folder, each
    file atomically.

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
        "retention_upper.png": lambda ax: plot_benchmark(frame, "retention_upper", ax=ax),
        "token_reduction.png": lambda ax: plot_benchmark(frame, "token_reduction", ax=ax),
        "tradeoff.png": lambda ax: plot_tradeoff(frame, ax=ax),
    }
    names = REPORT_FIGURES
    if has_cost_interval(frame):
        draws["replay_cost.png"] = lambda ax: plot_cost(frame, ax=ax)
        names = (*REPORT_FIGURES, *REPLAY_REPORT_FIGURES)
    figures = {name: base / name for name in names}
    write_files_atomic({figures[name]: _figure_writer(draws[name]) for name in names})
    return {**written, **figures}
