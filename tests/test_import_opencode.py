"""opencode reader: the storage-folder fixture (tests/data/opencode, PROVENANCE.md) against
counts and usage taken from the raw JSON files by this test's own parser, detection and
folder reads, bad input (truncated file, unknown part type, missing part folder), convert.

The raw parser walks the folder as opencode lays it out (`@opencode-ai/sdk` 1.18.33 types):
messages of a session in `message/<sessionID>/`, parts of a message in `part/<messageID>/`;
one model call per `step-finish` part (or per assistant message without steps), a call per
`tool` part, a result per tool whose state is `completed` or `error`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.cli import main
from musepi_lab.formats._opencode import read_opencode
from musepi_lab.formats._registry import (
    FORMATS,
    detect_format,
    iter_session_files,
    iter_sessions,
    read_session,
)
from musepi_lab.session._errors import SessionReadError

STORAGE = Path(__file__).parent / "data" / "opencode" / "storage"
SESSION = next((STORAGE / "session").glob("*/*.json"))
# Written by opencode 1.18.33 itself, run against a loopback model (its PROVENANCE.md).
RUN_STORAGE = Path(__file__).parent / "data" / "opencode-run" / "storage"
RUN_DB = Path(__file__).parent / "data" / "opencode-run" / "db" / "opencode.db"
BOTH = pytest.mark.parametrize("where", [STORAGE, RUN_STORAGE], ids=["by-hand", "real-run"])


def session_file(storage: Path) -> Path:
    return next((storage / "session").glob("*/*.json"))


# -- the independent parser ------------------------------------------------------------------
def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def raw_messages(storage: Path, session_id: str) -> list[tuple[dict[str, Any], list[dict]]]:
    out = []
    for file in sorted((storage / "message" / session_id).glob("*.json")):
        info = load(file)
        parts = [load(p) for p in sorted((storage / "part" / info["id"]).glob("*.json"))]
        out.append((info, parts))
    return out


def raw_db_messages(db: Path, session_id: str) -> list[tuple[dict[str, Any], list[dict]]]:
    """The same from opencode's database: rows' `data` with their ids put back."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = []
    rows = con.execute(
        "select id, data from message where session_id = ? order by id", (session_id,)
    )
    for mid, data in rows.fetchall():
        parts = con.execute("select id, data from part where message_id = ? order by id", (mid,))
        out.append(({"id": mid, **json.loads(data)}, [json.loads(d) for _, d in parts.fetchall()]))
    con.close()
    return out


def raw_counts(storage: Path, session_id: str) -> tuple[Counter, Counter]:
    return count_raw(raw_messages(storage, session_id))


def count_raw(messages: list[tuple[dict[str, Any], list[dict]]]) -> tuple[Counter, Counter]:
    counts: Counter = Counter()
    tokens: Counter = Counter()
    for info, parts in messages:
        finishes = [p for p in parts if p["type"] == "step-finish"]
        if info["role"] == "user":
            counts["messages"] += 1
        else:
            counts["messages"] += max(len(finishes), 1)
        for p in parts:
            if p["type"] == "tool":
                counts["calls"] += 1
                counts["results"] += p["state"]["status"] in ("completed", "error")
                counts["errors"] += p["state"]["status"] == "error"
        for t, cost in [(f["tokens"], f["cost"]) for f in finishes] or (
            [(info["tokens"], info["cost"])] if info["role"] == "assistant" else []
        ):
            tokens["input"] += t["input"]
            tokens["output"] += t["output"] + t["reasoning"]
            tokens["cacheRead"] += t["cache"]["read"]
            tokens["cacheWrite"] += t["cache"]["write"]
            tokens["cost"] += round(cost * 1e6)
    return counts, tokens


def session_counts(session) -> tuple[Counter, Counter]:
    counts: Counter = Counter()
    tokens: Counter = Counter()
    for e in session.entries:
        if e.type != "message":
            continue
        if e.role in ("user", "assistant"):
            counts["messages"] += 1
        if e.role == "toolResult":
            counts["results"] += 1
            counts["errors"] += e.message["isError"]
        if e.role == "assistant":
            counts["calls"] += sum(1 for b in e.message["content"] if b["type"] == "toolCall")
            u = e.message["usage"]
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                tokens[key] += u[key]
            tokens["cost"] += round(u["cost"]["total"] * 1e6)
    return counts, tokens


# -- the fixture -----------------------------------------------------------------------------
@BOTH
def test_counts_and_usage_match_the_raw_folder(where: Path) -> None:
    info = load(session_file(where))
    session = read_session(session_file(where), strict=True)
    expected = raw_counts(where, info["id"])
    assert sum(expected[0].values()) > 0
    assert session_counts(session) == expected
    assert session.id == info["id"]
    assert session.header["sourceFormat"] == "opencode"
    assert session.header["sourceVersion"] == info["version"]
    assert session.header["cwd"] == info["directory"]


@BOTH
def test_assistant_messages_carry_model_provider_and_step_usage(where: Path) -> None:
    info = load(session_file(where))
    by_source: dict[str, list] = {}
    for e in read_session(session_file(where)).entries:
        if e.role == "assistant":
            by_source.setdefault(e.source_id, []).append(e.message)
    for raw, parts in raw_messages(where, info["id"]):
        if raw["role"] != "assistant":
            continue
        for msg in by_source[raw["id"]]:
            assert (msg["model"], msg["provider"]) == (raw["modelID"], raw["providerID"])
        totals = [p["tokens"].get("total") for p in parts if p["type"] == "step-finish"]
        for msg, total in zip(by_source[raw["id"]], totals, strict=False):
            if total is not None:
                assert msg["usage"]["totalTokens"] == total


@BOTH
def test_tool_results_join_their_calls_and_unfinished_tools_have_none(where: Path) -> None:
    info = load(session_file(where))
    tools = [
        p for _, parts in raw_messages(where, info["id"]) for p in parts if p["type"] == "tool"
    ]
    session = read_session(session_file(where))
    results = {
        e.message["toolCallId"]: e.message for e in session.entries if e.role == "toolResult"
    }
    for tool in tools:
        state = tool["state"]
        if state["status"] == "completed":
            assert results[tool["callID"]]["content"][0]["text"] == state["output"]
        elif state["status"] == "error":
            assert results[tool["callID"]]["content"][0]["text"] == state["error"]
            assert results[tool["callID"]]["isError"]
        else:
            assert tool["callID"] not in results


def test_aborted_message_says_so() -> None:
    info = load(SESSION)
    aborted = [m for m, _ in raw_messages(STORAGE, info["id"]) if m.get("error")]
    assert aborted  # PROVENANCE: the last assistant message was aborted
    last = {e.source_id: e.message for e in read_session(SESSION).entries if e.role == "assistant"}
    for raw in aborted:
        assert last[raw["id"]]["errorMessage"] == raw["error"]["data"]["message"]
        assert last[raw["id"]]["stopReason"] == "aborted"


def test_real_run_usage_adds_up_to_the_prompts_the_model_served() -> None:
    # The loopback model of the run (opencode-run/PROVENANCE.md) answered the two model
    # calls with prompt_tokens 1200 and 1300, of them cached_tokens 1000 and 1200, and
    # completion_tokens 30 and 12; opencode records input without the cached tokens.
    session = read_session(session_file(RUN_STORAGE), strict=True)
    usages = [e.message["usage"] for e in session.entries if e.role == "assistant"]
    assert [u["input"] + u["cacheRead"] for u in usages] == [1200, 1300]
    assert [u["cacheRead"] for u in usages] == [1000, 1200]
    assert [u["output"] for u in usages] == [30, 12]
    assert [u["totalTokens"] for u in usages] == [1230, 1312]


def test_parts_without_content_ride_along() -> None:
    info = load(SESSION)
    raw = Counter(
        p["type"]
        for _, parts in raw_messages(STORAGE, info["id"])
        for p in parts
        if p["type"] not in ("text", "reasoning", "tool", "step-finish")
        and not (p["type"] == "file" and p["messageID"].startswith("msg_a0e1f200"))
    )
    carried = Counter(
        p["type"] for e in read_session(SESSION).entries for p in e.get("sourceParts") or ()
    )
    assert carried == raw


# -- detection and folders -------------------------------------------------------------------
def test_folder_read_finds_the_session_and_no_message_or_part_file() -> None:
    assert "opencode" in FORMATS
    assert list(iter_session_files(STORAGE.parent)) == [SESSION]
    assert detect_format(SESSION) == "opencode"
    sessions = list(iter_sessions(STORAGE))
    assert [s.id for s in sessions] == [load(SESSION)["id"]]


def test_reading_a_message_file_points_to_the_session_file() -> None:
    message = next((STORAGE / "message").glob("*/*.json"))
    assert detect_format(message) == "opencode"
    session = read_session(message)
    assert [p.kind for p in session.errors] == ["wrong-file"]
    assert session.entries == ()
    with pytest.raises(SessionReadError, match="session file"):
        read_session(message, strict=True)


# -- bad input -------------------------------------------------------------------------------
@pytest.fixture
def storage(tmp_path: Path) -> Path:
    copy = tmp_path / "storage"
    shutil.copytree(STORAGE, copy)
    return copy


def _session_file(storage: Path) -> Path:
    return next((storage / "session").glob("*/*.json"))


def test_truncated_part_file_is_named_with_its_line(storage: Path) -> None:
    part = sorted((storage / "part").glob("msg_a0e1f210*/*.json"))[3]  # the read tool
    data = part.read_bytes()
    part.write_bytes(data[: len(data) - 40])
    session = read_session(_session_file(storage))
    (problem,) = session.errors
    assert (problem.path, problem.kind) == (str(part), "truncated-json")
    assert problem.line == data[: len(data) - 40].count(b"\n") + 1
    counts, _ = session_counts(session)
    full, _ = raw_counts(STORAGE, load(SESSION)["id"])
    assert counts["calls"] == full["calls"] - 1  # only that tool is lost, and said to be
    with pytest.raises(SessionReadError, match=part.name):
        read_session(_session_file(storage), strict=True)


def test_unknown_part_type_is_carried_and_named(storage: Path) -> None:
    folder = next((storage / "part").glob("msg_a0e1f300*"))
    odd = {"id": "prt_zz", "sessionID": "s", "messageID": folder.name, "type": "hologram", "x": 1}
    (folder / "prt_zz.json").write_text(json.dumps(odd, indent=2))
    session = read_session(_session_file(storage))
    assert [(p.kind, Path(p.path).name) for p in session.errors] == [
        ("unknown-part", "prt_zz.json")
    ]
    carried = [p for e in session.entries for p in e.get("sourceParts") or ()]
    assert odd in carried
    with pytest.raises(SessionReadError):
        read_session(_session_file(storage), strict=True)


def test_message_whose_part_folder_is_missing_is_kept_and_named(storage: Path) -> None:
    folder = next((storage / "part").glob("msg_a0e1f300*"))
    shutil.rmtree(folder)
    session = read_session(_session_file(storage))
    assert [p.kind for p in session.errors] == ["missing-parts"]
    assert folder.name in session.errors[0].path
    counts, _ = session_counts(session)
    assert counts["messages"] == raw_counts(STORAGE, load(SESSION)["id"])[0]["messages"]


def test_session_file_outside_a_storage_folder_says_so(tmp_path: Path) -> None:
    alone = tmp_path / "ses_x.json"
    shutil.copy(SESSION, alone)
    session = read_opencode(alone)
    assert [p.kind for p in session.errors] == ["missing-messages"]
    assert session.id == load(SESSION)["id"]


# -- convert and round trip ------------------------------------------------------------------
@BOTH
def test_convert_round_trip_keeps_messages_calls_and_usage(where: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(session_file(where)), str(out)]) == 0
    back = read_session(out, strict=True)
    original = read_session(session_file(where))
    assert (
        session_counts(back)
        == session_counts(original)
        == raw_counts(where, load(session_file(where))["id"])
    )
    assert [e.message for e in back.entries] == [e.message for e in original.entries]
    assert back.header["sourceFormat"] == "opencode"


def test_convert_of_a_storage_folder_writes_its_sessions_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["convert", str(STORAGE), str(out)]) == 0
    written = sorted(out.rglob("*.jsonl")) if out.is_dir() else [out]
    assert len(written) == 1  # one session: convert writes it to the name given
    assert read_session(written[0]).id == load(SESSION)["id"]


# -- opencode's database (what 1.18 writes) --------------------------------------------------
def _db_session_ids(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ids = [r[0] for r in con.execute("select id from session order by time_created, id")]
    con.close()
    return ids


def test_database_counts_and_usage_match_its_rows() -> None:
    before = RUN_DB.read_bytes()
    (sid,) = _db_session_ids(RUN_DB)
    session = read_session(RUN_DB, strict=True)
    assert detect_format(RUN_DB) == "opencode"
    assert session.id == sid
    assert session_counts(session) == count_raw(raw_db_messages(RUN_DB, sid))
    # The same run exported into the storage layout reads the same.
    folder = read_session(session_file(RUN_STORAGE), strict=True)
    assert [e.message for e in session.entries] == [e.message for e in folder.entries]
    assert session.header == folder.header
    assert RUN_DB.read_bytes() == before  # opened read-only


def test_database_with_two_sessions_yields_both(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(RUN_DB, db)
    con = sqlite3.connect(db)
    con.execute("create temp table t as select * from session")
    con.execute("update t set id = 'ses_zzcopy', time_created = time_created + 1")
    con.execute("insert into session select * from t")
    con.commit()
    con.close()
    ids = _db_session_ids(db)
    assert [s.id for s in iter_sessions(db)] == ids
    assert len(list(iter_session_files(tmp_path))) == 1
    first = read_session(db)
    assert [p.kind for p in first.errors] == ["multiple-sessions"]
    with pytest.raises(SessionReadError, match="2 sessions"):
        read_session(db, strict=True)


def test_bad_part_row_is_named_and_the_rest_kept(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(RUN_DB, db)
    con = sqlite3.connect(db)
    (pid,) = con.execute("select id from part where data like '%\"tool\"%' limit 1").fetchone()
    con.execute('update part set data = \'{"type": "tool", \' where id = ?', (pid,))
    con.commit()
    con.close()
    session = read_session(db)
    assert [(p.kind, p.path) for p in session.errors] == [("malformed-json", str(db))]
    assert pid in session.errors[0].message
    counts, _ = session_counts(session)
    assert counts["calls"] == 0 and counts["messages"] == 3  # only that part is lost


def test_other_sqlite_database_says_so(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    con = sqlite3.connect(db)
    con.execute("create table notes (x text)")
    con.commit()
    con.close()
    session = read_session(db)
    assert [p.kind for p in session.errors] == ["not-an-opencode-database"]
    with pytest.raises(SessionReadError):
        read_session(db, strict=True)


def test_convert_of_the_database(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(RUN_DB), str(out)]) == 0
    back = read_session(out, strict=True)
    assert session_counts(back) == count_raw(raw_db_messages(RUN_DB, _db_session_ids(RUN_DB)[0]))
