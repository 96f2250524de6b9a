"""The grid on Dask distributed, on a real LocalCluster of worker processes on loopback:
the same rows as a serial run, Parquet parts, a worker SIGKILLed mid-run, a client killed
and rerun, a folder locked by a running run, and sessions that fail in a worker."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from musepi_lab.bench import FolderLockedError, read_benchmark, run_benchmark
from musepi_lab.bench._grid import SessionRef
from musepi_lab.bench._score import TIMING_COLUMNS
from musepi_lab.cli import main
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.strategies._base import CompactionContext, Strategy, register

distributed = pytest.importorskip("distributed")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample"
SESSIONS = sorted(SAMPLE.glob("*.jsonl"))  # four bundled sessions with planted facts


# -- strategies defined here (the workers import this module to unpickle them) ------------
@register
@dataclass(frozen=True)
class Sleepy(Strategy):
    """Drops what the engine's cut drops; while the `gate` file exists it first sleeps
    `seconds` (so cells are in flight when the test strikes) and leaves a mark
    `<pid>.<session file stem>.<ns>` in `marks`. The sleep changes no result, so the serial
    reference runs with the gate closed."""

    name: ClassVar[str] = "test-dask-sleepy"
    gate: str = ""
    marks: str = ""
    seconds: float = 0.5

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        if self.gate and os.path.exists(self.gate):
            if self.marks:
                stem = Path(ctx.session.source_path or "x").stem
                Path(self.marks, f"{os.getpid()}.{stem}.{time.time_ns()}").touch()
            time.sleep(self.seconds)
        if ctx.preparation is None:
            return None
        return CompactionResult.from_preparation(ctx.preparation, "earlier turns dropped")


@register
@dataclass(frozen=True)
class Raises(Strategy):
    """Always raises: its cells must be error rows."""

    name: ClassVar[str] = "test-dask-raises"

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        raise RuntimeError("this strategy is broken on purpose")


@register
@dataclass(frozen=True)
class KillsItsWorker(Strategy):
    """Ends the process it runs in (a worker), except process `spare`: a session that
    kills every worker it meets."""

    name: ClassVar[str] = "test-dask-kills-its-worker"
    spare: int = 0

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        if os.getpid() != self.spare:
            os._exit(13)
        return None


# -- the cluster and the comparison -------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    import dask

    # One allowed failure keeps the "kills every worker" case to two worker restarts.
    config = {
        "distributed.scheduler.allowed-failures": 1,
        "distributed.scheduler.worker-saturation": 1.0,
    }
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


def _serial(sessions, strategies, budgets) -> pd.DataFrame:
    return run_benchmark(sessions, strategies, budgets, executor="serial", progress=False)


def _parts(out: Path) -> dict[str, int]:
    """Rows of each part file, read with pyarrow (not through the package's reader)."""
    return {p.name: pq.read_metadata(p).num_rows for p in (out / "results").glob("part-*.parquet")}


def _copies(tmp_path: Path, prefixes: str) -> list[Path]:
    """The sample sessions (and their planted facts) under new names: more sessions."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    made = []
    for prefix in prefixes:
        for path in SESSIONS:
            target = folder / f"{prefix}-{path.name}"
            shutil.copy(path, target)
            facts = path.with_name(path.name.removesuffix(".jsonl") + ".facts.json")
            shutil.copy(facts, target.with_name(target.name.removesuffix(".jsonl") + ".facts.json"))
            made.append(target)
    return sorted(made)


# -- the same rows as serial ---------------------------------------------------------------
@pytest.mark.slow
def test_dask_frame_equals_the_serial_frame_and_streams_one_part_per_session(cluster, tmp_path):
    strategies = ["truncate", "observation-masking", "prune", "extractive"]
    budgets = [4000, 20000]
    out = tmp_path / "run"
    df = run_benchmark(
        SESSIONS,
        strategies,
        budgets,
        executor="dask",
        address=cluster.scheduler_address,
        out=out,
        progress=False,
    )
    serial = _serial(SESSIONS, strategies, budgets)
    pd.testing.assert_frame_equal(_compare(df), _compare(serial))
    assert df.attrs["cells_computed"] == 32 and df.attrs["cells_cached"] == 0
    # One part per session, each with that session's 4 × 2 cells; the manifest lists them.
    assert sorted(_parts(out).values()) == [8, 8, 8, 8]
    manifest = json.loads((out / "results" / "_SUCCESS.json").read_text())
    assert sorted(p["file"] for p in manifest["parts"]) == sorted(_parts(out))
    assert manifest["rows"] == 32
    for name in _parts(out):
        sources = set(
            pq.read_table(out / "results" / name, columns=["source"])["source"].to_pylist()
        )
        assert len(sources) == 1
    pd.testing.assert_frame_equal(_compare(read_benchmark(out)), _compare(serial))
    # A rerun finds every part written and computes nothing.
    again = run_benchmark(
        SESSIONS,
        strategies,
        budgets,
        executor="dask",
        address=cluster.scheduler_address,
        out=out,
        progress=False,
    )
    assert again.attrs["cells_computed"] == 0 and again.attrs["cells_cached"] == 32
    pd.testing.assert_frame_equal(_compare(again), _compare(serial))


def test_dask_needs_an_output_folder():
    with pytest.raises(ValueError, match="out=DIR"):
        run_benchmark(SESSIONS, ["truncate"], [8000], executor="dask", progress=False)


# -- faults ---------------------------------------------------------------------------------
def test_a_worker_killed_mid_run_loses_and_doubles_nothing(cluster, tmp_path):
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    gate.touch()
    marks.mkdir()
    strategies = [
        ("test-dask-sleepy", {"gate": str(gate), "marks": str(marks), "seconds": 0.6}),
        "truncate",
    ]
    budgets = [8000]
    with distributed.Client(cluster) as client:
        worker_pids = set(client.run(os.getpid).values())
    killed: list[int] = []

    def kill_the_first_busy_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for mark in marks.iterdir():
                pid = int(mark.name.split(".")[0])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_first_busy_worker)
    killer.start()
    out = tmp_path / "run"
    df = run_benchmark(
        SESSIONS,
        strategies,
        budgets,
        executor="dask",
        address=cluster.scheduler_address,
        out=out,
        progress=False,
    )
    killer.join()
    assert killed and killed[0] in worker_pids  # a real worker process, with a cell running
    started = [m.name.split(".") for m in marks.iterdir()]
    victim = next(stem for pid, stem, _ in started if int(pid) == killed[0])
    # The killed session ran again, in another process.
    assert {pid for pid, stem, _ in started if stem == victim} - {str(killed[0])}
    assert df["error"].isna().all()
    assert len(df) == len(SESSIONS) * 2
    assert not df.duplicated(["source", "label", "budget"]).any()
    assert sorted(_parts(out).values()) == [2, 2, 2, 2]
    gate.unlink()
    pd.testing.assert_frame_equal(_compare(df), _compare(_serial(SESSIONS, strategies, budgets)))


CLIENT = """
import sys
from musepi_lab.bench import run_benchmark

if __name__ == "__main__":
    import test_bench_dask  # registers the test strategies (the workers import it too)

    out, gate, *sessions = sys.argv[1:]
    run_benchmark(
        sessions,
        [("test-dask-sleepy", {"gate": gate, "seconds": 0.6})],
        [8000],
        executor="dask",
        out=out,
        max_workers=1,
        progress=False,
    )
"""


@pytest.mark.slow
def test_a_killed_client_resumes_from_its_parts_and_a_second_run_is_refused(cluster, tmp_path):
    psutil = pytest.importorskip("psutil")
    sessions = _copies(tmp_path, "ab")  # 8 sessions
    gate, out = tmp_path / "gate", tmp_path / "run"
    gate.touch()
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    client = subprocess.Popen(
        [sys.executable, str(script), str(out), str(gate), *map(str, sessions)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while len(_parts(out)) < 2 and client.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.poll() is None, "the client ended before it could be killed"
        # A second run into the folder while the first runs: refused, naming the holder.
        with pytest.raises(FolderLockedError, match=f"process {client.pid}"):
            run_benchmark(
                sessions,
                ["truncate"],
                [8000],
                executor="dask",
                out=out,
                address=cluster.scheduler_address,
                progress=False,
            )
        workers = psutil.Process(client.pid).children(recursive=True)
        client.send_signal(signal.SIGKILL)
        client.wait()
        # Its worker processes end with it, so nothing writes parts behind our back.
        _, alive = psutil.wait_procs(workers, timeout=20)
        assert not alive
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("part-*.parquet")}
    assert 2 <= len(before) < len(sessions)
    assert not (out / "results" / "_SUCCESS.json").exists()
    with pytest.raises(FileNotFoundError, match="has not finished"):
        read_benchmark(out)

    computed = []
    df = run_benchmark(
        sessions,
        [("test-dask-sleepy", {"gate": str(gate), "seconds": 0.6})],
        [8000],
        executor="dask",
        out=out,
        address=cluster.scheduler_address,
        progress=False,
        on_computed=lambda cell, row: computed.append(cell.session.path),
    )
    assert len(computed) == len(sessions) - len(before)
    assert {
        p.name: p.stat().st_mtime_ns
        for p in (out / "results").glob("part-*.parquet")
        if p.name in before
    } == before
    assert df.attrs["cells_cached"] == len(before)
    gate.unlink()
    serial = _serial(sessions, [("test-dask-sleepy", {"gate": str(gate), "seconds": 0.6})], [8000])
    pd.testing.assert_frame_equal(_compare(df), _compare(serial))


def test_sessions_that_fail_in_a_worker_are_error_rows(cluster, tmp_path):
    missing = SessionRef(str(tmp_path / "gone.jsonl"), 0, "0" * 64)
    sessions = [SESSIONS[3], missing]
    strategies = ["truncate", "test-dask-raises"]
    df = run_benchmark(
        sessions,
        strategies,
        [8000],
        executor="dask",
        address=cluster.scheduler_address,
        out=tmp_path / "run",
        progress=False,
    )
    pd.testing.assert_frame_equal(_compare(df), _compare(_serial(sessions, strategies, [8000])))
    errors = df.set_index(["source", "strategy"])["error"]
    assert pd.isna(errors[(str(SESSIONS[3]), "truncate")])
    assert "broken on purpose" in errors[(str(SESSIONS[3]), "test-dask-raises")]
    assert "gone.jsonl" in errors[(missing.path, "truncate")]


@pytest.mark.slow
def test_cli_bench_on_dask_and_report(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["bench", str(SAMPLE), "--strategy", "truncate", "--budget", "8000"]
    argv += ["--dask", cluster.scheduler_address, "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"dask scheduler {cluster.scheduler_address}" in printed
    assert "4 cells (4 computed, 0 cached, 0 failed)" in printed
    assert sorted(_parts(out).values()) == [1, 1, 1, 1]
    assert main(["report", str(out)]) == 0
    assert (out / "summary.csv").is_file()
    assert main([*argv, "--serial"]) == 2
    assert "choose one" in capsys.readouterr().err


# Last: the two workers it kills are restarted by their nannies while the module ends.
def test_a_session_that_kills_every_worker_it_meets_is_error_rows(cluster, tmp_path):
    crash = [("test-dask-kills-its-worker", {"spare": os.getpid()}), "truncate"]
    df = run_benchmark(
        [SESSIONS[0]],
        crash,
        [8000],
        executor="dask",
        address=cluster.scheduler_address,
        out=tmp_path / "crash",
        progress=False,
    )
    assert len(df) == 2 and df["error"].str.startswith("KilledWorker").all()
    assert sorted(_parts(tmp_path / "crash").values()) == [2]
