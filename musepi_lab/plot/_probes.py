"""Probe scores per strategy, by kind: grouped bars over a `run_probes` frame.

The frame has one row per (session, strategy, budget) cell with `label` (or `strategy`),
`budget` and `score_<kind>` columns (`musepi_lab.probes.run_probes` makes one). Cells of
several sessions are averaged; a kind a cell never asked is left out of its mean, not
counted as zero; failed cells (an `error`) are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..probes._model import PROBE_KINDS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

PROBE_KIND_COLORS: dict[str, str] = {
    "recall": "#1f77b4",
    "artifact": "#2ca02c",
    "continuation": "#ff7f0e",
    "decision": "#9467bd",
}


def probe_score_matrix(
    cells: pd.DataFrame, *, budget: Any = None, kinds: Sequence[str] = PROBE_KINDS
) -> pd.DataFrame:
    """Mean score per strategy (rows, in first-seen order) and kind (columns).

    Args:
        cells: Per-cell probe scores (`run_probes`), or a benchmark frame run with
            `evaluate="probes"`.
        budget: Only this budget's cells; None averages over every budget.
        kinds: The kinds, as columns.
    """
    frame = cells
    if "error" in frame.columns:
        frame = frame[frame["error"].isna()]
    if budget is not None:
        frame = frame[frame["budget"] == budget]
    key = "label" if "label" in frame.columns else "strategy"
    # `run_probes` cells name them `score_<kind>`; a benchmark frame `probe_<kind>`.
    prefix = "score_" if f"score_{kinds[0]}" in frame.columns else "probe_"
    columns = [f"{prefix}{k}" for k in kinds]
    missing = [c for c in [key, *columns] if c not in frame.columns]
    if missing:
        raise KeyError(f"the frame has no column(s) {missing}")
    order = list(dict.fromkeys(frame[key]))
    matrix = frame.groupby(key, sort=False)[columns].mean().reindex(order)
    matrix.columns = list(kinds)
    return matrix


def plot_probe_scores(
    cells: pd.DataFrame,
    *,
    budget: Any = None,
    kinds: Sequence[str] = PROBE_KINDS,
    ax: Axes | None = None,
) -> Axes:
    """Grouped bars: for each strategy, its mean probe score (0–1) of each kind.

    Args:
        cells: Per-cell probe scores (`run_probes`), or a benchmark frame run with
            `evaluate="probes"`.
        budget: Plot one budget's cells; None averages over every budget (the title says
            which).
        kinds: The kinds drawn, one bar each per strategy.
        ax: Axes to draw on (default: a new figure).

    Returns:
        The Axes.
    """
    import matplotlib.pyplot as plt

    matrix = probe_score_matrix(cells, budget=budget, kinds=kinds)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(matrix) + 2), 4))
    width = 0.8 / max(1, len(kinds))
    positions = range(len(matrix))
    for i, kind in enumerate(kinds):
        offsets = [p - 0.4 + width * (i + 0.5) for p in positions]
        values = matrix[kind].fillna(0.0).tolist()
        bars = ax.bar(offsets, values, width, label=kind, color=PROBE_KIND_COLORS.get(kind))
        for bar, asked in zip(bars, matrix[kind].notna(), strict=True):
            if not asked:
                bar.set_hatch("//")  # never asked: no score, drawn as an empty hatched stub
    ax.set_xticks(list(positions))
    ax.set_xticklabels([str(s) for s in matrix.index], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean probe score (0-1)")
    which = "all budgets" if budget is None else f"budget {budget}"
    ax.set_title(f"Probe scores by kind ({which})")
    ax.legend(title="probe kind", fontsize="small")
    return ax
