"""Metrics of a compaction: small pure functions, each saying what it measures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..session._model import Message
from ..tokens._counter import TokenCounter
from ._facts import Fact, retained
from ._match import found_in
from ._prices import DEFAULT_PRICES as DEFAULT_PRICES


def token_reduction(tokens_before: int, tokens_after: int) -> float:
    """Share of the context's tokens the compaction removed: `1 - after / before`.

    0.0 when nothing was removed (or `tokens_before` is 0); negative when the context grew.
    """
    if tokens_before <= 0:
        return 0.0
    return 1.0 - tokens_after / tokens_before


def summary_tokens(summary: str, counter: TokenCounter) -> int:
    """Tokens of the summary text a compaction stored (0 for an empty summary)."""
    return counter.count_text(summary) if summary else 0


def fact_retention(facts: Iterable[Fact | str], context: str) -> float:
    """Share of the facts whose exact string is still in the new context's text.

    `facts` should be the facts of the part that was summarized away (planted facts of a
    generated session, or `extract_facts` of the summarized messages). 1.0 when there are
    no facts to lose.
    """
    kept, lost = retained(facts, context)
    total = len(kept) + len(lost)
    return 1.0 if total == 0 else len(kept) / total


def retention_by_kind(facts: Iterable[Fact], context: str) -> dict[str, float]:
    """`fact_retention` per fact kind (path, identifier, command, error, instruction)."""
    items = list(facts)
    present = found_in([f.text for f in items], context)
    by_kind: dict[str, list[bool]] = {}
    for fact in items:
        by_kind.setdefault(fact.kind, []).append(fact.text in present)
    return {kind: sum(hits) / len(hits) for kind, hits in sorted(by_kind.items())}


def retention_bounds(
    facts: Iterable[Fact | str], lower_text: str, upper_text: str
) -> tuple[float, float]:
    """`(retention_lower, retention_upper)`: `fact_retention` in the literal text of a
    context (images unreadable) and in that text with snapcompact's imaged pages read
    perfectly (`context_text(messages, archives=session_archives(session))`).

    For a strategy that writes no images the two are equal. 1.0 for both without facts.
    """
    items = list(facts)
    return fact_retention(items, lower_text), fact_retention(items, upper_text)


def tool_pairing_problems(llm_messages: Sequence[Message]) -> list[str]:
    """What breaks tool-call pairing in an LLM message list: results whose call is not in
    an earlier assistant message, and calls answered twice. Empty when valid.

    Calls without a result are not problems: providers' adapters synthesize one (spec §2.2).
    """
    calls: set[str] = set()
    answered: set[str] = set()
    problems: list[str] = []
    for index, message in enumerate(llm_messages):
        role = message.get("role")
        if role == "assistant":
            for block in message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    calls.add(str(block.get("id")))
        elif role == "toolResult":
            call_id = str(message.get("toolCallId"))
            if call_id not in calls:
                problems.append(f"message {index}: result for unknown call {call_id!r}")
            elif call_id in answered:
                problems.append(f"message {index}: call {call_id!r} answered twice")
            answered.add(call_id)
    return problems


def tool_pairing_valid(llm_messages: Sequence[Message]) -> bool:
    """True when every tool result follows its call and no call is answered twice."""
    return not tool_pairing_problems(llm_messages)


def common_prefix_length(before: Sequence[Message], after: Sequence[Message]) -> int:
    """How many leading messages two requests share (equal in order)."""
    n = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        n += 1
    return n


def cache_prefix_tokens(
    before: Sequence[Message], after: Sequence[Message], counter: TokenCounter
) -> int:
    """Tokens of the longest common message prefix of the last request before and the
    first request after a compaction: what a provider's prompt cache can still serve.

    (The system prompt and tools, identical in both, are not counted.)
    """
    return sum(counter.count_message(m) for m in before[: common_prefix_length(before, after)])


def cache_prefix_kept(
    before: Sequence[Message], after: Sequence[Message], counter: TokenCounter
) -> float:
    """`cache_prefix_tokens` as a share of the tokens of the request before (0..1)."""
    total = counter.count_messages(before)
    if total <= 0:
        return 0.0
    return cache_prefix_tokens(before, after, counter) / total


def instruction_survival(instructions: Iterable[str], context: str) -> float:
    """Share of standing instructions (the first user request, project instructions) whose
    exact text is still in the context after a compaction. 1.0 when there are none."""
    return fact_retention(instructions, context)


def decay_curve(retention_after_each: Sequence[float]) -> dict[str, float]:
    """Summary-of-summary loss: retention of early facts after the 1st, 2nd, 3rd, …
    compaction of a replay, as `{"after_1": r1, "after_2": r2, ..., "slope": s}` where the
    slope is the mean change per further compaction (0 with fewer than two)."""
    out = {f"after_{i + 1}": r for i, r in enumerate(retention_after_each)}
    n = len(retention_after_each)
    out["slope"] = (retention_after_each[-1] - retention_after_each[0]) / (n - 1) if n > 1 else 0.0
    return out


def summarizer_cost(
    input_tokens: int,
    output_tokens: int,
    prices: Mapping[str, float],
    *,
    cached_input_tokens: int = 0,
) -> float:
    """Cost in USD of the summarizer calls, from per-million-token prices
    (`{"input": …, "cache_read": …, "output": …}`); `cached_input_tokens` of the input
    (a handoff's replayed prefix) are billed as cache reads."""
    cached = max(0, min(cached_input_tokens, input_tokens))
    return (
        (input_tokens - cached) * prices.get("input", 0.0)
        + cached * prices.get("cache_read", prices.get("input", 0.0))
        + output_tokens * prices.get("output", 0.0)
    ) / 1e6
