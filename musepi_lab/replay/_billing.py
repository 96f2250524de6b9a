"""The replay's billing values: one request's bill, what the record says a reply cost
(`RecordedUsage`), what the walk hands the billing step (`RequestSpec`), and the prices a
session's own recorded costs imply. The provider cache models that fill a bill live in
`_cache`, the billing of a whole stream in `_stream_bill`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..metrics._prices import prices_for, usage_cost


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
        cache_write_1h: Of `cache_write`, the tokens written with the 1-hour lifetime.
    """

    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float
    input_tokens: int = 0
    cache_write_1h: int = 0


def finite_count(value: Any) -> int:
    """A token figure from a recorded usage field: a finite, non-negative number as an
    int, else 0 (readers accept `1e400`, which JSON parses as infinity, and NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, int(value))


class RecordedUsage(NamedTuple):
    """What the record says one request cost (pi's usage shape, as every reader fills it).

    Attributes:
        input: Uncached prompt tokens.
        cache_read: Prompt tokens read from cache.
        cache_write: Prompt tokens written to cache (both lifetimes).
        cache_write_1h: Of those, written with the 1-hour lifetime (Claude Code records the
            split as `cacheWrite1h`; 0 elsewhere).
        output: Output tokens (hidden reasoning included: providers bill it as output).
        cost: USD: the harness's own `usage.cost.total` when above zero, else the tokens at
            the model's list prices (`metrics.usage_cost`, the formula `usage_df` uses).
    """

    input: int
    cache_read: int
    cache_write: int
    cache_write_1h: int
    output: int
    cost: float

    @property
    def prompt(self) -> int:
        """Prompt tokens: input, cache read and cache write."""
        return self.input + self.cache_read + self.cache_write

    @property
    def one_hour_share(self) -> float | None:
        """The share of the writes made with the 1-hour lifetime; None without writes."""
        return self.cache_write_1h / self.cache_write if self.cache_write else None


def reply_less_request(entry: Any) -> Mapping[str, Any] | None:
    """The `requestUsage` of an entry that records a provider request no reply answers (a
    Codex `token_count` with no output item, an interrupted turn: the reader puts the
    request's `usage`, `model` and `provider` there), else None. `usage_df` bills it; so
    does a replay, as a request with the context of its place and no reply text."""
    if entry.type == "message":
        return None
    request = entry.record.get("requestUsage")
    return request if isinstance(request, Mapping) else None


def recorded_usage(message: Mapping[str, Any] | None) -> RecordedUsage | None:
    """A reply's recorded usage, or None when it recorded no tokens at all (no usage,
    Claude Code's `<synthetic>` replies, Codex items no request was assigned to)."""
    usage = message.get("usage") if message is not None else None
    if not isinstance(usage, Mapping):
        return None
    inp, read, write, out = (
        finite_count(usage.get(k)) for k in ("input", "cacheRead", "cacheWrite", "output")
    )
    if inp + read + write + out == 0:
        return None
    one_hour = min(write, finite_count(usage.get("cacheWrite1h")))
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if isinstance(total, bool) or not isinstance(total, (int, float)) or not total > 0:
        total = usage_cost(
            prices_for(str(message.get("model") or "") if message else ""),
            input=inp,
            output=out,
            cache_read=read,
            cache_write_5m=write - one_hour,
            cache_write_1h=one_hour,
        )
    return RecordedUsage(inp, read, write, one_hour, out, float(total))


class RequestSpec(NamedTuple):
    """One provider request as the walk saw it, before any billing parameter applies: the
    billing step (`_stream_bill.bill_stream`) turns it into a bill under a system prompt, a
    token ratio and a cache model, so a walk is billed again under another calibration
    without walking again.

    Attributes:
        entry_id: The reply's entry id.
        line: Its line in the file.
        timestamp: Its timestamp (ISO text), or None.
        now_ms: The same in epoch milliseconds, or None.
        model_id: The model the request went to.
        thinking: The thinking level in force.
        cache: The cache model's name (`CACHE_MODELS`).
        conversation: The prompt's conversation part, as the provider bills it before the
            token ratio (`_cache.billed_tokens` units; the system prompt is not in it).
        reusable: The conversation part of the prefix a compaction kept cached since the
            previous request, same units; None: the previous request's prompt.
        output_estimate: The reply's billed text, same units (every item of a split reply).
        hidden: Hidden reasoning of the reply, in provider tokens (an estimate).
        refused: The provider answered with an error (not billed; the cache stays).
        recorded: The reply's recorded usage, or None.
        compacted: A compaction (recorded or replayed) ran in this stream before it, so
            the context differs from the one sent before any compaction.
        prices: USD per million tokens of this request.
    """

    entry_id: str | None
    line: int | None
    timestamp: str | None
    now_ms: float | None
    model_id: str
    thinking: str
    cache: str
    conversation: int
    reusable: int | None
    output_estimate: int
    hidden: int
    refused: bool
    recorded: RecordedUsage | None
    compacted: bool
    prices: Mapping[str, float]


_RATE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("input", "input", "input"),
    ("cache_read", "cacheRead", "cacheRead"),
    ("cache_write", "cacheWrite", "cacheWrite"),
    ("output", "output", "output"),
)
"""(price key, usage token field, usage.cost field)."""


def recorded_rates(messages: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """The prices a session's own recorded costs imply, per model: for each price of
    `_RATE_KEYS`, the summed `usage.cost.<field>` over the summed tokens of the replies
    that recorded a cost above zero (pi records what it charged, per part). A model whose
    replies recorded no cost parts is absent; a part never recorded is absent from its
    model's.
    The 1-hour write price follows the write price at Anthropic's 2 / 1.25 ratio when only
    one write price is recorded (pi records one `cacheWrite` cost)."""
    sums: dict[str, dict[str, list[float]]] = {}
    for message in messages:
        usage = message.get("usage")
        if not isinstance(usage, Mapping):
            continue
        cost = usage.get("cost")
        if not isinstance(cost, Mapping):
            continue
        total = cost.get("total")
        if isinstance(total, bool) or not isinstance(total, (int, float)) or not total > 0:
            continue  # no cost recorded (readers fill zeros where the harness wrote none)
        model = str(message.get("model") or "")
        for key, field, cost_field in _RATE_KEYS:
            tokens = finite_count(usage.get(field))
            paid = cost.get(cost_field)
            if tokens and isinstance(paid, (int, float)) and not isinstance(paid, bool):
                if math.isfinite(paid) and paid >= 0:
                    pair = sums.setdefault(model, {}).setdefault(key, [0.0, 0.0])
                    pair[0] += float(paid)
                    pair[1] += tokens
    rates: dict[str, dict[str, float]] = {}
    for model, parts in sums.items():
        found = {key: paid / tokens * 1e6 for key, (paid, tokens) in parts.items() if tokens}
        if "cache_write" in found:
            found["cache_write_1h"] = found["cache_write"] * 2.0 / 1.25
        rates[model] = found
    return rates
