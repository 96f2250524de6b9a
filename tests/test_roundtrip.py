"""read → write → read loses nothing; `Session.write` is atomic and guards its source file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _corpus import PI_FILES, corpus_file

from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session


def dumps(record: Any) -> bytes:
    """JSON as `JSON.stringify` writes it (compact, non-ASCII kept)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def records(session: Session) -> list[dict[str, Any]]:
    return [dict(e.record) for e in session.entries]


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.mark.parametrize("parts", PI_FILES, ids=["/".join(p[1:]) for p in PI_FILES])
def test_corpus_round_trip_loses_nothing(tmp_path: Path, parts: tuple[str, ...]) -> None:
    source = corpus_file(*parts)
    before = digest(source)
    first = read_pi_jsonl(source, strict=True)
    out = first.write(tmp_path / "copy.jsonl")
    second = read_pi_jsonl(out, strict=True)
    assert dict(second.header) == dict(first.header)
    assert records(second) == records(first)
    assert [e.line for e in second.entries] == [e.line for e in first.entries]
    assert second.leaf_id == first.leaf_id
    # Once ids are written, writing again is byte-for-byte stable.
    again = second.write(tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()
    # Every raw field of every raw line is in the written file.
    raw_lines = source.read_text("utf-8").splitlines()
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(written) == len(raw_lines)
    for raw_line, new in zip(raw_lines, written, strict=True):
        raw = json.loads(raw_line)
        raw.pop("firstKeptEntryIndex", None)  # v1 → v3 turns it into firstKeptEntryId
        assert raw.items() <= new.items()
    assert digest(source) == before


def _rich_session_lines() -> list[bytes]:
    slot = {
        "type": "title",
        "v": 1,
        "title": "Überprüfe den Parser ✓",
        "source": "user",
        "updatedAt": "2026-01-02T10:00:00.000Z",
        "pad": "",
    }
    slot["pad"] = " " * (255 - len(dumps(slot)))
    header = {
        "type": "session",
        "version": 3,
        "id": "7d1c0000-0000-4000-8000-00000000abcd",
        "timestamp": "2026-01-02T10:00:00.000Z",
        "cwd": "/work/demo",
        "title": "Überprüfe den Parser ✓",
        "providerPromptCacheKey": "k-1",
        "futureHeaderField": {"nested": [1, 2.5, None, True]},
    }
    entries = [
        {
            "type": "message",
            "id": "b0000001",
            "parentId": None,
            "timestamp": "2026-01-02T10:00:01.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "héllo 🌍"}],
                "timestamp": 1767348001000,
                "unknownMessageField": "kept",
            },
        },
        {
            "type": "model_usage",
            "id": "b0000002",
            "parentId": "b0000001",
            "timestamp": "2026-01-02T10:00:02.000Z",
            "purpose": "title",
            "usage": {"input": 10, "output": 2, "contextTokens": 12},
        },
        {
            "type": "warp_drive",
            "id": "b0000003",
            "parentId": "b0000002",
            "timestamp": "2026-01-02T10:00:03.000Z",
            "payload": {"deep": {"deeper": [{"x": None}]}},
        },
        {
            "type": "compaction",
            "id": "b0000004",
            "parentId": "b0000003",
            "timestamp": "2026-01-02T10:00:04.000Z",
            "summary": "done so far",
            "firstKeptEntryId": "b0000002",
            "tokensBefore": 1234,
            "method": "snapcompact",
            "preserveData": {"k": "v"},
        },
    ]
    return [dumps(slot), dumps(header), *(dumps(e) for e in entries)]


def test_unknown_fields_types_and_title_slot_survive(tmp_path: Path) -> None:
    lines = _rich_session_lines()
    source = tmp_path / "rich.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    first = read_pi_jsonl(source)
    # The unknown type is reported, and kept.
    assert [(p.kind, p.line) for p in first.errors] == [("unknown-entry-type", 5)]
    out = first.write(tmp_path / "out.jsonl")
    # A v3 file written the way pi writes comes back byte for byte, title slot included.
    assert out.read_bytes() == source.read_bytes()
    assert len(out.read_bytes().split(b"\n")[0]) + 1 == 256
    second = read_pi_jsonl(out)
    assert dict(second.header) == dict(first.header)
    assert second.header["titleSlot"] == json.loads(lines[0])
    assert records(second) == records(first) == [json.loads(line) for line in lines[2:]]


def test_write_refuses_to_overwrite_its_source(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(b"\n".join(_rich_session_lines()[1:]) + b"\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    session = read_pi_jsonl(source)
    before = digest(source)
    for target in (source, link):
        with pytest.raises(FileExistsError, match="refusing to overwrite"):
            session.write(target)
    assert digest(source) == before
    changed = session.append({"type": "label", "id": "b0000005", "targetId": "b0000001"})
    changed.write(source, overwrite_source=True)
    assert records(read_pi_jsonl(source)) == records(changed)


def _existing_target(tmp_path: Path) -> tuple[Path, bytes]:
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"previous content\n")
    return target, target.read_bytes()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "target.jsonl")


def test_write_is_atomic_when_serialization_fails(tmp_path: Path) -> None:
    target, previous = _existing_target(tmp_path)
    bad = Entry.from_record({"type": "custom", "id": "c1", "parentId": None, "data": {1, 2}})
    session = Session({"type": "session", "version": 3, "id": "s"}, [bad])
    with pytest.raises(TypeError):
        session.write(target)
    assert target.read_bytes() == previous
    assert _leftovers(tmp_path) == []
    with pytest.raises(TypeError):
        session.write(tmp_path / "new.jsonl")
    assert not (tmp_path / "new.jsonl").exists()


@pytest.mark.parametrize("fail_in", ["fsync", "replace"])
def test_write_is_atomic_when_the_disk_step_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_in: str
) -> None:
    target, previous = _existing_target(tmp_path)
    session = Session(
        {"type": "session", "version": 3, "id": "s"},
        [Entry.from_record({"type": "custom", "id": "c1", "parentId": None, "data": "x" * 10_000})],
    )

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, fail_in, boom)
    with pytest.raises(OSError, match="No space left"):
        session.write(target)
    monkeypatch.undo()
    assert target.read_bytes() == previous  # never half-written
    assert _leftovers(tmp_path) == []  # the temporary file is gone
    session.write(target)
    assert records(read_pi_jsonl(target)) == records(session)
