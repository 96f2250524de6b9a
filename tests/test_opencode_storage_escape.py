"""opencode storage ids and links that point out of the storage folder (issue 26, item 1).

The storage reader builds `<storage>/message/<session id>` and `<storage>/part/<message id>`
from ids written inside the files, and opens whatever the folders list. Each test builds a
hostile storage folder in `tmp_path` beside a folder of files that look like opencode
messages and parts and carry a marker string; nothing of them may reach the session, its
problems' wording aside, or `convert`'s output. An id holding a path separator, `..` or a
NUL is a problem of its entry (`unsafe-id`); a file or folder that resolves outside the
storage root (a symlink) is a problem of that entry (`outside-storage`); a FIFO is not read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.cli import main
from musepi_lab.formats._registry import iter_sessions, read_session
from musepi_lab.session._errors import SessionReadError

SECRET = "SECRET-read-from-outside-the-storage"
SESSION_ID = "ses_ok"


def write(path: Path, value: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def outside_folder(folder: Path) -> Path:
    """Files shaped like an opencode message and parts, each carrying SECRET: a message of
    an unknown role (kept as custom data), a text part and a part of an unknown type (carried
    as `sourceParts`)."""
    write(folder / "msg_zz.json", {"id": "msg_zz", "role": "robot", "note": SECRET})
    write(folder / "prt_za.json", {"id": "prt_za", "type": "text", "text": SECRET})
    write(folder / "prt_zb.json", {"id": "prt_zb", "type": "hologram", "data": SECRET})
    return folder


def make_storage(tmp_path: Path, session_id: str = SESSION_ID) -> Path:
    """`<tmp>/home/u/storage` with one session file naming `session_id`."""
    root = tmp_path / "home" / "u" / "storage"
    info = {
        "id": session_id,
        "projectID": "proj",
        "directory": "/w",
        "title": "hostile",
        "version": "1.18.33",
        "time": {"created": 1764756000000, "updated": 1764756060000},
    }
    write(root / "session" / "proj" / "ses_file.json", info)
    return root


def add_message(root: Path, mid: str, text: str, file_name: str | None = None) -> Path:
    """A user message `mid` of the session with one text part."""
    msg = {"id": mid, "sessionID": SESSION_ID, "role": "user", "time": {"created": 1764756001000}}
    name = file_name or f"{mid}.json"
    path = write(root / "message" / SESSION_ID / name, msg)
    if "/" not in mid and "\x00" not in mid and ".." not in mid:
        part = {"id": f"prt_{mid}", "messageID": mid, "type": "text", "text": text}
        write(root / "part" / mid / f"prt_{mid}.json", part)
    return path


def session_file(root: Path) -> Path:
    return root / "session" / "proj" / "ses_file.json"


def content_of(session) -> str:
    """Everything the session carries, as JSON text (header, entries), problems left out."""
    return json.dumps([session.header, [e.to_dict() for e in session.entries]], default=dict)


def converted(root: Path, tmp_path: Path) -> str:
    out = tmp_path / "converted.jsonl"
    main(["convert", str(session_file(root)), str(out)])
    return out.read_text(encoding="utf-8") if out.exists() else ""


def kinds(session) -> list[tuple[str, str]]:
    return [(p.kind, Path(p.path).name) for p in session.errors]


# -- ids that are paths ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "session_id",
    ["ses_x/../../elsewhere", "ses_x/../../../elsewhere", "ses_x\x00y", "ses_x/.."],
    ids=["inside-root", "outside-root", "nul", "trailing-dotdot"],
)
def test_a_session_id_that_is_a_path_reads_no_folder(tmp_path: Path, session_id: str) -> None:
    root = make_storage(tmp_path, session_id)
    (root / "message" / "ses_x").mkdir(parents=True)  # so `ses_x/..` resolves
    target = Path(os.path.normpath(root / "message" / session_id.replace("\x00", "")))
    outside_folder(target)
    session = read_session(session_file(root))
    assert kinds(session) == [("unsafe-id", "ses_file.json")]
    assert session.entries == ()
    assert SECRET not in content_of(session)
    assert SECRET not in converted(root, tmp_path)
    with pytest.raises(SessionReadError, match=r"unsafe-id|path"):
        read_session(session_file(root), strict=True)


@pytest.mark.parametrize(
    "message_id",
    ["msg_x/../../../../../home/.config/x", "msg_\x00x", "..", "msg_x/.."],
    ids=["to-home-config", "nul", "dotdot", "trailing-dotdot"],
)
def test_a_message_id_that_is_a_path_reads_no_part_folder(tmp_path: Path, message_id: str) -> None:
    root = make_storage(tmp_path)
    (root / "part" / "msg_x").mkdir(parents=True)
    target = Path(os.path.normpath(root / "part" / message_id.replace("\x00", "")))
    if message_id.startswith("msg_x/../"):
        assert target == tmp_path / "home" / ".config" / "x"
    outside_folder(target)
    outside_folder(root / "part")
    outside_folder(root)
    add_message(root, "msg_a1", "the first message")
    bad = add_message(root, message_id, "", file_name="msg_a2.json")
    add_message(root, "msg_a3", "the last message")
    session = read_session(session_file(root))
    assert kinds(session) == [("unsafe-id", bad.name)]
    texts = [b["text"] for e in session.entries for b in e.message["content"]]
    assert texts == ["the first message", "the last message"]  # the bad message kept empty
    assert len(session.entries) == 3
    assert SECRET not in content_of(session)
    assert SECRET not in converted(root, tmp_path)
    with pytest.raises(SessionReadError):
        read_session(session_file(root), strict=True)


# -- links out of the storage ----------------------------------------------------------------
def test_a_part_file_linked_out_of_the_storage_is_not_read(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    outside = outside_folder(tmp_path / "outside")
    add_message(root, "msg_a1", "kept")
    link = root / "part" / "msg_a1" / "prt_zz.json"
    link.symlink_to(outside / "prt_za.json")
    session = read_session(session_file(root))
    assert kinds(session) == [("outside-storage", "prt_zz.json")]
    assert [b["text"] for e in session.entries for b in e.message["content"]] == ["kept"]
    assert SECRET not in content_of(session)
    assert SECRET not in converted(root, tmp_path)


def test_a_part_folder_linked_out_of_the_storage_is_not_read(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    outside = outside_folder(tmp_path / "outside")
    add_message(root, "msg_a1", "kept")
    msg = {"id": "msg_a2", "sessionID": SESSION_ID, "role": "user", "time": {"created": 1}}
    write(root / "message" / SESSION_ID / "msg_a2.json", msg)
    (root / "part").mkdir(exist_ok=True)
    (root / "part" / "msg_a2").symlink_to(outside, target_is_directory=True)
    session = read_session(session_file(root))
    assert kinds(session) == [("outside-storage", "msg_a2.json")]
    assert SECRET not in content_of(session)
    assert SECRET not in converted(root, tmp_path)


def test_a_message_folder_or_file_linked_out_of_the_storage_is_not_read(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    outside = outside_folder(tmp_path / "outside")
    (root / "message").mkdir()
    (root / "message" / SESSION_ID).symlink_to(outside, target_is_directory=True)
    session = read_session(session_file(root))
    assert kinds(session) == [("outside-storage", "ses_file.json")]
    assert SECRET not in content_of(session)
    (root / "message" / SESSION_ID).unlink()
    add_message(root, "msg_a1", "kept")
    (root / "message" / SESSION_ID / "msg_a2.json").symlink_to(outside / "msg_zz.json")
    session = read_session(session_file(root))
    assert kinds(session) == [("outside-storage", "msg_a2.json")]
    assert SECRET not in content_of(session)
    assert SECRET not in converted(root, tmp_path)


def test_a_session_file_linked_out_of_the_storage_is_not_read(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    add_message(root, "msg_a1", "kept")
    outside = write(tmp_path / "outside" / "ses_out.json", {"id": SESSION_ID, "title": SECRET})
    link = root / "session" / "proj" / "ses_link.json"
    link.symlink_to(outside)
    session = read_session(link)
    assert kinds(session) == [("outside-storage", "ses_link.json")]
    assert SECRET not in content_of(session)
    folder = list(iter_sessions(root))
    assert SECRET not in json.dumps([content_of(s) for s in folder])
    assert ("outside-storage", "ses_link.json") in [k for s in folder for k in kinds(s)]


def test_a_link_that_stays_inside_the_storage_is_read(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    add_message(root, "msg_a1", "first")
    add_message(root, "msg_a2", "second")
    (root / "part" / "msg_a2" / "prt_msg_a2.json").unlink()
    (root / "part" / "msg_a2" / "prt_alias.json").symlink_to(
        Path("..") / "msg_a1" / "prt_msg_a1.json"
    )
    session = read_session(session_file(root), strict=True)
    assert [b["text"] for e in session.entries for b in e.message["content"]] == ["first"] * 2


# -- files that are not files ----------------------------------------------------------------
def test_a_fifo_among_the_parts_is_a_problem_and_does_not_block(tmp_path: Path) -> None:
    root = make_storage(tmp_path)
    add_message(root, "msg_a1", "kept")
    fifo = root / "part" / "msg_a1" / "prt_zz.json"
    os.mkfifo(fifo)
    code = (
        "import sys, json\n"
        "from musepi_lab.formats._registry import read_session\n"
        "s = read_session(sys.argv[1])\n"
        "print(json.dumps([[p.kind, p.path] for p in s.errors]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(session_file(root))],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["not-a-file", str(fifo)]]
