"""`prune`: MusePi's tool-output pruning alone (spec §6.3), as a strategy.

Runs the engine's `prune_tool_outputs` on the path to the leaf with the settings' pruning
values (protect the newest 40000 tokens of tool output, change nothing unless at least
20000 tokens are saved); superseded reads (`compaction.supersedeReads`) and useless results
go at any age when the settings allow it. Blanked results are rewritten in place; no entry is
appended.

This is the pruning function with the per-turn pass's supersede rule folded in, a research
baseline. The agent's own pre-compaction pass (oh-my-pi 18.2.3: no supersede key, the warm
prompt-cache suffix protected) is `compaction._pruning.maintenance_prune`, which prunes
nothing on most recorded sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..compaction._pruning import prune_tool_outputs
from ..compaction._result import CompactionResult
from ..session._session import parse_timestamp_ms
from ._base import CompactionContext, Strategy, register
from ._context_size import context_tokens, first_path_entry_id
from ._params import check_optional_count

PRUNE_METHOD = "prune"


@register
@dataclass(frozen=True)
class Prune(Strategy):
    """Blank old tool outputs as MusePi's pruning pass does.

    Attributes:
        protect_tokens: Newest tool-output tokens left alone; None takes the settings'
            `prune_protect_tokens` (40000).
        minimum_savings: Least saving worth a change; None takes the settings'
            `prune_minimum_savings` (20000).
    """

    name: ClassVar[str] = "prune"
    needs_preparation: ClassVar[bool] = False

    protect_tokens: int | None = None
    minimum_savings: int | None = None

    def __post_init__(self) -> None:
        check_optional_count("protect_tokens", self.protect_tokens, 0)
        check_optional_count("minimum_savings", self.minimum_savings, 0)

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Prune; None when pruning would not change anything."""
        path = ctx.session.path(ctx.leaf_id)
        first = first_path_entry_id(ctx.session, ctx.leaf_id)
        if first is None:
            return None
        # `prunedAt` is stamped with the leaf's time, not the clock, so a re-run of a
        # benchmark writes the same records.
        now_ms = parse_timestamp_ms(path[-1].timestamp)
        pruned = prune_tool_outputs(
            path,
            ctx.counter,
            protect_tokens=self.protect_tokens,
            minimum_savings=self.minimum_savings,
            supersede_reads=ctx.settings.supersede_reads,
            now_ms=int(now_ms) if now_ms is not None else None,
            settings=ctx.settings,
        )
        if not pruned.changed:
            return None
        ids = set(pruned.pruned_ids)
        replacements = {
            str(e.id): dict(e.record) for e in pruned.entries if e.id is not None and e.id in ids
        }
        result = CompactionResult(
            summary="",
            first_kept_entry_id=first,
            tokens_before=context_tokens(ctx.session, ctx, ctx.leaf_id),
            method=PRUNE_METHOD,
            params={"prompts": ctx.prompts.label},
            leaf_id=ctx.leaf_id,
            profile=ctx.settings.profile,
            replacements=replacements,
            append_entry=False,
        )
        return result
