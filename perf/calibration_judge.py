"""The replay's calibration judged by source against the plain rules (issues 23 and 27).

Reads every session of `replay.CALIBRATION_SPLIT` (each file's digest checked first: the
corpus by source, from each folder's PROVENANCE.md), then judges leave one source out
(`replay.judge_sources`): for each source (upstream repository or user), `calibrate` on every
other source's sessions, and each of its sessions replayed under `recorded` twice, on the
family fit (the rules bill) and on each stream's own line learned request by request from the
requests before it (the calibrated bill, with its 90% interval and PIT value).

Prints, per judged session: source, harness, the recorded requests and how many are judged
(and why any is not), the recorded bill, the rules bill, the calibrated bill, which is
closer, the interval, whether it holds the recorded bill, the PIT value, and the median
per-request cost error of its documented-rule requests (calibrated and rules); then per
harness the targets' figures (median per-request |error| on documented-rule requests: at most
3% Claude Code and pi, 8% Codex; calibrated closer on at least 80% of sessions; intervals
holding at least 85%; 100% of recorded requests covered), the PIT values in deciles, and where
the error sits (per request class and stream kind, the recorded and calibrated USD).

    python perf/calibration_judge.py                    # judge, print
    python perf/calibration_judge.py --write-defaults   # also regenerate replay/_fitted.py
    python perf/calibration_judge.py --write-split      # regenerate CALIBRATION_SPLIT
    python perf/calibration_judge.py --check            # exit 1 if the shipped defaults differ
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from _harness import CORPUS, REPO

from musepi_lab._atomic import write_bytes_atomic
from musepi_lab.replay import (
    DEFAULT_CALIBRATION,
    Calibration,
    calibrate,
    corpus_split,
    judge_sources,
    read_split,
)
from musepi_lab.replay._fit import fitted_source
from musepi_lab.replay._provenance import corpus_sources
from musepi_lab.replay._split import split_source

FITTED = REPO / "musepi_lab" / "replay" / "_fitted.py"
SPLIT = REPO / "musepi_lab" / "replay" / "_split.py"
TARGETS = {"claude-code": 0.03, "pi": 0.03, "codex": 0.08}


def harness_of(label: str) -> str:
    return label.split("/")[0]


def print_sessions(sessions: pd.DataFrame) -> None:
    print(
        "\n| judged session | source | requests judged / recorded | recorded | rules | "
        "calibrated [90%] | closer | inside | PIT | per-request error (calibrated / rules) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, row in sessions.iterrows():
        left = "" if row["left_out"] == "{}" else f" (out: {row['left_out']})"
        print(
            f"| {str(label)[:48]} | {row['source']} | {row['judged_requests']} / "
            f"{row['recorded_requests']}{left} | ${row['recorded_cost_usd']:.3f} | "
            f"${row['rules_cost_usd']:.3f} | ${row['calibrated_cost_usd']:.3f} "
            f"[{row['cost_low']:.3f}, {row['cost_high']:.3f}] | {row['closer']} | "
            f"{'yes' if row['inside'] else 'no'} | {row['pit']:.2f} | "
            f"{row['documented_cost_error_median']:.1%} / {row['rules_cost_error_median']:.1%} |"
        )


def print_harnesses(requests: pd.DataFrame, sessions: pd.DataFrame) -> None:
    print(
        "\n| harness | sessions | requests | documented | median per-request |error|, "
        "documented (target) | rules' | calibrated closer | intervals holding | coverage |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for harness, part in requests.groupby("harness", sort=True):
        judged = sessions[sessions["harness"] == harness]
        documented = part[part["request_class"] == "documented"]
        target = TARGETS.get(str(harness))
        error = float(documented["cost_error"].abs().median())
        rules = float(documented["rules_cost_error"].abs().median())
        covered = int(judged["judged_requests"].sum())
        recorded = int(judged["recorded_requests"].sum())
        print(
            f"| {harness} | {len(judged)} | {len(part)} | {len(documented) / len(part):.1%} | "
            f"{error:.1%} ({'≤ ' + format(target, '.0%') if target else 'none'}) | {rules:.1%} | "
            f"{(judged['closer'] == 'calibrated').sum()} of {len(judged)} | "
            f"{int(judged['inside'].sum())} of {len(judged)} | {covered} of {recorded} |"
        )


def print_totals(sessions: pd.DataFrame) -> None:
    n = len(sessions)
    closer = int((sessions["closer"] == "calibrated").sum())
    ties = int((sessions["closer"] == "tie").sum())
    inside = int(sessions["inside"].sum())
    recorded = int(sessions["recorded_requests"].sum())
    judged = int(sessions["judged_requests"].sum())
    print(
        f"\ncalibrated closer than the rules: {closer} of {n} sessions ({closer / n:.0%}; "
        f"{ties} ties: nothing recorded before their only request), target ≥ 80%"
    )
    print(f"90% intervals holding the recorded bill: {inside} of {n} ({inside / n:.0%}), ≥ 85%")
    print(f"recorded requests judged: {judged} of {recorded}; every other one has a reason")
    deciles = np.histogram(sessions["pit"].astype(float), bins=10, range=(0, 1))[0]
    print(f"PIT values in deciles 0-0.1 ... 0.9-1: {deciles.tolist()}")


def print_where(requests: pd.DataFrame) -> None:
    print("\nwhere the bill's error sits (USD, every judged request):")
    table = requests.groupby(["harness", "stream_kind", "request_class"])[
        ["recorded_cost_usd", "replayed_cost_usd", "rules_cost_usd"]
    ].sum()
    table["requests"] = requests.groupby(["harness", "stream_kind", "request_class"]).size()
    print(table.round(3).to_string())


def same_fit(a: Calibration, b: Calibration) -> bool:
    """Whether two calibrations hold the same fit (parameters within float tolerance)."""
    pa, pb = a.parameters(), b.parameters()
    return (
        all(math.isclose(pa[k], pb[k], rel_tol=1e-9, abs_tol=1e-12) for k in pa)
        and a.system_prompt == b.system_prompt
        and a.warm_prefix == b.warm_prefix
        and a.sessions == b.sessions
        and all(
            x[0] == y[0] and math.isclose(x[1], y[1]) and math.isclose(x[2], y[2])
            for x, y in zip(a.event_rates, b.event_rates, strict=True)
        )
        and len(a.event_rates) == len(b.event_rates)
    )


def write_split() -> None:
    entries = corpus_split(CORPUS, corpus_sources(CORPUS))
    text = SPLIT.read_text(encoding="utf-8")
    start = text.index("CALIBRATION_SPLIT: tuple[SplitEntry, ...] = (")
    end = text.index('"""The corpus, fixed')
    new = text[:start] + split_source(entries) + text[end:]
    write_bytes_atomic(SPLIT, new.encode("utf-8"))
    print(f"wrote {len(entries)} entries to {SPLIT}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-defaults", action="store_true", help="rewrite replay/_fitted.py")
    parser.add_argument("--write-split", action="store_true", help="rewrite CALIBRATION_SPLIT")
    parser.add_argument("--check", action="store_true", help="exit 1 if the defaults differ")
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    if args.write_split:
        write_split()
        return 0
    pd.set_option("display.width", 200)
    started = time.perf_counter()
    entries = read_split(CORPUS)
    requests, sessions = judge_sources(entries)
    seconds = time.perf_counter() - started
    sessions["harness"] = [harness_of(str(label)) for label in sessions.index]
    requests["harness"] = [harness_of(str(label)) for label in requests["session"]]
    print(
        f"{len(entries)} sessions of {sessions['source'].nunique()} sources, judged in "
        f"{seconds:.1f} s (leave one source out, every fit included)"
    )
    print_sessions(sessions)
    print_harnesses(requests, sessions)
    print_totals(sessions)
    print_where(requests)
    fit = calibrate([s for _, _, s in entries], exclude=())
    fit = fit.copy_with(fitted=DEFAULT_CALIBRATION.fitted or fit.fitted)
    matches = same_fit(fit, DEFAULT_CALIBRATION)
    print(
        f"\nshipped defaults ({DEFAULT_CALIBRATION.fitted or 'none'}) equal the fit on all: "
        f"{matches}"
    )
    if args.write_defaults:
        fresh = calibrate([s for _, _, s in entries])
        source = fitted_source(fresh, [p for p, _, _ in entries])
        write_bytes_atomic(Path(FITTED), source.encode("utf-8"))
        print(f"wrote {FITTED}")
    return 1 if args.check and not matches else 0


if __name__ == "__main__":
    sys.exit(main())
