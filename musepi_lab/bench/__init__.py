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

from ._branch import BranchCase, branch_table, run_branch_bench
from ._compare import Comparison, compare_strategies
from ._files import read_benchmark, write_benchmark
from ._grid import session_refs
from ._lock import FolderLockedError
from ._options import BenchmarkOptions
from ._parts import benchmark_parts
from ._run import run_benchmark
from ._summary import summary_table, table_markdown, table_text

__all__ = [
    "BenchmarkOptions",
    "BranchCase",
    "Comparison",
    "FolderLockedError",
    "benchmark_parts",
    "branch_table",
    "compare_strategies",
    "read_benchmark",
    "run_benchmark",
    "run_branch_bench",
    "session_refs",
    "summary_table",
    "table_markdown",
    "table_text",
    "write_benchmark",
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
