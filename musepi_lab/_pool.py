"""The package's one process pool: workers that end when the process that started them ends,
and `map_files`, which spreads a folder's files over the machine's cores when they are many
bytes enough to pay for the pool (serial below `POOL_MIN_BYTES`), results in input order.

`ProcessPoolExecutor` workers wait on a queue whose other end they hold themselves, so a
parent killed with `kill -9` leaves them running (and holding memory, files and locks).
Each worker therefore asks Linux to kill it when its parent dies (`PR_SET_PDEATHSIG`) and,
everywhere, runs a watchdog thread that ends it once the parent is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

from ._process import pid_running

WATCH_SECONDS = 0.5
"""How often a worker's watchdog checks that its parent is still there."""

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl (another libc): the watchdog still ends the worker


def _watch(owner: int, parent: int) -> None:
    # A reparented worker (its parent died) or a dead owner (the run's process, which is
    # not the parent under the forkserver start method) ends the worker.
    while os.getppid() == parent and pid_running(owner):
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def end_with_owner(owner: int) -> None:
    """Pool initializer: end this worker when process `owner` (the run's) ends."""
    _set_parent_death_signal()
    parent = os.getppid()
    if not pid_running(owner):  # it died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(owner, parent), name="owner-watch", daemon=True).start()


def worker_pool(max_workers: int) -> ProcessPoolExecutor:
    """A process pool of `max_workers` whose workers end with this process."""
    return ProcessPoolExecutor(
        max_workers=max_workers, initializer=end_with_owner, initargs=(os.getpid(),)
    )


T = TypeVar("T")

POOL_MIN_BYTES = 24_000_000
"""Below this many bytes of files a folder is read in this process: starting the workers and
sending the results back cost more than a second core saves. perf/bench_pool_read.py on
the 2-core machine: the pool adds about 0.04 s of CPU at 12.7 MB (serial 0.07 s) and
0.2 s at 127 MB (serial 0.78 s), so half the serial work beats the overhead from about
20 MB on."""

WORKERS_ENV = "MUSEPI_LAB_WORKERS"
"""Environment variable: the most worker processes a folder read uses (1: always serial)."""


def _idle_cores(cores: int) -> int:
    """The cores the machine's other work leaves (1-minute load average), at least 1."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(1, min(cores, int(cores - load + 1)))


def pool_workers(total_bytes: int, files: int, *, min_bytes: int | None = None) -> int:
    """How many processes a read of `files` files holding `total_bytes` uses: 1 (serial)
    below `min_bytes`, for a single file, or when no core is idle (a pool on a busy machine
    measured 0.8x serial: its workers wait for the cores the serial read would have had);
    else the idle cores (at most the files; `$MUSEPI_LAB_WORKERS` sets the number, no load
    check)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = os.environ.get(WORKERS_ENV, "")
    if limit.isdigit() and int(limit) > 0:
        workers = int(limit)
    else:
        workers = _idle_cores(cores or 1)
    if files < 2 or total_bytes < (POOL_MIN_BYTES if min_bytes is None else min_bytes):
        return 1
    return max(1, min(workers, files))


def _file_bytes(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def map_files(
    function: Callable[[Path], T], paths: Sequence[Path], *, min_bytes: int | None = None
) -> list[T]:
    """`[function(p) for p in paths]`, on worker processes when the files are large enough
    (`pool_workers`; `min_bytes` defaults to `POOL_MIN_BYTES`): the same results in the
    same order. `function` must be a module-level
    function and its results picklable. Largest files are started first, so a big file
    does not run alone at the end."""
    sizes = [_file_bytes(p) for p in paths]
    workers = pool_workers(sum(sizes), len(paths), min_bytes=min_bytes)
    if workers == 1:
        return [function(p) for p in paths]
    order = sorted(range(len(paths)), key=lambda i: -sizes[i])
    methods = multiprocessing.get_all_start_methods()
    # fork: the workers start with the modules already imported (no second import of the
    # package per worker); elsewhere the platform's default.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    results: list[T | None] = [None] * len(paths)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=end_with_owner,
        initargs=(os.getpid(),),
    ) as pool:
        futures = {i: pool.submit(function, paths[i]) for i in order}
        for i in range(len(paths)):
            results[i] = futures[i].result()
    return results  # type: ignore[return-value]
