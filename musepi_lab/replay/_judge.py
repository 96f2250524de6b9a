"""The calibration judged on sessions it was not fitted on: per request, the recorded and
replayed input, cache read, cache write and cost, each request classed by whether the
provider followed its documented rules; per session, the expected bill with its 90%
prediction interval (`_uncertainty`) and whether the recorded bill falls inside it.

A request is `documented` when the replay and the record agree on whether most of its
prompt was read from cache; an `unpredicted_miss` when the replay read it and the provider
did not (what the fitted miss rate draws); an `unpredicted_hit` the other way round (the
provider held a prefix the replay's rules say it had let go; not drawn).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..session._session import Session
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._fit import FIT_STRATEGY, result_rows
from ._replay import replay
from ._uncertainty import COST_DRAWS, COST_SEED, PREDICTION_LEVEL, cost_draws, prediction_interval

if TYPE_CHECKING:
    import pandas as pd

REQUEST_CLASSES: tuple[str, ...] = ("documented", "unpredicted_miss", "unpredicted_hit")
"""How a judged request relates to the documented rules (module notes)."""


def request_class(recorded_hit: bool, replayed_hit: bool) -> str:
    """`documented`, `unpredicted_miss` or `unpredicted_hit` (module notes)."""
    if recorded_hit == replayed_hit:
        return "documented"
    return "unpredicted_miss" if replayed_hit else "unpredicted_hit"


def _refuse_fitted(session: Session, calibration: Calibration) -> None:
    if session.id in calibration.sessions:
        raise ValueError(
            f"session {session.id} ({session.source_path}) was fitted on: "
            "a calibration is judged only on sessions it did not see"
        )


def judge_session(
    session: Session,
    calibration: Calibration = DEFAULT_CALIBRATION,
    *,
    draws: int = COST_DRAWS,
    seed: int = COST_SEED,
    level: float = PREDICTION_LEVEL,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge a calibration on one session it was not fitted on.

    Returns:
        The requests (`result_rows` plus `request_class` and `cost_error`, the replayed
        cost relative to the recorded one) and the session's figures: `session_id`,
        `family`, `requests`, one count per `REQUEST_CLASSES`, `recorded_cost_usd`,
        `replayed_cost_usd` (documented rules alone), `expected_cost_usd`, `cost_low`,
        `cost_high` (the prediction interval over the requests with recorded usage),
        `inside` (the recorded bill is in it) and `documented_cost_error_median` (the
        median absolute per-request cost error of its documented requests).

    Raises:
        ValueError: The calibration was fitted on this session.
    """
    import numpy as np

    _refuse_fitted(session, calibration)
    result = replay(session, FIT_STRATEGY, window=10**9, calibration=calibration)
    rows = result_rows(session, result)
    classes = [
        request_class(bool(a), bool(b))
        for a, b in zip(rows["recorded_hit"], rows["replayed_hit"], strict=True)
    ]
    recorded_cost = rows["recorded_cost_usd"].to_numpy(dtype=float)
    error = np.where(
        recorded_cost > 0,
        rows["replayed_cost_usd"] / np.where(recorded_cost > 0, recorded_cost, 1.0) - 1.0,
        np.nan,
    )
    rows = rows.assign(request_class=classes, cost_error=error)
    mask = result.timeline["entry_id"].isin(set(rows["entry_id"])).to_numpy()
    simulated = cost_draws(
        result.timeline, result.pricing, calibration, mask=mask, draws=draws, seed=seed
    )
    low, high = prediction_interval(simulated, level)
    recorded = float(recorded_cost.sum())
    documented = rows[rows["request_class"] == "documented"]
    figures: dict[str, Any] = {
        "session_id": session.id,
        "family": str(rows["family"].mode().iloc[0]) if len(rows) else "",
        "requests": len(rows),
        **{c: int((rows["request_class"] == c).sum()) for c in REQUEST_CLASSES},
        "recorded_cost_usd": recorded,
        "replayed_cost_usd": float(rows["replayed_cost_usd"].sum()),
        "expected_cost_usd": float(simulated.mean()),
        "cost_low": low,
        "cost_high": high,
        "inside": bool(low <= recorded <= high),
        "documented_cost_error_median": float(documented["cost_error"].abs().median())
        if len(documented)
        else float("nan"),
    }
    return rows, figures


def judge(
    sessions: Iterable[tuple[str, Session]], calibration: Calibration = DEFAULT_CALIBRATION
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`judge_session` over `(label, session)` pairs (the judge split).

    Returns:
        The requests of every session (with a `session` label column) and one row of
        figures per session (indexed by label).

    Raises:
        ValueError: The calibration was fitted on one of them.
    """
    import pandas as pd

    pairs = list(sessions)
    for _, session in pairs:
        _refuse_fitted(session, calibration)
    requests, figures = [], {}
    for label, session in pairs:
        rows, row = judge_session(session, calibration)
        requests.append(rows.assign(session=label))
        figures[label] = row
    frame = pd.concat(requests, ignore_index=True) if requests else pd.DataFrame()
    return frame, pd.DataFrame.from_dict(figures, orient="index")


def family_figures(requests: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    """Per family: judged `sessions` and `requests`, the share of documented requests,
    `documented_cost_error_median` (over every documented request of the family, the
    target's figure), `unpredicted_misses`, and `coverage` (the share of sessions whose
    recorded bill is inside its interval)."""
    import pandas as pd

    records = []
    for family, part in requests.groupby("family", sort=True):
        documented = part[part["request_class"] == "documented"]
        judged = sessions[sessions["family"] == family]
        records.append(
            {
                "family": family,
                "sessions": len(judged),
                "requests": len(part),
                "documented_share": len(documented) / len(part),
                "documented_cost_error_median": float(documented["cost_error"].abs().median()),
                "unpredicted_misses": int((part["request_class"] == "unpredicted_miss").sum()),
                "unpredicted_hits": int((part["request_class"] == "unpredicted_hit").sum()),
                "coverage": float(judged["inside"].mean()) if len(judged) else float("nan"),
            }
        )
    return pd.DataFrame.from_records(records).set_index("family")
