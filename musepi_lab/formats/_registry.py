"""`read_session`: detect a file's format from its content and read it into a `Session`."""

from __future__ import annotations

import errno
import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ._codex_family import is_linked_child, is_rollout_name
from ._detect import (
    claude_code_sidecar,
    format_of_record,
    is_legacy_codex_header,
    is_opencode_db_name,
)
from ._io import check_session_path, read_bytes_checked, strip_bom
from ._pi import read_pi_jsonl
from ._values import loads_js

Reader = Callable[..., Session]

FORMATS: tuple[str, ...] = (
    "pi",
    "claude-code",
    "codex",
    "swe-agent",
    "openhands",
    "inspect-ai",
    "gemini-cli",
    "opencode",
)
"""Formats `read_session` understands (`pi` covers MusePi and oh-my-pi JSONL; `inspect-ai`
is Inspect AI's `.eval` and `.json` evaluation logs; `gemini-cli` its chat recordings,
checkpoints and prompt log; `opencode` its `opencode.db` or a session file of its
storage folder)."""

_SNIFF_BYTES = 65536


_SNIFF_OBJECTS = 8  # records detection looks at; when none of them tells, the file is pi's


def _first_objects(head: bytes, limit: int = _SNIFF_OBJECTS) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:  # what orjson refuses but JSON.parse takes (numbers past double range)
                value, _ = loads_js(raw.decode("utf-8", errors="replace"))
            except ValueError:
                continue
        if isinstance(value, dict):
            out.append(value)
            if len(out) >= limit:
                break
    return out


_OPENHANDS_EVAL_LINE = re.compile(rb'\{\s*"(?:instance_id|instruction)"\s*:')
# Inspect AI's JSON logs open with the log version and status, then the eval description.
_INSPECT_LOG_START = re.compile(rb'\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_ZIP_MAGIC = b"PK\x03\x04"
# Gemini CLI: a recording's metadata record, a checkpoint's Content[] (bare or under
# `history`), the prompt log's LogEntry[].
_GEMINI_START = re.compile(
    rb'(?:\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"projectHash"\s*:'
    rb'|\[\s*\{\s*"(?:role|parts)"\s*:'
    rb'|\{\s*"history"\s*:\s*\[\s*(?:\]|\{\s*"(?:role|parts)"\s*:)'
    rb'|\[\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"messageId"\s*:)'
)
# opencode storage files: session, message and part info, ids `ses_`, `msg_`, `prt_`.
_OPENCODE_START = re.compile(rb'\{\s*"id"\s*:\s*"(?:ses|msg|prt)_')
# The same documents pretty-printed (`JSON.stringify(v, null, 2)`) when their first key is
# not the one above: top-level keys sit on lines of their own, two spaces in (four for the
# items of a checkpoint's array). JSONL lines never start with spaces.
_GEMINI_KEYS = (
    re.compile(rb'^  "projectHash"\s*:', re.M),
    re.compile(rb'^  "sessionId"\s*:', re.M),
)
_GEMINI_CONTENT = re.compile(rb'^    (?:  )?"role"\s*:\s*"(?:user|model)"', re.M)
_GEMINI_HISTORY = re.compile(rb'^  "history"\s*:\s*\[', re.M)
_OPENCODE_ID = re.compile(rb'^  "id"\s*:\s*"(?:ses|msg|prt)_', re.M)


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a session file, judged from its content (and `.traj` suffix).

    Returns one of `FORMATS`. The first 64 KB usually decide; when they do not and the
    file goes on (a first line longer than that, as Claude Code and Codex write when the
    first message holds a big paste), the file is read until its first records are whole.
    Files that match nothing are treated as `pi`, whose reader reports what is wrong with
    them line by line. Content never makes this raise.

    Raises:
        SessionReadError: The path is not a readable regular file.
    """
    p, head = read_bytes_checked(path, _SNIFF_BYTES)
    fmt = _format_of_start(p, head)
    if fmt is None and len(head) == _SNIFF_BYTES:
        _, data = read_bytes_checked(p)
        fmt = _format_of_head(data)
    return fmt or _format_of_name(p, head) or "pi"


def format_of_file_bytes(path: str, data: bytes) -> str:
    """What `detect_format` says of the file `path` whose whole content is `data` (no IO)."""
    head = data[:_SNIFF_BYTES]
    fmt = _format_of_start(path, head)
    if fmt is None and len(head) == _SNIFF_BYTES:
        fmt = _format_of_head(data)
    return fmt or _format_of_name(path, head) or "pi"


def format_of_bytes(path: str, data: bytes) -> tuple[str, bool]:
    """What `detect_format` says of a file named `path` holding `data` (no IO), and whether
    that is final: False while the records tell no format and are fewer than the ones it
    looks at, so that lines written after them may still tell (a Claude Code transcript
    opens with `file-history-snapshot` lines, which tell nothing)."""
    fmt = _format_of_start(path, data)
    if fmt is not None:
        return fmt, True
    final = len(_first_objects(strip_bom(data).lstrip())) >= _SNIFF_OBJECTS
    return _format_of_name(path, data) or "pi", final


def _format_of_start(path: str, head: bytes) -> str | None:
    if path.endswith(".traj"):
        return "swe-agent"
    if head.startswith(b"SQLite format 3\x00"):
        return "opencode"  # its database; the reader says so when it is another one
    if head.startswith(_ZIP_MAGIC):
        # Inspect AI's `.eval` logs are zip archives; its reader says so when one is not.
        return "inspect-ai"
    if claude_code_sidecar(Path(path).name, head) is not None:
        return "claude-code"  # whose reader says the file is no transcript
    return _format_of_head(head)


def _format_of_name(path: str, head: bytes) -> str | None:
    """The format a file's name tells when its records tell none: a legacy Codex rollout
    holding only its header line."""
    if is_rollout_name(Path(path).name):
        first = _first_objects(strip_bom(head).lstrip(), limit=1)
        if first and is_legacy_codex_header(first[0]):
            return "codex"
    return None


def _format_of_head(head: bytes, *, strong: bool = False) -> str | None:
    """The format the start of a file shows, or None when its records tell nothing.

    `strong`: only what a format's own signs show, not the guess that any JSON array or
    pretty-printed object is OpenHands output (`is_foreign_json` asks so).
    """
    stripped = strip_bom(head).lstrip()
    if _GEMINI_START.match(stripped):
        return "gemini-cli"
    if _OPENCODE_START.match(stripped):
        return "opencode"
    # The indented-key patterns need a line that opens with two spaces, and `stripped` does
    # not: one substring test spares their scans of a JSONL head (a twentieth of a read).
    indented = b"\n  " in stripped
    if indented and all(key.search(stripped) for key in _GEMINI_KEYS):
        return "gemini-cli"
    if indented and _OPENCODE_ID.search(stripped):
        return "opencode"
    if (
        indented
        and (stripped.startswith(b"[") or _GEMINI_HISTORY.search(stripped))
        and _GEMINI_CONTENT.search(stripped)
    ):
        return "gemini-cli"
    if stripped.startswith(b"[") and not strong:
        return "openhands"
    if _INSPECT_LOG_START.match(stripped):
        return "inspect-ai"
    first_line = stripped.split(b"\n", 1)[0].strip()
    if first_line == b"{" and not strong:
        # Pretty-printed JSON document: SWE-agent trajectory or OpenHands output.
        return "swe-agent" if b'"trajectory"' in head else "openhands"
    if _OPENHANDS_EVAL_LINE.match(stripped):
        # OpenHands eval output: one instance per line, each often longer than the sniff.
        return "openhands"
    for obj in _first_objects(stripped):
        fmt = format_of_record(obj)
        if fmt is not None:
            return fmt
    return None


def _reader(fmt: str) -> Reader:
    if fmt == "pi":
        return read_pi_jsonl
    if fmt == "claude-code":
        from ._claude_code import read_claude_code

        return read_claude_code
    if fmt == "codex":
        from ._codex import read_codex

        return read_codex
    if fmt == "swe-agent":
        from ._swe_agent import read_swe_agent

        return read_swe_agent
    if fmt == "openhands":
        from ._openhands import read_openhands

        return read_openhands
    if fmt == "inspect-ai":
        from ._inspect import read_inspect

        return read_inspect
    if fmt == "gemini-cli":
        from ._gemini_cli import read_gemini_cli

        return read_gemini_cli
    if fmt == "opencode":
        from ._opencode import read_opencode

        return read_opencode
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def read_session(
    path: str | os.PathLike[str], *, strict: bool = False, format: str | None = None
) -> Session:
    """Read one session file of any supported format into a `Session`.

    Args:
        path: The session file.
        strict: Raise `SessionReadError` (naming file and line) on the first problem;
            by default problems are recorded in `Session.errors` and every valid entry is kept.
        format: Force a format instead of detecting it (one of `FORMATS`).

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    # Checked here too, so a forced format still gets a clear error for a folder.
    check_session_path(path)
    fmt = format or detect_format(path)
    with _gc_paused():
        return _reader(fmt)(path, strict=strict)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file is read.

    Reading allocates one dict per JSON object and one entry per line, none of them in
    reference cycles; the collector's generation-0 passes over them cost up to a third of
    the read time (measured with perf/bench_read.py). Restored even on errors, and
    left alone when the caller had already turned it off.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


SESSION_SUFFIXES = (".jsonl", ".traj", ".json", ".eval")
# Files that sit beside sessions but are not sessions (generated facts, dataset manifests).
_SIDECAR_SUFFIXES = (".facts.json", "manifest.json")


def iter_session_files(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Session files under a folder, sorted.

    Left out: Claude Code subagent files whose session file is there and Codex rollouts of
    spawned or review agents whose parent's rollout is beside them (they are read with their
    parent session; an orphan is listed), the files Claude Code keeps beside transcripts
    (`claude_code_sidecar`), an opencode storage folder's message and part files (read with
    their session), and JSON documents that are whole and match no session format
    (`is_foreign_json`: package manifests, reports, other tools' outputs).
    """
    for path, _ in session_file_entries(root):
        yield path


def session_file_entries(root: str | os.PathLike[str]) -> Iterator[tuple[Path, os.DirEntry[str]]]:
    """`iter_session_files` with each file's `os.DirEntry` (its symlink bit and cached stat).

    One `os.scandir` walk, names sorted in each folder (the order of sorted paths), into
    real folders only (a symlink to a folder is not followed, as `Path.rglob` does not);
    what depends on the folder alone (the subagent and workflow rules, the opencode storage
    root) is judged once per folder, and a file is stat'ed only when its name could be a
    session's and it is a symlink.
    """
    base = Path(root)
    yield from _walk_folder(base, base, (), {})


def _walk_folder(
    base: Path, folder: Path, rel: tuple[str, ...], storage: dict[Path, Path | None]
) -> Iterator[tuple[Path, os.DirEntry[str]]]:
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except (PermissionError, FileNotFoundError, NotADirectoryError):
        return
    by_parent = "subagents" in rel or folder.name == "workflows"
    inside = _opencode_storage(folder / "_", storage)
    opencode_ok = inside is None or _is_opencode_session(folder / "_", inside)
    for entry in entries:
        name = entry.name
        if _is_real_dir(entry):
            yield from _walk_folder(base, folder / name, (*rel, name), storage)
            continue
        suffix = _suffix(name)
        if suffix not in SESSION_SUFFIXES and not is_opencode_db_name(name):
            continue
        if not _entry_is_file(entry) or name.endswith(_SIDECAR_SUFFIXES):
            continue
        path = folder / name
        if by_parent and _read_with_parent(path, base):
            continue
        if suffix == ".json" and is_foreign_json(path):
            continue
        if (is_rollout_name(name) and is_linked_child(path)) or not opencode_ok:
            continue
        yield path, entry


def _suffix(name: str) -> str:
    """`PurePath(name).suffix`, without the path object."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


_IGNORED_ERRNOS = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _entry_is_file(entry: os.DirEntry[str]) -> bool:
    """`Path.is_file` of the entry (symlinks followed; a broken link or a loop is not)."""
    try:
        return entry.is_file()
    except OSError as exc:
        if exc.errno in _IGNORED_ERRNOS:
            return False
        raise


def _read_with_parent(file: Path, base: Path) -> bool:
    """Whether `file` lies in a Claude Code session's `<sessionId>/subagents/` folder (below
    `base`) and is read with that session: a transcript whose session file is there, or one
    of the files beside the transcripts (`journal.jsonl`, `agent-*.meta.json`)."""
    parts = file.relative_to(base).parts[:-1]
    if "subagents" not in parts:
        return (
            file.parent.name == "workflows"
            and file.suffix == ".json"
            and (file.parent.parent.with_suffix(".jsonl").is_file())
        )
    if not file.name.startswith("agent-") or file.suffix != ".jsonl":
        return True
    folder = base.joinpath(*parts[: len(parts) - parts[::-1].index("subagents")])
    return folder.parent.with_suffix(".jsonl").is_file()


def is_foreign_json(path: str | os.PathLike[str]) -> bool:
    """Whether a `.json` file is a whole JSON document of no session format.

    Only a document that parses whole and shows none of the formats' shapes counts: a cut
    or broken file is kept, so its reader can say what is wrong with it.
    """
    _, head = read_bytes_checked(path, _SNIFF_BYTES)
    if _format_of_head(head, strong=True) is not None:
        return False
    _, data = read_bytes_checked(path) if len(head) == _SNIFF_BYTES else (None, head)
    try:
        value = orjson.loads(strip_bom(data))
    except orjson.JSONDecodeError:
        try:  # what orjson refuses but JSON.parse takes (lone surrogates, huge numbers)
            value, _ = loads_js(strip_bom(data).decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return False
    return not _session_shaped(value)


def _session_shaped(value: Any) -> bool:
    """A parsed JSON document with a session format's top-level shape."""
    if isinstance(value, list):
        return any(
            isinstance(item, dict) and ({"action", "observation", "role", "parts"} & item.keys())
            for item in value[:50]
        )
    if not isinstance(value, dict):
        return False
    keys = value.keys()
    return bool({"history", "trajectory", "instance_id", "instruction"} & keys) or (
        format_of_record(value) is not None
    )


def _opencode_storage(file: Path, cache: dict[Path, Path | None]) -> Path | None:
    """The opencode storage root (a folder holding `session/` and `message/`) that `file`
    lies up to three folders under, or None."""
    for folder in list(file.parents)[:3]:
        if folder not in cache:
            cache[folder] = (
                folder if (folder / "session").is_dir() and (folder / "message").is_dir() else None
            )
        if cache[folder] is not None:
            return cache[folder]
    return None


def _is_opencode_session(file: Path, storage: Path) -> bool:
    parts = file.relative_to(storage).parts
    return len(parts) == 3 and parts[0] == "session"


def iter_sessions(root: str | os.PathLike[str], *, strict: bool = False) -> Iterator[Session]:
    """Read every session file under a folder (or one file), one `Session` at a time.

    Files that hold several sessions (OpenHands evaluation output) yield each of them. In
    lenient mode a file that cannot be read at all does not stop the others: it yields an
    empty session whose `errors` say why (see `unreadable_session`).

    Raises:
        SessionReadError: `root` does not exist, or (strict) a file has a problem.
    """
    base = Path(root)
    if not base.exists():
        raise SessionReadError(os.fspath(base), None, "not-found", "no such file or folder")
    files: Iterable[Path] = [base] if base.is_file() else iter_session_files(base)
    for file in files:
        if strict:
            yield from _file_sessions(file, strict=True)
            continue
        try:
            # Listed first, so a failure half-way through a file yields nothing twice.
            sessions = list(_file_sessions(file, strict=False))
        except SessionReadError as err:
            sessions = [unreadable_session(file, err.problems)]
        except Exception as exc:  # lenient: one bad file must not lose the rest
            problem = ReadProblem(
                os.fspath(file), None, "reader-error", f"{type(exc).__name__}: {exc}"
            )
            sessions = [unreadable_session(file, (problem,))]
        yield from sessions


def _file_sessions(file: Path, *, strict: bool) -> Iterator[Session]:
    fmt = detect_format(file)
    if fmt == "openhands":
        from ._openhands import iter_openhands

        yield from iter_openhands(file, strict=strict)
    elif fmt == "opencode" and is_opencode_db_name(file.name):
        from ._opencode_db import iter_opencode_db

        yield from iter_opencode_db(file, strict=strict)
    elif fmt == "inspect-ai":
        from ._inspect import iter_inspect

        yield from iter_inspect(file, strict=strict)
    else:
        yield read_session(file, strict=strict, format=fmt)


def unreadable_session(path: str | os.PathLike[str], problems: Iterable[ReadProblem]) -> Session:
    """An empty session standing for a file that could not be read, carrying why."""
    p = os.fspath(path)
    header = {"type": "session", "version": 3, "id": Path(p).stem}
    return Session(header, (), errors=tuple(problems), source_path=p, source_format="none")


def read_sessions(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, strict: bool = False
) -> list[Session]:
    """Read many sessions: a folder, one file, or a list of files and folders.

    In lenient mode a listed path that does not exist gives an empty session carrying a
    `not-found` problem, so the others are still read.
    """
    if isinstance(paths, (str, os.PathLike)):
        return list(iter_sessions(paths, strict=strict))
    out: list[Session] = []
    for p in paths:
        try:
            out.extend(iter_sessions(p, strict=strict))
        except SessionReadError as err:
            if strict:
                raise
            out.append(unreadable_session(p, err.problems))
    return out
