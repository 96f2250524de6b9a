"""The compaction engine: pure functions, faithful to MusePi (default) and pi.

Thresholds and triggers, cut points and split turns, `prepare_compaction`, the summary
inputs (serialization: pi's labels, or MusePi's per-dialect transcript; file operations), tool-output pruning, branch-summary preparation, and
`CompactionResult.apply`. No IO and no model calls here.
"""

from ._cut import CutPointResult, find_cut_point
from ._hooks import BeforeCompact, Compacting, SessionHooks
from ._prepare import CompactionPreparation, prepare_compaction
from ._prune_options import PruneOptions
from ._pruning import PruneResult, prune_tool_outputs
from ._result import CompactionResult
from ._serialize import serialize_conversation
from ._settings import CompactionSettings
from ._summary_dialects import preferred_dialect, serialize_for_summary
from ._threshold import estimate_context_tokens, should_compact

__all__ = [
    "BeforeCompact",
    "Compacting",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CutPointResult",
    "PruneOptions",
    "PruneResult",
    "SessionHooks",
    "estimate_context_tokens",
    "find_cut_point",
    "preferred_dialect",
    "prepare_compaction",
    "prune_tool_outputs",
    "serialize_conversation",
    "serialize_for_summary",
    "should_compact",
]
