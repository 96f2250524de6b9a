"""`hybrid`: observation masking first, a summary only when masking is not enough.

The combination Lindenbauer et al. 2025 propose (masking plus LLM summarization): old tool
outputs are masked (see `_masking`); if the masked context is still above the target, the
summary strategy (`llm-summary`, or the model-free `extractive`) runs on the masked
session, so it summarizes masked observations and the kept region stays masked too.

Target: `target_tokens` when given; else `target_ratio · window`; else the compaction
threshold of the settings for `window` (MusePi: window minus the resolved reserve; pi:
window minus `reserveTokens`). `window` left unset is the run's window: a replay passes its
own; outside a replay it is `DEFAULT_WINDOW`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._prepare import prepare_compaction
from ..compaction._result import CompactionResult
from ..compaction._threshold import threshold_tokens
from ._base import CompactionContext, Strategy, get, register
from ._context_size import applied_context_tokens, context_tokens
from ._masking import DEFAULT_KEEP_TURNS, masking_result

DEFAULT_WINDOW = 200_000
"""Context window assumed for the default target (spec §5.7's fallback window)."""


def hybrid_target(
    ctx: CompactionContext,
    *,
    window: int,
    target_tokens: int | None = None,
    target_ratio: float | None = None,
) -> int:
    """The context size a hybrid compaction aims to stay at or below.

    Args:
        ctx: The compaction context (its settings give the default threshold).
        window: The model's context window.
        target_tokens: An explicit target; wins over everything.
        target_ratio: A fraction of `window`.
    """
    if target_tokens is not None:
        return target_tokens
    if target_ratio is not None:
        return math.floor(target_ratio * window)
    return threshold_tokens(window, ctx.settings)


def _check_int(name: str, value: Any, *, optional: bool = False, minimum: int = 0) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an int or None" if optional else "an int"
        raise TypeError(f"{name} must be {kind}, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


@register
@dataclass(frozen=True)
class Hybrid(Strategy):
    """Mask old tool outputs; summarize the masked session if it is still too large.

    Attributes:
        keep_turns: Tool-calling steps whose outputs stay visible (as `observation-masking`).
        summary: The summary strategy run when masking is not enough (`llm-summary`, which
            needs a summarizer, or `extractive`).
        target_tokens: Context size to reach; None derives it from `target_ratio` or the
            settings' threshold.
        target_ratio: Target as a fraction of `window` (0 < ratio ≤ 1).
        window: The model's context window used for the ratio and the threshold; None: the
            replay's window in a replay, else `DEFAULT_WINDOW`.
    """

    name: ClassVar[str] = "hybrid"
    needs_preparation: ClassVar[bool] = False

    keep_turns: int = DEFAULT_KEEP_TURNS
    summary: str = "llm-summary"
    target_tokens: int | None = None
    target_ratio: float | None = None
    window: int | None = None

    def __post_init__(self) -> None:
        _check_int("keep_turns", self.keep_turns)
        _check_int("target_tokens", self.target_tokens, optional=True)
        _check_int("window", self.window, optional=True, minimum=1)
        if not isinstance(self.summary, str):
            raise TypeError(f"summary must be a strategy name, not {type(self.summary).__name__}")
        if self.summary == self.name:
            raise ValueError("hybrid cannot use itself as its summary strategy")
        ratio = self.target_ratio
        if ratio is not None:
            if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
                raise TypeError(
                    f"target_ratio must be a number or None, not {type(ratio).__name__}"
                )
            if not 0 < ratio <= 1:
                raise ValueError(f"target_ratio must be in (0, 1], got {ratio}")

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Mask, then summarize if needed; None when neither has anything to do."""
        target = hybrid_target(
            ctx,
            window=self.window if self.window is not None else DEFAULT_WINDOW,
            target_tokens=self.target_tokens,
            target_ratio=self.target_ratio,
        )
        masked = masking_result(ctx, self.keep_turns)
        after_masking = (
            applied_context_tokens(masked, ctx)
            if masked is not None
            else context_tokens(ctx.session, ctx, ctx.leaf_id)
        )
        if after_masking <= target:
            return _tagged(masked, ctx, "masking", target) if masked is not None else None
        summarized = self._summarize(ctx, masked)
        if summarized is None:
            return _tagged(masked, ctx, "masking", target) if masked is not None else None
        return _tagged(summarized, ctx, "masking+summary", target)

    def _summarize(
        self, ctx: CompactionContext, masked: CompactionResult | None
    ) -> CompactionResult | None:
        strategy = get(self.summary)
        if strategy.requires_summarizer():
            ctx.require_summarizer(f"{self.name} (summary={self.summary!r})")
        if masked is None:
            summary_ctx = ctx
        else:
            masked_session = masked.apply(ctx.session)
            custom = ctx.preparation.custom_instructions if ctx.preparation else None
            summary_ctx = dataclasses.replace(
                ctx,
                session=masked_session,
                preparation=prepare_compaction(
                    masked_session,
                    ctx.settings,
                    ctx.counter,
                    leaf_id=ctx.leaf_id,
                    custom_instructions=custom,
                ),
            )
        if summary_ctx.preparation is None and strategy.needs_preparation:
            return None
        result = strategy.run(summary_ctx)
        if result is None or masked is None:
            return result
        # The summary's entry ids are the original ones (masking keeps ids), so the result
        # applies to the original session once the masked records are substituted.
        replacements = {**(masked.replacements or {}), **(result.replacements or {})}
        return result.copy_with(replacements=replacements)


def _tagged(
    result: CompactionResult, ctx: CompactionContext, stage: str, target: int
) -> CompactionResult:
    params = {**(result.params or {}), "prompts": ctx.prompts.label}
    params.update(hybrid_stage=stage, hybrid_target_tokens=target)
    return result.copy_with(params=params)
