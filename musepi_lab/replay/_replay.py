"""`replay`: walk a recorded session forward as the agent lived it, under a given window,
firing compactions where MusePi's triggers would (spec §6.5), and bill every request under a
prompt-cache model.

How it works, and why it is linear in the session's length:

- The active path is walked once. Every assistant message is one provider request; the
  context of that request is everything before it in the *simulated* session (the recorded
  entries, minus the recorded compactions, plus the compactions this replay fired).
- The context size is kept as a running sum of per-entry token counts (the counter caches
  per entry); only when a compaction fires is the context rebuilt (O(path) once per
  compaction, and compactions are bounded by length / window).
- What the agent *measures* (and its triggers see) is, while the simulated context is
  still the recorded one, the provider usage recorded on the last reply plus estimates of
  what came after (spec §3.2); once a compaction (replayed or recorded) has changed the
  context, the recorded usage no longer applies and the estimate is scaled by the last
  measured usage/estimate ratio (when above 1), as MusePi's adaptive budget does.
- Billing: the prefix shared with the previous request is read from cache, the rest is
  written; a compaction breaks the prefix where the rebuilt context first differs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._repr import html_of
from ..compaction._result import CompactionResult, derived_entry_id
from ..compaction._settings import CompactionSettings
from ..compaction._threshold import (
    calculate_context_tokens,
    calculate_prompt_tokens,
    is_context_overflow,
    message_usage,
    threshold_tokens,
)
from ..context._build import build_session_context
from ..context._llm import convert_to_llm
from ..llm._summarizer import Summarizer
from ..metrics._facts import context_text
from ..metrics._metrics import DEFAULT_PRICES, cache_prefix_tokens
from ..session._model import Entry
from ..session._session import Session, parse_timestamp_ms, timestamp_after
from ..strategies._base import Strategy, compact, get
from ..tokens._counter import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

TRIGGERS: tuple[str, ...] = ("threshold", "mid-turn", "overflow", "incomplete", "idle", "manual")
"""The six maintenance triggers of spec §6.5."""

RETRY_GROWTH = 1.05
"""After a compaction that found nothing to do, wait until the context grew by 5%."""


@dataclass(frozen=True)
class CompactionEvent:
    """One compaction fired during a replay.

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


@dataclass(frozen=True)
class ReplayResult:
    """The timeline of a replay, its compactions, and the simulated session.

    Attributes:
        timeline: One row per request (see `replay`).
        events: The compactions fired, in order.
        session: The simulated session (recorded entries plus the replay's compactions).
        window: The context window replayed under.
        threshold: The compaction threshold for that window.
        strategy: The strategy's label.
        profile: The settings profile.
    """

    timeline: pd.DataFrame
    events: tuple[CompactionEvent, ...]
    session: Session = field(repr=False)
    window: int
    threshold: int
    strategy: str
    profile: str

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
        """Number of compactions fired."""
        return len(self.events)

    def _repr_html_(self) -> str | None:
        return html_of(self)


@dataclass
class _State:
    """The mutable bookkeeping of one replay walk (private to `replay`)."""

    entries: list[Entry]
    context: int = 0
    comparable: bool = True
    usage_tokens: int | None = None
    context_at_usage: int = 0
    ratio: float = 1.0
    retry_at: int = 0

    def agent_view(self) -> int:
        """The context size the agent measures (spec §3.2 while usage applies)."""
        if self.comparable and self.usage_tokens is not None:
            return self.usage_tokens + (self.context - self.context_at_usage)
        return int(self.context * self.ratio)


def _ms(entry: Entry) -> float | None:
    return parse_timestamp_ms(entry.timestamp)


def replay(
    session: Session,
    strategy: str | Strategy,
    *,
    window: int,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    triggers: Collection[str] = ("threshold", "mid-turn", "overflow", "incomplete", "manual"),
    manual_at: Collection[str] = (),
    prices: Mapping[str, float] | None = None,
    system_tokens: int = 0,
    leaf_id: str | None = None,
    **params: Any,
) -> ReplayResult:
    """Replay a session under a context window with a compaction strategy.

    Args:
        session: The recorded session (not changed).
        strategy: A strategy name or value (`none` replays without compacting).
        window: The context window of the model, in tokens.
        settings: Compaction settings (default: MusePi's); their profile picks the
            threshold rule, `mid_turn_enabled` gates the mid-turn trigger and
            `idle_timeout_seconds` / `idle_threshold_tokens` the idle one.
        counter: Token counter for estimates (default: the profile's estimator).
        summarizer: For strategies that call a model.
        triggers: Which triggers may fire (any of `TRIGGERS`; idle is off by default, as
            MusePi's `idleEnabled`).
        manual_at: Entry ids after which a manual compaction runs.
        prices: USD per million tokens: `input`, `cache_write`, `cache_read`, `output`.
        system_tokens: Tokens of the system prompt and tools, added to every request.
        leaf_id: Replay the path to this leaf (default: the session leaf).
        **params: Strategy parameters when `strategy` is a name.

    Returns:
        A `ReplayResult` whose timeline has one row per request: `request`, `entry_id`,
        `line`, `timestamp`, `context_tokens` (what is sent, estimated), `agent_tokens`
        (what the agent measures), `recorded_tokens` (prompt tokens the provider recorded,
        when present), `cache_read`, `cache_write`, `output_tokens`, `cost_usd`,
        `compaction` (method fired before this request, or ""), `trigger`, `tokens_before`,
        `tokens_after`, `summarizer_cost_usd`, `compactions` (cumulative),
        `recorded_compaction` (the recorded session compacted before this request).
    """
    import pandas as pd

    unknown = set(triggers) - set(TRIGGERS)
    if unknown:
        raise ValueError(f"unknown triggers {sorted(unknown)}; expected some of {TRIGGERS}")
    strat = get(strategy, **params)
    settings = settings or CompactionSettings.musepi()
    profile = settings.profile
    counter = counter or TokenCounter.for_profile(profile)
    price = {**DEFAULT_PRICES, **(prices or {})}
    threshold = threshold_tokens(window, settings)
    manual = set(manual_at)
    do_mid_turn = "mid-turn" in triggers and settings.mid_turn_enabled
    idle_ms = settings.idle_timeout_seconds * 1000

    path = session.path(leaf_id)
    state = _State(entries=[])
    rows: list[dict[str, Any]] = []
    events: list[CompactionEvent] = []
    pending: str | None = None
    prev_request_tokens: int | None = None
    prefix_after_compaction: int | None = None
    recorded_compaction = False
    last_ms: float | None = None

    def sim_session() -> Session:
        return session.copy_with(entries=tuple(state.entries), errors=(), linked=())

    def fire(trigger: str, request: int) -> CompactionEvent | None:
        nonlocal prefix_after_compaction
        before = sim_session()
        if not before.entries or state.context < state.retry_at:
            return None
        result = compact(before, strat, settings=settings, counter=counter, summarizer=summarizer)
        if result is None or (not result.append_entry and not result.replacements):
            # Nothing to do (or a strategy that changes nothing, such as `none`).
            state.retry_at = int(state.context * RETRY_GROWTH) + 1
            return None
        entry_id = derived_entry_id(before, f"{request}:{len(events)}")
        after = result.apply(before, timestamp=timestamp_after(before.leaf), entry_id=entry_id)
        ctx_before = build_session_context(before, profile=profile).messages
        ctx_after = build_session_context(after, profile=profile).messages
        tokens_before = counter.count_messages(ctx_before)
        tokens_after = counter.count_messages(ctx_after)
        prefix = cache_prefix_tokens(
            convert_to_llm(ctx_before, profile=profile),
            convert_to_llm(ctx_after, profile=profile),
            counter,
        )
        state.entries = list(after.entries)
        state.context = tokens_after
        state.comparable = False
        state.retry_at = 0
        prefix_after_compaction = prefix
        event = CompactionEvent(
            request=request,
            trigger=trigger,
            entry_id=entry_id,
            method=result.method or result.strategy or strat.name,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            cache_prefix_tokens=prefix,
            summarizer_input_tokens=result.summarizer_input_tokens,
            summarizer_output_tokens=result.summarizer_output_tokens,
            latency_s=result.latency_s,
            result=result,
            context=context_text(ctx_after),
        )
        events.append(event)
        return event

    request = 0
    for index, entry in enumerate(path):
        if entry.type == "compaction":
            # The recorded agent compacted here; the replay makes its own decisions.
            recorded_compaction = True
            state.comparable = False
            continue
        message = entry.message
        is_request = message is not None and message.get("role") == "assistant"
        if is_request:
            trig = pending
            if trig is None and "overflow" in triggers and state.agent_view() > window:
                trig = "overflow"
            event = fire(trig, request) if trig is not None else None
            pending = None
            sent = state.context + system_tokens
            if prev_request_tokens is None:
                cache_read = 0
            elif event is not None or prefix_after_compaction is not None:
                cache_read = min(sent, (prefix_after_compaction or 0) + system_tokens)
            else:
                cache_read = min(sent, prev_request_tokens)
            prefix_after_compaction = None
            usage = message_usage(message, profile=profile) if state.comparable else None
            recorded = calculate_prompt_tokens(usage) if usage is not None else None
            raw_usage = message.get("usage") if isinstance(message.get("usage"), Mapping) else {}
            output = int(raw_usage.get("output") or 0) or counter.count_message(message)
            cost = (
                cache_read * price["cache_read"]
                + (sent - cache_read) * price["cache_write"]
                + output * price["output"]
            ) / 1e6
            summarizer_cost = (
                (
                    event.summarizer_input_tokens * price["input"]
                    + event.summarizer_output_tokens * price["output"]
                )
                / 1e6
                if event is not None
                else 0.0
            )
            rows.append(
                {
                    "request": request,
                    "entry_id": entry.id,
                    "line": entry.line,
                    "timestamp": entry.timestamp,
                    "context_tokens": sent,
                    "agent_tokens": state.agent_view() + system_tokens,
                    "recorded_tokens": recorded,
                    "cache_read": cache_read,
                    "cache_write": sent - cache_read,
                    "output_tokens": output,
                    "cost_usd": cost,
                    "compaction": event.method if event is not None else "",
                    "trigger": event.trigger if event is not None else "",
                    "tokens_before": event.tokens_before if event is not None else None,
                    "tokens_after": event.tokens_after if event is not None else None,
                    "summarizer_cost_usd": summarizer_cost,
                    "compactions": len(events),
                    "recorded_compaction": recorded_compaction,
                }
            )
            recorded_compaction = False
            prev_request_tokens = sent
            request += 1

        # Idle: a long recorded gap before a new user message.
        ms = _ms(entry)
        if (
            "idle" in triggers
            and message is not None
            and message.get("role") == "user"
            and ms is not None
            and last_ms is not None
            and ms - last_ms > idle_ms
            and state.agent_view() > settings.idle_threshold_tokens
        ):
            fire("idle", request)
        if ms is not None:
            last_ms = ms

        # Append the recorded entry to the simulated path.
        parent = state.entries[-1].id if state.entries else None
        sim_entry = entry if entry.parent_id == parent else entry.copy_with(parentId=parent)
        state.entries.append(sim_entry)
        state.context += counter.count_entry(sim_entry)

        if is_request:
            usage = message_usage(message, profile=profile)
            if state.comparable and usage is not None:
                state.usage_tokens = calculate_context_tokens(usage, profile=profile)
                state.context_at_usage = state.context
                if state.context > 0:
                    state.ratio = max(
                        1.0, calculate_prompt_tokens(usage) / max(1, rows[-1]["context_tokens"])
                    )
            stop = message.get("stopReason")
            if stop == "length" and "incomplete" in triggers:
                pending = "incomplete"
            elif (
                stop == "error" and "overflow" in triggers and is_context_overflow(message, window)
            ):
                pending = "overflow"
            elif stop == "stop" and "threshold" in triggers and state.agent_view() > threshold:
                pending = "threshold"
        elif (
            do_mid_turn
            and message is not None
            and message.get("role") == "toolResult"
            and index + 1 < len(path)
            and path[index + 1].role == "assistant"
            and state.agent_view() > threshold
        ):
            pending = "mid-turn"
        if entry.id in manual and "manual" in triggers:
            pending = "manual"

    timeline = pd.DataFrame(rows, columns=_COLUMNS)
    return ReplayResult(
        timeline=timeline,
        events=tuple(events),
        session=sim_session(),
        window=window,
        threshold=threshold,
        strategy=strat.label,
        profile=profile,
    )


_COLUMNS = [
    "request",
    "entry_id",
    "line",
    "timestamp",
    "context_tokens",
    "agent_tokens",
    "recorded_tokens",
    "cache_read",
    "cache_write",
    "output_tokens",
    "cost_usd",
    "compaction",
    "trigger",
    "tokens_before",
    "tokens_after",
    "summarizer_cost_usd",
    "compactions",
    "recorded_compaction",
]
