"""opencode's SQLite database → `Session`s.

opencode 1.18.33 (npm `opencode-linux-x64` 1.18.33, seen running) keeps its sessions in
`~/.local/share/opencode/opencode.db` (`opencode-<channel>.db` for other release channels)
instead of the JSON storage folder: tables `session` (one column per field: `id`,
`project_id`, `parent_id`, `slug`, `directory`, `title`, `version`, `time_created`,
`time_updated`, ...), `message` (`id`, `session_id`, `data`) and `part` (`id`,
`message_id`, `session_id`, `data`), where `data` is the JSON of the message or part
without its ids. Each row becomes the record of the storage folder (ids put back) and is
mapped as `_opencode` maps those files; one database holds many sessions, read one at a
time, in creation order.

Reading changes nothing beside the database. A database in rollback-journal mode is opened
read-only, which creates no file. One in WAL mode (opencode's own) cannot be: a reader of a
WAL database creates its `-shm` and `-wal` files when they are missing and writes its read
marks into `-shm` while a writer holds it, and an immutable open would miss what is still in
the WAL. So its `-wal` (first) and then the database are copied into a temporary folder,
and the copy is read: WAL frames carry checksums, so a copy taken while opencode writes
ends at its last whole transaction.

Problems name the database and the table, and the row (`message <id>`, `part <id>`); a file
that is not an opencode database is a `not-an-opencode-database` problem; a column name or a
text value that is not UTF-8 is `invalid-utf8` (the text read with U+FFFD in place of the
bad bytes; a column we do not read is only reported).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ._io import check_session_path
from ._opencode_build import SOURCE_FORMAT, Builder, Files, finish, session_header
from ._records import empty_session

_TABLES = ("session", "message", "part")
_SESSION_COLUMNS = (
    "id, project_id, parent_id, slug, directory, title, version, time_created, time_updated"
)
_WAL_VERSION = 2  # the header's read and write versions (bytes 18, 19) in WAL mode


def _in_wal_mode(path: str) -> bool:
    with open(path, "rb") as fh:
        header = fh.read(20)
    return len(header) == 20 and _WAL_VERSION in (header[18], header[19])


@contextmanager
def _connected(path: str) -> Iterator[sqlite3.Connection]:
    """A connection that reads the database and leaves its folder as it was (module
    docstring): read-only in rollback mode, a temporary copy in WAL mode."""
    if not _in_wal_mode(path):
        con = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        try:
            yield con
        finally:
            con.close()
        return
    with tempfile.TemporaryDirectory(prefix="musepi-lab-opencode-") as folder:
        copy = os.path.join(folder, "opencode.db")
        if os.path.exists(path + "-wal"):  # first: frames the database lacks stay in it
            shutil.copyfile(path + "-wal", copy + "-wal")
        shutil.copyfile(path, copy)
        con = sqlite3.connect(copy)
        try:
            yield con
        finally:
            con.close()


class _Text:
    """A text factory that never raises: text that is not UTF-8 is read with U+FFFD in
    place of the bad bytes, and counted, so the reader can name the row it is in."""

    def __init__(self) -> None:
        self.bad = 0

    def __call__(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.bad += 1
            return raw.decode("utf-8", "replace")


def _fetch(
    con: sqlite3.Connection,
    files: Files,
    p: str,
    table: str,
    sql: str,
    params: tuple[Any, ...] = (),
) -> list[sqlite3.Row]:
    """The rows of a query on `table`, each row holding text that is not UTF-8 named as an
    `invalid-utf8` problem (rows are fetched one at a time to tell which)."""
    text = con.text_factory
    assert isinstance(text, _Text)
    cursor = con.execute(sql, params)
    rows: list[sqlite3.Row] = []
    while True:
        before = text.bad
        row = cursor.fetchone()
        if row is None:
            return rows
        if text.bad != before:
            what = f"table {table}: {table} {row['id']}: text that is not UTF-8"
            files.add(p, None, "invalid-utf8", f"{what}, read with U+FFFD for the bad bytes")
        rows.append(row)


def _column_name_problems(con: sqlite3.Connection, files: Files, p: str) -> None:
    """Column names of the opencode tables that are not UTF-8 (Python's sqlite3 cannot
    decode them; only the columns named in the queries are read)."""
    for table in _TABLES:
        names = con.execute("select cast(name as blob) from pragma_table_info(?)", (table,))
        for (raw,) in names.fetchall():
            try:
                bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                what = f"table {table}: a column name that is not UTF-8 ({bytes(raw)!r})"
                files.add(p, None, "invalid-utf8", f"{what}; that column is not read")


def _data(files: Files, path: str, what: str, raw: Any) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError) as exc:
        files.add(path, None, "malformed-json", f"{what}: data is not valid JSON ({exc}); skipped")
        return None
    if not isinstance(value, dict):
        files.add(path, None, "not-an-object", f"{what}: data is not an object; skipped")
        return None
    return value


def _info(row: sqlite3.Row) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": row["id"],
        "slug": row["slug"],
        "version": row["version"],
        "projectID": row["project_id"],
        "directory": row["directory"],
        "title": row["title"],
        "time": {"created": row["time_created"], "updated": row["time_updated"]},
    }
    if row["parent_id"]:
        info["parentID"] = row["parent_id"]
    return info


def _session(
    con: sqlite3.Connection, p: str, row: sqlite3.Row, strict: bool, problems: Files
) -> Session:
    files = Files()
    files.problems.extend(problems.problems)  # the database's and its session row's
    builder = Builder(files)
    sid = row["id"]
    where = Path(p)
    sql = "select id, data from message where session_id = ? order by id"
    messages = _fetch(con, files, p, "message", sql, (sid,))
    for msg_row in messages:
        data = _data(files, p, f"message {msg_row['id']}", msg_row["data"])
        if data is None:
            continue
        msg = {"id": msg_row["id"], "sessionID": sid, **data}
        parts: list[tuple[Path, Mapping[str, Any]]] = []
        sql = "select id, data from part where message_id = ? order by id"
        for part_row in _fetch(con, files, p, "part", sql, (msg_row["id"],)):
            part = _data(files, p, f"part {part_row['id']}", part_row["data"])
            if part is not None:
                parts.append((where, {"id": part_row["id"], "sessionID": sid,
                                      "messageID": msg_row["id"], **part}))  # fmt: skip
        builder.message(where, msg, parts)
    return builder.session(p, session_header(p, _info(row)), strict)


def iter_opencode_db(path: str | os.PathLike[str], *, strict: bool = False) -> Iterator[Session]:
    """Read every session of an opencode database, one at a time.

    Args:
        path: An `opencode.db`.
        strict: Raise `SessionReadError` for a session's first problem instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p = check_session_path(path)
    try:
        with _connected(p) as con:
            yield from _sessions_of(con, p, strict)
    except (sqlite3.Error, OSError) as exc:
        files = Files()
        files.add(p, None, "not-an-opencode-database", f"cannot open the database: {exc}")
        yield empty_session(p, finish(files, strict), SOURCE_FORMAT)


def _sessions_of(con: sqlite3.Connection, p: str, strict: bool) -> Iterator[Session]:
    files = Files()
    con.row_factory = sqlite3.Row
    con.text_factory = _Text()
    try:
        _column_name_problems(con, files, p)
        sql = f"select {_SESSION_COLUMNS} from session order by time_created, id"
        rows = _fetch(con, files, p, "session", sql)
        con.execute("select id, session_id, data from message limit 0")
        con.execute("select id, message_id, data from part limit 0")
    except sqlite3.Error as exc:
        files.add(p, None, "not-an-opencode-database", f"no opencode session tables: {exc}")
        yield empty_session(p, finish(files, strict), SOURCE_FORMAT)
        return
    if not rows:
        files.add(p, None, "empty-file", "the database holds no session")
        yield empty_session(p, finish(files, strict), SOURCE_FORMAT)
        return
    for row in rows:
        try:
            session = _session(con, p, row, strict, files)
        except sqlite3.Error as exc:  # a damaged page met half-way
            files.add(p, None, "unreadable", f"session {row['id']}: {exc}")
            session = empty_session(p, finish(files, strict), SOURCE_FORMAT, id=str(row["id"]))
        files = Files()  # the database's problems go with its first session
        yield session


def read_opencode_db(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """The first session of an opencode database; a database holding several records a
    `multiple-sessions` problem (strict: raises it): use `iter_sessions` for them all.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    sessions = list(iter_opencode_db(path, strict=strict))
    first = sessions[0]
    if len(sessions) == 1:
        return first
    problem = ReadProblem(
        os.fspath(path),
        None,
        "multiple-sessions",
        f"database holds {len(sessions)} sessions; this is the first — "
        "use iter_sessions or read_sessions to read them all",
    )
    if strict:
        raise SessionReadError.from_problem(problem)
    return Session(
        first.header,
        first.entries,
        errors=(problem, *first.errors),
        source_path=first.source_path,
        source_format=SOURCE_FORMAT,
    )
