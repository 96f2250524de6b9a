"""The replay's calibration against the recorded bills, per corpus session (issue 10).

For every corpus session that records usage (the pi fixtures, Claude Code and Codex; a
Claude Code session's subagent files are read with it), replays `none` at an unbounded
window, and `recorded` too when the session compacted, and prints one markdown row each:
recorded → replayed input, cache read, cache write and cost; the cost error; the misses the
cache model did not predict (`calibration_summary`'s `unpredicted_misses`, with their share
of the recorded cost); and the cost error over the other requests.

Then, for one session (`--gaps`, default pi/large-session), every unpredicted miss with the
seconds since the request before it, and the longest such gap among the requests the
provider did read from cache: a miss a few seconds after a request that cached the prefix,
beside hits minutes later, is what no rule of context, timestamps and provider predicts.

    python perf/calibration_table.py [--gaps pi/large-session.jsonl]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd
from _harness import CORPUS

from musepi_lab import read_session, replay_session
from musepi_lab.replay._calibration import calibration_rows, calibration_summary
from musepi_lab.session import Session
from musepi_lab.session._session import parse_timestamp_ms

FOLDERS = ("pi", "claude-code", "codex")
PARTS = ("input", "cache_read", "cache_write")


def corpus_sessions(root: Path) -> Iterator[tuple[str, Path]]:
    """`(label, file)` of every session file the calibration covers."""
    for folder in FOLDERS:
        for file in sorted((root / folder).rglob("*.jsonl")):
            rel = file.relative_to(root).parts
            if folder == "claude-code" and len(rel) > 2:
                continue  # a subagent: read with its session
            middle = "" if len(rel) == 2 else f"{rel[1][:8]}/…/"
            yield f"{folder}/{middle}{file.stem[:24]}", file


def strategies(session: Session) -> tuple[str, ...]:
    compacted = any(e.type == "compaction" for e in session.path())
    return ("none", "recorded") if compacted else ("none",)


def _k(tokens: float) -> str:
    return f"{tokens / 1e3:,.1f}k"


def table_row(label: str, strategy: str, summary: dict[str, float]) -> str:
    moved = " | ".join(
        f"{_k(summary[f'recorded_{p}'])} → {_k(summary[f'replayed_{p}'])}" for p in PARTS
    )
    return (
        f"| {label} | {strategy} | {int(summary['requests'])} | {moved} | "
        f"${summary['recorded_cost_usd']:.2f} → ${summary['replayed_cost_usd']:.2f} | "
        f"{summary['error_cost_usd']:+.1%} | {int(summary['unpredicted_misses'])} "
        f"({summary['unpredicted_miss_cost_share']:.0%}) | {summary['error_cost_usd_rest']:+.1%} |"
    )


def miss_gaps(session: Session) -> pd.DataFrame:
    """Per request with recorded usage: the idle seconds before it (from the reply of the
    previous request with recorded usage to the entry that sent this one: the user message
    or tool result just before its reply), whether the provider read most of the prompt
    from cache, and whether the replay did."""
    rows = calibration_rows(session, replay_session(session, "none", window=10**9))
    path = session.path()
    index = {e.id: i for i, e in enumerate(path)}

    def ms(i: int) -> float | None:
        stamp = path[i].timestamp if i >= 0 else None
        return parse_timestamp_ms(stamp) if stamp else None

    gaps: list[float | None] = []
    previous: float | None = None
    for entry_id in rows["entry_id"]:
        at = index[entry_id]
        sent, done = ms(at - 1), ms(at)
        gaps.append((sent - previous) / 1000 if sent is not None and previous is not None else None)
        previous = done
    recorded = rows[[f"recorded_{p}" for p in PARTS]].sum(axis=1)
    replayed = rows[[f"replayed_{p}" for p in PARTS]].sum(axis=1)
    return pd.DataFrame(
        {
            "entry_id": rows["entry_id"],
            "gap_s": pd.Series(gaps, dtype="float"),
            "recorded_hit": rows["recorded_cache_read"] * 2 >= recorded,
            "replayed_hit": rows["replayed_cache_read"] * 2 >= replayed,
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaps", default="pi/large-session.jsonl", help="corpus file")
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    print(
        "| session | strategy | requests | input rec → rep | cache read rec → rep | "
        "cache write rec → rep | cost rec → rep | cost error | unpredicted misses (cost share) "
        "| cost error, other requests |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, file in corpus_sessions(CORPUS):
        session = read_session(file)
        for strategy in strategies(session):
            rows = calibration_rows(session, replay_session(session, strategy, window=10**9))
            if len(rows):
                print(table_row(label, strategy, calibration_summary(rows)))

    gaps = miss_gaps(read_session(CORPUS / args.gaps))
    missed = gaps[gaps["replayed_hit"] & ~gaps["recorded_hit"]]
    read = gaps[gaps["recorded_hit"]]
    print(f"\n{args.gaps}: {len(missed)} unpredicted misses; seconds since the request before:")
    print("  " + ", ".join(f"{g:.0f}" for g in sorted(missed["gap_s"].dropna())))
    print(f"longest gap before a request the provider read from cache: {read['gap_s'].max():.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
