"""opencode sessions → `Session`: `read_opencode` reads the JSON storage folder (given the
session file) or the database (`opencode.db`, `_opencode_db`); the mapping both use is in
`_opencode_build`."""

from __future__ import annotations

import os
from pathlib import Path

from ..session._session import Session
from ._io import read_bytes_checked
from ._opencode_build import (
    SOURCE_FORMAT,
    SQLITE_MAGIC,
    Builder,
    Files,
    _str,
    finish,
    session_header,
    storage_root,
)
from ._records import empty_session


def read_opencode(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read an opencode session from its storage folder, given the session file, or the
    first session of its database (`opencode.db`, see `_opencode_db`).

    Args:
        path: `<storage>/session/<projectID>/<sessionID>.json`; its messages and parts
            are read from `<storage>/message/<sessionID>/` and `<storage>/part/<messageID>/`.
            Or an `opencode.db`.
        strict: Raise `SessionReadError` for the first problem (in any of the files)
            instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    root = storage_root(Path(path))
    files = Files(root)
    if root is not None and not files.inside(Path(path), Path(path), "the session file"):
        return empty_session(os.fspath(path), finish(files, strict), SOURCE_FORMAT)
    p, head = read_bytes_checked(path, len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        from ._opencode_db import read_opencode_db

        return read_opencode_db(p, strict=strict)
    p, data = read_bytes_checked(path)
    info = files.load(Path(p), data)
    if info is None:
        return empty_session(p, finish(files, strict), SOURCE_FORMAT)
    if not str(info.get("id", "")).startswith("ses_") and ("role" in info or "messageID" in info):
        what = "message" if "role" in info else "part"
        files.add(
            p,
            None,
            "wrong-file",
            f"an opencode {what} file; read its session file under "
            "<storage>/session/<projectID>/ instead",
        )
        return empty_session(p, finish(files, strict), SOURCE_FORMAT)
    header = session_header(p, info)
    if not files.safe_id(str(header["id"]), Path(p), "session"):
        return empty_session(p, finish(files, strict), SOURCE_FORMAT, **header)
    folder = root / "message" / str(header["id"]) if root is not None else None
    if folder is None or not folder.is_dir():
        files.add(
            p,
            None,
            "missing-messages",
            f"no message folder {folder or '(not in a storage folder)'}",
        )
        return empty_session(p, finish(files, strict), SOURCE_FORMAT, **header)
    if not files.inside(folder, Path(p), "its message folder"):
        return empty_session(p, finish(files, strict), SOURCE_FORMAT, **header)
    builder = Builder(files)
    for msg_file, msg in files.folder(folder):
        mid = _str(msg.get("id")) or msg_file.stem
        builder.message(msg_file, msg, builder.parts(folder.parent.parent, msg_file, mid))
    return builder.session(p, header, strict)
