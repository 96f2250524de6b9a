"""The replay's billing step: what one request costs under a simple prompt-cache model.

The model (kept as the first wave defined it; a provider-specific cache model replaces this
module's `bill_request` as a whole): the prefix shared with the previous request is read
from cache and the rest is written; a compaction breaks the prefix where the rebuilt context
first differs; output tokens are the recorded ones, else the counter's estimate of the reply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Bill:
    """The tokens and USD of one request.

    Attributes:
        cache_read: Prompt tokens served from cache.
        cache_write: Prompt tokens written to cache (the rest of the prompt).
        output_tokens: Tokens of the reply.
        cost_usd: USD of the request.
    """

    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float


def finite_count(value: Any) -> int:
    """A token figure from a recorded usage field: a finite, non-negative number as an
    int, else 0 (readers accept `1e400`, which JSON parses as infinity, and NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, int(value))


def recorded_output_tokens(message: Mapping[str, Any]) -> int:
    """Output tokens the provider recorded for a reply (0 when none or unusable)."""
    usage = message.get("usage")
    return finite_count(usage.get("output")) if isinstance(usage, Mapping) else 0


def bill_request(
    sent: int,
    *,
    previous_sent: int | None,
    kept_prefix: int | None,
    output_tokens: int,
    prices: Mapping[str, float],
) -> Bill:
    """Bill one request.

    Args:
        sent: Prompt tokens of the request (context plus system prompt and tools).
        previous_sent: Prompt tokens of the previous request; None for the first.
        kept_prefix: When a compaction ran since the previous request, the tokens of the
            previous request's prefix still cached (system prompt included); else None.
        output_tokens: Tokens of the reply.
        prices: USD per million tokens: `cache_read`, `cache_write`, `output`.
    """
    if previous_sent is None:
        cache_read = 0
    elif kept_prefix is not None:
        cache_read = min(sent, kept_prefix)
    else:
        cache_read = min(sent, previous_sent)
    cost = (
        cache_read * prices["cache_read"]
        + (sent - cache_read) * prices["cache_write"]
        + output_tokens * prices["output"]
    ) / 1e6
    return Bill(cache_read, sent - cache_read, output_tokens, cost)


def summarizer_cost(
    input_tokens: int,
    output_tokens: int,
    prices: Mapping[str, float],
    *,
    cached_input_tokens: int = 0,
) -> float:
    """USD of a compaction's summarizer calls: input (the part that repeats the live
    context's cached prefix, as a handoff's does, at the cache-read price), output."""
    cached = max(0, min(cached_input_tokens, input_tokens))
    return (
        (input_tokens - cached) * prices["input"]
        + cached * prices["cache_read"]
        + output_tokens * prices["output"]
    ) / 1e6
