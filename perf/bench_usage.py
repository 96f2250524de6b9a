"""Benchmark: the usage report over the corpus folders with usage, against reading them and
against ccusage itself.

Per repetition: reading the sessions of the Claude Code, Codex and pi corpus folders
(`load_sessions`, the baseline), `usage_frame` of those sessions (the rows), the four
reports of that frame, and `usage_df` end to end. When node and the pinned ccusage packages
are there (`python conformance/run.py ccusage` installs them), each ccusage command's daily
report on the same folder is timed once per repetition too (uncached, its own process, Node's
start-up included), for scale. Median of N interleaved repetitions.

    python perf/bench_usage.py [--quick] [--check] [--repeat N]

Target: the rows and the reports cost at most 0.5x the reading they follow (reading is the
work; the usage layer adds little). `--check` exits 1 only above 0.75x.
"""

from __future__ import annotations

import shutil
import statistics
import sys

from _harness import CORPUS, bench_parser, interleaved_samples, repetitions

from musepi_lab.analysis._load import load_sessions
from musepi_lab.analysis._usage import REPORTS, usage_df, usage_frame, usage_report

TARGET = 0.5
WIDE_MARGIN = 0.75


def main(argv: list[str] | None = None) -> int:
    args = bench_parser(__doc__).parse_args(argv)
    repeat = repetitions(args, quick=2, full=7)
    folders = [CORPUS / k for k in ("claude-code", "codex", "pi") if (CORPUS / k).is_dir()]
    if not folders:
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    sessions, _ = load_sessions(folders)
    frame = usage_frame(sessions)
    functions = {
        "read (baseline)": lambda: load_sessions(folders),
        "usage_frame": lambda: usage_frame(sessions),
        "4 reports": lambda: [usage_report(frame, by) for by in REPORTS],
        "usage_df end to end": lambda: usage_df(folders),
    }
    if shutil.which("node") and not args.quick:
        from musepi_lab.conformance._ccusage import corpus_usage_folders, run_ccusage_uncached

        for kind, folder, files in corpus_usage_folders(CORPUS)[:3]:
            functions[f"ccusage daily {folder}"] = lambda kind=kind, files=files: (
                run_ccusage_uncached(kind, files, "daily")
            )
    samples = interleaved_samples(functions, repeat)
    medians = {name: statistics.median(v) for name, v in samples.items()}
    base = medians["read (baseline)"]
    print(f"{len(frame):,} billed requests in {len(sessions)} sessions; {repeat} repetitions")
    print(f"{'step':<34} {'median s':>9} {'x read':>7}")
    for name, seconds in medians.items():
        print(f"{name:<34} {seconds:>9.3f} {seconds / base:>7.2f}")
    added = (medians["usage_frame"] + medians["4 reports"]) / base
    verdict = "holds" if added <= TARGET else "missed"
    print(f"rows + reports: {added:.2f}x read (target ≤ {TARGET}x): {verdict}")
    if args.check and added > WIDE_MARGIN:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
