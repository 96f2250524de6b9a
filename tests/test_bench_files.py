"""Benchmark files under faults (issue 13): atomic results, usual permissions, one run per
output folder, pool workers that end with their parent, and no benchmark of nothing.

Faults are real where they can be: a writer process killed with SIGKILL mid-write, a lock
holder killed with SIGKILL, a benchmark process killed with SIGKILL while its workers run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from musepi_lab.bench import FolderLockedError, read_benchmark, run_benchmark, write_benchmark
from musepi_lab.bench._lock import LOCK_NAME, folder_lock
from musepi_lab.cli import main
from musepi_lab.datasets._registry import build_manifest, write_manifest
from musepi_lab.plot import write_benchmark_report

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
SMALL = SAMPLE / "sample-0004.jsonl"

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and modes")


# -- helpers -------------------------------------------------------------------------------
def _frame(seed: int, rows: int = 300) -> pd.DataFrame:
    """A frame big enough that a half-written Parquet or CSV file is detectably partial."""
    return pd.DataFrame(
        {
            "cell": range(rows),
            "value": [(i * seed) % 97 / 7 for i in range(rows)],
            "label": [f"strategy-{seed}-{i % 5}" for i in range(rows)],
        }
    )


def _python(
    code: str, *args: object, path: Path | None = None, **popen: object
) -> subprocess.Popen:
    """A Python child running `code` with `args`, importing this worktree's package (and
    modules in `path`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *([str(path)] if path else [])])}
    argv = [sys.executable, "-c", textwrap.dedent(code), *map(str, args)]
    return subprocess.Popen(argv, env=env, text=True, **popen)  # type: ignore[call-overload]


def _wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """A process exists and is not a zombie (read from /proc, independent of the library)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] not in ("Z", "X")


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


# -- atomic results ------------------------------------------------------------------------
def _assert_results_are(out: Path, expected: pd.DataFrame) -> None:
    parquet = read_benchmark(out)
    parquet.attrs = {}
    pd.testing.assert_frame_equal(parquet, expected, check_dtype=False)
    csv = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(csv, expected, check_dtype=False)


@pytest.mark.parametrize("method", ["to_parquet", "to_csv"])
def test_a_writer_that_fails_midway_leaves_the_earlier_results_whole(tmp_path, monkeypatch, method):
    out = tmp_path / "run"
    first = _frame(1)
    write_benchmark(first, out, {"run": 1})
    real = getattr(pd.DataFrame, method)

    def half_then_fail(self: pd.DataFrame, path: object, **kwargs: object) -> None:
        whole = tmp_path / "whole"
        real(self, whole, **kwargs)
        data = whole.read_bytes()
        Path(str(path)).write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, method, half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        write_benchmark(_frame(2), out, {"run": 2})
    monkeypatch.undo()

    _assert_results_are(out, first)
    assert json.loads((out / "config.json").read_text())["run"] == 1
    assert _temporaries(out) == []


_SLOW_WRITER = """
    import io, sys, time
    from pathlib import Path
    import pandas as pd
    from musepi_lab.bench import write_benchmark

    out, method, marker = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    frame = lambda seed: pd.DataFrame({
        "cell": range(300),
        "value": [(i * seed) % 97 / 7 for i in range(300)],
        "label": [f"strategy-{seed}-{i % 5}" for i in range(300)],
    })
    write_benchmark(frame(1), out, {"run": 1})
    real = getattr(pd.DataFrame, method)

    def slow(self, path, **kwargs):
        buffer = io.BytesIO() if method == "to_parquet" else io.StringIO()
        real(self, buffer, **kwargs)
        data = buffer.getvalue()
        data = data if isinstance(data, bytes) else data.encode()
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            marker.touch()
            time.sleep(60)  # killed here
            fh.write(data[len(data) // 2 :])

    setattr(pd.DataFrame, method, slow)
    write_benchmark(frame(2), out, {"run": 2})
"""


@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("method", ["to_parquet", "to_csv"])
def test_kill_9_during_a_write_keeps_the_earlier_results(tmp_path, method):
    out, marker = tmp_path / "run", tmp_path / "writing"
    child = _python(_SLOW_WRITER, out, method, marker)
    try:
        _wait_for(marker.exists, 60, "the second write to start")
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()

    _assert_results_are(out, _frame(1))
    assert json.loads((out / "config.json").read_text())["run"] == 1
    # The killed writer's temporaries are left; the next write clears them away.
    assert _temporaries(out)
    write_benchmark(_frame(3), out, {"run": 3})
    assert _temporaries(out) == []
    _assert_results_are(out, _frame(3))


@posix_only
@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_output_files_have_the_usual_permissions(tmp_path, umask, mask):
    umask(mask)
    out = tmp_path / "run"
    df = run_benchmark(
        SMALL, ["none"], [8000], executor="serial", cache_dir=out / "cells", progress=False
    )
    write_benchmark(df, out)
    write_benchmark_report(out, df)
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"results.parquet", "results.csv", "config.json", "summary.md", "tradeoff.png"} <= names
    assert any(p.suffix == ".json" and p.parent.parent.name == "cells" for p in files)
    expected = 0o666 & ~mask
    modes = {str(p.relative_to(out)): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert modes == dict.fromkeys(modes, expected)


# -- one run per output folder -------------------------------------------------------------
_HOLDER = """
    import sys, time
    from musepi_lab.bench._lock import folder_lock

    with folder_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(120)
"""


def _bench_argv(out: Path) -> list[str]:
    return [
        "bench",
        str(SMALL),
        "--strategy",
        "none",
        "--budget",
        "8000",
        "--serial",
        "--no-progress",
        "--out",
        str(out),
    ]


@posix_only
def test_a_second_bench_on_the_same_out_is_refused_and_a_dead_holder_lock_is_taken(
    tmp_path, capsys
):
    out = tmp_path / "run"
    holder = _python(_HOLDER, out, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert main(_bench_argv(out)) == 2
        err = capsys.readouterr().err
        assert str(out / LOCK_NAME) in err
        assert f"process {holder.pid}" in err
        assert not (out / "results.parquet").exists()
        assert not (out / "cells").exists()
        # The holder dies without releasing: its lock file stays, naming it.
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert (out / LOCK_NAME).read_text().strip() == str(holder.pid)
    assert main(_bench_argv(out)) == 0
    assert (out / "results.parquet").is_file()
    assert not (out / LOCK_NAME).exists()


def test_run_benchmark_refuses_a_cache_folder_in_use(tmp_path):
    cache = tmp_path / "cells"
    with folder_lock(cache) as lock:
        with pytest.raises(FolderLockedError, match=str(os.getpid())) as info:
            run_benchmark(SMALL, ["none"], [8000], executor="serial", cache_dir=cache)
        assert info.value.lock == lock and info.value.pid == os.getpid()
    # Released: the same run now goes through.
    df = run_benchmark(SMALL, ["none"], [8000], executor="serial", cache_dir=cache, progress=False)
    assert len(df) == 1 and df["error"].isna().all()


# -- pool workers end with their parent ----------------------------------------------------
_SLOW_STRATEGY = """
import os
import time
from dataclasses import dataclass
from typing import ClassVar

from musepi_lab.strategies._base import Strategy, register


@register
@dataclass(frozen=True)
class Sleepy(Strategy):
    name: ClassVar[str] = "test-files-sleepy"
    pids: str = ""

    def run(self, ctx):
        open(os.path.join(self.pids, str(os.getpid())), "w").close()
        time.sleep(120)
        return None
"""

_BENCH_WITH_POOL = """
    import sys
    import bench_files_sleepy
    from musepi_lab.bench import run_benchmark

    run_benchmark(
        sys.argv[1], [("test-files-sleepy", {"pids": sys.argv[2]})], [8000, 9000],
        max_workers=2, progress=False,
    )
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_end_when_the_benchmark_is_killed(tmp_path):
    (tmp_path / "bench_files_sleepy.py").write_text(_SLOW_STRATEGY, encoding="utf-8")
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    child = _python(_BENCH_WITH_POOL, SMALL, pids_dir, path=tmp_path)
    workers: list[int] = []
    try:
        _wait_for(lambda: len(list(pids_dir.iterdir())) == 2, 60, "two workers to start")
        workers = [int(p.name) for p in pids_dir.iterdir()]
        assert child.pid not in workers and all(_alive(pid) for pid in workers)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        _wait_for(lambda: not any(_alive(pid) for pid in workers), 5, "the workers to end")
    finally:
        if child.poll() is None:
            child.kill()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- no benchmark of nothing -----------------------------------------------------------------
def test_bench_refuses_an_empty_folder(tmp_path, capsys):
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    assert main(["bench", str(empty), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(empty) in err and "no sessions" in err
    assert not (tmp_path / "o" / "results.parquet").exists()
    with pytest.raises(ValueError, match=f"no sessions found in {empty}"):
        run_benchmark(empty, ["none"], [8000], executor="serial", progress=False)


def _manifest(tmp_path: Path, files: list[tuple[str, str]]) -> Path:
    manifest = build_manifest(
        name="tiny",
        root=tmp_path / "data",
        manifest_dir=tmp_path,
        files=files,
        description="test",
        source="test",
        licence="MIT",
        format="pi",
    )
    return write_manifest(manifest, tmp_path / "tiny.manifest.json")


def test_bench_on_a_manifest_path_runs_its_sessions_and_refuses_an_empty_one(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(SMALL, data / "one.jsonl")
    shutil.copy(SMALL, data / "not-listed.jsonl")  # in the folder but not in the manifest
    path = _manifest(tmp_path, [("one.jsonl", "session")])
    out = tmp_path / "out"
    assert main(["bench", str(path), "--strategy", "none", "--budget", "8000", "--serial",
                 "--no-progress", "--out", str(out)]) == 0  # fmt: skip
    df = read_benchmark(out)
    assert [Path(p).name for p in df["source"]] == ["one.jsonl"]

    empty = _manifest(tmp_path, [])
    assert main(["bench", str(empty), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert str(empty) in err and "no sessions" in err


def test_a_file_the_reader_cannot_count_is_a_row_not_a_crash(tmp_path):
    # Issue 13: an OpenHands array holding one value nested 1,000 deep crashed `bench`.
    deep = "[" * 1000 + "0" + "]" * 1000
    path = tmp_path / "deep.json"
    path.write_text(
        '[{"id": 1, "source": "user", "action": "message", "args": {"content": "hi"},'
        f' "extras": {deep}}}]',
        encoding="utf-8",
    )
    df = run_benchmark(path, ["none"], [8000], executor="serial", progress=False)
    assert len(df) == 1 and df["source"].iloc[0] == str(path.resolve())


@posix_only
def test_a_cell_write_cut_short_leaves_no_litter_after_the_next_run(tmp_path):
    cache = tmp_path / "cells"
    run_benchmark(SMALL, ["none"], [8000], executor="serial", cache_dir=cache, progress=False)
    (cell,) = cache.rglob("*.json")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = cell.with_name(f".{cell.name}.{dead.pid}.0.tmp")
    stale.write_bytes(cell.read_bytes()[:10])  # what a run killed mid-write leaves
    mine = cell.with_name(f".{cell.name}.{os.getpid()}.0.tmp")  # a live writer's
    mine.write_bytes(b"{")
    again = run_benchmark(
        SMALL, ["none"], [8000], executor="serial", cache_dir=cache, progress=False
    )
    assert again.attrs["cells_cached"] == 1
    assert not stale.exists() and mine.exists()
