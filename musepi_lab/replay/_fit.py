"""`calibrate`: fit the family priors of the replay's cache and token model on a set of
sessions, and return them as one frozen `Calibration`.

Every request stream of every session enters (main path, inline sidechains, linked subagent
sessions; not the agent's compaction runs, whose prompt is the main conversation's), each
walked once under the `recorded` strategy (`_walks.recorded_walk`, the context the agent
sent) and billed again under each step's parameters. Per tokenizer family (`anthropic`,
`openai`, `neutral`), in this order:

1. The lines: one weighted least-squares fit per family of recorded prompt tokens against
   the billed estimate of the conversation (`_own.observations`: requests before any
   compaction), with one ratio per family and one intercept (the system prompt) per harness
   table key and version (`_cache.table_key`: a subagent's stream and a family of its own);
   each request weighted by 1 / recorded² (relative error), each stream's by 1 / their number.
2. The spreads around them, from each stream's own least-squares line (streams with at least
   `MIN_FIT_REQUESTS` observations spread over their estimate): of the log ratio and of the
   system prompt between streams (pooled, over streams less groups), of the system prompt
   between consecutive fitted versions of a harness (`_version_spread`: a stream whose
   version has no row of its own is that much less sure of the nearest), and per family, within
   a stream, the relative scatter of requests around its own line (a robust scale) and the
   lag-1 autocorrelation of consecutive residuals (`_own.Prior.widened` weighs an
   observation by it).
3. The warm prefix per table key and version: the median first request's recorded cache read
   (0 below `MIN_CACHED_PREFIX`).
4. The memory of a causal line (`_own.Prior.memory`): of `MEMORY_CANDIDATES`, the one under
   which the documented-rule requests billed one step ahead (each request's line from the
   requests before it) err least in cost (`causal_error`).
5. OpenAI's TTL, which the documentation leaves between 5 and 10 minutes: of
   `TTL_CANDIDATES`, the one under which the replay and the record agree most often on
   whether a request read its prompt from cache (ties: nearest the middle).
6. With each stream billed on its own line (`ratio="session"`): per harness table key (a
   harness's provider behaves alike across its sessions: pi's fixtures miss 7%, Claude
   Code's sessions under 1%) and per family (for keys without a row), the miss rate (of the
   requests the rules read mostly from cache, the share the provider recorded mostly as a
   miss), the unpredicted-hit rate (of those whose cache the rules let expire, and of the
   streams' first requests the rules bill as misses, the share the provider served from
   cache), how much streams' own miss rates differ beyond chance
   (`_miss_concentration`, a beta-binomial maximum likelihood), and how much the harness
   keys' rates differ around their family's (`_key_concentration`, the same with keys in
   the place of streams, under a hyperprior: the prior of a harness the fit never saw).

A session enters the fit once (copies, by session id, are dropped) and is recorded in the
result's `sessions`, so a judgement of one of them is refused.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..session._session import Session
from ._cache import MIN_CACHED_PREFIX, harness_version, table_key
from ._calibrated import DEFAULT_CALIBRATION, FAMILIES, Calibration, TokenTable
from ._own import Observation, observations
from ._replay import stream_family, stream_terms
from ._stream_bill import Billed, bill_stream
from ._streams import Stream
from ._walk import Walk
from ._walks import FIT_STRATEGY, recorded_walk, streams_of

__all__ = ["FIT_STRATEGY", "UNIT_CALIBRATION", "calibrate", "fitted_source"]

Group = tuple[str, tuple[int, ...]]
"""A harness table key and its version's major.minor: what one system prompt is fitted for."""

TTL_CANDIDATES: tuple[float, ...] = (300.0, 450.0, 600.0)
"""OpenAI TTLs tried (the documented 5 to 10 minutes and its middle), in seconds."""
OPENAI_TTL_MIDDLE = 450.0
"""The tie-break of the TTL fit, and the TTL kept when no OpenAI session is fitted."""
CONCENTRATIONS: tuple[float, ...] = tuple(round(10 ** (x / 4), 3) for x in range(-4, 17))
"""The beta concentrations `_miss_concentration` chooses from (0.1 to 10,000, a quarter
decade apart)."""
KEY_HYPERPRIOR = 1.5
"""The exponent of the hyperprior `p(k) ∝ k^-1.5` on the between-key concentration
(`_key_concentration`): the prior `p(α, β) ∝ (α + β)^-5/2` of Gelman et al., *Bayesian
Data Analysis* (3rd ed., §5.3), in mean and concentration. A family has two to four harness
keys; over so few groups the likelihood alone is flat up to an infinite concentration
whenever the seen keys happen to miss alike, which would freeze an unseen harness's rate at
the family's (chosen after the leave-one-source-out figures: see the README)."""
MIN_FIT_REQUESTS = 5
"""Observations a stream needs for its own line to enter the spreads."""
MAX_CORRELATION = 0.9
"""Cap of the residuals' lag-1 autocorrelation (the widening stays finite)."""
MEMORY_CANDIDATES: tuple[float, ...] = (1.0, 0.98, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)
"""The observation weights per later observation a causal line is tried with."""

UNIT_CALIBRATION = Calibration(
    models=tuple(
        dataclasses.replace(
            m,
            token_ratio=1.0,
            ratio_spread=0.0,
            system_spread=0.0,
            noise=0.0,
            noise_correlation=0.0,
            miss_rate=0.0,
            miss_concentration=0.0,
            key_concentration=0.0,
            hit_rate=0.0,
            memory=1.0,
            version_spread=0.0,
        )
        for m in DEFAULT_CALIBRATION.models
    )
)
"""Nothing fitted: ratio 1, no system prompt, no warm prefix, no misses."""


@dataclass(frozen=True)
class FitStream:
    """One stream as the fit sees it.

    Attributes:
        stream: The stream.
        session_id: The id of the session it belongs to.
        walk: Its `recorded` walk.
        family: Its tokenizer family.
        group: Its harness table key (with family) and version's major.minor.
        found: Its observations of the line.
    """

    stream: Stream
    session_id: str
    walk: Walk
    family: str
    group: Group
    found: tuple[Observation, ...]


def fit_streams(sessions: Iterable[Session], profile: str = "musepi") -> list[FitStream]:
    """The streams a fit uses (module notes), each walked under `recorded`."""
    out = []
    for session in sessions:
        streams, _ = streams_of(session)
        for stream in streams:
            if stream.kind == "compaction":
                continue
            walked = recorded_walk(stream, profile)
            if not walked.specs:
                continue
            family = stream_family(walked, DEFAULT_CALIBRATION)
            header = stream.session.header
            _, version = harness_version(header)
            group = (table_key(header, family), version[:2])
            found = tuple(observations(walked.specs))
            out.append(FitStream(stream, session.id, walked, family, group, found))
    return out


def _lines(streams: Sequence[FitStream]) -> tuple[dict[str, float], dict[Group, int]]:
    """Step 1's weighted least squares: the ratio per family, the intercept per group."""
    import numpy as np

    ratios: dict[str, float] = {}
    intercepts: dict[Group, int] = {}
    for family in FAMILIES:
        part = [s for s in streams if s.family == family and s.found]
        if not part:
            continue
        groups = sorted({s.group for s in part})
        rows, target, weight = [], [], []
        for s in part:
            for obs in s.found:
                row = [obs.estimate] + [1.0 if s.group == g else 0.0 for g in groups]
                rows.append(row)
                target.append(obs.recorded)
                weight.append(math.sqrt(1.0 / (len(s.found) * obs.recorded**2)))
        design, y, w = np.array(rows), np.array(target), np.array(weight)
        solution = np.linalg.lstsq(design * w[:, None], y * w, rcond=None)[0]
        if len(target) < MIN_FIT_REQUESTS or not solution[0] > 0:
            # Too little to tell a ratio from a system prompt: the counter's own scale.
            solution = _intercepts_at(design, y, w, 1.0)
        ratios[family] = float(solution[0])
        for j, g in enumerate(groups):
            intercepts[g] = max(0, round(float(solution[1 + j])))
    return ratios, intercepts


def _intercepts_at(design: Any, y: Any, w: Any, ratio: float) -> Any:
    """Step 1's least squares with the ratio fixed: `[ratio, intercepts...]`."""
    import numpy as np

    rest = np.linalg.lstsq(design[:, 1:] * w[:, None], (y - ratio * design[:, 0]) * w, rcond=None)
    return np.concatenate([[ratio], rest[0]])


def own_line(found: Sequence[Observation]) -> tuple[float, float, list[float]] | None:
    """A stream's own least-squares line (relative weights): `(system, ratio, relative
    residuals in order)`, or None with too few observations or no spread of estimates."""
    import numpy as np

    if len(found) < MIN_FIT_REQUESTS:
        return None
    e = np.array([o.estimate for o in found])
    y = np.array([o.recorded for o in found])
    if np.ptp(e) <= 0:
        return None
    w = 1.0 / y
    design = np.c_[np.ones(len(e)), e]
    system, ratio = np.linalg.lstsq(design * w[:, None], y * w, rcond=None)[0]
    residuals = (y - (system + ratio * e)) / y
    return float(system), float(ratio), [float(r) for r in residuals]


@dataclass(frozen=True)
class Spreads:
    """Step 2's figures: the log-ratio and system prompt spreads between streams (pooled
    over families), and per family the within-stream relative noise (a robust scale:
    1.4826 times the median absolute residual) and its lag-1 autocorrelation."""

    ratio: float
    system: float
    noise: dict[str, float]
    correlation: dict[str, float]


def _spreads(
    streams: Sequence[FitStream], ratios: dict[str, float], intercepts: dict[Group, int]
) -> Spreads:
    log_devs: list[float] = []
    sys_devs: list[float] = []
    residuals: dict[str, list[list[float]]] = {}
    families, groups = set(), set()
    for s in streams:
        line = own_line(s.found)
        if line is None or s.family not in ratios:
            continue
        system, ratio, own = line
        if ratio > 0:
            log_devs.append(math.log(ratio / ratios[s.family]))
            families.add(s.family)
        sys_devs.append(system - intercepts.get(s.group, 0))
        groups.add(s.group)
        residuals.setdefault(s.family, []).append(own)
    pooled = [r for runs in residuals.values() for r in runs]
    noise, correlation = {}, {}
    for family in FAMILIES:
        runs = residuals.get(family) or pooled
        noise[family], correlation[family] = _noise(runs)
    return Spreads(
        _pooled(log_devs, len(log_devs) - len(families)),
        _pooled(sys_devs, len(sys_devs) - len(groups)),
        noise,
        correlation,
    )


def _noise(runs: Sequence[Sequence[float]]) -> tuple[float, float]:
    """A robust scale of residuals (1.4826 MAD) and their lag-1 autocorrelation (of the
    residuals within that scale's 3 sigma, so one outlier does not set it)."""
    values = [r for run in runs for r in run]
    if not values:
        return 0.0, 0.0
    scale = 1.4826 * median(abs(v) for v in values)
    if scale <= 0:
        return 0.0, 0.0
    lagged = square = 0.0
    for run in runs:
        kept = [max(-3 * scale, min(3 * scale, r)) for r in run]
        lagged += sum(a * b for a, b in itertools.pairwise(kept))
        square += sum(a * a for a in kept[:-1])
    rho = lagged / square if square > 0 else 0.0
    return scale, min(max(rho, 0.0), MAX_CORRELATION)


def _pooled(deviations: Sequence[float], freedom: int) -> float:
    if freedom <= 0:
        return 0.0
    return math.sqrt(sum(d * d for d in deviations) / freedom)


def _table(values: dict[Group, int]) -> TokenTable:
    """`(key, version, tokens)` rows, newest version first per key (a stream takes the
    newest row its version reaches, `_cache.table_row`)."""
    out = []
    for key in sorted({k for k, _ in values}):
        for version in sorted((v for k, v in values if k == key), reverse=True):
            out.append((key, version, values[(key, version)]))
    return tuple(out)


def _version_spread(intercepts: dict[Group, int]) -> float:
    """The root mean square of log(tokens / previous version's tokens) over consecutive
    fitted versions of each key (both above 0), pooled; 0 with no such pair."""
    squares = []
    for key in {k for k, _ in intercepts}:
        versions = sorted(v for k, v in intercepts if k == key)
        for older, newer in itertools.pairwise(versions):
            a, b = intercepts[(key, older)], intercepts[(key, newer)]
            if a > 0 and b > 0:
                squares.append(math.log(b / a) ** 2)
    return math.sqrt(sum(squares) / len(squares)) if squares else 0.0


def billed_own(s: FitStream, fit: Calibration, ratio: str = "session") -> list[Billed]:
    """A fit stream's recorded walk billed under `fit`, on its own line (or `ratio`)."""
    terms = stream_terms(s.stream, s.walk, fit, "musepi", ratio)
    warm = fit.warm_prefix_tokens(s.stream.session.header, s.family)
    billed, _ = bill_stream(s.walk.specs, terms, fit, warm=warm)
    return billed


def outcomes(s: FitStream, billed: Sequence[Billed]) -> list[tuple[bool, bool, bool]]:
    """Per request with recorded usage: `(recorded hit, replayed hit of the stream's own
    cache, cache expired)` (a request reading only the warm prefix is no replayed hit:
    it has nothing of its own to miss)."""
    out = []
    for spec, b in zip(s.walk.specs, billed, strict=True):
        usage = spec.recorded
        if usage is None or b.refused or usage.prompt <= 0 or b.prompt <= 0:
            continue
        own = b.hit and b.bill.cache_read > b.warm
        out.append((usage.cache_read * 2 >= usage.prompt, own, b.expired > 0))
    return out


def causal_error(streams: Sequence[FitStream], fit: Calibration) -> float:
    """The median absolute relative error of the cost of each documented-rule request
    (the replay and the record agree on whether it read from cache) billed causally (the
    line a judgement bills: `stream_terms(ratio="causal")`), over every stream's requests
    but its first (which only the prior predicts). The cost, not the prompt: a line that
    follows the last few prompts predicts the next level well but its slope, which the
    writes are billed by, badly."""
    errors: list[float] = []
    for s in streams:
        terms = stream_terms(s.stream, s.walk, fit, "musepi", "causal")
        warm = fit.warm_prefix_tokens(s.stream.session.header, s.family)
        billed, _ = bill_stream(s.walk.specs, terms, fit, warm=warm)
        for index, (spec, b) in enumerate(zip(s.walk.specs, billed, strict=True)):
            usage = spec.recorded
            if index == 0 or usage is None or b.refused or usage.prompt <= 0 or usage.cost <= 0:
                continue
            if (usage.cache_read * 2 >= usage.prompt) == b.hit:
                errors.append(abs(b.bill.cost_usd / usage.cost - 1.0))
    return median(errors) if errors else 0.0


def _fit_memory(fit: Calibration, streams: Sequence[FitStream]) -> Calibration:
    """The memory of `MEMORY_CANDIDATES` whose causal prompts err least (`causal_error`;
    ties: the longer)."""
    scores = []
    for memory in MEMORY_CANDIDATES:
        trial = fit
        for family in FAMILIES:
            trial = trial.with_family(family, memory=memory)
        scores.append((round(causal_error(streams, trial), 6), -memory, trial))
    return min(scores, key=lambda x: (x[0], x[1]))[2]


def _fit_ttl(fit: Calibration, streams: Sequence[FitStream]) -> Calibration:
    """Step 4: OpenAI's TTL of `TTL_CANDIDATES` with the best hit agreement."""
    chosen = [s for s in streams if s.family == "openai"]
    if not chosen:
        return fit.with_family("openai", ttl_seconds=OPENAI_TTL_MIDDLE)
    scores = []
    for ttl in TTL_CANDIDATES:
        trial = fit.with_family("openai", ttl_seconds=ttl)
        agree = total = 0
        for s in chosen:
            for recorded, replayed, _ in outcomes(s, billed_own(s, trial)):
                agree += recorded == replayed
                total += 1
        scores.append((-(agree / total if total else 0.0), abs(ttl - OPENAI_TTL_MIDDLE), ttl))
    return fit.with_family("openai", ttl_seconds=min(scores)[2])


def _miss_concentration(
    per_stream: Sequence[tuple[str, int, int]], rates: dict[str, float], hyper: float = 0.0
) -> float:
    """How alike the streams' own miss rates are: the beta concentration of
    `CONCENTRATIONS` under which the streams' miss counts (`(key, replayed hits, misses)`)
    are likeliest (beta-binomial, each key's beta centred on its rate, pooled; `hyper`: the
    exponent of a hyperprior `k^-hyper`, the mode of the posterior then); 0 when no key has
    a rate strictly between 0 and 1 (nothing to learn)."""
    usable = [(f, n, x) for f, n, x in per_stream if n and 0 < rates.get(f, 0.0) < 1]
    if not usable:
        return 0.0

    def loglik(k: float) -> float:
        total = 0.0
        for family, n, x in usable:
            a, b = rates[family] * k, (1 - rates[family]) * k
            total += (
                math.lgamma(x + a)
                + math.lgamma(n - x + b)
                - math.lgamma(n + k)
                - math.lgamma(a)
                - math.lgamma(b)
                + math.lgamma(k)
            )
        return total - hyper * math.log(k)

    return max(CONCENTRATIONS, key=loglik)


def _key_concentration(
    by_key: dict[str, list[int]],
    by_family: dict[str, list[int]],
    shrunk: Callable[[int, int, int], float],
) -> float:
    """How alike the harness keys' miss rates are (`CacheModel.key_concentration`): the
    beta-binomial concentration of each key's pooled miss count around its family's rate
    (`_miss_concentration` with keys in the place of streams)."""
    family_of = {key: key.rsplit("@", 1)[-1] for key in by_key}
    rates = {f: shrunk(m, n, 0) for f, (m, n, _, _) in by_family.items()}
    per_key = [(family_of[key], n, m) for key, (m, n, _, _) in by_key.items()]
    return _miss_concentration(per_key, rates, KEY_HYPERPRIOR)


def _fit_rates(fit: Calibration, streams: Sequence[FitStream]) -> Calibration:
    """Step 6: miss and unpredicted-hit rates per harness key and per family, and the
    concentration."""
    by_key: dict[str, list[int]] = {}
    by_family: dict[str, list[int]] = {}
    per_stream: list[tuple[str, int, int]] = []
    for s in streams:
        found = outcomes(s, billed_own(s, fit))
        replayed_hits = [r for r, h, _ in found if h]
        missed = sum(1 for r in replayed_hits if not r)
        served = [r for r, h, expired in found if not h and expired]
        tally = (missed, len(replayed_hits), sum(served), len(served))
        for tallies, key in ((by_key, s.group[0]), (by_family, s.family)):
            row = tallies.setdefault(key, [0, 0, 0, 0])
            for i, value in enumerate(tally):
                row[i] += value
        per_stream.append((s.group[0], len(replayed_hits), missed))

    def rate(hits: float, n: float) -> float:
        return hits / n if n else 0.0

    total = [sum(v[i] for v in by_family.values()) for i in range(4)]
    pooled = (rate(total[0], total[1]), rate(total[2], total[3]))

    def shrunk(m: int, n: int, kind: int) -> float:
        # One pseudo-request at the pooled rate: a key whose few requests never missed
        # keeps a rate above 0, which its sessions' own requests can then move.
        return rate(m + pooled[kind], n + 1)

    concentration = _miss_concentration(
        per_stream, {k: shrunk(v[0], v[1], 0) for k, v in by_key.items()}
    )
    between = _key_concentration(by_key, by_family, shrunk)
    for family, (m, n, h, c) in by_family.items():
        fit = fit.with_family(
            family,
            miss_rate=shrunk(m, n, 0),
            miss_concentration=concentration,
            key_concentration=between,
            hit_rate=shrunk(h, c, 1),
        )
    table = tuple(
        (key, shrunk(m, n, 0), shrunk(h, c, 1)) for key, (m, n, h, c) in sorted(by_key.items())
    )
    return fit.copy_with(event_rates=table)


def calibrate(
    sessions: Iterable[Session], *, fitted: str | None = None, exclude: Collection[str] = ()
) -> Calibration:
    """Fit the cache and token model's family priors on `sessions` (module notes).

    Args:
        sessions: The sessions to fit on; they must record usage.
        fitted: The fit's date (default: today, UTC).
        exclude: Session ids that must not enter the fit (the judged ones).

    Returns:
        The calibration, its `sessions` the ids fitted on.

    Raises:
        ValueError: No session, a session of `exclude`, or no request with usage.
    """
    unique = list({s.id: s for s in sessions}.values())
    if not unique:
        raise ValueError("calibrate needs at least one session")
    refused = sorted({s.id for s in unique} & set(exclude))
    if refused:
        raise ValueError(f"sessions {refused} are excluded from the fit (judged on)")
    streams = fit_streams(unique)
    if not any(s.found or any(x.recorded for x in s.walk.specs) for s in streams):
        raise ValueError("no request of these sessions recorded usage: nothing to fit")
    ratios, intercepts = _lines(streams)
    spreads = _spreads(streams, ratios, intercepts)
    firsts: dict[Group, list[int]] = {}
    for s in streams:
        usage = s.walk.specs[0].recorded
        if usage is not None:
            firsts.setdefault(s.group, []).append(usage.cache_read)
    warm = {g: _warm(v) for g, v in firsts.items()}
    fit = UNIT_CALIBRATION.copy_with(system_prompt=_table(intercepts), warm_prefix=_table(warm))
    for family in FAMILIES:
        fit = fit.with_family(
            family,
            token_ratio=ratios.get(family, 1.0),
            ratio_spread=spreads.ratio,
            system_spread=spreads.system,
            noise=spreads.noise[family],
            noise_correlation=spreads.correlation[family],
            version_spread=_version_spread(intercepts),
        )
    fit = _fit_rates(_fit_ttl(_fit_memory(fit, streams), streams), streams)
    day = fitted if fitted is not None else datetime.datetime.now(datetime.UTC).date().isoformat()
    return fit.copy_with(sessions=tuple(sorted(s.id for s in unique)), fitted=day)


def _warm(reads: Sequence[int]) -> int:
    value = median(reads)
    return round(value) if value >= MIN_CACHED_PREFIX else 0


def fitted_source(calibration: Calibration, paths: Iterable[str]) -> str:
    """The text of `_fitted.py` for a calibration (what `perf/calibration_judge.py
    --write-defaults` writes, already in ruff's format), listing the corpus files it was
    fitted on."""

    def family_map(field: str) -> str:
        items = "".join(
            f'    "{f}": {getattr(calibration.family(f), field)!r},\n' for f in FAMILIES
        )
        return "{\n" + items + "}"

    def table(rows: TokenTable) -> str:
        lines = "".join(f'    ("{h}", {v!r}, {t:_}),\n' for h, v, t in rows)
        return "(\n" + lines + ")" if rows else "()"

    def rates(rows: Sequence[tuple[str, float, float]]) -> str:
        lines = "".join(f'    ("{k}", {m!r}, {h!r}),\n' for k, m, h in rows)
        return "(\n" + lines + ")" if rows else "()"

    listed = "".join(f"#   {p}\n" for p in paths)
    sessions = "".join(f'    "{s}",\n' for s in calibration.sessions)
    ttl = calibration.model("openai").ttl_seconds
    maps: list[tuple[str, Any]] = [
        ("TOKEN_RATIO", "token_ratio"),
        ("RATIO_SPREAD", "ratio_spread"),
        ("SYSTEM_SPREAD", "system_spread"),
        ("NOISE", "noise"),
        ("NOISE_CORRELATION", "noise_correlation"),
        ("MISS_RATE", "miss_rate"),
        ("MISS_CONCENTRATION", "miss_concentration"),
        ("KEY_CONCENTRATION", "key_concentration"),
        ("HIT_RATE", "hit_rate"),
        ("MEMORY", "memory"),
        ("VERSION_SPREAD", "version_spread"),
    ]
    families = "".join(f"{name}: dict[str, float] = {family_map(f)}\n" for name, f in maps)
    return (
        '"""The shipped calibration\'s fitted values: `replay.calibrate` on every session of\n'
        "`replay.CALIBRATION_SPLIT`. Generated by `python perf/calibration_judge.py\n"
        '--write-defaults`; do not edit by hand (a test refits and compares)."""\n\n'
        "# Fitted on these corpus files (relative to the corpus root):\n"
        f"{listed}\n"
        f'FIT_DATE = "{calibration.fitted}"\n'
        f"FIT_SESSIONS: tuple[str, ...] = (\n{sessions})\n"
        f"{families}"
        f"OPENAI_TTL_SECONDS = {ttl!r}\n"
        "SYSTEM_PROMPT_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = "
        f"{table(calibration.system_prompt)}\n"
        "WARM_PREFIX_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = "
        f"{table(calibration.warm_prefix)}\n"
        "EVENT_RATES: tuple[tuple[str, float, float], ...] = "
        f"{rates(calibration.event_rates)}\n"
    )
