"""`bench` (compact, replay, branch and probe modes), `report` and `demo`."""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import UsageError, add_model_options, positive_int, summarizer_from

if TYPE_CHECKING:
    from ..bench._grid import SessionRef


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


def resolve_dataset(spec: str, *, verify: bool = True) -> list[Path]:
    """Session paths for a `bench` argument: an existing file or folder, a dataset
    manifest file, or a registry dataset name (checksums verified).

    Raises:
        UsageError: Neither a path nor a dataset name, or a dataset that fails its checks.
    """
    from ..datasets._registry import DatasetError, dataset_paths, is_manifest_file, list_datasets

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
    from ..bench._grid import session_refs

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
    from ..strategies._base import available, strategy_type

    names = set(available())
    return [n for n in DEMO_STRATEGIES if n in names and not strategy_type(n).needs_summarizer]


def sample_dir() -> Path:
    """The bundled sample's folder (what `demo` runs on without `--data`)."""
    from ..datasets._registry import DATASETS_DIR

    return DATASETS_DIR / "sample"


def _strategies(specs: Sequence[str] | None) -> list[Any]:
    from ..bench._grid import resolve_strategy

    chosen = list(specs) if specs else model_free_strategies()
    if not chosen:
        raise UsageError("no model-free strategies are registered; pass --strategy NAME")
    try:
        return [resolve_strategy(s) for s in chosen]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None


def _executor(args: argparse.Namespace) -> Any:
    return "serial" if args.serial or args.workers == 1 else None


LOCAL_CLUSTER = "local"
"""`--dask` without a scheduler: a LocalCluster started for the run."""


@contextmanager
def _dask_messages() -> Iterator[None]:
    """Show the bench's log lines (the scheduler and dashboard addresses) while on Dask."""
    import logging

    log = logging.getLogger("musepi_lab.bench")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("musepi-lab: %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    # The client (and tornado under it) log a lost scheduler with tracebacks; the run says
    # it in one line.
    quiet = [logging.getLogger(name) for name in ("distributed.client", "tornado.application")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        for q, was in zip(quiet, levels, strict=True):
            q.setLevel(was)


def _dask_options(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    if args.dask is None:
        return {}
    if args.serial:
        raise UsageError("--serial and --dask: choose one")
    if args.no_cache:
        raise UsageError(
            f"--dask resumes from {out}/results; remove that folder to start over, not --no-cache"
        )
    return {
        "executor": "dask",
        "out": out,
        "address": None if args.dask == LOCAL_CLUSTER else args.dask,
    }


def _run_bench(
    sessions: Sequence[SessionRef],
    strategies: Sequence[Any],
    budgets: Sequence[int],
    args: argparse.Namespace,
    out: Path,
) -> Any:
    from ..bench import FolderLockedError, run_benchmark, summary_table, table_text, write_benchmark
    from ..bench._lock import folder_lock
    from ..bench._summary import TEXT_WIDTH, token_sources_note
    from ..compaction._settings import CompactionSettings
    from ..tokens._counter import METHODS

    if args.counter is not None and args.counter not in METHODS:
        raise UsageError(f"--counter {args.counter}: not a token method ({', '.join(METHODS)})")
    settings = CompactionSettings.for_profile(args.profile)
    dask = _dask_options(args, out)
    calling = [s.name for s in strategies if type(s).needs_summarizer]
    summarizer = None
    if calling:
        summarizer = summarizer_from(
            args,
            cache_dir=None if args.no_cache else out / "summaries",
            required=f"strategy {calling[0]!r}",
        )
    options: dict[str, Any] = {
        "summarizer": summarizer,
        "settings": settings,
        "counter_method": args.counter,
        "facts": args.facts,
        "progress": not args.no_progress,
        "mode": args.mode,
        "max_workers": args.workers,
        "cell_timeout": _cell_timeout(args.cell_timeout),
        **_probe_options(args),
    }
    started = time.perf_counter()
    try:
        if dask:
            # The run locks the folder and streams its rows there itself.
            with _dask_messages():
                df = run_benchmark(list(sessions), strategies, budgets, **options, **dask)
        else:
            # One run per output folder: a second one would redo this one's cells.
            with folder_lock(out):
                df = run_benchmark(
                    list(sessions),
                    strategies,
                    budgets,
                    executor=_executor(args),
                    cache_dir=None if args.no_cache else out / "cells",
                    **options,
                )
                write_benchmark(df, out)
    except FolderLockedError as exc:
        raise UsageError(str(exc)) from None
    except (ImportError, ValueError, OSError) as exc:
        if not dask:
            raise
        raise UsageError(str(exc)) from None  # on Dask: a lost scheduler, a part not written
    elapsed = time.perf_counter() - started
    failed = int(df["error"].notna().sum())
    print(table_text(summary_table(df)))
    print("\n" + textwrap.fill(token_sources_note(df), TEXT_WIDTH))
    print(
        f"\n{len(df)} cells ({df.attrs['cells_computed']} computed, "
        f"{df.attrs['cells_cached']} cached, {failed} failed) in {elapsed:.1f} s; "
        f"results in {out}/{'results/' if dask else ''}"
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
    from ..bench._branch import BranchCase
    from ..datasets._branches import generate_branch_session
    from ..formats._registry import iter_sessions

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
    from .._atomic import write_bytes_atomic
    from ..bench._branch import BRANCH_STRATEGIES, branch_table, run_branch_bench

    cases = branch_cases(args.dataset, verify=not args.no_verify, generated=args.generated)
    summarizer = summarizer_from(
        args, cache_dir=None if args.no_cache else Path(args.out) / "summaries"
    )
    if summarizer is None:
        print(
            "musepi-lab: no model endpoint configured (--base-url or OPENAI_BASE_URL); "
            "the llm branch strategy is skipped"
        )
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
    from ..bench import read_benchmark, summary_table, table_text
    from ..plot import write_benchmark_report

    try:
        df = read_benchmark(args.dir)
    except (FileNotFoundError, ValueError) as exc:  # not finished; a part damaged since
        raise UsageError(str(exc)) from None
    written = write_benchmark_report(args.dir, df)
    print(table_text(summary_table(df)))
    print("\nwrote " + ", ".join(str(p) for p in written.values()))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..plot import write_benchmark_report

    out = Path(args.out)
    strategies = _strategies(args.strategy)
    data = args.data or str(sample_dir())
    print(
        f"musepi-lab demo: {len(strategies)} model-free strategies × budgets "
        f"{', '.join(map(str, _budgets(args)))} over {data}\n"
    )
    df = _run_bench(bench_sessions(data), strategies, _budgets(args), args, out)
    written = write_benchmark_report(out, df)
    print("plots: " + ", ".join(str(p) for n, p in written.items() if n.endswith(".png")))
    return 1 if len(df) and df["error"].notna().all() else 0


# -- the parser ---------------------------------------------------------------------------


def _cell_timeout(given: float | None) -> float | None:
    """`--cell-timeout`: the bench's default when not given, none at 0 (the default is read
    here, not when the parser is built, so `--help` imports no bench code)."""
    if given is None:
        from ..bench._cell import DEFAULT_CELL_TIMEOUT

        return DEFAULT_CELL_TIMEOUT
    return given or None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more: {text!r}")
    return value


def add_run_options(
    p: argparse.ArgumentParser,
    *,
    default_out: str | None,
    modes: tuple[str, ...] = ("compact", "replay"),
) -> None:
    """The options of a benchmark run, in the order `--help` lists them: the grid, where
    the cells run and the results go, what a cell measures, how the run resumes and shows
    itself, and the model of the strategies that call one."""
    _add_grid_options(p)
    _add_where_options(p, default_out)
    _add_measure_options(p, modes)
    _add_run_control_options(p)
    add_model_options(p, what="the strategies that call a model (llm-summary, handoff, ...)")


def _add_grid_options(p: argparse.ArgumentParser) -> None:
    """The strategies and budgets of the grid."""
    p.add_argument(
        "--strategy",
        action="append",
        metavar="NAME[:k=v,...]",
        help="a strategy with parameters (repeat; default: the model-free strategies)",
    )
    p.add_argument(
        "--budget",
        action="append",
        type=positive_int,
        metavar="N",
        help="keep-recent tokens (compact mode) or window (replay mode); repeat; 20k works",
    )


def _add_where_options(p: argparse.ArgumentParser, default_out: str | None) -> None:
    """Where the results go and where the cells run (a pool, inline, Dask)."""
    if default_out is None:
        p.add_argument("--out", required=True, help="folder for results.parquet/csv, config.json")
    else:
        p.add_argument("--out", default=default_out, help=f"output folder (default {default_out})")
    p.add_argument("--workers", type=int, default=None, help="process-pool size (default: CPUs)")
    p.add_argument("--serial", action="store_true", help="run every cell inline")
    p.add_argument(
        "--dask",
        nargs="?",
        const=LOCAL_CLUSTER,
        default=None,
        metavar="SCHEDULER",
        help="run on Dask distributed: a LocalCluster of --workers processes, or the "
        "scheduler at SCHEDULER (tcp://host:8786); rows stream to OUT/results/part-*.parquet "
        "and a rerun resumes from them",
    )


def _add_measure_options(p: argparse.ArgumentParser, modes: tuple[str, ...]) -> None:
    """What a cell measures: the mode, whose rules and counter, which facts."""
    p.add_argument(
        "--mode",
        choices=modes,
        default="compact",
        help="compact: each strategy once at each budget (keep-recent tokens); replay: whole "
        "sessions replayed under each budget as the window"
        + (
            "; branch: branch summaries over the sessions' branch points"
            if "branch" in modes
            else ""
        )
        + " (default compact)",
    )
    p.add_argument(
        "--profile",
        choices=("musepi", "pi"),
        default="musepi",
        help="whose compaction rules and token estimator: MusePi's or pi's (default musepi)",
    )
    p.add_argument(
        "--counter",
        default=None,
        metavar="METHOD",
        help="token counting method, e.g. musepi, pi, o200k_base, cl100k_base "
        "(default: the profile's estimator)",
    )
    p.add_argument(
        "--facts",
        choices=("auto", "planted", "extracted"),
        default="auto",
        help="the facts retention is scored on: planted (a generated dataset's facts file), "
        "extracted (by fixed rules from the session's own records), auto (planted when "
        "there, else extracted; the default)",
    )


def _add_run_control_options(p: argparse.ArgumentParser) -> None:
    """How the run resumes, gives up a cell and shows its progress."""
    p.add_argument("--no-cache", action="store_true", help="do not resume from OUT/cells")
    p.add_argument(
        "--cell-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="give up a cell that runs longer, as an error row (default: run_benchmark's "
        "cell_timeout, far above any cell's time; 0: no limit)",
    )
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


def add_probe_options(p: argparse.ArgumentParser) -> None:
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

    from ..llm import OpenAICompatibleSummarizer, SummarizerNotConfigured

    def endpoint(role: str) -> Any:
        url = getattr(args, f"{role}_url") or os.environ.get(PROBE_ENV[f"{role}_url"])
        model = getattr(args, f"{role}_model") or os.environ.get(PROBE_ENV[f"{role}_model"])
        key = os.environ.get(PROBE_ENV[f"{role}_key"])
        try:
            return OpenAICompatibleSummarizer(model=model, base_url=url, api_key=key)
        except SummarizerNotConfigured as exc:
            raise UsageError(f"--probes: no {role} endpoint: {exc}") from None

    return endpoint("reader"), endpoint("judge")
