"""Claude Code transcripts read for a bill only: the replies that record usage, and their ids.

`usage_df` needs, of a Claude Code file, each reply's first line (its uuid, line number,
timestamp, model, `message.id`, `requestId` and sidechain flag) and the usage of its last
line; the whole session tree (`read_claude_code`) is built for everything else. This reader
parses only the lines that can hold a reply (those naming `"assistant"` or `"usage"`), with
orjson, and returns a `Session` holding just those replies as `message` entries, shaped as
`read_claude_code` shapes them (`usage_from_anthropic`, `PROVIDER`, the header id rules of
`_claude_code_header`), so the usage rows of both are equal (tests/test_usage_fast.py holds
them equal on every corpus file).

It returns None, and the caller reads the file with `read_claude_code`, whenever the file
holds something whose reading needs the tree or names a problem: a line that does not
parse, is not an object or is not a whole JSON object, a reply line without a uuid or a
message object, a uuid used twice, a main file whose last reply is an inline
sidechain's (the main thread's leaf, moved to the end, may come before it), sidecar, binary or empty files. Tree problems
(`dangling-parent` and the like) are not looked for: they change no bill.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from .._errors import MusepiLabError
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._claude_code_blocks import usage_from_anthropic
from ._claude_code_header import _subagent_kind, subagent_paths
from ._detect import claude_code_sidecar
from ._io import looks_binary, read_bytes_checked, strip_bom
from ._records import epoch_ms
from ._registry import format_of_file_bytes
from ._values import MAX_NESTING, limit_nesting

SOURCE_FORMAT = "claude-code"
PROVIDER = "anthropic"


class _Fallback(MusepiLabError):
    """The file needs the full reader."""


def _whole_object(raw: bytes) -> bool:
    text = raw.strip()
    return text[:1] == b"{" and text[-1:] == b"}"


def _parse(raw: bytes) -> Any:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _Fallback from None
    if not isinstance(value, dict):
        raise _Fallback
    if len(raw) > MAX_NESTING and raw.count(b"[") + raw.count(b"{") > MAX_NESTING:
        _, cut = limit_nesting(value)
        if cut:
            raise _Fallback  # a nested-too-deeply problem, and the value cut
    return value


class _Scan:
    """The replies of one file, line by line (the fields `usage_df` reads)."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.by_key: dict[tuple[bool, str], dict[str, Any]] = {}
        self.uuids: set[str] = set()
        self.header: dict[str, Any] = {}
        self.main_record = False  # a record with a uuid that is not a sidechain
        self.last_side = False  # the last reply (by its first line) is a sidechain's

    def note_header(self, rec: dict[str, Any], keys: tuple[str, ...]) -> None:
        for key in keys:
            if key not in self.header and rec.get(key) is not None:
                self.header[key] = rec[key]

    def record(self, lineno: int, rec: dict[str, Any]) -> None:
        kind, uuid = rec.get("type"), rec.get("uuid")
        message = rec.get("message")
        if not isinstance(uuid, str):
            has_usage = isinstance(message, dict) and isinstance(message.get("usage"), dict)
            if kind in ("user", "assistant") or (kind is None and has_usage):
                raise _Fallback  # kept with a fresh id and a missing-id problem
            return
        side = rec.get("isSidechain") is True
        if not side:
            self.main_record = True
        if kind != "assistant":
            return
        if not isinstance(message, dict):
            raise _Fallback  # a bad-message problem
        if uuid in self.uuids:
            raise _Fallback  # a duplicate-id problem, and ids the tree allots
        self.uuids.add(uuid)
        mid = message.get("id")
        key = (side, mid) if isinstance(mid, str) else None
        reply = self.by_key.get(key) if key is not None else None
        if reply is not None:
            if isinstance(message.get("usage"), dict):
                reply["_usage"] = message["usage"]  # converted once, in `_entries`
            return
        reply = _reply(lineno, rec, message, uuid, side)
        self.replies.append(reply)
        self.last_side = side
        if key is not None:
            self.by_key[key] = reply


def _reply(
    lineno: int, rec: dict[str, Any], message: dict[str, Any], uuid: str, side: bool
) -> dict[str, Any]:
    ts = rec.get("timestamp")
    record: dict[str, Any] = {
        "type": "message",
        "id": uuid,
        "parentId": None,
        "timestamp": ts,
        "message": {
            "role": "assistant",
            "provider": PROVIDER,
            "model": str(message.get("model", "")),
            "usage": usage_from_anthropic(message.get("usage")),
            "timestamp": epoch_ms(ts),
        },
        "sourceId": uuid,
        "_line": lineno,
        "_side": side,
    }
    mid, rid = message.get("id"), rec.get("requestId")
    if isinstance(mid, str):
        record["sourceMessageId"] = mid
    if isinstance(rid, str):
        record["sourceRequestId"] = rid
    return record


_HEADER_KEYS = ("sessionId", "agentId")


def _scan(data: bytes) -> _Scan:
    """The replies of a file: found by searching the bytes when every line is one compact
    object (`_scan_found`), else line by line (`_scan_lines`); the two agree."""
    data = strip_bom(data)
    if _plain_lines(data):
        return _scan_found(data)
    return _scan_lines(data)


def _scan_lines(data: bytes) -> _Scan:
    scan = _Scan()
    for index, raw in enumerate(data.split(b"\n")):
        if not raw or raw.isspace():
            continue
        if not _whole_object(raw):
            raise _Fallback  # malformed or truncated: the full reader names it
        lineno = index + 1
        if b'"assistant"' in raw or b'"usage"' in raw:
            rec = _parse(raw)
            scan.note_header(rec, _HEADER_KEYS)
            scan.record(lineno, rec)
        elif (
            "sessionId" not in scan.header
            or ("agentId" not in scan.header and b'"agentId"' in raw)
            or (not scan.main_record and b'"uuid"' in raw and b'"isSidechain":true' not in raw)
            or (b'"isSidechain":false' in raw and not scan.main_record)
        ):
            # Only the header's first values and whether a record is main-thread are read
            # from the other lines, and only until they are known.
            rec = _parse(raw)
            scan.note_header(rec, _HEADER_KEYS)
            scan.record(lineno, rec)
    return scan


def _plain_lines(data: bytes) -> bool:
    """Whether every line is `{...}` with nothing around it, no blank line, no CR."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)  # no copy of the bytes
    if end <= 0 or data[:1] != b"{" or data[end - 1 : end] != b"}":
        return False
    # A CR, a blank line or a space at either end of a line breaks a `}\n{`.
    return data.count(b"}\n{", 0, end) == data.count(b"\n", 0, end)


def _spans(data: bytes, needles: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line holding one of `needles`, in file order."""
    found: dict[int, int] = {}
    for needle in needles:
        found.update(_needle_spans(data, needle))
    return sorted(found.items())


def _needle_spans(data: bytes, needle: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each line holding `needle`, in file order, found as they are asked for."""
    pos = data.find(needle)
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        yield start, end
        pos = data.find(needle, end)


def _first_line_with(data: bytes, needle: bytes, key: str) -> Any:
    """The `key` of the first record that has it at the top (searched by `needle`)."""
    for start, end in _needle_spans(data, needle):
        value = _parse(data[start:end]).get(key)
        if value is not None:
            return value
    return None


def _scan_found(data: bytes) -> _Scan:
    scan = _Scan()
    line, previous = 1, 0
    for start, end in _spans(data, (b'"assistant"', b'"usage"')):
        line += data.count(b"\n", previous, start)
        previous = start
        scan.record(line, _parse(data[start:end]))
    for key in _HEADER_KEYS:
        value = _first_line_with(data, f'"{key}"'.encode(), key)
        if value is not None:
            scan.header[key] = value
    if not scan.main_record:
        for start, end in _spans(data, (b'"isSidechain":false', b'"isSidechain": false')):
            rec = _parse(data[start:end])
            if isinstance(rec.get("uuid"), str) and rec.get("isSidechain") is not True:
                scan.main_record = True
                break
    if not scan.main_record and data.count(b'"uuid"') > data.count(b'"isSidechain"'):
        return _scan_lines(data)  # records without the flag: read each to know
    return scan


def _header(path: str, scan: _Scan, linked_file: bool) -> dict[str, Any]:
    session_id = scan.header.get("sessionId")
    session_id = session_id if isinstance(session_id, str) else Path(path).stem
    if linked_file and "#" in session_id:
        session_id = session_id.split("#", 1)[0]
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": session_id,
        "sourceFormat": SOURCE_FORMAT,
    }
    if linked_file and scan.replies:
        agent_id = scan.header.get("agentId")
        agent_name = f"agent-{agent_id}" if isinstance(agent_id, str) else Path(path).stem
        header["id"] = f"{session_id}/{agent_name}"
        header["parentSessionId"] = session_id
        header["subagentKind"] = _subagent_kind(Path(path), agent_name)
    return header


FileParts = tuple[str, dict[str, Any], list[tuple[dict[str, Any], int]]]
"""One file's fast-path result as plain values (they cross process boundaries): its path,
its header and its reply records with their line numbers."""


def _records(scan: _Scan, linked_file: bool) -> list[tuple[dict[str, Any], int]]:
    out = []
    for record in scan.replies:
        line, side = record.pop("_line"), record.pop("_side")
        if "_usage" in record:
            record["message"]["usage"] = usage_from_anthropic(record.pop("_usage"))
        if side and not linked_file:
            record["isSidechain"] = True
        out.append((record, line))
    return out


def _entry(record: dict[str, Any], line: int) -> Entry:
    ts = record["timestamp"]
    return Entry(
        "message",
        record["id"],
        None,
        ts if isinstance(ts, str) else None,
        MappingProxyType(record),
        line,
        record["id"],
    )


def file_parts(path: str | os.PathLike[str]) -> FileParts | None:
    """One file's replies (no subagent files), or None when it needs `read_claude_code`.

    Raises:
        SessionReadError: The path is not a readable file.
    """
    p, data = read_bytes_checked(path)
    if format_of_file_bytes(p, data) != "claude-code":
        return None
    if claude_code_sidecar(Path(p).name, data[:65536]) is not None or looks_binary(data):
        return None
    if not data.strip():
        return None
    try:
        scan = _scan(data)
    except _Fallback:
        return None
    linked_file = not scan.main_record
    if scan.last_side and not linked_file:
        return None  # the main thread's leaf, moved last, may come before it
    return p, _header(p, scan, linked_file), _records(scan, linked_file)


def session_parts(path: str | os.PathLike[str]) -> tuple[FileParts, list[FileParts]] | None:
    """A session file's parts and its subagent files' (`session_of_parts` makes the
    `Session`), or None when one of them needs `read_claude_code`: what a worker process
    returns for one file of a folder.

    Raises:
        SessionReadError: The path is not a readable file.
    """
    main = file_parts(path)
    if main is None:
        return None
    subs = [file_parts(sub) for sub in subagent_paths(main[0])]
    if any(sub is None for sub in subs):
        return None
    return main, [sub for sub in subs if sub is not None]


def session_of_parts(parts: FileParts, linked: Sequence[Session] = ()) -> Session:
    """The `Session` of a file's parts, with its subagent sessions."""
    path, header, records = parts
    return Session(
        header,
        [_entry(record, line) for record, line in records],
        errors=[problem for sub in linked for problem in sub.errors],
        source_path=path,
        source_format=SOURCE_FORMAT,
        linked=linked,
    )


def read_claude_code_usage(path: str | os.PathLike[str]) -> Session | None:
    """The replies with their usage of a Claude Code file and its subagent files, as a
    `Session` of `message` entries (see the module docstring), or None when the file needs
    `read_claude_code` (or is no Claude Code file: `detect_format` says another format).
    A subagent file that needs it is read with it.

    Raises:
        SessionReadError: The path is not a readable file.
    """
    from ._claude_code import read_claude_code

    main = file_parts(path)
    if main is None:
        return None
    linked = []
    for sub_path in subagent_paths(main[0]):
        sub = file_parts(sub_path)
        linked.append(session_of_parts(sub) if sub is not None else read_claude_code(sub_path))
    return session_of_parts(main, linked)
