"""`summarize-every-n`: the Complexity Trap paper's LLM summary, N turns at a time.

Lindenbauer et al. 2025, "The Complexity Trap: Simple Observation Masking Is as Efficient as
LLM Summarization for Agent Context Management" (arXiv:2508.21433), run SWE-agent's
`summarize_every_n_turns` history processor with `n: 21`, `keep_last_m_turns: 10` and
`enable_static_checkpointing: true`: a turn is one (reasoning + action, observation) pair;
when at least N + M turns are unsummarized, the oldest N are summarized, conditioned on the
previous checkpoint (or, the first time, on the task statement), and only the newest
checkpoint stays in the history, followed by the turns not yet summarized. The system
prompt and the task statement are never summarized.

Here a turn is an assistant message that calls tools, with its results. Given a session,
the turns of the context at the leaf (after any earlier compaction, whose summary is the
previous checkpoint) are counted; while at least `n + keep_last_m_turns` remain, the next
`n` are summarized, one request per chunk of `n`, each conditioned on the checkpoint before
it (the project's update prompt). The compaction keeps the turns after the last chunk; its
summary is the newest checkpoint, after the session's first user message quoted verbatim
(`keep_first_user`, the paper's always-kept task statement). Fewer than `n + m` turns:
nothing to do.

The prompts are the project's own summary prompts, not SWE-agent's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._result import CompactionResult
from ..context._build import UNSET, build_session_context
from ..llm._summarizer import SummaryResponse
from ._base import CompactionContext, Strategy, register
from ._context_size import context_tokens
from ._keep_user import user_message_text
from ._llm_summary import (
    compaction_ask,
    generate_text,
    run_params,
)
from ._params import check_count
from ._summary_input import summary_dialect, summary_transcript

DEFAULT_N = 21
"""Turns summarized at a time (the paper's N)."""
DEFAULT_KEEP_LAST_M = 10
"""Recent turns never summarized (the paper's M)."""
SUMMARIZE_EVERY_N_METHOD = "summarize-every-n"


def is_turn_start(message: Mapping[str, Any]) -> bool:
    """Whether a message opens a turn: an assistant message with at least one tool call."""
    content = message.get("content")
    return (
        message.get("role") == "assistant"
        and isinstance(content, list)
        and any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content)
    )


def chunk_bounds(
    turn_starts: Sequence[int], start: int, n: int, keep_last_m: int
) -> tuple[tuple[int, int], ...]:
    """Message ranges `[lo, hi)` summarized one request each, oldest first.

    Args:
        turn_starts: Message indices where turns start, ascending.
        start: Index of the first message that may be summarized.
        n: Turns per chunk.
        keep_last_m: Turns that must stay unsummarized.

    Returns:
        One range per chunk of `n` turns while at least `n + keep_last_m` turns remain;
        the first range starts at `start`, each next one where the previous ended.
    """
    chunks = max(0, (len(turn_starts) - keep_last_m) // n)
    bounds: list[tuple[int, int]] = []
    lo = start
    for k in range(1, chunks + 1):
        hi = turn_starts[k * n]
        bounds.append((lo, hi))
        lo = hi
    return tuple(bounds)


def checkpoint_summary(checkpoint: str, turns: int, task: str | None) -> str:
    """The compaction summary: the task statement (verbatim, when kept) and the checkpoint."""
    body = f"Checkpoint after {turns} summarized tool turns:\n\n{checkpoint}"
    if task is None:
        return body
    return f"The user's first message, word for word:\n\n{task}\n\n{body}"


def _first_user_text(ctx: CompactionContext) -> str | None:
    for entry in ctx.session.path(ctx.leaf_id):
        if entry.type == "message" and entry.message is not None:
            text = user_message_text(entry.message)
            if text:
                return text
    return None


@register
@dataclass(frozen=True)
class SummarizeEveryN(Strategy):
    """Summarize the oldest `n` tool turns at a time, keeping the last `keep_last_m_turns`.

    Attributes:
        n: Turns summarized per request (the paper's N = 21).
        keep_last_m_turns: Recent turns never summarized (the paper's M = 10).
        keep_first_user: Quote the session's first user message verbatim before the
            checkpoint (the paper never summarizes the task statement).
    """

    name: ClassVar[str] = "summarize-every-n"
    needs_summarizer: ClassVar[bool] = True
    needs_preparation: ClassVar[bool] = False

    n: int = DEFAULT_N
    keep_last_m_turns: int = DEFAULT_KEEP_LAST_M
    keep_first_user: bool = True

    def __post_init__(self) -> None:
        check_count("n", self.n, 1)
        check_count("keep_last_m_turns", self.keep_last_m_turns, 0)
        if not isinstance(self.keep_first_user, bool):
            raise TypeError("keep_first_user must be a bool")

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Summarize whole chunks of `n` turns; None when fewer than `n + m` turns exist."""
        profile = ctx.settings.profile
        leaf = UNSET if ctx.leaf_id is None else ctx.leaf_id
        context = build_session_context(ctx.session, leaf, profile=profile)
        messages = context.messages
        previous: str | None = None
        start = 0
        if messages and messages[0].get("role") == "compactionSummary":
            summary = messages[0].get("summary")
            previous = summary if isinstance(summary, str) else None
            start = 1
        starts = [i for i in range(start, len(messages)) if is_turn_start(messages[i])]
        bounds = chunk_bounds(starts, start, self.n, self.keep_last_m_turns)
        if not bounds:
            return None
        summarizer = ctx.require_summarizer(self.name)
        prompts = ctx.prompts
        ask = compaction_ask(ctx)
        responses: list[SummaryResponse] = []
        checkpoint = previous
        dialect = summary_dialect(summarizer, profile, path=ctx.session.path(ctx.leaf_id))
        for lo, hi in bounds:
            transcript = summary_transcript(
                messages[lo:hi], profile=profile, prompts=prompts, dialect=dialect
            )
            checkpoint, made = generate_text(
                summarizer,
                ask,
                transcript,
                previous=checkpoint,
                counter=ctx.counter,
                fold=True,
                escape=profile == "musepi",
            )
            responses.extend(made)
        task = _first_user_text(ctx) if self.keep_first_user else None
        turns = len(bounds) * self.n
        params = run_params(ctx, responses, reasoning=None)
        params["turns_summarized"] = turns
        return CompactionResult(
            summary=checkpoint_summary(checkpoint or "", turns, task),
            first_kept_entry_id=str(context.entry_ids[bounds[-1][1]]),
            tokens_before=context_tokens(ctx.session, ctx, ctx.leaf_id),
            method=SUMMARIZE_EVERY_N_METHOD,
            summarizer_input_tokens=sum(r.input_tokens for r in responses),
            summarizer_output_tokens=sum(r.output_tokens for r in responses),
            latency_s=sum(r.latency_s for r in responses),
            params=params,
            leaf_id=ctx.leaf_id,
            profile=profile,
        )
