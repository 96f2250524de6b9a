"""The `musepi-lab` command line: inspect, convert, datasets, demo."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from .session import Session, SessionReadError, iter_sessions, read_session

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "datasets" / "sample"


def session_summary(session: Session) -> dict[str, object]:
    """A one-row summary of a session (what `inspect` and `demo` print)."""
    path = session.path()
    roles = Counter(e.role for e in path if e.type == "message")
    kinds = Counter(e.type for e in session.entries)
    return {
        "session": session.id[:36],
        "format": session.source_format,
        "entries": len(session.entries),
        "path": len(path),
        "user": roles.get("user", 0),
        "assistant": roles.get("assistant", 0),
        "tool results": roles.get("toolResult", 0),
        "compactions": kinds.get("compaction", 0),
        "branches": len(session.leaves),
        "problems": len(session.errors),
    }


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """A plain-text table with aligned columns."""
    if not rows:
        return "(no sessions)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines.append("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        lines.append(
            "  ".join(
                str(r[c]).rjust(widths[c]) if isinstance(r[c], int) else str(r[c]).ljust(widths[c])
                for c in cols
            )
        )
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:
    session = read_session(args.file, strict=args.strict)
    print(format_table([session_summary(session)]))
    for problem in session.errors[: args.max_problems]:
        print(f"problem: {problem}")
    if len(session.errors) > args.max_problems:
        print(f"... and {len(session.errors) - args.max_problems} more problems")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    session = read_session(args.input, strict=args.strict)
    out = session.write(args.output)
    print(f"wrote {out} ({len(session.entries)} entries, from {session.source_format})")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    rows = [session_summary(s) for s in iter_sessions(args.root)]
    print(format_table(rows))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    rows = [session_summary(s) for s in iter_sessions(args.data)]
    print(format_table(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `musepi-lab`."""
    parser = argparse.ArgumentParser(prog="musepi-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="summarize one session file")
    p.add_argument("file")
    p.add_argument("--strict", action="store_true", help="fail on the first problem")
    p.add_argument("--max-problems", type=int, default=20)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("convert", help="convert any supported format to MusePi JSONL")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--strict", action="store_true")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("datasets", help="list the sessions found under a folder")
    p.add_argument("root", nargs="?", default=str(SAMPLE_DIR))
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("demo", help="the main job on the bundled sample")
    p.add_argument("--data", default=str(SAMPLE_DIR))
    p.add_argument("--out", default="demo-output")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `musepi-lab` command."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SessionReadError as exc:
        print(f"musepi-lab: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
