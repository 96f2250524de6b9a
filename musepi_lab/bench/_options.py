"""`BenchmarkOptions`: how `run_benchmark` runs its grid, as one frozen value.

Grouped by what they decide: what a cell measures (`mode`, `settings`, `counter_method`,
`facts`, `prices`, `summarizer`, `cell_timeout`), the probes scored beside the metrics
(`evaluate`, `reader`, `judge`, `probe_point`), where the cells run (`executor`,
`max_workers`, `cache_dir`, `out`, `address`) and what the caller sees while they do
(`progress`, `on_computed`). Every field is also a keyword of `run_benchmark`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

from .._options import Options
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ._cell import DEFAULT_CELL_TIMEOUT
from ._grid import Cell

CellHook = Callable[[Cell, Mapping[str, Any]], None]
"""`on_computed`: called with each computed (not cached) cell and its row."""


@dataclasses.dataclass(frozen=True)
class BenchmarkOptions(Options):
    """The options of `run_benchmark` (each one also a keyword of it).

    Attributes:
        mode: `"compact"` or `"replay"` (see `MODES`).
        settings: Compaction settings (None: MusePi's).
        counter_method: Token method (None: the profile's estimator).
        facts: `"auto"` (None means it), `"planted"` or `"extracted"` (`FACT_SOURCES`).
        prices: USD per million tokens (`input`, `output`, `cache_read`, `cache_write`).
        summarizer: For strategies that call a model (must pickle for process pools).
        cell_timeout: Seconds a cell may run; one that runs longer is an error row naming
            the limit, and the grid goes on (None: no limit).
        evaluate: `"metrics"`, or `"probes"` to add `PROBE_COLUMNS` (compact mode only).
        reader: The model answering the probes (`evaluate="probes"`).
        judge: The model scoring answers without an exact reference.
        probe_point: Where the probes' compaction is made (see `bench._probes`).
        executor: `"serial"` (inline); None for a process pool (`max_workers`, default
            one per CPU); any `concurrent.futures.Executor` (Dask's, Ray's); `"dask"`.
        max_workers: Size of the default process pool (or of the Dask `LocalCluster`).
        cache_dir: Folder of finished cells, each written as it ends (a rerun skips it).
        out: `executor="dask"`'s result folder (required there; a part per session in
            `results/`, where a rerun resumes).
        address: `executor="dask"`'s scheduler (None: a `LocalCluster`;
            `tcp://host:8786`; or a `distributed.Client`).
        progress: Show a progress bar (tqdm, notebook-aware).
        on_computed: Called with each computed (not cached) cell and its row.
    """

    mode: str = "compact"
    settings: CompactionSettings | None = None
    counter_method: str | None = None
    facts: str | None = None
    prices: Mapping[str, float] | None = None
    summarizer: Summarizer | None = None
    cell_timeout: float | None = DEFAULT_CELL_TIMEOUT
    evaluate: str = "metrics"
    reader: Summarizer | None = None
    judge: Summarizer | None = None
    probe_point: str = "last-request"
    executor: Executor | str | None = None
    max_workers: int | None = None
    cache_dir: str | os.PathLike[str] | None = None
    out: str | os.PathLike[str] | None = None
    address: Any = None
    progress: bool = True
    on_computed: CellHook | None = None

    def check(self) -> None:
        """Raise `ValueError` for options that do not go together (Dask's folder and
        scheduler without `executor="dask"`, a cache folder or probes with it)."""
        if self.executor != "dask":
            if self.out is not None or self.address is not None:
                raise ValueError("out= and address= go with executor='dask'")
            return
        if self.out is None:
            raise ValueError("executor='dask' writes its rows to a folder: pass out=DIR")
        if self.cache_dir is not None:
            raise ValueError(
                "executor='dask' resumes from the parts in out=; cache_dir= is for the other "
                "executors"
            )
        if self.evaluate != "metrics":
            raise ValueError("evaluate='probes' runs on the other executors, not on Dask")
