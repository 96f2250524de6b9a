"""Benchmark: the usage read of a Claude Code folder on the process pool against the same
read in this process, at growing folder sizes, to place `_pool.POOL_MIN_BYTES`.

The corpus's Claude Code files are laid out as `bench_usage_peer.py` lays them (1, 2, 4 and
`--copies` copies); for each folder `usage_rows` runs with the pool forced on (threshold 0, every core whatever the load)
and forced off (`MUSEPI_LAB_WORKERS=1`), interleaved, N times. Printed: median wall and CPU
seconds (this process and its reaped workers), the speed-up serial / pool, and the load
average, since on a shared machine other load decides much of a pool's gain.

    python perf/bench_pool_read.py [--repeat N] [--copies K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_usage_peer import folder_bytes, lay_out

from musepi_lab import _pool
from musepi_lab.analysis._usage_read import usage_rows


def timed(folder: Path, pooled: bool) -> tuple[float, float, object]:
    if pooled:  # the cores, whatever the load
        os.environ[_pool.WORKERS_ENV] = str(os.cpu_count() or 1)
        _pool.POOL_MIN_BYTES = 0
    else:
        os.environ[_pool.WORKERS_ENV] = "1"
    before, start = os.times(), time.perf_counter()
    rows = usage_rows(folder, duplicate_rows=False)[0]
    wall, after = time.perf_counter() - start, os.times()
    cpu = sum(after[:4]) - sum(before[:4])
    return wall, cpu, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args(argv)
    threshold = _pool.POOL_MIN_BYTES
    print(f"POOL_MIN_BYTES {threshold / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'MB':>7} {'serial s':>9} {'pool s':>8} {'speed-up':>9} {'cpu serial':>11} {'cpu pool':>9}"
    )
    with tempfile.TemporaryDirectory(prefix="musepi-pool-read-") as scratch:
        for copies in sorted({1, 2, 4, args.copies}):
            folder = lay_out(Path(scratch) / f"x{copies}", copies) / "projects"
            samples: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            reference = None
            for _ in range(args.repeat):
                for pooled in (False, True):
                    wall, cpu, rows = timed(folder, pooled)
                    if reference is None:
                        reference = rows
                    assert rows == reference, "the pool's rows differ from the serial ones"
                    samples[pooled].append((wall, cpu))
            med = {
                k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in samples.items()
            }
            print(
                f"{folder_bytes(folder.parent) / 1e6:>7.1f} {med[False][0]:>9.3f} {med[True][0]:>8.3f} "
                f"{med[False][0] / med[True][0]:>8.2f}x {med[False][1]:>11.3f} {med[True][1]:>9.3f}"
            )
    _pool.POOL_MIN_BYTES = threshold
    return 0


if __name__ == "__main__":
    sys.exit(main())
