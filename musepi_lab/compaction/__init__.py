"""The compaction engine: pure functions, faithful to MusePi (default) and pi.

Thresholds and triggers, cut points and split turns, `prepare_compaction`, the summary
inputs (serialization: pi's labels, or MusePi's per-dialect transcript; file operations), tool-output pruning, branch-summary preparation, and
`CompactionResult.apply`. No IO and no model calls here.
"""

from ..session._profiles import PROFILES
from ._branch import (
    BranchPreparation,
    branch_summary_budget,
    branch_with_summary,
    collect_entries_for_branch_summary,
    navigation_leaf,
    prepare_branch_entries,
)
from ._cut import CutPointResult, find_cut_point, find_turn_start_index, find_valid_cut_points
from ._file_ops import (
    FileOperations,
    compute_file_lists,
    extract_file_ops,
    file_ops_from_messages,
    format_file_operations,
    format_files_block,
    format_grouped_paths,
    strip_read_selector,
    upsert_file_operations,
)
from ._hooks import BeforeCompact, BeforeTree, Compacting, SessionHooks, TreePreparation
from ._prepare import CompactionPreparation, prepare_compaction
from ._prune_options import PruneOptions
from ._prune_rules import SUPERSEDED_NOTICE, USELESS_NOTICE
from ._pruning import (
    PruneResult,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from ._result import CompactionResult
from ._serialize import (
    NO_PRIOR_HISTORY,
    merge_split_turn,
    neutralize_boundary_tags,
    serialize_conversation,
)
from ._settings import CompactionSettings
from ._summary_dialects import SUMMARY_DIALECTS, preferred_dialect, serialize_for_summary
from ._threshold import (
    ContextEstimate,
    adapt_keep_recent_tokens,
    calculate_context_tokens,
    calculate_prompt_tokens,
    compaction_context_tokens,
    estimate_context_tokens,
    get_last_assistant_usage,
    is_context_overflow,
    resolve_threshold_tokens,
    should_compact,
    threshold_tokens,
)

__all__ = [
    "NO_PRIOR_HISTORY",
    "PROFILES",
    "SUMMARY_DIALECTS",
    "SUPERSEDED_NOTICE",
    "USELESS_NOTICE",
    "BeforeCompact",
    "BeforeTree",
    "BranchPreparation",
    "Compacting",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "ContextEstimate",
    "CutPointResult",
    "FileOperations",
    "PruneOptions",
    "PruneResult",
    "SessionHooks",
    "TreePreparation",
    "adapt_keep_recent_tokens",
    "branch_summary_budget",
    "branch_with_summary",
    "calculate_context_tokens",
    "calculate_prompt_tokens",
    "collect_entries_for_branch_summary",
    "compaction_context_tokens",
    "compute_file_lists",
    "estimate_context_tokens",
    "extract_file_ops",
    "file_ops_from_messages",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "format_files_block",
    "format_grouped_paths",
    "get_last_assistant_usage",
    "is_context_overflow",
    "merge_split_turn",
    "navigation_leaf",
    "neutralize_boundary_tags",
    "preferred_dialect",
    "prepare_branch_entries",
    "prepare_compaction",
    "prune_superseded_tool_results",
    "prune_tool_outputs",
    "resolve_threshold_tokens",
    "serialize_conversation",
    "serialize_for_summary",
    "should_compact",
    "strip_read_selector",
    "threshold_tokens",
    "upsert_file_operations",
]
