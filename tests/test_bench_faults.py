"""Faults of a benchmark run found by attack (issue 26, items 4, 9 and 12), on a real
LocalCluster of worker processes on loopback, the process pool and real files.

- A part whose data pages are damaged under a whole footer (a float changed in place) is
  not taken as done on resume: its session is recomputed and the part reported; a damaged
  cell file of the cell cache likewise.
- A session that never returns (a strategy stuck in a loop, or blocked for good) does not
  hang the grid: its cell becomes an error row naming the time limit, on Dask, in the
  process pool and serially, and the other cells are computed as usual.
- `bench --dask` ends with one line naming the cause and a non-zero exit when its external
  scheduler is killed, when a folder stands at a part's path and when the disk takes no
  more (`ulimit -f`); the temporaries of workers killed mid-write do not outlive the run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

from musepi_lab.bench import read_benchmark, run_benchmark
from musepi_lab.bench._score import TIMING_COLUMNS
from musepi_lab.cli import main
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.strategies._base import CompactionContext, Strategy, register

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = sorted((ROOT / "datasets" / "sample").glob("*.jsonl"))


# -- a strategy defined here (the workers import this module to unpickle it) ---------------
@register
@dataclass(frozen=True)
class NeverReturns(Strategy):
    """Never returns: a Python loop that sleeps a little at a time (`block` False), or one
    sleep of an hour (`block` True), which no exception raised into its thread can end."""

    name: ClassVar[str] = "test-faults-never-returns"
    block: bool = False

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        if self.block:
            time.sleep(3600)
        while True:
            time.sleep(0.01)


@register
@dataclass(frozen=True)
class DiesWriting(Strategy):
    """The first time it runs (while `gate` exists), leaves a part temporary in `results`
    as a worker killed mid-write does, and ends its process; then drops what the cut drops."""

    name: ClassVar[str] = "test-faults-dies-writing"
    gate: str = ""
    results: str = ""

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        if self.gate and os.path.exists(self.gate):
            os.unlink(self.gate)
            Path(self.results, f".part-{'d' * 32}.parquet.{os.getpid()}.0.tmp").write_bytes(b"PAR1")
            os._exit(9)
        if ctx.preparation is None:
            return None
        return CompactionResult.from_preparation(ctx.preparation, "earlier turns dropped")


@register
@dataclass(frozen=True)
class Slow(Strategy):
    """Sleeps `seconds`, then drops what the cut drops (cells in flight when struck)."""

    name: ClassVar[str] = "test-faults-slow"
    seconds: float = 1.0

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        time.sleep(self.seconds)
        if ctx.preparation is None:
            return None
        return CompactionResult.from_preparation(ctx.preparation, "earlier turns dropped")


@pytest.fixture(scope="module")
def cluster():
    import dask

    config = {"distributed.scheduler.worker-saturation": 1.0}
    with (
        dask.config.set(config),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
    ):
        yield local


def _compare(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)


# -- item 4: a damaged part, a damaged cell file -----------------------------------------
def damage_a_value(part: Path) -> tuple[str, int, float, float]:
    """Change one float in the part's data pages in place, the footer left whole, so that
    pyarrow reads another value without complaint; returns (column, row, before, after)."""
    data = part.read_bytes()
    footer_start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    table = pq.read_table(part)
    for column in table.column_names:
        if column in TIMING_COLUMNS or not pa.types.is_floating(table.schema.field(column).type):
            continue
        for row, value in enumerate(table[column].to_pylist()):
            if value is None or value in (0.0, 1.0):
                continue
            raw = struct.pack("<d", value)
            at = data.find(raw)
            while 0 <= at < footer_start:
                part.write_bytes(data[:at] + struct.pack("<d", value / 10) + data[at + 8 :])
                after = pq.read_table(part)[column][row].as_py()
                if after != value:
                    return column, row, value, after
                at = data.find(raw, at + 1)
            part.write_bytes(data)
    raise AssertionError(f"{part}: no float of a data page could be changed")


def test_a_part_damaged_under_a_whole_footer_is_recomputed_and_reported(
    cluster, tmp_path, caplog, capsys
):
    out = tmp_path / "run"
    grid = (SESSIONS[:2], ["truncate", "observation-masking"], [4000, 20000])
    options = {"executor": "dask", "address": cluster.scheduler_address, "out": out}
    first = run_benchmark(*grid, **options, progress=False)
    manifest = json.loads((out / "results" / "_SUCCESS.json").read_text())
    part = out / "results" / manifest["parts"][0]["file"]
    footer = pq.read_metadata(part).metadata
    column, row, before, after = damage_a_value(part)
    assert pq.read_metadata(part).metadata == footer and after == pytest.approx(before / 10)
    with caplog.at_level(logging.WARNING, logger="musepi_lab.bench"):
        again = run_benchmark(*grid, **options, progress=False)
    assert again.attrs["cells_computed"] == 4 and again.attrs["cells_cached"] == 4
    assert again.attrs["parts_damaged"] == [part.name]
    said = [r.getMessage() for r in caplog.records if part.name in r.getMessage()]
    assert said and "recomputed" in said[0]
    pd.testing.assert_frame_equal(_compare(again), _compare(first))
    assert pq.read_table(part)[column][row].as_py() == before
    # Damaged after the run finished: reading the results refuses it, naming the part.
    damage_a_value(part)
    with pytest.raises(ValueError, match=re.escape(part.name)):
        read_benchmark(out)
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert part.name in line and "checksum" in line


def test_a_damaged_cell_file_is_recomputed_and_reported(tmp_path, caplog):
    cache = tmp_path / "cells"
    grid = (SESSIONS[:1], ["truncate"], [4000, 20000])
    first = run_benchmark(*grid, executor="serial", cache_dir=cache, progress=False)
    files = sorted(cache.glob("*/*.json"))
    assert len(files) == 2
    text = files[0].read_text()
    stored = json.loads(text)["row"]["token_reduction"]
    assert 0 < stored < 1
    number = re.search(r'"token_reduction": (\d\.\d+)', text)
    assert number is not None and float(number.group(1)) == stored
    files[0].write_text(text.replace(number.group(0), f'"token_reduction": {stored / 10!r}'))
    with caplog.at_level(logging.WARNING, logger="musepi_lab.bench"):
        again = run_benchmark(*grid, executor="serial", cache_dir=cache, progress=False)
    assert again.attrs["cells_computed"] == 1 and again.attrs["cells_cached"] == 1
    assert again.attrs["cells_damaged"] == [str(files[0])]
    assert any(str(files[0]) in r.getMessage() for r in caplog.records)
    pd.testing.assert_frame_equal(_compare(again), _compare(first))
    assert json.loads(files[0].read_text())["row"]["token_reduction"] == stored


# -- item 9: a cell that never returns ---------------------------------------------------
def within(seconds: float, run: Any) -> Any:
    """`run()`, failing the test (not hanging it) when it takes longer than `seconds`."""
    done: dict[str, Any] = {}

    def target() -> None:
        try:
            done["value"] = run()
        except BaseException as exc:
            done["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: the grid hangs"
    if "error" in done:
        raise done["error"]
    return done["value"]


HANGING = [("test-faults-never-returns", {}), ("test-faults-never-returns", {"block": True})]


def check_timed_out(df: pd.DataFrame, limit: float) -> None:
    hung = df[df["strategy"] == "test-faults-never-returns"]
    assert len(hung) == 4
    for error in hung["error"]:
        assert error.startswith("TimeoutError: ") and f"time limit of {limit:g} s" in error
    assert (hung["cell_seconds"] >= limit).all()
    others = df[df["strategy"] == "truncate"]
    assert len(others) == 2 and others["error"].isna().all()


GRID = (SESSIONS[:2], [*HANGING, "truncate"], [8000])


def test_a_cell_that_never_returns_is_an_error_row_on_dask(cluster, tmp_path):
    options = {"executor": "dask", "address": cluster.scheduler_address, "out": tmp_path / "r"}
    df = within(90, lambda: run_benchmark(*GRID, **options, cell_timeout=2, progress=False))
    check_timed_out(df, 2)
    serial = run_benchmark(SESSIONS[:2], ["truncate"], [8000], executor="serial", progress=False)
    # The same rows as a serial run (their dtypes widened by the error rows beside them).
    mine = _compare(df[df["strategy"] == "truncate"]).drop(columns=["error"])
    pd.testing.assert_frame_equal(mine, _compare(serial).drop(columns=["error"]), check_dtype=False)


def test_a_cell_that_never_returns_is_an_error_row_in_the_process_pool():
    df = within(90, lambda: run_benchmark(*GRID, max_workers=2, cell_timeout=2, progress=False))
    check_timed_out(df, 2)


def test_the_cli_cell_timeout_flag(tmp_path):
    script = (
        "import sys, test_bench_faults\n"
        "from musepi_lab.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    argv = ["bench", str(SESSIONS[0]), "--strategy", "test-faults-never-returns", "--strategy"]
    argv += ["truncate", "--budget", "8000", "--serial", "--cell-timeout", "1.5"]
    argv += ["--out", str(tmp_path / "run"), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "2 cells (2 computed, 0 cached, 1 failed)" in done.stdout
    assert "time limit of 1.5 s" in done.stderr
    df = read_benchmark(tmp_path / "run")
    assert df.attrs["config"]["cell_timeout_s"] == 1.5


# -- item 12: one line and a non-zero exit ---------------------------------------------------
def one_line_error(err: str) -> str:
    """The last stderr line, once it is known that no traceback of ours came before it (a
    Dask worker's own log lines may quote one)."""
    assert "Traceback (most recent call last)" not in err, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("musepi-lab: "), err
    return lines[-1]


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
CLI = (
    "import sys, test_bench_faults\nfrom musepi_lab.cli import main\nsys.exit(main(sys.argv[1:]))\n"
)


def test_a_killed_external_scheduler_ends_the_run_with_one_line(tmp_path):
    port_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(port_file)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    started = [scheduler]
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(port_file.read_text())["address"]
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
             "--no-nanny", "--no-dashboard"],
            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(worker)
        out = tmp_path / "run"
        argv = ["bench", str(SESSIONS[0].parent), "--strategy", "test-faults-slow:seconds=1.5"]
        argv += ["--budget", "8000", "--dask", address, "--out", str(out), "--no-progress"]
        client = subprocess.Popen(
            [sys.executable, "-c", CLI, *argv], env=ENV, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        started.append(client)
        deadline = time.monotonic() + 90
        while not list((out / "results").glob("part-*.parquet")) and time.monotonic() < deadline:
            assert client.poll() is None, client.communicate()
            time.sleep(0.05)
        scheduler.kill()
        printed, err = client.communicate(timeout=120)
        assert client.returncode not in (0, None), (printed, err)
        line = one_line_error(err)
        assert "scheduler" in line and address in line and "rerun" in line
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_a_folder_at_a_part_path_is_one_line(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["bench", str(SESSIONS[0]), "--strategy", "truncate", "--budget", "8000"]
    argv += ["--dask", cluster.scheduler_address, "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    (part,) = (out / "results").glob("part-*.parquet")
    part.unlink()
    part.mkdir()
    capsys.readouterr()
    assert main(argv) == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(part) in line and "folder" in line


def limit_file_size() -> None:  # in the child: what a full disk or `ulimit -f 8` gives
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


def test_a_disk_that_takes_no_more_is_one_line(tmp_path):
    out = tmp_path / "run"
    argv = ["bench", str(SESSIONS[0]), "--strategy", "truncate", "--budget", "8000"]
    argv += ["--dask", "--workers", "1", "--out", str(out), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", CLI, *argv], env=ENV, capture_output=True, text=True,
        timeout=180, preexec_fn=limit_file_size,
    )  # fmt: skip
    assert done.returncode not in (0, None)
    line = one_line_error(done.stderr)
    assert "File too large" in line and str(out) in line


def test_temporaries_of_a_worker_killed_mid_write_do_not_outlive_the_run(cluster, tmp_path):
    out, gate = tmp_path / "run", tmp_path / "gate"
    (out / "results").mkdir(parents=True)
    gate.touch()
    dies = ("test-faults-dies-writing", {"gate": str(gate), "results": str(out / "results")})
    options = {"executor": "dask", "address": cluster.scheduler_address, "out": out}
    df = run_benchmark([SESSIONS[0]], [dies, "truncate"], [8000], **options, progress=False)
    assert not gate.exists()  # a worker did die mid-task, its task ran again
    assert df["error"].isna().all() and len(df) == 2
    assert list((out / "results").glob(".part-*.tmp")) == []
