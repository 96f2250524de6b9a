"""Benchmark: the share of a corpus bench run's time spent scoring (issue 10, "Done means").

Runs `run_benchmark` serially, as a user would, over the pi corpus fixtures (and, as a
second group, the bundled sample) with every model-free strategy at three keep-recent
budgets. Each row of the frame times its own parts in the same run: `compact_seconds` (the
strategy, its preparation included), `score_seconds` (every metric of the cell: rebuilding
the contexts before and after, facts, retention and its bounds, tool pairing, cache prefix)
and `cell_seconds` (the whole cell: also loading the shared session and counter). The
figure is `Σ score_seconds / Σ cell_seconds`, so both sides come from the same cells.

The first cell of a session pays for reading it and for extracting its facts once; both
are inside `cell_seconds`, and the fact extraction inside `score_seconds`.

Target: scoring <= 25% of a bench run.

    python perf/bench_score_share.py [--quick] [--check]
"""

from __future__ import annotations

from pathlib import Path

from _harness import CORPUS, REPO, bench_parser
from bench_scoring import BUDGETS, CORPUS_FILES, STRATEGIES, TARGET_SHARE  # the same grid

from musepi_lab.bench import run_benchmark
from musepi_lab.bench._cell import clear_worker_caches
from musepi_lab.metrics._scoring import clear_scorers
from musepi_lab.metrics._session_facts import clear_fact_cache


def measure(paths: list[Path], budgets: tuple[int, ...]) -> dict[str, float]:
    """Seconds per timing column summed over the cells of one serial bench run."""
    clear_worker_caches()
    clear_fact_cache()
    clear_scorers()
    df = run_benchmark(paths, STRATEGIES, budgets, executor="serial", progress=False)
    failed = df[df["error"].notna()]
    if len(failed):
        raise SystemExit(f"{len(failed)} cells failed:\n{failed['error'].iloc[0]}")
    return {
        "cells": float(len(df)),
        "compact": float(df["compact_seconds"].sum()),
        "score": float(df["score_seconds"].sum()),
        "cell": float(df["cell_seconds"].sum()),
    }


def main() -> int:
    args = bench_parser(__doc__ or "").parse_args()
    budgets = BUDGETS[:1] if args.quick else BUDGETS
    corpus = [p for p in (CORPUS.joinpath(*parts) for parts in CORPUS_FILES) if p.exists()]
    groups = {
        "corpus (pi fixtures)": corpus[:1] if args.quick else corpus,
        "sample": sorted((REPO / "datasets" / "sample").glob("*.jsonl")),
    }
    shares: dict[str, float] = {}
    for label, paths in groups.items():
        if not paths:
            print(f"\n{label}: no files (corpus at {CORPUS}?)")
            continue
        t = measure(paths, budgets)
        share = t["score"] / t["cell"]
        shares[label] = share
        print(f"\n{label}: {int(t['cells'])} cells, {len(paths)} sessions")
        print(f"  strategies (compact_seconds) {t['compact']:8.3f} s")
        print(f"  scoring    (score_seconds)   {t['score']:8.3f} s")
        print(f"  whole cells (cell_seconds)   {t['cell']:8.3f} s")
        print(f"  scoring share of the run     {100 * share:5.1f}%")
    if not shares:
        return 0
    worst = max(shares.values())
    verdict = "holds" if worst <= TARGET_SHARE else "MISSED"
    print(
        f"\ntarget: scoring <= {100 * TARGET_SHARE:.0f}% of a bench run; worst "
        f"{100 * worst:.1f}% ({verdict})"
    )
    return 1 if args.check and worst > TARGET_SHARE * 1.5 else 0


if __name__ == "__main__":
    raise SystemExit(main())
