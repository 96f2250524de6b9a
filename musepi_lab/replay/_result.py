"""What a replay returns: the per-request timeline, the compactions kept, the ones refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .._repr import html_of
from ..compaction._result import CompactionResult
from ..session._session import Session
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._uncertainty import RequestPricing, cost_draws, difference_interval, prediction_interval

if TYPE_CHECKING:
    import numpy as np
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
        pricing: One `RequestPricing` per timeline row (what the bill's simulation needs).
        calibration: The calibration replayed under (its miss rates and ratio spreads
            make `cost_interval`).
        window_source: Where `window` came from (`metrics.ContextWindow.source`: `given`, or
            the session's own window by `metrics.session_context_window`).
        window_reason: The same in words.
    """

    timeline: pd.DataFrame
    events: tuple[CompactionEvent, ...]
    session: Session = field(repr=False)
    window: int
    threshold: int
    strategy: str
    profile: str
    failures: tuple[CompactionFailure, ...] = ()
    pricing: tuple[RequestPricing, ...] = field(default=(), repr=False)
    calibration: Calibration = field(default=DEFAULT_CALIBRATION, repr=False)
    window_source: str = "given"
    window_reason: str = "given"

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

    @cached_property
    def cost_draws(self) -> np.ndarray:
        """Simulated bills of the whole replay (USD, summarizer calls included), seeded
        (`_uncertainty.cost_draws`): each request the replay reads from cache missed with
        its family's fitted miss rate, the session's token ratio drawn from its fitted
        spread. Two replays of one session draw alike, so their bills are paired."""
        extra = float(self.timeline["summarizer_cost_usd"].sum()) if len(self.timeline) else 0.0
        return cost_draws(self.timeline, self.pricing, self.calibration, extra=extra)

    @property
    def cost(self) -> float:
        """The expected bill (USD): the mean of `cost_draws`. At least `total_cost`, the
        bill under the documented rules alone, by what the unpredicted misses add."""
        return float(self.cost_draws.mean())

    @property
    def cost_interval(self) -> tuple[float, float]:
        """The 90% prediction interval of the bill (USD): `(low, high)` of `cost_draws`."""
        return prediction_interval(self.cost_draws)

    @property
    def compactions(self) -> int:
        """Number of compactions fired and kept."""
        return len(self.events)

    def _repr_html_(self) -> str | None:
        return html_of(self)


def cost_difference_interval(a: ReplayResult, b: ReplayResult) -> tuple[float, float, float]:
    """The bill of replay `a` minus that of `b` (two strategies on one session), paired
    draw by draw: `(mean, low, high)`, the 90% interval of the difference. When it holds
    0, the model cannot tell the two bills apart.

    Raises:
        ValueError: The replays have different numbers of requests (not one session).
    """
    if len(a.timeline) != len(b.timeline):
        raise ValueError(
            f"replays of {len(a.timeline)} and {len(b.timeline)} requests are not of one session"
        )
    return difference_interval(a.cost_draws, b.cost_draws)
