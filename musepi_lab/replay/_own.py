"""A stream's own system prompt and token ratio, estimated from its recorded requests.

The provider's prompt tokens of a request are, to a good approximation, a line in the
replay's billed estimate of the conversation `e`: `recorded = system + ratio * e`. The
family fit (`replay.calibrate`) gives each harness version a system prompt and each
tokenizer family a ratio, but a session's own are off both (issue 23 measured ratios of 1.08
to 1.47 against a fitted 1.59; a user's tools and instructions move the system prompt by
thousands of tokens). So each stream estimates its own line from its recorded requests,
starting from the family fit as the prior (Bayesian linear regression, closed form in two
dimensions):

- prior: `system ~ N(S0, system_sd²)`, `ratio ~ N(r0, ratio_sd²)`, independent;
- each recorded request is an observation `y = system + ratio * e` with a relative error
  of `noise` (`noise * y` standard deviation), the family's fitted within-session scatter,
  widened for the autocorrelation of consecutive requests (`Prior.widened`), so a long
  session does not claim more certainty than it has;
- `own_terms(..., causal=False)` gives every request the posterior from all observations
  alike (a counterfactual replay: its requests are not the recorded ones, so one line for
  the whole session);
  `own_terms(..., causal=True)` gives request k the posterior from the observations before
  k only, starting from the prior (the judgement of the `recorded` strategy: no judged
  request feeds its own estimate), each earlier observation's weight discounted by the
  fitted `memory` per later one, so the estimate follows a line that drifts.

A stream without recorded usage keeps the prior: the family fit is its answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from ._billing import RequestSpec

MIN_NOISE = 1e-3
"""Floor of the relative error of one observation (a zero would give it infinite weight)."""
MIN_SYSTEM_SD = 1.0
MIN_RATIO_SD = 1e-6


class Prior(NamedTuple):
    """The family fit as a prior on a stream's line.

    Attributes:
        system: Prior mean of the system prompt (provider tokens).
        ratio: Prior mean of the token ratio.
        system_sd: Its standard deviation between sessions (tokens).
        ratio_sd: The ratio's (absolute).
        noise: Relative error of one request's prompt around the line.
        correlation: The lag-1 autocorrelation of those errors; an observation weighs
            as `(1 - correlation) / (1 + correlation)` independent ones (the effective
            count of an AR(1) series), so a long session does not claim more certainty
            than its independent information gives.
        memory: The weight an observation keeps per later observation (1: all count
            alike); below 1 a causal estimate follows a line that drifts along the
            session (the ratio of late content is not that of early content).
    """

    system: float
    ratio: float
    system_sd: float
    ratio_sd: float
    noise: float
    correlation: float = 0.0
    memory: float = 1.0

    @property
    def widened(self) -> float:
        """The noise an observation is weighed with (`correlation` taken in)."""
        rho = min(max(self.correlation, 0.0), 0.95)
        return self.noise * math.sqrt((1 + rho) / (1 - rho))


class Terms(NamedTuple):
    """The line one request is billed under, with its posterior (co)variance.

    Attributes:
        system: System prompt tokens.
        ratio: Provider tokens per billed unit of the conversation.
        var_system: Variance of `system`.
        var_ratio: Variance of `ratio`.
        cov: Their covariance.
    """

    system: float
    ratio: float
    var_system: float = 0.0
    var_ratio: float = 0.0
    cov: float = 0.0


class Observation(NamedTuple):
    """A recorded request usable for the line: its index in the stream (`request`), the
    billed estimate of its conversation and its recorded prompt tokens."""

    request: int
    estimate: float
    recorded: float


def observations(specs: Sequence[RequestSpec], *, compacted: bool = False) -> list[Observation]:
    """The requests of a walk that observe the line: recorded usage with prompt tokens,
    answered (not refused), and (unless `compacted`) no compaction before them in the
    stream (after one the rebuilt context is the replay's reconstruction, not what was
    sent: a causal estimate learns its system prompt again after each one, a
    whole-session one leaves it out)."""
    out = []
    for index, spec in enumerate(specs):
        usage = spec.recorded
        if usage is None or spec.refused or (spec.compacted and not compacted):
            continue
        if usage.prompt <= 0:
            continue
        out.append(Observation(index, float(spec.conversation), float(usage.prompt)))
    return out


class _Posterior:
    """The line's mean and covariance (a two-state Kalman filter): each observation
    updates them; before it, the covariance is widened by 1 / `memory` (exponential
    forgetting of what came before); at a compaction the system prompt's variance grows by
    the prior's, since what the agent sends around a rebuilt context differs from what it
    sent before (Claude Code reattaches files and instructions beside its summary)."""

    __slots__ = ("jump", "memory", "p00", "p01", "p11", "ratio", "system")

    def __init__(self, prior: Prior) -> None:
        sd_s = max(prior.system_sd, MIN_SYSTEM_SD)
        sd_r = max(prior.ratio_sd, MIN_RATIO_SD)
        self.system, self.ratio = prior.system, prior.ratio
        self.p00, self.p01, self.p11 = sd_s**2, 0.0, sd_r**2
        self.memory, self.jump = prior.memory, sd_s**2

    def add(self, estimate: float, recorded: float, noise: float) -> None:
        m = self.memory
        p00, p01, p11 = self.p00 / m, self.p01 / m, self.p11 / m
        # The observation y = system + ratio * e, with variance (noise * y)^2.
        ph0, ph1 = p00 + p01 * estimate, p01 + p11 * estimate
        s = ph0 + ph1 * estimate + (max(noise, MIN_NOISE) * recorded) ** 2
        k0, k1 = ph0 / s, ph1 / s
        residual = recorded - (self.system + self.ratio * estimate)
        self.system += k0 * residual
        self.ratio += k1 * residual
        self.p00, self.p01, self.p11 = p00 - k0 * ph0, p01 - k0 * ph1, p11 - k1 * ph1

    def compacted(self) -> None:
        self.p00 += self.jump

    def terms(self) -> Terms:
        return Terms(self.system, self.ratio, self.p00, self.p11, self.p01)


def own_terms(
    requests: int,
    found: Sequence[Observation],
    prior: Prior,
    *,
    causal: bool,
    compactions: Sequence[int] = (),
) -> list[Terms]:
    """Each request's line (module notes): from every observation, or causally from
    those before it (`compactions`: the requests that follow a compaction, where the
    system prompt is learned again)."""
    if prior.system_sd <= 0 and prior.ratio_sd <= 0:
        return fixed_terms(requests, prior.system, prior.ratio)  # no spread: known exactly
    posterior = _Posterior(prior if causal else prior._replace(memory=1.0))
    if not causal:
        for obs in found:
            posterior.add(obs.estimate, obs.recorded, prior.widened)
        return [posterior.terms()] * requests
    out: list[Terms] = []
    by_index = {obs.request: obs for obs in found}
    jumps = set(compactions)
    for k in range(requests):
        if k in jumps:
            posterior.compacted()
        out.append(posterior.terms())
        seen = by_index.get(k)
        if seen is not None:
            posterior.add(seen.estimate, seen.recorded, prior.widened)
    return out


def fixed_terms(requests: int, system: float, ratio: float) -> list[Terms]:
    """A line known exactly for every request (a caller's `system_tokens`, a plain
    rules bill at the family fit)."""
    return [Terms(system, ratio)] * requests
