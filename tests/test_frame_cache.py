"""Frames through the Parquet cache equal the in-memory frames, dtypes and errors included;
only changed files are read again; the dask form computes the same frame."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from musepi_lab.analysis import (
    _cache,
    _part_values,
    dask_frame,
    entries_df,
    messages_df,
    problems_of,
    sessions_df,
    tool_calls_df,
)
from musepi_lab.analysis._cache import BATCH_FILES, CACHE_VERSION
from musepi_lab.datasets import write_scale_dataset
from musepi_lab.session import SessionReadError

FRAMES = {"entries": entries_df, "sessions": sessions_df, "messages": messages_df}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed")
    manifest = write_scale_dataset(out, 10, seed=21, workers=1)
    assert set(manifest["counts"]["formats"]) == {"pi", "claude-code", "codex"}
    return out


@pytest.fixture
def folder(generated, tmp_path):
    """The generated files, a byte copy of one (same session id), and a broken file."""
    root = tmp_path / "data"
    shutil.copytree(generated, root)
    first = sorted((root / "pi").glob("scale-*.jsonl"))[0]
    shutil.copy(first, root / "pi" / "zz-copy.jsonl")
    (root / "pi" / "broken.jsonl").write_text('{"type":"session","version":3,"id":"b"}\n{oops\n')
    return root


@pytest.fixture
def reads(monkeypatch):
    """The files the cache reads from disk (a wrapper around its file reader)."""
    seen: list[str] = []
    real = _cache.read_file_sessions

    def counting(path, strict):
        seen.append(path.name)
        return real(path, strict)

    monkeypatch.setattr(_cache, "read_file_sessions", counting)
    return seen


def _same(a, b):
    pd.testing.assert_frame_equal(a, b)
    assert problems_of(a) == problems_of(b)


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_cached_frames_equal_the_in_memory_ones(folder, tmp_path, kind):
    frame = FRAMES[kind]
    plain = frame(folder)
    assert any(
        p.kind == "malformed-json" for p in problems_of(plain)
    )  # the broken file is reported
    cache = tmp_path / "cache"
    _same(plain, frame(folder, cache_dir=cache))  # cold: built
    _same(plain, frame(folder, cache_dir=cache))  # warm: from Parquet
    _same(plain, frame(folder, progress=True))  # file by file, no cache


def test_session_ids_stay_unique_over_the_whole_call(folder, tmp_path):
    frame = sessions_df(folder, cache_dir=tmp_path / "cache")
    assert frame["session_id"].is_unique
    copies = frame[frame["session_id"].str.endswith("#2")]
    assert len(copies) == 1 and copies["source_path"].iloc[0].endswith("zz-copy.jsonl")


def test_only_changed_and_new_files_are_read_again(folder, tmp_path, reads):
    cache = tmp_path / "cache"
    entries_df(folder, cache_dir=cache)
    files = len(reads)
    assert files == len(list(folder.rglob("*.jsonl")))
    reads.clear()
    entries_df(folder, cache_dir=cache)
    assert reads == []
    victim = sorted((folder / "claude-code").glob("*.jsonl"))[0]
    lines = victim.read_text().splitlines(keepends=True)
    victim.write_text("".join(lines[:-3]))  # the session grew shorter
    shutil.copy(victim, folder / "new.jsonl")
    _same(entries_df(folder), entries_df(folder, cache_dir=cache))
    assert sorted(reads) == sorted([victim.name, "new.jsonl"])


def test_a_removed_file_leaves_the_frame_and_its_part_the_cache(folder, tmp_path, reads):
    cache = tmp_path / "cache"
    sessions_df(folder, cache_dir=cache)
    files = sorted(folder.rglob("*.jsonl"))
    assert len(files) <= BATCH_FILES and len(_parts(cache)) == 1  # one batch holds them all
    gone = folder / "pi" / "zz-copy.jsonl"
    gone.unlink()
    reads.clear()
    _same(sessions_df(folder), sessions_df(folder, cache_dir=cache))
    index = json.loads((cache / f"v{CACHE_VERSION}" / "index.json").read_bytes())
    assert reads == [] and str(gone) not in index
    # The batch stays while other files' parts are in it, and goes with the last of them.
    assert len(_parts(cache)) == 1
    for file in files:
        file.unlink(missing_ok=True)
    sessions_df(folder, cache_dir=cache)
    assert _parts(cache) == []


def _parts(cache):
    return sorted(p for p in cache.rglob("*.parquet") if p.parent.name != "bundles")


def _cut(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_corrupt_cache_file_is_rebuilt_not_trusted(folder, tmp_path, reads):
    cache = tmp_path / "cache"
    plain = messages_df(folder)
    messages_df(folder, cache_dir=cache)
    (bundle,) = cache.rglob("bundles/*.parquet")
    _cut(bundle)
    reads.clear()
    _same(plain, messages_df(folder, cache_dir=cache))  # from the parts, no file read
    assert reads == []
    _cut(bundle)
    (batch,) = _parts(cache)
    _cut(batch)
    _same(plain, messages_df(folder, cache_dir=cache))
    # Every file whose part was in the cut batch is read again, and no other.
    assert sorted(reads) == sorted(p.name for p in folder.rglob("*.jsonl"))
    assert batch not in _parts(cache) and len(_parts(cache)) == 1
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]


def test_another_counter_or_code_version_does_not_reuse_the_cache(
    folder, tmp_path, reads, monkeypatch
):
    cache = tmp_path / "cache"
    sessions_df(folder, cache_dir=cache)
    files = len(reads)
    reads.clear()
    other = sessions_df(folder, cache_dir=cache, counter="pi")
    assert len(reads) == files
    _same(sessions_df(folder, counter="pi"), other)
    reads.clear()
    monkeypatch.setattr(_cache, "__version__", "0.0.0-older")
    sessions_df(folder, cache_dir=cache)
    assert len(reads) == files


def test_tool_calls_through_the_cache(folder, tmp_path):
    _same(tool_calls_df(folder), tool_calls_df(folder, cache_dir=tmp_path / "cache"))


def test_strict_raises_the_problem_the_in_memory_read_raises(folder, tmp_path):
    with pytest.raises(SessionReadError) as plain:
        entries_df(folder, strict=True)
    with pytest.raises(SessionReadError) as cached:
        entries_df(folder, strict=True, cache_dir=tmp_path / "cache")
    assert (cached.value.path, cached.value.line, cached.value.kind) == (
        plain.value.path,
        plain.value.line,
        plain.value.kind,
    )


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_the_dask_frame_computes_the_pandas_frame(folder, tmp_path, kind):
    frame = FRAMES[kind](folder)
    errors = problems_of(frame)
    files = len(list(folder.rglob("*.jsonl")))
    for per_partition in (1, 5):
        lazy, lazy_errors = dask_frame(
            kind, folder, cache_dir=tmp_path / "cache", files_per_partition=per_partition
        )
        assert lazy.npartitions == -(-files // per_partition)
        pd.testing.assert_frame_equal(lazy.compute().reset_index(drop=True), frame)
        assert lazy_errors == errors


def test_dask_frame_refuses_an_unknown_kind(folder, tmp_path):
    with pytest.raises(ValueError, match="unknown frame kind"):
        dask_frame("turns", folder, cache_dir=tmp_path)


def test_a_cache_inside_the_folder_is_not_read_as_sessions(folder):
    inside = folder / ".frames"
    sessions_df(folder, cache_dir=inside)
    assert (inside / f"v{CACHE_VERSION}" / "index.json").is_file()
    _same(sessions_df(folder, cache_dir=inside), sessions_df(folder, cache_dir=inside))
    frame = sessions_df(folder, cache_dir=inside)
    assert not frame["source_path"].str.contains(".frames").any()


@pytest.mark.parametrize(
    "values",
    [
        [],
        [None],
        ["2026-01-01T00:00:00Z"],
        ["2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00Z"],
        ["2026-01-01T00:00:00.123456Z", None],
        ["2026-01-01T00:00:00.123456789Z", "2026-01-01T00:00:00Z"],
        ["not a time", "2026-01-01T00:00:00.1Z"],
        ["2026-01-01T00:00:00+02:00", "2026-01-01 00:00:00.5"],
    ],
)
def test_a_parts_timestamp_unit_is_the_one_pandas_parses_to(values):
    from musepi_lab.analysis._columns import TIMESTAMP
    from musepi_lab.analysis._load import typed_series

    parsed = typed_series(pd.Series(values, dtype=object), TIMESTAMP)
    assert _part_values.timestamp_unit(values) == str(getattr(parsed.dtype, "unit", "s"))


def test_frame_ids_follow_the_suffix_rule_in_linear_time():
    # The rule by hand: the first as it is, later copies the first `#n` not taken.
    assert _cache.frame_ids(["a", "a", "a#2", "a", "b", "a#2"]) == [
        "a",
        "a#2",
        "a#2#2",
        "a#3",
        "b",
        "a#2#3",
    ]
    copies = _cache.frame_ids(["s"] * 50_000)  # quadratic probing would take minutes
    assert copies[-1] == "s#50000" and len(set(copies)) == 50_000
