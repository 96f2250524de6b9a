"""Bad input for the pi/MusePi JSONL reader: one test per case.

Every case checks the exact problem kinds and line numbers, that every valid record is
kept (counted here with plain `json`, not with the reader), that strict mode raises
`SessionReadError` naming `path:line`, and that the input file is left untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.formats._registry import detect_format, iter_sessions, read_session
from musepi_lab.session._errors import ReadProblem, SessionReadError
from musepi_lab.session._session import Session

# -- a small valid v3 session --------------------------------------------------------------

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "5b0c8f1e-0000-4000-8000-000000000001",
    "timestamp": "2026-01-02T10:00:00.000Z",
    "cwd": "/work/demo",
}


def _entry(entry_id: str, parent: str | None, n: int, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-02T10:00:{n:02d}.000Z",
    }
    record.update(fields)
    return record


def small_entries() -> list[dict[str, Any]]:
    """Five chained v3 entries: user, assistant with a tool call, tool result, ..."""
    return [
        _entry("a0000001", None, 1, message={"role": "user", "content": "list files"}),
        _entry(
            "a0000002",
            "a0000001",
            2,
            message={
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}],
                "stopReason": "toolUse",
            },
        ),
        _entry(
            "a0000003",
            "a0000002",
            3,
            message={
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "ls",
                "content": [{"type": "text", "text": "README.md\nsetup.py"}],
                "isError": False,
            },
        ),
        _entry("a0000004", "a0000003", 4, type="thinking_level_change", thinkingLevel="high"),
        _entry(
            "a0000005",
            "a0000004",
            5,
            message={"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
        ),
    ]


def dumps(record: Any) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def jsonl(*lines: Any, end: bytes = b"\n") -> bytes:
    """JSONL bytes; dicts are serialized, bytes are used as they are."""
    parts = [line if isinstance(line, bytes) else dumps(line) for line in lines]
    return b"\n".join(parts) + end


def valid_entry_lines(data: bytes) -> list[int]:
    """Line numbers holding a valid (strict UTF-8, plain-json) non-header record."""
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(value, dict) and value.get("type") != "session":
            out.append(number)
    return out


# -- reading with the input checked --------------------------------------------------------


def _fingerprint(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


@contextmanager
def unchanged(path: Path) -> Iterator[None]:
    """Asserts the file has the same bytes, mtime and size afterwards."""
    before = _fingerprint(path) if path.is_file() else None
    yield
    after = _fingerprint(path) if path.is_file() else None
    assert after == before, f"{path} was modified by reading it"


def read(path: Path) -> Session:
    """Lenient read through `read_session` (format detection included)."""
    with unchanged(path):
        session = read_session(path)
    assert all(p.path == str(path) for p in session.errors)
    return session


def problems(session: Session) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in session.errors]


def strict_error(path: Path) -> SessionReadError:
    """The error strict mode raises; it must name `path:line`."""
    with unchanged(path), pytest.raises(SessionReadError) as info:
        read_session(path, strict=True)
    err = info.value
    where = f"{path}:{err.line}" if err.line is not None else str(path)
    assert str(err).startswith(where), str(err)
    return err


def assert_strict_matches(path: Path, session: Session) -> None:
    """Strict mode raises exactly the first problem lenient mode lists (or nothing)."""
    if not session.errors:
        with unchanged(path):
            read_session(path, strict=True)
        return
    err = strict_error(path)
    assert (err.kind, err.line) == (session.errors[0].kind, session.errors[0].line)
    assert err.problems == session.errors


def write(tmp_path: Path, data: bytes, name: str = "session.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- the cases -------------------------------------------------------------------------------


def test_truncated_last_line(tmp_path: Path) -> None:
    entries = small_entries()
    cut = dumps(_entry("a0000006", "a0000005", 6, message={"role": "user", "content": "more"}))
    data = jsonl(HEADER, *entries) + cut[: len(cut) // 2]
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("truncated-line", 7)]
    assert [e.line for e in session.entries] == valid_entry_lines(data) == [2, 3, 4, 5, 6]
    assert [dict(e.record) for e in session.entries] == entries
    assert session.leaf_id == "a0000005"
    assert_strict_matches(path, session)


def test_truncated_last_line_of_corpus_file(tmp_path: Path) -> None:
    raw = corpus_file("pi", "before-compaction.jsonl").read_bytes()
    lines = raw.rstrip(b"\n").split(b"\n")
    data = b"\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]])
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("truncated-line", len(lines))]
    assert [e.line for e in session.entries] == valid_entry_lines(data)
    assert len(session.entries) == len(lines) - 2
    assert_strict_matches(path, session)


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    entries = small_entries()
    data = jsonl(HEADER, entries[0], entries[1], b'{"type":"message","id":', *entries[3:])
    path = write(tmp_path, data)
    session = read(path)
    # The entry after the lost line names a parent that is gone.
    assert problems(session) == [("malformed-json", 4), ("dangling-parent", 5)]
    assert [e.line for e in session.entries] == valid_entry_lines(data) == [2, 3, 5, 6]
    assert [e.id for e in session.roots] == ["a0000001", "a0000004"]
    assert_strict_matches(path, session)


def _inside_a_string(line: bytes) -> int | None:
    """An offset in the middle of a run of 20 letters (outside strings JSON has no such run)."""
    for offset in range(len(line) - 20):
        if line[offset : offset + 20].isalpha():
            return offset + 10
    return None


def test_flipped_bytes_in_corpus_file(tmp_path: Path) -> None:
    raw = corpus_file("pi", "before-compaction.jsonl").read_bytes()
    lines = raw.split(b"\n")
    # Line 500 loses its opening brace: the line is lost. Line 700 gets a 0xFF byte
    # inside a text: not UTF-8, but the record survives with U+FFFD.
    lines[499] = b"#" + lines[499][1:]
    line_700 = next(n for n in range(700, 800) if _inside_a_string(lines[n - 1]) is not None)
    at = _inside_a_string(lines[line_700 - 1])
    assert at is not None
    lines[line_700 - 1] = lines[line_700 - 1][:at] + b"\xff" + lines[line_700 - 1][at + 1 :]
    data = b"\n".join(lines)
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("malformed-json", 500), ("invalid-utf8", line_700)]
    expected_lines = sorted([*valid_entry_lines(data), line_700])
    assert [e.line for e in session.entries] == expected_lines
    assert len(session.entries) == 1003 - 2
    kept = next(e for e in session.entries if e.line == line_700)
    assert "\ufffd" in json.dumps(dict(kept.record), ensure_ascii=False)
    assert_strict_matches(path, session)


@pytest.mark.parametrize("data", [b"", b"\n\n  \n", b"\xef\xbb\xbf"], ids=["zero", "blank", "bom"])
def test_empty_file(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("empty-file", None)]
    assert session.entries == ()
    assert session.leaf_id is None
    err = strict_error(path)
    assert (err.kind, err.line) == ("empty-file", None)


def test_file_with_no_header(tmp_path: Path) -> None:
    entries = small_entries()
    data = jsonl(*entries)
    path = write(tmp_path, data, "abc123.jsonl")
    session = read(path)
    assert problems(session) == [("missing-header", 1)]
    assert [dict(e.record) for e in session.entries] == entries
    assert session.header["id"] == "abc123"
    assert session.header["version"] == 3
    assert_strict_matches(path, session)


def test_file_with_no_header_v1_entries_get_chained_ids(tmp_path: Path) -> None:
    bare = [{k: v for k, v in e.items() if k not in ("id", "parentId")} for e in small_entries()]
    path = write(tmp_path, jsonl(*bare))
    session = read(path)
    assert problems(session) == [("missing-header", 1)]
    assert len(session.entries) == 5
    parents = [e.parent_id for e in session.entries]
    assert parents == [None, *[e.id for e in session.entries[:-1]]]


def test_non_utf8_bytes_inside_a_string_are_replaced(tmp_path: Path) -> None:
    entries = small_entries()
    bad = dumps(entries[2]).replace(b"README", b"READ\xff\xfeME")
    data = jsonl(HEADER, entries[0], entries[1], bad, *entries[3:])
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("invalid-utf8", 4)]
    assert len(session.entries) == 5
    text = session.entries[2].message["content"][0]["text"]  # type: ignore[index]
    assert text == "READ\ufffd\ufffdME.md\nsetup.py"
    assert_strict_matches(path, session)


def test_non_utf8_bytes_that_break_the_json_lose_the_line(tmp_path: Path) -> None:
    entries = small_entries()
    data = jsonl(HEADER, entries[0], b'{"type":\xff"message"}', *entries[1:])
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("malformed-json", 3)]
    assert "UTF-8" in session.errors[0].message
    assert [e.line for e in session.entries] == valid_entry_lines(data)
    assert_strict_matches(path, session)


def test_duplicate_ids(tmp_path: Path) -> None:
    entries = small_entries()
    # A second branch off the first entry that reuses the id of line 3.
    again = _entry("a0000002", "a0000001", 6, message={"role": "assistant", "content": []})
    data = jsonl(HEADER, *entries, again)
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("duplicate-id", 7)]
    assert "line 3" in session.errors[0].message
    assert [e.line for e in session.entries] == valid_entry_lines(data)  # both kept
    got = session.get("a0000002")
    assert got is not None and got.line == 7  # the later one wins, as pi's Map.set
    assert_strict_matches(path, session)


def test_parent_cycle(tmp_path: Path) -> None:
    entries = small_entries()
    entries[1]["parentId"] = "a0000004"  # 2 → 4 → 3 → 2
    data = jsonl(HEADER, *entries)
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("parent-cycle", 3)]
    assert len(session.entries) == 5
    path_ids = [e.id for e in session.path()]
    assert path_ids[-1] == "a0000005"
    assert len(path_ids) == len(set(path_ids)) <= 4  # the walk stops, no repeats
    assert_strict_matches(path, session)


def test_self_parent_is_a_cycle_of_one(tmp_path: Path) -> None:
    entries = small_entries()
    entries[0]["parentId"] = "a0000001"
    path = write(tmp_path, jsonl(HEADER, *entries))
    session = read(path)
    assert problems(session) == [("parent-cycle", 2)]
    assert [e.id for e in session.roots] == ["a0000001"]  # pi: self-parented is a root


def test_dangling_parent(tmp_path: Path) -> None:
    entries = small_entries()
    entries[2]["parentId"] = "ffffffff"
    data = jsonl(HEADER, *entries)
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("dangling-parent", 4)]
    assert [e.id for e in session.roots] == ["a0000001", "a0000003"]
    assert [e.id for e in session.path()] == ["a0000003", "a0000004", "a0000005"]
    assert_strict_matches(path, session)


def test_unknown_entry_type_is_kept_as_is(tmp_path: Path) -> None:
    entries = small_entries()
    odd = _entry("a0000006", "a0000005", 6, type="hologram", payload={"x": [1, 2]}, extra=None)
    data = jsonl(HEADER, *entries, odd)
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("unknown-entry-type", 7)]
    assert dict(session.entries[-1].record) == odd
    assert session.leaf_id == "a0000006"
    assert_strict_matches(path, session)


def test_huge_tool_output_loads_fast(tmp_path: Path) -> None:
    entries = small_entries()
    size = 30 * 1024 * 1024
    big = "0123456789abcdef" * (size // 16)
    entries[2]["message"]["content"][0]["text"] = big
    data = jsonl(HEADER, *entries)
    assert len(data) > size
    path = write(tmp_path, data)
    start = time.perf_counter()
    session = read_pi_jsonl(path)
    elapsed = time.perf_counter() - start
    print(f"\n30 MB tool result: read in {elapsed:.3f} s ({len(data) / 1e6:.1f} MB file)")
    assert session.errors == ()
    assert len(session.entries) == 5
    assert len(session.entries[2].message["content"][0]["text"]) == len(big)  # type: ignore[index]
    assert elapsed < 10.0
    assert read(path).errors == ()


def test_binary_file(tmp_path: Path) -> None:
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40
    path = write(tmp_path, data, "picture.jsonl")
    session = read(path)
    assert problems(session) == [("binary-file", None)]
    assert session.entries == ()
    err = strict_error(path)
    assert err.kind == "binary-file"


def test_a_nul_byte_in_one_line_does_not_make_the_file_binary(tmp_path: Path) -> None:
    entries = small_entries()
    nul = dumps(entries[1]).replace(b"toolUse", b"tool\x00Use")
    data = jsonl(HEADER, entries[0], nul, *entries[2:])
    path = write(tmp_path, data)
    session = read_pi_jsonl(path)
    assert problems(session) == [("malformed-json", 3), ("dangling-parent", 4)]
    assert [e.line for e in session.entries] == valid_entry_lines(data) == [2, 4, 5, 6]


@pytest.mark.parametrize("strict", [False, True])
def test_directory_passed_as_a_file(tmp_path: Path, strict: bool) -> None:
    folder = tmp_path / "not-a-file.jsonl"
    folder.mkdir()
    for call in (read_session, read_pi_jsonl):
        with pytest.raises(SessionReadError) as info:
            call(folder, strict=strict)
        assert info.value.kind == "is-a-directory"
        assert str(folder) in str(info.value)
    with pytest.raises(SessionReadError, match="is a directory"):
        read_session(folder, strict=strict, format="pi")


@pytest.mark.parametrize("strict", [False, True])
def test_missing_file(tmp_path: Path, strict: bool) -> None:
    missing = tmp_path / "nowhere.jsonl"
    for call in (read_session, read_pi_jsonl):
        with pytest.raises(SessionReadError) as info:
            call(missing, strict=strict)
        assert (info.value.kind, info.value.line) == ("not-found", None)
        assert str(missing) in str(info.value)
    with pytest.raises(SessionReadError, match="no such file"):
        detect_format(missing)
    with pytest.raises(SessionReadError, match="no such file"):
        list(iter_sessions(tmp_path / "no-folder"))


def test_header_only_file(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(HEADER))
    session = read(path)
    assert session.errors == ()
    assert session.entries == ()
    assert dict(session.header) == HEADER
    assert session.leaf_id is None and session.path() == ()
    assert_strict_matches(path, session)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'{"type":"session","id":\n', "malformed-json"),
        (b'{"type":"session","id":', "truncated-line"),  # no newline: a cut-short write
        (b"garbage", "malformed-json"),  # no newline, but not a cut JSON text either
    ],
    ids=["with-newline", "cut", "garbage"],
)
def test_file_whose_only_line_is_malformed(tmp_path: Path, data: bytes, kind: str) -> None:
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [(kind, 1)]
    assert session.entries == ()
    assert_strict_matches(path, session)


@pytest.mark.parametrize(
    ("version", "kind"),
    [("3", "bad-version"), ("three", "bad-version"), (True, "bad-version"), (9, "unknown-version")],
)
def test_bad_version_is_recorded_and_read_as_v3(tmp_path: Path, version: Any, kind: str) -> None:
    entries = small_entries()
    path = write(tmp_path, jsonl({**HEADER, "version": version}, *entries))
    session = read(path)
    assert problems(session) == [(kind, 1)]
    assert [dict(e.record) for e in session.entries] == entries  # no v1 migration ran
    assert_strict_matches(path, session)


def test_v3_entry_with_id_but_no_parent_id(tmp_path: Path) -> None:
    entries = small_entries()
    del entries[3]["parentId"]
    path = write(tmp_path, jsonl(HEADER, *entries))
    session = read(path)
    assert problems(session) == [("missing-parent-id", 5)]
    assert [e.id for e in session.roots] == ["a0000001", "a0000004"]
    assert "parentId" not in session.entries[3].record  # kept as written
    assert_strict_matches(path, session)


def test_v3_entry_without_id(tmp_path: Path) -> None:
    entries = small_entries()
    del entries[4]["id"]
    path = write(tmp_path, jsonl(HEADER, *entries))
    session = read(path)
    assert problems(session) == [("missing-id", 6)]
    assert len(session.entries) == 5 and session.entries[4].id is None
    assert session.leaf_id == "a0000004"  # the last entry that has an id


def test_v2_file_is_migrated_to_v3(tmp_path: Path) -> None:
    entries = small_entries()
    entries[4]["message"] = {"role": "hookMessage", "customType": "note", "content": "hi"}
    path = write(tmp_path, jsonl({**HEADER, "version": 2}, *entries))
    session = read(path)
    assert session.errors == ()
    assert session.header["version"] == 3
    assert [e.id for e in session.entries] == [e["id"] for e in entries]
    assert session.entries[4].role == "custom"
    assert path.read_bytes().count(b"hookMessage") == 1  # the file still says v2


def _title_slot(title: str, width: int = 256) -> bytes:
    record = {
        "type": "title",
        "v": 1,
        "title": title,
        "source": "auto",
        "updatedAt": "2026-01-02T10:00:00.000Z",
        "pad": "",
    }
    used = len(dumps(record)) + 1  # the newline is part of the slot
    record["pad"] = " " * (width - used)
    line = dumps(record)
    assert len(line) + 1 == width
    return line


def test_omp_title_slot_first_line(tmp_path: Path) -> None:
    slot = _title_slot("Fix the parser")
    entries = small_entries()
    path = write(tmp_path, jsonl(slot, HEADER, *entries))
    session = read(path)
    assert session.errors == ()
    assert session.header["titleSlot"] == json.loads(slot)
    assert session.header["id"] == HEADER["id"]
    assert [e.line for e in session.entries] == [3, 4, 5, 6, 7]
    assert_strict_matches(path, session)


def test_title_record_after_line_one_is_an_unknown_entry(tmp_path: Path) -> None:
    entries = small_entries()
    title = {"type": "title", "v": 1, "title": "late"}
    path = write(tmp_path, jsonl(HEADER, title, *entries))
    session = read(path)
    assert "titleSlot" not in session.header
    # Kept as an entry with its line; it has no id, so it stays outside the tree.
    assert problems(session) == [("unknown-entry-type", 2), ("missing-id", 2)]
    assert dict(session.entries[0].record) == title


def test_problems_are_listed_in_file_order(tmp_path: Path) -> None:
    entries = small_entries()
    entries[0]["parentId"] = "ffffffff"  # found by the tree check, last
    entries[2]["type"] = "hologram"  # found per entry
    data = jsonl(HEADER, entries[0], entries[1], b"{oops", entries[2], *entries[3:])
    path = write(tmp_path, data)  # line 4 is found first, by the parser
    session = read(path)
    assert problems(session) == [
        ("dangling-parent", 2),
        ("malformed-json", 4),
        ("unknown-entry-type", 5),
    ]
    err = strict_error(path)
    assert (err.kind, err.line) == ("dangling-parent", 2)
    assert [(p.kind, p.line) for p in err.problems] == problems(session)


def test_lines_that_are_not_objects_and_extra_headers(tmp_path: Path) -> None:
    entries = small_entries()
    data = jsonl(HEADER, entries[0], b"[1, 2]", b'"text"', {**HEADER, "id": "x"}, *entries[1:])
    path = write(tmp_path, data)
    session = read(path)
    assert problems(session) == [("not-an-object", 3), ("not-an-object", 4), ("extra-header", 5)]
    assert session.header["id"] == HEADER["id"]
    assert len(session.entries) == 5


def test_header_after_entries_is_still_used(tmp_path: Path) -> None:
    entries = small_entries()
    path = write(tmp_path, jsonl(entries[0], HEADER, *entries[1:]))
    session = read(path)
    assert problems(session) == [("misplaced-header", 2)]
    assert session.header["id"] == HEADER["id"]
    assert len(session.entries) == 5


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + jsonl(HEADER, *small_entries()))
    session = read(path)
    assert session.errors == ()
    assert session.header["id"] == HEADER["id"]
    assert len(session.entries) == 5


def test_lone_surrogate_escape_is_kept_as_replacement(tmp_path: Path) -> None:
    # JS string slicing can cut an emoji in half; JSON.stringify then writes "\ud83d".
    entries = small_entries()
    entries[4]["big"] = 10**30  # JS reads it as a double
    line = dumps(entries[4]).replace(b"Two files.", b"Two files \\ud83d")
    path = write(tmp_path, jsonl(HEADER, *entries[:4], line))
    session = read(path)
    assert problems(session) == [("lone-surrogate", 6)]
    kept = session.entries[4]
    assert kept.message["content"][0]["text"] == "Two files \ufffd"  # type: ignore[index]
    assert kept["big"] == 1e30
    assert_strict_matches(path, session)
    # What was repaired can be written and read back.
    again = read_pi_jsonl(session.write(tmp_path / "again.jsonl"))
    assert again.entries[4].record == kept.record


def test_compaction_pointing_nowhere(tmp_path: Path) -> None:
    entries = small_entries()
    compaction = _entry(
        "a0000006",
        "a0000005",
        6,
        type="compaction",
        summary="s",
        firstKeptEntryId="deadbeef",
        tokensBefore=10,
    )
    path = write(tmp_path, jsonl(HEADER, *entries, compaction))
    session = read(path)
    assert problems(session) == [("bad-first-kept", 7)]
    assert_strict_matches(path, session)


def test_read_error_survives_pickling() -> None:
    problem = ReadProblem("/x/s.jsonl", 4, "malformed-json", "not valid JSON")
    err = SessionReadError.from_problem(problem, [problem])
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, SessionReadError)
    assert (again.path, again.line, again.kind, again.problems) == (
        "/x/s.jsonl",
        4,
        "malformed-json",
        (problem,),
    )
    assert str(again) == "/x/s.jsonl:4: not valid JSON [malformed-json]"


def test_detect_format_survives_odd_content(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"type": ["x"], "payload": {}}\n{"type": {"a": 1}}\n')
    assert detect_format(path) == "pi"
    session = read(path)
    # No ids anywhere: read as v1, so the migration gives every entry one.
    assert problems(session) == [("missing-header", 1), ("missing-type", 1), ("missing-type", 2)]


@pytest.mark.skipif(os.name != "posix", reason="FIFOs are POSIX")
def test_fifo_is_not_a_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SessionReadError) as info:
        read_session(fifo)
    assert info.value.kind == "not-a-file"
