"""`usage`: token and cost reports of the sessions' recorded usage (and the ccusage check)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._common import RaisingParser, UsageError, print_error, print_problems

USAGE_HELP = """\
Sums of the usage the agents recorded, per day, week, month, session or 5-hour billing block,
and per model: input (uncached), output, cache read, cache write (and its 1-hour part), cost.
Costs are the ones the harness recorded (per request; or, SWE-agent and OpenHands, its own
total for the session: the 'harness' column), else priced from the package's one price table
(musepi_lab.metrics.PRICES_SOURCE, PRICES_DATE); a model without a price is listed, never
priced with a default. Nothing is ever fetched: --offline is accepted for ccusage's sake and
changes nothing."""


def add_usage_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `musepi-lab usage` (options may come before, between or after the paths)."""
    p = sub.add_parser(
        "usage",
        help="token and cost reports per day, week, month, session or 5-hour block",
        description=USAGE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs=argparse.REMAINDER, metavar="[REPORT] PATH ...", help=_PATHS)
    _add_options(p)
    p.set_defaults(func=cmd_usage)


_PATHS = (
    "the aggregation first (daily, weekly, monthly, session or blocks; default daily), then "
    "session "
    "files or folders"
)


def _reparse(args: argparse.Namespace) -> argparse.Namespace:
    """Options written among the paths (argparse stops at the first positional)."""
    parser = RaisingParser(prog="musepi-lab usage")
    parser.add_argument("paths", nargs="*")
    _add_options(parser)
    try:
        given = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "paths"})
        return parser.parse_intermixed_args(list(args.paths), namespace=given)
    except SystemExit as exit_:
        raise UsageError(f"usage: cannot read the arguments {' '.join(args.paths)}") from exit_


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="JSON records instead of a table")
    p.add_argument("--offline", action="store_true", help="never fetch prices (always the case)")
    p.add_argument("--since", help="first day kept (YYYYMMDD or YYYY-MM-DD)")
    p.add_argument("--until", help="last day kept (YYYYMMDD or YYYY-MM-DD)")
    p.add_argument("--timezone", default="UTC", help="IANA zone for the dates (default UTC)")
    p.add_argument("--no-models", action="store_true", help="one row per key, models summed")
    p.add_argument(
        "--start-of-week",
        default="sunday",
        choices=("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"),
        help="weekly: the day a week starts on (default sunday, as ccusage)",
    )
    p.add_argument(
        "--max-problems", type=int, default=20, metavar="N", help="print at most N problems"
    )
    p.add_argument(
        "--compare-ccusage",
        metavar="CORPUS",
        nargs="?",
        const="",
        help="run the pinned ccusage on CORPUS (default: the PATHs as a corpus folder) and "
        "print the agreement table",
    )


def cmd_usage(args: argparse.Namespace) -> int:
    """Print the usage report; exit 1 when nothing was found, 0 otherwise."""
    from ..analysis._usage_rows import REPORTS

    args = _reparse(args)
    args.report = "daily"
    if args.paths and args.paths[0] in REPORTS:
        args.report, args.paths = args.paths[0], args.paths[1:]
    if args.compare_ccusage is not None:
        return _compare(args.compare_ccusage or (args.paths[0] if args.paths else ""))
    if not args.paths:
        raise UsageError("usage: give at least one session file or folder")
    # No pandas here: it takes longer to import than the report takes to make.
    from ..analysis._usage_read import usage_rows
    from ..analysis._usage_sums import SUMS, format_table, report_rows, report_window
    from ..metrics._prices import PRICES_DATE

    try:  # the arguments are checked before a folder of sessions is read
        report_window(args.report, args.timezone, args.since, args.until, args.start_of_week)
    except ValueError as error:
        raise UsageError(str(error)) from None
    for path in args.paths:
        if not Path(path).exists():
            hint = f" (the reports are {', '.join(REPORTS)})" if path.isalpha() else ""
            raise UsageError(f"no such file or folder: {path}{hint}")
    paths = [Path(p) for p in args.paths]
    records, duplicates, problems = usage_rows(paths, duplicate_rows=False)
    print_problems(problems, args.max_problems, file=sys.stderr)
    if not records:
        print_error(
            f"no billed requests found in {', '.join(args.paths)} (no session with recorded "
            "usage: Claude Code, Codex, pi, MusePi, Gemini CLI, opencode, OpenHands or "
            "SWE-agent files)"
        )
        return 1
    try:
        rows = report_rows(
            records,
            args.report,
            timezone=args.timezone,
            since=args.since,
            until=args.until,
            per_model=not args.no_models,
            start_of_week=args.start_of_week,
        )
    except (ValueError, KeyError) as error:
        raise UsageError(str(error)) from None
    unpriced = sorted({str(r["model"]) for r in records if r["cost_source"] == "unpriced"})
    if args.json:
        document = {
            "report": args.report,
            "timezone": args.timezone,
            "prices_date": PRICES_DATE,
            "rows": rows,
            "unpriced_models": unpriced,
            "duplicate_requests": len(duplicates),
            "problems": [str(p) for p in problems],
        }
        print(json.dumps(document, indent=2))
    else:
        names = ["key", *([] if args.no_models else ["model"]), *SUMS]
        print(format_table(rows, names))
    harness = len({r["session_id"] for r in records if r["cost_source"] == "harness"})
    if harness:
        print(
            f"note: the cost of {harness} session(s) is the harness's own total (SWE-agent's "
            "info.model_stats, OpenHands' accumulated_cost; the 'harness' column)",
            file=sys.stderr,
        )
    if unpriced:
        print(
            f"warning: no price for {', '.join(unpriced)}: their requests have no cost "
            "(the 'unpriced' column); add them to musepi_lab/metrics/_prices.py",
            file=sys.stderr,
        )
    _print_duplicates(duplicates)
    return 0


def _print_duplicates(duplicates: list[dict[str, object]]) -> None:
    """Say how many recorded requests were billed once although written twice."""
    if not duplicates:
        return
    reasons = sorted({str(d["reason"]) for d in duplicates})
    counts = ", ".join(f"{sum(d['reason'] == r for d in duplicates)} {r}" for r in reasons)
    print(
        f"note: {len(duplicates)} recorded requests repeat one already billed ({counts}); "
        "each is billed once",
        file=sys.stderr,
    )


def _compare(corpus: str) -> int:
    """Run the ccusage comparison; exit 0 when every difference has a cause, 1 otherwise,
    3 when node or npm is missing."""
    from ..conformance._ccusage import compare_usage_corpus, corpus_duplicates
    from ..conformance._ccusage_table import usage_agreement_table
    from ..conformance._reference import ReferenceRunError, ReferenceToolMissing

    if not corpus or not Path(corpus).is_dir():
        raise UsageError("--compare-ccusage needs a corpus folder (claude-code/, codex/, pi/)")
    try:
        rows, prices = compare_usage_corpus(corpus)
    except (ReferenceToolMissing, ReferenceRunError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    print(usage_agreement_table(rows, prices, corpus_duplicates(corpus)))
    return 0 if all(r.explained for r in rows) and all(p.equal for p in prices) else 1
