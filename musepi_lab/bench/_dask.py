"""The grid on Dask distributed: one task per session, results streamed to Parquet parts.

`run_benchmark(..., executor="dask", out=DIR)` comes here. The cells are grouped by
session (the grid is session-major) and each group is one task, so a worker reads a
session once and runs all its cells with `run_cell`, the same function and scoring as
every other executor: rows equal a serial run's. The task writes its rows as a part
(`_parts`) and returns only counts; the client holds at most `window` futures at a time
and never the rows, so its memory does not grow with the grid.

Faults. A worker killed mid-task: the scheduler runs the task again on another worker
(up to `allowed-failures` deaths, then `KilledWorker`); the part is named by its cells, so
the rerun replaces the first copy. A task that fails anyway (a session that kills every
worker it meets, a part that cannot be written) becomes that session's error rows, never
a crashed run. A killed client: the parts on disk are kept, and a rerun into the same
folder skips their sessions. Two runs into one folder: the second gets
`FolderLockedError` (`_lock`). A session that cannot be read, or a strategy that raises,
is already an error row from `run_cell`.

What ends a run instead, each as one `OSError` naming the cause (the parts written are
kept, so a rerun resumes): a lost scheduler (`SchedulerLostError`: the client's futures
are cancelled, and error rows would only bury parts the workers may still have written), a
folder where a part goes, and a part or the manifest that cannot be written (a full disk,
a file-size limit: `ResultsWriteError`). Temporaries of workers killed mid-write are
removed at the start and at the end of a run.

`dask` and `distributed` are imported only here, when this path runs
(`pip install 'musepi-lab[dask]'`).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import MusepiLabError
from ._cell import failed_row, run_cell
from ._files import remove_stale_temporaries
from ._grid import Cell
from ._lock import folder_lock
from ._parts import (
    RESULTS_DIR,
    check_part,
    part_file,
    part_key,
    remove_manifest,
    write_manifest,
    write_part,
)
from ._score import COLUMNS

logger = logging.getLogger("musepi_lab.bench")

LOCAL_CLUSTER_CONFIG: Mapping[str, Any] = {
    # A worker holds only the task it runs (no queue of its own): when it is killed, only
    # that task is blamed and rerun, and memory holds one session per thread.
    "distributed.scheduler.worker-saturation": 1.0,
    # A session whose task saw this many workers die is given up as error rows.
    "distributed.scheduler.allowed-failures": 3,
    # The statistical profiler walks the running task's stack every 10 ms: a cost on cells
    # that are pure Python, paid for a dashboard page the grid does not need.
    "distributed.worker.profile.enabled": False,
}
"""Dask settings of the `LocalCluster` a run starts (a named scheduler keeps its own)."""

TASK_RETRIES = 2
"""Reruns of a task that raised (a part write that failed: a full disk, a lost mount)."""

WINDOW_PER_THREAD = 8
"""Tasks in flight per worker thread: enough that the scheduler always has the next one
to hand a worker that finishes, few enough that the client holds a handful of futures."""

Hook = Callable[[Cell, Mapping[str, Any]], None]
Client = Any  # distributed.Client, imported lazily


class SchedulerLostError(MusepiLabError, ConnectionError):
    """The Dask scheduler went away mid-run; the parts written are kept (rerun to resume)."""


class ResultsWriteError(MusepiLabError, OSError):
    """A part or the manifest cannot be written (a full disk, a file-size limit, a folder
    in the way); the parts written are kept (rerun to resume once it can be)."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "executor='dask' needs dask.distributed: pip install 'musepi-lab[dask]'"
        ) from exc
    return distributed


def _dashboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


@contextmanager
def dask_client(
    address: str | Client | None = None, *, n_workers: int | None = None
) -> Iterator[Client]:
    """A `distributed.Client` for a run: of the scheduler at `address`, of a connected
    client (used as is, not closed), or of a `LocalCluster` started for the block.

    The local cluster is sized for one machine: `n_workers` worker processes (default one
    per CPU), one thread each (cells are Python, bound by the GIL), on loopback, with Dask's
    default memory limit per worker and `LOCAL_CLUSTER_CONFIG`; its dashboard listens on a
    free loopback port when bokeh is installed.

    Raises:
        ImportError: dask.distributed is not installed (the message names the extra).
    """
    distributed = _distributed()
    if address is not None and not isinstance(address, str):
        yield address
        return
    if address is not None:
        with distributed.Client(address) as client:
            yield client
        return
    import dask

    dashboard = "127.0.0.1:0" if _dashboard_available() else None
    with (
        dask.config.set(dict(LOCAL_CLUSTER_CONFIG)),
        distributed.LocalCluster(
            n_workers=n_workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=dashboard,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def dashboard_link(client: Client) -> str | None:
    """The client's dashboard address, or None when its scheduler serves none."""
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:
        return None
    return str(client.dashboard_link) if "dashboard" in services else None


def session_groups(cells: Sequence[Cell]) -> list[list[Cell]]:
    """The cells split into runs of one session each (the grid is session-major)."""
    groups: list[list[Cell]] = []
    last: tuple[str, int] | None = None
    for cell in cells:
        ref = (cell.session.path, cell.session.index)
        if ref != last:
            groups.append([])
            last = ref
        groups[-1].append(cell)
    return groups


def run_session_task(payload: bytes, results: str, key: str, with_rows: bool) -> dict[str, Any]:
    """One task, in a worker: every cell of one session, written as its part.

    Args:
        payload: The session's cells, pickled in the client (`pack_cells`).
        results: The folder of parts.
        key: The part's key (`part_key` of the cells).
        with_rows: Return the rows too (for an `on_computed` hook).

    Returns:
        `file`, `rows`, `errors` (and the rows themselves when `with_rows`).
    """
    import pickle

    cells: list[Cell] = pickle.loads(payload)
    rows = [run_cell(cell) for cell in cells]
    write_part(results, key, rows)
    return _outcome(key, rows, with_rows)


def pack_cells(cells: Sequence[Cell]) -> bytes:
    """A session's cells as one byte string for its task. Dask walks and serializes a list
    of dataclasses value by value (about 5 ms of the client's CPU per task on a 12-cell
    session, against 1.5 ms for bytes), and on a small machine that CPU is the workers'.
    cloudpickle, as Dask itself uses: a strategy defined in a notebook travels too."""
    import cloudpickle

    data: bytes = cloudpickle.dumps(list(cells))
    return data


def _outcome(key: str, rows: Sequence[Mapping[str, Any]], with_rows: bool) -> dict[str, Any]:
    errors = sum(1 for row in rows if row.get("error") is not None)
    done: dict[str, Any] = {"file": part_file(key), "rows": len(rows), "errors": errors}
    if with_rows:
        done["row_data"] = list(rows)
    return done


@dataclass(frozen=True)
class DaskRun:
    """What a run on Dask did (the rows are in `out`'s parts, not here).

    Attributes:
        out: The result folder.
        cells: Cells of the grid.
        computed: Cells computed by this run.
        cached: Cells whose parts an earlier run had written.
        failed: Cells that ended as error rows.
        scheduler: The scheduler's address (None: every part was written before, so no
            cluster was needed).
        dashboard: The dashboard's address, when there is one.
        damaged: Parts an earlier run wrote that failed their check (`check_part`) and
            were recomputed.
    """

    out: Path
    cells: int
    computed: int
    cached: int
    failed: int
    scheduler: str | None
    dashboard: str | None
    damaged: tuple[str, ...] = ()


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc="bench (dask)", unit="cell")


def run_on_dask(
    cells: Sequence[Cell],
    out: str | os.PathLike[str],
    config: Mapping[str, Any],
    *,
    address: str | Client | None = None,
    n_workers: int | None = None,
    window: int | None = None,
    progress: bool = True,
    on_computed: Hook | None = None,
    on_client: Callable[[Client], None] | None = None,
) -> DaskRun:
    """Run the cells on Dask, one task per session, into `<out>/results/part-*.parquet`,
    then write the manifest; sessions whose parts are already there are skipped.

    Args:
        cells: The grid (session-major, as `make_cells` makes it).
        out: The result folder (locked while the run uses it).
        config: The run's configuration (`config.json`).
        address: See `dask_client`.
        n_workers: Worker processes of the local cluster.
        window: Tasks in flight at most (default: `WINDOW_PER_THREAD` per worker thread).
        progress: Show a progress bar.
        on_computed: Called in this process with each computed cell and its row (the
            rows of a finished task then travel back to the client, one task at a time).
        on_client: Called with the client once it is connected (to show the dashboard).

    Raises:
        FolderLockedError: Another run uses `out`.
        SchedulerLostError: The scheduler went away mid-run (rerun to resume).
        ResultsWriteError: A part or the manifest cannot be written, or a folder stands
            where a part goes.
    """
    base = Path(out)
    with folder_lock(base):
        results = _results_folder(base)
        groups = session_groups(cells)
        keys = [part_key(group) for group in groups]
        parts, damaged = _written_parts(results, groups, keys)
        todo = [i for i, part in enumerate(parts) if part is None]
        cached = sum(len(groups[i]) for i, p in enumerate(parts) if p is not None)
        bar = _progress(len(cells), progress)
        bar.update(cached)
        computed = 0

        def finish(i: int, done: dict[str, Any]) -> None:
            nonlocal computed
            rows = done.pop("row_data", None)
            if on_computed is not None and rows is not None:
                for cell, row in zip(groups[i], rows, strict=True):
                    on_computed(cell, row)
            parts[i] = done
            computed += done["rows"]
            bar.update(done["rows"])

        jobs = _Jobs(groups, keys, str(results), on_computed is not None)
        try:
            # A rerun with every part written starts no cluster.
            scheduler, link = (
                _compute(jobs, todo, finish, address, n_workers, window, on_client)
                if todo
                else (None, None)
            )
        finally:
            bar.close()
        listed = [p for p in parts if p is not None]
        assert len(listed) == len(groups), "every session has its part"
        _finish_results(base, listed, config)
    return DaskRun(
        out=base,
        cells=len(cells),
        computed=computed,
        cached=cached,
        failed=sum(int(p["errors"]) for p in listed),
        scheduler=scheduler,
        dashboard=link,
        damaged=tuple(damaged),
    )


def _results_folder(base: Path) -> Path:
    """The run's folder of parts, made if needed, without a previous run's manifest and
    the temporaries of writers killed mid-write."""
    results = base / RESULTS_DIR
    results.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(results)
    remove_manifest(base)
    return results


def _finish_results(
    base: Path, listed: Sequence[Mapping[str, Any]], config: Mapping[str, Any]
) -> None:
    """The manifest (and `config.json`), once no temporary is left beside the parts."""
    results = base / RESULTS_DIR
    _remove_part_temporaries(results)
    try:
        write_manifest(base, listed, config)
    except OSError as exc:
        raise _write_error(results / "_SUCCESS.json", exc) from None


def _check_part_paths(results: Path, keys: Sequence[str]) -> None:
    """Refuse a run whose part paths hold something that is not a file (a folder there
    would fail every write of that session's part, after its cells ran)."""
    for key in keys:
        path = results / part_file(key)
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise ResultsWriteError(
                errno.EISDIR,
                f"{path}: a folder (or other non-file) stands where this run writes a part; "
                "move it away and rerun",
            )


def _remove_part_temporaries(results: Path) -> None:
    """Remove what writers killed mid-write left (`.part-*.tmp`): every task of the run has
    ended and the folder is locked, so no writer of it is left."""
    for tmp in results.glob(".part-*.tmp"):
        tmp.unlink(missing_ok=True)


def _write_error(path: Path, exc: OSError) -> ResultsWriteError:
    reason = exc.strerror or str(exc)
    return ResultsWriteError(
        exc.errno or errno.EIO,
        f"{path}: cannot be written ({reason}); the parts written are kept: rerun to resume "
        "once there is room",
    )


def _written_parts(
    results: Path, groups: Sequence[Sequence[Cell]], keys: Sequence[str]
) -> tuple[list[dict[str, Any] | None], list[str]]:
    """For each session, its part's counts when an earlier run wrote it whole and its rows
    prove it (None: to do); and the parts found damaged, each logged."""
    _check_part_paths(results, keys)
    parts: list[dict[str, Any] | None] = []
    damaged: list[str] = []
    for group, key in zip(groups, keys, strict=True):
        info, damage = check_part(results, key, len(group))
        parts.append({"file": part_file(key), **info} if info else None)
        if damage is not None:
            damaged.append(part_file(key))
            logger.warning(
                "%s: damaged (%s); its session's %d cells are recomputed",
                results / part_file(key),
                damage,
                len(group),
            )
    return parts, damaged


def _error_of(future: Any) -> BaseException:
    """What ended a future that did not finish (its exception, or why it has none)."""
    try:
        error = future.exception()
    except BaseException as exc:  # cancelled: the exception is the cancellation
        return exc
    return error if isinstance(error, BaseException) else RuntimeError(f"task {future.status}")


def _compute(
    jobs: _Jobs,
    todo: Sequence[int],
    finish: Callable[[int, dict[str, Any]], None],
    address: str | Client | None,
    n_workers: int | None,
    window: int | None,
    on_client: Callable[[Client], None] | None,
) -> tuple[str, str | None]:
    """Run the sessions at `todo` on a client; returns the scheduler's and dashboard's
    addresses."""
    with dask_client(address, n_workers=n_workers) as client:
        scheduler = str(client.scheduler.address)
        link = dashboard_link(client)
        logger.info("dask scheduler %s, dashboard %s", scheduler, link)
        if on_client is not None:
            on_client(client)
        threads = max(1, sum(client.nthreads().values()))
        jobs.run(client, todo, window or WINDOW_PER_THREAD * threads, finish)
    return scheduler, link


@dataclass
class _Jobs:
    """The submission window: at most `window` tasks in flight, as many new as ended."""

    groups: Sequence[Sequence[Cell]]
    keys: Sequence[str]
    results: str
    with_rows: bool

    def run(
        self,
        client: Client,
        todo: Sequence[int],
        window: int,
        finish: Callable[[int, dict[str, Any]], None],
    ) -> None:
        distributed = _distributed()
        pending = list(reversed(todo))
        index: dict[str, int] = {}
        # Results are gathered in the background and handed over in batches: a handful of
        # calls into the client's event loop per batch, not several per task.
        running = distributed.as_completed(with_results=True, raise_errors=False)

        def submit(count: int) -> None:
            chosen = [pending.pop() for _ in range(min(count, len(pending)))]
            if not chosen:
                return
            futures = client.map(
                run_session_task,
                [pack_cells(self.groups[i]) for i in chosen],
                [self.results] * len(chosen),
                [self.keys[i] for i in chosen],
                [self.with_rows] * len(chosen),
                # Named by the work, so a resubmitted session is the same task.
                key=[f"musepi-lab-part-{self.keys[i][:32]}" for i in chosen],
                retries=TASK_RETRIES,
            )
            for i, future in zip(chosen, futures, strict=True):
                index[future.key] = i
            running.update(futures)

        submit(window)
        for batch in running.batches():
            if any(future.status == "cancelled" for future, _ in batch):
                # The client cancels every future when it loses the scheduler (nothing
                # else cancels them here): stop, rather than write error rows over parts.
                address = getattr(client.scheduler, "address", None) or "(unknown)"
                raise SchedulerLostError(
                    f"the Dask scheduler at {address} went away mid-run; the parts written "
                    f"are kept in {self.results}: rerun into the same folder to resume"
                )
            for future, done in batch:
                i = index.pop(future.key)
                if future.status != "finished":  # KilledWorker, a part not written
                    done = self._failed(i, _error_of(future))
                finish(i, done)
            for future, _ in batch:
                future.release()
            submit(len(batch))

    def _failed(self, i: int, exc: BaseException) -> dict[str, Any]:
        path = Path(self.results) / part_file(self.keys[i])
        if isinstance(exc, OSError):  # only a part write raises in a task (cells never do)
            raise _write_error(path, exc)
        info, _ = check_part(self.results, self.keys[i], len(self.groups[i]))
        if info is not None:  # written whole before its worker died: kept, not buried
            return {"file": part_file(self.keys[i]), **info}
        logger.warning("session %s failed on the cluster: %s", self.groups[i][0].session.path, exc)
        rows = [
            {column: row.get(column) for column in COLUMNS}
            for row in (failed_row(cell, exc) for cell in self.groups[i])
        ]
        try:
            write_part(self.results, self.keys[i], rows)
        except OSError as write:
            raise _write_error(path, write) from None
        return _outcome(self.keys[i], rows, self.with_rows)
