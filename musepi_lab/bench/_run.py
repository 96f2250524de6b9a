"""`run_benchmark`: the grid (session × strategy × budget) as one tidy DataFrame.

Each cell is a pure function of its inputs (`Cell`): the session file, the strategy and its
parameters, the budget, the settings, the token method and the fact source. Cells run
inline, in a process pool (the default; its workers end with this process), or on any
`concurrent.futures.Executor` — a Dask `distributed.Client(...).get_executor()` or Ray's
take the same cells. `executor="dask"` runs them on Dask distributed one task per session,
streaming rows to Parquet parts in an output folder (`_dask`, `_parts`). With a cache folder every finished cell is written at once (one small
JSON file named by the cell's key), so an interrupted run resumes where it stopped; the
folder is locked while a run uses it. What each row holds is described in `_score`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, as_completed
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._pool import worker_pool
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..metrics._metrics import DEFAULT_PRICES
from ..session._session import Session
from ..strategies._base import Strategy
from ._cache import cell_path, check_cell, clean_cache, write_cell
from ._cell import run_cell
from ._grid import Cell, SessionRef, make_cells, resolve_strategy, session_refs
from ._lock import folder_lock
from ._options import BenchmarkOptions, CellHook
from ._probes import check_evaluation, with_evaluation
from ._score import COLUMNS

if TYPE_CHECKING:
    import pandas as pd

DamageHook = Callable[[str, str], None]

logger = logging.getLogger("musepi_lab.bench")
SessionInput = str | os.PathLike[str] | Session | SessionRef


def _progress(total: int, enabled: bool, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, unit="cell")


def _default_workers(cells: int) -> int:
    return max(1, min(os.cpu_count() or 1, cells))


def _run_on(
    executor: Executor | str | None,
    cells: Sequence[Cell],
    todo: Sequence[int],
    finish: Callable[[int, dict[str, Any]], None],
    max_workers: int | None,
) -> None:
    """Compute the cells at `todo`, calling `finish(i, row)` in this process as each ends."""
    if executor == "serial" or (executor is None and len(todo) <= 1):
        for i in todo:
            finish(i, run_cell(cells[i]))
        return
    if isinstance(executor, str):
        raise ValueError(f"executor must be 'serial', None or an Executor, not {executor!r}")
    own = executor is None
    pool = worker_pool(max_workers or _default_workers(len(todo))) if own else executor
    assert pool is not None
    try:
        futures: dict[Future[dict[str, Any]], int] = {
            pool.submit(run_cell, cells[i]): i for i in todo
        }
        for future in as_completed(futures):
            finish(futures[future], future.result())
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)


def run_cells(
    cells: Sequence[Cell],
    *,
    executor: Executor | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_computed: CellHook | None = None,
    max_workers: int | None = None,
    on_damaged: DamageHook | None = None,
) -> list[dict[str, Any]]:
    """Rows of the given cells, in the cells' order (cached cells are read, the others
    computed and, with `cache_dir`, written as each finishes).

    Args:
        cells: The cells.
        executor: `"serial"` (inline), None (a process pool of `max_workers`, default one
            per CPU, whose workers end with this process), or any
            `concurrent.futures.Executor` (not shut down here).
        cache_dir: Folder of finished cells, locked while the run uses it; None disables
            resuming.
        progress: Show a tqdm progress bar (notebook-aware).
        on_computed: Called in this process with each computed (not cached) cell and row.
        max_workers: Size of the default process pool.
        on_damaged: Called with the path of each cell file found damaged (`check_cell`)
            and why; its cell is recomputed (and a warning logged).

    Raises:
        FolderLockedError: Another running process uses `cache_dir`.
    """
    with folder_lock(cache_dir) if cache_dir is not None else nullcontext():
        if cache_dir is not None:
            clean_cache(cache_dir)
        rows: list[dict[str, Any] | None] = [None] * len(cells)
        todo: list[int] = []
        for i, cell in enumerate(cells):
            cached = None
            if cache_dir is not None:
                cached, damage = check_cell(cache_dir, cell)
                if damage is not None:
                    _report_damage(str(cell_path(cache_dir, cell)), damage, on_damaged)
            if cached is None:
                todo.append(i)
            else:
                rows[i] = cached

        bar = _progress(len(cells), progress, "bench")
        bar.update(len(cells) - len(todo))

        def finish(i: int, row: dict[str, Any]) -> None:
            rows[i] = row
            # Failed cells are not stored, so a rerun tries them again.
            if cache_dir is not None and row.get("error") is None:
                write_cell(cache_dir, cells[i], row)
            if on_computed is not None:
                on_computed(cells[i], row)
            bar.update()

        try:
            _run_on(executor, cells, todo, finish, max_workers)
        finally:
            bar.close()
    return [row for row in rows if row is not None]


def _report_damage(path: str, damage: str, hook: DamageHook | None) -> None:
    logger.warning("%s: damaged (%s); its cell is recomputed", path, damage)
    if hook is not None:
        hook(path, damage)


def benchmark_config(
    sessions: Sequence[SessionRef],
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    *,
    mode: str,
    settings: CompactionSettings,
    counter_method: str,
    facts: str,
    summarizer: Summarizer | None,
    prices: Mapping[str, float] | None,
) -> dict[str, Any]:
    """The configuration of a run, as JSON-ready data (written beside the results)."""
    import platform
    import sys

    import pandas

    from .._prompts import PromptSet
    from .._version import __version__
    from ._grid import settings_json

    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "budget_meaning": "context window (tokens)"
        if mode == "replay"
        else "keep_recent_tokens of one compaction at the session leaf",
        "sessions": [
            {
                "path": r.path,
                "index": r.index,
                "sha256": r.sha256,
                "facts": r.facts_path,
                "facts_sha256": r.facts_sha256,
            }
            for r in sessions
        ],
        "strategies": [{"name": s.name, "params": s.params, "label": s.label} for s in strategies],
        "budgets": list(budgets),
        "settings": settings_json(settings),
        "counter": counter_method,
        "facts": facts,
        "summarizer": getattr(summarizer, "identity", None) if summarizer else None,
        "prices": {**DEFAULT_PRICES, **(prices or {})},
        "prompts": PromptSet.default().label,
        "versions": {
            "musepi_lab": __version__,
            "python": sys.version.split()[0],
            "pandas": pandas.__version__,
            "platform": platform.platform(),
        },
    }


def _describe(inputs: Sequence[SessionInput]) -> str:
    names = [os.fspath(i) if isinstance(i, (str, os.PathLike)) else repr(i) for i in inputs]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _session_refs(sessions: SessionInput | Iterable[SessionInput]) -> list[SessionRef]:
    """The refs of the inputs; an input list that yields no session is an error."""
    if isinstance(sessions, (str, os.PathLike, Session, SessionRef)):
        sessions = [sessions]
    inputs = list(sessions)
    refs = session_refs(inputs)
    if not refs:
        raise ValueError(
            f"no sessions found in {_describe(inputs) or 'an empty list of inputs'}"
            " (dataset manifests are not sessions: pass the dataset's name or its files)"
        )
    return refs


@dataclass
class _Tally:
    """An `on_computed` hook that counts the computed cells and calls the user's hook."""

    hook: CellHook | None
    computed: int = 0

    def __call__(self, cell: Cell, row: Mapping[str, Any]) -> None:
        self.computed += 1
        if self.hook is not None:
            self.hook(cell, row)


StrategySpec = str | Strategy | tuple[str, Mapping[str, Any]]
"""A strategy as `run_benchmark` takes it: a name (`"prune:keep_turns=3"`), a pair, a value."""


def _plan(
    sessions: SessionInput | Iterable[SessionInput],
    strategies: Iterable[StrategySpec],
    budgets: Iterable[int],
    options: BenchmarkOptions,
) -> tuple[list[Cell], dict[str, Any]]:
    """The cells of a run and its configuration."""
    refs = _session_refs(sessions)
    strats = [resolve_strategy(s) for s in strategies]
    budget_list = list(budgets)
    settings = options.settings or CompactionSettings.musepi()
    facts = options.facts or "auto"
    cells = make_cells(
        refs,
        strats,
        budget_list,
        mode=options.mode,
        settings=settings,
        counter_method=options.counter_method,
        facts=facts,
        summarizer=options.summarizer,
        prices=options.prices,
        time_limit=options.cell_timeout,
    )
    config = benchmark_config(
        refs,
        strats,
        budget_list,
        mode=options.mode,
        settings=settings,
        counter_method=cells[0].counter_method if cells else (options.counter_method or ""),
        facts=facts,
        summarizer=options.summarizer,
        prices=options.prices,
    )
    config["cell_timeout_s"] = options.cell_timeout
    return cells, config


def run_benchmark(
    sessions: SessionInput | Iterable[SessionInput],
    strategies: Iterable[StrategySpec],
    budgets: Iterable[int],
    *,
    options: BenchmarkOptions | None = None,
    **keywords: Any,
) -> pd.DataFrame:
    """Run every (session, strategy, budget) cell and return one tidy DataFrame.

    Args:
        sessions: Session files, folders of them, `Session`s read from files or `SessionRef`s.
        strategies: Names (`"prune:keep_turns=3"` works), `(name, params)` pairs or values.
        budgets: Tokens: the compaction's `keep_recent_tokens` (`compact`), the window (`replay`).
        options: A `BenchmarkOptions` (default: every option at its default).
        **keywords: Any option of `BenchmarkOptions` by name (`executor="serial"`,
            `cache_dir=...`, `mode="replay"`, `evaluate="probes"`, ...), replacing the one
            in `options`.

    Returns:
        One row per cell in grid order with `COLUMNS` (and `PROBE_COLUMNS`); `df.attrs`:
        `config`, `cells_computed`, `cells_cached`, `cells_damaged` or `parts_damaged`.

    Raises:
        FileNotFoundError: A session path does not exist.
        KeyError: An unknown strategy name.
        TypeError: A keyword that is not an option.
        ValueError: No session; a bad budget, mode, fact source or time limit; options
            that do not go together (`BenchmarkOptions.check`).
        FolderLockedError: Another running process uses `cache_dir` (or `out`).
    """
    opts = BenchmarkOptions.given(options, keywords, "run_benchmark")
    check_evaluation(opts.evaluate, mode=opts.mode, reader=opts.reader, judge=opts.judge)
    opts.check()
    cells, config = _plan(sessions, strategies, budgets, opts)
    if opts.executor == "dask":
        return _run_dask(cells, config, opts)
    df = _run_here(cells, config, opts)
    return with_evaluation(
        df, cells, opts.evaluate, reader=opts.reader, judge=opts.judge, point=opts.probe_point
    )


def _run_here(
    cells: Sequence[Cell], config: Mapping[str, Any], opts: BenchmarkOptions
) -> pd.DataFrame:
    """The frame of the cells run in this process, its pool or a given executor."""
    tally = _Tally(opts.on_computed)
    damaged: list[str] = []
    rows = run_cells(
        cells,
        executor=opts.executor,
        cache_dir=opts.cache_dir,
        progress=opts.progress,
        on_computed=tally,
        max_workers=opts.max_workers,
        on_damaged=lambda path, _why: damaged.append(path),
    )
    df = _frame(rows, config, computed=tally.computed, cached=len(cells) - tally.computed)
    df.attrs["cells_damaged"] = damaged
    return df


def _run_dask(
    cells: Sequence[Cell], config: Mapping[str, Any], opts: BenchmarkOptions
) -> pd.DataFrame:
    """The frame of the cells run on Dask (`_dask`), read back from the parts in `out`."""
    from ._dask import run_on_dask
    from ._parts import read_parts

    assert opts.out is not None, "checked by BenchmarkOptions.check"
    run = run_on_dask(
        cells,
        opts.out,
        config,
        address=opts.address,
        n_workers=opts.max_workers,
        progress=opts.progress,
        on_computed=opts.on_computed,
    )
    df = read_parts(opts.out)
    df.attrs.update(
        config=dict(config),
        cells_computed=run.computed,
        cells_cached=run.cached,
        parts_damaged=list(run.damaged),
        dask={"scheduler": run.scheduler, "dashboard": run.dashboard},
    )
    return df


def _frame(
    rows: Sequence[Mapping[str, Any]], config: Mapping[str, Any], *, computed: int, cached: int
) -> pd.DataFrame:
    """The benchmark frame of the rows, with the run's configuration and counts."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs.update(config=config, cells_computed=computed, cells_cached=cached)
    return df
