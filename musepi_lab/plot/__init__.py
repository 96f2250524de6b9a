"""Plots (matplotlib): every function takes `ax=None` and returns the Axes (`plot_comparison`,
which lays out panels, takes and returns a figure)."""

from ._bench import plot_benchmark, plot_tradeoff, write_benchmark_report
from ._comparison import plot_comparison, plot_cost, plot_strategy_comparison
from ._composition import plot_context_composition
from ._probes import plot_probe_scores
from ._timeline import plot_context_timeline
from ._tree import plot_tree
from ._tree_options import TreeOptions

__all__ = [
    "TreeOptions",
    "plot_benchmark",
    "plot_comparison",
    "plot_context_composition",
    "plot_context_timeline",
    "plot_cost",
    "plot_probe_scores",
    "plot_strategy_comparison",
    "plot_tradeoff",
    "plot_tree",
    "write_benchmark_report",
]
