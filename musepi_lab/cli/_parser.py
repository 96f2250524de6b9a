"""The argument parser and the entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..session import SessionReadError
from ._bench import (
    SAMPLE_DIR,
    add_probe_options,
    add_run_options,
    cmd_bench,
    cmd_demo,
    cmd_report,
)
from ._common import UsageError
from ._conformance import budget_list, cmd_conformance
from ._export import add_export_parser
from ._sessions import cmd_convert, cmd_datasets, cmd_inspect, cmd_navigate
from ._usage import add_usage_parser
from ._watch import add_watch_parser

DESCRIPTION = """\
A research workbench for context compaction in coding-agent sessions: read sessions of eight
agent formats, run compaction strategies at any token budget, replay whole sessions under a
window and compare what each strategy costs and loses.

Start with `musepi-lab demo` (the bundled sample, every model-free strategy)."""


def _add_navigate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `navigate` command: move a session's leaf, summarizing what is left."""
    p = sub.add_parser("navigate", help="move a session's leaf, summarizing what is left")
    p.add_argument("file")
    p.add_argument("target", metavar="TARGET_ID")
    p.add_argument("--summarize", action="store_true", help="ask the model for a branch summary")
    p.add_argument("--out", default=None, help="write the navigated session here (JSONL)")
    p.add_argument("--profile", choices=("musepi", "pi"), default="musepi")
    p.add_argument("--label", default=None)
    p.add_argument("--instructions", default=None, help="custom summary instructions")
    p.add_argument("--cache-dir", default=None, help="summary cache folder")
    p.add_argument("--strict", action="store_true")
    p.set_defaults(func=cmd_navigate)


def add_datasets_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`musepi-lab datasets`: list datasets and sessions, or `datasets generate` one."""
    p = sub.add_parser(
        "datasets",
        help="list registry datasets and the sessions found; `datasets generate` makes one",
        description="List the registry datasets and the sessions found, or with "
        "`datasets generate --n N --out DIR [--seed S]` write N generated sessions "
        "(pi, Claude Code and Codex files with planted facts, and a manifest) into DIR.",
    )
    p.add_argument(
        "folders",
        nargs="*",
        help="also list the session files under these folders (or `generate`)",
    )
    p.add_argument("--n", type=int, default=10_000, help="generate: how many sessions")
    p.add_argument("--out", default=None, help="generate: the folder to write")
    p.add_argument("--seed", type=int, default=0, help="generate: the dataset seed")
    p.add_argument("--workers", type=int, default=None, help="generate: writer processes")
    p.add_argument("--home", default=None, help="home folder to discover sessions in")
    p.add_argument("--verify", action="store_true", help="check every dataset file's sha256")
    p.add_argument("--no-discover", action="store_true", help="skip the agents' session folders")
    p.set_defaults(func=cmd_datasets)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `musepi-lab`."""
    parser = argparse.ArgumentParser(
        prog="musepi-lab",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="summarize one session file")
    p.add_argument("file")
    p.add_argument("--strict", action="store_true", help="fail on the first problem")
    p.add_argument("--max-problems", type=int, default=20)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("convert", help="convert any supported format to MusePi JSONL")
    p.add_argument("input", help="a session file (any format) or a folder of them")
    p.add_argument("output", help="the JSONL file, or a folder when there are several sessions")
    p.add_argument("--strict", action="store_true")
    p.add_argument("--max-problems", type=int, default=20)
    p.set_defaults(func=cmd_convert)

    add_datasets_parser(sub)

    p = sub.add_parser("bench", help="run the strategy × budget grid over a dataset")
    p.add_argument("dataset", help="a registry dataset name, a folder or a session file")
    add_run_options(p, default_out=None, modes=("compact", "replay", "branch"))
    p.add_argument("--no-verify", action="store_true", help="skip dataset checksums")
    add_probe_options(p)
    p.add_argument(
        "--generated",
        type=int,
        default=0,
        metavar="N",
        help="branch mode: add N generated sessions with nested branches and planted facts",
    )
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("report", help="plots and a summary table from a bench result")
    p.add_argument("dir")
    p.set_defaults(func=cmd_report)

    _add_navigate_parser(sub)

    p = sub.add_parser(
        "conformance", help="compare the profiles with the agents' published packages"
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="session files (any format)")
    p.add_argument("--agent", choices=("pi", "musepi", "both"), default="both")
    p.add_argument(
        "--budgets",
        type=budget_list,
        default=None,
        help="comma-separated keepRecentTokens (default: the 11 from 1,000 to 100,000)",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="also write the rows as JSON")
    p.set_defaults(func=cmd_conformance)

    add_watch_parser(sub)
    add_usage_parser(sub)
    add_export_parser(sub)

    p = sub.add_parser("demo", help="the main job: the bundled sample, model-free strategies")
    p.add_argument("--data", default=str(SAMPLE_DIR))
    add_run_options(p, default_out="demo-output")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `musepi-lab` command."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (SessionReadError, UsageError) as exc:
        print(f"musepi-lab: {exc}", file=sys.stderr)
        return 2
