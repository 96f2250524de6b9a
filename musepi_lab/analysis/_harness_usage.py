"""The usage a harness records for a whole session, beside (or instead of) per-request usage.

SWE-agent writes `info.model_stats` into a trajectory (`instance_cost`, `tokens_sent`,
`tokens_received`, `api_calls`; the reader keeps it as the header's `modelStats`) and no
per-request usage; OpenHands writes `metrics.accumulated_cost` and
`accumulated_token_usage` (the header's `metrics`), beside the usage of each model response
its events carry. These totals are the harness's own figures: `usage_df` reports them as
rows whose `cost_source` is "harness".

- A session with no per-request usage gets one row for the whole session: its tokens, its
  calls as `requests`, its cost.
- A session with per-request rows whose harness recorded a cost above zero keeps those rows
  for their tokens; their cost is the harness's (`cost_source` "harness", no cost of their
  own) and one more row, with no tokens and no requests, carries the harness's total cost,
  so the session's cost is the harness's, counted once.
- A harness total of zero cost (OpenHands with a model LiteLLM could not price) leaves the
  request rows as they are: priced from the table, or unpriced.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..metrics._prices import known_prices, usage_cost
from ..session._session import Session

HARNESS = "harness"
"""The `cost_source` of a harness's own figures."""


@dataclass(frozen=True, slots=True)
class HarnessTotal:
    """A harness's usage for a whole session.

    Attributes:
        harness: `swe-agent` or `openhands`.
        cost: USD the harness recorded (0 when it recorded none).
        input: Uncached prompt tokens.
        output: Completion tokens.
        cache_read: Prompt tokens read from a cache (OpenHands).
        cache_write: Prompt tokens written to a cache (OpenHands).
        calls: Model calls (SWE-agent's `api_calls`), or None when not recorded.
        model: The model the harness names, if any.
    """

    harness: str
    cost: float
    input: int
    output: int
    cache_read: int
    cache_write: int
    calls: int | None
    model: str | None

    @property
    def tokens(self) -> int:
        """Every token of the total."""
        return self.input + self.output + self.cache_read + self.cache_write


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _dollars(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and value > 0 else 0.0


def harness_total(session: Session) -> HarnessTotal | None:
    """The session total its harness recorded (SWE-agent `modelStats`, OpenHands
    `metrics`), or None when there is none."""
    header = session.header
    stats = header.get("modelStats")
    if isinstance(stats, Mapping):
        calls = stats.get("api_calls")
        return HarnessTotal(
            harness="swe-agent",
            cost=_dollars(stats.get("instance_cost")),
            input=_count(stats.get("tokens_sent")),
            output=_count(stats.get("tokens_received")),
            cache_read=0,
            cache_write=0,
            calls=calls if isinstance(calls, int) and not isinstance(calls, bool) else None,
            model=str(header["model"]) if header.get("model") else None,
        )
    metrics = header.get("metrics")
    if isinstance(metrics, Mapping):
        tokens = metrics.get("accumulated_token_usage")
        tokens = tokens if isinstance(tokens, Mapping) else {}
        read = _count(tokens.get("cache_read_tokens"))
        # OpenAI-style `prompt_tokens` include the cached ones; pi's `input` does not.
        return HarnessTotal(
            harness="openhands",
            cost=_dollars(metrics.get("accumulated_cost")),
            input=max(0, _count(tokens.get("prompt_tokens")) - read),
            output=_count(tokens.get("completion_tokens")),
            cache_read=read,
            cache_write=_count(tokens.get("cache_write_tokens")),
            calls=None,
            model=str(header["model"]) if header.get("model") else None,
        )
    return None


def _total_row(
    total: HarnessTotal, session: Session, root: Session, **counts: int
) -> dict[str, Any]:
    """A usage row for a harness total (the tokens given, the harness's cost)."""
    prices = known_prices(total.model)
    priced = (
        usage_cost(
            prices,
            input=counts["input"],
            output=counts["output"],
            cache_read=counts["cache_read"],
            cache_write_5m=counts["cache_write"],
        )
        if prices is not None
        else math.nan
    )
    cost = total.cost if total.cost > 0 else priced
    return {
        "session_id": session.id,
        "root_session_id": root.id,
        "file": session.source_path,
        "line": None,
        "entry_id": None,
        "timestamp": _session_time(session),
        "model": total.model,
        "provider": None,
        **counts,
        "cache_write_5m": counts["cache_write"],
        "cache_write_1h": 0,
        "total_tokens": sum(counts[k] for k in ("input", "output", "cache_read", "cache_write")),
        "recorded_cost": total.cost if total.cost > 0 else math.nan,
        "priced_cost": priced,
        "cost": cost,
        "cost_source": HARNESS if total.cost > 0 else "priced" if prices else "unpriced",
    }


def _session_time(session: Session) -> str | None:
    """The last time the session records (its last stamped entry, else its header's)."""
    for entry in reversed(session.entries):
        if entry.timestamp:
            return entry.timestamp
    stamp = session.header.get("timestamp")
    return str(stamp) if stamp else None


def with_harness_total(
    session: Session, root: Session, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A session's usage rows with its harness's total folded in (the module's rules);
    every row has `requests` (1 for a request, the harness's calls for a session total)."""
    rows = [{**row, "requests": 1} for row in rows]
    total = harness_total(session)
    if total is None:
        return rows
    if not rows:
        if total.tokens == 0 and total.cost == 0:
            return []
        counts = {
            "input": total.input,
            "output": total.output,
            "cache_read": total.cache_read,
            "cache_write": total.cache_write,
        }
        row = _total_row(total, session, root, **counts)
        return [{**row, "requests": total.calls if total.calls is not None else 1}]
    if total.cost == 0:
        return rows
    covered = [{**row, "cost": math.nan, "cost_source": HARNESS} for row in rows]
    zero = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    return [*covered, {**_total_row(total, session, root, **zero), "requests": 0}]
