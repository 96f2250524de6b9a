"""One compaction during a replay: run the strategy on the live window, apply and measure
each pass (snapcompact's rescue ladder included), keep the first that shrinks the context
into the progress band (spec §6.5) or record a `CompactionFailure`, and back off after a
compaction that did nothing or failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..compaction._result import CompactionResult
from ..context._build import build_session_context
from ..context._llm import convert_to_llm
from ..metrics._facts import context_text
from ..metrics._metrics import cache_prefix_tokens
from ..session._model import Message
from ..session._session import Session, timestamp_after
from ..strategies._base import Strategy, compact
from ._billing import RequestSpec
from ._cache import billed_prefix, billed_tokens, current_turn_reasoning
from ._guard import DROP_IMAGES, choose, progress_band, rescue_ladder, without_images
from ._log import SimulatedPath
from ._result import CompactionEvent, CompactionFailure
from ._state import ReplayConfig, ReplayState

RETRY_GROWTH = 1.05
"""After a compaction that found nothing to do (or failed), wait until the context grew 5%."""


@dataclass
class WalkOutput:
    """What the walk records: request specs and timeline rows, kept compactions, refused
    ones (append-only)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[CompactionEvent] = field(default_factory=list)
    failures: list[CompactionFailure] = field(default_factory=list)
    specs: list[RequestSpec] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One compaction result applied to the live window and measured."""

    rescue: str
    result: CompactionResult
    after: Session
    messages: tuple[Message, ...]
    tokens: int


def compaction(
    config: ReplayConfig,
    log: SimulatedPath,
    out: WalkOutput,
    state: ReplayState,
    trigger: str,
    source: str = "",
) -> tuple[ReplayState, CompactionEvent | CompactionFailure | None]:
    """Run the strategy on the live window; keep the result only if it shrinks the context
    (after snapcompact's rescue if needed), else record a failure. None: nothing to do."""
    if not len(log) or state.measure.context < state.retry_at:
        return state, None
    live = log.live_session()
    first = run_strategy(config, live, config.strategy)
    if first is None or (not first.append_entry and not first.replacements):
        # Nothing to do (or a strategy that changes nothing, such as `none`).
        return back_off(state), None
    before = build_session_context(live, profile=config.profile).messages
    tokens_before = config.counter.count_messages(before)
    entry_id = log.fresh_id(f"{state.request}:{len(out.events)}")
    attempts = attempt_all(config, live, first, entry_id, tokens_before)
    chosen = choose(
        tokens_before, [(a.rescue, a.tokens) for a in attempts], progress_band(config.threshold)
    )
    if chosen is None:
        failure = CompactionFailure(
            request=state.request,
            trigger=trigger,
            method=_method(config, first),
            tokens_before=tokens_before,
            tokens_after=min(a.tokens for a in attempts),
            attempts=len(attempts),
            reason="the compaction did not shrink the context",
            source=source,
        )
        out.failures.append(failure)
        return back_off(state)._replace(failed=failure.method), failure
    kept = attempts[chosen[0]]
    prefix = cache_prefix_tokens(
        convert_to_llm(before, profile=config.profile),
        convert_to_llm(kept.messages, profile=config.profile),
        config.counter,
    )
    log.commit(
        live, kept.after, kept.result.replacements, restarted=kept.result.new_session is not None
    )
    event = CompactionEvent(
        request=state.request,
        trigger=trigger,
        entry_id=entry_id,
        method=_method(config, kept.result),
        tokens_before=tokens_before,
        tokens_after=kept.tokens,
        cache_prefix_tokens=prefix,
        summarizer_input_tokens=sum(a.result.summarizer_input_tokens for a in attempts),
        summarizer_output_tokens=sum(a.result.summarizer_output_tokens for a in attempts),
        latency_s=sum(a.result.latency_s for a in attempts),
        result=kept.result,
        context=context_text(list(kept.messages)),
        rescue=kept.rescue,
        source=source,
        summarizer_cached_input_tokens=sum(
            a.result.summarizer_cached_input_tokens for a in attempts
        ),
    )
    out.events.append(event)
    if config.hooks.session_compact:
        config.hooks.session_compact(kept.result)
    measure = state.measure._replace(context=kept.tokens, comparable=False)
    billed = billed_tokens(kept.messages)
    return state._replace(
        measure=measure,
        retry_at=0,
        kept_prefix=prefix,
        billed=billed,
        billed_prefix=billed_prefix(before, kept.messages),
        turn_reasoning=current_turn_reasoning(kept.messages),
    ), event


def run_strategy(
    config: ReplayConfig, live: Session, strategy: Strategy
) -> CompactionResult | None:
    """One pass of a strategy over the live window, with the replay's settings."""
    return compact(
        live,
        strategy,
        settings=config.settings,
        counter=config.counter,
        summarizer=config.summarizer,
        hooks=config.hooks.without_compact_notice(),
    )


def attempt_all(
    config: ReplayConfig,
    live: Session,
    first: CompactionResult,
    entry_id: str,
    tokens_before: int,
) -> list[_Attempt]:
    """The first pass, then (while none reaches the progress band) the strategy's rescue:
    smaller re-renders, then the smallest without images."""
    band = progress_band(config.threshold)
    timestamp = timestamp_after(live.leaf)
    attempts = [measure_attempt(config, live, "", first, entry_id, timestamp)]
    if attempts[0].tokens <= band and attempts[0].tokens < tokens_before:
        return attempts
    for label, variant in rescue_ladder(config.strategy, first):
        result = run_strategy(config, live, variant)
        if result is None:
            continue
        attempts.append(measure_attempt(config, live, label, result, entry_id, timestamp))
        if attempts[-1].tokens <= band and attempts[-1].tokens < tokens_before:
            return attempts
    slim = without_images(attempts[-1].result)
    if slim is not None:
        attempts.append(measure_attempt(config, live, DROP_IMAGES, slim, entry_id, timestamp))
    return attempts


def measure_attempt(
    config: ReplayConfig,
    live: Session,
    rescue: str,
    result: CompactionResult,
    entry_id: str,
    timestamp: str,
) -> _Attempt:
    """Apply a result to the live window and count the rebuilt context."""
    after = result.apply(live, timestamp=timestamp, entry_id=entry_id)
    messages = build_session_context(after, profile=config.profile).messages
    return _Attempt(rescue, result, after, messages, config.counter.count_messages(messages))


def back_off(state: ReplayState) -> ReplayState:
    """After a compaction that did nothing or failed: wait for 5% more context."""
    return state._replace(retry_at=int(state.measure.context * RETRY_GROWTH) + 1)


def _method(config: ReplayConfig, result: CompactionResult) -> str:
    return result.method or result.strategy or config.strategy.name
