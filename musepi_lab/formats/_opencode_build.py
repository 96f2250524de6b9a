"""opencode sessions (its JSON storage folder) → `Session`: the mapping, shared by the storage
reader (`_opencode`) and the database reader (`_opencode_db`).

opencode keeps a session across many files under its storage root
(`~/.local/share/opencode/storage/`; schemas: `@opencode-ai/sdk` 1.18.33,
`dist/gen/types.gen.d.ts` and `dist/v2/gen/types.gen.d.ts`, types `Session`,
`UserMessage`, `AssistantMessage`, `Part`):

- `session/<projectID>/<sessionID>.json`: the session info (`id`, `projectID`,
  `directory`, `title`, `version`, `time {created, updated}`, `parentID` for a subagent's);
- `message/<sessionID>/<messageID>.json`: one message info each, `role` `user` or
  `assistant`; an assistant message carries `modelID`, `providerID`, `cost`, `tokens` and
  `error`;
- `part/<messageID>/<partID>.json`: the message's content, one part each, `type` `text`,
  `reasoning`, `tool`, `step-start`, `step-finish`, `file`, `patch`, `snapshot`, `agent`,
  `subtask`, `retry` or `compaction`.

Ids sort in creation order, so messages and parts are read in file-name order. `path` is
the session file; the storage root is three folders up.

Mapping, linked into a linear chain: a user message → user message (text parts; `file`
parts as image blocks for inline images, else a `[file ...]` note). An assistant message
→ one assistant message per step (the parts between `step-start` and `step-finish`, one
model call each): `reasoning` → thinking, `text` → text, `tool` → a toolCall (`callID`,
`tool`, `state.input`), followed by a toolResult per finished tool (`completed` → its
`output`; `error` → its `error`, `isError`; `pending` and `running` tools have no result).
Usage per step from its `step-finish` (the message's `tokens` when it has none):
`input = tokens.input` (opencode's input leaves the cached tokens out), `output =
tokens.output + tokens.reasoning`, `cacheRead = tokens.cache.read`, `cacheWrite =
tokens.cache.write`, `totalTokens = tokens.total` when recorded, else their sum; the
recorded dollar cost is `cost.total` (opencode splits it no further). Parts that carry no
message content (`step-start`, `snapshot`, `patch`, `agent`, `subtask`, `retry`,
`compaction`, a `file` of the model's) ride along on their message record as
`sourceParts`; an unknown part type too, with an `unknown-part` problem. An assistant
`error` → `errorMessage` and `stopReason` `error` (`aborted` for an abort).

Problems name the file they are in (message and part files too) and, for JSON that does
not parse, its line. A message whose part folder is missing → `missing-parts`, kept
empty; a session without a message folder → `missing-messages`.

The folder names come from ids written inside the files, so a hostile storage folder could
point the reader anywhere: an id holding a path separator, `..` or a NUL → `unsafe-id`
(the message kept empty, the session without messages), and every file and folder the
reader opens must resolve, symlinks followed, inside the storage root, else
`outside-storage` and it is not read. Files are opened without following a last link and
without blocking, so a FIFO or device among them is `not-a-file`, never read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog, ReadProblem, SessionReadError
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._records import (
    IdAllocator,
    assistant_message,
    chain,
    message_record,
    text_block,
    token_count,
    tool_call_block,
    tool_result_message,
    usage,
    user_message,
)
from ._swe_agent import parse_json_document

SOURCE_FORMAT = "opencode"
SQLITE_MAGIC = b"SQLite format 3\x00"
CONTENT_PARTS = frozenset({"text", "reasoning", "tool", "step-finish"})
CARRIED_PARTS = frozenset(
    {"step-start", "snapshot", "patch", "agent", "subtask", "retry", "compaction", "file"}
)
_APIS = {
    "anthropic": "anthropic-messages",
    "openai": "openai-responses",
    "google": "google-generative-ai",
}
_STOP = {"tool-calls": "toolUse", "stop": "stop", "length": "length", "error": "error"}


def iso_of_ms(ms: Any) -> str | None:
    """ISO-8601 (UTC, ms, `Z`) of epoch milliseconds, None when it is no time."""
    from datetime import UTC, datetime

    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms < 1e14:
        return None
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def opencode_usage(tokens: Any, cost: Any) -> dict[str, Any] | None:
    """pi usage of an opencode `tokens` object and dollar `cost` (module docstring)."""
    if not isinstance(tokens, Mapping):
        return None
    cache = _obj(tokens.get("cache"))
    out = usage(
        input=tokens.get("input"),
        output=token_count(tokens.get("output")) + token_count(tokens.get("reasoning")),
        cache_read=cache.get("read"),
        cache_write=cache.get("write"),
        total=tokens.get("total") if token_count(tokens.get("total")) else None,
    )
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost == cost:
        out["cost"] = {**out["cost"], "total": float(cost)}
    return out


def storage_root(session_file: Path) -> Path | None:
    """The storage root of a `session/<projectID>/<id>.json` file, else None."""
    if session_file.parent.parent.name != "session":
        return None
    return session_file.parent.parent.parent


def unsafe_id(value: str) -> str | None:
    """Why an id cannot name a folder of the storage, else None: ids are single file names
    there, so a path separator, `..` or a NUL would make it name another folder."""
    if "\x00" in value:
        return "holds a NUL"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if ".." in value or value == ".":
        return "holds '..'"
    return None


def is_inside(path: Path | str, root: str) -> bool:
    """True when `path`, every symlink followed, lies in the (resolved) folder `root`."""
    return os.path.commonpath([os.path.realpath(path), root]) == root


def read_regular_file(path: str) -> bytes:
    """A regular file's bytes; opened without following a last symlink (the path was resolved
    just before, so one appearing now is a swap) and without blocking on a FIFO.

    Raises:
        OSError: It cannot be opened or read, or (`errno.EINVAL`) it is not a regular file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


class Files:
    """Reads the JSON files of one session, collecting every file's problems (each names
    its file); with a storage `root`, only files and folders that resolve inside it."""

    def __init__(self, root: Path | None = None) -> None:
        self.problems: list[ReadProblem] = []
        self.root = os.path.realpath(root) if root is not None else None

    def add(self, path: Path | str, line: int | None, kind: str, message: str) -> None:
        self.problems.append(ReadProblem(os.fspath(path), line, kind, message))

    def inside(self, path: Path, owner: Path, what: str) -> bool:
        """True when `path` resolves inside the storage root; else an `outside-storage`
        problem of `owner` (the file whose content named it, or the link itself)."""
        if self.root is None or is_inside(path, self.root):
            return True
        where = f"{what} {path} resolves to {os.path.realpath(path)}"
        self.add(owner, None, "outside-storage", f"{where}, outside {self.root}; not read")
        return False

    def safe_id(self, value: str, owner: Path, what: str) -> bool:
        """True when `value` can name a storage folder; else an `unsafe-id` problem."""
        why = unsafe_id(value)
        if why is not None:
            self.add(owner, None, "unsafe-id", f"{what} id {value!r} {why}; not used as a path")
        return why is None

    def load(self, path: Path, data: bytes | None = None) -> Mapping[str, Any] | None:
        if data is None:
            if not self.inside(path, path, "the file"):
                return None
            try:
                data = read_regular_file(os.path.realpath(path))
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    self.add(path, None, "not-a-file", "is not a regular file; not read")
                else:
                    self.add(path, None, "unreadable", f"cannot read: {exc.strerror}")
                return None
        log = ProblemLog(os.fspath(path), strict=False)
        ok, value = parse_json_document(data, log)
        self.problems.extend(log.problems)
        if ok and not isinstance(value, Mapping):
            self.add(path, None, "not-an-object", f"a JSON {type(value).__name__}, not an object")
            return None
        return value if ok else None

    def folder(self, folder: Path) -> list[tuple[Path, Mapping[str, Any]]]:
        out = []
        for file in sorted(folder.glob("*.json")):
            value = self.load(file)
            if value is not None:
                out.append((file, value))
        return out


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _file_block(part: Mapping[str, Any]) -> dict[str, Any]:
    url, mime = _str(part.get("url")), _str(part.get("mime"))
    if mime.startswith("image/") and url.startswith("data:") and ";base64," in url:
        return {"type": "image", "data": url.split(";base64,", 1)[1], "mimeType": mime}
    return text_block(f"[file {_str(part.get('filename')) or url} {mime}]".rstrip())


class _Step:
    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self.tools: list[Mapping[str, Any]] = []
        self.carried: list[dict[str, Any]] = []
        self.finish: Mapping[str, Any] | None = None

    def empty(self) -> bool:
        return not (self.blocks or self.carried or self.finish)


class Builder:
    """Maps opencode messages with their parts to v3 records, in order."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.records: list[dict[str, Any]] = []
        self.seen_calls: set[str] = set()

    def parts(self, root: Path, msg_file: Path, mid: str) -> list[tuple[Path, Mapping[str, Any]]]:
        if not self.files.safe_id(mid, msg_file, "message"):
            return []
        folder = root / "part" / mid
        if not folder.is_dir():
            self.files.add(
                msg_file, None, "missing-parts", f"no part folder {folder}; message kept empty"
            )
            return []
        if not self.files.inside(folder, msg_file, "its part folder"):
            return []
        return self.files.folder(folder)

    def carry(self, file: Path, part: Mapping[str, Any], into: list[dict[str, Any]]) -> None:
        kind = part.get("type")
        if kind not in CARRIED_PARTS and kind not in CONTENT_PARTS:
            self.files.add(
                file, None, "unknown-part", f"part type {kind!r}; carried as sourceParts"
            )
        into.append(dict(part))

    def user(self, info: Mapping[str, Any], parts: list[tuple[Path, Mapping[str, Any]]]) -> None:
        blocks: list[dict[str, Any]] = []
        carried: list[dict[str, Any]] = []
        for file, part in parts:
            if part.get("type") == "text" and not part.get("ignored"):
                blocks.append(text_block(_str(part.get("text"))))
            elif part.get("type") == "file":
                blocks.append(_file_block(part))
            else:
                self.carry(file, part, carried)
        time = _obj(info.get("time"))
        created = time.get("created")
        msg = user_message(blocks, token_count(created))
        extra = {"sourceParts": carried} if carried else {}
        rec = message_record(
            "", None, iso_of_ms(created), msg, source_id=_str(info.get("id")), **extra
        )
        self.records.append(rec)

    def steps(self, parts: list[tuple[Path, Mapping[str, Any]]]) -> list[_Step]:
        steps, step = [], _Step()
        for file, part in parts:
            kind = part.get("type")
            if kind == "step-start" and not step.empty():
                steps.append(step)
                step = _Step()
            if kind == "reasoning":
                step.blocks.append({"type": "thinking", "thinking": _str(part.get("text"))})
            elif kind == "text" and not part.get("ignored"):
                step.blocks.append(text_block(_str(part.get("text"))))
            elif kind == "tool":
                step.tools.append(part)
                step.blocks.append(self.call_block(part))
            elif kind == "step-finish":
                step.finish = part
                steps.append(step)
                step = _Step()
            elif step.empty() and steps and kind != "step-start":
                self.carry(file, part, steps[-1].carried)  # after its step's finish
            else:
                self.carry(file, part, step.carried)
        if not step.empty() or not steps:
            steps.append(step)
        return steps

    def call_block(self, part: Mapping[str, Any]) -> dict[str, Any]:
        state = _obj(part.get("state"))
        call_id = _str(part.get("callID")) or _str(part.get("id"))
        return tool_call_block(call_id, _str(part.get("tool")), state.get("input") or {})

    def assistant(
        self, info: Mapping[str, Any], parts: list[tuple[Path, Mapping[str, Any]]]
    ) -> None:
        time = _obj(info.get("time"))
        created = time.get("created")
        provider = _str(info.get("providerID"))
        steps = self.steps(parts)
        any_finish = any(s.finish is not None for s in steps)
        error = info.get("error") if isinstance(info.get("error"), Mapping) else None
        for k, step in enumerate(steps):
            fin = step.finish
            if fin is not None:
                usage_ = opencode_usage(fin.get("tokens"), fin.get("cost"))
                stop = _STOP.get(_str(fin.get("reason")), _str(fin.get("reason")) or "stop")
            else:
                usage_ = (
                    None if any_finish else opencode_usage(info.get("tokens"), info.get("cost"))
                )
                stop = "toolUse" if step.tools else _STOP.get(_str(info.get("finish")), "stop")
            last = k == len(steps) - 1
            error_message = None
            if last and error is not None:
                data = _obj(error.get("data"))
                error_message = _str(data.get("message")) or _str(error.get("name")) or "error"
                stop = "aborted" if error.get("name") == "MessageAbortedError" else "error"
            msg = assistant_message(
                step.blocks,
                token_count(created),
                model=_str(info.get("modelID")),
                provider=provider,
                api=_APIS.get(provider, "openai-completions"),
                usage_=usage_,
                stop_reason=stop,
                error_message=error_message,
            )
            extra: dict[str, Any] = {"sourceParts": step.carried} if step.carried else {}
            source = _str(info.get("id"))
            self.records.append(
                message_record("", None, iso_of_ms(created), msg, source_id=source, **extra)
            )
            self.results(step.tools)

    def message(
        self, where: Path, msg: Mapping[str, Any], parts: list[tuple[Path, Mapping[str, Any]]]
    ) -> None:
        """Map one message with its parts (`where`: the file or database it came from)."""
        if msg.get("role") == "user":
            self.user(msg, parts)
        elif msg.get("role") == "assistant":
            self.assistant(msg, parts)
        else:
            self.files.add(where, None, "unknown-role", f"role {msg.get('role')!r}; kept as custom")
            self.records.append(
                {
                    "type": "custom",
                    "id": "",
                    "parentId": None,
                    "timestamp": None,
                    "customType": "opencode:message",
                    "data": dict(msg),
                }
            )

    def session(self, path: str, header: dict[str, Any], strict: bool) -> Session:
        """The session of the records mapped so far (ids given, chained)."""
        alloc = IdAllocator(str(header["id"]))
        for k, rec in enumerate(self.records):
            rec["id"] = alloc.take(rec.get("sourceId"), k)
        entries = [Entry.from_record(r) for r in chain(self.records)]
        return Session(
            header,
            entries,
            errors=finish(self.files, strict),
            source_path=path,
            source_format=SOURCE_FORMAT,
        )

    def results(self, tools: list[Mapping[str, Any]]) -> None:
        for part in tools:
            state = _obj(part.get("state"))
            status = state.get("status")
            if status not in ("completed", "error"):
                continue
            call_id = _str(part.get("callID")) or _str(part.get("id"))
            text = _str(state.get("output")) if status == "completed" else _str(state.get("error"))
            time = _obj(state.get("time"))
            end = time.get("end")
            msg = tool_result_message(
                call_id,
                _str(part.get("tool")),
                text,
                token_count(end),
                is_error=status == "error",
            )
            rec = message_record("", None, iso_of_ms(end), msg, source_id=_str(part.get("id")))
            self.records.append(rec)


def session_header(path: str, info: Mapping[str, Any]) -> dict[str, Any]:
    time = _obj(info.get("time"))
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": _str(info.get("id")) or Path(path).stem,
    }
    if iso_of_ms(time.get("created")) is not None:
        header["timestamp"] = iso_of_ms(time.get("created"))
    for key, name in (("directory", "cwd"), ("title", "title"), ("projectID", "projectID")):
        if isinstance(info.get(key), str):
            header[name] = info[key]
    if isinstance(info.get("parentID"), str):
        header["opencodeParentId"] = info["parentID"]
    header["sourceFormat"] = SOURCE_FORMAT
    if isinstance(info.get("version"), str):
        header["sourceVersion"] = info["version"]
    return header


def finish(files: Files, strict: bool) -> tuple[ReadProblem, ...]:
    problems = tuple(files.problems)
    if strict and problems:
        raise SessionReadError.from_problem(problems[0], problems)
    return problems
