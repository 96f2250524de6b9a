"""The live view when the file is not simply appended to (issue 26, items 2, 5 and 6).

After every poll the tail's session must be what a full read (`read_session`, detecting the
format) of the same complete lines gives: a Claude Code file whose first lines tell no
format yet (its `file-history-snapshot` lines), a file rotated to another agent's format, a
file rewritten in place or deleted and recreated on the same inode with the same first
bytes. A path replaced by a device or a FIFO ends `watch` with a one-line error, within its
`--seconds`, and no poll reads without bound.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _corpus import CORPUS

from musepi_lab.datasets._scale_formats import to_claude_code, to_codex
from musepi_lab.formats._registry import read_session
from musepi_lab.formats._tail import MAX_READ_BYTES, TailState, poll, start_tail
from musepi_lab.session import Session
from musepi_lab.widgets._live import LiveFeed

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample" / "sample-0001.jsonl"
OTHER = REPO / "datasets" / "sample" / "sample-0002.jsonl"
# The line Claude Code 2.x writes first (shape of the corpus files, e.g. spotter_short).
SNAPSHOT = {
    "type": "file-history-snapshot",
    "messageId": "15b43078-725a-4e3b-9467-da0b5985b082",
    "snapshot": {
        "messageId": "15b43078-725a-4e3b-9467-da0b5985b082",
        "trackedFileBackups": {},
        "timestamp": "2026-02-12T15:38:23.163Z",
    },
    "isSnapshotUpdate": False,
}


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def records_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def claude_code_bytes() -> bytes:
    """A Claude Code transcript that opens, as Claude Code's do, with snapshot lines."""
    body, _ = to_claude_code(records_of(SAMPLE), "0b5b1d0e-4e0e-4c8e-9d4e-1f1f7d0c0a01")
    snapshot = json.dumps(SNAPSHOT, separators=(",", ":")).encode() + b"\n"
    return snapshot + snapshot.replace(b"15b43078", b"25b43078") + body


def codex_bytes() -> bytes:
    body, _ = to_codex(records_of(OTHER), "0b5b1d0e-4e0e-4c8e-9d4e-1f1f7d0c0a02")
    return body


def full_read(live: Path, data: bytes, tmp_path: Path) -> Session:
    """A full read of `data` from a file of the same name (ids may come from the name)."""
    folder = tmp_path / "full"
    folder.mkdir(exist_ok=True)
    copy = folder / live.name
    copy.write_bytes(data)
    return read_session(copy)


def assert_view_is_a_full_read(state: TailState, live: Path, tmp_path: Path) -> Session:
    complete = live.read_bytes()[: state.offset - state.pending_bytes]
    full = full_read(live, complete, tmp_path)
    view = state.session
    assert view.source_format == full.source_format
    assert view.id == full.id
    assert [dict(e.record) for e in view.entries] == [dict(e.record) for e in full.entries]
    assert [(p.line, p.kind) for p in view.errors] == [(p.line, p.kind) for p in full.errors]
    return full


# -- item 2: detect again until the format is certain, and after every rotation -----------
def follow_line_by_line(data: bytes, live: Path, tmp_path: Path) -> TailState:
    lines = lines_of(data)
    live.write_bytes(lines[0])  # the file as the view finds it: one snapshot line
    state = start_tail(live)
    assert_view_is_a_full_read(state, live, tmp_path)
    for k, line in enumerate(lines[1:], start=2):
        with open(live, "ab") as fh:
            fh.write(line)
        state = poll(state)
        assert state.lines == k
        assert_view_is_a_full_read(state, live, tmp_path)
    return state


def test_a_claude_code_file_started_on_its_first_line_is_read_as_claude_code(
    tmp_path: Path,
) -> None:
    live = tmp_path / "0b5b1d0e.jsonl"
    state = follow_line_by_line(b"".join(lines_of(claude_code_bytes())[:80]), live, tmp_path)
    assert state.format == "claude-code" and state.session.source_format == "claude-code"
    assert len(state.session.entries) > 10


def test_a_real_claude_code_file_started_on_its_first_line(tmp_path: Path) -> None:
    source = CORPUS / "claude-code" / "spotter_short.jsonl"
    if not source.exists():
        pytest.skip(f"corpus file not found: {source}")
    assert json.loads(lines_of(source.read_bytes())[0])["type"] == "file-history-snapshot"
    state = follow_line_by_line(source.read_bytes(), tmp_path / source.name, tmp_path)
    assert state.format == "claude-code"


def test_the_live_feed_of_a_file_started_empty_turns_claude_code(tmp_path: Path) -> None:
    live = tmp_path / "0b5b1d0e.jsonl"
    live.touch()
    feed = LiveFeed(str(live))
    lines = lines_of(claude_code_bytes())
    for chunk in (lines[:1], lines[1:2], lines[2:40]):
        with open(live, "ab") as fh:
            fh.write(b"".join(chunk))
        assert feed.poll_once()
        full = assert_view_is_a_full_read(feed.state, live, tmp_path)
        assert feed.summary.entries == len(full.entries)
    assert feed.state.format == "claude-code"


def test_a_rotation_to_another_format_is_detected_again(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    live.write_bytes(SAMPLE.read_bytes())
    state = start_tail(live)
    assert state.format == "pi"
    rotations = [claude_code_bytes(), codex_bytes(), SAMPLE.read_bytes()[:30_000]]
    for k, data in enumerate(rotations, start=1):
        fresh = tmp_path / "s.jsonl.new"
        fresh.write_bytes(data)
        os.replace(fresh, live)  # a new file under the name, of another agent
        state = poll(state)
        assert state.restarts == k
        assert_view_is_a_full_read(state, live, tmp_path)
    assert state.format == "pi"
    # Rotated in place, by truncation, to a file whose first line tells nothing yet.
    with open(live, "r+b") as fh:
        fh.truncate(0)
        fh.write(lines_of(claude_code_bytes())[0])
    state = poll(state)
    assert_view_is_a_full_read(state, live, tmp_path)
    with open(live, "ab") as fh:
        fh.write(b"".join(lines_of(claude_code_bytes())[1:30]))
    state = poll(state)
    assert state.format == "claude-code"
    assert_view_is_a_full_read(state, live, tmp_path)


# -- item 6: a rewrite between two polls -----------------------------------------------------
def rewritten(old: bytes) -> bytes:
    """Another session under the same first lines (over 256 bytes), at least as long."""
    lines = lines_of(old)
    assert len(b"".join(lines[:4])) > 256
    new = b"".join(lines[:4]) + b"".join(lines_of(OTHER.read_bytes())[4:])
    assert len(new) >= len(old) and new[:256] == old[:256] and new != old
    return new


def test_a_file_rewritten_in_place_past_its_old_size_is_read_anew(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    old = b"".join(lines_of(SAMPLE.read_bytes())[:60])
    live.write_bytes(old)
    state = start_tail(live)
    inode = live.stat().st_ino
    with open(live, "r+b") as fh:  # truncated and written again before the next look
        fh.truncate(0)
        fh.write(rewritten(old))
    state = poll(state)
    assert live.stat().st_ino == inode
    assert state.restarts == 1
    assert_view_is_a_full_read(state, live, tmp_path)


def test_a_file_deleted_and_recreated_on_its_inode_is_read_anew(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    old = b"".join(lines_of(SAMPLE.read_bytes())[:60])
    live.write_bytes(old)
    state = start_tail(live)
    inode = live.stat().st_ino
    live.unlink()
    live.write_bytes(rewritten(old))
    if live.stat().st_ino != inode:
        pytest.skip("the filesystem gave the new file another inode")
    state = poll(state)
    assert state.restarts == 1
    assert_view_is_a_full_read(state, live, tmp_path)
    with open(live, "ab") as fh:  # and appends after it follow on
        fh.write(lines_of(SAMPLE.read_bytes())[60])
    state = poll(state)
    assert state.restarts == 1
    assert_view_is_a_full_read(state, live, tmp_path)


def test_plain_appends_are_not_taken_for_rewrites(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    lines = lines_of(SAMPLE.read_bytes())
    live.write_bytes(b"".join(lines[:5]))
    state = start_tail(live)
    for k in range(5, len(lines), 7):
        with open(live, "ab") as fh:
            fh.write(b"".join(lines[k : k + 7]))
        state = poll(state)
    assert state.restarts == 0 and state.mode == "incremental"
    assert_view_is_a_full_read(state, live, tmp_path)


# -- item 5: the path replaced by a device or a FIFO ------------------------------------------
def limit_memory() -> None:  # in the child: a runaway read fails fast instead of filling RAM
    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))


def watch_through_replacement(live: Path, replace_with: str, seconds: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "musepi_lab.cli", "watch", str(live), "--interval", "0.05"]
    command += ["--seconds", str(seconds)]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=limit_memory,
    )
    assert proc.stdout is not None
    try:
        assert "entries" in proc.stdout.readline()  # it is watching
        fresh = live.with_name("replacement")
        if replace_with == "fifo":
            os.mkfifo(fresh)
        elif replace_with.startswith("{"):  # a document of a format a tail cannot follow
            fresh.write_text(replace_with)
        else:
            fresh.symlink_to(replace_with)
        os.replace(fresh, live)
        started = time.monotonic()
        _, err = proc.communicate(timeout=seconds + 30)
        assert time.monotonic() - started < seconds + 10
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("replace_with", ["/dev/zero", "fifo"], ids=["dev-zero", "fifo"])
def test_watch_ends_with_a_clear_error_when_the_path_becomes_a_device_or_fifo(
    tmp_path: Path, replace_with: str
) -> None:
    if replace_with != "fifo" and not Path(replace_with).exists():
        pytest.skip(f"no {replace_with}")
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines_of(SAMPLE.read_bytes())[:20]))
    code, err = watch_through_replacement(live, replace_with, seconds=3)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"musepi-lab: {live}: ") and "is not a regular file" in line


def test_a_poll_reads_a_bounded_amount(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    live.write_bytes(SAMPLE.read_bytes())
    state = start_tail(live)
    size = live.stat().st_size
    grown = size + 5 * MAX_READ_BYTES  # a sparse run of zeros, as a hostile writer leaves
    os.truncate(live, grown)
    offsets = []
    while state.offset < grown and len(offsets) < 20:
        state = poll(state)
        offsets.append(state.offset)
    assert offsets[0] - size <= MAX_READ_BYTES
    assert all(b - a <= MAX_READ_BYTES for a, b in itertools.pairwise(offsets))
    assert state.offset == grown and state.restarts == 0
    assert state.pending_bytes == 5 * MAX_READ_BYTES  # no newline: all of it pending


def test_watch_ends_with_a_clear_error_when_rotated_to_a_format_it_cannot_follow(
    tmp_path: Path,
) -> None:
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines_of(SAMPLE.read_bytes())[:20]))
    trajectory = json.dumps({"trajectory": [], "history": []}, indent=1) + "\n"
    code, err = watch_through_replacement(live, trajectory, seconds=3)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"musepi-lab: {live}: ") and "cannot follow 'swe-agent'" in line
