"""`calibrate`: fit the free parameters of the replay's cache and token model on a set of
sessions (the train split), and return them as one frozen `Calibration`.

What is fitted, per tokenizer family (`anthropic`, `openai`), from the sessions' recorded
usage, in this order (each step replays the sessions under what the steps before fitted,
strategy `recorded`, so a recorded compaction rebuilds the context the agent sent):

1. The token ratio and the system prompt: one weighted least-squares line per family,
   recorded prompt tokens = system prompt of the harness version + ratio x the replay's
   billed estimate, over the requests before any recorded compaction whose estimate is at
   least `MIN_CACHED_PREFIX`; each request weighted by 1 / recorded² (relative error) and
   each session's requests by 1 / their number (every session counts once). The ratio's
   spread: the pooled standard deviation of the natural log of each session's own ratio
   (the median of its requests' `(recorded - system prompt) / estimate`) around its
   family's line, over the sessions with at least `MIN_FIT_REQUESTS` such requests
   (`_spread`), widened to a new session's (times `sqrt(1 + 1/n)` for n sessions) and
   drawn from Student's t with the estimate's degrees of freedom (`ratio_freedom`).
2. The warm prefix per harness version: the median over its sessions of the first
   request's recorded cache read (0 below `MIN_CACHED_PREFIX`).
3. OpenAI's TTL, which the documentation leaves between 5 and 10 minutes: of
   `TTL_CANDIDATES`, the one under which the replay and the record agree most often on
   whether a request read its prompt from cache (ties: nearest the middle).
4. The miss rate: of the requests the replay reads mostly from cache, the share the
   provider recorded mostly as a miss; and how much sessions' own rates differ beyond
   chance (`_miss_concentration`, the beta concentration the simulation draws them from).

A session enters the fit once (copies, by session id, are dropped) and is recorded in the
result's `sessions`, so a judgement of one of them is refused.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, cast

from ..session._session import Session
from ._cache import MIN_CACHED_PREFIX, harness_version
from ._calibrated import DEFAULT_CALIBRATION, FAMILIES, Calibration, TokenTable
from ._calibration import calibration_rows
from ._replay import replay
from ._result import ReplayResult

if TYPE_CHECKING:
    import pandas as pd

Group = tuple[str, tuple[int, ...]]
"""A harness and its version's major.minor: what one system prompt is fitted for."""

FIT_STRATEGY = "recorded"
"""The strategy a calibration replays with (follows the agent's own compactions)."""
TTL_CANDIDATES: tuple[float, ...] = (300.0, 450.0, 600.0)
"""OpenAI TTLs tried (the documented 5 to 10 minutes and its middle), in seconds."""
OPENAI_TTL_MIDDLE = 450.0
"""The tie-break of the TTL fit, and the TTL kept when no OpenAI session is fitted."""
MIN_MISS_HITS = 20
"""Replayed hits a session needs for its own miss rate to enter `_miss_concentration`."""
MIN_FIT_REQUESTS = 5
"""Requests a session needs for its own ratio to enter the spread (the median of fewer,
beside a system prompt that dwarfs them, says little about a ratio)."""
PROMPT_PARTS: tuple[str, ...] = ("input", "cache_read", "cache_write")

UNIT_CALIBRATION = Calibration(
    models=tuple(
        dataclasses.replace(
            m,
            token_ratio=1.0,
            ratio_spread=0.0,
            ratio_freedom=0.0,
            miss_rate=0.0,
            miss_concentration=0.0,
        )
        for m in DEFAULT_CALIBRATION.models
    )
)
"""Nothing fitted: ratio 1, no system prompt, no warm prefix, no misses (step 1's replay
bills the plain billed estimate, which the line is fitted against)."""


def fit_rows(session: Session, calibration: Calibration) -> pd.DataFrame:
    """`result_rows` of a `FIT_STRATEGY` replay of the session under `calibration`."""
    result = replay(session, FIT_STRATEGY, window=10**9, calibration=calibration)
    return result_rows(session, result)


def result_rows(session: Session, result: ReplayResult) -> pd.DataFrame:
    """`calibration_rows` of a replay, with the request's `family`, the session's
    `session_id`, harness `group` and `first` (its first request with usage),
    `recorded_prompt`, `replayed_prompt` and whether each read its prompt mostly from
    cache (`recorded_hit`, `replayed_hit`)."""
    calibration = result.calibration
    rows = calibration_rows(session, result)
    harness, version = harness_version(session.header)
    recorded = rows[[f"recorded_{p}" for p in PROMPT_PARTS]].sum(axis=1)
    replayed = rows[[f"replayed_{p}" for p in PROMPT_PARTS]].sum(axis=1)
    return rows.assign(
        family=[calibration.model(str(n)).provider for n in rows["cache_model"]],
        session_id=session.id,
        group=cast(Any, [(harness, version[:2])] * len(rows)),
        first=[i == 0 for i in range(len(rows))],
        recorded_prompt=recorded,
        replayed_prompt=replayed,
        recorded_hit=(rows["recorded_cache_read"] * 2 >= recorded) & (recorded > 0),
        replayed_hit=(rows["replayed_cache_read"] * 2 >= replayed) & (replayed > 0),
    )


def _lines(rows: pd.DataFrame) -> tuple[dict[str, float], dict[Group, int]]:
    """Step 1's weighted least squares: the ratio per family, the intercept per group."""
    import numpy as np

    usable = _usable(rows)
    ratios: dict[str, float] = {}
    intercepts: dict[Group, int] = {}
    for family, part in usable.groupby("family", sort=True):
        groups = sorted(set(part["group"]))
        design = np.zeros((len(part), 1 + len(groups)))
        design[:, 0] = part["replayed_prompt"].to_numpy(dtype=float)
        for j, g in enumerate(groups):
            design[:, 1 + j] = (part["group"] == g).to_numpy(dtype=float)
        target = part["recorded_prompt"].to_numpy(dtype=float)
        per_session = part.groupby("session_id")["session_id"].transform("size").to_numpy()
        weight = np.sqrt(1.0 / (per_session * target**2))
        solution = np.linalg.lstsq(design * weight[:, None], target * weight, rcond=None)[0]
        ratios[str(family)] = float(solution[0])
        for j, g in enumerate(groups):
            intercepts.setdefault(g, max(0, round(float(solution[1 + j]))))
    return ratios, intercepts


def _usable(rows: pd.DataFrame, least: int = 1) -> pd.DataFrame:
    """Step 1's requests: before any recorded compaction, an estimate of at least
    `MIN_CACHED_PREFIX`, in a session with at least `least` of them."""
    usable = rows[
        ~rows["after_recorded_compaction"]
        & (rows["replayed_prompt"] >= MIN_CACHED_PREFIX)
        & (rows["recorded_prompt"] > 0)
    ]
    sizes = usable.groupby("session_id")["session_id"].transform("size")
    return usable[sizes >= least]


def _spread(
    rows: pd.DataFrame, ratios: dict[str, float], intercepts: dict[Group, int]
) -> tuple[float, int, dict[str, int]]:
    """The pooled standard deviation of log(session ratio / its family's ratio): the
    squared deviations of every session over (sessions - families), one figure for every
    family (two or three sessions a family cannot estimate a spread of their own); with
    its degrees of freedom and the sessions of each family."""
    import numpy as np

    deviations: list[float] = []
    families: dict[str, int] = {}
    for (family, _), part in _usable(rows, MIN_FIT_REQUESTS).groupby(
        ["family", "session_id"], sort=True
    ):
        system = np.array([intercepts.get(g, 0) for g in part["group"]], dtype=float)
        recorded = part["recorded_prompt"].to_numpy(dtype=float)
        own = float(np.median((recorded - system) / part["replayed_prompt"].to_numpy(dtype=float)))
        if own > 0 and str(family) in ratios:
            deviations.append(float(np.log(own / ratios[str(family)])))
            families[str(family)] = families.get(str(family), 0) + 1
    freedom = len(deviations) - len(families)
    if freedom <= 0:
        return 0.0, 0, families
    return float(np.sqrt(np.sum(np.square(deviations)) / freedom)), freedom, families


def _miss_concentration(final: pd.DataFrame, rates: dict[str, float]) -> float:
    """How alike the sessions' own miss rates are: the beta concentration `1 / rho - 1`
    of the intra-session correlation `rho` (method of moments, pooled over families: per
    session with at least `MIN_MISS_HITS` replayed hits, the squared deviation of its rate
    from its family's beyond the binomial part, over `m (1 - m)`, summed over (sessions -
    families)); 0 when the sessions vary no more than chance (every one at the rate)."""
    excess, families, sessions = 0.0, set(), 0
    for (family, _), part in final.groupby(["family", "session_id"], sort=True):
        hits = part[part["replayed_hit"]]
        m = rates.get(str(family), 0.0)
        if len(hits) < MIN_MISS_HITS or not 0 < m < 1:
            continue
        own = float((~hits["recorded_hit"]).mean())
        excess += ((own - m) ** 2 - m * (1 - m) / len(hits)) / (m * (1 - m))
        families.add(str(family))
        sessions += 1
    freedom = sessions - len(families)
    rho = excess / freedom if freedom > 0 else 0.0
    return 1.0 / rho - 1.0 if 0 < rho < 1 else 0.0


def _table(values: dict[Group, int]) -> TokenTable:
    """`(harness, from version, tokens)` rows, newest version first per harness; the
    oldest row of a harness applies to every older version too (from `()`)."""
    out = []
    for harness in sorted({h for h, _ in values}):
        versions = sorted((v for h, v in values if h == harness), reverse=True)
        for i, version in enumerate(versions):
            since = version if i < len(versions) - 1 else ()
            out.append((harness, since, values[(harness, version)]))
    return tuple(out)


def _agreement(rows: pd.DataFrame) -> float:
    return float((rows["recorded_hit"] == rows["replayed_hit"]).mean()) if len(rows) else 0.0


def calibrate(
    sessions: Iterable[Session], *, fitted: str | None = None, exclude: Collection[str] = ()
) -> Calibration:
    """Fit the cache and token model's free parameters on `sessions` (module notes).

    Args:
        sessions: The sessions to fit on (the train split); they must record usage.
        fitted: The fit's date (default: today, UTC).
        exclude: Session ids that must not enter the fit (the judged ones).

    Returns:
        The calibration, its `sessions` the ids fitted on.

    Raises:
        ValueError: No session, a session of `exclude`, or no request with usage.
    """
    import pandas as pd

    unique = list({s.id: s for s in sessions}.values())
    if not unique:
        raise ValueError("calibrate needs at least one session")
    refused = sorted({s.id for s in unique} & set(exclude))
    if refused:
        raise ValueError(f"sessions {refused} are excluded from the fit (judged on)")
    rows = pd.concat([fit_rows(s, UNIT_CALIBRATION) for s in unique], ignore_index=True)
    if rows.empty:
        raise ValueError("no request of these sessions recorded usage: nothing to fit")
    ratios, intercepts = _lines(rows)
    spread, freedom, counts = _spread(rows, ratios, intercepts)
    firsts = rows[rows["first"]].groupby("group")["recorded_cache_read"].median()
    warm = {
        cast(Group, g): round(float(v)) if v >= MIN_CACHED_PREFIX else 0 for g, v in firsts.items()
    }
    fit = UNIT_CALIBRATION.copy_with(system_prompt=_table(intercepts), warm_prefix=_table(warm))
    for family in FAMILIES:
        if family in ratios:
            # The spread of a new session around a ratio fitted on n: sigma sqrt(1 + 1/n).
            predictive = spread * (1.0 + 1.0 / max(1, counts.get(family, 1))) ** 0.5
            fit = fit.with_family(
                family,
                token_ratio=ratios[family],
                ratio_spread=predictive,
                ratio_freedom=float(freedom),
            )
    fit = _fit_ttl(fit, unique, set(rows.loc[rows["family"] == "openai", "session_id"]))
    final = pd.concat([fit_rows(s, fit) for s in unique], ignore_index=True)
    rates = {}
    for name, part in final.groupby("family", sort=True):
        hits = part[part["replayed_hit"]]
        rates[str(name)] = float((~hits["recorded_hit"]).mean()) if len(hits) else 0.0
    concentration = _miss_concentration(final, rates)
    for name, rate in rates.items():
        fit = fit.with_family(name, miss_rate=rate, miss_concentration=concentration)
    day = fitted if fitted is not None else datetime.datetime.now(datetime.UTC).date().isoformat()
    return fit.copy_with(sessions=tuple(sorted(s.id for s in unique)), fitted=day)


def _fit_ttl(fit: Calibration, sessions: list[Session], openai_ids: set[str]) -> Calibration:
    """Step 3: OpenAI's TTL of `TTL_CANDIDATES` with the best hit agreement."""
    import pandas as pd

    chosen = [s for s in sessions if s.id in openai_ids]
    if not chosen:
        return fit.with_family("openai", ttl_seconds=OPENAI_TTL_MIDDLE)
    scores = []
    for ttl in TTL_CANDIDATES:
        trial = fit.with_family("openai", ttl_seconds=ttl)
        rows = pd.concat([fit_rows(s, trial) for s in chosen], ignore_index=True)
        openai = rows[rows["family"] == "openai"]
        scores.append((-_agreement(openai), abs(ttl - OPENAI_TTL_MIDDLE), ttl))
    return fit.with_family("openai", ttl_seconds=min(scores)[2])


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

    listed = "".join(f"#   {p}\n" for p in paths)
    sessions = "".join(f'    "{s}",\n' for s in calibration.sessions)
    ttl = calibration.model("openai").ttl_seconds
    return (
        '"""The shipped calibration\'s fitted values: `replay.calibrate` on the train split of\n'
        "`replay.CALIBRATION_SPLIT`. Generated by `python perf/calibration_judge.py\n"
        '--write-defaults`; do not edit by hand (a test refits and compares)."""\n\n'
        "# Fitted on these corpus files (relative to the corpus root):\n"
        f"{listed}\n"
        f'FIT_DATE = "{calibration.fitted}"\n'
        f"FIT_SESSIONS: tuple[str, ...] = (\n{sessions})\n"
        f"TOKEN_RATIO: dict[str, float] = {family_map('token_ratio')}\n"
        f"RATIO_SPREAD: dict[str, float] = {family_map('ratio_spread')}\n"
        f"RATIO_FREEDOM: dict[str, float] = {family_map('ratio_freedom')}\n"
        f"MISS_RATE: dict[str, float] = {family_map('miss_rate')}\n"
        f"MISS_CONCENTRATION: dict[str, float] = {family_map('miss_concentration')}\n"
        f"OPENAI_TTL_SECONDS = {ttl!r}\n"
        "SYSTEM_PROMPT_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = "
        f"{table(calibration.system_prompt)}\n"
        "WARM_PREFIX_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = "
        f"{table(calibration.warm_prefix)}\n"
    )
