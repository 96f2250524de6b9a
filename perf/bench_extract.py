"""What it costs that a failing column is a problem, not an exception.

Every frame extracts its columns through `analysis._problems.extract_values` (one
comprehension per row, column by column only when an extractor raises). Measured: that
extraction of every entry and message row of the pi corpus files, against the bare
comprehension the frames used before (`{name: extract(row) ...}`, no guard), same rows,
same warm token cache, interleaved. Target: within 10% of the bare comprehension.
"""

from __future__ import annotations

import statistics
import sys

from _harness import CORPUS, bench_parser, interleaved_samples, repetitions

from musepi_lab.analysis._columns import ENTRY_COLUMNS, MESSAGE_COLUMNS
from musepi_lab.analysis._load import load_sessions, resolve_counter, session_views
from musepi_lab.analysis._problems import extract_values
from musepi_lab.analysis._tables import _entry_rows, _message_rows
from musepi_lab.formats._registry import iter_session_files

TARGET_RATIO = 1.10


def main(argv: list[str] | None = None) -> int:
    args = bench_parser(__doc__).parse_args(argv)
    repeat = repetitions(args, quick=5, full=15)
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    files = list(iter_session_files(CORPUS / "pi"))
    sessions, _ = load_sessions(files)
    views = session_views(sessions, resolve_counter(None))
    worst = 0.0
    print("frame       rows   bare (ms)   guarded (ms)   ratio")
    for name, make_rows, columns in (
        ("entries", _entry_rows, ENTRY_COLUMNS),
        ("messages", _message_rows, MESSAGE_COLUMNS),
    ):
        rows = list(make_rows(views))
        pairs = [(c.name, c.extract) for c in columns]
        problems: list = []
        times = interleaved_samples(
            {
                "bare": lambda rows=rows, pairs=pairs: [{n: e(r) for n, e in pairs} for r in rows],
                "guarded": lambda rows=rows, pairs=pairs, problems=problems: [
                    extract_values(r, pairs, problems) for r in rows
                ],
            },
            repeat,
            warm_up=True,
        )
        bare, guarded = (statistics.median(times[k]) for k in ("bare", "guarded"))
        worst = max(worst, guarded / bare)
        print(
            f"{name:<10}{len(rows):>6}{bare * 1e3:>12.1f}{guarded * 1e3:>15.1f}"
            f"{guarded / bare:>8.3f}"
        )
        assert not problems  # the corpus extracts cleanly: no column error
    print(f"\nworst ratio {worst:.3f} (target <= {TARGET_RATIO})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
