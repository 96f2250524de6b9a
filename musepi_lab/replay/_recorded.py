"""The replay's side of the `recorded` strategy: at each compaction the agent itself made,
append the recorded entry to the simulated session and rebuild the context from it.

A recorded compaction happened, so it is always followed, even when (under this replay's
counter) it does not shrink the context; such a one is still reported, through its event's
`tokens_before` and `tokens_after`.
"""

from __future__ import annotations

from ..context._build import build_session_context
from ..context._llm import convert_to_llm
from ..metrics._facts import context_text
from ..metrics._metrics import cache_prefix_tokens
from ..session._model import Entry
from ..strategies._recorded import result_from_entry
from ._cache import billed_prefix, billed_tokens, current_turn_reasoning
from ._log import SimulatedPath
from ._result import CompactionEvent
from ._state import ReplayConfig, ReplayState

RECORDED_TRIGGER = "recorded"
"""The trigger of a compaction the recorded agent made."""


def follow_recorded(
    config: ReplayConfig,
    log: SimulatedPath,
    events: list[CompactionEvent],
    state: ReplayState,
    entry: Entry,
) -> ReplayState:
    """Append a recorded compaction entry and measure the rebuilt context.

    Args:
        config: The replay's configuration.
        log: The simulated session (the entry is appended to it).
        events: The replay's kept compactions (the new event is appended).
        state: The walk's state before the entry.
        entry: The recorded `compaction` entry.

    Returns:
        The state after it: the rebuilt context, no longer comparable with recorded usage.
    """
    live = log.live_session()
    before = build_session_context(live, profile=config.profile).messages
    tokens_before = config.counter.count_messages(before)
    leaf = live.leaf
    linked = entry.copy_with(parentId=leaf.id if leaf is not None else None)
    after = live.copy_with(entries=(*live.entries, linked), errors=(), linked=())
    log.commit(live, after, None)
    messages = build_session_context(log.live_session(), profile=config.profile).messages
    tokens_after = config.counter.count_messages(messages)
    prefix = cache_prefix_tokens(
        convert_to_llm(before, profile=config.profile),
        convert_to_llm(messages, profile=config.profile),
        config.counter,
    )
    result = result_from_entry(entry, leaf_id=leaf.id if leaf else None, profile=config.profile)
    events.append(
        CompactionEvent(
            request=state.request,
            trigger=RECORDED_TRIGGER,
            entry_id=str(entry.id),
            method=result.method or RECORDED_TRIGGER,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            cache_prefix_tokens=prefix,
            summarizer_input_tokens=0,
            summarizer_output_tokens=0,
            latency_s=0.0,
            result=result.copy_with(tokens_after=tokens_after),
            context=context_text(list(messages)),
            source=RECORDED_TRIGGER,
        )
    )
    measure = state.measure._replace(context=tokens_after, comparable=False)
    return state._replace(
        measure=measure,
        kept_prefix=prefix,
        recorded_compaction=True,
        billed=billed_tokens(messages),
        billed_prefix=billed_prefix(before, messages),
        turn_reasoning=current_turn_reasoning(messages),
    )
