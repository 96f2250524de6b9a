"""What a replay returns: the per-request timeline, the compactions kept, the ones refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._repr import html_of
from ..compaction._result import CompactionResult
from ..session._session import Session

if TYPE_CHECKING:
    import pandas as pd

TRIGGERS: tuple[str, ...] = ("threshold", "mid-turn", "overflow", "incomplete", "idle", "manual")
"""The six maintenance triggers of spec §6.5."""

COLUMNS: tuple[str, ...] = (
    "request",
    "entry_id",
    "line",
    "timestamp",
    "context_tokens",
    "agent_tokens",
    "recorded_tokens",
    "cache_model",
    "prompt_tokens",
    "input_tokens",
    "cache_read",
    "cache_write",
    "output_tokens",
    "cost_usd",
    "compaction",
    "trigger",
    "trigger_source",
    "tokens_before",
    "tokens_after",
    "summarizer_cost_usd",
    "compactions",
    "recorded_compaction",
    "failed_compaction",
)
"""The timeline's columns, in order: `request`, `entry_id`, `line`, `timestamp`,
`context_tokens` (what is sent, estimated), `agent_tokens` (what the agent measures),
`recorded_tokens` (prompt tokens the provider recorded, when present), `cache_model`,
`prompt_tokens` (the billed prompt in provider tokens, system prompt included),
`input_tokens` (uncached), `cache_read`, `cache_write`, `output_tokens` (estimated from the
reply), `cost_usd` (0 for a request the provider answered with an error), `compaction`
(method fired before this request, or ""), `trigger`, `trigger_source` (where the trigger
came from: `recorded-error`, `recorded-stop`, `recorded-usage`, `simulated`, `measured`,
`manual`, `recorded`), `tokens_before`, `tokens_after`, `summarizer_cost_usd`, `compactions`
(cumulative), `recorded_compaction` (the recorded session compacted before this request),
`failed_compaction` (method of a compaction refused before this request, or "")."""


@dataclass(frozen=True)
class CompactionEvent:
    """One compaction fired during a replay and kept.

    Attributes:
        request: Index of the request it ran before.
        trigger: Which trigger fired (one of `TRIGGERS`).
        entry_id: Id of the compaction entry appended (or of the leaf for rewrites).
        method: The result's method (or strategy name).
        tokens_before: Context tokens before (the counter's estimate of the rebuilt context).
        tokens_after: Context tokens after.
        cache_prefix_tokens: Tokens of the previous request still served from cache.
        summarizer_input_tokens: Input tokens of the summarizer calls.
        summarizer_output_tokens: Output tokens of the summarizer calls.
        latency_s: Time the strategy took.
        result: The strategy's result.
        context: Text of the context right after the compaction (for retention metrics).
        rescue: The local rescue that made the compaction acceptable (e.g.
            `max_frames=4`, `drop-images`), or "" when the first pass was kept.
        source: Where the trigger came from (`recorded-error`, `recorded-stop`,
            `recorded-usage`, `simulated`, `measured`, `manual`, `recorded`; "" when
            unknown).
        summarizer_cached_input_tokens: Of the input tokens, those served from the
            provider's cache (a handoff's replayed context prefix).
    """

    request: int
    trigger: str
    entry_id: str
    method: str
    tokens_before: int
    tokens_after: int
    cache_prefix_tokens: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    latency_s: float
    result: CompactionResult = field(repr=False)
    context: str = field(repr=False)
    rescue: str = ""
    source: str = ""
    summarizer_cached_input_tokens: int = 0


@dataclass(frozen=True)
class CompactionFailure:
    """A compaction the progress guard refused: it did not shrink the context, even after
    the strategy's local rescue, so the replay kept the context as it was (spec §6.5).

    Attributes:
        request: Index of the request it ran before.
        trigger: Which trigger fired.
        method: The result's method (or strategy name).
        tokens_before: Context tokens before.
        tokens_after: Context tokens the smallest attempt would have left.
        attempts: Results tried (the first pass, then each rescue; 0 when a recovery
            guard refused to compact at all).
        reason: Why it failed, in words.
        source: Where the trigger came from (as `CompactionEvent.source`).
    """

    request: int
    trigger: str
    method: str
    tokens_before: int
    tokens_after: int
    attempts: int
    reason: str
    source: str = ""


@dataclass(frozen=True)
class ReplayResult:
    """The timeline of a replay, its compactions, and the simulated session.

    Attributes:
        timeline: One row per request, the columns `COLUMNS`.
        events: The compactions fired and kept, in order.
        session: The simulated session (recorded entries plus the replay's compactions).
        window: The context window replayed under.
        threshold: The compaction threshold for that window.
        strategy: The strategy's label.
        profile: The settings profile.
        failures: Compactions refused by the progress guard, in order.
    """

    timeline: pd.DataFrame
    events: tuple[CompactionEvent, ...]
    session: Session = field(repr=False)
    window: int
    threshold: int
    strategy: str
    profile: str
    failures: tuple[CompactionFailure, ...] = ()

    @property
    def peak_context(self) -> int:
        """The largest context any request carried (tokens)."""
        return int(self.timeline["context_tokens"].max()) if len(self.timeline) else 0

    @property
    def total_cost(self) -> float:
        """USD of every request plus every summarizer call."""
        if not len(self.timeline):
            return 0.0
        return float(self.timeline["cost_usd"].sum() + self.timeline["summarizer_cost_usd"].sum())

    @property
    def compactions(self) -> int:
        """Number of compactions fired and kept."""
        return len(self.events)

    def _repr_html_(self) -> str | None:
        return html_of(self)
