"""The replay's billing values: one request's bill, usable token figures from recorded
usage (for the calibration check), summarizer cost. The provider cache models that fill a
bill live in `_cache`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Bill:
    """The tokens and USD of one request.

    Attributes:
        cache_read: Prompt tokens served from cache.
        cache_write: Prompt tokens written to cache.
        output_tokens: Tokens of the reply.
        cost_usd: USD of the request.
        input_tokens: Prompt tokens billed as uncached input (providers that bill no
            cache writes).
    """

    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float
    input_tokens: int = 0


def finite_count(value: Any) -> int:
    """A token figure from a recorded usage field: a finite, non-negative number as an
    int, else 0 (readers accept `1e400`, which JSON parses as infinity, and NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, int(value))
