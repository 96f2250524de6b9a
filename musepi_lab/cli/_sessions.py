"""`inspect`, `convert`, `datasets` and `navigate`: commands over session files."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..formats._io import check_session_path
from ..formats._registry import read_session
from ..session import Session
from ._common import UsageError, format_table, print_problems

if TYPE_CHECKING:
    pass


def session_summary(session: Session) -> dict[str, object]:
    """A one-row summary of a session (what `inspect` prints)."""
    path = session.path()
    roles = Counter(e.role for e in path if e.type == "message")
    kinds = Counter(e.type for e in session.entries)
    return {
        "session": session.id,
        "format": session.source_format,
        "entries": len(session.entries),
        "path": len(path),
        "user": roles.get("user", 0),
        "assistant": roles.get("assistant", 0),
        "tool results": roles.get("toolResult", 0),
        "compactions": kinds.get("compaction", 0),
        "branches": session.branches,
        "problems": len(session.errors),
    }


def cmd_inspect(args: argparse.Namespace) -> int:
    """Summarize every session of a file (and its linked subagent sessions).

    Exit 1 when the file holds no session (empty, binary, nothing readable).
    """
    from ..formats._convert import with_linked
    from ..formats._registry import iter_sessions

    check_session_path(args.file)
    sessions = list(with_linked(iter_sessions(args.file, strict=args.strict)))
    problems = list(dict.fromkeys(p for s in sessions for p in s.errors))
    if not any(s.entries for s in sessions):
        print(f"musepi-lab: {args.file} holds no session", file=sys.stderr)
        print_problems(problems, args.max_problems, file=sys.stderr)
        return 1
    print(format_table([session_summary(s) for s in sessions if s.entries]))
    print_problems(problems, args.max_problems)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    """Write every session of the input as MusePi JSONL; exit 1 listing what was not carried.

    One session goes to OUTPUT; several (an OpenHands output, a Claude Code session with
    subagents, a folder) go one file each into the folder OUTPUT, or beside an OUTPUT
    named `*.jsonl`.
    """
    from ..formats._convert import plan_conversion, write_plan

    plan = plan_conversion(args.input, args.output, strict=args.strict)
    try:
        written = write_plan(plan)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc}") from None
    for session, path in zip((s for s, _ in plan.writes), written, strict=True):
        print(f"wrote {path} ({len(session.entries)} entries, from {session.source_format})")
    if len(written) > 1:
        print(f"wrote {len(written)} sessions")
    failed = bool(plan.not_carried or plan.empty or not written)
    if not written:
        print(f"musepi-lab: {args.input} holds no session; nothing written", file=sys.stderr)
    for session in plan.empty:
        if written:
            print(
                f"musepi-lab: not written: {session.source_path} holds no session", file=sys.stderr
            )
    if plan.not_carried:
        print(
            f"musepi-lab: {len(plan.not_carried)} problems dropped data that is not in the output:",
            file=sys.stderr,
        )
        print_problems(list(plan.not_carried), args.max_problems, file=sys.stderr)
    return 1 if failed else 0


# -- datasets -----------------------------------------------------------------------------


def _dataset_rows(verify: bool) -> list[dict[str, object]]:
    from ..datasets._registry import DatasetError, list_datasets, load_manifest, verify_file

    rows: list[dict[str, object]] = []
    for name in list_datasets():
        try:
            manifest = load_manifest(name)
        except DatasetError as exc:
            rows.append({"dataset": name, "status": f"bad manifest: {exc}"})
            continue
        root = manifest.root_path()
        status = "present" if root.is_dir() else "absent"
        if verify and root.is_dir():
            try:
                for entry in manifest.files:
                    verify_file(root, entry)
                status = "verified"
            except DatasetError as exc:
                status = f"FAILED: {exc}"
        formats = Counter(f.format for f in manifest.session_files)
        rows.append(
            {
                "dataset": manifest.name,
                "sessions files": len(manifest.session_files),
                "formats": ", ".join(f"{k} {v}" for k, v in sorted(formats.items())),
                "licence": manifest.licence,
                "root": str(root),
                "status": status,
            }
        )
    return rows


def _found_rows(found: Sequence[Any]) -> list[dict[str, object]]:
    return [
        {
            "agent": f.agent,
            "project": f.project or "",
            "size": f"{f.size / 1024:.0f} KB",
            "modified": time.strftime("%Y-%m-%d %H:%M", time.localtime(f.modified)),
            "path": str(f.path),
        }
        for f in found
    ]


def _cmd_generate(args: argparse.Namespace) -> int:
    from ..datasets._scale import write_scale_dataset

    if len(args.folders) > 1 or not args.out:
        raise UsageError("usage: musepi-lab datasets generate --n N --out DIR [--seed S]")
    start = time.perf_counter()
    manifest = write_scale_dataset(
        args.out, args.n, seed=args.seed, workers=args.workers, progress=sys.stderr.isatty()
    )
    counts = manifest["counts"]
    formats = ", ".join(f"{k} {v}" for k, v in counts["formats"].items())
    print(
        f"wrote {args.n} sessions ({formats}; {counts['branch']} branched, "
        f"{counts['compaction']} compacted, {counts['image']} with an image; "
        f"{counts['bytes'] / 1e6:.1f} MB) to {args.out} in {time.perf_counter() - start:.1f} s"
    )
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from ..datasets._discover import discover_folder, discover_sessions

    # `generate` is the subcommand unless it names a folder to list and no --out is given
    if args.folders[:1] == ["generate"] and (args.out or not os.path.isdir("generate")):
        return _cmd_generate(args)

    rows = _dataset_rows(args.verify)
    print("Datasets (registry):")
    print(format_table(rows) if rows else "(no manifests)")
    if args.folders:
        for folder in args.folders:
            print(f"\nSessions under {folder}:")
            print(format_table(_found_rows(discover_folder(folder))))
    if not args.no_discover:
        found = discover_sessions(args.home)
        print("\nYour sessions (pi/MusePi, oh-my-pi, Claude Code, Codex):")
        print(format_table(_found_rows(found)) if found else "(none found)")
    return 0


# -- bench --------------------------------------------------------------------------------


def cmd_navigate(args: argparse.Namespace) -> int:
    """Move the leaf of a session to an entry, summarizing the abandoned branch if asked."""
    from ..navigation import navigate_tree

    session = read_session(args.file, strict=args.strict)
    if args.target not in session:
        raise UsageError(f"{args.file}: no entry with id {args.target!r}")
    summarizer = None
    if args.summarize:
        from ..llm import OpenAICompatibleSummarizer

        summarizer = OpenAICompatibleSummarizer(cache_dir=args.cache_dir)
    result = navigate_tree(
        session,
        args.target,
        summarize=args.summarize,
        summarizer=summarizer,
        custom_instructions=args.instructions,
        label=args.label,
        profile=args.profile,
    )
    print(
        f"left {result.old_leaf_id} for {result.target_id}: {len(result.abandoned)} entries "
        f"abandoned (common ancestor {result.common_ancestor_id}); new leaf {result.new_leaf_id}"
    )
    if result.editor_text is not None:
        print(f"back to the editor: {result.editor_text}")
    if result.summary_entry is not None:
        print(f"branch summary {result.summary_entry.id}:\n{result.summary_entry.get('summary')}")
    if args.out:
        out = result.session.write(args.out)
        print(f"wrote {out} ({len(result.session.entries)} entries)")
    return 0
