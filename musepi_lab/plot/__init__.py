"""Plots (matplotlib): every function takes `ax=None` and returns the Axes."""

from ._layout import NODE_KINDS, TreeLayout, TreeNode, node_kind, tree_layout
from ._tree import KIND_COLORS, REGION_COLORS, plot_tree

__all__ = [
    "KIND_COLORS",
    "NODE_KINDS",
    "REGION_COLORS",
    "TreeLayout",
    "TreeNode",
    "node_kind",
    "plot_tree",
    "tree_layout",
]
