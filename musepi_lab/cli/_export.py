"""`export`: a session's transcript as a self-contained HTML page or a Markdown file."""

from __future__ import annotations

import argparse

from ._common import UsageError


def cmd_export(args: argparse.Namespace) -> int:
    """Write the transcript of FILE to `--out`, atomically; print what was written."""
    from pathlib import Path

    from ..export import write_transcript
    from ..export._write import export_format
    from ..formats._registry import read_session

    try:
        kind = export_format(args.out, args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    source = Path(args.file)
    if not source.is_file():
        raise UsageError(f"{source}: no such session file")
    if Path(args.out).resolve() == source.resolve():
        raise UsageError(f"{args.out}: the export would overwrite the session file")
    session = read_session(source, strict=args.strict)
    if args.leaf is not None and args.leaf not in session:
        raise UsageError(f"{source}: no entry {args.leaf!r} to export the path of")
    written = write_transcript(
        session, args.out, format=kind, leaf_id=args.leaf, profile=args.profile
    )
    problems = len(session.errors)
    note = f"; {problems:,} problem(s) met while reading (see `inspect`)" if problems else ""
    print(f"wrote {written} ({kind}, {len(session.path(args.leaf)):,} entries on the path){note}")
    return 0


def add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `export` subcommand's arguments."""
    p = sub.add_parser(
        "export",
        help="write a session's transcript as HTML or Markdown",
        description="Write the transcript of a session (any supported format) as one "
        "self-contained HTML page or a Markdown file: a header with the session's facts and "
        "token figures, each message with its time and tokens, tool calls and results "
        "folded, compactions and the cut a compaction would make now marked.",
    )
    p.add_argument("file", help="a session file of any supported format (read, never changed)")
    p.add_argument("--out", required=True, help="the file to write (replaced atomically)")
    p.add_argument(
        "--format",
        choices=("html", "md"),
        default=None,
        help="html or md (default: from the --out suffix)",
    )
    p.add_argument("--leaf", default=None, help="export the path to this entry id")
    p.add_argument(
        "--profile", choices=("musepi", "pi"), default="musepi", help="context and cut rules"
    )
    p.add_argument("--strict", action="store_true", help="fail on the first read problem")
    p.set_defaults(func=cmd_export)
