"""`inspect`, `convert`, `datasets` and `navigate`: commands over session files."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._common import UsageError, format_table, print_error, print_problems, summarizer_from

if TYPE_CHECKING:
    from ..session._model import Entry
    from ..session._session import Session


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


SNIPPET = 60
"""Characters of an entry's text `inspect --entries` shows."""


def entry_text(entry: Entry) -> str:
    """The start of what an entry says, on one line (its text, summary or type)."""
    message = entry.message
    text: object = entry.get("summary") or ""
    if message is not None:
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = " ".join(
                str(b.get("text") or b.get("thinking") or b.get("name") or b.get("type"))
                for b in content
                if isinstance(b, Mapping)
            )
    line = " ".join(str(text).split())
    return line[:SNIPPET] + ("…" if len(line) > SNIPPET else "")


def entry_rows(session: Session) -> list[dict[str, object]]:
    """One row per entry in file order: the ids `navigate` takes, and which are leaves."""
    leaves = {e.id for e in session.leaves}
    rows: list[dict[str, object]] = []
    for entry in session.entries:
        leaf = (
            "current leaf" if entry.id == session.leaf_id else "leaf" if entry.id in leaves else ""
        )
        rows.append(
            {
                "id": entry.id or "",
                "parent": entry.parent_id or "",
                "kind": f"{entry.type}/{entry.role}" if entry.role else entry.type,
                "line": entry.line if entry.line is not None else "",
                "leaf": leaf,
                "text": entry_text(entry),
            }
        )
    return rows


def _inspected(path: str, strict: bool) -> list[Session]:
    """Every session of a file or a folder, each followed by its linked subagent sessions."""
    from ..formats._convert import with_linked
    from ..formats._io import check_session_path
    from ..formats._registry import iter_sessions

    if not os.path.isdir(path):
        check_session_path(path)
    return list(with_linked(iter_sessions(path, strict=strict)))


def cmd_inspect(args: argparse.Namespace) -> int:
    """Summarize every session of a file or a folder (and the linked subagent sessions);
    with `--entries`, every entry; with `--json`, one JSON document.

    Exit 1 when the input holds no session (empty, binary, nothing readable).
    """
    sessions = _inspected(args.file, args.strict)
    problems = list(dict.fromkeys(p for s in sessions for p in s.errors))
    found = [s for s in sessions if s.entries]
    folder = os.path.isdir(args.file)
    rows = [
        {**session_summary(s), **({"file": s.source_path or ""} if folder else {})} for s in found
    ]
    if args.json:
        from ..session._errors import problem_record

        document = {
            "path": args.file,
            "sessions": [
                {**row, **({"entries_list": entry_rows(s)} if args.entries else {})}
                for row, s in zip(rows, found, strict=True)
            ],
            "problems": [problem_record(p) for p in problems],
        }
        print(json.dumps(document, indent=1, default=str))
        return 0 if found else 1
    if not found:
        print_error(f"{args.file} holds no session")
        print_problems(problems, args.max_problems, file=sys.stderr)
        return 1
    print(format_table(rows))
    if args.entries:
        for session in found:
            print(f"\nEntries of {session.id} (leaf {session.leaf_id}):")
            print(format_table(entry_rows(session)))
    print_problems(problems, args.max_problems)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    """Write every session of the input as MusePi JSONL; print the problems met reading it
    (as `inspect` does) and exit 1 when something could not be carried.

    One session goes to OUTPUT, its subagent sessions beside it (`<stem>.<agent>.jsonl`);
    several (an OpenHands output, a folder) go one file each into the folder OUTPUT, or
    beside an OUTPUT named `*.jsonl`.
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
        print_error(f"{args.input} holds no session; nothing written")
    for session in plan.empty:
        if written:
            print_error(f"not written: {session.source_path} holds no session")
    carried = [p for p in plan.problems if p not in set(plan.not_carried)]
    if carried:
        print(f"{len(carried)} problems met reading (the output keeps what they concern):")
        print_problems(carried, args.max_problems)
    if plan.not_carried:
        if written:  # else "nothing written" was the error line
            print_error(f"{len(plan.not_carried)} problems dropped data that is not in the output:")
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


def cmd_generate(args: argparse.Namespace) -> int:
    """`datasets generate`: write a generated dataset at scale."""
    from ..datasets._scale import write_scale_dataset

    if not args.out:
        raise UsageError("datasets generate needs --out DIR: the folder to write")
    if args.n < 0:
        raise UsageError(f"--n must be 0 or more, not {args.n}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be 1 or more, not {args.workers}")
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
    """`datasets` (`datasets list`): the registry datasets, and the sessions found."""
    from ..datasets._discover import discover_folder, discover_sessions

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
    from ..formats._registry import read_session
    from ..navigation import navigate_tree

    session = read_session(args.file, strict=args.strict)
    if args.target not in session:
        raise UsageError(
            f"{args.file}: no entry with id {args.target!r} (musepi-lab inspect "
            f"{args.file} --entries lists them)"
        )
    summarizer = None
    if args.summarize:
        summarizer = summarizer_from(
            args, cache_dir=args.cache_dir, required="navigate --summarize"
        )
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
