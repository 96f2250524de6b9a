"""Plots (matplotlib): every function takes `ax=None` and returns the Axes (`plot_comparison`,
which lays out panels, takes and returns a figure)."""

from ._bench import (
    REPLAY_REPORT_FIGURES,
    REPORT_FIGURES,
    plot_benchmark,
    plot_tradeoff,
    write_benchmark_report,
)
from ._comparison import plot_comparison, plot_cost, plot_strategy_comparison, series_style
from ._composition import COMPOSITION_COLORS, composition_table, plot_context_composition
from ._layout import NODE_KINDS, FoldedTree, TreeLayout, TreeNode, fold_tree, node_kind, tree_layout
from ._probes import plot_probe_scores, probe_score_matrix
from ._timeline import TRIGGER_COLORS, plot_context_timeline
from ._tree import KIND_COLORS, REGION_COLORS, plot_tree, readable_fontsize, shade_cut
from ._tree_options import TreeOptions

__all__ = [
    "COMPOSITION_COLORS",
    "KIND_COLORS",
    "NODE_KINDS",
    "REGION_COLORS",
    "REPLAY_REPORT_FIGURES",
    "REPORT_FIGURES",
    "TRIGGER_COLORS",
    "FoldedTree",
    "TreeLayout",
    "TreeNode",
    "TreeOptions",
    "composition_table",
    "fold_tree",
    "node_kind",
    "plot_benchmark",
    "plot_comparison",
    "plot_context_composition",
    "plot_context_timeline",
    "plot_cost",
    "plot_probe_scores",
    "plot_strategy_comparison",
    "plot_tradeoff",
    "plot_tree",
    "probe_score_matrix",
    "readable_fontsize",
    "series_style",
    "shade_cut",
    "tree_layout",
    "write_benchmark_report",
]
