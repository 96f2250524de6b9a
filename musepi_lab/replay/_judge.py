"""The calibration judged on sessions it was not fitted on, against the plain rules.

A judged session is replayed under the `recorded` strategy (the context the agent sent),
every stream of it, twice:

- the *rules* bill (`ratio="family"`): the providers' documented cache rules on the family
  fit as it stands (the harness version's system prompt, the family's token ratio), no
  unpredicted miss;
- the *calibrated* bill (`ratio="causal"`): each request on its stream's own line estimated
  from the requests before it (the family fit as the prior), the expected unpredicted
  misses and hits at the stream's own rates learned the same way; its distribution gives the
  90% prediction interval and the PIT value (the share of simulated bills at or below the
  recorded one).

Both are compared with the recorded bill over the same requests: those with recorded usage
(`usage_df`'s rows); every other recorded request is counted with its reason (`Coverage`).
Per request, a request is `documented` when the replay and the record agree on whether most
of its prompt was read from cache; an `unpredicted_miss` when the replay read it and the
provider did not; an `unpredicted_hit` the other way round.

`judge_sources` is the leave-one-source-out judgement: for each source (upstream repository
or user, `read_corpus`), the calibration is fitted on the sessions of every other source and
judged on that source's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..session._session import Session
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._replay import replay_session
from ._result import ReplayResult, StreamResult
from ._uncertainty import (
    COST_DRAWS,
    COST_SEED,
    PREDICTION_LEVEL,
    StreamDraws,
    cost_draws,
    expected_bill,
    pit_value,
    prediction_interval,
)
from ._walks import FIT_STRATEGY, FIT_WINDOW

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


def _error(replayed: float, recorded: float) -> float:
    return replayed / recorded - 1.0 if recorded > 0 else float("nan")


def judged_rows(result: ReplayResult, rules: ReplayResult) -> list[dict[str, Any]]:
    """One record per billed request with recorded usage, both bills beside the record."""
    rows = []
    for part, plain in zip(result.streams, rules.streams, strict=True):
        assert part.draws is not None and plain.draws is not None
        walked = zip(part.draws.billed, plain.draws.billed, part.draws.terms, strict=True)
        for index, (b, r, term) in enumerate(walked):
            usage = part.recorded[index] if index < len(part.recorded) else None
            if usage is None:
                continue
            recorded_hit = usage.prompt > 0 and usage.cache_read * 2 >= usage.prompt
            rows.append(
                {
                    "stream": part.label,
                    "stream_kind": part.kind,
                    "request": index,
                    "family": result.calibration.model(b.cache_model).provider,
                    "recorded_input": usage.input,
                    "replayed_input": b.bill.input_tokens,
                    "recorded_cache_read": usage.cache_read,
                    "replayed_cache_read": b.bill.cache_read,
                    "recorded_cache_write": usage.cache_write,
                    "replayed_cache_write": b.bill.cache_write,
                    "recorded_cache_write_1h": usage.cache_write_1h,
                    "replayed_cache_write_1h": b.bill.cache_write_1h,
                    "recorded_output": usage.output,
                    "replayed_output": b.bill.output_tokens,
                    "recorded_prompt": usage.prompt,
                    "replayed_prompt": b.prompt,
                    "recorded_cost_usd": usage.cost,
                    "replayed_cost_usd": b.bill.cost_usd,
                    "rules_cost_usd": r.bill.cost_usd,
                    "request_class": request_class(recorded_hit, b.hit),
                    "cost_error": _error(b.bill.cost_usd, usage.cost),
                    "rules_cost_error": _error(r.bill.cost_usd, usage.cost),
                    "system": term.system,
                    "ratio": term.ratio,
                }
            )
    return rows


def judge_session(
    session: Session,
    calibration: Calibration = DEFAULT_CALIBRATION,
    *,
    draws: int = COST_DRAWS,
    seed: int = COST_SEED,
    level: float = PREDICTION_LEVEL,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge a calibration on one session it was not fitted on (module notes).

    Returns:
        The requests (`judged_rows`: per request with recorded usage, the recorded,
        calibrated and rules bills, its `request_class`, `cost_error` and
        `rules_cost_error`) and the session's figures: `session_id`, `family`,
        `streams`, `recorded_requests`, `judged_requests`, `left_out` (JSON: reason →
        count), `estimated_requests`, one count per `REQUEST_CLASSES`,
        `recorded_cost_usd`, `rules_cost_usd`, `calibrated_cost_usd` (the expected bill),
        `closer` (`calibrated`, `rules` or `tie`), `cost_low`, `cost_high`, `inside`,
        `pit`, `documented_cost_error_median`, `cost_error_median` and
        `rules_cost_error_median` (medians of the absolute per-request errors).

    Raises:
        ValueError: The calibration was fitted on this session.
    """
    import pandas as pd

    _refuse_fitted(session, calibration)
    causal = _judged_replay(session, calibration, "causal")
    rules = _judged_replay(session, calibration, "family")
    rows = pd.DataFrame(judged_rows(causal, rules))
    streams = [_kept(s) for s in causal.streams if s.draws is not None]
    plain = [_kept(s) for s in rules.streams if s.draws is not None]
    simulated = cost_draws(streams, draws=draws, seed=seed)
    low, high = prediction_interval(simulated, level)
    recorded = float(rows["recorded_cost_usd"].sum()) if len(rows) else 0.0
    calibrated = expected_bill(streams)
    rules_bill = sum(
        b.bill.cost_usd
        for part in plain
        for b, keep in zip(part.billed, part.keep or (), strict=True)
        if keep
    )
    coverage = causal.coverage
    assert coverage is not None
    figures: dict[str, Any] = {
        "session_id": session.id,
        "family": str(rows["family"].mode().iloc[0]) if len(rows) else "",
        "streams": len(causal.streams),
        "recorded_requests": coverage.recorded,
        "judged_requests": len(rows),
        "left_out": json.dumps(dict(coverage.left_out), sort_keys=True),
        "estimated_requests": coverage.estimated,
        **{c: int((rows["request_class"] == c).sum()) if len(rows) else 0 for c in REQUEST_CLASSES},
        "recorded_cost_usd": recorded,
        "rules_cost_usd": rules_bill,
        "calibrated_cost_usd": calibrated,
        "closer": _closer(recorded, calibrated, rules_bill),
        "cost_low": low,
        "cost_high": high,
        "inside": bool(low <= recorded <= high),
        "pit": pit_value(simulated, recorded),
        **_medians(rows),
    }
    return rows, figures


def _judged_replay(session: Session, calibration: Calibration, ratio: str) -> ReplayResult:
    return replay_session(
        session, FIT_STRATEGY, window=FIT_WINDOW, calibration=calibration, ratio=ratio
    )


def _kept(part: StreamResult) -> StreamDraws:
    """A stream's draws counting only its requests with recorded usage."""
    assert part.draws is not None
    return part.draws._replace(keep=[usage is not None for usage in part.recorded])


def _closer(recorded: float, calibrated: float, rules: float) -> str:
    a, b = abs(calibrated - recorded), abs(rules - recorded)
    return "tie" if a == b else ("calibrated" if a < b else "rules")


def _medians(rows: pd.DataFrame) -> dict[str, float]:
    nan = float("nan")
    if not len(rows):
        return {
            "documented_cost_error_median": nan,
            "cost_error_median": nan,
            "rules_cost_error_median": nan,
        }
    documented = rows[rows["request_class"] == "documented"]
    return {
        "documented_cost_error_median": float(documented["cost_error"].abs().median())
        if len(documented)
        else nan,
        "cost_error_median": float(rows["cost_error"].abs().median()),
        "rules_cost_error_median": float(rows["rules_cost_error"].abs().median()),
    }


def judge(
    sessions: Iterable[tuple[str, Session]], calibration: Calibration = DEFAULT_CALIBRATION
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`judge_session` over `(label, session)` pairs.

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


def judge_sources(
    sessions: Sequence[tuple[str, str, Session]],
    fit: Callable[..., Calibration] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leave one source out: for each source, `fit` (default `calibrate`) on the sessions
    of every other source, then `judge` that source's sessions.

    Args:
        sessions: `(label, source, session)` triples (copies of one session left out).
        fit: The fitting function, called as `fit(train_sessions, exclude=judged_ids)`.

    Returns:
        As `judge`, with a `source` column in both frames.
    """
    import pandas as pd

    from ._fit import calibrate

    fitting = fit or calibrate
    requests, figures = [], []
    for source in sorted({src for _, src, _ in sessions}):
        train = [s for _, src, s in sessions if src != source]
        judged = [(label, s) for label, src, s in sessions if src == source]
        calibration = fitting(train, exclude=[s.id for _, s in judged])
        rows, figs = judge(judged, calibration)
        requests.append(rows.assign(source=source))
        figures.append(figs.assign(source=source))
    return pd.concat(requests, ignore_index=True), pd.concat(figures)


def family_figures(requests: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    """Per family: judged `sessions` and `requests`, the share of documented requests, the
    medians of the absolute per-request error of the documented requests, calibrated and
    under the rules (the target's figure), the unpredicted misses and hits, the share of
    sessions whose calibrated bill is closer than the rules bill, and `coverage` (the
    share of sessions whose recorded bill is inside its interval)."""
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
                "rules_documented_cost_error_median": float(
                    documented["rules_cost_error"].abs().median()
                ),
                "unpredicted_misses": int((part["request_class"] == "unpredicted_miss").sum()),
                "unpredicted_hits": int((part["request_class"] == "unpredicted_hit").sum()),
                "calibrated_closer": float((judged["closer"] == "calibrated").mean())
                if len(judged)
                else float("nan"),
                "coverage": float(judged["inside"].mean()) if len(judged) else float("nan"),
            }
        )
    return pd.DataFrame.from_records(records).set_index("family")
