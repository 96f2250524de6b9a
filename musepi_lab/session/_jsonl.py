"""pi / MusePi session JSONL (v1, v2, v3): parse, migrate in memory, index.

Spec §1.2–1.9. The input file is never rewritten: migrations happen on the parsed records.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ._errors import ProblemLog, SessionReadError
from ._model import KNOWN_ENTRY_TYPES, Entry
from ._session import CURRENT_SESSION_VERSION, Session

_BINARY_SNIFF = 8192


def read_bytes_checked(path: str | os.PathLike[str]) -> tuple[str, bytes]:
    """Read a whole file, with a clear `SessionReadError` when the path is not a file."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise SessionReadError(p, None, "is-a-directory", "is a directory, not a session file")
    try:
        with open(p, "rb") as fh:
            return p, fh.read()
    except FileNotFoundError:
        raise SessionReadError(p, None, "not-found", "no such file") from None
    except OSError as exc:
        raise SessionReadError(p, None, "unreadable", f"cannot read: {exc.strerror}") from None


def looks_binary(data: bytes) -> bool:
    """True when the head of the data holds NUL bytes (no JSON text does)."""
    return b"\x00" in data[:_BINARY_SNIFF]


def parse_jsonl(data: bytes, log: ProblemLog) -> list[tuple[int, Any]]:
    """Parse JSONL bytes into `(line_number, value)` pairs; bad lines become problems.

    Blank lines are skipped. A line that does not parse is recorded as `truncated-line`
    when it is the last line and the file does not end with a newline, else as
    `malformed-json`. Invalid UTF-8 is recorded and the line is kept with U+FFFD
    replacements when the rest of it parses.
    """
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    while last_index >= 0 and not lines[last_index].strip():
        last_index -= 1
    ends_with_newline = data.endswith(b"\n")
    loads = orjson.loads
    out: list[tuple[int, Any]] = []
    append = out.append
    for index, raw in enumerate(lines):
        if not raw or raw.isspace():
            continue
        try:
            append((index + 1, loads(raw)))
            continue
        except orjson.JSONDecodeError as exc:
            error = exc
        lineno = index + 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            try:
                value = loads(raw.decode("utf-8", errors="replace"))
            except orjson.JSONDecodeError:
                pass
            else:
                log.add(lineno, "invalid-utf8", "line is not valid UTF-8; bad bytes replaced")
                append((lineno, value))
                continue
            text = None
        if index == last_index and not ends_with_newline:
            log.add(lineno, "truncated-line", f"last line is cut short ({len(raw)} bytes): {error}")
        elif text is None:
            log.add(lineno, "invalid-utf8", "line is not valid UTF-8 and not valid JSON")
        else:
            log.add(lineno, "malformed-json", f"not valid JSON: {error}")
    return out


def _fresh_id(seed: str, index: int, taken: set[str]) -> str:
    """A deterministic 8-hex id for a v1 entry (pi draws random ones; ours are stable)."""
    salt = 0
    while True:
        digest = hashlib.blake2b(f"{seed}:{index}:{salt}".encode(), digest_size=4).hexdigest()
        if digest not in taken:
            taken.add(digest)
            return digest
        salt += 1


def migrate_records(header: dict[str, Any], records: list[dict[str, Any]]) -> int:
    """Run the v1→v2→v3 migrations of spec §1.9 on parsed records, in place.

    Args:
        header: The header record (its `version` is updated).
        records: The non-header records in file order.

    Returns:
        The version the file had before migration.
    """
    raw_version = header.get("version", 1)
    version = raw_version if isinstance(raw_version, int) else 1
    if version < 2:
        taken = {r["id"] for r in records if isinstance(r.get("id"), str)}
        seed = str(header.get("id", ""))
        prev_id: str | None = None
        ids: list[str] = []
        for index, record in enumerate(records):
            entry_id = record.get("id")
            if not isinstance(entry_id, str):
                entry_id = _fresh_id(seed, index, taken)
                record["id"] = entry_id
                record["parentId"] = prev_id
            ids.append(entry_id)
            prev_id = entry_id
        for record in records:
            if record.get("type") == "compaction" and "firstKeptEntryIndex" in record:
                # An index into the full parsed array where the header is index 0.
                kept = record.pop("firstKeptEntryIndex")
                if isinstance(kept, int) and 1 <= kept <= len(ids):
                    record["firstKeptEntryId"] = ids[kept - 1]
        header["version"] = 2
    if version < 3:
        for record in records:
            if record.get("type") == "message":
                msg = record.get("message")
                if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                    msg["role"] = "custom"
        header["version"] = CURRENT_SESSION_VERSION
    return version


def check_tree(entries: Iterable[Entry], log: ProblemLog) -> None:
    """Record duplicate ids, dangling parents and parent cycles."""
    entries = list(entries)
    first_line: dict[str, int | None] = {}
    by_id: dict[str, Entry] = {}
    for entry in entries:
        if entry.id is None:
            continue
        if entry.id in first_line:
            log.add(
                entry.line,
                "duplicate-id",
                f"entry id {entry.id!r} already used on line {first_line[entry.id]}; "
                "the later entry wins in lookups",
            )
        else:
            first_line[entry.id] = entry.line
        by_id[entry.id] = entry
    for entry in entries:
        parent = entry.parent_id
        if parent is not None and parent not in by_id:
            log.add(
                entry.line,
                "dangling-parent",
                f"parentId {parent!r} names no entry; the entry becomes a root",
            )
    # Cycle detection: follow parents with colouring, linear overall.
    state: dict[str, int] = {}  # 1 = on current walk, 2 = done
    for entry in by_id.values():
        walk: list[str] = []
        node: Entry | None = entry
        while node is not None and node.id is not None and state.get(node.id) is None:
            state[node.id] = 1
            walk.append(node.id)
            parent = node.parent_id
            node = by_id.get(parent) if parent is not None else None
        if node is not None and node.id is not None and state.get(node.id) == 1:
            log.add(
                node.line,
                "parent-cycle",
                f"entry {node.id!r} is its own ancestor; path walks stop at the cycle",
            )
        for entry_id in walk:
            state[entry_id] = 2


def synthetic_header(path: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A header for a file that has none, so its entries are not lost."""
    has_ids = any(isinstance(r.get("id"), str) for r in records)
    first_ts = next((r["timestamp"] for r in records if isinstance(r.get("timestamp"), str)), None)
    header: dict[str, Any] = {"type": "session", "id": Path(path).stem}
    if has_ids:
        header["version"] = CURRENT_SESSION_VERSION
    if first_ts is not None:
        header["timestamp"] = first_ts
    return header


def session_from_values(
    path: str, values: list[tuple[int, Any]], log: ProblemLog
) -> Session:
    """Turn parsed JSONL values into a migrated, checked `Session`."""
    title_slot: dict[str, Any] | None = None
    if values and isinstance(values[0][1], dict) and values[0][1].get("type") == "title":
        title_slot = values.pop(0)[1]
    header: dict[str, Any] | None = None
    header_line: int | None = None
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    for lineno, value in values:
        if not isinstance(value, dict):
            log.add(lineno, "not-an-object", f"line holds a JSON {type(value).__name__}, not an entry")
            continue
        if value.get("type") == "session":
            if header is None and not records:
                header, header_line = value, lineno
                continue
            log.add(lineno, "extra-header", "a second session header; skipped")
            continue
        records.append(value)
        lines.append(lineno)
    if header is None:
        if records:
            log.add(lines[0], "missing-header", "file has no session header; one was synthesized")
        header = synthetic_header(path, records)
    elif not isinstance(header.get("id"), str):
        log.add(header_line, "bad-header", "session header has no string id")
    if title_slot is not None:
        header.setdefault("titleSlot", title_slot)
    migrate_records(header, records)
    entries: list[Entry] = []
    for lineno, record in zip(lines, records, strict=True):
        entry = Entry.from_record(record, line=lineno)
        if entry.id is None:
            log.add(lineno, "missing-id", f"{entry.type!r} entry has no id; kept outside the tree")
        if entry.type not in KNOWN_ENTRY_TYPES:
            log.add(lineno, "unknown-entry-type", f"unknown entry type {entry.type!r}; kept as is")
        entries.append(entry)
    check_tree(entries, log)
    return Session(header, entries, errors=log.problems, source_path=path, source_format="pi")


def read_pi_jsonl(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a pi/MusePi session JSONL file (v1, v2 or v3) into a `Session`.

    Args:
        path: The `.jsonl` file.
        strict: Raise `SessionReadError` on the first problem instead of recording it.
    """
    p, data = read_bytes_checked(path)
    log = ProblemLog(p, strict=strict)
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a JSONL session")
        return Session(synthetic_header(p, []), (), errors=log.problems, source_path=p)
    if not data.strip():
        log.add(None, "empty-file", "file is empty")
        return Session(synthetic_header(p, []), (), errors=log.problems, source_path=p)
    return session_from_values(p, parse_jsonl(data, log), log)


def records_to_session(
    header: Mapping[str, Any], records: Iterable[Mapping[str, Any]], **kwargs: Any
) -> Session:
    """Build a `Session` from an in-memory header and v1–v3 records (migrated as on load)."""
    head = dict(header)
    recs = [dict(r) for r in records]
    migrate_records(head, recs)
    return Session(head, [Entry.from_record(r) for r in recs], **kwargs)
