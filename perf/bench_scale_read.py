"""Benchmark: a generated dataset at scale, and `sessions_df` over it through the Parquet cache.

For each size (default 1,000 and 10,000 sessions) the script generates the dataset
(`write_scale_dataset`, a process pool of `--workers`), then reads it with
`sessions_df(folder, cache_dir=...)` twice, each read in a fresh process so its peak RSS
is its own: first with an empty cache (every file read, every part written), then from the
cache (nothing read but Parquet). The baseline is the first read of the same run: the
second must be at least 10x faster, and the first must grow linearly with the number of
files (growth exponent log(t_large / t_small) / log(n_large / n_small) at most 1.1).
`--plain` also times the in-memory read (`cache_dir=None`) for information.

    python perf/bench_scale_read.py [--sizes 1000,10000] [--workers 2] [--quick] [--check]

The data goes to a temporary folder (or `--workdir`), never into the repository, and is
deleted afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEEDUP_TARGET = 10.0
EXPONENT_TARGET = 1.1
WIDE_MARGIN = 1.5


def _measure(folder: str, cache: str) -> None:
    """Child process: one `sessions_df` read, its seconds and this process's peak RSS."""
    from musepi_lab.analysis import problems_of, sessions_df

    start = time.perf_counter()
    frame = sessions_df(folder, cache_dir=cache or None)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rows": len(frame),
                "errors": len(problems_of(frame)),
                "peak_mib": peak_kib / 1024,
            }
        )
    )


def _child(folder: Path, cache: Path | None) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", str(folder), str(cache or "")]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated dataset sizes")
    parser.add_argument("--workers", type=int, default=2, help="generator processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workdir", default=None, help="where the data goes (default: a temp folder)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--plain", action="store_true", help="also time the in-memory read")
    parser.add_argument("--quick", action="store_true", help="sizes 100 and 1,000")
    parser.add_argument("--check", action="store_true", help="exit 1 on a target missed widely")
    parser.add_argument("--measure", nargs=2, metavar=("FOLDER", "CACHE"), help=argparse.SUPPRESS)
    return parser


def _run_size(root: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    from musepi_lab.datasets import write_scale_dataset

    folder, cache = root / f"n{n}", root / f"cache{n}"
    start = time.perf_counter()
    manifest = write_scale_dataset(folder, n, seed=args.seed, workers=args.workers)
    row: dict[str, float] = {"n": n, "generate_s": time.perf_counter() - start}
    row["mb"] = manifest["counts"]["bytes"] / 1e6
    cold = _child(folder, cache)
    warm = _child(folder, cache)
    row.update(
        cold_s=cold["seconds"],
        cold_mib=cold["peak_mib"],
        warm_s=warm["seconds"],
        warm_mib=warm["peak_mib"],
    )
    row["rows"] = cold["rows"]
    if args.plain:
        plain = _child(folder, None)
        row.update(plain_s=plain["seconds"], plain_mib=plain["peak_mib"])
    print(
        f"n={n:>6}: generate {row['generate_s']:7.1f} s ({row['mb']:.0f} MB, {args.workers} workers)"
        f" | first read {row['cold_s']:7.1f} s, peak {row['cold_mib']:6.0f} MiB"
        f" | from cache {row['warm_s']:6.2f} s, peak {row['warm_mib']:6.0f} MiB"
        f" | {row['cold_s'] / row['warm_s']:5.1f}x"
        + (
            f" | in memory {row['plain_s']:7.1f} s, peak {row['plain_mib']:6.0f} MiB"
            if args.plain
            else ""
        ),
        flush=True,
    )
    return row


def main() -> int:
    args = _parser().parse_args()
    if args.measure:
        _measure(*args.measure)
        return 0
    sizes = [100, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    root = Path(args.workdir or tempfile.mkdtemp(prefix="musepi-scale-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"data in {root} (cpu count {os.cpu_count()}); timings under the machine's current load")
    try:
        rows = [_run_size(root, n, args) for n in sizes]
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    speedups = [r["cold_s"] / r["warm_s"] for r in rows]
    ok = min(speedups) >= SPEEDUP_TARGET
    wide = min(speedups) < SPEEDUP_TARGET / WIDE_MARGIN
    print(
        f"second read from the cache: {min(speedups):.1f}x faster at least (target >= {SPEEDUP_TARGET:.0f}x)"
    )
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        exponent = math.log(large["cold_s"] / small["cold_s"]) / math.log(large["n"] / small["n"])
        print(
            f"growth exponent of the first read, n={small['n']}..{large['n']}: {exponent:.2f} "
            f"(target <= {EXPONENT_TARGET})"
        )
        ok = ok and exponent <= EXPONENT_TARGET
        wide = wide or exponent > EXPONENT_TARGET * WIDE_MARGIN
    print("target met" if ok else "target missed")
    return 1 if args.check and wide else 0


if __name__ == "__main__":
    sys.exit(main())
