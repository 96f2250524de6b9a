"""The folder-read pool (`musepi_lab._pool`): serial below its threshold, on worker
processes above it, the results equal to a serial read and in the order of the files."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from _corpus import CORPUS, needs_corpus

from musepi_lab import _pool
from musepi_lab.analysis import problems_of, usage_df
from musepi_lab.analysis._usage_read import usage_rows


def _pid_and_size(path: Path) -> tuple[int, int]:
    return os.getpid(), path.stat().st_size


def _files(tmp_path: Path, sizes: list[int]) -> list[Path]:
    out = []
    for n, size in enumerate(sizes):
        path = tmp_path / f"f{n:02}.jsonl"
        path.write_bytes(b"x" * size)
        out.append(path)
    return out


def test_below_the_threshold_the_files_are_read_here(tmp_path: Path) -> None:
    files = _files(tmp_path, [10, 20, 30])
    results = _pool.map_files(_pid_and_size, files, min_bytes=1000)
    assert results == [(os.getpid(), 10), (os.getpid(), 20), (os.getpid(), 30)]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the pool is never used")
def test_above_it_workers_read_them_in_order(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(_pool.WORKERS_ENV, "2")
    sizes = [5, 400, 3, 250, 90, 1, 77, 600]  # largest started first, results in file order
    files = _files(tmp_path, sizes)
    results = _pool.map_files(_pid_and_size, files, min_bytes=0)
    assert [size for _, size in results] == sizes
    assert os.getpid() not in {pid for pid, _ in results}


def test_the_environment_caps_the_workers(monkeypatch) -> None:
    monkeypatch.setenv(_pool.WORKERS_ENV, "1")
    assert _pool.pool_workers(10**12, 100) == 1
    monkeypatch.setenv(_pool.WORKERS_ENV, "3")
    assert _pool.pool_workers(10**12, 100) == 3
    assert _pool.pool_workers(10**12, 2) == 2  # at most one worker a file
    assert _pool.pool_workers(10, 100, min_bytes=1000) == 1
    assert _pool.pool_workers(10**12, 1) == 1


@needs_corpus
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the pool is never used")
def test_usage_rows_on_the_pool_equal_the_serial_ones(monkeypatch) -> None:
    folders = [CORPUS / "claude-code", CORPUS / "codex", CORPUS / "pi"]
    monkeypatch.setenv(_pool.WORKERS_ENV, "1")
    serial_frame = usage_df(folders)
    serial_problems = problems_of(serial_frame)
    serial_rows = usage_rows(folders)
    monkeypatch.setenv(_pool.WORKERS_ENV, "2")
    monkeypatch.setattr(_pool, "POOL_MIN_BYTES", 0)
    assert _pool.pool_workers(1, 2) > 1
    frame = usage_df(folders)
    problems = problems_of(frame)
    pd.testing.assert_frame_equal(frame, serial_frame)
    assert frame.attrs == serial_frame.attrs
    assert [str(p) for p in problems] == [str(p) for p in serial_problems]
    assert usage_rows(folders) == serial_rows


def test_a_busy_machine_reads_serially(monkeypatch) -> None:
    monkeypatch.delenv(_pool.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    assert _pool.pool_workers(10**12, 100) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _pool.pool_workers(10**12, 100) == min(cores or 1, 100)
