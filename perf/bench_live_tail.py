"""Benchmark: one update of a live view against a full read of the file at each write.

For each pi corpus file (and the bundled sample), the file is written in 20 appends; at
each append the tail (`formats._tail.advance`, only the new bytes) and the baseline timed in
the same run, `read_session` of the whole prefix written so far, bring the session up to
date. Also timed: one `analysis.live_summary` (context, window, next cut, cost) of the
updated session with a shared counter, which the live views add to each update. Medians of
N interleaved repetitions of the whole sequence.

    python perf/bench_live_tail.py [--quick] [--check] [--repeat N]

Target (issue 22): an update within a second of a write (tail + summary well under 1 s at
the last append of the largest file); the tail's share of the baseline falls as the file
grows. `--check` exits 1 only when the target is missed by a wide margin (> 1.5 s).
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _harness import CORPUS, REPO, bench_parser, median_seconds, repetitions

from musepi_lab.analysis._live import live_summary
from musepi_lab.formats._registry import read_session
from musepi_lab.formats._tail import TailState, advance, empty_tail
from musepi_lab.tokens._counter import TokenCounter

FILES = [
    CORPUS / "pi" / "large-session.jsonl",
    CORPUS / "pi" / "before-compaction.jsonl",
    REPO / "datasets" / "sample" / "sample-0001.jsonl",
]
APPENDS = 20
TARGET_SECONDS = 1.0
WIDE_MARGIN = 1.5


def pieces(data: bytes, count: int) -> list[bytes]:
    """The file cut into `count` appends (cuts inside lines: the tail keeps the rest)."""
    cuts = [len(data) * k // count for k in range(count + 1)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def measure(file: Path, scratch: Path, repeat: int) -> dict[str, float]:
    """Median seconds of the tail, the full reads, the last append and one summary."""
    data = file.read_bytes()
    parts = pieces(data, APPENDS)
    prefixes = []
    for index in range(len(parts)):
        prefix = scratch / f"{file.stem}-{index}.jsonl"
        prefix.write_bytes(b"".join(parts[: index + 1]))
        prefixes.append(prefix)

    def tail_all() -> TailState:
        state = empty_tail(file)
        for part in parts:
            state = advance(state, part)
        return state

    def reads_all() -> None:
        for prefix in prefixes:
            read_session(prefix)

    before_last = empty_tail(file)
    for part in parts[:-1]:
        before_last = advance(before_last, part)
    final = tail_all()
    counter = TokenCounter.for_profile("musepi")
    live_summary(final.session, counter=counter)  # counts cached, as in a running view
    functions: dict[str, Callable[[], object]] = {
        "tail": tail_all,
        "full reads": reads_all,
        "last tail": lambda: advance(before_last, parts[-1]),
        "summary": lambda: live_summary(final.session, counter=counter),
    }
    return median_seconds(functions, repeat)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=2, full=7)
    files = [f for f in FILES if f.is_file()]
    print(f"median of {repeat}, {APPENDS} appends per file, {os.cpu_count()} CPUs\n")
    print(
        f"{'file':<28} {'tail Σ':>9} {'full reads Σ':>13} {'ratio':>7} {'last tail':>10}"
        f" {'summary':>9}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for file in files:
            result = measure(file, Path(scratch), repeat)
            ratio = result["tail"] / result["full reads"]
            update = result["last tail"] + result["summary"]
            worst = max(worst, update)
            print(
                f"{file.name:<28} {result['tail'] * 1e3:>7.1f}ms"
                f" {result['full reads'] * 1e3:>11.1f}ms {ratio:>6.2f}x"
                f" {result['last tail'] * 1e3:>8.1f}ms {result['summary'] * 1e3:>7.1f}ms"
            )
    print(
        f"\nslowest update (last tail + summary): {worst * 1e3:.0f} ms"
        f" (target < {TARGET_SECONDS:.0f} s)"
    )
    if args.check and worst > TARGET_SECONDS * WIDE_MARGIN:
        print(f"FAIL: {worst:.2f} s is far above the {TARGET_SECONDS} s target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
