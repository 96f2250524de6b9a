"""Benchmarks: the (session × strategy × budget) grid on any executor, scored, and written.

The grid (`_grid`), running it (`_cell`, `_run`, `_pool`, resuming with `_cache`; on Dask
distributed one task per session, its rows streamed to Parquet parts: `_dask`, `_parts`),
scoring one cell (`_score`), strategies × budgets over one session in process
(`_compare`: `compare_strategies` gives a `Comparison`, which `StrategyComparer` and
`musepi-lab compare` show), writing and reading results atomically (`_files`, under the
folder lock of `_lock`), the summary tables (`_summary`, with counts, means where defined
and bootstrap intervals from `_aggregate`) and probe scores beside the metrics (`_probes`,
`run_benchmark(..., evaluate="probes")`). Figures live in `musepi_lab.plot`
(`plot_benchmark`, `plot_tradeoff`, `write_benchmark_report`).
"""

from typing import Any

from ._aggregate import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CI_LEVEL,
    DIFFERENCE_COLUMNS,
    bootstrap_ci,
    cost_differences,
)
from ._branch import BRANCH_STRATEGIES, BranchCase, branch_table, run_branch_bench
from ._cache import read_cell, write_cell
from ._cell import run_cell
from ._compare import Comparison, compare_strategies
from ._files import read_benchmark, write_benchmark
from ._grid import (
    FACT_SOURCES,
    MODES,
    Cell,
    SessionRef,
    make_cells,
    parse_strategy,
    resolve_strategy,
    session_refs,
)
from ._lock import FolderLockedError
from ._options import BenchmarkOptions
from ._parts import benchmark_parts
from ._probes import EVALUATIONS, PROBE_COLUMNS
from ._run import benchmark_config, run_benchmark, run_cells
from ._score import COLUMNS, TIMING_COLUMNS, score_compaction, score_replay
from ._summary import (
    PROBE_SUMMARY_METRICS,
    REPLAY_SUMMARY_METRICS,
    SUMMARY_METRICS,
    default_metrics,
    summary_table,
    table_markdown,
    table_text,
    write_summary,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "BRANCH_STRATEGIES",
    "CI_LEVEL",
    "COLUMNS",
    "DIFFERENCE_COLUMNS",
    "EVALUATIONS",
    "FACT_SOURCES",
    "MODES",
    "PROBE_COLUMNS",
    "PROBE_SUMMARY_METRICS",
    "REPLAY_SUMMARY_METRICS",
    "SUMMARY_METRICS",
    "TIMING_COLUMNS",
    "BenchmarkOptions",
    "BranchCase",
    "Cell",
    "Comparison",
    "FolderLockedError",
    "SessionRef",
    "benchmark_config",
    "benchmark_parts",
    "bootstrap_ci",
    "branch_table",
    "compare_strategies",
    "cost_differences",
    "default_metrics",
    "make_cells",
    "parse_strategy",
    "read_benchmark",
    "read_cell",
    "resolve_strategy",
    "run_benchmark",
    "run_branch_bench",
    "run_cell",
    "run_cells",
    "score_compaction",
    "score_replay",
    "session_refs",
    "summary_table",
    "table_markdown",
    "table_text",
    "write_benchmark",
    "write_cell",
    "write_summary",
]

_MOVED_TO_PLOT = {
    "plot_benchmark": "plot_benchmark",
    "plot_tradeoff": "plot_tradeoff",
    "write_report": "write_benchmark_report",
}


def __getattr__(name: str) -> Any:
    # Figures belong to the plot layer above this one; importing it from here would run
    # the layers backwards, so the old names say where they went instead.
    if name in _MOVED_TO_PLOT:
        raise AttributeError(
            f"musepi_lab.bench.{name} moved to musepi_lab.plot.{_MOVED_TO_PLOT[name]}"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
