"""The line-by-line conversion of a Codex rollout into entry records (`Converter`); the
mapping it follows is described in `_codex`, which reads files with it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import Entry, new_entry
from ._codex_family import ChildMeta
from ._codex_header import codex_header
from ._codex_items import (
    ASSISTANT_ITEM,
    EVENT_MARK,
    LEGACY_STATE,
    NOT_AN_ITEM,
    OTHER_ITEM,
    RESPONSE_ITEM_MARK,
    USER_ITEM_MARK,
    LineIds,
    assign_usage,
    content_blocks,
    context_kind,
    int_or_none,
    is_empty_text,
    leftover_fields,
    output_blocks,
    output_is_error,
    prompt_message,
    reasoning_text,
    request_usage,
    rollout_session_id,
    tool_call_of,
    unpaired_prompt_events,
    usage_of,
    user_event_neighbours,
    zero_usage,
)
from ._records import epoch_ms, text_block

CODEX_API = "openai-responses"
"""The `api` of imported assistant messages: Codex talks to the OpenAI Responses API."""

TOOL_CALL_TYPES: frozenset[str] = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
"""Response item types that become toolCall blocks."""

TOOL_OUTPUT_TYPES: frozenset[str] = frozenset({"function_call_output", "custom_tool_call_output"})
"""Response item types that become toolResult messages."""

# Response items that are not conversation but are expected in rollouts (kept as custom).
_NON_MESSAGE_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "other"})

CONTEXTUAL_KIND = "contextual"
"""`sourceKind` of a user message judged injected by position, not by its (unreadable) text."""

REMOTE_PLACEHOLDER = (
    "Provider-native compaction (Codex): the earlier conversation was replaced by the "
    "provider's compacted history, preserved in preserveData.openaiRemoteCompaction."
)
EMPTY_SUMMARY_PLACEHOLDER = "Codex compacted the conversation here; no summary text was recorded."

# Payload fields each response item maps into the pi shape (the rest go to sourceFields).
_MESSAGE_FIELDS = ("role", "content")
_CALL_FIELDS = ("call_id", "name", "arguments", "input", "action")
_OUTPUT_FIELDS = ("call_id", "output")
_REASONING_FIELDS = ("summary", "encrypted_content")
# Raw reasoning content is only used when there is no summary; else it is kept.
_REASONING_FIELDS_NO_SUMMARY = (*_REASONING_FIELDS, "content")


class Converter:
    """Turns parsed rollout lines into entry records; one instance per file read.

    Runs once per line of files with tens of thousands of lines, so records are built as
    dict literals in place, without the generic builders' copies. The parsed lines belong
    to the converter: payloads kept whole (events, settings) go into records uncopied.
    """

    def __init__(
        self,
        path: str,
        values: list[tuple[int, Any]],
        log: ProblemLog,
        *,
        inherited: frozenset[int] = frozenset(),
    ) -> None:
        self.path = path
        self.log = log
        self.values = values
        self.inherited = inherited  # lines a fork copied from another session
        self.meta: Mapping[str, Any] | None = None
        self.meta_timestamp: str | None = None
        meta = next(
            (
                v["payload"]
                for _, v in values
                if isinstance(v, dict)
                and v.get("type") == "session_meta"
                and isinstance(v.get("payload"), dict)
            ),
            None,
        )
        self.has_meta = meta is not None
        seed = meta.get("id") if meta is not None else None
        self.session_id = seed if isinstance(seed, str) and seed else rollout_session_id(path)
        self.ids = LineIds(self.session_id)
        self.records: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.marks: list[str] = []  # per row: ASSISTANT_ITEM, OTHER_ITEM or NOT_AN_ITEM
        self.calls: dict[str, str] = {}  # call id → tool name
        self.answered: set[str] = set()
        # User messages are judged injected or typed once the whole file is seen (finish).
        self.neighbour_marks: list[tuple[str, int]] = []
        self.unjudged_users: list[tuple[int, int]] = []  # (row, line)
        self.provider = ""
        self.model = ""
        self.first_model: str | None = None
        self.context_window: int | None = None
        self.requests: list[tuple[int, dict[str, Any]]] = []  # (row of its token_count, usage)
        self.last_cumulative: Any = None
        self.last_request_total: int | None = None
        self.compaction_rows: list[int] = []
        # The row of the reply under way: output items join it until another response
        # item, a new request or a prompt ends it (one request, one assistant entry).
        self.open_reply: int | None = None
        self.request_models: dict[int, tuple[str, str]] = {}  # token_count row → model
        self.prompt_events: list[tuple[int, int]] = []  # (row, line) of user_message events

    # -- rows ----------------------------------------------------------------------------
    def push(self, line: int, record: dict[str, Any], mark: str) -> int:
        """Append a new row. Its `id` and `parentId` (keys in place, None for now) are
        filled by `finish`, in one pass: the entries form a chain in file order."""
        if mark != NOT_AN_ITEM:
            self.open_reply = None  # a response item ends the reply under way
        self.records.append(record)
        self.lines.append(line)
        self.marks.append(mark)
        return len(self.records) - 1

    def add(
        self,
        line: int,
        ts: str | None,
        kind: str,
        fields: dict[str, Any],
        source_id: str,
        *,
        mark: str = NOT_AN_ITEM,
    ) -> int:
        record = {"type": kind, "id": None, "parentId": None, "timestamp": ts, **fields}
        record["sourceId"] = source_id
        return self.push(line, record, mark)

    def add_message(
        self,
        line: int,
        ts: str | None,
        message: dict[str, Any],
        source_id: str,
        source_fields: dict[str, Any],
        *,
        mark: str = OTHER_ITEM,
    ) -> int:
        record = {
            "type": "message",
            "id": None,
            "parentId": None,
            "timestamp": ts,
            "message": message,
            "sourceId": source_id,
            "sourceFields": source_fields,
        }
        return self.push(line, record, mark)

    def add_custom(
        self, line: int, ts: str | None, custom_type: str, data: Any, *, mark: str = NOT_AN_ITEM
    ) -> int:
        record = {
            "type": "custom",
            "id": None,
            "parentId": None,
            "timestamp": ts,
            "customType": f"codex:{custom_type}",
            "data": data,
            "sourceId": f"line:{line}",
        }
        # push(), inlined: half of all rows are custom.
        if mark != NOT_AN_ITEM:
            self.open_reply = None
        self.records.append(record)
        self.lines.append(line)
        self.marks.append(mark)
        return len(self.records) - 1

    def add_assistant(
        self,
        line: int,
        ts: str | None,
        blocks: list[dict[str, Any]],
        source_id: str,
        source_fields: dict[str, Any],
        *,
        stop_reason: str,
    ) -> int:
        """An output item: a new assistant entry, or more blocks of the reply under way
        (Codex writes each item of one response as its own line; they are one request)."""
        item = {"line": line, "sourceId": source_id, "timestamp": ts}
        if source_fields:
            item["sourceFields"] = source_fields
        row = self.open_reply
        if row is not None:
            record = self.records[row]
            message = record["message"]
            message["content"].extend(blocks)
            if stop_reason == "toolUse":
                message["stopReason"] = "toolUse"
            record["sourceItems"].append(item)
            return row
        message = {
            "role": "assistant",
            "content": blocks,
            "api": CODEX_API,
            "provider": self.provider,
            "model": self.model,
            "usage": zero_usage(),
            "stopReason": stop_reason,
            "timestamp": epoch_ms(ts),
        }
        record = {
            "type": "message",
            "id": None,
            "parentId": None,
            "timestamp": ts,
            "message": message,
            "sourceId": source_id,
            # Each item's line, id and unmapped fields, in the order its blocks come.
            "sourceItems": [item],
        }
        row = self.push(line, record, ASSISTANT_ITEM)
        self.open_reply = row
        return row

    # -- records -------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        handlers = {
            "response_item": self.response_item,
            "event_msg": self.event,
            "turn_context": self.turn_context,
            "session_meta": self.session_meta,
            "compacted": self.compacted,
            LEGACY_STATE: self.legacy_state,
        }
        for line, value in self.values:
            if not isinstance(value, dict):
                found = type(value).__name__
                self.log.add(
                    line, "not-an-object", f"line holds a JSON {found}, not a rollout item"
                )
                continue
            kind = value.get("type")
            ts = value.get("timestamp")
            if not isinstance(ts, str):
                ts = None
            if line in self.inherited:
                # Another session's record, copied: kept whole, never this session's own.
                self.add_custom(line, ts, "inherited", value)
                continue
            payload = value.get("payload")
            handler = handlers.get(kind) if isinstance(kind, str) else None
            if handler is None:
                self.log.add(
                    line, "unknown-entry-type", f"unknown rollout type {kind!r}; kept as custom"
                )
                self.add_custom(line, ts, str(kind), value)
            elif not isinstance(payload, dict):
                self.log.add(line, "bad-record", f"{kind} payload is not an object; kept as custom")
                self.add_custom(line, ts, str(kind), payload)
            else:
                handler(line, ts, payload)
        return self.records

    def session_meta(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        if self.meta is None:
            self.meta, self.meta_timestamp = payload, ts
            provider = payload.get("model_provider")
            self.provider = provider if isinstance(provider, str) else ""
        else:
            self.add_custom(line, ts, "session_meta", payload)

    def legacy_state(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        self.add_custom(line, ts, "state", payload)  # a legacy `{"record_type": …}` marker

    def turn_context(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.model = model
            self.first_model = self.first_model or model
        self.add_custom(line, ts, "turn_context", payload)

    def response_item(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        item_id = payload.get("id")
        source_id = item_id if isinstance(item_id, str) and item_id else f"line:{line}"
        if kind == "message":
            self.message(line, ts, payload, source_id)
            return
        self.neighbour_marks.append((RESPONSE_ITEM_MARK, line))
        if kind in TOOL_CALL_TYPES:
            block = tool_call_of(payload, line)
            self.calls[block["id"]] = block["name"]
            extra = leftover_fields(payload, _CALL_FIELDS)
            self.add_assistant(line, ts, [block], block["id"], extra, stop_reason="toolUse")
        elif kind in TOOL_OUTPUT_TYPES:
            self.tool_output(line, ts, payload)
        elif kind == "reasoning":
            text, has_summary = reasoning_text(payload)
            thinking: dict[str, Any] = {"type": "thinking", "thinking": text}
            if isinstance(payload.get("encrypted_content"), str):
                thinking["thinkingSignature"] = payload["encrypted_content"]
            used = _REASONING_FIELDS if has_summary else _REASONING_FIELDS_NO_SUMMARY
            extra = leftover_fields(payload, used)
            self.add_assistant(line, ts, [thinking], source_id, extra, stop_reason="stop")
        else:
            if kind not in _NON_MESSAGE_ITEMS:
                self.log.add(
                    line,
                    "unknown-item-type",
                    f"unknown response item type {kind!r}; kept as custom",
                )
            self.add_custom(line, ts, str(kind), payload, mark=OTHER_ITEM)

    def message(self, line: int, ts: str | None, payload: dict[str, Any], source_id: str) -> None:
        role = payload.get("role")
        self.neighbour_marks.append(
            (USER_ITEM_MARK if role == "user" else RESPONSE_ITEM_MARK, line)
        )
        blocks = content_blocks(payload.get("content"))
        extra = leftover_fields(payload, _MESSAGE_FIELDS)
        if role == "assistant":
            self.add_assistant(line, ts, blocks, source_id, extra, stop_reason="stop")
        elif role == "user":
            message = {"role": "user", "content": blocks, "timestamp": epoch_ms(ts)}
            row = self.add_message(line, ts, message, source_id, extra)
            first_text = next((b["text"] for b in blocks if b.get("type") == "text"), "")
            kind = context_kind(first_text)
            if kind is not None:
                self.records[row]["sourceKind"] = kind
            else:
                self.unjudged_users.append((row, line))
        elif role in ("developer", "system"):
            message = {"role": "developer", "content": blocks, "timestamp": epoch_ms(ts)}
            row = self.add_message(line, ts, message, source_id, extra)
            if role == "system":
                self.records[row]["sourceRole"] = "system"
        else:
            self.log.add(
                line, "unknown-role", f"message role {role!r} is not a pi role; kept as custom"
            )
            self.add_custom(line, ts, "message", payload, mark=OTHER_ITEM)

    def tool_output(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        call_id = payload.get("call_id")
        if not isinstance(call_id, str):
            call_id = None
        name = self.calls.get(call_id) if call_id else None
        if name is None:
            self.log.add(
                line,
                "unpaired-tool-result",
                f"{payload.get('type')} for call_id {call_id!r} follows no tool call with that id; "
                "kept as a toolResult without a tool name",
            )
        elif call_id in self.answered:
            self.log.add(
                line,
                "duplicate-tool-result",
                f"a second output for call_id {call_id!r}; both are kept",
            )
        if call_id:
            self.answered.add(call_id)
        output = payload.get("output")
        message = {
            "role": "toolResult",
            "toolCallId": call_id or f"line:{line}",
            "toolName": name or "",
            "content": [text_block(output)] if isinstance(output, str) else output_blocks(output),
            "isError": bool(output_is_error(output)),
            "timestamp": epoch_ms(ts),
        }
        extra = leftover_fields(payload, _OUTPUT_FIELDS)
        self.add_message(line, ts, message, call_id or f"line:{line}", extra)

    def event(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        info = payload.get("info") if kind == "token_count" else None
        if isinstance(info, dict):
            self.token_count(info)
        elif kind == "user_message":
            self.neighbour_marks.append((EVENT_MARK, line))
            self.prompt_events.append((len(self.records), line))
            self.open_reply = None  # a prompt: what follows is another request
        if self.context_window is None:
            # The first window named wins (task_started carries it, later token_counts too).
            window = int_or_none(payload.get("model_context_window"))
            if not window and isinstance(info, dict):
                window = int_or_none(info.get("model_context_window"))
            if window:
                self.context_window = window
        self.add_custom(line, ts, str(kind), payload)

    def token_count(self, info: dict[str, Any]) -> None:
        last = info.get("last_token_usage")
        cumulative = info.get("total_token_usage")
        if not isinstance(last, dict):
            return
        # Codex repeats a token_count without a new request (same cumulative totals), and
        # around a compaction writes one with zero input and output: neither is a request.
        if cumulative is not None and cumulative == self.last_cumulative:
            return
        self.last_cumulative = cumulative
        if not (int_or_none(last.get("input_tokens")) or int_or_none(last.get("output_tokens"))):
            return
        self.last_request_total = int_or_none(last.get("total_tokens"))
        # The token_count entry is added right after this call: it gets the next row.
        row = len(self.records)
        self.requests.append((row, usage_of(last)))
        self.request_models[row] = (self.provider, self.model)
        self.open_reply = None  # a new request: later output items are its reply

    def compacted(self, line: int, ts: str | None, payload: dict[str, Any]) -> None:
        text = payload.get("message")
        history = payload.get("replacement_history")
        remote = isinstance(history, list)
        if not is_empty_text(text):
            summary = str(text)
        else:
            summary = REMOTE_PLACEHOLDER if remote else EMPTY_SUMMARY_PLACEHOLDER
        body: dict[str, Any] = {
            "summary": summary,
            # Filled with the next entry's id: the kept context is the replacement history,
            # so nothing before the compaction is kept (spec §2.3: the payload contains it).
            "firstKeptEntryId": None,
            "tokensBefore": self.last_request_total or 0,
            "details": {"readFiles": [], "modifiedFiles": []},
        }
        if isinstance(history, list):  # remote
            preserved: dict[str, Any] = {"provider": "openai", "replacementHistory": history}
            item = next(
                (
                    h
                    for h in history
                    if isinstance(h, dict) and h.get("type") in ("compaction", "compaction_summary")
                ),
                None,
            )
            if item is not None:
                preserved["compactionItem"] = item
            body["method"] = "remote"
            body["shortSummary"] = "Remote compaction"
            body["preserveData"] = {"openaiRemoteCompaction": preserved}
        extra = leftover_fields(payload, ("message", "replacement_history"))
        if extra:
            body["sourceFields"] = extra
        row = self.add(line, ts, "compaction", body, f"line:{line}", mark=OTHER_ITEM)
        self.compaction_rows.append(row)

    def finish(self) -> list[Entry]:
        """Fill in what needs the whole file, give every row its id and parent, and wrap
        the records as entries (fresh dicts of ours: frozen, not copied)."""
        records = self.records
        self.prompts_as_messages()
        requests = self.requests
        assigned = assign_usage(self.marks, [(row, k) for k, (row, _) in enumerate(requests)])
        for row, k in assigned.items():
            records[row]["message"]["usage"] = requests[k][1]
        for k in sorted(set(range(len(requests))) - set(assigned.values())):
            row, usage_ = requests[k]
            # A request no output item answers (an interrupted turn): its usage stays on
            # its token_count entry, where usage reports find it.
            provider, model = self.request_models[row]
            records[row]["requestUsage"] = request_usage(usage_, provider, model)
        near = user_event_neighbours(self.neighbour_marks)
        if near is not None:
            for row, line in self.unjudged_users:
                if line not in near:
                    records[row]["sourceKind"] = CONTEXTUAL_KIND
        take_id = self.ids.take
        entries: list[Entry] = []
        parent: str | None = None
        for line, record in zip(self.lines, records, strict=True):
            entry_id = take_id(line)
            record["id"] = entry_id
            record["parentId"] = parent
            entries.append(
                new_entry(
                    record["type"],
                    entry_id,
                    parent,
                    record["timestamp"],
                    MappingProxyType(record),
                    line,
                    record["sourceId"],
                )
            )
            parent = entry_id
        for row in self.compaction_rows:
            # The kept context is the entry after the compaction; on the last line nothing
            # is kept, so it names itself rather than a missing id.
            kept = records[row + 1] if row + 1 < len(records) else records[row]
            records[row]["firstKeptEntryId"] = kept["id"]
        return entries

    def prompts_as_messages(self) -> None:
        """A `user_message` event with no user response item beside it is the only record
        of that prompt: its entry becomes the user message (the rest stay events)."""
        lone = unpaired_prompt_events(self.neighbour_marks)
        for row, line in self.prompt_events:
            if line not in lone:
                continue
            record = self.records[row]
            payload = record.pop("data")
            del record["customType"]
            record["type"] = "message"
            record["message"] = prompt_message(payload, epoch_ms(record["timestamp"]))
            record["sourceFields"] = leftover_fields(payload, ("message", "images"))
            record["sourceEvent"] = "user_message"
            self.marks[row] = OTHER_ITEM  # a message: no reply runs across it

    # -- header --------------------------------------------------------------------------
    def header(self, child: ChildMeta | None) -> dict[str, Any]:
        first_ts = next((r["timestamp"] for r in self.records if r["timestamp"]), None)
        return codex_header(
            self.meta or {},
            session_id=self.session_id,
            timestamp=self.meta_timestamp or first_ts,
            model=self.first_model,
            context_window=self.context_window,
            child=child,
            inherited=len(self.inherited),
        )
