"""What a replay returns: the per-request timeline, the compactions kept, the ones refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .._repr import html_of
from ..compaction._result import CompactionResult
from ..session._session import Session
from ._billing import RecordedUsage
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._coverage import Coverage
from ._uncertainty import (
    COST_DRAWS,
    StreamDraws,
    cost_draws,
    difference_interval,
    expected_bill,
    prediction_interval,
)

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
    "stream",
    "stream_kind",
    "cache_write_1h",
    "output_source",
)
"""The timeline's columns, in order: `request`, `entry_id`, `line`, `timestamp`,
`context_tokens` (what is sent, estimated), `agent_tokens` (what the agent measures),
`recorded_tokens` (prompt tokens the provider recorded, when present), `cache_model`,
`prompt_tokens` (the billed prompt in provider tokens, system prompt included),
`input_tokens` (uncached), `cache_read`, `cache_write`, `output_tokens` (the recorded
ones where the reply carries usage, else estimated: `output_source`), `cost_usd` (0 for a
request the provider answered with an error), `compaction`
(method fired before this request, or ""), `trigger`, `trigger_source` (where the trigger
came from: `recorded-error`, `recorded-stop`, `recorded-usage`, `simulated`, `measured`,
`manual`, `recorded`), `tokens_before`, `tokens_after`, `summarizer_cost_usd`, `compactions`
(cumulative), `recorded_compaction` (the recorded session compacted before this request),
`failed_compaction` (method of a compaction refused before this request, or ""), `stream`
and `stream_kind` (the request stream: `main`, `sidechain`, `subagent`, `compaction`;
`_streams`), `cache_write_1h` (of `cache_write`, the tokens written with the 1-hour
lifetime) and `output_source` (`recorded` or `estimated`). The main stream's rows come
first, in order, then each other stream's."""


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
class StreamResult:
    """One request stream of a replay.

    Attributes:
        label: The stream's label (`_streams.Stream.label`).
        kind: Its kind (`_streams.STREAM_KINDS`).
        requests: Its requests in the timeline.
        events: The compactions it fired and kept (or followed).
        draws: What the bill's simulation needs of it.
        recorded: The recorded usage of each of its requests (None where the reply
            carries none).
    """

    label: str
    kind: str
    requests: int
    events: tuple[CompactionEvent, ...] = ()
    draws: StreamDraws | None = field(default=None, repr=False)
    recorded: tuple[RecordedUsage | None, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class ReplayResult:
    """The timeline of a replay, its compactions, and the simulated session.

    Attributes:
        timeline: One row per request of every stream, the columns `COLUMNS`.
        events: The compactions the main stream fired and kept, in order.
        session: The simulated main session (recorded entries plus the replay's
            compactions).
        window: The context window replayed under.
        threshold: The compaction threshold for that window.
        strategy: The strategy's label.
        profile: The settings profile.
        failures: Compactions the progress guard refused in the main stream, in order.
        calibration: The calibration replayed under (its priors, miss rates and spreads
            make `cost` and `cost_interval`).
        streams: The request streams billed (main, sidechains, subagents, compaction
            runs), with what the bill's simulation needs; () for a result made by hand.
        coverage: How many of the session's recorded requests the timeline holds, and
            why the others are not in it (`Coverage`); None for a result made by hand.
    """

    timeline: pd.DataFrame
    events: tuple[CompactionEvent, ...]
    session: Session = field(repr=False)
    window: int
    threshold: int
    strategy: str
    profile: str
    failures: tuple[CompactionFailure, ...] = ()
    calibration: Calibration = field(default=DEFAULT_CALIBRATION, repr=False)
    streams: tuple[StreamResult, ...] = field(default=(), repr=False)
    coverage: Coverage | None = None

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
    def _summarizer_cost(self) -> float:
        return float(self.timeline["summarizer_cost_usd"].sum()) if len(self.timeline) else 0.0

    def _draw_streams(self) -> list[StreamDraws]:
        return [s.draws for s in self.streams if s.draws is not None]

    @cached_property
    def cost_draws(self) -> np.ndarray:
        """Simulated bills of the whole replay (USD, summarizer calls included), seeded
        (`_uncertainty.cost_draws`): each stream's line drawn from its posterior, its
        unpredicted misses and hits at its own rates. Two replays of one session draw
        alike, so their bills are paired."""
        streams = self._draw_streams()
        if not streams:
            import numpy as np

            return np.full(COST_DRAWS, self.total_cost)
        return cost_draws(streams, extra=self._summarizer_cost)

    @property
    def cost(self) -> float:
        """The expected bill (USD), exact (`_uncertainty.expected_bill`: the documented-rule
        bill, plus the expected unpredicted misses, less the expected unpredicted hits, plus
        the summarizer calls); the same for every seed, and the mean of `cost_draws` within
        their sampling error."""
        streams = self._draw_streams()
        if not streams:
            return self.total_cost
        return expected_bill(streams) + self._summarizer_cost

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
        ValueError: The replays are not of one session (different streams or numbers of
            requests of the streams both bill).
    """
    own = {s.label: s.requests for s in a.streams}
    other = {s.label: s.requests for s in b.streams}
    shared = own.keys() & other.keys()
    if any(own[k] != other[k] for k in shared) or (
        not shared and len(a.timeline) != len(b.timeline)
    ):
        raise ValueError(
            f"replays of {len(a.timeline)} and {len(b.timeline)} requests are not of one session"
        )
    return difference_interval(a.cost_draws, b.cost_draws)
