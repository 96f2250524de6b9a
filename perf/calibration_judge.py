"""The replay's calibration, fitted on the train split and judged on the other (issue 23).

Fits `replay.calibrate` on the train side of `replay.CALIBRATION_SPLIT` (every file's
digest checked first) and prints: the split, the fitted parameters, per judged session the
recorded bill beside the replayed one (documented rules alone), the expected bill and its
90% prediction interval, whether the recorded bill is inside, and the median absolute
per-request cost error of its documented-rule requests; then per provider family the
targets' figures (median per-request cost error over documented-rule requests, ≤ 5%;
interval coverage, ≥ 85% of judged sessions). A diagnostic follows, never used by the
fit: each judged session's own token ratio, and the per-request error had the replay known
it, which separates the error of the token ratio from that of the cache rules.

    python perf/calibration_judge.py                    # fit, judge, print
    python perf/calibration_judge.py --write-defaults   # also regenerate replay/_fitted.py
    python perf/calibration_judge.py --check            # exit 1 if the shipped defaults differ
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from _harness import CORPUS, REPO

from musepi_lab._atomic import write_bytes_atomic
from musepi_lab.replay import (
    CALIBRATION_SPLIT,
    DEFAULT_CALIBRATION,
    Calibration,
    calibrate,
    family_figures,
    judge,
    read_split,
)
from musepi_lab.replay._fit import UNIT_CALIBRATION, fit_rows, fitted_source
from musepi_lab.replay._judge import judge_session
from musepi_lab.session import Session

FITTED = REPO / "musepi_lab" / "replay" / "_fitted.py"


def print_split() -> None:
    print("| side | corpus file | why |")
    print("|---|---|---|")
    for entry in CALIBRATION_SPLIT:
        print(f"| {entry.side} | {entry.path} | {entry.why} |")


def print_parameters(fit: Calibration) -> None:
    print(f"\nfitted {fit.fitted} on {len(fit.sessions)} sessions")
    for key, value in fit.parameters().items():
        print(f"  {key}: {value:.4g}")
    print(f"  system prompt: {fit.system_prompt}")
    print(f"  warm prefix: {fit.warm_prefix}")


def own_ratio(session: Session, fit: Calibration) -> float:
    """The judged session's own token ratio (diagnostic only): the median of its requests'
    `(recorded prompt - fitted system prompt) / estimate`, before any recorded compaction."""
    rows = fit_rows(session, UNIT_CALIBRATION)
    usable = rows[~rows["after_recorded_compaction"] & (rows["replayed_prompt"] >= 1024)]
    system = fit.system_prompt_tokens(session.header)
    return float(np.median((usable["recorded_prompt"] - system) / usable["replayed_prompt"]))


def print_judged(sessions: pd.DataFrame) -> None:
    print(
        "\n| judged session | family | requests | documented / unpredicted miss / hit | "
        "recorded | replayed (rules) | expected [90%] | inside | per-request cost error |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, row in sessions.iterrows():
        print(
            f"| {label} | {row['family']} | {row['requests']} | {row['documented']} / "
            f"{row['unpredicted_miss']} / {row['unpredicted_hit']} | "
            f"${row['recorded_cost_usd']:.2f} | ${row['replayed_cost_usd']:.2f} | "
            f"${row['expected_cost_usd']:.2f} [{row['cost_low']:.2f}, {row['cost_high']:.2f}] | "
            f"{'yes' if row['inside'] else 'no'} | {row['documented_cost_error_median']:.1%} |"
        )


def print_families(figures: pd.DataFrame) -> None:
    print(
        "\n| family | sessions | requests | documented | median per-request cost error "
        "(target ≤ 5%) | unpredicted misses | coverage (target ≥ 85%) |"
    )
    print("|---|---|---|---|---|---|---|")
    for family, row in figures.iterrows():
        print(
            f"| {family} | {int(row['sessions'])} | {int(row['requests'])} | "
            f"{row['documented_share']:.1%} | {row['documented_cost_error_median']:.1%} | "
            f"{int(row['unpredicted_misses'])} | "
            f"{row['coverage']:.0%} |"
        )


def print_diagnostic(judged: list[tuple[str, Session]], fit: Calibration) -> None:
    print("\ndiagnostic (never fitted on): each judged session's own token ratio")
    print("| judged session | fitted ratio | own ratio | per-request cost error, own ratio |")
    print("|---|---|---|---|")
    for label, session in judged:
        rows, _ = judge_session(session, fit)
        family = str(rows["family"].mode().iloc[0])
        own = own_ratio(session, fit)
        oracle = fit.with_family(family, token_ratio=own, miss_rate=0.0)
        oracle_rows, _ = judge_session(session, oracle.copy_with(sessions=()))
        documented = oracle_rows[oracle_rows["request_class"] == "documented"]
        error = float(documented["cost_error"].abs().median())
        print(f"| {label} | {fit.family(family).token_ratio:.3f} | {own:.3f} | {error:.1%} |")


def same_fit(a: Calibration, b: Calibration) -> bool:
    """Whether two calibrations hold the same fit (parameters within float tolerance)."""
    pa, pb = a.parameters(), b.parameters()
    return (
        all(math.isclose(pa[k], pb[k], rel_tol=1e-9, abs_tol=1e-12) for k in pa)
        and a.system_prompt == b.system_prompt
        and a.warm_prefix == b.warm_prefix
        and a.sessions == b.sessions
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-defaults", action="store_true", help="rewrite replay/_fitted.py")
    parser.add_argument("--check", action="store_true", help="exit 1 if the defaults differ")
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    pd.set_option("display.width", 200)
    print_split()
    train = read_split(CORPUS, "train")
    judged = read_split(CORPUS, "judge")
    fit = calibrate([s for _, s in train], exclude=[s.id for _, s in judged])
    print_parameters(fit)
    requests, sessions = judge(judged, fit)
    print_judged(sessions)
    print_families(family_figures(requests, sessions))
    print(
        f"\nintervals holding the recorded bill: {sessions['inside'].mean():.0%} of "
        f"{len(sessions)} judged sessions (target ≥ 85%)"
    )
    print_diagnostic(judged, fit)
    matches = same_fit(fit, DEFAULT_CALIBRATION)
    print(f"\nshipped defaults ({DEFAULT_CALIBRATION.fitted or 'none'}) equal this fit: {matches}")
    if args.write_defaults:
        source = fitted_source(fit, [p for p, _ in train])
        write_bytes_atomic(Path(FITTED), source.encode("utf-8"))
        print(f"wrote {FITTED}")
    return 1 if args.check and not matches else 0


if __name__ == "__main__":
    sys.exit(main())
