"""When to compact: context size from usage, thresholds, overflow detection (spec §3).

pi: §3.2 (usage-based context size and the trailing estimate) and §3.3 (threshold,
overflow patterns). MusePi/oh-my-pi: §3.5 (`contextTokens`, orchestration tokens,
proportional reserve, percent and fixed thresholds, the stored-estimate floor) and §4.4
(the adaptive keep-recent budget).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session._model import Entry
from ..session._profiles import check_profile
from ..tokens._counter import TokenCounter
from ._settings import DEFAULT_RESERVE_TOKENS, CompactionSettings

PROPORTIONAL_RESERVE_RATIO = 0.15
"""oh-my-pi's reserve is never below 15% of the window."""
ASYNC_LEAD_RATIO = 0.125
ASYNC_LEAD_MIN_TOKENS = 8192
ASYNC_LEAD_MAX_TOKENS = 32000

# Provider error messages meaning "the prompt did not fit" (pi-ai `overflow.ts`, spec §3.3).
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",  # Anthropic
        r"input is too long for requested model",  # Amazon Bedrock
        r"exceeds the context window",  # OpenAI
        r"input token count.*exceeds the maximum",  # Google Gemini
        r"maximum prompt length is \d+",  # xAI
        r"reduce the length of the messages",  # Groq
        r"maximum context length is \d+ tokens",  # OpenRouter
        r"exceeds the limit of \d+",  # GitHub Copilot
        r"exceeds the available context size",  # llama.cpp
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi
        r"too large for model with \d+ maximum context length",  # Mistral
        r"model_context_window_exceeded",  # z.ai
        r"context[_ ]length[_ ]exceeded",  # generic
        r"too many tokens",  # generic
        r"token limit exceeded",  # generic
    )
)
# Cerebras answers an oversized prompt with a bare 400/413 (429 is rate limiting).
_NO_BODY_OVERFLOW = re.compile(r"^4(00|13)\s*(status code)?\s*\(no body\)", re.IGNORECASE)


def _num(value: Any) -> float:
    """A usage field as a number (missing or non-numeric → 0, as JS arithmetic on undefined
    would poison the sum; pi's data always has numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and math.isnan(value):
        return 0
    return value


def _int(value: float) -> int:
    return int(value) if math.isfinite(value) else 0


# -- usage ------------------------------------------------------------------------------
def calculate_context_tokens(usage: Mapping[str, Any], *, profile: str = "musepi") -> int:
    """Context size reported by one usage record.

    pi (§3.2): `totalTokens || input + output + cacheRead + cacheWrite`.
    MusePi (§3.5): `contextTokens` when present (floored at 0); else the pi sum minus
    provider-side orchestration tokens (`orchestration.input + output + cacheRead`),
    floored at 0.

    Args:
        usage: A pi usage mapping.
        profile: `"musepi"` or `"pi"`.
    """
    check_profile(profile)
    if profile == "musepi" and usage.get("contextTokens") is not None:
        return max(0, _int(_num(usage.get("contextTokens"))))
    raw = _num(usage.get("totalTokens")) or (
        _num(usage.get("input"))
        + _num(usage.get("output"))
        + _num(usage.get("cacheRead"))
        + _num(usage.get("cacheWrite"))
    )
    if profile == "pi":
        return _int(raw)
    orchestration = usage.get("orchestration")
    orchestrated = 0.0
    if isinstance(orchestration, Mapping):
        orchestrated = (
            _num(orchestration.get("input"))
            + _num(orchestration.get("output"))
            + _num(orchestration.get("cacheRead"))
        )
    return max(0, _int(raw - orchestrated))


def calculate_prompt_tokens(usage: Mapping[str, Any]) -> int:
    """Prompt-side tokens of a usage record (MusePi, §3.5): `contextTokens` if present,
    else `input + cacheRead + cacheWrite` if positive, else `calculate_context_tokens`."""
    if usage.get("contextTokens") is not None:
        return max(0, _int(_num(usage.get("contextTokens"))))
    prompt = _num(usage.get("input")) + _num(usage.get("cacheRead")) + _num(usage.get("cacheWrite"))
    if prompt > 0:
        return _int(prompt)
    return calculate_context_tokens(usage, profile="musepi")


def _is_all_zero(usage: Mapping[str, Any]) -> bool:
    return not any(
        _num(usage.get(key))
        for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "contextTokens")
    )


def message_usage(
    message: Mapping[str, Any] | None,
    *,
    profile: str = "musepi",
    skip_all_zero: bool | None = None,
) -> Mapping[str, Any] | None:
    """The usage of a message if it is *valid usage*, else None.

    Valid (pi §3.2): an assistant message with a `usage` mapping whose stopReason is
    neither `aborted` nor `error`. MusePi's context estimate also ignores all-zero usage
    (§4.6), which importers write when the source recorded none; `skip_all_zero` says
    whether to (None: the MusePi profile does). oh-my-pi 18.2.3's `prepareCompaction`
    (`getLastAssistantUsage`) does not: there an all-zero usage is the last usage.
    """
    if not message or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    skip = profile == "musepi" if skip_all_zero is None else skip_all_zero
    if skip and _is_all_zero(usage):
        return None
    return usage


def last_usage_index(entries: Sequence[Entry], *, profile: str = "musepi") -> int:
    """Index of the newest `message` entry with valid usage, or -1."""
    check_profile(profile)
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.type == "message" and message_usage(entry.message, profile=profile) is not None:
            return index
    return -1


def get_last_assistant_usage(
    entries: Sequence[Entry], *, profile: str = "musepi"
) -> Mapping[str, Any] | None:
    """The usage of the newest `message` entry with valid usage, or None (pi
    `getLastAssistantUsage`)."""
    index = last_usage_index(entries, profile=profile)
    return entries[index].message["usage"] if index >= 0 else None  # type: ignore[index]


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """A context size from the last valid usage plus an estimate of what came after.

    Attributes:
        tokens: `usage_tokens + trailing_tokens`.
        usage_tokens: `calculate_context_tokens` of the last valid usage (0 if none).
        trailing_tokens: Estimated tokens of the messages after it (all of them if none).
        last_usage_index: Index of the message that carried the usage, or -1.
    """

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int


def estimate_from_counts(
    messages: Sequence[Mapping[str, Any] | None],
    counts: Sequence[int],
    *,
    profile: str = "pi",
) -> ContextEstimate:
    """`estimate_context_tokens` over messages whose token counts are already known.

    Args:
        messages: Runtime messages (None entries are skipped, with count 0).
        counts: The token count of each message, same length.
        profile: Which usage is valid (`"pi"` or `"musepi"`).
    """
    check_profile(profile)
    if len(messages) != len(counts):
        raise ValueError("messages and counts differ in length")
    for index in range(len(messages) - 1, -1, -1):
        usage = message_usage(messages[index], profile=profile)
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage, profile=profile)
            trailing = sum(counts[index + 1 :])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    total = sum(counts)
    return ContextEstimate(total, 0, total, -1)


def estimate_context_tokens(
    messages: Sequence[Mapping[str, Any]],
    *,
    counter: TokenCounter | None = None,
    profile: str = "pi",
) -> ContextEstimate:
    """pi `estimateContextTokens` (§3.2): the last valid usage plus estimates after it.

    Args:
        messages: Runtime messages, oldest first.
        counter: Token counter for the trailing estimate (default: the profile's method).
        profile: `"pi"` (default, as pi) or `"musepi"` (ignores all-zero usage).
    """
    check_profile(profile)
    counter = counter if counter is not None else TokenCounter(profile)
    counts = [counter.count_message(m) for m in messages]
    return estimate_from_counts(messages, counts, profile=profile)


# -- thresholds -------------------------------------------------------------------------
def effective_reserve(window: int, reserve_tokens: int | None) -> int:
    """MusePi's reserve: `max(floor(0.15 · window), reserve ?? 16384)` (§3.5)."""
    configured = reserve_tokens if reserve_tokens is not None else DEFAULT_RESERVE_TOKENS
    return max(math.floor(window * PROPORTIONAL_RESERVE_RATIO), configured)


def resolve_budget_reserve_tokens(window: int, reserve_tokens: int | None) -> int:
    """The reserve MusePi subtracts from the window (§3.5).

    The proportional reserve `max(1, floor(0.15 · window))` replaces the effective one
    when the reserve was left unset and would leave at most the proportional budget, or
    when the effective reserve is at least the whole window. An explicit reserve — even
    one equal to the default — is honoured otherwise: "unset" is the signal, not the value.
    """
    reserve = effective_reserve(window, reserve_tokens)
    proportional = max(1, math.floor(window * PROPORTIONAL_RESERVE_RATIO))
    defaulted_impossible = reserve_tokens is None and reserve >= window - proportional
    if defaulted_impossible or reserve >= window:
        return proportional
    return reserve


def resolve_threshold_tokens(window: int, settings: CompactionSettings) -> int:
    """The context size above which MusePi compacts (§3.5).

    A positive `threshold_tokens` wins (clamped to `[1, window − 1]`); else a
    `threshold_percent` in (0, ∞) gives `floor(window · clamp(percent, 1, 99) / 100)`;
    else `max(0, min(window − 1, window − resolve_budget_reserve_tokens))`.
    """
    fixed = settings.threshold_tokens
    if math.isfinite(fixed) and fixed > 0:
        return int(min(window - 1, max(1, fixed)))
    percent = settings.threshold_percent
    if not math.isfinite(percent) or percent <= 0:
        reserve = resolve_budget_reserve_tokens(window, settings.reserve_tokens)
        return max(0, min(window - 1, window - reserve))
    clamped = min(99, max(1, percent))
    return math.floor(window * (clamped / 100))


def pi_threshold_tokens(window: int, settings: CompactionSettings) -> int:
    """pi's threshold: `window − reserveTokens` (§3.3)."""
    return window - settings.resolved_reserve_tokens


def threshold_tokens(window: int, settings: CompactionSettings) -> int:
    """The threshold of `settings.profile`: `should_compact` is `context > threshold`."""
    if settings.profile == "pi":
        return pi_threshold_tokens(window, settings)
    return resolve_threshold_tokens(window, settings)


def should_compact(context_tokens: int, window: int, settings: CompactionSettings) -> bool:
    """Whether the threshold trigger fires, by `settings.profile`.

    pi (§3.3): `enabled and context > window − reserve`. MusePi (§3.5): false when
    disabled, when the strategy is `off`, or for a window ≤ 0; else
    `context > resolve_threshold_tokens(window)`.
    """
    if not settings.enabled:
        return False
    if settings.profile == "pi":
        return context_tokens > pi_threshold_tokens(window, settings)
    if settings.strategy == "off" or window <= 0:
        return False
    return context_tokens > resolve_threshold_tokens(window, settings)


def compaction_context_tokens(provider_tokens: int, stored_estimate: int) -> int:
    """MusePi's trigger input: provider usage floored by a local estimate of the stored
    conversation, `max(provider, estimate, 0)` (§3.5), so on-wire compression cannot hide
    growth."""
    return max(max(0, provider_tokens), max(0, stored_estimate))


def async_lead_tokens(threshold: int) -> int:
    """Width of MusePi's speculative-compaction band below the threshold:
    `clamp(floor(0.125 · threshold), 8192, 32000)` (§6.1)."""
    lead = math.floor(ASYNC_LEAD_RATIO * threshold)
    return min(ASYNC_LEAD_MAX_TOKENS, max(ASYNC_LEAD_MIN_TOKENS, lead))


def is_context_overflow(message: Mapping[str, Any], window: int | None = None) -> bool:
    """Whether an assistant message reports a context overflow (pi-ai, spec §3.3).

    True when its stopReason is `error` and `errorMessage` matches a provider pattern
    (or Cerebras' bare `400/413 (no body)`), or — silent overflow — when it stopped
    normally but `usage.input + usage.cacheRead` exceeds a given `window`.
    """
    stop = message.get("stopReason")
    error = message.get("errorMessage")
    if stop == "error" and isinstance(error, str) and error:
        if any(p.search(error) for p in OVERFLOW_PATTERNS) or _NO_BODY_OVERFLOW.search(error):
            return True
    if window and stop == "stop":
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            return _num(usage.get("input")) + _num(usage.get("cacheRead")) > window
    return False


def adapt_keep_recent_tokens(
    keep_recent_tokens: int, prompt_tokens: int, estimated_tokens: int
) -> int:
    """MusePi's adaptive keep budget (§4.4).

    The local estimate under-counts what the provider bills, so when
    `ratio = prompt_tokens / estimated_tokens` exceeds 1 the budget shrinks to
    `max(1, floor(keep / ratio))`. It is never enlarged; an estimate of 0 leaves it as is.
    """
    ratio = prompt_tokens / estimated_tokens if estimated_tokens > 0 else 0.0
    if math.isfinite(ratio) and ratio > 1:
        return max(1, math.floor(keep_recent_tokens / ratio))
    return keep_recent_tokens
