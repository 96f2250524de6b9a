"""opencode's SQLite database → `Session`s.

opencode 1.18.33 (npm `opencode-linux-x64` 1.18.33, seen running) keeps its sessions in
`~/.local/share/opencode/opencode.db` (`opencode-<channel>.db` for other release channels)
instead of the JSON storage folder: tables `session` (one column per field: `id`,
`project_id`, `parent_id`, `slug`, `directory`, `title`, `version`, `time_created`,
`time_updated`, ...), `message` (`id`, `session_id`, `data`) and `part` (`id`,
`message_id`, `session_id`, `data`), where `data` is the JSON of the message or part
without its ids. Each row becomes the record of the storage folder (ids put back) and is
mapped as `_opencode` maps those files; one database holds many sessions, read one at a
time, in creation order. The database is opened read-only.

Problems name the database and the row (`message <id>`, `part <id>`); a file that is not
an opencode database is a `not-an-opencode-database` problem.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ..session._errors import ReadProblem, SessionReadError
from ..session._session import Session
from ._io import check_session_path
from ._opencode import SOURCE_FORMAT, Builder, Files, finish, session_header
from ._records import empty_session


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)


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


def _session(con: sqlite3.Connection, p: str, row: sqlite3.Row, strict: bool) -> Session:
    files = Files()
    builder = Builder(files)
    sid = row["id"]
    where = Path(p)
    messages = con.execute(
        "select id, data from message where session_id = ? order by id", (sid,)
    ).fetchall()
    for msg_row in messages:
        data = _data(files, p, f"message {msg_row['id']}", msg_row["data"])
        if data is None:
            continue
        msg = {"id": msg_row["id"], "sessionID": sid, **data}
        parts: list[tuple[Path, Mapping[str, Any]]] = []
        for part_row in con.execute(
            "select id, data from part where message_id = ? order by id", (msg_row["id"],)
        ):
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
    files = Files()
    try:
        con = _connect(p)
    except sqlite3.Error as exc:
        files.add(p, None, "not-an-opencode-database", f"cannot open the database: {exc}")
        yield empty_session(p, finish(files, strict), SOURCE_FORMAT)
        return
    try:
        con.row_factory = sqlite3.Row
        try:
            rows = con.execute("select * from session order by time_created, id").fetchall()
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
                session = _session(con, p, row, strict)
            except sqlite3.Error as exc:  # a damaged page met half-way
                files = Files()
                files.add(p, None, "unreadable", f"session {row['id']}: {exc}")
                session = empty_session(p, finish(files, strict), SOURCE_FORMAT, id=str(row["id"]))
            yield session
    finally:
        con.close()


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
