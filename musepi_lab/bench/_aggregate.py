"""Honest aggregates of a benchmark frame: per strategy and budget, how many cells there
were, how many compacted, how many carried facts, and each metric's mean over the cells
where it is defined, with a bootstrap confidence interval across sessions.

Pure functions of a frame; the tables and files built on them are in `_summary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the sessions behind one confidence interval."""
BOOTSTRAP_SEED = 20240611
"""Seed of the resampling, so a summary is the same every time it is made."""
CI_LEVEL = 0.95
"""Level of the confidence intervals."""
COMPACTED_ONLY: frozenset[str] = frozenset({"token_reduction", "summary_tokens"})
"""Metrics defined only where the strategy compacted: a cell left alone has no reduction
to average (its 0 would pull the mean towards whichever strategy compacts least)."""
COUNT_COLUMNS: tuple[str, ...] = ("cells", "errors", "compacted", "with_facts")
"""The count columns of an aggregate table, before the metrics."""


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of `values` (one value per session).

    Returns:
        `(low, high)`, or None for fewer than two values (no spread to resample).
    """
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def defined_values(group: pd.DataFrame, metric: str) -> pd.Series:
    """The metric's values on the cells where it is defined: not failed, not missing,
    and for `COMPACTED_ONLY` metrics only where the strategy compacted."""
    import pandas as pd

    values = pd.to_numeric(group[metric], errors="coerce")
    mask = values.notna() & group["error"].isna()
    if metric in COMPACTED_ONLY:
        mask &= group["compacted"].fillna(False).astype(bool)
    return values[mask]


def _per_session(group: pd.DataFrame, values: pd.Series) -> np.ndarray:
    """One value per session (the mean of its defined cells), the unit resampled."""
    return values.groupby(group.loc[values.index, "session_id"]).mean().to_numpy()


def _metric_columns(group: pd.DataFrame, metric: str, **bootstrap: Any) -> dict[str, Any]:
    values = defined_values(group, metric)
    sessions = _per_session(group, values) if len(values) else np.array([])
    ci = bootstrap_ci(sessions, **bootstrap)
    return {
        metric: float(values.mean()) if len(values) else None,
        f"{metric}_n": len(values),
        f"{metric}_ci_low": ci[0] if ci else None,
        f"{metric}_ci_high": ci[1] if ci else None,
    }


def _counts(group: pd.DataFrame) -> dict[str, int]:
    ok = group[group["error"].isna()]
    facts = ok["facts"] if "facts" in ok.columns else None
    return {
        "cells": len(group),
        "errors": int(group["error"].notna().sum()),
        "compacted": int(ok["compacted"].fillna(False).astype(bool).sum()),
        "with_facts": int((facts.fillna(0).astype(float) > 0).sum()) if facts is not None else 0,
    }


def aggregate_table(
    df: pd.DataFrame,
    metrics: Sequence[str],
    labels: pd.Series,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> pd.DataFrame:
    """One row per (strategy label, budget): `COUNT_COLUMNS`, then per metric its mean over
    the cells where it is defined (`defined_values`), how many those were (`<metric>_n`)
    and the bootstrap interval across sessions (`<metric>_ci_low`, `<metric>_ci_high`;
    None below two sessions).

    Args:
        df: A benchmark frame.
        metrics: The metric columns.
        labels: The strategy label of every row of `df`.
        resamples: Bootstrap resamples per interval.
        seed: Seed of the resampling.
        level: Confidence level.
    """
    import pandas as pd

    frame = df.assign(label=labels.to_numpy())
    records = []
    for (label, budget), group in frame.groupby(["label", "budget"], sort=True):
        record: dict[str, Any] = {"label": label, "budget": budget, **_counts(group)}
        for metric in metrics:
            record.update(
                _metric_columns(group, metric, resamples=resamples, seed=seed, level=level)
            )
        records.append(record)
    if not records:
        return pd.DataFrame()
    return pd.DataFrame.from_records(records).set_index(["label", "budget"])


PREDICTION_LEVEL = 0.9
"""Level of the cost difference's interval (the replay's prediction level)."""
DIFFERENCE_COLUMNS: tuple[str, ...] = (
    "cost_baseline",
    "cost_difference",
    "cost_difference_low",
    "cost_difference_high",
    "cost_difference_within_uncertainty",
)
"""What `cost_differences` adds to a replay summary, per strategy and budget."""


def _draws(value: Any) -> np.ndarray | None:
    import json

    if not isinstance(value, str) or not value:
        return None
    return np.asarray(json.loads(value), dtype=float)


def cost_differences(
    df: pd.DataFrame,
    labels: pd.Series,
    baseline: str | None = None,
    level: float = PREDICTION_LEVEL,
) -> pd.DataFrame:
    """Per (strategy label, budget) of a replay frame: its expected bill minus the
    baseline's, averaged over the sessions both replayed, with the model's interval of
    that difference and whether 0 is inside it.

    The interval is paired: every cell's `replay_cost_draws` are drawn with one seed per
    request index, so on one session draw d of two strategies is the same world (the same
    misses, the same token ratio); the difference of the session-mean bills is taken draw
    by draw and its central `level` quantiles reported. It is the replay model's
    uncertainty alone (the bootstrap across sessions is the summary's other interval).

    Args:
        df: A replay benchmark frame (with `replay_cost_draws`).
        labels: The strategy label of every row.
        baseline: The label compared against (default: `none` when present, else the
            first label).
        level: The interval's level.

    Returns:
        Indexed by `(label, budget)`: `DIFFERENCE_COLUMNS` (`cost_baseline` names the
        baseline; the baseline's own row has difference 0). Empty without draws.
    """
    import pandas as pd

    if "replay_cost_draws" not in df.columns or df["replay_cost_draws"].isna().all():
        return pd.DataFrame()
    frame = df.assign(label=labels.to_numpy())
    frame = frame[frame["error"].isna() & frame["replay_cost_draws"].notna()]
    names = sorted(set(frame["label"]))
    if not names:
        return pd.DataFrame()
    base = baseline if baseline is not None else ("none" if "none" in names else names[0])
    records = []
    for budget, at_budget in frame.groupby("budget", sort=True):
        reference = {
            r.session_id: _draws(r.replay_cost_draws)
            for r in at_budget[at_budget["label"] == base].itertuples()
        }
        for label, group in at_budget.groupby("label", sort=True):
            diffs = []
            for r in group.itertuples():
                ref, own = reference.get(r.session_id), _draws(r.replay_cost_draws)
                if ref is not None and own is not None and ref.shape == own.shape:
                    diffs.append(own - ref)
            if not diffs:
                continue
            mean_diff = np.mean(diffs, axis=0)
            tail = (1.0 - level) / 2.0
            low, high = (float(q) for q in np.quantile(mean_diff, [tail, 1.0 - tail]))
            records.append(
                {
                    "label": label,
                    "budget": budget,
                    "cost_baseline": base,
                    "cost_difference": float(mean_diff.mean()),
                    "cost_difference_low": low,
                    "cost_difference_high": high,
                    "cost_difference_within_uncertainty": bool(low <= 0.0 <= high),
                }
            )
    if not records:
        return pd.DataFrame()
    return pd.DataFrame.from_records(records).set_index(["label", "budget"])
