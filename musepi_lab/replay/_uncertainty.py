"""The bill's uncertainty: what the documented rules cannot say, as a distribution whose
mean exists and is computed exactly.

A replay bills each request under its provider's documented rules, on a line (system
prompt, token ratio) estimated from the stream's own recorded requests (`_own`). What is
left open, per stream:

- the line itself: its posterior (co)variance (`_own.Terms`) gives each request's prompt a
  standard deviation; each draw moves every request of the stream by one normal deviate of
  it (a session's requests err alike), and by the requests' own errors around the line,
  an AR(1) series at the family's fitted relative noise and lag-1 correlation; the prompt
  part of the request's bill (its read and the rest, with a drawn miss's premium or hit's
  saving) scales with it, so no drawn bill is negative; the output (recorded,
  or estimated) does not (a normal factor, clipped at 0: every moment exists);
- the provider's unpredicted misses: a request the rules read mostly from cache misses at
  the stream's own miss rate, which has a beta posterior (the family's fitted rate and
  concentration as the prior, updated by the stream's recorded hits and misses); where one
  posterior holds for the whole stream (a replay's, from all its recorded requests), each
  draw takes the stream's rate from it (an exact beta draw), then misses request by
  request; where it changes from request to request (a causal judgement, each request's
  from the outcomes before it), each draw puts one mean-one log-normal factor on every
  request's posterior mean (capped at 1), of the posterior's relative variance
  `(1 - m) / (m (a + b + 1))`: the stream's rate is as unsure as in the whole-stream case
  and errs alike throughout the stream, while each request's mean stays its predictive
  probability given what came before. A miss pays the request's cache read
  beyond the warm prefix at the price of the rest (a write, or input for OpenAI);
- the unpredicted hits: a request whose cache the rules let expire, or a stream's first
  request the rules bill as a miss (its system prompt may sit in another stream's cache:
  the user's previous session, a sibling subagent; the provider's cache is shared by
  prefix), is served from cache anyway at the stream's own hit rate (same form), saving
  what it would have read (`Billed.expired`).

`expected_bill` is the distribution's mean, exact (the documented-rule bill, plus each
request's expected miss premium, less its expected hit saving; the line enters linearly),
so `ReplayResult.cost` is the same for every seed; `cost_draws` samples it, seeded, for the
interval. The draws of a stream depend only on the seed and the stream's label, so two
replays of one session (two strategies) share them: their per-draw difference is a paired
simulation of the difference of their bills (`cost_difference_interval`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ._own import Terms
from ._stream_bill import Billed

if TYPE_CHECKING:
    import numpy as np

COST_DRAWS = 400
"""Simulated bills behind one interval."""
COST_SEED = 20261203
"""Seed of the draws (shared by every replay, so two replays of one session are paired)."""
PREDICTION_LEVEL = 0.9
"""Level of `ReplayResult.cost_interval`."""


class Rate(NamedTuple):
    """A stream's own rate of an unpredicted event at one request: the mean of its beta
    posterior, and the posterior's parameters (0, 0: the rate is known to be `mean`)."""

    mean: float
    alpha: float = 0.0
    beta: float = 0.0


def beta_rates(
    events: Sequence[bool | None],
    prior: float,
    concentration: float,
    *,
    causal: bool,
    length: int | None = None,
) -> list[Rate]:
    """Each request's rate: a beta of mean `prior` and `concentration` (0: the rate is
    `prior` exactly, nothing is learned), updated by the stream's recorded outcomes
    (`events`: True an unpredicted event, False its absence, None not a candidate),
    from all of them (for `length` requests, default one per event), or causally from
    those before each request."""
    count = len(events) if causal or length is None else length
    if concentration <= 0 or not 0 < prior < 1:
        return [Rate(prior)] * count
    alpha, beta = prior * concentration, (1 - prior) * concentration

    def rate(a: float, b: float) -> Rate:
        return Rate(a / (a + b), a, b)

    if not causal:
        happened = sum(1 for e in events if e is True)
        absent = sum(1 for e in events if e is False)
        return [rate(alpha + happened, beta + absent)] * count
    out = []
    for event in events:
        out.append(rate(alpha, beta))
        if event is True:
            alpha += 1
        elif event is False:
            beta += 1
    return out


class StreamDraws(NamedTuple):
    """What the simulation needs of one stream.

    Attributes:
        label: The stream's label (seeds its draws).
        billed: Its billed requests.
        terms: The line each request was billed under.
        misses: Each request's own miss rate.
        hits: Each request's own unpredicted-hit rate.
        keep: Which requests count (e.g. those with recorded usage); None: all.
        noise: The family's relative error of one request's prompt around the line.
        correlation: Its lag-1 autocorrelation.
    """

    label: str
    billed: Sequence[Billed]
    terms: Sequence[Terms]
    misses: Sequence[Rate]
    hits: Sequence[Rate]
    keep: Sequence[bool] | None = None
    noise: float = 0.0
    correlation: float = 0.0


def _premium(b: Billed) -> float:
    """USD a miss adds to a request the rules read from cache."""
    if not b.hit or b.refused:
        return 0.0
    return max(b.bill.cache_read - b.warm, 0) * (b.price_rest - b.price_read) / 1e6


def _saving(b: Billed) -> float:
    """USD an unpredicted hit saves on a request whose cache the rules let expire (or a
    first request's system prompt, `Billed.expired`)."""
    if b.hit or b.refused or not b.expired:
        return 0.0
    return b.expired * (b.price_rest - b.price_read) / 1e6


def _kept(stream: StreamDraws) -> list[bool]:
    return list(stream.keep) if stream.keep is not None else [True] * len(stream.billed)


def expected_bill(streams: Sequence[StreamDraws]) -> float:
    """The mean of the bill's distribution (module notes), exact."""
    total = 0.0
    for stream in streams:
        for b, miss, hit, keep in zip(
            stream.billed, stream.misses, stream.hits, _kept(stream), strict=True
        ):
            if keep:
                total += b.bill.cost_usd + miss.mean * _premium(b) - hit.mean * _saving(b)
    return total


def _seed(seed: int, label: str) -> int:
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _line_factor(stream: StreamDraws, z: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Per draw and request: the factor a drawn line and request error put on the request's
    prompt (its read and the rest alike): `1 + (sd * z + noise * e) / prompt`, `sd` the
    line's posterior standard deviation at the request's estimate (one deviate `z` per
    stream and draw), `e` an AR(1) series of standard deviates with the family's lag-1
    correlation, scaled by its relative noise; at least 0."""
    import numpy as np

    conv = np.array([b.conversation for b in stream.billed], dtype=float)
    prompt = np.array([max(b.prompt, 1) for b in stream.billed], dtype=float)
    terms = stream.terms
    var = (
        np.array([t.var_system for t in terms])
        + 2 * conv * np.array([t.cov for t in terms])
        + conv**2 * np.array([t.var_ratio for t in terms])
    )
    line = np.sqrt(np.maximum(var, 0.0)) / prompt
    factor: np.ndarray = np.maximum(1.0 + line[None, :] * z[:, None] + eps, 0.0)
    return factor


def _ar1(rng: np.random.Generator, draws: int, n: int, noise: float, rho: float) -> np.ndarray:
    """Draws x requests of an AR(1) series of relative errors: sd `noise`, lag-1 `rho`."""
    import numpy as np

    shocks = rng.standard_normal((draws, n))
    out = np.empty((draws, n))
    if not n:
        return out
    out[:, 0] = shocks[:, 0]
    keep = np.sqrt(max(0.0, 1.0 - rho * rho))
    for k in range(1, n):
        out[:, k] = rho * out[:, k - 1] + keep * shocks[:, k]
    return noise * out


def _rate_draws(rates: Sequence[Rate], rng: np.random.Generator, draws: int) -> np.ndarray:
    """Per draw and request: the rate of the event (module notes)."""
    import numpy as np

    n = len(rates)
    first = rates[0] if rates else Rate(0.0)
    if all(r == first for r in rates) and first.alpha > 0 and first.beta > 0:
        return np.repeat(rng.beta(first.alpha, first.beta, draws)[:, None], n, axis=1)
    mean = np.array([r.mean for r in rates])
    size = np.array([r.alpha + r.beta for r in rates])
    if not (size > 0).any():
        known: np.ndarray = np.tile(mean, (draws, 1))
        return known
    # The beta's relative variance, (1 - m) / (m (a + b + 1)), on a mean-one log-normal
    # factor shared by the stream's requests in a draw (its rate errs alike throughout).
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where((size > 0) & (mean > 0), (1 - mean) / (mean * (size + 1)), 0.0)
    s = np.sqrt(np.log1p(relative))
    z = rng.standard_normal(draws)
    drawn: np.ndarray = np.minimum(mean[None, :] * np.exp(s[None, :] * z[:, None] - s**2 / 2), 1.0)
    return drawn


def cost_draws(
    streams: Sequence[StreamDraws],
    *,
    extra: float = 0.0,
    draws: int = COST_DRAWS,
    seed: int = COST_SEED,
) -> np.ndarray:
    """Simulated bills (USD), one per draw (module notes).

    Args:
        streams: The streams of the replay.
        extra: USD added to every draw (the summarizer calls).
        draws: How many bills to draw.
        seed: Seed of the draws.
    """
    import numpy as np

    bills = np.full(draws, float(extra))
    for stream in streams:
        n = len(stream.billed)
        if not n:
            continue
        rng = np.random.default_rng(_seed(seed, stream.label))
        z = rng.standard_normal(draws)
        u = rng.random((draws, 2, n))
        eps = _ar1(rng, draws, n, stream.noise, stream.correlation)
        cost = np.array([b.bill.cost_usd for b in stream.billed])
        output = np.array([b.bill.output_tokens * b.price_output / 1e6 for b in stream.billed])
        premium = np.array([_premium(b) for b in stream.billed])
        saving = np.array([_saving(b) for b in stream.billed])
        missed = u[:, 0, :] < _rate_draws(stream.misses, rng, draws)
        served = u[:, 1, :] < _rate_draws(stream.hits, rng, draws)
        factor = _line_factor(stream, z, eps)
        # A miss's premium and a hit's saving are prompt tokens too: on the drawn line.
        events = missed * premium - served * saving
        per = ((cost - output)[None, :] + events) * factor + output
        bills += per[:, np.array(_kept(stream), dtype=bool)].sum(axis=1)
    return bills


def prediction_interval(draws: np.ndarray, level: float = PREDICTION_LEVEL) -> tuple[float, float]:
    """The central `level` interval of simulated bills: `(low, high)` quantiles."""
    import numpy as np

    tail = (1.0 - level) / 2.0
    low, high = np.quantile(np.asarray(draws, dtype=float), [tail, 1.0 - tail])
    return float(low), float(high)


def pit_value(draws: np.ndarray, observed: float) -> float:
    """The probability integral transform of an observed bill: the share of draws at or
    below it (ties counted half, so a point mass on the observation gives 0.5)."""
    import numpy as np

    values = np.asarray(draws, dtype=float)
    if not len(values):
        return float("nan")
    below = float((values < observed).sum())
    ties = float((values == observed).sum())
    return (below + 0.5 * ties) / len(values)


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
