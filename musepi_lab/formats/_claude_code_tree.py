"""The Claude Code entry tree: lines, in file order, into v3 records.

Split from `_claude_code.py`, whose docstring gives the choices this builder makes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import Entry, new_entry
from ._claude_code_blocks import (
    assistant_block,
    stop_reason,
    text_of,
    tool_result_content,
    usage_from_anthropic,
    user_blocks,
)
from ._claude_code_links import (
    BoundaryLink,
    boundary_parent,
    line_without_uuid,
    link_boundaries,
    link_sidechains,
    preserved_heads,
    spawn_prompt,
)
from ._records import (
    assistant_message,
    epoch_ms,
    message_record,
    stable_id,
    text_block,
    tool_result_message,
    user_message,
)

PROVIDER = "anthropic"
API = "anthropic-messages"
COMPACTION_METHOD = "claude-code"


# -- the tree builder -----------------------------------------------------------------------


class TreeBuilder:
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
        self.workflow_calls: dict[str, str] = {}  # Workflow runId -> tool_use id
        self.boundary_links: list[BoundaryLink] = []  # boundaries settled in `finish`
        self.side_agents: dict[str, str] = {}  # inline sidechain entry id -> its agentId
        self.spawn_prompts: list[tuple[str, str]] = []  # (Task call id, prompt), file order
        self._last_main: str | None = None  # the latest main-chain message or compaction
        self._pending_boundary: dict[str, Any] | None = None  # a boundary without a uuid
        self.steering: set[str] = set()  # queued texts already made entries
        self.user_text: str | None = None  # every user line's text, once a queued one asks
        self.splice: tuple[str | None, str] | None = None  # (entry, steering entry after it)
        self._alias: dict[str, str] = {}  # source uuid -> entry id its children hang from
        self._region: dict[str, str] = {}  # entry id -> id of the reply whose region it is in
        self._tail: dict[str, str] = {}  # reply id -> latest entry of its result chain
        self._replies: dict[tuple[bool, str], dict[str, Any]] = {}
        self._reply_records: list[dict[str, Any]] = []  # each still holding its raw "_stop"
        self._calls: dict[str, str] = {}  # tool_use id -> tool name
        self._boundaries: dict[str, dict[str, Any]] = {}  # uuid -> compaction still unfilled
        self._after_compaction: dict[str, str] = {}  # entry id -> nearest compaction above
        self._last_id: str | None = None
        self._by_id: dict[str, dict[str, Any]] = {}  # entry id -> its record (still open)
        self._dissolved: dict[str, str | None] = {}  # progress uuid -> entry it hangs from
        self._forward: list[tuple[int, str, str]] = []  # (line, parent uuid, field) to link
        self._progress_forward: dict[str, str] = {}  # progress uuid -> its later parent

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

    def _resolve(
        self, rec: Mapping[str, Any], lineno: int, *, splice: bool = True
    ) -> tuple[str | None, str | None]:
        """(parent entry id, foreign parent uuid) for a record's `parentUuid`.

        A compaction boundary has a null `parentUuid` and names the line before it in
        `logicalParentUuid`, which is followed instead. A parent written later in the file
        (Claude Code writes lines as they settle) is linked in `finish`.
        """
        field = "parentUuid"
        parent = rec.get("parentUuid")
        if not isinstance(parent, str) or not parent:
            field, parent = "logicalParentUuid", rec.get("logicalParentUuid")
        if not isinstance(parent, str):
            return None, None
        if parent in self._dissolved:
            # A progress line's child hangs where the progress line hung.
            entry_id = self._dissolved[parent]
            if entry_id is None:
                later = self._progress_forward.get(parent)
                if later is not None:  # the progress line's own parent comes later
                    self._forward.append((lineno, later, field))
                return None, None
        else:
            entry_id = self._alias.get(parent)
        foreign = None
        if entry_id is None:
            if parent in self.file_uuids():
                self._forward.append((lineno, parent, field))
                return None, None
            if not self.linked_file:
                self.log.add(
                    lineno,
                    "dangling-parent",
                    f"{field} {parent!r} names no line; the entry becomes a root",
                )
                return None, None
            # A subagent line continuing from the parent session: chain it in file order.
            entry_id, foreign = self._last_id, parent
            if entry_id is None:
                return None, foreign
        tail = self._tail_of(entry_id)
        return (self._spliced(tail, rec) if splice and foreign is None else tail), foreign

    def _spliced(self, parent: str | None, rec: Mapping[str, Any]) -> str | None:
        """A steering entry written after `parent` takes the next main line hanging there."""
        splice = self.splice
        if splice is None or rec.get("isSidechain") is True or parent != splice[0]:
            return parent
        self.splice = None
        return splice[1]

    def _tail_of(self, entry_id: str) -> str:
        region = self._region.get(entry_id)
        return self._tail[region] if region is not None else entry_id

    def _link_forward(self) -> None:
        """Link lines whose parent was written after them, now every line is known."""
        first_record: dict[int, dict[str, Any]] = {}
        for record, lineno in zip(self.records, self.lines, strict=True):
            first_record.setdefault(lineno, record)
        for lineno, parent, field in self._forward:
            found = first_record.get(lineno)
            if found is None:
                continue  # a progress line, kept in the header
            record = found
            if parent in self._dissolved:
                target = self._dissolved[parent]
                if target is None:
                    continue  # under a root progress line: a root, as in Claude Code
            else:
                target = self._alias.get(parent)
            target = self._tail_of(target) if target is not None else None
            if target is None or self._is_below(target, record["id"]):
                self.log.add(
                    lineno,
                    "dangling-parent",
                    f"{field} {parent!r} names a later line that cannot be its parent "
                    "(it descends from this one); the entry becomes a root",
                )
                continue
            record["parentId"] = target

    def _is_below(self, entry_id: str, ancestor: str) -> bool:
        seen: set[str] = set()
        node: str | None = entry_id
        while node is not None and node not in seen:
            if node == ancestor:
                return True
            seen.add(node)
            record = self._by_id.get(node)
            node = record.get("parentId") if record is not None else None
        return False

    def _progress(self, lineno: int, rec: Mapping[str, Any]) -> None:
        """A hook or subagent progress line: metadata on the entry it hangs from.

        Claude Code writes one per hook run and subagent step, each a leaf beside the
        conversation (about 1,300 in a long session); as entries they would be that many
        side branches. Kept verbatim under `progress` on their parent entry (root ones in
        the header's `sourceRecords`); lines hanging from them hang from that entry.
        """
        waiting = len(self._forward)
        parent, _ = self._resolve(rec, lineno, splice=False)
        uuid = rec.get("uuid")
        if len(self._forward) > waiting and isinstance(uuid, str):
            self._progress_forward[uuid] = self._forward[-1][1]
        item = {"line": lineno, "record": rec}
        holder = self._by_id.get(parent) if parent is not None else None
        if holder is None:
            self.source_records.append(item)
        else:
            holder.setdefault("progress", []).append(item)
        if isinstance(uuid, str) and uuid not in self._alias:
            self._dissolved.setdefault(uuid, parent)

    def _add(
        self,
        record: dict[str, Any],
        lineno: int,
        rec: Mapping[str, Any],
        *,
        foreign_parent: str | None = None,
    ) -> str:
        entry_id = str(record["id"])
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
        self._by_id[entry_id] = record
        self._last_id = entry_id
        if side and not self.linked_file and isinstance(rec.get("agentId"), str):
            self.side_agents[entry_id] = rec["agentId"]
        elif not side and record["type"] in ("message", "compaction"):
            self._last_main = entry_id
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
            kind = line_without_uuid(self, lineno, rec, kind)
            if kind is None:
                return
        raw_message = rec.get("message")
        message: Mapping[str, Any] = raw_message if isinstance(raw_message, dict) else {}
        if kind in ("user", "assistant") and not isinstance(raw_message, dict):
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
        elif kind == "progress":
            self._progress(lineno, rec)
        else:
            self._custom(lineno, rec)

    def _assistant(self, lineno: int, rec: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        content = message.get("content")
        raw_blocks = content if isinstance(content, list) else [text_block(text_of(content))]
        blocks = [assistant_block(b) for b in raw_blocks]
        main_thread = not self.linked_file and rec.get("isSidechain") is not True
        for block, raw in zip(blocks, raw_blocks, strict=True):
            if block.get("type") == "toolCall":
                self._calls[block["id"]] = block["name"]
                prompt = spawn_prompt(block, raw) if main_thread else None
                if prompt is not None:
                    self.spawn_prompts.append((block["id"], prompt))
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
        # Which request the reply was: usage is counted once per message.id and requestId
        # across files (analysis.usage_df), as Claude Code copies replies between files.
        if isinstance(mid, str):
            record["sourceMessageId"] = mid
        if isinstance(rec.get("requestId"), str):
            record["sourceRequestId"] = rec["requestId"]
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
            self._note_spawn(rec, tool_use_result, call_id)
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

    def _note_spawn(self, rec: Mapping[str, Any], result: Any, call_id: str) -> None:
        """Remember which call started an agent (`agentId`, Claude Code 2.0 also on the
        result line itself) or a workflow run (`runId`)."""
        agent = result.get("agentId") if isinstance(result, dict) else None
        if not isinstance(agent, str) and rec.get("isSidechain") is not True:
            agent = rec.get("agentId")
        if isinstance(agent, str):
            self.agent_calls.setdefault(agent, call_id)
        run = result.get("runId") if isinstance(result, dict) else None
        if isinstance(run, str):
            self.workflow_calls.setdefault(run, call_id)

    def _boundary(self, lineno: int, rec: Mapping[str, Any]) -> dict[str, Any]:
        uuid = rec.get("uuid")
        meta = rec.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        entry_id = self._take_id(uuid, lineno)
        parent, foreign = boundary_parent(self, lineno, rec, meta, entry_id)
        pre = meta.get("preTokens")
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
        elif rec.get("type") == "system":
            self._pending_boundary = record  # its summary line cannot name it
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
        if boundary is None and self._pending_boundary is not None:
            boundary, self._pending_boundary = self._pending_boundary, None
            self._register_uuid(uuid, boundary["id"], lineno)
        elif boundary is None:
            # A summary line without its boundary (older files): a compaction of its own.
            boundary = self._boundary(lineno, {**rec, "compactMetadata": {}})
            self._boundaries.pop(str(uuid), None)
        else:
            self._register_uuid(uuid, boundary["id"], lineno)
        boundary["summary"] = summary
        if isinstance(uuid, str) and uuid != boundary["sourceId"]:
            boundary["summarySourceId"] = uuid

    def _custom(self, lineno: int, rec: Mapping[str, Any]) -> None:
        # Many lines of a file are custom (system lines): `_take_id`, `_add`,
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
            self._by_id[entry_id] = record
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
        self._link_forward()
        link_boundaries(self)
        if not self.linked_file:
            link_sidechains(self)
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
            # A preserved segment keeps its messages before the compaction; else nothing
            # before it is kept and the first message after it is the first kept.
            first_message.update(preserved_heads(self))
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
                new_entry(
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
