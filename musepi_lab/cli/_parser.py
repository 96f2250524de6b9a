"""The argument parser and the entry point.

Building the parser imports no command's code (`musepi-lab --help` stays fast): each command
module imports what it runs inside its `cmd_*` function.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._bench import add_probe_options, add_run_options, cmd_bench, cmd_demo, cmd_report
from ._common import Parser, UsageError, add_model_options, one_line, print_error
from ._compare import add_compare_parser
from ._conformance import budget_list, cmd_conformance
from ._export import add_export_parser
from ._local_model import add_local_model_parser
from ._sessions import (
    cmd_convert,
    cmd_datasets,
    cmd_generate,
    cmd_inspect,
    cmd_navigate,
)
from ._usage import add_usage_parser
from ._watch import add_watch_parser

DESCRIPTION = """\
A research workbench for context compaction in coding-agent sessions: read sessions of eight
agent formats, run compaction strategies at any token budget, replay whole sessions under a
window and compare what each strategy costs and loses.

Start with `musepi-lab demo` (the bundled sample, every model-free strategy)."""

TRACEBACK_ENV = "MUSEPI_LAB_TRACEBACK"
"""Set (to anything) to see the traceback of an unexpected error instead of its one line."""

if TYPE_CHECKING:
    _Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_inspect_parser(sub: _Sub) -> None:
    p = sub.add_parser(
        "inspect",
        help="summarize session files: one row per session, the problems met reading them",
    )
    p.add_argument("file", metavar="PATH", help="a session file (any format) or a folder of them")
    p.add_argument("--strict", action="store_true", help="stop at the first problem (exit 2)")
    p.add_argument(
        "--max-problems",
        type=int,
        default=20,
        metavar="N",
        help="print at most N problems (default 20; --json lists them all)",
    )
    p.add_argument(
        "--entries",
        action="store_true",
        help="also list every entry (id, parent, kind, line, leaf): the ids `navigate` takes",
    )
    p.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    p.set_defaults(func=cmd_inspect)


def _add_convert_parser(sub: _Sub) -> None:
    p = sub.add_parser("convert", help="convert any supported format to MusePi JSONL")
    p.add_argument("input", help="a session file (any format) or a folder of them")
    p.add_argument(
        "output",
        help="the JSONL file (a session's subagents go beside it, OUTPUT-stem.agent-x.jsonl), "
        "or a folder when the input holds several sessions",
    )
    p.add_argument("--strict", action="store_true", help="stop at the first problem (exit 2)")
    p.add_argument(
        "--max-problems", type=int, default=20, metavar="N", help="print at most N problems"
    )
    p.set_defaults(func=cmd_convert)


def _add_navigate_parser(sub: _Sub) -> None:
    """The `navigate` command: move a session's leaf, summarizing what is left."""
    p = sub.add_parser("navigate", help="move a session's leaf, summarizing what is left")
    p.add_argument("file", help="the session file (any format; never changed)")
    p.add_argument(
        "target",
        metavar="TARGET_ID",
        help="the entry to move the leaf to (`musepi-lab inspect FILE --entries` lists them)",
    )
    p.add_argument("--summarize", action="store_true", help="ask the model for a branch summary")
    p.add_argument("--out", default=None, help="write the navigated session here (JSONL)")
    p.add_argument(
        "--profile", choices=("musepi", "pi"), default="musepi", help="whose rules (default musepi)"
    )
    p.add_argument("--label", default=None, help="a label for the target entry")
    p.add_argument("--instructions", default=None, help="custom summary instructions")
    p.add_argument("--cache-dir", default=None, help="summary cache folder")
    p.add_argument("--strict", action="store_true", help="stop at the first read problem")
    add_model_options(p, what="the branch summary")
    p.set_defaults(func=cmd_navigate)


def add_datasets_parser(sub: _Sub) -> None:
    """`musepi-lab datasets [list] [FOLDER ...]` and `musepi-lab datasets generate`."""
    p = sub.add_parser(
        "datasets",
        help="list registry datasets and the sessions found; `datasets generate` makes one",
        description="`datasets` (or `datasets list`) lists the registry datasets and the "
        "sessions found; `datasets generate --n N --out DIR` writes a generated dataset.",
    )
    actions = p.add_subparsers(dest="action", metavar="{list,generate}", title="actions")
    listing = actions.add_parser(
        "list", help="the registry datasets and the sessions found (the default)"
    )
    listing.add_argument(
        "folders", nargs="*", metavar="FOLDER", help="also list the session files under these"
    )
    listing.add_argument("--home", default=None, help="home folder to discover sessions in")
    listing.add_argument("--verify", action="store_true", help="check every dataset file's sha256")
    listing.add_argument(
        "--no-discover", action="store_true", help="skip the agents' session folders"
    )
    listing.set_defaults(func=cmd_datasets)
    generate = actions.add_parser(
        "generate",
        help="write N generated sessions (pi, Claude Code, Codex) with planted facts",
        description="Write N generated sessions (pi, Claude Code and Codex files with planted "
        "facts) and a manifest (seed, counts, sha256 per file) into DIR; the same seed "
        "gives the same bytes.",
    )
    generate.add_argument("--n", type=int, default=10_000, help="how many sessions (10000)")
    generate.add_argument("--out", metavar="DIR", help="the folder to write (required)")
    generate.add_argument("--seed", type=int, default=0, help="the dataset seed (default 0)")
    generate.add_argument(
        "--workers", type=int, default=None, help="writer processes (default: CPUs)"
    )
    generate.set_defaults(func=cmd_generate)
    p.set_defaults(func=cmd_datasets, folders=[], home=None, verify=False, no_discover=False)


def _add_bench_parsers(sub: _Sub) -> None:
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
    p.add_argument("dir", metavar="DIR", help="a `bench --out` folder (results.parquet)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("demo", help="the main job: the bundled sample, model-free strategies")
    p.add_argument(
        "--data", default=None, help="a dataset, folder or file (default: the bundled sample)"
    )
    add_run_options(p, default_out="demo-output")
    p.set_defaults(func=cmd_demo)


def _add_conformance_parser(sub: _Sub) -> None:
    p = sub.add_parser(
        "conformance", help="compare the profiles with the agents' published packages"
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="session files (any format)")
    p.add_argument(
        "--agent",
        choices=("pi", "musepi", "both"),
        default="both",
        help="pi 0.58.3 on node, MusePi's reference oh-my-pi 18.2.3 on Bun, or both",
    )
    p.add_argument(
        "--budgets",
        type=budget_list,
        default=None,
        help="comma-separated keepRecentTokens (default: the 11 from 1,000 to 100,000)",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="also write the rows as JSON")
    p.set_defaults(func=cmd_conformance)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `musepi-lab`."""
    parser: argparse.ArgumentParser = Parser(
        prog="musepi-lab",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub: _Sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )
    _add_inspect_parser(sub)
    _add_convert_parser(sub)
    add_datasets_parser(sub)
    _add_bench_parsers(sub)
    add_compare_parser(sub)
    _add_navigate_parser(sub)
    _add_conformance_parser(sub)
    add_watch_parser(sub)
    add_usage_parser(sub)
    add_export_parser(sub)
    add_local_model_parser(sub)
    return parser


def _with_default_action(argv: list[str]) -> list[str]:
    """`datasets [options] [FOLDER ...]` is `datasets list ...`."""
    if argv[:1] == ["datasets"] and argv[1:2] not in (["list"], ["generate"], ["-h"], ["--help"]):
        return ["datasets", "list", *argv[1:]]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `musepi-lab` command: every error is one line and a non-zero exit
    (2: the arguments or the input cannot be used; 1: the command failed; 130: interrupted).
    """
    args = build_parser().parse_args(
        _with_default_action(list(sys.argv[1:] if argv is None else argv))
    )
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except Exception as exc:  # the one place every error becomes one line
        code = _exit_code(exc)
        if code == 1 and os.environ.get(TRACEBACK_ENV):
            raise
        print_error(_message(exc, code))
        return code


def _exit_code(exc: BaseException) -> int:
    """2 for what the user can fix in the arguments or the input, 1 otherwise."""
    from ..llm._errors import SummarizerNotConfigured
    from ..session._errors import SessionReadError

    usage = (UsageError, SessionReadError, SummarizerNotConfigured, FileNotFoundError)
    return 2 if isinstance(exc, usage) else 1


def _message(exc: BaseException, code: int) -> str:
    if isinstance(exc, UsageError) or code == 2:
        return one_line(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else one_line(exc)
    from ..llm._errors import ModelCallError

    if isinstance(exc, ModelCallError):
        return f"the model call failed: {one_line(exc)}"
    return (
        f"unexpected error: {type(exc).__name__}: {one_line(exc)} "
        f"(set {TRACEBACK_ENV}=1 to see where)"
    )
