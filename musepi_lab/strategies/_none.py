"""`none`: the control arm of every comparison: change nothing.

The result rewrites no entry and appends none, so applying it gives back the same session
and `tokens_after == tokens_before`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..compaction._result import CompactionResult
from ._base import CompactionContext, Strategy, register
from ._context_size import context_tokens, first_path_entry_id

NONE_METHOD = "none"


@register
@dataclass(frozen=True)
class NoCompaction(Strategy):
    """Leave the session as it is; report its context size before and after."""

    name: ClassVar[str] = "none"
    needs_preparation: ClassVar[bool] = False

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """The no-op result; None only for an empty session."""
        first = first_path_entry_id(ctx.session, ctx.leaf_id)
        if first is None:
            return None
        tokens = context_tokens(ctx.session, ctx, ctx.leaf_id)
        return CompactionResult(
            summary="",
            first_kept_entry_id=first,
            tokens_before=tokens,
            method=NONE_METHOD,
            params={"prompts": ctx.prompts.label},
            leaf_id=ctx.leaf_id,
            profile=ctx.settings.profile,
            append_entry=False,
        )
