"""opencode's database as found on a machine (issue 26, items 8 and 10): names and text that
are not UTF-8, and a database in WAL mode, opencode's own journal mode, while opencode (a
writer in another process) holds it open.

Reading must raise nothing raw: a column name or a text value that is not UTF-8 is a
problem of that database (lenient) naming the file and the table, or a `SessionReadError`
naming both (strict); everything else is still read. Reading a WAL database changes nothing
in its folder: no `-wal` or `-shm` file created, none changed, while the writer's committed
rows (still in its WAL) are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from musepi_lab.formats._registry import iter_sessions, read_session
from musepi_lab.session._errors import SessionReadError

RUN_DB = Path(__file__).parent / "data" / "opencode-run" / "db" / "opencode.db"


def copy_db(tmp_path: Path) -> Path:
    folder = tmp_path / "opencode"
    folder.mkdir()
    return Path(shutil.copy(RUN_DB, folder / "opencode.db"))


def raw_sql_edit(db: Path, table: str, old: bytes, new: bytes) -> None:
    """Rewrite a table's CREATE statement as bytes (the way a name that is not UTF-8 gets
    into a schema; SQLite stores what it is given)."""
    con = sqlite3.connect(db)
    con.execute("pragma writable_schema=1")
    (sql,) = con.execute("select sql from sqlite_master where name = ?", (table,)).fetchone()
    assert old in sql.encode()
    edited = sql.encode().replace(old, new)
    con.execute("update sqlite_master set sql = cast(? as text) where name = ?", (edited, table))
    con.commit()
    con.close()


def add_column(db: Path, table: str, name: str) -> None:
    con = sqlite3.connect(db)
    con.execute(f"alter table {table} add column {name} text")
    con.commit()
    con.close()


def entries(session) -> list[dict]:
    return [dict(e.record) for e in session.entries]


# -- item 8: not UTF-8 ---------------------------------------------------------------------
@pytest.mark.parametrize("table", ["session", "message", "part"])
def test_a_column_name_that_is_not_utf8_is_a_problem_naming_file_and_table(
    tmp_path: Path, table: str
) -> None:
    db = copy_db(tmp_path)
    add_column(db, table, "zzextra")
    raw_sql_edit(db, table, b"zzextra", b"zz\xffextra")
    good = read_session(RUN_DB, strict=True)
    session = read_session(db)
    assert entries(session) == entries(good)  # nothing else lost
    (problem,) = session.errors
    assert problem.path == str(db) and problem.kind == "invalid-utf8"
    assert f"table {table}" in problem.message
    with pytest.raises(SessionReadError) as raised:
        read_session(db, strict=True)
    assert str(db) in str(raised.value) and f"table {table}" in str(raised.value)


def test_text_that_is_not_utf8_is_a_problem_naming_the_row(tmp_path: Path) -> None:
    db = copy_db(tmp_path)
    con = sqlite3.connect(db)
    (pid, data) = con.execute(
        "select id, data from part where data like '%\"text\"%' order by id limit 1"
    ).fetchone()
    bad = data.encode().replace(b'"text":"', b'"text":"\xff\xfe', 1)
    assert bad != data.encode()
    con.execute("update part set data = cast(? as text) where id = ?", (bad, pid))
    con.commit()
    con.close()
    session = read_session(db)
    (problem,) = session.errors
    assert problem.path == str(db) and problem.kind == "invalid-utf8"
    assert "table part" in problem.message and pid in problem.message
    texts = [b.get("text", "") for e in session.entries for b in e.message["content"]]
    assert any(t.startswith("\ufffd\ufffd") for t in texts)  # kept, the bad bytes replaced
    assert len(session.entries) == len(read_session(RUN_DB).entries)
    with pytest.raises(SessionReadError, match="table part"):
        read_session(db, strict=True)


# -- item 10: WAL mode, nothing beside the database changes -------------------------------
def folder_state(folder: Path) -> dict[str, tuple[int, int, str]]:
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
    }


WRITER = textwrap.dedent(
    """
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("pragma journal_mode=wal")
    con.execute("pragma wal_autocheckpoint=0")  # what it writes stays in the WAL
    con.execute("create temp table t as select * from session")
    con.execute("update t set id = 'ses_zzwriter', title = 'written by the writer'")
    con.execute("insert into session select * from t")
    print("written", flush=True)
    sys.stdin.readline()  # holds the database (and its WAL) open until told
    con.close()
    print("closed", flush=True)
    """
)


def test_reading_a_wal_database_with_a_writer_holding_it_changes_nothing_beside_it(
    tmp_path: Path,
) -> None:
    db = copy_db(tmp_path)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "written"
        assert (db.parent / "opencode.db-wal").stat().st_size > 0
        before = folder_state(db.parent)
        sessions = list(iter_sessions(db))
        assert folder_state(db.parent) == before
        # The writer's session, committed but only in the WAL, is read too.
        assert sorted(s.id for s in sessions) == sorted([read_session(RUN_DB).id, "ses_zzwriter"])
        assert {s.header.get("title") for s in sessions} >= {"written by the writer"}
        writer.stdin.write("close\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "closed"
    finally:
        writer.kill()
        writer.wait()


def test_reading_a_wal_database_alone_creates_no_file_beside_it(tmp_path: Path) -> None:
    db = copy_db(tmp_path)
    con = sqlite3.connect(db)
    assert con.execute("pragma journal_mode=wal").fetchone() == ("wal",)
    con.close()  # the last connection checkpoints and removes -wal and -shm
    assert sorted(os.listdir(db.parent)) == ["opencode.db"]
    assert db.read_bytes()[18:20] == b"\x02\x02"  # the header says WAL
    before = folder_state(db.parent)
    session = read_session(db, strict=True)
    assert folder_state(db.parent) == before
    assert entries(session) == entries(read_session(RUN_DB, strict=True))
    assert json.dumps(session.header, default=str)
