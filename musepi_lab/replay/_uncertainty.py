"""The bill's prediction interval: what the documented rules cannot say, drawn.

A replay bills each request under its provider's documented rules. Two things those rules
leave open are fitted on the train split (`replay.calibrate`) and drawn here, seeded, so a
result's interval is the same every time:

- the session's own token ratio: one draw per tokenizer family and session, the fitted
  ratio times `exp(ratio_spread * t)`, `t` from Student's t with `ratio_freedom` degrees
  of freedom (the spread is estimated from a few sessions; normal when 0), scaling the
  conversation part of every prompt (the system prompt is a separate fitted figure);
- the provider's unpredicted misses: the session's own miss rate is drawn from a beta
  distribution of mean `miss_rate` and concentration `miss_concentration` (sessions miss
  at very different rates; exactly `miss_rate` when 0); each request the replay reads
  mostly from cache then misses at that rate, independently, and pays its cache read
  beyond the warm prefix as a write (as input, for OpenAI).

The draws depend only on the seed and the number of requests, so two replays of the same
session (two strategies) share them: their per-draw difference is a paired simulation of
the difference of their bills (`cost_difference_interval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ._calibrated import FAMILIES, Calibration

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

COST_DRAWS = 400
"""Simulated bills behind one interval."""
COST_SEED = 20261203
"""Seed of the draws (shared by every replay, so two replays of one session are paired)."""
PREDICTION_LEVEL = 0.9
"""Level of `ReplayResult.cost_interval`."""


class RequestPricing(NamedTuple):
    """What the simulation needs of one billed request beyond its timeline row.

    Attributes:
        cache_model: The cache model's name.
        system_tokens: Provider tokens of the system prompt in its prompt.
        warm_tokens: The static prefix read whatever the conversation's cache holds.
        input: USD per million uncached input tokens.
        cache_read: USD per million cache-read tokens.
        cache_write: USD per million written tokens (at the model's write price).
        miss: USD per million tokens of a missed read (a write, or input for OpenAI).
        output: USD per million output tokens.
    """

    cache_model: str
    system_tokens: int
    warm_tokens: int
    input: float
    cache_read: float
    cache_write: float
    miss: float
    output: float


def cost_draws(
    timeline: pd.DataFrame,
    pricing: Sequence[RequestPricing],
    calibration: Calibration,
    *,
    extra: float = 0.0,
    mask: np.ndarray | None = None,
    draws: int = COST_DRAWS,
    seed: int = COST_SEED,
) -> np.ndarray:
    """Simulated bills of a replay (USD), one per draw.

    Args:
        timeline: The replay's timeline (`input_tokens`, `cache_read`, `cache_write`,
            `output_tokens`, `cost_usd`, one row per request).
        pricing: One `RequestPricing` per timeline row; without them (a result built by
            hand) every draw is the documented-rule bill.
        calibration: The fitted spread and miss rate per family.
        extra: USD added to every draw (the summarizer calls).
        mask: Which requests to bill (default all), e.g. those with recorded usage.
        draws: How many bills to draw.
        seed: Seed of the draws.
    """
    import numpy as np

    n = len(timeline)
    cost = timeline["cost_usd"].to_numpy(dtype=float) if n else np.zeros(0)
    keep = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if len(pricing) != n:
        return np.full(draws, float(cost[keep].sum()) + extra)
    rng = np.random.default_rng(seed)
    t, rates = session_draws(calibration, rng, draws)
    u = rng.random((draws, n))  # last: the session draws above do not depend on n
    read = timeline["cache_read"].to_numpy(dtype=float)
    prompt = read + timeline[["input_tokens", "cache_write"]].to_numpy(dtype=float).sum(axis=1)
    models = [calibration.model(p.cache_model) for p in pricing]
    family = np.array([FAMILIES.index(m.provider) for m in models], dtype=int)
    spread = np.array([m.ratio_spread for m in models])
    system = np.array([p.system_tokens for p in pricing], dtype=float)
    warm = np.array([p.warm_tokens for p in pricing], dtype=float)
    out = timeline["output_tokens"].to_numpy(dtype=float) * [p.output / 1e6 for p in pricing]
    premium = np.array([(p.miss - p.cache_read) / 1e6 for p in pricing])
    factor = np.exp(spread * t[:, family])
    conversation = np.maximum(prompt - system, 0.0)
    scale = np.where(prompt > 0, (system + factor * conversation) / np.maximum(prompt, 1.0), 1.0)
    hit = (read * 2 >= prompt) & (prompt > 0)
    missed = (u < rates[:, family]) & hit
    moved = np.maximum(read - warm, 0.0) * premium
    per_request = scale * (cost - out + missed * moved) + out
    bills: np.ndarray = per_request[:, keep].sum(axis=1) + extra
    return bills


def session_draws(
    calibration: Calibration, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per draw and family: the session's log-ratio deviate (Student's t with the family's
    `ratio_freedom`, else standard normal) and its own miss rate (beta of mean `miss_rate`
    and concentration `miss_concentration`, else `miss_rate`)."""
    import numpy as np

    t = np.zeros((draws, len(FAMILIES)))
    rates = np.zeros((draws, len(FAMILIES)))
    for j, name in enumerate(FAMILIES):
        model = calibration.family(name)
        dof = model.ratio_freedom
        t[:, j] = rng.standard_t(dof, draws) if dof > 0 else rng.standard_normal(draws)
        m, k = model.miss_rate, model.miss_concentration
        rates[:, j] = rng.beta(m * k, (1 - m) * k, draws) if k > 0 and 0 < m < 1 else m
    return t, rates


def prediction_interval(draws: np.ndarray, level: float = PREDICTION_LEVEL) -> tuple[float, float]:
    """The central `level` interval of simulated bills: `(low, high)` quantiles."""
    import numpy as np

    tail = (1.0 - level) / 2.0
    low, high = np.quantile(np.asarray(draws, dtype=float), [tail, 1.0 - tail])
    return float(low), float(high)


def difference_interval(
    a: np.ndarray, b: np.ndarray, level: float = PREDICTION_LEVEL
) -> tuple[float, float, float]:
    """`(mean, low, high)` of the paired per-draw difference `a - b` of two draw arrays.

    Raises:
        ValueError: The arrays have different lengths (not drawn together).
    """
    import numpy as np

    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if first.shape != second.shape:
        raise ValueError(f"draws of different shapes: {first.shape} and {second.shape}")
    diff = first - second
    low, high = prediction_interval(diff, level)
    return float(diff.mean()), low, high
