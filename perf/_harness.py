"""What every benchmark script shares: the corpus location, the interleaved-median timer,
and the `--quick` / `--check` / `--repeat` command line.

The scripts run from this folder (`python perf/bench_read.py`), so they import it by
name.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MUSEPI_LAB_CORPUS", REPO.parent / "shared" / "corpus"))


def median_seconds(functions: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time of each function, repetitions interleaved so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            gc.collect()
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def bench_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the options every script takes (`--quick`, `--check`, `--repeat`)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 on a wide miss")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (median)")
    return parser


def repetitions(args: argparse.Namespace, *, quick: int, full: int) -> int:
    """`--repeat` if given, else the quick or full default."""
    return args.repeat or (quick if args.quick else full)
