"""The live view: a tail of a session file an agent is still writing, checked against full
reads of the same prefix.

A writer process appends a real session line by line (half lines included: half, flush,
pause, the rest); after each step the view (a `LiveFeed` polling in its thread) must show
what a full read (`read_session`) of the same prefix, written to a separate file, shows,
within a second of the write. Entry counts and leaves are also counted from the raw lines
with plain `json`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _corpus import CORPUS

from musepi_lab.analysis._live import LiveSummary, live_summary
from musepi_lab.compaction import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.formats._tail import advance, empty_tail, poll, start_tail
from musepi_lab.session import Session
from musepi_lab.tokens import TokenCounter
from musepi_lab.widgets._live import LiveFeed

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample" / "sample-0001.jsonl"
CATCH_UP = 1.0  # seconds the view may take to show a write

WRITER = textwrap.dedent(
    """
    import sys, time
    src, dest = sys.argv[1], sys.argv[2]
    lines = open(src, "rb").read().splitlines(keepends=True)
    pos = 0
    with open(dest, "ab", buffering=0) as out:
        for command in sys.stdin:
            kind, _, arg = command.strip().partition(" ")
            if kind == "lines":  # append the next N lines, one write each
                for line in lines[pos : pos + int(arg)]:
                    out.write(line)
                pos += int(arg)
            elif kind == "half":  # half of the next line, a pause, then the rest
                line = lines[pos]
                out.write(line[: len(line) // 2])
                print("partial", len(line) // 2, flush=True)
                sys.stdin.readline()  # the test looked at the half line
                time.sleep(0.05)
                out.write(line[len(line) // 2 :])
                pos += 1
            elif kind == "end":
                break
            print("done", out.tell(), flush=True)
    """
)


def raw_counts(data: bytes) -> tuple[int, str | None]:
    """Entries and the last entry's id, from the complete lines with plain json (v3 files:
    the header line is not an entry)."""
    records = [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]
    entries = [r for r in records if r.get("type") != "session"]
    return len(entries), (entries[-1].get("id") if entries else None)


def full_read(data: bytes, tmp_path: Path, name: str) -> Session:
    copy = tmp_path / f"{name}.jsonl"
    copy.write_bytes(data)
    return read_session(copy)


def same_view(live: LiveSummary, session: Session, full: Session, **kwargs: object) -> None:
    expected = live_summary(full, counter=TokenCounter.for_profile("musepi"), **kwargs)  # type: ignore[arg-type]
    assert [dict(e.record) for e in session.entries] == [dict(e.record) for e in full.entries]
    assert [(p.line, p.kind, p.message) for p in session.errors] == [
        (p.line, p.kind, p.message) for p in full.errors
    ]
    assert live.entries == expected.entries
    assert live.leaf_id == expected.leaf_id
    assert live.context_tokens == expected.context_tokens
    assert live.cut_entry_id == expected.cut_entry_id
    assert live.cut_index == expected.cut_index
    assert live.tokens_to_threshold == expected.tokens_to_threshold
    assert live.cost_usd == pytest.approx(expected.cost_usd, rel=1e-12, abs=1e-12)


def wait_for(feed: LiveFeed, offset: int, pending: int) -> float:
    """Seconds until the feed has taken in `offset` bytes (with `pending` unfinished)."""
    start = time.monotonic()
    while time.monotonic() - start < 5:
        state, summary = feed.snapshot()
        if state.offset == offset and summary.pending_bytes == pending:
            return time.monotonic() - start
        time.sleep(0.005)
    raise AssertionError(f"the view never caught up: {feed.state.offset} of {offset} bytes")


def writer_steps(total: int) -> list[str]:
    """Line counts to write, with half lines between, ~12 checkpoints over the file."""
    steps = [1, 1]  # the header alone, then one entry
    step = max(1, (total - 2) // 10)
    while sum(s for s in steps if isinstance(s, int)) < total - 1:
        steps.append(step)
    out = []
    for i, count in enumerate(steps):
        written = sum(steps[:i])
        if written >= total:
            break
        out.append(f"lines {min(count, total - written)}")
        if i in (2, 5) and written + count < total:
            out.append("half")
    return out


def drive_writer(source: Path, tmp_path: Path) -> None:
    """The issue's test: a writer process appends `source`; the view follows each step."""
    live = tmp_path / "live.jsonl"
    live.touch()
    data = source.read_bytes()
    total = len(data.splitlines())
    feed = LiveFeed(str(live), interval=0.05)
    feed.start()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(source), str(live)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        for command in [*writer_steps(total), "lines 1000000"]:
            writer.stdin.write(command + "\n")
            writer.stdin.flush()
            reply = writer.stdout.readline().split()
            if reply[0] == "partial":
                # The half line waits: nothing of it is parsed, the rest of the view stands.
                offset = live.stat().st_size
                took = wait_for(feed, offset, int(reply[1]))
                assert took < CATCH_UP
                assert feed.summary.pending_bytes == int(reply[1])
                assert "pending partial line" in feed.summary.line()
                writer.stdin.write("go\n")
                writer.stdin.flush()
                reply = writer.stdout.readline().split()
            offset = int(reply[1])
            took = wait_for(feed, offset, 0)
            assert took < CATCH_UP, f"the view took {took:.2f} s to show a write"
            prefix = data[:offset]
            full = full_read(prefix, tmp_path, f"prefix-{offset}")
            state, summary = feed.snapshot()
            same_view(summary, state.session, full)
            entries, last_id = raw_counts(prefix)
            assert summary.entries == entries
            if last_id is not None:  # v1 files carry no ids: the reader draws them
                assert summary.leaf_id == last_id
        assert feed.state.offset == len(data)
        assert feed.state.mode == "incremental"
    finally:
        writer.stdin.write("end\n")
        writer.stdin.close()
        writer.wait(5)
        feed.stop()
    assert not feed.running and feed.error is None


def test_writer_process_on_the_bundled_sample(tmp_path: Path) -> None:
    drive_writer(SAMPLE, tmp_path)


@pytest.mark.parametrize("name", ["large-session.jsonl"])
def test_writer_process_on_a_real_pi_session(tmp_path: Path, name: str) -> None:
    source = CORPUS / "pi" / name
    if not source.exists():
        pytest.skip(f"corpus file not found: {source}")
    drive_writer(source, tmp_path)  # a v1 file: ids drawn as the entries come


# -- file changes ---------------------------------------------------------------------------


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_truncated_file_is_read_anew(tmp_path: Path) -> None:
    lines = lines_of(SAMPLE)
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:120]))
    state = start_tail(live)
    assert len(state.session.entries) == 119
    inode = live.stat().st_ino
    with open(live, "r+b") as fh:  # rotated in place: the same file, cut and restarted
        fh.truncate(0)
        fh.write(b"".join(lines[:30]))
    state = poll(state)
    assert live.stat().st_ino == inode
    assert state.restarts == 1
    assert [dict(e.record) for e in state.session.entries] == [
        dict(e.record) for e in read_session(live).entries
    ]
    assert len(state.session.entries) == 29


def test_rewritten_file_longer_than_before_is_read_anew(tmp_path: Path) -> None:
    """Rotated and written past the old size before the next look: the start differs."""
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines_of(SAMPLE)[:20]))
    state = start_tail(live)
    other = REPO / "datasets" / "sample" / "sample-0002.jsonl"
    with open(live, "r+b") as fh:
        fh.write(b"".join(lines_of(other)[:60]))
    state = poll(state)
    assert state.restarts == 1
    full = read_session(live)
    assert state.session.id == full.id == "sample-0002"
    assert [dict(e.record) for e in state.session.entries] == [dict(e.record) for e in full.entries]


def test_atomic_replace_reads_the_new_file(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines_of(SAMPLE)[:200]))
    state = start_tail(live)
    other = REPO / "datasets" / "sample" / "sample-0003.jsonl"
    temporary = tmp_path / "s.jsonl.tmp"
    temporary.write_bytes(b"".join(lines_of(other)[:40]))
    os.replace(temporary, live)  # a new inode under the same name
    state = poll(state)
    assert state.restarts == 1 and state.identity == (live.stat().st_dev, live.stat().st_ino)
    full = read_session(live)
    assert state.session.id == full.id == "sample-0003"
    assert [dict(e.record) for e in state.session.entries] == [dict(e.record) for e in full.entries]
    # Appends to the new file follow on from there.
    with open(live, "ab") as fh:
        fh.write(b"".join(lines_of(other)[40:50]))
    state = poll(state)
    assert state.restarts == 1 and len(state.session.entries) == 49


def test_missing_file_waits(tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines_of(SAMPLE)[:10]))
    state = start_tail(live)
    live.unlink()
    assert poll(state) is state
    live.write_bytes(b"".join(lines_of(SAMPLE)[:12]))
    assert len(poll(state).session.entries) == 11


def test_a_last_line_that_never_completes_stays_pending(tmp_path: Path) -> None:
    """Decision: an unfinished last line is shown as pending, never as a problem, however
    long the file stops growing (the writer may still finish it); a full read of the same
    bytes reports it as `truncated-line`."""
    lines = lines_of(SAMPLE)
    live = tmp_path / "s.jsonl"
    half = lines[50][: len(lines[50]) // 2]
    live.write_bytes(b"".join(lines[:50]) + half)
    state = start_tail(live)
    for _ in range(3):
        time.sleep(0.02)
        assert poll(state) is state
    assert state.pending == half and state.pending_bytes == len(half)
    assert len(state.session.entries) == 49 and not state.session.errors
    summary = live_summary(state.session, pending_bytes=state.pending_bytes)
    assert f"pending partial line ({len(half):,} bytes)" in summary.line()
    assert [p.kind for p in read_session(live).errors] == ["truncated-line"]


def test_advance_is_pure_and_chunking_does_not_matter(tmp_path: Path) -> None:
    data = SAMPLE.read_bytes()
    start = empty_tail(SAMPLE)
    whole = advance(start, data)
    assert start.offset == 0 and not start.session.entries  # unchanged
    state = start
    for i in range(0, len(data), 997):  # cuts inside lines and inside UTF-8 sequences
        state = advance(state, data[i : i + 997])
    assert [e.record for e in state.session.entries] == [e.record for e in whole.session.entries]
    assert state.lines == whole.lines == data.count(b"\n")
    assert len(whole.session.entries) == raw_counts(data)[0]


# -- files a full read treats as a whole ----------------------------------------------------


def check_every_prefix(data: bytes, tmp_path: Path, mode: str) -> None:
    state = empty_tail(tmp_path / "t.jsonl")
    for line in data.splitlines(keepends=True):
        state = advance(state, line)
        full = full_read(data[: state.offset], tmp_path, "full")
        assert [dict(e.record) for e in state.session.entries] == [
            dict(e.record) for e in full.entries
        ]
        assert [(p.line, p.kind) for p in state.session.errors] == [
            (p.line, p.kind) for p in full.errors
        ]
    assert state.mode == mode


def record(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_parent_written_after_its_child_matches_full_reads(tmp_path: Path) -> None:
    head = record(type="session", version=3, id="s")
    user = {"role": "user", "content": "hi"}
    data = (
        head
        + record(type="message", id="b", parentId="a", message=user)  # dangling, for now
        + record(type="message", id="a", parentId=None, message=user)
        + record(type="message", id="a", parentId="b", message=user)  # duplicate, a cycle
        + b"[1, 2]\n"
        + b"{not json\n"
        + record(type="session", id="again")
        + record(type="compaction", id="c", parentId="a", firstKeptEntryId="z", summary="")
    )
    check_every_prefix(data, tmp_path, "incremental")


def test_file_without_header_matches_full_reads(tmp_path: Path) -> None:
    user = {"role": "user", "content": "hi"}
    data = record(type="message", id="a", parentId=None, message=user) + record(
        type="message", id="b", parentId="a", message=user
    )
    check_every_prefix(data, tmp_path, "rebuild")


def test_v1_compaction_naming_a_later_entry_matches_full_reads(tmp_path: Path) -> None:
    user = {"role": "user", "content": "hi"}
    data = (
        record(type="session", id="s")
        + record(type="message", message=user)
        + record(type="compaction", firstKeptEntryIndex=3, summary="", tokensBefore=1)
        + record(type="message", message={"role": "hookMessage", "content": "x"})
    )
    check_every_prefix(data, tmp_path, "rebuild")


@pytest.mark.parametrize("folder", ["claude-code", "codex"])
def test_claude_code_and_codex_tails_match_full_reads(tmp_path: Path, folder: str) -> None:
    files = sorted((CORPUS / folder).glob("*.jsonl")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"no {folder} corpus files")
    source = min(files, key=lambda p: p.stat().st_size)
    data = source.read_bytes()
    state = empty_tail(source)
    cuts = sorted({len(data) * k // 7 for k in range(1, 8)})
    at = 0
    for cut in cuts:
        state = advance(state, data[at:cut])
        at = cut
        full = full_read(data[: state.offset - state.pending_bytes], tmp_path, "full")
        full = read_session(tmp_path / "full.jsonl", format=folder)
        assert [dict(e.record) for e in state.session.entries] == [
            dict(e.record) for e in full.entries
        ]
    assert state.format == folder and state.mode == "values"


def test_documents_cannot_be_followed(tmp_path: Path) -> None:
    trajectory = tmp_path / "run.traj"
    trajectory.write_text(json.dumps({"trajectory": [], "history": []}, indent=1))
    with pytest.raises(ValueError, match="cannot follow 'swe-agent'"):
        start_tail(trajectory)


# -- the summary -----------------------------------------------------------------------------


def test_summary_figures_from_the_spec_and_the_raw_usage() -> None:
    session = read_session(SAMPLE)
    summary = live_summary(session)
    # The sample's model is claude-sonnet-4-5: 200,000 tokens in pi-ai's table; MusePi's
    # threshold is the window less max(15% of it, 16,384) (spec §3.5).
    assert summary.window == 200_000 and summary.window_source == "table"
    assert summary.threshold == 200_000 - 30_000
    assert summary.tokens_to_threshold == summary.threshold + 1 - summary.context_tokens
    # The sample records zero costs: each reply is priced at Anthropic's list prices for
    # Sonnet 4.5 (USD per million: $3 input, $3.75 cache write, $0.30 cache read, $15 out).
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    replies = [
        r["message"]["usage"]
        for r in records
        if r.get("type") == "message" and r["message"].get("role") == "assistant"
    ]
    listed = sum(
        u["input"] * 3 + u["cacheWrite"] * 3.75 + u["cacheRead"] * 0.3 + u["output"] * 15
        for u in replies
    )
    assert summary.cost_usd == pytest.approx(listed / 1e6)
    assert summary.priced_replies == len(replies) and not summary.unpriced_models
    pi = live_summary(session, settings=CompactionSettings.pi(), window=100_000)
    assert pi.window_source == "given" and pi.threshold == 100_000 - 16_384


def test_recorded_costs_are_summed_as_recorded() -> None:
    source = CORPUS / "pi" / "large-session.jsonl"
    if not source.exists():
        pytest.skip(f"corpus file not found: {source}")
    records = [json.loads(line) for line in source.read_text().splitlines()]
    recorded = [
        r["message"]["usage"]["cost"]["total"]
        for r in records
        if r.get("type") == "message" and r["message"].get("role") == "assistant"
    ]  # aborted replies too: what they recorded was billed
    summary = live_summary(read_session(source))
    assert summary.cost_usd == pytest.approx(sum(recorded))


def test_unknown_model_window_and_prices_are_said(tmp_path: Path) -> None:
    usage = {"input": 1000, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1010}
    data = record(type="session", version=3, id="s") + record(
        type="message",
        id="a",
        parentId=None,
        message={"role": "assistant", "content": [], "model": "mystery-1", "usage": usage},
    )
    session = full_read(data, tmp_path, "unknown")
    summary = live_summary(session)
    assert summary.window_source == "unknown" and summary.window == 128_000
    assert summary.unpriced_models == ("mystery-1",) and summary.priced_replies == 1
    # Priced at the default (Sonnet-class) $3 in / $15 out per million tokens.
    assert summary.cost_usd == pytest.approx((1000 * 3 + 10 * 15) / 1e6)
    assert "unknown window" in summary.line() and "default prices for mystery-1" in summary.line()


# -- the widget and the command ---------------------------------------------------------------


def test_explorer_in_live_mode_follows_the_file(tmp_path: Path) -> None:
    from musepi_lab.widgets import SessionExplorer

    lines = lines_of(SAMPLE)
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:40]))
    explorer = SessionExplorer(live, live=True, interval=0.05)
    try:
        assert explorer.live is not None and explorer.live.running
        assert len(explorer.session.entries) == 39
        with open(live, "ab") as fh:
            fh.write(b"".join(lines[40:90]))
        start = time.monotonic()
        while len(explorer.session.entries) < 89 and time.monotonic() - start < 3:
            time.sleep(0.01)
        assert time.monotonic() - start < CATCH_UP
    finally:
        explorer.stop()
    assert not explorer.live.running
    # Driven by hand once stopped: a half line, then the rest.
    with open(live, "ab") as fh:
        fh.write(lines[90][:100])
    assert explorer.refresh()
    assert "pending partial line (100 bytes)" in explorer.live_view.value
    with open(live, "ab") as fh:
        fh.write(lines[90][100:])
    assert explorer.refresh() and not explorer.refresh()
    full = read_session(live)
    last = json.loads(lines[90])["id"]
    assert explorer.session.leaf_id == last == full.leaf_id
    assert explorer.leaf_picker.value == last  # the tree shows the new leaf
    assert explorer.selected_entry is not None and explorer.selected_entry.id == last
    summary = explorer.live_summary
    assert summary is not None and summary.entries == len(full.entries) == 90
    assert f"{summary.context_tokens:,}" in explorer.live_view.value
    with pytest.raises(ValueError, match="follows a session file"):
        SessionExplorer(tmp_path, live=True)
    again = SessionExplorer(live, live=True, interval=0.05)
    assert again.live is not None and again.live.running
    again.close()  # closing the widget stops its thread
    assert not again.live.running


def test_watch_command_prints_a_line_per_change_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    lines = lines_of(SAMPLE)
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:20]))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "musepi_lab.cli", "watch", str(live), "--interval", "0.05"]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert "19 entries" in first
        with open(live, "ab") as fh:
            fh.write(b"".join(lines[20:30]) + lines[30][:50])
        second = proc.stdout.readline()
        assert "29 entries" in second and "pending partial line (50 bytes)" in second
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "stopped" in err


def test_watch_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from musepi_lab.cli import main

    assert main(["watch", str(SAMPLE), "--once"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and f"{raw_counts(SAMPLE.read_bytes())[0]:,} entries" in out[0]
    assert "/200,000 tok" in out[0] and "cost $" in out[0]
    # The sample records usage: the context is the provider's, and says so.
    assert re.search(r"context [\d,]+/200,000 tok \(\d+%\) recorded by the provider", out[0])
    assert "estimated by the counter (musepi)" in out[0]
    trajectory = tmp_path / "run.traj"
    trajectory.write_text(json.dumps({"trajectory": [], "history": []}))
    assert main(["watch", str(trajectory), "--once"]) == 2
    assert "cannot follow 'swe-agent'" in capsys.readouterr().err
