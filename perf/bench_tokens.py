"""Benchmark: counting a whole session's tokens against tiktoken's own batch encode.

On the largest pi corpus file, times `TokenCounter("o200k_base").count_entries(entries)`
with a fresh counter (walk the entries, collect every message's fragments, one
`encode_ordinary_batch`, sum back) against the baseline measured in the same run:
tiktoken's `encode_ordinary_batch` of exactly those fragment texts, already collected.
Both use tiktoken's thread pool (8 threads), so like is compared with like. Median of N
interleaved repetitions. Informative rows (no target): cl100k_base, the heuristic
methods, a recount from the per-entry cache, a one-thread encode loop, and the one-time
cost of building the encoding offline.

    python perf/bench_tokens.py [--quick] [--check] [--repeat N]

Target (issue): o200k counting ≤ 1.2x the baseline. `--check` exits 1 only when it is
missed by a wide margin (ratio > 1.5 × target).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from _harness import CORPUS, bench_parser, median_seconds, repetitions

from musepi_lab.formats._registry import read_session
from musepi_lab.session._messages import entry_to_message
from musepi_lab.session._model import Entry
from musepi_lab.tokens._bpe import get_encoding
from musepi_lab.tokens._counter import TokenCounter
from musepi_lab.tokens._estimate import text_fragments

SESSION_FILE = CORPUS / "pi" / "before-compaction.jsonl"
TARGET = 1.2
WIDE_MARGIN = 1.5


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=3, full=15)
    if not SESSION_FILE.is_file():
        print(f"{SESSION_FILE} not found; nothing to measure")
        return 0

    start = time.perf_counter()
    encodings = {name: get_encoding(name) for name in ("o200k_base", "cl100k_base")}
    load_seconds = time.perf_counter() - start

    session = read_session(SESSION_FILE)
    entries = session.entries
    texts = [
        fragment
        for entry in entries
        if (message := entry_to_message(entry)) is not None
        for fragment in text_fragments(message)
        if fragment
    ]
    o200k = encodings["o200k_base"]
    baseline_tokens = sum(len(ids) for ids in o200k.encode_ordinary_batch(texts))
    warm = TokenCounter("o200k_base")
    warm.count_entries(entries)

    def fresh(method: str) -> Callable[[], object]:
        # Counts are memoised on the entries: each timed call counts new entries over the
        # same records (made before the timing), so every call counts from scratch.
        supply = [[Entry.from_record(e.record) for e in entries] for _ in range(repeat + 1)]
        return lambda: TokenCounter(method).count_entries(supply.pop())

    functions: dict[str, Callable[[], object]] = {
        "tiktoken batch (baseline)": lambda: o200k.encode_ordinary_batch(texts),
        "count_entries o200k_base": fresh("o200k_base"),
        "tiktoken batch cl100k": lambda: encodings["cl100k_base"].encode_ordinary_batch(texts),
        "count_entries cl100k_base": fresh("cl100k_base"),
        "count_entries pi": fresh("pi"),
        "count_entries musepi": fresh("musepi"),
        "count_entries o200k, cached": lambda: warm.count_entries(entries),
        "encode_ordinary loop, 1 thread": lambda: [o200k.encode_ordinary(t) for t in texts],
    }
    if args.quick:
        functions = dict(list(functions.items())[:2])
    result = median_seconds(functions, repeat)
    base = result["tiktoken batch (baseline)"]
    base_cl = result.get("tiktoken batch cl100k")

    size = sum(len(t) for t in texts)
    print(
        f"{SESSION_FILE.name}: {len(entries)} entries, {len(texts)} fragments, "
        f"{size / 1e6:.2f}M chars, {baseline_tokens} o200k tokens; "
        f"median of {repeat}, {os.cpu_count()} CPUs\n"
    )
    print(f"{'what':<32} {'time':>9} {'ratio':>7}")
    print("-" * 50)
    for name, seconds in result.items():
        ref = base_cl if "cl100k" in name and base_cl else base
        print(f"{name:<32} {seconds * 1e3:>7.1f}ms {seconds / ref:>6.2f}x")
    print(f"{'build both encodings (once)':<32} {load_seconds * 1e3:>7.1f}ms")

    counted = sum(TokenCounter("o200k_base").count_entries(entries))
    extras = counted - baseline_tokens  # images and snapcompact frames, not text
    print(f"\ncount_entries total {counted} = baseline tokens {baseline_tokens} + extras {extras}")
    ratio = result["count_entries o200k_base"] / base
    print(f"o200k counting vs tiktoken batch: {ratio:.2f}x (target ≤{TARGET}x)")
    if args.check and ratio > TARGET * WIDE_MARGIN:
        print(f"FAIL: {ratio:.2f}x is far above the {TARGET}x target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
