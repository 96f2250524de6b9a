"""Benchmark: the frames cache on many tiny files: first pass (every part written) and
second pass (from the cache), against the same frame read without a cache.

Copies the two smallest pi corpus sessions (2 KB and 10 KB) `--files` times in all, 500
to a folder, then runs, each in a fresh process (its own peak memory), in turn:
`sessions_df(folder)` without a cache (the baseline), `sessions_df(folder, cache_dir=...)`
on an empty cache (first pass) and again (second pass). With
`BENCH_BASELINE_TREE=<checkout>` the same three runs of that checkout (the code before a
change) are made too, on the same files.

    python perf/bench_cache_first_pass.py [--files N]

Targets (issue 30): first pass ≤ 1.5x the uncached read, memory within 1.5x; second pass
≥ 10x faster than the uncached read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import CORPUS

ROOT = Path(__file__).resolve().parent.parent


def _measure(folder: str, cache: str) -> None:
    """Child process: one `sessions_df`, its seconds and this process's peak RSS."""
    from musepi_lab.analysis import sessions_df

    start = time.perf_counter()
    found = sessions_df(folder, cache_dir=cache or None)
    frame = found[0] if isinstance(found, tuple) else found  # older code: (frame, problems)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rows": len(frame), "peak_mib": peak}))


def _child(tree: Path, folder: Path, cache: Path | None) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", str(folder), str(cache or "")]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def lay_out(folder: Path, files: int) -> None:
    small = sorted((CORPUS / "pi").rglob("*.jsonl"), key=lambda p: p.stat().st_size)[:2]
    for n in range(files):
        target = folder / f"d{n // 500:03}" / f"s{n:05}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(small[n % 2], target)


def measure(name: str, tree: Path, folder: Path, scratch: Path) -> None:
    cache = scratch / f"cache-{name}"
    plain = _child(tree, folder, None)
    first = _child(tree, folder, cache)
    second = _child(tree, folder, cache)
    assert plain["rows"] == first["rows"] == second["rows"]
    print(
        f"{name:<8} uncached {plain['seconds']:6.2f} s {plain['peak_mib']:5.0f} MiB | first "
        f"{first['seconds']:6.2f} s {first['peak_mib']:5.0f} MiB "
        f"({first['seconds'] / plain['seconds']:.2f}x, memory "
        f"{first['peak_mib'] / plain['peak_mib']:.2f}x) | second {second['seconds']:5.2f} s "
        f"({plain['seconds'] / second['seconds']:.1f}x faster than uncached)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        _measure(*args.measure)
        return 0
    with tempfile.TemporaryDirectory(prefix="musepi-cache-first-") as scratch:
        folder = Path(scratch) / "sessions"
        lay_out(folder, args.files)
        load = os.getloadavg()[0]
        print(f"{args.files:,} files, load average {load:.1f} on {os.cpu_count()} cores")
        trees = [("ours", ROOT)]
        if os.environ.get("BENCH_BASELINE_TREE"):
            trees.append(("before", Path(os.environ["BENCH_BASELINE_TREE"])))
        for name, tree in trees:
            measure(name, tree, folder, Path(scratch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
