"""Benchmark: the benchmark grid on a process pool against the same grid run serially.

The grid is 40 cells: the four sessions of the bundled sample (`datasets/sample`) × five
model-free strategies × two keep-recent budgets (8000 and 20000 tokens), one compaction per
cell with every metric. Both runs start cold (worker caches cleared, no cell cache), build
the same frame (checked, timing columns left out) and are repeated interleaved; the table
shows the median times and the speed-up `serial / pool`.

    python perf/bench_parallel.py [--quick] [--check] [--repeat N] [--workers N]

Target (issue): on a 2-core machine the process pool is at least 1.7x faster than serial.
The speed-up cannot exceed the number of cores, and other load on a shared machine eats
into it. So the script also measures the machine's ceiling in the same run: a pure-CPU
loop split the same way (8 equal chunks, serially and on the same pool size), interleaved
with the grid runs. The ratio grid speed-up / ceiling is the runner's own efficiency.
`--check` exits 1 only on a wide miss (speed-up below target / 1.5).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _harness import bench_parser, median_seconds, repetitions

from musepi_lab.bench import run_benchmark
from musepi_lab.bench._cell import clear_worker_caches
from musepi_lab.bench._score import TIMING_COLUMNS
from musepi_lab.strategies._base import available, strategy_type

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
STRATEGIES = ("none", "truncate", "observation-masking", "extractive", "snapcompact")
BUDGETS = (8000, 20000)
TARGET = 1.7
WIDE_MARGIN = 1.5


# Module of each strategy, imported directly when the registry does not list it yet.
def strategies() -> list[str]:
    """The five model-free strategies of the grid (a missing one is an error, not a skip)."""
    missing = [n for n in STRATEGIES if n not in available()]
    if missing:
        raise SystemExit(f"strategies not registered: {missing}")
    assert not any(strategy_type(n).needs_summarizer for n in STRATEGIES)
    return list(STRATEGIES)


def burn(n: int) -> int:
    """Pure-CPU work with no data to move: the best case for a process pool."""
    total = 0
    for i in range(n):
        total += i * i
    return total


BURN_CHUNKS = 8
BURN_SIZE = 1_000_000


def burn_serial() -> None:
    """The calibration loop, inline."""
    for _ in range(BURN_CHUNKS):
        burn(BURN_SIZE)


def burn_pool(workers: int | None) -> None:
    """The calibration loop on a fresh process pool (started and stopped as the grid's)."""
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
        list(pool.map(burn, [BURN_SIZE] * BURN_CHUNKS))


def run(executor: str | None, workers: int | None) -> object:
    """One cold run of the whole grid."""
    clear_worker_caches()
    return run_benchmark(
        SAMPLE,
        strategies(),
        BUDGETS,
        executor=executor,
        max_workers=workers,
        progress=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: CPUs)")
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=3, full=7)

    # Warm-up: imports, font caches and the like are paid before timing, by both sides.
    serial_df = run("serial", None)
    pool_df = run(None, args.workers)
    a = serial_df.drop(columns=list(TIMING_COLUMNS))
    b = pool_df.drop(columns=list(TIMING_COLUMNS))
    if not a.equals(b):
        print("serial and pool frames differ", file=sys.stderr)
        return 1
    cells = len(serial_df)
    failed = int(serial_df["error"].notna().sum())

    times = median_seconds(
        {
            "serial": lambda: run("serial", None),
            "pool": lambda: run(None, args.workers),
            "cpu serial": burn_serial,
            "cpu pool": lambda: burn_pool(args.workers),
        },
        repeat,
    )
    speedup = times["serial"] / times["pool"]
    ceiling = times["cpu serial"] / times["cpu pool"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"grid: {cells} cells ({failed} failed), {repeat} interleaved repetitions")
    print(
        f"cores: {os.cpu_count()}, pool workers: {args.workers or os.cpu_count()}, "
        f"load average (1 min): {load:.2f}"
    )
    print(f"{'run':<8}{'median s':>10}{'per cell ms':>14}")
    for name in ("serial", "pool"):
        print(f"{name:<8}{times[name]:>10.3f}{1000 * times[name] / cells:>14.1f}")
    verdict = "meets" if speedup >= TARGET else "misses"
    print(f"speed-up serial/pool: {speedup:.2f}x ({verdict} the {TARGET}x target)")
    print(
        f"machine ceiling now (pure-CPU loop, same pool): {ceiling:.2f}x "
        f"({times['cpu serial']:.3f} s serial, {times['cpu pool']:.3f} s pool); "
        f"runner efficiency {speedup / ceiling:.0%} of it"
    )
    if args.check and speedup < TARGET / WIDE_MARGIN:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
