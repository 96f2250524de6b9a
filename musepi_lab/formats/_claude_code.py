"""Claude Code session transcripts (`~/.claude/projects/<cwd>/<sessionId>.jsonl`) as Sessions.

Claude Code writes one JSON record per line: `user` and `assistant` messages in the
Anthropic Messages shape, `system` lines (compaction boundaries, hook summaries, turn
durations), `progress` lines (hooks, subagent progress), and records without a `uuid`
(`file-history-snapshot`, `queue-operation`, `summary`). Every record with a `uuid` names its
parent in `parentUuid`, so a file is a tree, and the importer keeps that tree, with these
choices (each one forced by what the files hold):

- **One assistant reply, one entry.** Claude Code writes one line per content block
  (thinking, text, tool_use), all with the same `message.id`. They are merged, blocks in
  order, usage from the reply's last line. Its lines carry `stop_reason: null` almost always
  (they are written mid-stream), so the last non-null one wins and a reply without one stops
  with `toolUse` when it holds tool calls, else `stop`.
- **Tool results chain after their reply.** With parallel tool calls Claude Code interleaves
  block lines and results (`tool_use A`, `result A`, `tool_use B` whose parent is `result A`,
  `result B`), and sometimes hangs a result off an earlier block line, which leaves it on a
  dead branch. Literally re-parenting children of merged lines to the merged entry would make
  the results siblings and drop all but one from the path. So every reply owns a *region*:
  the merged entry, the tool results attached under it, and the non-message lines hanging off
  them. A line whose parent lies in a region attaches to the region's *tail* (its latest
  tool result, or the reply itself), and a tool result becomes the new tail. The path then
  reads reply, result A, result B, next message, as pi stores it.
- **Compaction.** A `system` line with `subtype: "compact_boundary"` (`parentUuid: null`,
  `logicalParentUuid` = the last line before it, `compactMetadata.preTokens`) and the
  `isCompactSummary` user line under it become one `compaction` entry whose parent is the
  logical parent, so the session path runs through the compaction. `summary` is the text of
  the summary line verbatim (what the model saw afterwards); `tokensBefore` is `preTokens`.
  Claude Code keeps nothing from before the boundary, so `firstKeptEntryId` names the first
  message after the compaction: pi's buildSessionContext looks for it before the
  compaction, does not find it, and emits nothing from there (spec §2.1 step 5); the newest
  omp contract reads an id after the compaction the same way (spec §4.5). A compaction with
  no message after it names itself.
- **Everything else with a `uuid`** (`progress`, other `system` lines, unknown types) is a
  `custom` entry in the tree (`customType: "claude-code:<type>"`, `data`: the raw record):
  it never reaches the LLM context, but keeps the tree intact, since messages sometimes hang
  off hook progress lines. Records **without a `uuid`** cannot sit in a tree; they are kept
  in the header under `sourceRecords` (`{"line": n, "record": {...}}`), and the last
  `summary` record's text becomes the header `title`.
- **Sidechains.** Inline sidechain lines (`isSidechain: true`, Claude Code 1.x) keep their
  own roots, so they form separate branches, flagged `isSidechain: true` in their records.
  The last message of the main thread is moved to the end of `entries` when sidechain or
  non-message lines follow it, because `Session.leaf_id` is the last entry in file order.
  Subagent transcripts in `<sessionId>/subagents/agent-*.jsonl` are read with this same
  function and returned in `Session.linked`; `agent-acompact-*` files (the compaction
  runs) are marked `subagentKind: "compaction"`, the others `"subagent"`. In a subagent file
  every line is a sidechain, and the lines whose `parentUuid` lives in the parent session
  are chained after the previous entry (keeping the foreign id as `sourceParentId`); its
  header id is `<sessionId>/agent-<agentId>`. In a main file such a parent is a
  `dangling-parent` problem and the entry becomes a root, as in pi.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._claude_code_blocks import (
    assistant_block,
    stop_reason,
    text_of,
    tool_result_content,
    usage_from_anthropic,
    user_blocks,
)
from ._io import looks_binary, parse_jsonl, read_bytes_checked
from ._records import (
    assistant_message,
    epoch_ms,
    message_record,
    stable_id,
    text_block,
    tool_result_message,
    user_message,
)

SOURCE_FORMAT = "claude-code"
PROVIDER = "anthropic"
API = "anthropic-messages"
COMPACTION_METHOD = "claude-code"

_COMPACTION_AGENT_PREFIX = "acompact"


# -- the tree builder -----------------------------------------------------------------------


class _Builder:
    """Turns parsed Claude Code records, in file order, into v3 records (see module doc)."""

    def __init__(
        self, seed: str, log: ProblemLog, *, linked_file: bool, values: list[tuple[int, Any]]
    ) -> None:
        self.seed = seed
        self.taken_ids: set[str] = set()
        self.log = log
        self.linked_file = linked_file
        self.values = values
        self._uuids: frozenset[str] | None = None  # see `file_uuids`
        self.records: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.main: list[bool] = []
        self.source_records: list[dict[str, Any]] = []
        self.title: str | None = None
        self.agent_calls: dict[str, str] = {}  # agentId -> tool_use id of the Task call
        self.compaction_by_logical_parent: dict[str, str] = {}
        self._alias: dict[str, str] = {}  # source uuid -> entry id its children hang from
        self._region: dict[str, str] = {}  # entry id -> id of the reply whose region it is in
        self._tail: dict[str, str] = {}  # reply id -> latest entry of its result chain
        self._replies: dict[tuple[bool, str], dict[str, Any]] = {}
        self._reply_records: list[dict[str, Any]] = []  # each still holding its raw "_stop"
        self._calls: dict[str, str] = {}  # tool_use id -> tool name
        self._boundaries: dict[str, dict[str, Any]] = {}  # uuid -> compaction still unfilled
        self._after_compaction: dict[str, str] = {}  # entry id -> nearest compaction above
        self._last_id: str | None = None

    # -- plumbing ---------------------------------------------------------------------
    def file_uuids(self) -> frozenset[str]:
        """Every uuid of the file, to tell a later line from a foreign one.

        Only a parent not seen yet asks, which is rare: collected on first use.
        """
        if self._uuids is None:
            self._uuids = frozenset(
                rec["uuid"]
                for _, rec in self.values
                if isinstance(rec, dict) and isinstance(rec.get("uuid"), str)
            )
        return self._uuids

    def _resolve(self, rec: Mapping[str, Any], lineno: int) -> tuple[str | None, str | None]:
        """(parent entry id, foreign parent uuid) for a record's `parentUuid`."""
        parent = rec.get("parentUuid") or rec.get("logicalParentUuid")
        if not isinstance(parent, str):
            return None, None
        entry_id = self._alias.get(parent)
        foreign = None
        if entry_id is None:
            if parent in self.file_uuids():
                where = "only a later line"
            elif not self.linked_file:
                where = "no line"
            else:
                where = None
            if where is not None:
                self.log.add(
                    lineno,
                    "dangling-parent",
                    f"parentUuid {parent!r} names {where}; the entry becomes a root",
                )
                return None, None
            # A subagent line continuing from the parent session: chain it in file order.
            entry_id, foreign = self._last_id, parent
            if entry_id is None:
                return None, foreign
        region = self._region.get(entry_id)
        return (self._tail[region] if region is not None else entry_id), foreign

    def _add(
        self,
        record: dict[str, Any],
        lineno: int,
        rec: Mapping[str, Any],
        *,
        foreign_parent: str | None = None,
    ) -> str:
        entry_id = record["id"]
        side = rec.get("isSidechain") is True
        if side and not self.linked_file:
            record["isSidechain"] = True
        if foreign_parent is not None:
            record["sourceParentId"] = foreign_parent
        parent = record.get("parentId")
        if record["type"] == "compaction":
            self._after_compaction[entry_id] = entry_id
        elif parent is not None and parent in self._after_compaction:
            compaction_id = self._after_compaction[parent]
            self._after_compaction[entry_id] = compaction_id
        self.records.append(record)
        self.lines.append(lineno)
        self.main.append(self.linked_file or not side)
        self._last_id = entry_id
        return entry_id

    def _take_id(self, uuid: Any, lineno: int, *salt: object) -> str:
        """The uuid itself while it is free, else a stable id (as `IdAllocator.take`)."""
        preferred = uuid if isinstance(uuid, str) else None
        if preferred and preferred not in self.taken_ids:
            self.taken_ids.add(preferred)
            return preferred
        n = 0
        while True:
            candidate = stable_id(self.seed, preferred, lineno, *salt, n)
            if candidate not in self.taken_ids:
                self.taken_ids.add(candidate)
                return candidate
            n += 1

    def _register_uuid(self, uuid: Any, entry_id: str, lineno: int) -> None:
        if not isinstance(uuid, str):
            return
        if uuid in self._alias:
            self.log.add(lineno, "duplicate-id", f"uuid {uuid!r} already used; the first line wins")
            return
        self._alias[uuid] = entry_id

    def _join_region(self, parent: str | None, entry_id: str, *, tail: bool) -> None:
        region = self._region.get(parent) if parent is not None else None
        if region is not None:
            self._region[entry_id] = region
            if tail:
                self._tail[region] = entry_id

    # -- record kinds -----------------------------------------------------------------
    def add_line(self, lineno: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            self.log.add(
                lineno, "not-an-object", f"line holds a JSON {type(rec).__name__}, not a record"
            )
            return
        kind = rec.get("type")
        uuid = rec.get("uuid")
        if not isinstance(uuid, str):
            if kind in ("user", "assistant"):
                self.log.add(lineno, "missing-id", f"{kind} line has no uuid; kept with a fresh id")
            else:
                if kind == "summary" and isinstance(rec.get("summary"), str):
                    self.title = rec["summary"]
                self.source_records.append({"line": lineno, "record": rec})
                return
        message = rec.get("message")
        if kind in ("user", "assistant") and not isinstance(message, dict):
            self.log.add(
                lineno, "bad-message", f"{kind} line has no message object; kept as custom"
            )
            self._custom(lineno, rec)
        elif kind == "assistant":
            self._assistant(lineno, rec, message)
        elif kind == "user" and rec.get("isCompactSummary") is True:
            self._compact_summary(lineno, rec, message)
        elif kind == "user":
            self._user(lineno, rec, message)
        elif kind == "system" and rec.get("subtype") == "compact_boundary":
            self._boundary(lineno, rec)
        else:
            self._custom(lineno, rec)

    def _assistant(self, lineno: int, rec: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        content = message.get("content")
        raw_blocks = content if isinstance(content, list) else [text_block(text_of(content))]
        blocks = [assistant_block(b) for b in raw_blocks]
        for block in blocks:
            if block.get("type") == "toolCall":
                self._calls[block["id"]] = block["name"]
        mid = message.get("id")
        key = (rec.get("isSidechain") is True, mid) if isinstance(mid, str) else None
        reply = self._replies.get(key) if key is not None else None
        uuid = rec.get("uuid")
        if reply is not None:
            msg = reply["message"]
            msg["content"].extend(blocks)
            if isinstance(message.get("usage"), dict):
                msg["usage"] = usage_from_anthropic(message["usage"])
            if message.get("stop_reason") is not None:
                reply["_stop"] = message.get("stop_reason")
            if isinstance(uuid, str):
                reply.setdefault("sourceIds", [reply.get("sourceId")]).append(uuid)
            self._register_uuid(uuid, reply["id"], lineno)
            return
        parent, foreign = self._resolve(rec, lineno)
        entry_id = self._take_id(uuid, lineno)
        ts = rec.get("timestamp")
        error = rec.get("isApiErrorMessage") is True
        msg = assistant_message(
            blocks,
            epoch_ms(ts),
            model=str(message.get("model", "")),
            provider=PROVIDER,
            api=API,
            usage_=usage_from_anthropic(message.get("usage")),
            error_message=text_of(content) if error else None,
        )
        record = message_record(entry_id, parent, ts, msg, source_id=uuid)
        record["_stop"] = "error" if error else message.get("stop_reason")
        self._reply_records.append(record)
        self._add(record, lineno, rec, foreign_parent=foreign)
        self._register_uuid(uuid, entry_id, lineno)
        self._region[entry_id] = entry_id
        self._tail[entry_id] = entry_id
        if key is not None:
            self._replies[key] = record

    def _user(self, lineno: int, rec: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        content = message.get("content")
        uuid = rec.get("uuid")
        ts = rec.get("timestamp")
        ms = epoch_ms(ts)
        parent, foreign = self._resolve(rec, lineno)
        blocks = content if isinstance(content, list) else [str(content or "")]
        results: list[dict[str, Any]] = []
        rest: list[Any] = []
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                results.append(b)
            else:
                rest.append(b)
        produced = 0
        last_id: str | None = None
        tool_use_result = rec.get("toolUseResult")
        for block in results:
            call_id = str(block.get("tool_use_id", ""))
            name = self._calls.get(call_id)
            if name is None:
                self.log.add(
                    lineno,
                    "unpaired-tool-result",
                    f"tool_result for {call_id!r} has no earlier tool_use; kept unpaired",
                )
            msg = tool_result_message(
                call_id,
                name or "",
                tool_result_content(block.get("content")),
                ms,
                is_error=block.get("is_error") is True,
            )
            entry_id = self._take_id(uuid, lineno, "result", produced)
            self._add(
                message_record(entry_id, parent, ts, msg, source_id=uuid),
                lineno,
                rec,
                foreign_parent=foreign,
            )
            self._join_region(parent, entry_id, tail=True)
            if isinstance(tool_use_result, dict) and isinstance(
                tool_use_result.get("agentId"), str
            ):
                self.agent_calls.setdefault(tool_use_result["agentId"], call_id)
            parent, foreign, last_id = entry_id, None, entry_id
            produced += 1
        if rest or not results:
            entry_id = self._take_id(uuid, lineno, "user", produced)
            record = message_record(
                entry_id, parent, ts, user_message(user_blocks(rest), ms), source_id=uuid
            )
            if rec.get("isMeta") is True:
                record["isMeta"] = True
            self._add(record, lineno, rec, foreign_parent=foreign)
            last_id = entry_id
        if last_id is not None:
            self._register_uuid(uuid, last_id, lineno)

    def _boundary(self, lineno: int, rec: Mapping[str, Any]) -> dict[str, Any]:
        uuid = rec.get("uuid")
        parent, foreign = self._resolve(rec, lineno)
        meta = rec.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        pre = meta.get("preTokens")
        entry_id = self._take_id(uuid, lineno)
        record: dict[str, Any] = {
            "type": "compaction",
            "id": entry_id,
            "parentId": parent,
            "timestamp": rec.get("timestamp"),
            "summary": "",
            "firstKeptEntryId": None,
            "tokensBefore": pre if isinstance(pre, int) and not isinstance(pre, bool) else 0,
            "details": {"readFiles": [], "modifiedFiles": []},
            "method": COMPACTION_METHOD,
            "sourceId": uuid,
        }
        if isinstance(meta.get("trigger"), str):
            record["trigger"] = meta["trigger"]
        self._add(record, lineno, rec, foreign_parent=foreign)
        self._register_uuid(uuid, entry_id, lineno)
        if isinstance(uuid, str):
            self._boundaries[uuid] = record
        logical = rec.get("logicalParentUuid")
        if isinstance(logical, str):
            self.compaction_by_logical_parent[logical] = entry_id
        return record

    def _compact_summary(
        self, lineno: int, rec: Mapping[str, Any], message: Mapping[str, Any]
    ) -> None:
        uuid = rec.get("uuid")
        summary = text_of(message.get("content"))
        boundary = self._boundaries.pop(str(rec.get("parentUuid")), None)
        if boundary is None:
            # A summary line without its boundary (older files): a compaction of its own.
            boundary = self._boundary(lineno, {**rec, "compactMetadata": {}})
            self._boundaries.pop(str(uuid), None)
        else:
            self._register_uuid(uuid, boundary["id"], lineno)
        boundary["summary"] = summary
        if isinstance(uuid, str) and uuid != boundary["sourceId"]:
            boundary["summarySourceId"] = uuid

    def _custom(self, lineno: int, rec: Mapping[str, Any]) -> None:
        # Most lines of a file are custom (hook progress): `_take_id`, `_add`,
        # `_register_uuid` and `_join_region` are inlined here for their common cases.
        uuid = rec.get("uuid")
        parent, foreign = self._resolve(rec, lineno)
        taken = self.taken_ids
        if isinstance(uuid, str) and uuid and uuid not in taken:
            taken.add(uuid)
            entry_id = uuid
        else:
            entry_id = self._take_id(uuid, lineno)
        record = {
            "type": "custom",
            "id": entry_id,
            "parentId": parent,
            "timestamp": rec.get("timestamp"),
            "customType": f"claude-code:{rec.get('type')}",
            "data": rec,
            "sourceId": uuid,
        }
        if foreign is not None or rec.get("isSidechain") is True:
            self._add(record, lineno, rec, foreign_parent=foreign)
        else:
            after = self._after_compaction
            if parent is not None and parent in after:
                after[entry_id] = after[parent]
            self.records.append(record)
            self.lines.append(lineno)
            self.main.append(True)
            self._last_id = entry_id
        if isinstance(uuid, str) and uuid not in self._alias:
            self._alias[uuid] = entry_id
        else:
            self._register_uuid(uuid, entry_id, lineno)
        if parent is not None:
            region = self._region.get(parent)
            if region is not None:
                self._region[entry_id] = region

    # -- result -----------------------------------------------------------------------
    def finish(self) -> list[Entry]:
        """The entries: replies finalized, compactions linked, the main leaf last."""
        for record in self._reply_records:
            raw = record.pop("_stop")
            msg = record["message"]
            has_calls = any(b.get("type") == "toolCall" for b in msg["content"])
            msg["stopReason"] = (
                "error" if raw == "error" else stop_reason(raw, has_tool_calls=has_calls)
            )
        if self._after_compaction:  # else there is no compaction to link
            first_message: dict[str, str] = {}
            for record in self.records:
                if record["type"] == "message":
                    compaction_id = self._after_compaction.get(record["id"])
                    if compaction_id is not None:
                        first_message.setdefault(compaction_id, record["id"])
            for record in self.records:
                if record["type"] == "compaction":
                    record["firstKeptEntryId"] = first_message.get(record["id"], record["id"])
        order = list(range(len(self.records)))
        leaf = next(
            (
                i
                for i in reversed(order)
                if self.main[i] and self.records[i]["type"] in ("message", "compaction")
            ),
            None,
        )
        if leaf is not None and leaf != len(order) - 1:
            order.append(order.pop(leaf))
        # The records are ours alone, so they are frozen without the copy from_record makes,
        # and the fields from_record would derive are known (ids are strings or None).
        entries = []
        for i in order:
            record = self.records[i]
            ts = record["timestamp"]
            source_id = record["sourceId"] if "sourceId" in record else None
            entries.append(
                Entry(
                    record["type"],
                    record["id"],
                    record["parentId"],
                    ts if isinstance(ts, str) else None,
                    MappingProxyType(record),
                    self.lines[i],
                    source_id if isinstance(source_id, str) else None,
                )
            )
        return entries


# -- header and files -----------------------------------------------------------------------


def _first(values: list[tuple[int, Any]], key: str) -> Any:
    for _, rec in values:
        if isinstance(rec, dict) and rec.get(key) is not None:
            return rec[key]
    return None


def _header(path: str, values: list[tuple[int, Any]], builder: _Builder) -> dict[str, Any]:
    session_id = _first(values, "sessionId")
    session_id = session_id if isinstance(session_id, str) else Path(path).stem
    # A main file has no agentId: not worth a scan of every line.
    agent_id = _first(values, "agentId") if builder.linked_file else None
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": session_id,
    }
    for key in ("timestamp", "cwd"):
        value = _first(values, key)
        if isinstance(value, str):
            header[key] = value
    header["sourceFormat"] = SOURCE_FORMAT
    if isinstance(agent_id, str) and builder.linked_file:
        header["id"] = f"{session_id}/agent-{agent_id}"
        header["agentId"] = agent_id
        header["parentSessionId"] = session_id
        compaction = agent_id.startswith(_COMPACTION_AGENT_PREFIX)
        header["subagentKind"] = "compaction" if compaction else "subagent"
    for source_key, key in (
        ("version", "sourceVersion"),
        ("gitBranch", "gitBranch"),
        ("slug", "slug"),
    ):
        value = _first(values, source_key)
        if isinstance(value, str) and value:
            header[key] = value
    if builder.title is not None:
        header["title"] = builder.title
    if builder.source_records:
        header["sourceRecords"] = builder.source_records
    return header


def subagent_paths(path: str | os.PathLike[str]) -> list[Path]:
    """The subagent transcripts of a main session file (`<stem>/subagents/agent-*.jsonl`)."""
    folder = Path(path).with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())


def _linked_header(sub: Session, builder: _Builder) -> Session:
    """A subagent session whose header names the call or compaction that started it."""
    extra: dict[str, Any] = {}
    agent_id = sub.header.get("agentId")
    if isinstance(agent_id, str) and agent_id in builder.agent_calls:
        extra["parentToolCallId"] = builder.agent_calls[agent_id]
    for entry in sub.entries:
        foreign = entry.get("sourceParentId")
        if foreign in builder.compaction_by_logical_parent:
            extra["compactionEntryId"] = builder.compaction_by_logical_parent[foreign]
    if not extra:
        return sub
    return sub.copy_with(header={**sub.header, **extra})


def session_from_claude_code_values(
    path: str,
    values: list[tuple[int, Any]],
    log: ProblemLog,
    *,
    strict: bool = False,
    read_linked: bool = True,
) -> Session:
    """Build a `Session` from parsed Claude Code lines (`(line_number, value)` pairs).

    Args:
        path: The file the lines came from (for problems and the subagent folder).
        values: Parsed JSONL values in file order.
        log: Where problems go; its `finish()` gives this file's part of `errors`.
        strict: Passed on to the readers of subagent files.
        read_linked: Read `<stem>/subagents/agent-*.jsonl` beside `path` into `linked`.
    """
    # A subagent file: every line with a uuid is a sidechain (vacuously, for none). A main
    # file tells on its first such line.
    linked_file = all(
        rec.get("isSidechain") is True
        for _, rec in values
        if isinstance(rec, dict) and isinstance(rec.get("uuid"), str)
    )
    builder = _Builder(Path(path).stem, log, linked_file=linked_file, values=values)
    for lineno, rec in values:
        builder.add_line(lineno, rec)
    entries = builder.finish()
    header = _header(path, values, builder)
    linked = []
    # This file's problems in file order (strict: its earliest raised) before the subagents'.
    problems = list(log.finish())
    if read_linked:
        for sub_path in subagent_paths(path):
            sub = read_claude_code(sub_path, strict=strict)
            linked.append(_linked_header(sub, builder))
            # Reading the session read these files too; their problems name their own path.
            problems.extend(sub.errors)
    return Session(
        header,
        entries,
        errors=problems,
        source_path=path,
        source_format=SOURCE_FORMAT,
        linked=linked,
    )


def read_claude_code(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a Claude Code session transcript (JSONL) into a `Session`.

    The tree follows Claude Code's `parentUuid` links, with one assistant entry per reply,
    tool results chained after their reply, one `compaction` entry per compaction, and
    non-message lines kept as `custom` entries or header `sourceRecords` (see the module
    docstring). Subagent transcripts in `<sessionId>/subagents/` become `Session.linked`,
    and their problems (naming their own files) are listed in `errors` too.

    Args:
        path: The `<sessionId>.jsonl` file (or a subagent's `agent-*.jsonl`).
        strict: Raise `SessionReadError` for the earliest problem in the file (a subagent
            file's only when the main file has none) instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    # Deferred: strict mode raises the problem earliest in the file (the one lenient mode
    # lists first), after the whole file has been looked at.
    log = ProblemLog(p, strict=strict, deferred=True)
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a JSONL session")
        values: list[tuple[int, Any]] = []
    elif not data.strip():
        log.add(None, "empty-file", "file is empty")
        values = []
    else:
        values = parse_jsonl(data, log)
    return session_from_claude_code_values(p, values, log, strict=strict)
