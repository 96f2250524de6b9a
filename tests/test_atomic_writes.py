"""Every file the library writes is written whole or not at all, with the usual permissions.

Issue 13 found session files and cache entries created mode 0600 (tempfile.mkstemp); they
are now written through one helper (`musepi_lab._atomic`), so a file written by the library
is as readable as any other file the user writes: 0666 less the umask.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from musepi_lab._atomic import write_files_atomic
from musepi_lab.datasets._registry import load_manifest, write_manifest
from musepi_lab.formats import read_session
from musepi_lab.llm._cache import DiskCache

SAMPLE = Path(__file__).resolve().parent.parent / "datasets" / "sample"


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_written_session_has_the_usual_permissions(tmp_path: Path, umask: int) -> None:
    path = read_session(SAMPLE / "sample-0001.jsonl").write(tmp_path / "out.jsonl")
    assert mode(path) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary left


def test_a_cache_entry_has_the_usual_permissions(tmp_path: Path, umask: int) -> None:
    cache = DiskCache(tmp_path / "cache")
    cache.put_json("k" * 64, {"text": "x"})
    (entry,) = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert mode(entry) == 0o666 & ~umask
    assert cache.get_json("k" * 64) == {"text": "x"}


def test_a_manifest_has_the_usual_permissions(tmp_path: Path, umask: int) -> None:
    manifest = load_manifest(SAMPLE.parent / "sample.manifest.json")
    path = write_manifest(manifest, tmp_path / "sample.manifest.json")
    assert mode(path) == 0o666 & ~umask


def test_a_writer_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "kept.txt"
    target.write_text("old")

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_files_atomic({target: half_then_fail})
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
