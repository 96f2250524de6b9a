"""`truncate`: drop everything before the engine's cut, with no summary at all.

The crudest baseline: the compaction entry keeps the engine's `firstKeptEntryId` (the
same cut every summarizing strategy gets) and its summary is a one-line marker saying how
many earlier messages were dropped without a summary. Files, previous summaries and the
start of a split turn are dropped with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..compaction._result import CompactionResult
from ._base import CompactionContext, Strategy, register

TRUNCATE_METHOD = "truncate"


def truncation_marker(dropped: int) -> str:
    """The one-line summary of a truncation.

    Args:
        dropped: Messages dropped (history plus the split turn's prefix).
    """
    noun = "message was" if dropped == 1 else "messages were"
    return f"[{dropped} earlier {noun} dropped without a summary.]"


@register
@dataclass(frozen=True)
class Truncate(Strategy):
    """Drop the oldest part at the engine's cut; the summary is a one-line marker."""

    name: ClassVar[str] = "truncate"

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Truncate; None when the preparation drops nothing."""
        prep = ctx.preparation
        if prep is None:
            return None
        dropped = len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)
        if dropped == 0:
            return None
        result = CompactionResult.from_preparation(
            prep,
            truncation_marker(dropped),
            method=TRUNCATE_METHOD,
            params={"prompts": ctx.prompts.label},
        )
        return result
