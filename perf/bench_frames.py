"""Benchmark: `entries_df` over the whole corpus, given loaded sessions and end to end.

Every repetition reads the corpus afresh (timed as "read"), then builds `entries_df` from
those just-loaded sessions (the target: sessions cache their tree index on first use, so a
fresh set is the honest case), then again from the same, now warm, sessions, and end to
end from the corpus folder. The baseline, measured in the same run, is the least a frame
of entries can cost: `pandas.DataFrame.from_records` of each entry's bare id, parent id,
type and timestamp. The other four frames are timed for information. Median of N interleaved repetitions.

    python perf/bench_frames.py [--quick] [--check] [--repeat N]

Target (issue): `entries_df` over the corpus in under 1 s (given loaded sessions).
`--check` exits 1 only when it is missed by a wide margin (over 1.5 s).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from _harness import CORPUS, bench_parser, repetitions

from musepi_lab.analysis._tables import (
    compactions_df,
    entries_df,
    messages_df,
    sessions_df,
    tool_calls_df,
)
from musepi_lab.formats._registry import iter_session_files, iter_sessions
from musepi_lab.session._session import Session

TARGET_SECONDS = 1.0
WIDE_MARGIN = 1.5


def read_corpus(files: list[Path]) -> list[Session]:
    """Every session of the given files."""
    sessions: list[Session] = []
    for file in files:
        sessions.extend(iter_sessions(file))
    return sessions


def bare_frame(sessions: list[Session]) -> pd.DataFrame:
    """The baseline: a frame of each entry's bare fields, nothing derived."""
    records = [
        {"id": e.id, "parent_id": e.parent_id, "type": e.type, "timestamp": e.timestamp}
        for s in sessions
        for e in s.entries
    ]
    return pd.DataFrame.from_records(records)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=2, full=7)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    files = list(iter_session_files(CORPUS))  # a reader that fails is an error
    if args.quick:
        files = [f for f in files if f.parent.name == "pi"] or files

    times: dict[str, list[float]] = {}

    def timed(name: str, function: Callable[[], object]) -> object:
        gc.collect()
        start = time.perf_counter()
        value = function()
        times.setdefault(name, []).append(time.perf_counter() - start)
        return value

    frame = None
    for _ in range(repeat):
        sessions = timed("read corpus", lambda: read_corpus(files))
        frame = timed("entries_df, fresh sessions", lambda s=sessions: entries_df(s))
        timed("entries_df, warm sessions", lambda s=sessions: entries_df(s))
        timed("baseline: bare from_records", lambda s=sessions: bare_frame(s))
        timed("end to end: read + entries_df", lambda: entries_df(files))
        if not args.quick:
            for function in (messages_df, tool_calls_df, compactions_df, sessions_df):
                timed(f"{function.__name__}, warm", lambda f=function, s=sessions: f(s))
    result = {name: statistics.median(values) for name, values in times.items()}
    base = result["baseline: bare from_records"]

    assert frame is not None
    formats = sessions_df(read_corpus(files))["format"].value_counts()
    print(
        f"{len(files)} files, {frame['session_id'].nunique()} sessions, {len(frame)} entries "
        f"({', '.join(f'{k} {v}' for k, v in formats.items())}); median of {repeat}\n"
    )
    print(f"{'what':<32} {'time':>9} {'vs baseline':>12}")
    print("-" * 55)
    for name, seconds in result.items():
        print(f"{name:<32} {seconds * 1e3:>7.1f}ms {seconds / base:>11.1f}x")
    seconds = result["entries_df, fresh sessions"]
    print(f"\nentries_df over the corpus: {seconds:.3f} s (target < {TARGET_SECONDS} s)")
    if args.check and seconds > TARGET_SECONDS * WIDE_MARGIN:
        print(f"FAIL: {seconds:.3f} s is far above the {TARGET_SECONDS} s target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
