"""The walk of one request stream: the path walked forward as the agent lived it, under a
given window, firing compactions where MusePi's triggers would (spec §6.5), and recording
each provider request as a `RequestSpec` (what it sent, in the provider's billed units before
any fitted parameter), which `_stream_bill` then bills.

How it works:

- The path is walked once, one small step per entry over an explicit state value
  (`ReplayState`); each assistant message is one provider request whose context is
  everything before it in the *simulated* session (the recorded entries, minus the recorded
  compactions, plus the compactions this replay fired and kept).
- The context size is a running sum of per-entry token counts (the counter caches per
  entry); it is rebuilt only when a compaction fires.
- A compaction sees only the live window of the simulated session (`SimulatedPath`): the
  entries from the latest compaction's first kept entry on. So each compaction costs the
  size of the context, not of the session, and a replay is linear in the session's length
  at any window.
- What the agent *measures* (and its triggers see) is, while the simulated context is
  still the recorded one, the provider usage recorded on the last reply plus estimates of
  what came after (spec §3.2); once a compaction (replayed or recorded) has changed the
  context, the recorded usage no longer applies and the estimate is scaled by the last
  measured usage/estimate ratio (when above 1), as MusePi's adaptive budget does.
- The progress guard (spec §6.5): a compaction is kept only when it shrinks the context;
  snapcompact first tries its local rescue (smaller re-renders, then no images) when a
  pass does not reach 80% of the threshold. A compaction that cannot shrink the context is
  recorded as a `CompactionFailure` and the context stays as it was (`_compaction`).
- Nothing the walk does depends on a fitted parameter, so one walk is billed under any
  calibration, and under the session's own token ratio (`_stream_bill`). Codex texts the
  corpus redacted count from the length their marker keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compaction._threshold import (
    calculate_context_tokens,
    calculate_prompt_tokens,
    message_usage,
)
from ..metrics._metrics import summarizer_cost
from ..session._model import Entry, Message, thinking_level_of
from ..session._session import Session, parse_timestamp_ms
from ._billing import RequestSpec, recorded_usage, reply_less_request
from ._cache import (
    billed_entry_tokens,
    billed_message_tokens,
    hidden_reasoning_tokens,
    redacted_extra_tokens,
    request_prices,
)
from ._compaction import WalkOutput, compaction
from ._log import SimulatedPath
from ._recorded import RECORDED_TRIGGER, follow_recorded
from ._result import CompactionEvent, CompactionFailure
from ._state import AgentMeasure, ReplayConfig, ReplayState
from ._triggers import Fired, event_fired, refused_recovery, reply_fired


@dataclass(frozen=True)
class Walk:
    """What one walk of a stream recorded.

    Attributes:
        specs: One `RequestSpec` per provider request, in order.
        rows: The timeline columns the walk knows, one dict per request (the billing
            columns come from `_stream_bill`).
        events: The compactions fired and kept (or followed), in order.
        failures: The compactions the progress guard refused.
        session: The simulated session.
    """

    specs: tuple[RequestSpec, ...]
    rows: tuple[dict[str, Any], ...]
    events: tuple[CompactionEvent, ...]
    failures: tuple[CompactionFailure, ...]
    session: Session


def walk(config: ReplayConfig, session: Session, leaf_id: str | None) -> Walk:
    """One step per entry of the path to `leaf_id`, over an explicit state value."""
    path = session.path(leaf_id)
    log = SimulatedPath(session, profile=config.profile)
    out = WalkOutput()
    state = ReplayState(thinking=thinking_level_of(session.header, "off"))
    for entry, following in zip(path, next_messages(path), strict=True):
        state = step(config, log, out, state, entry, following)
    return finish(config, log, out)


def next_messages(path: tuple[Entry, ...]) -> list[Entry | None]:
    """For each entry of a path, the next message entry after it (None at the end).

    Metadata and events between two output items of one response (Codex logs events such
    as `agent_reasoning` and `token_count` between its reasoning and its message) do not
    end the response: the reader gives a response's usage to the last item of its run the
    same way (`formats._codex_items.assign_usage`)."""
    out: list[Entry | None] = [None] * len(path)
    following: Entry | None = None
    for index in range(len(path) - 1, -1, -1):
        out[index] = following
        if path[index].message is not None:
            following = path[index]
    return out


def finish(config: ReplayConfig, log: SimulatedPath, out: WalkOutput) -> Walk:
    """The walk's record (the simulated session copied once)."""
    return Walk(
        specs=tuple(out.specs),
        rows=tuple(out.rows),
        events=tuple(out.events),
        failures=tuple(out.failures),
        session=log.session_copy(),
    )


def step(
    config: ReplayConfig,
    log: SimulatedPath,
    out: WalkOutput,
    state: ReplayState,
    entry: Entry,
    following: Entry | None,
) -> ReplayState:
    """One recorded entry: a request (compact if a trigger is pending, then bill), the
    idle check, the entry appended, then the triggers it sets for the next request."""
    if entry.type == "thinking_level_change":
        state = state._replace(thinking=thinking_level_of(entry, state.thinking))
    if entry.type == "compaction" and config.follows_recorded:
        return follow_recorded(config, log, out.events, state, entry)._replace(compacted=True)
    if entry.type == "compaction":
        # The recorded agent compacted here; the replay makes its own decisions.
        measure = state.measure._replace(comparable=False)
        return state._replace(recorded_compaction=True, measure=measure, compacted=True)
    message = entry.message
    is_request = message is not None and message.get("role") == "assistant"
    is_request = is_request or reply_less_request(entry) is not None
    if (
        is_request
        and message is not None
        and config.split_replies
        and continues_reply(message, following)
    ):
        is_request = False
        state = state._replace(
            pending_output=state.pending_output + billed_message_tokens(message),
            pending_hidden=state.pending_hidden + hidden_reasoning_tokens(message),
        )
    elif is_request:
        state = request(config, log, out, state, entry)
    state = check_idle(config, log, out, state, entry)
    before = state.billed
    state = append(config, log, state, entry)
    if message is not None and message.get("role") == "assistant" and not is_request:
        # An earlier item of the reply under way is output, not part of its own prompt.
        state = state._replace(pending_billed=state.pending_billed + state.billed - before)
    if message is not None and is_request:
        state = after_reply(config, state, message, out.rows[-1]["context_tokens"])
    elif (
        message is not None
        and message.get("role") != "assistant"
        and mid_turn_due(config, state, message, following)
    ):
        state = state._replace(pending="mid-turn", pending_source="measured")
    if message is not None and message.get("role") == "user" and state.pending != "overflow":
        # A new user message ends an overflow recovery; one still pending was decided
        # when its error reply came (pi checks right after the reply, spec §3.3).
        state = state._replace(overflow_retried=False)
    fired = event_fired(entry) if message is None else None
    if fired is not None and config.enabled(fired.trigger):
        state = state._replace(pending=fired.trigger, pending_source=fired.source)
    if entry.id in config.manual_at and config.enabled("manual"):
        state = state._replace(pending="manual", pending_source="manual")
    return state


def append(
    config: ReplayConfig, log: SimulatedPath, state: ReplayState, entry: Entry
) -> ReplayState:
    """Append the recorded entry to the simulated path and add its tokens (once)."""
    appended = log.append(entry)
    measure = state.measure
    context = (
        measure.context
        + config.counter.count_entry(appended)
        + redacted_extra_tokens(appended.message)
    )
    # The hidden reasoning of the turn under way is part of the prompt until the next user
    # message drops it (`_cache.current_turn_reasoning`).
    message = appended.message
    new_turn = message is not None and message.get("role") == "user"
    hidden = hidden_reasoning_tokens(message)
    kept = 0 if new_turn else state.turn_reasoning
    billed = state.billed + billed_entry_tokens(appended) + hidden + kept - state.turn_reasoning
    return state._replace(
        measure=measure._replace(context=context), billed=billed, turn_reasoning=kept + hidden
    )


def request(
    config: ReplayConfig, log: SimulatedPath, out: WalkOutput, state: ReplayState, entry: Entry
) -> ReplayState:
    """A provider request: fire the pending (or overflow) trigger, then record it."""
    fired = Fired(state.pending, state.pending_source) if state.pending is not None else None
    if fired is None and config.enabled("overflow") and state.measure.agent_view() > config.window:
        fired = Fired("overflow", overflow_source(state.measure, config.window))
    state = state._replace(pending=None, pending_source="")
    outcome: CompactionEvent | CompactionFailure | None = None
    if fired is not None:
        state, outcome = recover(config, log, out, state, fired)
    message = entry.message or reply_less_request(entry) or {}
    sent = state.measure.context + config.system_tokens
    out.specs.append(
        request_spec(config, state, entry, compacted=state.compacted or bool(out.events))
    )
    usage = message_usage(message, profile=config.profile) if state.measure.comparable else None
    event = outcome if isinstance(outcome, CompactionEvent) else recorded_event(out, state)
    out.rows.append(
        {
            "request": state.request,
            "entry_id": entry.id,
            "line": entry.line,
            "timestamp": entry.timestamp,
            "context_tokens": sent,
            "agent_tokens": state.measure.agent_view() + config.system_tokens,
            "recorded_tokens": calculate_prompt_tokens(usage) if usage is not None else None,
            "compaction": event.method if event else "",
            "trigger": event.trigger if event else "",
            "trigger_source": event.source if event else "",
            "tokens_before": event.tokens_before if event else None,
            "tokens_after": event.tokens_after if event else None,
            "summarizer_cost_usd": summarizer_cost(
                event.summarizer_input_tokens,
                event.summarizer_output_tokens,
                config.prices,
                cached_input_tokens=event.summarizer_cached_input_tokens,
            )
            if event
            else 0.0,
            "compactions": len(out.events),
            "recorded_compaction": state.recorded_compaction,
            "failed_compaction": state.failed,
        }
    )
    return state._replace(
        request=state.request + 1,
        previous_sent=sent,
        kept_prefix=None,
        billed_prefix=None,
        recorded_compaction=False,
        failed="",
        pending_output=0,
        pending_hidden=0,
        pending_billed=0,
    )


def request_spec(
    config: ReplayConfig, state: ReplayState, entry: Entry, *, compacted: bool
) -> RequestSpec:
    """What a request sent, before any fitted parameter (`RequestSpec`)."""
    message = entry.message or reply_less_request(entry) or {}
    return RequestSpec(
        entry_id=entry.id,
        line=entry.line,
        timestamp=entry.timestamp,
        now_ms=parse_timestamp_ms(entry.timestamp),
        model_id=str(message.get("model") or ""),
        thinking=state.thinking,
        cache=config.cache_for(message).name,
        conversation=state.billed - state.pending_billed,
        reusable=state.billed_prefix,
        output_estimate=state.pending_output + billed_message_tokens(message),
        hidden=state.pending_hidden + hidden_reasoning_tokens(message),
        refused=message.get("stopReason") == "error",
        recorded=recorded_usage(message),
        compacted=compacted,
        prices=request_prices(message, config.price_override, config.rates),
    )


def continues_reply(message: Message, following: Entry | None) -> bool:
    """Whether an assistant entry is an item of a reply that goes on in the next entry, in
    a harness that writes each output item of a response as its own record (Codex: the
    reasoning, message and tool-call items of one response are one assistant entry each;
    `ReplayConfig.split_replies`): one request, billed at its last item. An error, aborted
    or cut-off reply ends its request."""
    return (
        following is not None
        and following.role == "assistant"
        and message.get("stopReason") not in ("error", "aborted", "length")
    )


def recorded_event(out: WalkOutput, state: ReplayState) -> CompactionEvent | None:
    """The agent's own compaction `recorded` followed just before this request, if any."""
    last = out.events[-1] if out.events else None
    if last is not None and last.request == state.request and last.trigger == RECORDED_TRIGGER:
        return last
    return None


def after_reply(
    config: ReplayConfig, state: ReplayState, message: Message, sent: int
) -> ReplayState:
    """Take the reply's recorded usage (while it applies) and set the post-reply trigger."""
    measure = state.measure
    usage = message_usage(message, profile=config.profile)
    if measure.comparable and usage is not None:
        ratio = measure.ratio
        if measure.context > 0:
            ratio = max(1.0, calculate_prompt_tokens(usage) / max(1, sent))
        measure = measure._replace(
            usage_tokens=calculate_context_tokens(usage, profile=config.profile),
            context_at_usage=measure.context,
            ratio=ratio,
        )
    stop = message.get("stopReason")
    if stop != "error":
        state = state._replace(overflow_retried=False)
    if stop != "length":
        state = state._replace(incomplete_streak=0)
    fired = reply_trigger(config, measure, message)
    return state._replace(
        measure=measure,
        pending=fired.trigger if fired else None,
        pending_source=fired.source if fired else "",
    )


def reply_trigger(config: ReplayConfig, measure: AgentMeasure, message: Message) -> Fired | None:
    """The trigger a reply sets: incomplete (cut by length), overflow (a recorded overflow
    error, or silent overflow), threshold (a finished turn over the threshold), or None."""
    fired = reply_fired(message, window=config.window)
    if fired is not None and config.enabled(fired.trigger):
        return fired
    stop = message.get("stopReason")
    if stop == "stop" and config.enabled("threshold") and measure.agent_view() > config.threshold:
        return Fired("threshold", "measured")
    return None


def overflow_source(measure: AgentMeasure, window: int) -> str:
    """`recorded-usage` when the recorded usage alone is above the window, else
    `simulated` (the replay's estimate of what was added says the request would not fit)."""
    if measure.comparable and measure.usage_tokens is not None and measure.usage_tokens > window:
        return "recorded-usage"
    return "simulated"


def recover(
    config: ReplayConfig, log: SimulatedPath, out: WalkOutput, state: ReplayState, fired: Fired
) -> tuple[ReplayState, CompactionEvent | CompactionFailure | None]:
    """Run a fired trigger's compaction under the recovery guards (one compact-and-retry
    for overflow, three consecutive incomplete recoveries)."""
    reason = refused_recovery(
        fired,
        overflow_retried=state.overflow_retried,
        incomplete_streak=state.incomplete_streak,
    )
    if reason:
        failure = CompactionFailure(
            request=state.request,
            trigger=fired.trigger,
            method=config.strategy.name,
            tokens_before=state.measure.context,
            tokens_after=state.measure.context,
            attempts=0,
            reason=reason,
            source=fired.source,
        )
        out.failures.append(failure)
        return state._replace(failed=failure.method), failure
    state, outcome = compaction(config, log, out, state, fired.trigger, fired.source)
    if fired.trigger == "overflow":
        state = state._replace(overflow_retried=True)
    elif fired.trigger == "incomplete":
        state = state._replace(incomplete_streak=state.incomplete_streak + 1)
    return state, outcome


def mid_turn_due(
    config: ReplayConfig, state: ReplayState, message: Message, following: Entry | None
) -> bool:
    """Mid-turn: a tool result followed by another request of the same loop, over the
    threshold (checked before the next provider request inside a tool loop, spec §6.5)."""
    return (
        config.enabled("mid-turn")
        and message.get("role") == "toolResult"
        and following is not None
        and following.role == "assistant"
        and state.measure.agent_view() > config.threshold
    )


def check_idle(
    config: ReplayConfig, log: SimulatedPath, out: WalkOutput, state: ReplayState, entry: Entry
) -> ReplayState:
    """Idle: a long recorded gap before a new user message compacts (when enabled)."""
    ms = parse_timestamp_ms(entry.timestamp)
    message = entry.message
    if (
        config.enabled("idle")
        and message is not None
        and message.get("role") == "user"
        and ms is not None
        and state.last_ms is not None
        and ms - state.last_ms > config.settings.idle_timeout_seconds * 1000
        and state.measure.agent_view() > config.settings.idle_threshold_tokens
    ):
        state, _ = compaction(config, log, out, state, "idle", "measured")
    return state if ms is None else state._replace(last_ms=ms)
