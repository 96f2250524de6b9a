"""The pi corpus files read as spec §9 says, with every figure also counted from the raw file."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _corpus import PI_FILES, corpus_file

from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.formats._registry import detect_format, read_session
from musepi_lab.session._session import Session

IDS = ["/".join(parts[1:]) for parts in PI_FILES]


def raw_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for every line, parsed with plain json."""
    out = []
    for number, line in enumerate(path.read_text("utf-8").split("\n"), start=1):
        if line.strip():
            out.append((number, json.loads(line)))
    return out


def raw_counts(path: Path) -> tuple[Counter[str], Counter[str]]:
    """Entry types and message roles of the non-header lines, counted from the raw file."""
    records = [r for _, r in raw_records(path) if r.get("type") != "session"]
    types = Counter(r["type"] for r in records)
    roles = Counter(r["message"]["role"] for r in records if r["type"] == "message")
    return types, roles


def session_counts(session: Session) -> tuple[Counter[str], Counter[str]]:
    types = Counter(e.type for e in session.entries)
    roles = Counter(e.role for e in session.entries if e.role is not None)
    return types, roles


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.fixture(params=PI_FILES, ids=IDS)
def pi_file(request: pytest.FixtureRequest) -> Path:
    return corpus_file(*request.param)


@pytest.mark.parametrize("folder", [(), ("oh-my-pi",)], ids=["pi", "oh-my-pi"])
def test_large_session_counts(folder: tuple[str, ...]) -> None:
    path = corpus_file("pi", *folder, "large-session.jsonl")
    session = read_pi_jsonl(path, strict=True)
    types, roles = session_counts(session)
    # Spec §9.
    assert len(session.entries) == 1018
    assert types["message"] == 914
    assert roles == Counter({"user": 88, "assistant": 453, "toolResult": 373})
    assert types["thinking_level_change"] == 103
    assert types["model_change"] == 1
    assert types["compaction"] == 0
    # The same, counted from the raw file.
    assert (types, roles) == raw_counts(path)
    assert len(session.entries) == len(raw_records(path)) - 1


@pytest.mark.parametrize("folder", [(), ("oh-my-pi",)], ids=["pi", "oh-my-pi"])
def test_before_compaction_counts(folder: tuple[str, ...]) -> None:
    path = corpus_file("pi", *folder, "before-compaction.jsonl")
    session = read_pi_jsonl(path, strict=True)
    types, roles = session_counts(session)
    assert len(session.entries) == 1002
    assert types["message"] == 990
    assert roles == Counter({"user": 55, "assistant": 484, "toolResult": 448, "bashExecution": 3})
    assert types["thinking_level_change"] == 5
    assert types["model_change"] == 5
    assert types["compaction"] == 2
    assert (types, roles) == raw_counts(path)


@pytest.mark.parametrize("folder", [(), ("oh-my-pi",)], ids=["pi", "oh-my-pi"])
def test_before_compaction_compactions(folder: tuple[str, ...]) -> None:
    path = corpus_file("pi", *folder, "before-compaction.jsonl")
    raw = [(n, r) for n, r in raw_records(path) if r.get("type") == "compaction"]
    # Spec §9, and the raw file agrees.
    assert [(n, r["firstKeptEntryIndex"], r["tokensBefore"]) for n, r in raw] == [
        (360, 293, 175004),
        (629, 551, 185014),
    ]
    session = read_pi_jsonl(path)
    by_line = {e.line: e for e in session.entries}
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert [e.line for e in compactions] == [360, 629]
    assert [e["tokensBefore"] for e in compactions] == [175004, 185014]
    # Index i in the parsed array (header = 0) is file line i + 1 here: no blank lines.
    assert [e["firstKeptEntryId"] for e in compactions] == [by_line[294].id, by_line[552].id]
    assert all("firstKeptEntryIndex" not in e.record for e in compactions)


def test_small_replay_session() -> None:
    path = corpus_file("pi", "earendil-works-pi", "prompt-cache-replay-session.jsonl")
    session = read_pi_jsonl(path, strict=True)
    types, roles = session_counts(session)
    assert len(session.entries) == 6
    assert roles == Counter({"user": 2, "assistant": 3, "toolResult": 1})
    assert (types, roles) == raw_counts(path)


def test_every_corpus_file_reads_cleanly(pi_file: Path) -> None:
    before = fingerprint(pi_file)
    assert detect_format(pi_file) == "pi"
    lenient = read_session(pi_file)
    strict = read_session(pi_file, strict=True)
    assert lenient.errors == strict.errors == ()
    assert lenient.source_format == "pi"
    assert fingerprint(pi_file) == before


def test_header_is_migrated_and_keeps_legacy_fields(pi_file: Path) -> None:
    raw_header = raw_records(pi_file)[0][1]
    assert "version" not in raw_header  # all corpus files are v1
    session = read_pi_jsonl(pi_file)
    assert session.header["version"] == 3
    assert {k: v for k, v in session.header.items() if k != "version"} == raw_header


def test_leaf_is_the_last_line(pi_file: Path) -> None:
    session = read_pi_jsonl(pi_file)
    last_line = raw_records(pi_file)[-1][0]
    assert session.leaf is not None
    assert session.leaf.line == last_line
    assert session.leaf_id == session.entries[-1].id
    # A v1 file is one chain, so the path to the leaf is every entry.
    assert [e.id for e in session.path()] == [e.id for e in session.entries]


def test_v1_ids_are_8_hex_and_chained(pi_file: Path) -> None:
    session = read_pi_jsonl(pi_file)
    ids = [e.id for e in session.entries]
    assert all(i is not None and re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert [e.parent_id for e in session.entries] == [None, *ids[:-1]]
    assert [e.id for e in session.roots] == [ids[0]]


def test_ids_are_deterministic_across_reads(pi_file: Path) -> None:
    first = read_pi_jsonl(pi_file)
    second = read_pi_jsonl(pi_file)
    assert [e.id for e in first.entries] == [e.id for e in second.entries]
    assert [dict(e.record) for e in first.entries] == [dict(e.record) for e in second.entries]


def test_records_keep_every_raw_field(pi_file: Path) -> None:
    session = read_pi_jsonl(pi_file)
    raw = [r for _, r in raw_records(pi_file)][1:]
    added = {"id", "parentId", "firstKeptEntryId"}
    removed = {"firstKeptEntryIndex"}
    for entry, record in zip(session.entries, raw, strict=True):
        got = {k: v for k, v in entry.record.items() if k not in added}
        assert got == {k: v for k, v in record.items() if k not in removed}


def _structure(session: Session) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.role, e.id, e.parent_id, e.timestamp, e.line, e.get("firstKeptEntryId"))
        for e in session.entries
    ]


@pytest.mark.parametrize("name", ["large-session.jsonl", "before-compaction.jsonl"])
def test_oh_my_pi_copies_have_the_same_structure(name: str) -> None:
    pi = read_pi_jsonl(corpus_file("pi", name))
    omp = read_pi_jsonl(corpus_file("pi", "oh-my-pi", name))
    assert dict(pi.header) == dict(omp.header)
    assert _structure(pi) == _structure(omp)
    # The copies differ only inside message bodies (the package scope rename).
    differ = [a.type for a, b in zip(pi.entries, omp.entries, strict=True) if a.record != b.record]
    assert differ and set(differ) == {"message"}
