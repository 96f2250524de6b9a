"""The usage fast path (`formats._claude_code_usage`, chosen by `analysis._usage_read`)
against the full reader, the reference: the rows of `usage_df` must be the rows
`usage_frame` makes of `load_sessions` (equal frames, equal attrs), on every corpus file,
on the whole Claude Code folder (requests repeated across files), and on hand-made files
the fast path hands back to the full reader."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _corpus import CORPUS, HAS_CORPUS, needs_corpus

from musepi_lab.analysis import problems_of, usage_df
from musepi_lab.analysis._load import load_sessions
from musepi_lab.analysis._usage import usage_frame
from musepi_lab.formats._claude_code_usage import read_claude_code_usage
from musepi_lab.formats._registry import detect_format, iter_session_files

FILES = sorted(iter_session_files(CORPUS)) if HAS_CORPUS else []


def assert_same_rows(source: Path | str) -> None:
    sessions, reference_problems = load_sessions(source)
    reference = usage_frame(sessions)
    frame = usage_df(source)
    problems = problems_of(frame)
    pd.testing.assert_frame_equal(frame, reference)
    assert {k: v for k, v in frame.attrs.items() if k != "problems"} == reference.attrs
    # The fast path looks for no tree problems; it reports none the full reader does not.
    assert {str(p) for p in problems} <= {
        *(str(p) for p in reference_problems),
        *(str(p) for p in problems_of(usage_df(sessions))),
    }


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(CORPUS)) for f in FILES])
def test_fast_rows_equal_the_full_reader(path: Path) -> None:
    assert_same_rows(path)


@needs_corpus
def test_every_claude_code_corpus_file_takes_the_fast_path() -> None:
    files = [f for f in FILES if detect_format(f) == "claude-code"]
    assert len(files) >= 5
    declined = [f.name for f in files if read_claude_code_usage(f) is None]
    assert declined == []


@needs_corpus
def test_whole_claude_code_folder_equal() -> None:
    frame = usage_df(CORPUS / "claude-code")
    assert len(frame) > 100
    assert_same_rows(CORPUS / "claude-code")


def _line(uuid: str | None, mid: str, rid: str, tokens: int, **extra: object) -> str:
    record: dict[str, object] = {
        "type": "assistant",
        "sessionId": "s1",
        "timestamp": "2026-01-02T03:04:05.000Z",
        "requestId": rid,
        "isSidechain": False,
        "message": {
            "id": mid,
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": tokens, "output_tokens": 7},
        },
        **extra,
    }
    if uuid is not None:
        record["uuid"] = uuid
        record["parentUuid"] = None
    return json.dumps(record)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_streamed_reply_billed_once_from_its_last_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [_line("u1", "m1", "r1", 3), _line("u2", "m1", "r1", 11)])
    assert read_claude_code_usage(path) is not None
    frame = usage_df(path)
    # Independent count: one reply (message id m1), usage of its last line.
    assert frame["input"].tolist() == [11]
    assert frame["entry_id"].tolist() == ["u1"]
    assert_same_rows(path)


@pytest.mark.parametrize(
    ("lines", "kind", "line"),
    [
        ([_line("u1", "m1", "r1", 3), _line("u2", "m2", "r2", 5)[:-9]], "malformed-json", 2),
        ([_line("u1", "m1", "r1", 3), _line("u1", "m2", "r2", 5)], "duplicate-id", 2),
        ([_line(None, "m1", "r1", 3)], "missing-id", 1),
        ([_line("u1", "m1", "r1", 3), _line("u2", "m2", "r2", 5, isSidechain=True)], None, 0),
        ([_line("u1", "m1", "r1", 3), "[1, 2]"], "not-an-object", 2),
    ],
    ids=["truncated", "duplicate-uuid", "missing-uuid", "sidechain-last", "not-an-object"],
)
def test_declined_files_are_read_by_the_full_reader(
    tmp_path: Path, lines: list[str], kind: str | None, line: int
) -> None:
    path = _write(tmp_path, lines)
    assert read_claude_code_usage(path) is None
    assert_same_rows(path)
    problems = problems_of(usage_df(path))
    if kind is not None:
        assert (kind, line) in {(p.kind, p.line) for p in problems}


@needs_corpus
def test_searching_the_bytes_finds_what_reading_each_line_finds() -> None:
    from musepi_lab.formats import _claude_code_usage as fast

    checked = 0
    for path in sorted((CORPUS / "claude-code").rglob("*.jsonl")):
        data = path.read_bytes()
        if not fast._plain_lines(data):
            continue
        found, lines = fast._scan_found(data), fast._scan_lines(data)
        assert found.replies == lines.replies, path.name
        assert (found.header, found.main_record) == (lines.header, lines.main_record)
        checked += 1
    assert checked >= 5
