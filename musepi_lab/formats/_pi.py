"""pi / MusePi session JSONL (v1, v2, v3): parse, migrate in memory, index.

Spec §1.2–1.11. The input file is never rewritten: migrations happen on the parsed records.

Bad input is data, not a crash: every problem becomes a `ReadProblem` naming file and line,
in file order, and every record that parses is kept. pi itself silently skips malformed
lines (§1.9); we skip the same lines but say so. In strict mode the reader still looks at
the whole file and then raises the earliest problem, so strict and lenient agree on what
comes first.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import KNOWN_ENTRY_TYPES, Entry, owned_entries
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._detect import format_of_record
from ._io import looks_binary, parse_jsonl, read_bytes_checked, strip_bom

# -- files -------------------------------------------------------------------------------


# -- lines -------------------------------------------------------------------------------


# -- migration ---------------------------------------------------------------------------


def fresh_id(seed: str, index: int, taken: set[str]) -> str:
    """A deterministic 8-hex id for a v1 entry (pi draws random ones; ours are stable)."""
    salt = 0
    while True:
        digest = hashlib.blake2b(f"{seed}:{index}:{salt}".encode(), digest_size=4).hexdigest()
        if digest not in taken:
            taken.add(digest)
            return digest
        salt += 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def migrate_records(header: dict[str, Any], records: list[dict[str, Any]]) -> int:
    """Run the v1→v2→v3 migrations of spec §1.9 on parsed records, in place.

    Args:
        header: The header record (its `version` is updated).
        records: The non-header records in file order.

    Returns:
        The version the file had before migration.
    """
    raw_version = header.get("version", 1)
    version = raw_version if _is_int(raw_version) else 1
    if version < 2:
        taken = {r["id"] for r in records if isinstance(r.get("id"), str)}
        seed = str(header.get("id", ""))
        prev_id: str | None = None
        ids: list[str] = []
        for index, record in enumerate(records):
            entry_id = record.get("id")
            if not isinstance(entry_id, str):
                entry_id = fresh_id(seed, index, taken)
                record["id"] = entry_id
                record["parentId"] = prev_id
            ids.append(entry_id)
            prev_id = entry_id
        for record in records:
            if record.get("type") == "compaction" and "firstKeptEntryIndex" in record:
                # An index into the full parsed array where the header is index 0.
                kept = record.pop("firstKeptEntryIndex")
                if _is_int(kept) and 1 <= kept <= len(ids):
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


def _inferred_version(records: list[dict[str, Any]]) -> int:
    # v1 entries carry no ids; anything later does.
    return CURRENT_SESSION_VERSION if any(isinstance(r.get("id"), str) for r in records) else 1


def header_version(
    header: Mapping[str, Any], records: list[dict[str, Any]], log: ProblemLog, line: int | None
) -> int:
    """The format version a header declares, checked; a bad one is inferred from content.

    An absent `version` means v1 (spec §1.2). A numeric string (`"3"`) is recorded as
    `bad-version` and read as its number, as JS comparisons do; anything else unusable is
    recorded the same way and the version is inferred (v3 when entries carry ids, else
    v1). A version newer
    than this reader knows is recorded as `unknown-version` and read as the current one.
    """
    if "version" not in header:
        return 1
    raw = header["version"]
    version: int | None = None
    if _is_int(raw):
        version = raw
    elif isinstance(raw, float) and raw.is_integer():
        version = int(raw)
    elif isinstance(raw, str) and raw.strip().isdecimal():
        version = int(raw.strip())
        log.add(line, "bad-version", f"version is the string {raw!r}; read as the number")
    if version is None or version < 1:
        inferred = _inferred_version(records)
        log.add(line, "bad-version", f"unusable version {raw!r}; read as v{inferred}")
        return inferred
    if version > CURRENT_SESSION_VERSION:
        log.add(
            line,
            "unknown-version",
            f"version {version} is newer than this reader knows; read as "
            f"v{CURRENT_SESSION_VERSION}",
        )
        return CURRENT_SESSION_VERSION
    return version


# -- checks ------------------------------------------------------------------------------


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
            # Report the cycle once, on its member that comes first in the file.
            members = walk[walk.index(node.id) :]
            first = min((by_id[m] for m in members), key=lambda e: e.line or 0)
            if len(members) == 1:
                what = "is its own parent; it is treated as a root"
            else:
                others = ", ".join(repr(m) for m in members if m != first.id)
                what = f"is its own ancestor (through {others}); path walks stop at the cycle"
            log.add(first.line, "parent-cycle", f"entry {first.id!r} {what}")
        for entry_id in walk:
            state[entry_id] = 2


def check_entry(entry: Entry, log: ProblemLog) -> None:
    """Record what is wrong with one entry on its own (type, id, parentId)."""
    record = entry.record
    if not isinstance(record.get("type"), str):
        log.add(entry.line, "missing-type", "entry has no string type; kept as is")
    elif entry.type not in KNOWN_ENTRY_TYPES:
        log.add(entry.line, "unknown-entry-type", f"unknown entry type {entry.type!r}; kept as is")
    if entry.id is None:
        what = "no id" if "id" not in record else f"a non-string id {record['id']!r}"
        log.add(entry.line, "missing-id", f"{entry.type!r} entry has {what}; kept outside the tree")
        return
    if "parentId" not in record:
        log.add(entry.line, "missing-parent-id", "entry has no parentId; treated as a root")
    elif record["parentId"] is not None and entry.parent_id is None:
        log.add(
            entry.line,
            "missing-parent-id",
            f"parentId {record['parentId']!r} is not a string or null; treated as a root",
        )


def check_compactions(entries: Iterable[Entry], ids: set[str], log: ProblemLog) -> None:
    """Record compactions whose `firstKeptEntryId` is missing or names no entry."""
    for entry in entries:
        if entry.type != "compaction":
            continue
        kept = entry.get("firstKeptEntryId")
        if "sourceFirstKeptEntryId" in entry.record:
            continue  # recorded by safe_record
        if not isinstance(kept, str):
            log.add(
                entry.line,
                "bad-first-kept",
                "compaction has no firstKeptEntryId (a v1 firstKeptEntryIndex that pointed "
                "at the header or past the end is dropped, as pi does)",
            )
        elif kept not in ids:
            log.add(entry.line, "bad-first-kept", f"firstKeptEntryId {kept!r} names no entry")


_USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_EXACT = 2**53  # past this a count is no longer exact as a double, and 2**63 breaks int64


def _bad_count(value: Any) -> bool:
    if type(value) is int:  # nearly every count: the exact checks below only for the rest
        return not -_EXACT < value < _EXACT
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return not -_EXACT < value < _EXACT
    if isinstance(value, float):
        return not (math.isfinite(value) and -_EXACT < value < _EXACT)
    return value is not None


def _plain_counts(usage: dict[str, Any]) -> bool:
    """Whether every usage count is absent, null or an int below 2**53 (nearly every
    message): `_bad_count` holds for none of them, found without a call per count."""
    for key in _USAGE_COUNTS:
        value = usage.get(key)
        if value is not None and not (type(value) is int and -_EXACT < value < _EXACT):
            return False
    return True


def safe_record(record: dict[str, Any], line: int, log: ProblemLog) -> dict[str, Any]:
    """The record with values later steps cannot take moved aside, each one recorded.

    A usage count that is not a number or is past 2**53 becomes 0 (the original usage is
    kept as `sourceUsage`); a compaction's `firstKeptEntryId` that is neither a string nor
    null becomes null (the original kept as `sourceFirstKeptEntryId`).
    """
    message = record.get("message")
    usage = message.get("usage") if type(message) is dict else None
    if type(usage) is dict and not _plain_counts(usage):
        bad = [k for k in _USAGE_COUNTS if k in usage and _bad_count(usage[k])]
        if bad:
            log.add(
                line,
                "bad-usage",
                f"message.usage {', '.join(bad)} not a count below 2**53; "
                "read as 0, the original kept as sourceUsage",
            )
            fixed = {**usage, **dict.fromkeys(bad, 0)}
            assert isinstance(message, dict)  # usage is a dict only inside a message dict
            record = {**record, "message": {**message, "usage": fixed}, "sourceUsage": usage}
    kept = record.get("firstKeptEntryId")
    if record.get("type") == "compaction" and kept is not None and not isinstance(kept, str):
        log.add(
            line,
            "bad-first-kept",
            f"firstKeptEntryId is a JSON {type(kept).__name__}, not an id; read as null, "
            "the original kept as sourceFirstKeptEntryId",
        )
        record = {**record, "firstKeptEntryId": None, "sourceFirstKeptEntryId": kept}
    return record


# -- the session -------------------------------------------------------------------------


def synthetic_header(path: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A header for a file that has none, so its entries are not lost."""
    first_ts = next((r["timestamp"] for r in records if isinstance(r.get("timestamp"), str)), None)
    header: dict[str, Any] = {"type": "session", "id": Path(path).stem}
    if _inferred_version(records) > 1:
        header["version"] = CURRENT_SESSION_VERSION
    if first_ts is not None:
        header["timestamp"] = first_ts
    return header


def is_title_slot(lineno: int, value: Any) -> bool:
    """Whether a parsed line is omp's title record (only ever the first physical line)."""
    # omp's fixed-width title record is only ever the first physical line (spec §1.11).
    return lineno == 1 and isinstance(value, dict) and value.get("type") == "title"


def _say_if_another_format(records: list[dict[str, Any]], log: ProblemLog) -> None:
    """Record `wrong-format` when a header-less file's records are another agent's."""
    votes = Counter(format_of_record(r) for r in records[:8])
    votes.pop("pi", None)
    votes.pop(None, None)
    if votes:
        fmt, _ = votes.most_common(1)[0]
        log.add(
            None,
            "wrong-format",
            f"read as pi, but its records look like {fmt}: read it with format={fmt!r} "
            "(the problems below come from reading it as the wrong format)",
        )


def session_from_values(path: str, values: list[tuple[int, Any]], log: ProblemLog) -> Session:
    """Turn parsed JSONL values into a migrated, checked `Session`.

    Problems go to `log`; the session's `errors` are `log.finish()` (which raises the
    earliest problem in strict mode).
    """
    title_slot: dict[str, Any] | None = None
    if values and is_title_slot(*values[0]):
        title_slot = values[0][1]
        values = values[1:]
    header: dict[str, Any] | None = None
    header_line: int | None = None
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    for lineno, value in values:
        if not isinstance(value, dict):
            kind = type(value).__name__
            log.add(lineno, "not-an-object", f"line holds a JSON {kind}, not an entry; skipped")
            continue
        if value.get("type") == "session":
            if header is not None:
                log.add(lineno, "extra-header", "a second session header; skipped")
                continue
            header, header_line = value, lineno
            if records:
                log.add(lineno, "misplaced-header", "the session header comes after entries")
            continue
        records.append(value)
        lines.append(lineno)
    if header is None:
        if records:
            log.add(lines[0], "missing-header", "file has no session header; one was synthesized")
            _say_if_another_format(records, log)
        header = synthetic_header(path, records)
    elif not isinstance(header.get("id"), str):
        log.add(header_line, "bad-header", "session header has no string id")
    if title_slot is not None:
        header.setdefault("titleSlot", title_slot)
    version = header_version(header, records, log, header_line)
    if "version" in header:
        header["version"] = version
    migrate_records(header, records)
    records = [safe_record(r, n, log) for n, r in zip(lines, records, strict=True)]
    # The records were parsed here and nothing else holds them: no defensive copy.
    entries = owned_entries(records, lines)
    for entry in entries:
        check_entry(entry, log)
    check_tree(entries, log)
    check_compactions(entries, {e.id for e in entries if e.id is not None}, log)
    return Session(header, entries, errors=log.finish(), source_path=path, source_format="pi")


def read_pi_jsonl(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a pi/MusePi/oh-my-pi session JSONL file (v1, v2 or v3) into a `Session`.

    Lenient by default: every record that parses is kept, and each problem (file, line,
    kind) is listed in `Session.errors` in file order. The file is never modified.

    Args:
        path: The `.jsonl` file.
        strict: Raise `SessionReadError` for the earliest problem in the file instead of
            recording it.

    Raises:
        SessionReadError: The path is not a readable regular file, or (strict) the content
            has a problem. `str(err)` starts with `path:line`.
    """
    p, data = read_bytes_checked(path)
    return session_from_pi_bytes(p, data, strict=strict)


def session_from_pi_bytes(path: str, data: bytes, *, strict: bool = False) -> Session:
    """The `Session` of a pi/MusePi JSONL file's bytes (what `read_pi_jsonl` returns for
    a file holding `data`); no IO."""
    p = path
    log = ProblemLog(p, strict=strict, deferred=True)
    if not strip_bom(data).strip():
        log.add(None, "empty-file", "file is empty")
        return Session(synthetic_header(p, []), (), errors=log.finish(), source_path=p)
    line_log = ProblemLog(p, strict=False)
    values = parse_jsonl(data, line_log)
    if looks_binary(data) and not any(isinstance(v, dict) for _, v in values):
        # One problem for the file instead of one per chunk of binary noise.
        log.add(None, "binary-file", "file holds NUL bytes and no JSON entry: not a session")
        return Session(synthetic_header(p, []), (), errors=log.finish(), source_path=p)
    log.merge(line_log.problems)
    return session_from_values(p, values, log)


def records_to_session(
    header: Mapping[str, Any], records: Iterable[Mapping[str, Any]], **kwargs: Any
) -> Session:
    """Build a `Session` from an in-memory header and v1–v3 records (migrated as on load)."""
    head = dict(header)
    recs = [dict(r) for r in records]
    migrate_records(head, recs)
    return Session(head, [Entry.from_record(r) for r in recs], **kwargs)
