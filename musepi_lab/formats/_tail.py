"""Following a session file an agent is still writing, without reading it again.

The state is a frozen `TailState`: the byte offset taken in so far, the last line while it
has no newline yet (`pending`), the file's identity, and the `Session` of the complete
lines. `advance(state, data)` is a pure function of the state and the bytes that came after
the offset; `read_new_bytes(path, state)` is the IO edge that reads them and notices a file
that was truncated, rotated, rewritten or replaced (a smaller size, a different start, other
bytes just before the offset, or a new inode), in which case the tail starts again from the
file's first byte (`restarts` counts it). It reads at most `MAX_READ_BYTES` a poll, and only
from a regular file: a path that became a FIFO or a device raises, without blocking.

The format is detected as `detect_format` would detect it from the complete lines so far
(`_registry.format_of_bytes`), again at each update until it is final (a record tells it,
or enough records told nothing: pi), and again after every restart; meanwhile the lines are
read as a full read reads them (`mode == "detecting"`: as pi while they tell nothing). A Claude Code transcript
opens with `file-history-snapshot` lines, which tell nothing.

Only complete lines are parsed, each once, by the readers' own line parser
(`formats._io.parse_jsonl`). pi/MusePi JSONL (v3, header first, as agents write it) is built
entry by entry: the new entries get the same checks a full read gives them
(`formats._pi`: `safe_record`, `check_entry`), and the new `Session` holds the previous
entries plus the new ones. The tree-wide checks (duplicate ids, dangling parents, cycles,
compactions naming no entry) cannot fire while every entry names an earlier parent and a
new id, which is how agents write; once one does not, they are rerun over the entries at
each update, so the problems are always those of a full read. A pi file that needs
migrating (v1, v2), has no header first, or looks binary is rebuilt from its kept bytes at
each update (`mode == "rebuild"`). Claude Code and Codex files are parsed line by line the
same way, but their readers relate records across the whole file (streamed replies merged,
usage assigned to requests, tool results paired), so their `Session` is rebuilt from the
kept parsed lines at each update by the readers' own builders (`mode == "values"`;
subagent transcripts are not read).

The pending last line is never a problem: it is what the writer has not finished. It is
carried as `pending` (and shown by the live views as "pending partial line (N bytes)"); a
full read of the file at that moment would report it as `truncated-line`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from typing import Any

from ..session._errors import ProblemLog, ReadProblem, SessionReadError, in_file_order
from ..session._model import Entry, owned_entries
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._io import check_session_path, looks_binary, parse_jsonl
from ._pi import (
    check_compactions,
    check_entry,
    check_tree,
    fresh_id,
    header_version,
    is_title_slot,
    safe_record,
    session_from_pi_bytes,
    synthetic_header,
)

TAIL_FORMATS: tuple[str, ...] = ("pi", "claude-code", "codex")
"""Formats a tail follows (the JSONL ones; `None` detects from the first line)."""

_HEAD_BYTES = 256  # the start of the file compared at each read, to notice a rotation
_SAMPLE_BYTES = 4096  # the bytes just before the offset, compared too: a rewrite in place
MAX_READ_BYTES = 8 << 20
"""The most one poll reads (8 MiB): a file that grows faster is taken in over several."""


@dataclass(frozen=True, slots=True)
class _PiBuild:
    """pi entries built incrementally: the header and the per-line problems so far."""

    header: Any = None  # the header Mapping, once seen
    problems: tuple[ReadProblem, ...] = ()
    clean: bool = True  # every entry names an earlier parent and a new id
    version: int = CURRENT_SESSION_VERSION  # the file's own, before migration
    data: bytes = b""  # a v1 file's bytes: a later line may need the whole file migrated


@dataclass(frozen=True, slots=True)
class _KeptBuild:
    """A session rebuilt at each update: from the kept bytes (pi) or parsed lines."""

    data: bytes = b""
    values: tuple[tuple[int, Any], ...] = ()
    problems: tuple[ReadProblem, ...] = ()


@dataclass(frozen=True, slots=True)
class TailState:
    """Where a tail of one session file stands. Immutable: `advance` returns a new one.

    Attributes:
        path: The file followed.
        format: `pi`, `claude-code` or `codex`: the one given, else what detection says
            of the complete lines so far (None before the first one).
        session: The `Session` of the complete lines taken in so far.
        offset: Bytes of the file taken in (complete lines and `pending`).
        pending: The last line so far, without its newline yet (not parsed).
        lines: Complete lines taken in (the next one is line `lines + 1`).
        mode: `incremental` (pi entries appended), `rebuild` (pi rebuilt from the kept
            bytes), `values` (Claude Code, Codex: rebuilt from the kept parsed lines),
            `detecting` (read as pi from the kept bytes while the lines tell no format
            yet), or `waiting` (no line yet).
        restarts: Times the file was truncated, rotated or replaced and read anew.
        updates: Advances that took in at least one complete line.
        identity: `(st_dev, st_ino)` of the file read, once read.
        head: The file's first bytes (up to 256) as read, to notice a rotation.
        sample: The last bytes taken in (up to 4096, before `offset`), to notice a rewrite.
        detected: The format can no longer change (given, or told by the lines).
        format_given: The format was given, not detected (kept after a restart).
    """

    path: str
    format: str | None
    session: Session
    offset: int = 0
    pending: bytes = b""
    lines: int = 0
    mode: str = "waiting"
    restarts: int = 0
    updates: int = 0
    identity: tuple[int, int] | None = None
    head: bytes = b""
    sample: bytes = b""
    detected: bool = False
    format_given: bool = False
    _build: Any = field(default=None, repr=False, compare=False)

    @property
    def pending_bytes(self) -> int:
        """Bytes of the unfinished last line (0 when the file ends with a newline)."""
        return len(self.pending)


@dataclass(frozen=True, slots=True)
class FileRead:
    """What `read_new_bytes` found: the bytes to take in and whether to start anew.

    Attributes:
        data: The bytes after the state's offset (or the whole file when `restart`).
        restart: The file was truncated, rotated or replaced: start from its first byte.
        identity: `(st_dev, st_ino)` of the file read.
        head: The file's first bytes (up to 256).
        missing: The file is not there (between a rename and its replacement, say).
        more: The read stopped at `MAX_READ_BYTES`: the file holds more already.
    """

    data: bytes
    restart: bool
    identity: tuple[int, int] | None
    head: bytes
    missing: bool = False
    more: bool = False


def empty_tail(path: str | os.PathLike[str], format: str | None = None) -> TailState:
    """The state before any byte of `path` is taken in (no IO).

    Raises:
        ValueError: `format` is not one of `TAIL_FORMATS`.
    """
    if format is not None and format not in TAIL_FORMATS:
        raise ValueError(f"cannot follow {format!r} files; expected one of {TAIL_FORMATS}")
    p = os.fspath(path)
    session = Session(synthetic_header(p, []), (), source_path=p, source_format=format or "pi")
    given = format is not None
    return TailState(path=p, format=format, session=session, detected=given, format_given=given)


def advance(state: TailState, data: bytes) -> TailState:
    """The state after `data`, the bytes that followed `state.offset` in the file (pure).

    Complete lines (up to the last newline, with the pending part before them) are parsed
    and taken in; what follows the last newline becomes the new `pending`.
    """
    if not data:
        return state
    buffered = state.pending + data
    cut = buffered.rfind(b"\n") + 1
    complete, pending = buffered[:cut], buffered[cut:]
    moved = replace(state, offset=state.offset + len(data), pending=pending)
    if not complete:
        return moved
    first_line = state.lines + 1
    lines = state.lines + complete.count(b"\n")
    moved = replace(moved, lines=lines, updates=state.updates + 1)
    fmt = state.format
    if not state.detected:
        so_far = _kept(state).data + complete
        fmt, final = _detected_format(state.path, so_far)
        if not final:
            return _detecting(moved, fmt, so_far)
        moved = replace(moved, detected=True)
    moved = replace(moved, format=fmt)
    if fmt == "pi":
        return _advance_pi(moved, state, complete, first_line)
    return _advance_values(moved, state, complete, first_line)


def _detecting(moved: TailState, fmt: str, data: bytes) -> TailState:
    """While the format may still change: the session a full read of the lines gives (read
    as the format they show so far, pi when they show none), all bytes kept."""
    if fmt == "pi":
        session = session_from_pi_bytes(moved.path, data)
    else:
        log = ProblemLog(moved.path, strict=False)
        values = parse_jsonl(data, log)
        session = values_session(fmt, moved.path, values, tuple(log.problems))
    return replace(moved, format=fmt, session=session, mode="detecting", _build=_KeptBuild(data))


def _detected_format(path: str, data: bytes) -> tuple[str, bool]:
    """The format of a file's complete lines as `detect_format` sees it, and whether it is
    final (`_registry.format_of_bytes`).

    Raises:
        ValueError: They are another format than the ones a tail follows.
    """
    from ._registry import format_of_bytes

    fmt, final = format_of_bytes(path, data)
    if fmt not in TAIL_FORMATS:
        raise ValueError(f"cannot follow {fmt!r} files; expected one of {TAIL_FORMATS}")
    return fmt, final


def _kept(state: TailState) -> _KeptBuild:
    return state._build if isinstance(state._build, _KeptBuild) else _KeptBuild()


# -- pi ----------------------------------------------------------------------------------


def _advance_pi(moved: TailState, state: TailState, complete: bytes, first_line: int) -> TailState:
    build = state._build
    if isinstance(build, _PiBuild):
        return _pi_append(moved, build, state.session, complete, first_line)
    data = _kept(state).data + complete
    if state.mode == "rebuild":
        return _pi_rebuild(moved, data)
    return _pi_open(moved, data)


def _pi_open(moved: TailState, data: bytes) -> TailState:
    """The file's first complete lines: followed entry by entry when they open with a v3
    header (after omp's title line, if any), else rebuilt at each update."""
    log = ProblemLog(moved.path, strict=False)
    values = parse_jsonl(data, log)
    title = values[0][1] if values and is_title_slot(*values[0]) else None
    rest = values[1:] if title is not None else values
    if not rest and not log.problems:
        return _pi_rebuild(moved, data, mode="waiting")  # the header is still to come
    if not rest or log.problems or looks_binary(data):
        return _pi_rebuild(moved, data)
    line, header = rest[0]
    if not isinstance(header, dict) or header.get("type") != "session":
        return _pi_rebuild(moved, data)
    header = dict(header)
    head_log = ProblemLog(moved.path, strict=False)
    if not isinstance(header.get("id"), str):
        head_log.add(line, "bad-header", "session header has no string id")
    version = header_version(header, [], head_log, line)
    if any(p.message.startswith("unusable version") for p in head_log.problems):
        return _pi_rebuild(moved, data)  # a full read infers the version from every entry
    header["version"] = CURRENT_SESSION_VERSION  # what the migrations leave (spec §1.9)
    if title is not None:
        header.setdefault("titleSlot", title)
    start = Session(header, (), source_path=moved.path, source_format="pi")
    built = _PiBuild(
        header=start.header,
        problems=tuple(head_log.problems),
        version=version,
        data=data if version < 2 else b"",
    )
    return _pi_take(moved, built, start, rest[1:], ())


def _pi_rebuild(moved: TailState, data: bytes, mode: str = "rebuild") -> TailState:
    session = session_from_pi_bytes(moved.path, data)
    return replace(moved, session=session, mode=mode, _build=_KeptBuild(data=data))


def _pi_append(
    moved: TailState, build: _PiBuild, session: Session, complete: bytes, first_line: int
) -> TailState:
    log = ProblemLog(moved.path, strict=False)
    values = parse_jsonl(complete, log, first_line=first_line)
    if build.version < 2:
        build = replace(build, data=build.data + complete)
    return _pi_take(moved, build, session, values, tuple(log.problems))


def _pi_take(
    moved: TailState,
    build: _PiBuild,
    session: Session,
    values: list[tuple[int, Any]],
    parse_problems: tuple[ReadProblem, ...],
) -> TailState:
    """Take parsed lines into a pi session that has its header (spec §1.9 checks)."""
    log = ProblemLog(moved.path, strict=False)
    new: list[Entry] = []
    known = session.by_id
    fresh: set[str] = set()
    clean = build.clean
    taken = set(known) if build.version < 2 else set()
    for lineno, value in values:
        if not isinstance(value, dict):
            kind = type(value).__name__
            log.add(lineno, "not-an-object", f"line holds a JSON {kind}, not an entry; skipped")
            continue
        if value.get("type") == "session":
            log.add(lineno, "extra-header", "a second session header; skipped")
            continue
        if build.version < CURRENT_SESSION_VERSION:
            migrated = _migrated(value, build, session, new, taken)
            if migrated is None:
                return _pi_rebuild(moved, build.data)
            value = migrated
        record = safe_record(value, lineno, log)
        entry = owned_entries([record], [lineno])[0]
        check_entry(entry, log)
        new.append(entry)
        clean = clean and _keeps_tree_clean(entry, known, fresh)
        if entry.id is not None:
            fresh.add(entry.id)
    problems = build.problems + parse_problems + tuple(log.problems)
    entries = (*session.entries, *new) if new else session.entries
    tree: list[ReadProblem] = []
    if not clean:
        # Rare (hand-edited or merged files): the whole-tree checks, as a full read runs them.
        tree_log = ProblemLog(moved.path, strict=False)
        check_tree(entries, tree_log)
        check_compactions(entries, {e.id for e in entries if e.id is not None}, tree_log)
        tree = tree_log.problems
    rebuilt = Session(
        session.header,
        entries,
        errors=in_file_order((*problems, *tree)),
        source_path=moved.path,
        source_format="pi",
    )
    built = replace(build, problems=problems, clean=clean)
    return replace(moved, session=rebuilt, mode="incremental", _build=built)


def _migrated(
    record: dict[str, Any], build: _PiBuild, session: Session, new: list[Entry], taken: set[str]
) -> dict[str, Any] | None:
    """One record through the v1→v2→v3 migrations (`_pi.migrate_records`), or None when
    it needs the whole file: a v1 entry with its own id (the ids drawn for the others
    avoid it), or a compaction keeping an entry not written yet."""
    if build.version < 2:
        if isinstance(record.get("id"), str):
            return None
        count = len(session.entries) + len(new)
        previous = new[-1] if new else (session.entries[-1] if session.entries else None)
        record["id"] = fresh_id(str(build.header.get("id", "")), count, taken)
        record["parentId"] = previous.id if previous is not None else None
        if record.get("type") == "compaction" and "firstKeptEntryIndex" in record:
            kept = record["firstKeptEntryIndex"]
            if isinstance(kept, int) and not isinstance(kept, bool) and kept > count:
                return None  # it may name an entry still to come
            record.pop("firstKeptEntryIndex")
            if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 1:
                kept_entry = (*session.entries, *new)[kept - 1]
                record["firstKeptEntryId"] = kept_entry.id
    message = record.get("message")
    if record.get("type") == "message" and isinstance(message, dict):
        if message.get("role") == "hookMessage":
            message["role"] = "custom"
    return record


def _keeps_tree_clean(entry: Entry, known: Any, fresh: set[str]) -> bool:
    """Whether no tree-wide check can fire for this entry now or later: a new id, a
    parent seen before it, and (a compaction) a kept entry seen before it."""
    if entry.id is not None and (entry.id in known or entry.id in fresh):
        return False
    parent = entry.parent_id
    if parent is not None and parent not in known and parent not in fresh:
        return False
    if entry.type == "compaction":
        kept = entry.get("firstKeptEntryId")
        if not isinstance(kept, str) or (kept not in known and kept not in fresh):
            return False
    return True


# -- Claude Code, Codex -------------------------------------------------------------------


def _advance_values(
    moved: TailState, state: TailState, complete: bytes, first_line: int
) -> TailState:
    kept = _kept(state)
    log = ProblemLog(moved.path, strict=False)
    if kept.data:  # blank lines held before the format was known
        complete, first_line = kept.data + complete, 1
    values = (*kept.values, *parse_jsonl(complete, log, first_line=first_line))
    problems = (*kept.problems, *log.problems)
    build = _KeptBuild(values=values, problems=problems)
    session = values_session(moved.format or "pi", moved.path, list(values), problems)
    return replace(moved, session=session, mode="values", _build=build)


def values_session(
    fmt: str, path: str, values: list[tuple[int, Any]], problems: tuple[ReadProblem, ...] = ()
) -> Session:
    """A Claude Code or Codex `Session` from parsed lines, by the format's own builder
    (`problems` are the parser's, kept beside the builder's)."""
    log = ProblemLog(path, strict=False)
    log.merge(problems)
    if fmt == "claude-code":
        from ._claude_code import session_from_claude_code_values

        return session_from_claude_code_values(path, values, log, read_linked=False)
    if fmt == "codex":
        from ._codex import session_from_codex_values

        return session_from_codex_values(path, values, log)
    raise ValueError(f"cannot follow {fmt!r} files; expected one of {TAIL_FORMATS}")


# -- the file ------------------------------------------------------------------------------


def _open_regular(path: str) -> int:
    """A descriptor of the regular file at `path`, opened without blocking (a FIFO put in
    its place would block an ordinary open until a writer came).

    Raises:
        FileNotFoundError: Nothing is there.
        SessionReadError: A folder, a FIFO, a device or anything else that is not a file.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        check_session_path(path)  # raises the usual error for what it is
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between the two looks
        os.close(fd)
        raise SessionReadError(path, None, "not-a-file", "is not a regular file")
    return fd


def read_new_bytes(path: str | os.PathLike[str], state: TailState) -> FileRead:
    """Read what `path` holds past `state.offset` (the IO edge of a tail), at most
    `MAX_READ_BYTES` (`more` says when it holds more already).

    The file starts anew (`restart`) when it is another file than the one read (a new
    inode: replaced atomically), shorter than the offset (truncated), no longer starts
    with the bytes it started with (rotated and written again past the old size), or holds
    other bytes just before the offset than the ones taken in (rewritten in place, or
    deleted and recreated on the same inode, with the same start). A missing file reads as
    nothing, `missing` set: a writer may be between a rename and the new file.

    Raises:
        SessionReadError: The path is a folder or not a regular file (a FIFO or a device
            put in its place).
    """
    p = os.fspath(path)
    try:
        fd = _open_regular(p)
    except FileNotFoundError:
        return FileRead(b"", False, state.identity, state.head, missing=True)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        head = fh.read(_HEAD_BYTES)
        restart = (
            (state.identity is not None and identity != state.identity)
            or st.st_size < state.offset
            or not head.startswith(state.head)
        )
        if not restart:
            fh.seek(state.offset - len(state.sample))
            data = fh.read(len(state.sample) + MAX_READ_BYTES)
            restart = not data.startswith(state.sample)
            data = data[len(state.sample) :]
        if restart:
            fh.seek(0)
            data = fh.read(MAX_READ_BYTES)
        return FileRead(data, restart, identity, head, more=len(data) == MAX_READ_BYTES)


def follow(state: TailState, read: FileRead) -> TailState:
    """The state after a `read_new_bytes` result (pure): its bytes taken in, from a fresh
    start (the format detected again unless it was given) when the file was replaced,
    truncated, rotated or rewritten."""
    if read.missing or (not read.restart and not read.data and read.identity == state.identity):
        return state
    if read.restart:
        fresh = empty_tail(state.path, state.format if state.format_given else None)
        fresh = replace(fresh, restarts=state.restarts + 1, updates=state.updates)
        taken = advance(fresh, read.data)
        return replace(taken, identity=read.identity, head=read.head, sample=_sample(read.data))
    head = read.head if len(read.head) > len(state.head) else state.head
    taken = advance(state, read.data)
    sample = _sample(state.sample + read.data)
    return replace(taken, identity=read.identity, head=head, sample=sample)


def _sample(data: bytes) -> bytes:
    return data[-_SAMPLE_BYTES:]


def poll(state: TailState) -> TailState:
    """Read what the file gained since `state` and take it in (`follow(state,
    read_new_bytes(state.path, state))`)."""
    return follow(state, read_new_bytes(state.path, state))


def start_tail(path: str | os.PathLike[str], *, format: str | None = None) -> TailState:
    """A tail of `path` with everything the file holds now taken in.

    Raises:
        SessionReadError: The path is not a regular file.
        ValueError: The file is of a format a tail cannot follow.
    """
    p = check_session_path(path)
    if format is None and os.path.getsize(p) > 0:
        from ._registry import detect_format

        found = detect_format(p)  # what the file shows as a whole, pending line included
        if found not in TAIL_FORMATS:
            raise ValueError(f"cannot follow {found!r} files; expected one of {TAIL_FORMATS}")
    size = os.path.getsize(p)
    state = empty_tail(p, format)
    while True:  # the file as it is now, one bounded read at a time
        read = read_new_bytes(p, state)
        state = follow(state, read)
        if not read.more or state.offset >= size:
            return state
