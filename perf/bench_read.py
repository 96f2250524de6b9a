"""Benchmark: `read_session` against bare JSON parsing of the same bytes.

For the largest corpus file of each format, times `read_session` (parse, migrate, build
entries and the tree, check it) and, in the same run, the baselines: read the same files
and `json.loads` every line (stdlib, the issue's baseline) or `orjson.loads` every line
(the parser the reader itself uses, so that ratio is the reader's own overhead). JSON
documents (`.traj`, `.json`) are parsed whole. Median of N interleaved repetitions.

A third baseline, `+held`, is `orjson.loads` plus one slotted object per parsed record that
holds its type and the record: the least a reader that keeps every record as it came and
converts on first use (a lazy importer) could cost. Its ratio to `orjson` is the ceiling of
that design; everything a reader checks or converts while reading comes on top.

    python perf/bench_read.py [--quick] [--check] [--repeat N]

Target (issue): read_session ≤ 2x the json.loads baseline, aim 1.3x. `--check` exits 1
only when the target is missed by a wide margin (ratio > 1.5 × target).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson
from _harness import CORPUS, bench_parser, median_seconds, repetitions

from musepi_lab.formats._registry import detect_format, iter_session_files, read_session

TARGET = 2.0
AIM = 1.3
WIDE_MARGIN = 1.5


def parse_lines(files: list[str], loads: Callable[[bytes], object]) -> int:
    """Read the files and parse them as a bare loop would: JSONL per line, else whole."""
    count = 0
    for file in files:
        with open(file, "rb") as fh:
            data = fh.read()
        if not file.endswith(".jsonl"):
            loads(data)
            count += 1
            continue
        for line in data.split(b"\n"):
            if line.strip():
                loads(line)
                count += 1
    return count


class _Held:
    """One parsed record kept as it came, with its type (the `+held` baseline)."""

    __slots__ = ("kind", "record")

    def __init__(self, kind: object, record: object) -> None:
        self.kind = kind
        self.record = record


def load_and_hold(raw: bytes) -> _Held:
    """`orjson.loads` and one object holding the record and its type."""
    record = orjson.loads(raw)
    return _Held(record.get("type") if type(record) is dict else None, record)


def files_read(path: Path) -> list[str]:
    """The files `read_session(path)` reads: the session's own and every linked one (Claude
    Code subagents), so a parse baseline covers the same bytes."""
    session = read_session(path)
    return [str(path)] + [s.source_path for s in session.linked if s.source_path]


def largest_per_format(root: Path) -> list[tuple[str, Path]]:
    """The largest session file of each format under the corpus."""
    best: dict[str, Path] = {}
    for file in iter_session_files(root):
        fmt = detect_format(file)
        if fmt not in best or file.stat().st_size > best[fmt].stat().st_size:
            best[fmt] = file
    return sorted(best.items())


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=3, full=15)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0

    targets = largest_per_format(CORPUS)
    if args.quick:
        targets = [t for t in targets if t[0] == "pi"] or targets[:1]
    print(f"read_session vs bare parsing, median of {repeat} (corpus {CORPUS})\n")
    header = (
        f"{'format':<12} {'file':<44} {'MB':>5} {'read':>8} {'json':>8} {'orjson':>8}"
        f" {'/json':>6} {'/orjson':>8} {'+held/orjson':>13}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for fmt, path in targets:
        files = files_read(path)
        size = sum(os.path.getsize(f) for f in files) / 1e6
        result = median_seconds(
            {
                "read": partial(read_session, path),
                "json": partial(parse_lines, files, json.loads),
                "orjson": partial(parse_lines, files, orjson.loads),
                "held": partial(parse_lines, files, load_and_hold),
            },
            repeat,
        )
        ratio_json = result["read"] / result["json"]
        ratio_orjson = result["read"] / result["orjson"]
        worst = max(worst, ratio_json)
        print(
            f"{fmt:<12} {path.name[:44]:<44} {size:>5.2f} "
            f"{result['read'] * 1e3:>6.1f}ms {result['json'] * 1e3:>6.1f}ms "
            f"{result['orjson'] * 1e3:>6.1f}ms {ratio_json:>5.2f}x {ratio_orjson:>7.2f}x"
            f" {result['held'] / result['orjson']:>12.2f}x"
        )
    print(f"\nworst ratio vs json.loads: {worst:.2f}x (target ≤{TARGET}x, aim {AIM}x)")
    if args.check and worst > TARGET * WIDE_MARGIN:
        print(f"FAIL: {worst:.2f}x is far above the {TARGET}x target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
