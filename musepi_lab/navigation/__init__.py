"""Tree navigation and branch summaries: leaving a branch of the session tree, and what the
model is told about it (spec §7; the seed's branch-summarization pipeline)."""

from ._navigate import NavigationResult, TreeHooks, navigate_tree
from ._summary import generate_branch_summary

__all__ = [
    "NavigationResult",
    "TreeHooks",
    "generate_branch_summary",
    "navigate_tree",
]
