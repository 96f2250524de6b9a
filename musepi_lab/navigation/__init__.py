"""Tree navigation and branch summaries: leaving a branch of the session tree, and what the
model is told about it (spec §7; the seed's branch-summarization pipeline)."""

from ..compaction._hooks import BeforeTree, SessionHooks, TreePreparation
from ._navigate import NavigationResult, TreeHooks, navigate_tree
from ._summary import (
    NOTHING_TO_SUMMARIZE,
    BranchSummary,
    branch_summary_request,
    generate_branch_summary,
)

__all__ = [
    "NOTHING_TO_SUMMARIZE",
    "BeforeTree",
    "BranchSummary",
    "NavigationResult",
    "SessionHooks",
    "TreeHooks",
    "TreePreparation",
    "branch_summary_request",
    "generate_branch_summary",
    "navigate_tree",
]
