"""Benchmark: what proving a part's content costs a resume (issue 26, item 4).

A resume of a Dask run used to trust a part from its footer alone (`part_info`); it now reads
the part's rows back and checks them against the checksum in the footer (`check_part`), and
`read_parts` checks every part it reads. `--n` parts (default 500) of 12 real rows each (a
serial run of the bundled sample: 6 model-free strategies × 2 budgets) are written with the
package's writer, then timed over all parts, interleaved:

- `footer`: `part_info` of every part (the old resume check; baseline);
- `check`: `check_part` of every part (the new one);
- `read`: `pq.read_table` of every part (the floor of any full check);
- `read_parts`: `read_parts` of the folder (the manifest's parts, each checked).

    python perf/bench_part_check.py [--quick] [--check] [--repeat N] [--n N]

Target: a resume's check of 10,000 parts stays under 30 s on 2 cores (3 ms a part).
`--check` exits 1 only when that is missed by a wide margin (> 4.5 ms a part).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from _harness import REPO, bench_parser, median_seconds, repetitions

from musepi_lab.bench import run_benchmark
from musepi_lab.bench._parts import (
    check_part,
    part_file,
    part_info,
    read_parts,
    write_manifest,
    write_part,
)

TARGET_MS_PER_PART = 3.0
WIDE_MARGIN = 1.5


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=500, help="parts to write")
    args = parser.parse_args()
    repeat = repetitions(args, quick=2, full=7)
    n = 50 if args.quick else args.n
    strategies = ["none", "truncate", "observation-masking", "prune", "extractive", "snapcompact"]
    sample = REPO / "datasets" / "sample" / "sample-0001.jsonl"
    df = run_benchmark([sample], strategies, [8000, 20000], executor="serial", progress=False)
    rows = df.to_dict("records")
    with tempfile.TemporaryDirectory(prefix="musepi-lab-part-check-") as folder:
        out = Path(folder)
        results = out / "results"
        results.mkdir()
        keys = [hashlib.sha256(str(k).encode()).hexdigest() for k in range(n)]
        for key in keys:
            write_part(results, key, rows)
        listed = [{"file": part_file(k), "rows": len(rows), "errors": 0} for k in keys]
        write_manifest(out, listed, {})
        assert all(check_part(results, k, len(rows))[0] for k in keys)  # each part proves itself
        times = median_seconds(
            {
                "footer": lambda: [part_info(results / part_file(k)) for k in keys],
                "check": lambda: [check_part(results, k, len(rows)) for k in keys],
                "read": lambda: [pq.read_table(results / part_file(k)) for k in keys],
                "read_parts": lambda: read_parts(out),
            },
            repeat,
        )
    base = times["footer"]
    print(f"{n} parts of {len(rows)} rows, median of {repeat} (machine shared by other engineers)")
    print(f"{'what':<11} {'total s':>8} {'ms/part':>8} {'× footer':>9}")
    for name, seconds in times.items():
        print(f"{name:<11} {seconds:8.3f} {seconds / n * 1000:8.3f} {seconds / base:9.1f}")
    per_part = times["check"] / n * 1000
    met = per_part <= TARGET_MS_PER_PART
    print(f"target: check ≤ {TARGET_MS_PER_PART} ms a part: {'met' if met else 'missed'}")
    if args.check and per_part > TARGET_MS_PER_PART * WIDE_MARGIN:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
