"""The `musepi-lab` command line: inspect, convert, datasets, bench, report, navigate,
conformance, demo."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .datasets._registry import DATASETS_DIR
from .formats._io import check_session_path
from .formats._registry import read_session
from .session import Session, SessionReadError

if TYPE_CHECKING:
    from .bench._grid import SessionRef

SAMPLE_DIR = DATASETS_DIR / "sample"
DEMO_STRATEGIES: tuple[str, ...] = (
    "none",
    "truncate",
    "observation-masking",
    "prune",
    "extractive",
    "snapcompact",
)
"""The model-free strategies the demo (and `bench` without `--strategy`) runs."""
DEFAULT_BUDGETS: tuple[int, ...] = (8000, 20000)
"""Keep-recent budgets of `bench` without `--budget` and of the demo."""
DEFAULT_WINDOWS: tuple[int, ...] = (64000, 128000)
"""Context windows of `bench --mode replay` without `--budget`."""


class UsageError(Exception):
    """A command-line argument that cannot be used (printed, exit code 2)."""


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


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    if not rows:
        return "(nothing found)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines.append("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        lines.append(
            "  ".join(
                str(r[c]).rjust(widths[c])
                if isinstance(r[c], (int, float)) and not isinstance(r[c], bool)
                else str(r[c]).ljust(widths[c])
                for c in cols
            )
        )
    return "\n".join(lines)


# -- inspect / convert --------------------------------------------------------------------
def _print_problems(problems: Sequence[Any], limit: int, *, file: Any = None) -> None:
    for problem in problems[:limit]:
        print(f"problem: {problem}", file=file)
    if len(problems) > limit:
        print(f"... and {len(problems) - limit} more problems", file=file)


def cmd_inspect(args: argparse.Namespace) -> int:
    """Summarize every session of a file (and its linked subagent sessions).

    Exit 1 when the file holds no session (empty, binary, nothing readable).
    """
    from .formats._convert import with_linked
    from .formats._registry import iter_sessions

    check_session_path(args.file)
    sessions = list(with_linked(iter_sessions(args.file, strict=args.strict)))
    problems = list(dict.fromkeys(p for s in sessions for p in s.errors))
    if not any(s.entries for s in sessions):
        print(f"musepi-lab: {args.file} holds no session", file=sys.stderr)
        _print_problems(problems, args.max_problems, file=sys.stderr)
        return 1
    print(format_table([session_summary(s) for s in sessions if s.entries]))
    _print_problems(problems, args.max_problems)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    """Write every session of the input as MusePi JSONL; exit 1 listing what was not carried.

    One session goes to OUTPUT; several (an OpenHands output, a Claude Code session with
    subagents, a folder) go one file each into the folder OUTPUT, or beside an OUTPUT
    named `*.jsonl`.
    """
    from .formats._convert import plan_conversion, write_plan

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
        _print_problems(list(plan.not_carried), args.max_problems, file=sys.stderr)
    return 1 if failed else 0


# -- datasets -----------------------------------------------------------------------------
def _dataset_rows(verify: bool) -> list[dict[str, object]]:
    from .datasets._registry import DatasetError, list_datasets, load_manifest, verify_file

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


def cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets._discover import discover_folder, discover_sessions

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
def resolve_dataset(spec: str, *, verify: bool = True) -> list[Path]:
    """Session paths for a `bench` argument: an existing file or folder, a dataset
    manifest file, or a registry dataset name (checksums verified).

    Raises:
        UsageError: Neither a path nor a dataset name, or a dataset that fails its checks.
    """
    from .datasets._registry import DatasetError, dataset_paths, is_manifest_file, list_datasets

    path = Path(spec)
    names = list_datasets()
    if path.exists() and not is_manifest_file(path):
        return [path]
    if path.exists() or spec in names:
        try:
            return dataset_paths(spec, verify=verify)
        except DatasetError as exc:
            raise UsageError(str(exc)) from None
    raise UsageError(
        f"{spec!r} is neither a file, a folder nor a dataset; datasets: {', '.join(names)}"
    )


def bench_sessions(spec: str, *, verify: bool = True) -> list[SessionRef]:
    """The sessions (`SessionRef`s) a `bench` argument names.

    Raises:
        UsageError: The argument cannot be resolved, or names no session at all (an empty
            folder, a manifest listing no session file): a benchmark of nothing is refused.
    """
    from .bench._grid import session_refs

    paths = resolve_dataset(spec, verify=verify)
    try:
        refs = session_refs(paths)
    except FileNotFoundError as exc:  # a dataset file gone, with checks skipped
        raise UsageError(str(exc)) from None
    if not refs:
        raise UsageError(f"{spec}: no sessions found there; nothing to benchmark")
    return refs


def model_free_strategies() -> list[str]:
    """The demo strategies that are registered and call no model, in demo order."""
    from .strategies._base import available, strategy_type

    names = set(available())
    return [n for n in DEMO_STRATEGIES if n in names and not strategy_type(n).needs_summarizer]


def _strategies(specs: Sequence[str] | None) -> list[Any]:
    from .bench._grid import resolve_strategy

    chosen = list(specs) if specs else model_free_strategies()
    if not chosen:
        raise UsageError("no model-free strategies are registered; pass --strategy NAME")
    try:
        return [resolve_strategy(s) for s in chosen]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None


def _executor(args: argparse.Namespace) -> Any:
    return "serial" if args.serial or args.workers == 1 else None


def _run_bench(
    sessions: Sequence[SessionRef],
    strategies: Sequence[Any],
    budgets: Sequence[int],
    args: argparse.Namespace,
    out: Path,
) -> Any:
    from .bench import FolderLockedError, run_benchmark, summary_table, table_text, write_benchmark
    from .bench._lock import folder_lock
    from .compaction._settings import CompactionSettings

    settings = CompactionSettings.for_profile(args.profile)
    started = time.perf_counter()
    try:
        # One run per output folder: a second one would redo this one's cells.
        with folder_lock(out):
            df = run_benchmark(
                list(sessions),
                strategies,
                budgets,
                executor=_executor(args),
                max_workers=args.workers,
                cache_dir=None if args.no_cache else out / "cells",
                settings=settings,
                counter_method=args.counter,
                facts=args.facts,
                progress=not args.no_progress,
                mode=args.mode,
                **_probe_options(args),
            )
            write_benchmark(df, out)
    except FolderLockedError as exc:
        raise UsageError(str(exc)) from None
    elapsed = time.perf_counter() - started
    failed = int(df["error"].notna().sum())
    print(table_text(summary_table(df)))
    print(
        f"\n{len(df)} cells ({df.attrs['cells_computed']} computed, "
        f"{df.attrs['cells_cached']} cached, {failed} failed) in {elapsed:.1f} s; "
        f"results in {out}/"
    )
    if failed:
        first = df.loc[df["error"].notna()].iloc[0]
        print(
            f"musepi-lab: {failed} cells failed; first: {first['source']} "
            f"{first['strategy']} @ {first['budget']}: {str(first['error']).splitlines()[0]}",
            file=sys.stderr,
        )
    return df


def _probe_options(args: argparse.Namespace) -> dict[str, Any]:
    if not getattr(args, "probes", False):
        return {}
    if args.mode != "compact":
        raise UsageError("--probes runs in compact mode only")
    reader, judge = probe_models(args)
    return {"evaluate": "probes", "reader": reader, "judge": judge, "probe_point": args.probe_point}


def _budgets(args: argparse.Namespace) -> list[int]:
    if args.budget:
        return list(args.budget)
    return list(DEFAULT_WINDOWS if args.mode == "replay" else DEFAULT_BUDGETS)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.mode == "branch":
        return cmd_branch_bench(args)
    sessions = bench_sessions(args.dataset, verify=not args.no_verify)
    strategies = _strategies(args.strategy)
    df = _run_bench(sessions, strategies, _budgets(args), args, Path(args.out))
    return 1 if len(df) and df["error"].notna().all() else 0


def branch_cases(spec: str, *, verify: bool, generated: int) -> list[Any]:
    """The branch-bench cases: every session the argument names (facts extracted), then
    `generated` seeded sessions with nested branches and planted facts."""
    from .bench._branch import BranchCase
    from .datasets._branches import generate_branch_session
    from .formats._registry import iter_sessions

    cases = [
        BranchCase(f"{Path(ref.path).name}#{ref.index}" if ref.index else Path(ref.path).name, s)
        for ref in bench_sessions(spec, verify=verify)
        for i, s in enumerate(iter_sessions(ref.path))
        if i == ref.index
    ]
    for seed in range(generated):
        made = generate_branch_session(seed, forks=4)
        cases.append(BranchCase(f"generated-{seed}", made.session, made.facts))
    return cases


def cmd_branch_bench(args: argparse.Namespace) -> int:
    """`bench --mode branch`: navigate back from every branch leaf with each branch-summary
    strategy (the LLM one when an endpoint is configured) and score what returns."""
    from ._atomic import write_bytes_atomic
    from .bench._branch import BRANCH_STRATEGIES, branch_table, run_branch_bench
    from .llm import OpenAICompatibleSummarizer, SummarizerNotConfigured

    cases = branch_cases(args.dataset, verify=not args.no_verify, generated=args.generated)
    try:
        summarizer: Any = OpenAICompatibleSummarizer(
            cache_dir=None if args.no_cache else Path(args.out) / "summaries"
        )
    except SummarizerNotConfigured:
        summarizer = None
        print("musepi-lab: no model endpoint configured; the llm branch strategy is skipped")
    frame = run_branch_bench(
        cases, strategies=BRANCH_STRATEGIES, summarizer=summarizer, profile=args.profile
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out / "branch.csv", frame.to_csv(index=False).encode())
    print(branch_table(frame).round(3).to_string())
    print(f"\n{len(frame)} rows over {len(cases)} sessions; results in {out}/branch.csv")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .bench import read_benchmark, summary_table, table_text
    from .plot import write_benchmark_report

    try:
        df = read_benchmark(args.dir)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    written = write_benchmark_report(args.dir, df)
    print(table_text(summary_table(df)))
    print("\nwrote " + ", ".join(str(p) for p in written.values()))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .plot import write_benchmark_report

    out = Path(args.out)
    strategies = _strategies(args.strategy)
    print(
        f"musepi-lab demo: {len(strategies)} model-free strategies × budgets "
        f"{', '.join(map(str, _budgets(args)))} over {args.data}\n"
    )
    df = _run_bench(bench_sessions(args.data), strategies, _budgets(args), args, out)
    written = write_benchmark_report(out, df)
    print("plots: " + ", ".join(str(p) for n, p in written.items() if n.endswith(".png")))
    return 1 if len(df) and df["error"].notna().all() else 0


# -- the parser ---------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").rstrip("kK")) * (1000 if text[-1:] in "kK" else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


# -- navigate -----------------------------------------------------------------------------
def cmd_navigate(args: argparse.Namespace) -> int:
    """Move the leaf of a session to an entry, summarizing the abandoned branch if asked."""
    from .navigation import navigate_tree

    session = read_session(args.file, strict=args.strict)
    if args.target not in session:
        raise UsageError(f"{args.file}: no entry with id {args.target!r}")
    summarizer = None
    if args.summarize:
        from .llm import OpenAICompatibleSummarizer

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


def _add_run_options(
    p: argparse.ArgumentParser,
    *,
    default_out: str | None,
    modes: tuple[str, ...] = ("compact", "replay"),
) -> None:
    p.add_argument(
        "--strategy",
        action="append",
        metavar="NAME[:k=v,...]",
        help="a strategy with parameters (repeat; default: the model-free strategies)",
    )
    p.add_argument(
        "--budget",
        action="append",
        type=_positive_int,
        metavar="N",
        help="keep-recent tokens (compact mode) or window (replay mode); repeat; 20k works",
    )
    if default_out is None:
        p.add_argument("--out", required=True, help="folder for results.parquet/csv, config.json")
    else:
        p.add_argument("--out", default=default_out, help=f"output folder (default {default_out})")
    p.add_argument("--workers", type=int, default=None, help="process-pool size (default: CPUs)")
    p.add_argument("--serial", action="store_true", help="run every cell inline")
    p.add_argument("--mode", choices=modes, default="compact")
    p.add_argument("--profile", choices=("musepi", "pi"), default="musepi")
    p.add_argument("--counter", default=None, help="token method (default: the profile's)")
    p.add_argument("--facts", choices=("auto", "planted", "extracted"), default="auto")
    p.add_argument("--no-cache", action="store_true", help="do not resume from OUT/cells")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


PROBE_ENV: dict[str, str] = {
    "reader_url": "MUSEPI_LAB_READER_URL",
    "reader_model": "MUSEPI_LAB_READER_MODEL",
    "reader_key": "MUSEPI_LAB_READER_API_KEY",
    "judge_url": "MUSEPI_LAB_JUDGE_URL",
    "judge_model": "MUSEPI_LAB_JUDGE_MODEL",
    "judge_key": "MUSEPI_LAB_JUDGE_API_KEY",
}
"""Environment variables `bench --probes` reads when a flag is not given (keys only from
the environment, never from flags, so they stay out of shell history); the usual
`OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL` are the last fallback."""


def _add_probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probes",
        action="store_true",
        help="also ask each cell's probes of a reader model and score them (compact mode)",
    )
    p.add_argument(
        "--reader-url", default=None, help=f"reader endpoint (${PROBE_ENV['reader_url']})"
    )
    p.add_argument(
        "--reader-model", default=None, help=f"reader model (${PROBE_ENV['reader_model']})"
    )
    p.add_argument("--judge-url", default=None, help=f"judge endpoint (${PROBE_ENV['judge_url']})")
    p.add_argument("--judge-model", default=None, help=f"judge model (${PROBE_ENV['judge_model']})")
    p.add_argument(
        "--probe-point",
        default="last-request",
        help="where probes compact: last-request (default), leaf, or an entry id",
    )


def probe_models(args: argparse.Namespace) -> tuple[Any, Any]:
    """The reader and the judge of `bench --probes`, from flags, then `PROBE_ENV`, then the
    OpenAI defaults."""
    import os

    from .llm import OpenAICompatibleSummarizer, SummarizerNotConfigured

    def endpoint(role: str) -> Any:
        url = getattr(args, f"{role}_url") or os.environ.get(PROBE_ENV[f"{role}_url"])
        model = getattr(args, f"{role}_model") or os.environ.get(PROBE_ENV[f"{role}_model"])
        key = os.environ.get(PROBE_ENV[f"{role}_key"])
        try:
            return OpenAICompatibleSummarizer(model=model, base_url=url, api_key=key)
        except SummarizerNotConfigured as exc:
            raise UsageError(f"--probes: no {role} endpoint: {exc}") from None

    return endpoint("reader"), endpoint("judge")


def _budget_list(text: str) -> tuple[int, ...]:
    try:
        budgets = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of integers: {text!r}"
        ) from None
    if not budgets or any(b <= 0 for b in budgets):
        raise argparse.ArgumentTypeError(f"budgets must be positive integers: {text!r}")
    return budgets


def cmd_conformance(args: argparse.Namespace) -> int:
    """Compare our profiles with the agents' published packages on each file.

    Exit 0 when every measure agrees (own-wording texts aside), 1 otherwise, 3 when a
    reference tool (node, npm, bun) is missing or a driver fails.
    """
    import json

    from ._atomic import write_bytes_atomic
    from .conformance import (
        DEFAULT_BUDGETS,
        FileReport,
        MeasureRow,
        ReferenceRunError,
        ReferenceToolMissing,
        compare_file,
        format_table,
    )
    from .conformance._reference import Agent

    agents: tuple[Agent, ...] = ("pi", "musepi") if args.agent == "both" else (args.agent,)
    budgets = tuple(args.budgets or DEFAULT_BUDGETS)
    for file in args.files:
        check_session_path(file)
    rows: list[MeasureRow] = []
    reports: list[FileReport] = []
    for file in args.files:
        started = time.monotonic()
        try:
            report = compare_file(file, agents, budgets)
        except (ReferenceToolMissing, ReferenceRunError) as exc:
            print(f"musepi-lab conformance: {exc}", file=sys.stderr)
            return 3
        seconds = time.monotonic() - started
        note = " (converted to pi JSONL)" if report.converted else ""
        print(f"{file}{note}: {seconds:.1f} s", file=sys.stderr)
        rows.extend(report.rows)
        reports.append(report)
    print(format_table(rows))
    if args.json:
        document = {
            "agents": list(agents),
            "budgets": list(budgets),
            "files": [
                {
                    "source": r.source,
                    "converted": r.converted,
                    "rows": [
                        {
                            "agent": row.agent,
                            "measure": row.measure,
                            "agreed": row.agreed,
                            "total": row.total,
                            "first_difference": row.first_difference,
                            "own_wording": row.own_wording,
                            "seed_difference": row.seed_difference,
                        }
                        for row in r.rows
                    ],
                }
                for r in reports
            ],
        }
        write_bytes_atomic(Path(args.json), (json.dumps(document, indent=1) + "\n").encode())
    return 0 if all(row.ok for row in rows) else 1


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
    p.add_argument("input", help="a session file (any format) or a folder of them")
    p.add_argument("output", help="the JSONL file, or a folder when there are several sessions")
    p.add_argument("--strict", action="store_true")
    p.add_argument("--max-problems", type=int, default=20)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("datasets", help="list registry datasets and the sessions found")
    p.add_argument("folders", nargs="*", help="also list the session files under these folders")
    p.add_argument("--home", default=None, help="home folder to discover sessions in")
    p.add_argument("--verify", action="store_true", help="check every dataset file's sha256")
    p.add_argument("--no-discover", action="store_true", help="skip the agents' session folders")
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("bench", help="run the strategy × budget grid over a dataset")
    p.add_argument("dataset", help="a registry dataset name, a folder or a session file")
    _add_run_options(p, default_out=None, modes=("compact", "replay", "branch"))
    p.add_argument("--no-verify", action="store_true", help="skip dataset checksums")
    _add_probe_options(p)
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

    p = sub.add_parser(
        "conformance", help="compare the profiles with the agents' published packages"
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="session files (any format)")
    p.add_argument("--agent", choices=("pi", "musepi", "both"), default="both")
    p.add_argument(
        "--budgets",
        type=_budget_list,
        default=None,
        help="comma-separated keepRecentTokens (default: the 11 from 1,000 to 100,000)",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="also write the rows as JSON")
    p.set_defaults(func=cmd_conformance)

    p = sub.add_parser("demo", help="the main job: the bundled sample, model-free strategies")
    p.add_argument("--data", default=str(SAMPLE_DIR))
    _add_run_options(p, default_out="demo-output")
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


if __name__ == "__main__":
    raise SystemExit(main())
