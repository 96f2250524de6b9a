"""The values a replay carries: its configuration, fixed for the whole walk, and the state
between two entries, replaced (never changed) at every step."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..compaction._hooks import NO_HOOKS, SessionHooks
from ..compaction._settings import CompactionSettings
from ..compaction._threshold import threshold_tokens
from ..llm._summarizer import Summarizer
from ..metrics._metrics import DEFAULT_PRICES
from ..strategies._base import Strategy, get
from ..tokens._counter import TokenCounter
from ._cache import CacheModel
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._options import ReplayOptions, check_cache, check_triggers


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """Everything fixed for one replay (see `ReplayOptions` for the meaning of each field)."""

    strategy: Strategy
    label: str
    settings: CompactionSettings
    counter: TokenCounter
    summarizer: Summarizer | None
    window: int
    threshold: int
    triggers: frozenset[str]
    manual_at: frozenset[str]
    prices: Mapping[str, float]
    system_tokens: int
    cache: str = "auto"
    price_override: Mapping[str, float] | None = None
    hooks: SessionHooks = NO_HOOKS
    split_replies: bool = False
    calibration: Calibration = DEFAULT_CALIBRATION
    rates: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)

    @property
    def profile(self) -> str:
        """The settings profile."""
        return self.settings.profile

    @property
    def follows_recorded(self) -> bool:
        """Whether the strategy follows the recorded compactions (`recorded`)."""
        return bool(getattr(self.strategy, "follows_recorded", False))

    def cache_for(self, message: Mapping[str, Any]) -> CacheModel:
        """The cache model of a request: the chosen one, else from the reply's provider,
        with the calibration's parameters."""
        if self.cache == "auto":
            return self.calibration.model_for(message)
        return self.calibration.model(self.cache)

    def enabled(self, trigger: str) -> bool:
        """Whether a trigger may fire (mid-turn also needs the settings' switch; none
        fires for a strategy that follows the recorded compactions)."""
        if self.follows_recorded:
            return False
        if trigger == "mid-turn":
            return trigger in self.triggers and self.settings.mid_turn_enabled
        return trigger in self.triggers


class AgentMeasure(NamedTuple):
    """The simulated context size and what the agent measures of it (spec §3.2).

    Attributes:
        context: Tokens of the simulated context (running sum of entry estimates).
        comparable: Whether the simulated context is still the recorded one, so the
            recorded usage applies.
        usage_tokens: Context tokens of the last valid recorded usage.
        context_at_usage: `context` when that usage was taken.
        ratio: Last recorded prompt tokens / estimated request (≥ 1).
    """

    context: int = 0
    comparable: bool = True
    usage_tokens: int | None = None
    context_at_usage: int = 0
    ratio: float = 1.0

    def agent_view(self) -> int:
        """The context size the agent measures (spec §3.2 while usage applies)."""
        if self.comparable and self.usage_tokens is not None:
            return self.usage_tokens + (self.context - self.context_at_usage)
        return int(self.context * self.ratio)


class ReplayState(NamedTuple):
    """The walk's state between two entries.

    Attributes:
        measure: The context size and the agent's view of it.
        request: Index of the next request.
        pending: A trigger that fires before the next request.
        retry_at: Context size below which no compaction is tried again.
        previous_sent: Prompt tokens of the previous request.
        kept_prefix: Cached prefix (context part) kept by a compaction since the previous
            request; None when none ran.
        recorded_compaction: The recorded session compacted since the previous request.
        failed: Method of a compaction refused since the previous request, or "".
        last_ms: Timestamp of the last entry that had one (ms).
        billed: The simulated context as the provider bills it (`_cache.billed_tokens`,
            before the tokenizer ratio).
        billed_prefix: `billed` of the cached prefix a compaction kept (`kept_prefix`
            in the same units), or None.
        pending_source: Where the pending trigger came from (`_triggers.TRIGGER_SOURCES`).
        overflow_retried: An overflow recovery compacted and no new user message or reply
            without error came since (spec §3.3: one compact-and-retry).
        incomplete_streak: Consecutive incomplete-output recoveries (spec §6.5: three).
        pending_output: Billed units of the earlier items of the reply being received
            (`_walk.continues_reply`), output of the request that ends it.
        pending_hidden: Hidden reasoning tokens of those earlier items.
        pending_billed: `billed` those earlier items added (not in their own prompt).
        turn_reasoning: Hidden reasoning tokens of the current turn, included in `billed`
            (`_cache.current_turn_reasoning`).
        thinking: The thinking level in force (the header's, then the latest
            `thinking_level_change`); a request under another level than the previous one
            finds Anthropic's message cache invalidated.
        compacted: A recorded compaction entry has been walked past.
    """

    measure: AgentMeasure = AgentMeasure()
    request: int = 0
    pending: str | None = None
    retry_at: int = 0
    previous_sent: int | None = None
    kept_prefix: int | None = None
    recorded_compaction: bool = False
    failed: str = ""
    last_ms: float | None = None
    billed: int = 0
    billed_prefix: int | None = None
    pending_source: str = ""
    overflow_retried: bool = False
    incomplete_streak: int = 0
    pending_output: int = 0
    pending_hidden: int = 0
    pending_billed: int = 0
    turn_reasoning: int = 0
    thinking: str = "off"
    compacted: bool = False


def bind_window(strategy: Strategy, window: int) -> Strategy:
    """The strategy as it runs in a replay: a strategy with a `window` parameter (`hybrid`)
    left unset gets the replay's window.

    Raises:
        ValueError: The strategy was given a different window than the replay's.
    """
    if "window" not in {f.name for f in dataclasses.fields(strategy)}:
        return strategy
    own = getattr(strategy, "window", None)
    if own is None:
        return get(strategy, window=window)
    if own != window:
        raise ValueError(
            f"strategy {strategy.label} has window={own}, the replay runs under window={window}"
        )
    return strategy


def configure(
    strategy: str | Strategy,
    options: ReplayOptions | None = None,
    *,
    window: int,
    split_replies: bool = False,
    rates: Mapping[str, Mapping[str, float]] | None = None,
    **keywords: Any,
) -> ReplayConfig:
    """Resolve a replay's options into one `ReplayConfig` under the resolved `window`
    (`options.window` is what the caller asked; None there means the session's).

    `keywords` are options of `ReplayOptions` replacing those of `options` (the keyword
    calls written before the options were a value), strategy parameters among them.

    Raises:
        ValueError: Unknown triggers, an unknown cache model, or a strategy window that
            contradicts `window`.
    """
    opts = ReplayOptions.of_call(options, keywords, "configure")
    check_cache(opts.cache)
    check_triggers(opts.triggers)
    strat = get(strategy, **opts.params)
    settings = opts.settings or CompactionSettings.musepi()
    return ReplayConfig(
        strategy=bind_window(strat, window),
        label=strat.label,
        settings=settings,
        counter=opts.counter or TokenCounter.for_profile(settings.profile),
        summarizer=opts.summarizer,
        window=window,
        threshold=threshold_tokens(window, settings),
        triggers=frozenset(opts.triggers),
        manual_at=frozenset(opts.manual_at),
        system_tokens=opts.system_tokens or 0,
        cache=opts.cache,
        hooks=opts.hooks or NO_HOOKS,
        split_replies=split_replies,
        calibration=opts.calibration or DEFAULT_CALIBRATION,
        **_price_fields(opts.prices, rates),
    )


def _price_fields(
    prices: Mapping[str, float] | None, rates: Mapping[str, Mapping[str, float]] | None
) -> dict[str, Any]:
    """The config's prices: the defaults under the given ones, the given ones apart (they
    override each reply's model's), and the rates the session recorded paying."""
    return {
        "prices": {**DEFAULT_PRICES, **(prices or {})},
        "price_override": dict(prices) if prices else None,
        "rates": dict(rates or {}),
    }
