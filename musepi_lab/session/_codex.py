"""OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/.../rollout-<ts>-<uuid>.jsonl`) → `Session`.

A rollout is one JSON object per line, `{"timestamp", "type", "payload"}`, with `type` one of
`session_meta`, `response_item` (what the model saw or said), `event_msg` (UI events),
`turn_context` (per-turn settings) and `compacted` (a Codex compaction). The mapping:

- `session_meta` (the first one) → the session header; it is not an entry.
- Every other line → exactly one entry, chained linearly in file order, with `line=` and a
  `sourceId` (the Codex `call_id` for tool items, the item `id` when there is one, else
  `line:<n>`). Payload fields the pi shape has no place for are kept in `sourceFields`.
- `response_item` `message` → a `user`, `developer` (also for `system`) or `assistant`
  message. User messages Codex injects itself (environment context, AGENTS.md / user
  instructions, turn-aborted notes) stay user messages, marked with `sourceKind`.
- `reasoning` → an assistant message with one thinking block (the summary text; the
  encrypted reasoning in `thinkingSignature`).
- `function_call`, `custom_tool_call`, `local_shell_call`, `web_search_call` → an assistant
  message with one toolCall block. Each response item is its own message entry (not merged
  per model response): lines, source ids and counts stay one-to-one with the rollout.
- `function_call_output`, `custom_tool_call_output` → a toolResult paired by `call_id`. A
  call without output stays without one; an output for an unknown call is kept and recorded
  as `unpaired-tool-result`.
- `compacted` → a pi `compaction` entry (spec §1.4, §5.7), replay data in
  `preserveData.openaiRemoteCompaction`.
- `event_msg` and `turn_context` → `custom` entries (`customType: "codex:<type>"`), so
  nothing is lost and none of them reaches the LLM context. `event_msg` `user_message` /
  `agent_message` repeat response items; as custom entries they are never counted twice.
  A `token_count` event also gives its model response's last assistant item a `usage`
  (`assign_usage`), so replays can compare estimates with what the provider counted.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from ._errors import ProblemLog, SessionReadError
from ._importing import (
    IdAllocator,
    assistant_message,
    epoch_ms,
    message_record,
    text_block,
    tool_call_block,
    tool_result_message,
    usage,
    user_message,
)
from ._jsonl import looks_binary, parse_jsonl, read_bytes_checked
from ._model import Entry
from ._session import CURRENT_SESSION_VERSION, Session

_T = TypeVar("_T")

SOURCE_FORMAT = "codex"
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

# How Codex itself recognizes the user messages it injects (codex-rs `is_session_prefix`,
# `UserInstructions::is_user_instructions`), compared case-insensitively on the text start.
_CONTEXT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# agents.md instructions for", "user_instructions"),
    ("<turn_aborted>", "turn_aborted"),
    ("<skill>", "skill_instructions"),
    ("<subagent_notification>", "subagent_notification"),
)
CONTEXTUAL_KIND = "contextual"
"""`sourceKind` of a user message judged injected by position, not by its (unreadable) text."""

# Sanitized corpora replace every text, even an empty one, by a marker; `len=0` means the
# original was empty (the sha is that of the empty string).
_EMPTY_REDACTION = re.compile(r"\[REDACTED_[A-Z_]+ len=0(?: sha=[0-9a-f]+)?\]")
# Exit status lines Codex puts in the head of a shell output (freeform and unified exec).
_EXIT_LINE = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)\s*$", re.MULTILINE)
_EXIT_HEAD_LINES = 4
_DATA_URL = re.compile(r"data:([^;,]*)(;base64)?,(.*)", re.DOTALL)
_BOM = b"\xef\xbb\xbf"
_ROLLOUT_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

REMOTE_PLACEHOLDER = (
    "Provider-native compaction (Codex): the earlier conversation was replaced by the "
    "provider's compacted history, preserved in preserveData.openaiRemoteCompaction."
)
EMPTY_SUMMARY_PLACEHOLDER = "Codex compacted the conversation here; no summary text was recorded."

# session_meta fields lifted into the header (header key, payload key).
_HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("modelProvider", "model_provider"),
    ("cliVersion", "cli_version"),
    ("originator", "originator"),
    ("source", "source"),
    ("git", "git"),
)


# -- pure helpers ---------------------------------------------------------------------------
def is_empty_text(text: Any) -> bool:
    """True for a missing, blank, or redacted-empty (`[REDACTED_… len=0 …]`) text."""
    if not isinstance(text, str):
        return True
    stripped = text.strip()
    return not stripped or _EMPTY_REDACTION.fullmatch(stripped) is not None


def context_kind(text: str) -> str | None:
    """The kind of a Codex-injected user message (`environment_context`, ...), else None."""
    head = text.lstrip()[:64].lower()
    for prefix, kind in _CONTEXT_PREFIXES:
        if head.startswith(prefix):
            return kind
    return None


def image_block(url: Any) -> dict[str, Any]:
    """A pi image block from a Responses `image_url`.

    A base64 data URL gives the bytes; any other URL (or a redaction marker) gives an image
    block without data, with the URL in `sourceUrl`, so images still count as images.
    """
    text = url if isinstance(url, str) else ""
    match = _DATA_URL.fullmatch(text)
    if match and match.group(2):
        return {"type": "image", "data": match.group(3), "mimeType": match.group(1) or ""}
    return {"type": "image", "data": "", "mimeType": "", "sourceUrl": text}


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """pi content blocks from Responses content items (`input_text`, `output_text`, ...).

    Unknown item types are kept as they are (estimators ignore blocks they do not know).
    """
    if isinstance(content, str):
        return [text_block(content)]
    if not isinstance(content, list):
        return []
    blocks: list[dict[str, Any]] = []
    for item in content:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in ("input_text", "output_text", "text"):
            blocks.append(text_block(item.get("text") if isinstance(item.get("text"), str) else ""))
        elif kind == "refusal":
            refusal = item.get("refusal")
            blocks.append(text_block(refusal if isinstance(refusal, str) else ""))
        elif kind == "input_image":
            blocks.append(image_block(item.get("image_url")))
        else:
            blocks.append(dict(item))
    return blocks


def output_blocks(output: Any) -> list[dict[str, Any]]:
    """The toolResult content of a Codex tool output (a string, content items, or an object)."""
    if isinstance(output, (str, list)):
        return content_blocks(output)
    if isinstance(output, Mapping):
        if "content" in output:
            return output_blocks(output["content"])
        return [text_block(orjson.dumps(dict(output)).decode())]
    if output is None:
        return []
    return [text_block(str(output))]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_is_error(text: str) -> bool:
    """Whether a tool output text reports failure.

    Recognized: a JSON object with `success: false` or a non-zero `metadata.exit_code`
    (shell outputs of Codex 0.58), and an `Exit code: N` / `Process exited with code N`
    line among the first lines (later Codex shell formats). Anything else is a success.
    """
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, Mapping):
            if obj.get("success") is False:
                return True
            meta = obj.get("metadata")
            code = _int(meta.get("exit_code")) if isinstance(meta, Mapping) else None
            return code is not None and code != 0
    head = "\n".join(stripped.split("\n", _EXIT_HEAD_LINES)[:_EXIT_HEAD_LINES])
    match = _EXIT_LINE.search(head)
    return match is not None and int(match.group(1)) != 0


def output_is_error(output: Any) -> bool:
    """Whether a Codex tool output (any of its serializations) reports failure."""
    if isinstance(output, Mapping):
        if output.get("success") is False:
            return True
        return output_is_error(output.get("content"))
    if isinstance(output, str):
        return text_is_error(output)
    return False


def thinking_text(payload: Mapping[str, Any]) -> str:
    """The text of a reasoning item: its summary, or its raw content when it has no summary."""
    for key in ("summary", "content"):
        parts = payload.get(key)
        if isinstance(parts, list):
            texts = [
                p["text"]
                for p in parts
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            ]
            if texts:
                return "\n\n".join(texts)
    return ""


def parse_arguments(arguments: Any) -> Any:
    """Function-call arguments: the JSON string decoded when it is JSON, else kept as is."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}


def tool_call_of(payload: Mapping[str, Any], line: int) -> dict[str, Any]:
    """The pi toolCall block of a Codex tool-call response item."""
    kind = payload.get("type")
    call_id = call_id_of(payload) or f"line:{line}"
    if kind == "custom_tool_call":
        return tool_call_block(
            call_id, str(payload.get("name") or ""), {"input": payload.get("input")}
        )
    if kind == "local_shell_call":
        action = payload.get("action")
        return tool_call_block(
            call_id, "local_shell", action if isinstance(action, Mapping) else {}
        )
    if kind == "web_search_call":
        action = payload.get("action")
        return tool_call_block(call_id, "web_search", action if isinstance(action, Mapping) else {})
    return tool_call_block(
        call_id, str(payload.get("name") or ""), parse_arguments(payload.get("arguments"))
    )


def call_id_of(payload: Mapping[str, Any]) -> str | None:
    """The id that pairs a Codex tool call with its output (`call_id`, else the item `id`)."""
    for key in ("call_id", "id"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def usage_of(last: Mapping[str, Any]) -> dict[str, Any]:
    """pi usage from a Codex `last_token_usage` (OpenAI counts cached input inside input)."""
    inp = _int(last.get("input_tokens")) or 0
    cached = _int(last.get("cached_input_tokens")) or 0
    out = _int(last.get("output_tokens")) or 0
    return usage(
        input=max(inp - cached, 0),
        output=out,
        cache_read=cached,
        total=_int(last.get("total_tokens")),
    )


def leftover_fields(payload: Mapping[str, Any], consumed: Sequence[str]) -> dict[str, Any]:
    """Payload fields not mapped into the pi shape (nulls dropped)."""
    return {k: v for k, v in payload.items() if k not in consumed and v is not None}


def user_event_neighbours(values: Sequence[tuple[int, Any]]) -> set[int] | None:
    """Lines of user response messages next to an `event_msg` `user_message`, or None.

    Codex logs a `user_message` event for what the person typed, beside its response item;
    the messages Codex injects have none. Only response items and those events count as
    neighbours. None when the file has no such events (older rollouts): nothing to judge by.
    """
    marks: list[tuple[str, int]] = []  # ("U" user item | "R" other item | "E" event, line)
    for line, value in values:
        if not isinstance(value, Mapping) or not isinstance(value.get("payload"), Mapping):
            continue
        kind, payload = value.get("type"), value["payload"]
        if kind == "event_msg" and payload.get("type") == "user_message":
            marks.append(("E", line))
        elif kind == "response_item":
            is_user = payload.get("type") == "message" and payload.get("role") == "user"
            marks.append(("U" if is_user else "R", line))
    if not any(mark == "E" for mark, _ in marks):
        return None
    near: set[int] = set()
    for i, (mark, line) in enumerate(marks):
        if mark != "U":
            continue
        before = marks[i - 1][0] if i > 0 else None
        after = marks[i + 1][0] if i + 1 < len(marks) else None
        if "E" in (before, after):
            near.add(line)
    return near


def rollout_session_id(path: str) -> str:
    """The session uuid at the end of a rollout file name, else the file stem."""
    stem = Path(path).stem
    match = _ROLLOUT_UUID.search(stem)
    return match.group(0) if match else stem


ASSISTANT_ITEM, OTHER_ITEM, NOT_AN_ITEM = "A", "O", "-"


def assign_usage(marks: Sequence[str], requests: Sequence[tuple[int, _T]]) -> dict[int, _T]:
    """Which assistant row receives each model request's usage.

    A model response is a run of assistant items with no other response item between them
    (events in between do not count); its usage goes on the run's last item. Codex 0.104
    writes a request's token_count after the response's items, Codex 0.58 before them, so a
    request goes to the run just before it when that run has no usage yet, else to the run
    just after it, else nowhere.

    Args:
        marks: Per row, `ASSISTANT_ITEM`, `OTHER_ITEM` or `NOT_AN_ITEM` (events, settings).
        requests: `(row, usage)` per model request, `row` being its token_count's row.

    Returns:
        Row of the receiving assistant item → usage.
    """
    run_end: dict[int, int] = {}  # assistant row → last row of its run
    run: list[int] = []
    for row, mark in enumerate([*marks, OTHER_ITEM]):
        if mark == ASSISTANT_ITEM:
            run.append(row)
        elif mark == OTHER_ITEM:
            if run:
                run_end.update(dict.fromkeys(run, run[-1]))
            run = []
    items = [row for row, mark in enumerate(marks) if mark != NOT_AN_ITEM]
    assigned: dict[int, _T] = {}
    for row, usage_ in requests:
        split = bisect.bisect_left(items, row)
        neighbours = (
            items[split - 1] if split > 0 else None,
            items[split] if split < len(items) else None,
        )
        for item in neighbours:
            end = run_end.get(item) if item is not None else None
            if end is not None and end not in assigned:
                assigned[end] = usage_
                break
    return assigned


# -- the conversion -------------------------------------------------------------------------
class _Converter:
    """Turns parsed rollout lines into entry records; one instance per file read."""

    def __init__(self, path: str, values: list[tuple[int, Any]], log: ProblemLog) -> None:
        self.path = path
        self.log = log
        self.values = values
        self.meta: Mapping[str, Any] | None = None
        self.meta_timestamp: str | None = None
        meta = next(
            (
                v["payload"]
                for _, v in values
                if isinstance(v, Mapping)
                and v.get("type") == "session_meta"
                and isinstance(v.get("payload"), Mapping)
            ),
            None,
        )
        self.has_meta = meta is not None
        seed = meta.get("id") if meta is not None else None
        self.session_id = seed if isinstance(seed, str) and seed else rollout_session_id(path)
        self.ids = IdAllocator(self.session_id)
        self.rows: list[tuple[int, dict[str, Any]]] = []
        self.calls: dict[str, str] = {}  # call id → tool name
        self.answered: set[str] = set()
        self.user_near_events = user_event_neighbours(values)
        self.provider = ""
        self.model = ""
        self.first_model: str | None = None
        self.context_window: int | None = None
        self.marks: list[str] = []  # per row: ASSISTANT_ITEM, OTHER_ITEM or NOT_AN_ITEM
        self.requests: list[tuple[int, dict[str, Any]]] = []  # (row of its token_count, usage)
        self.last_cumulative: Any = None
        self.last_request_total: int | None = None
        self.open_compactions: list[int] = []

    # -- rows ----------------------------------------------------------------------------
    def next_ids(self, line: int) -> tuple[str, str | None]:
        """A fresh entry id and its parent (the previous entry: a linear chain)."""
        entry_id = self.ids.take(None, line)
        for index in self.open_compactions:
            # The entry after a compaction is its first kept entry (see `compacted`).
            self.rows[index][1]["firstKeptEntryId"] = entry_id
        self.open_compactions.clear()
        return entry_id, (self.rows[-1][1]["id"] if self.rows else None)

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
        entry_id, parent = self.next_ids(line)
        record = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": ts, **fields}
        record["sourceId"] = source_id
        self.rows.append((line, record))
        self.marks.append(mark)
        return len(self.rows) - 1

    def add_message(
        self,
        line: int,
        ts: str | None,
        message: dict[str, Any],
        source_id: str,
        *,
        mark: str = OTHER_ITEM,
        **extra: Any,
    ) -> int:
        entry_id, parent = self.next_ids(line)
        self.rows.append(
            (line, message_record(entry_id, parent, ts, message, source_id=source_id, **extra))
        )
        self.marks.append(mark)
        return len(self.rows) - 1

    def add_custom(
        self, line: int, ts: str | None, custom_type: str, data: Any, *, mark: str = NOT_AN_ITEM
    ) -> int:
        fields = {"customType": f"codex:{custom_type}", "data": data}
        return self.add(line, ts, "custom", fields, f"line:{line}", mark=mark)

    def add_assistant(
        self,
        line: int,
        ts: str | None,
        blocks: list[dict[str, Any]],
        source_id: str,
        *,
        stop_reason: str,
        **extra: Any,
    ) -> int:
        message = assistant_message(
            blocks,
            epoch_ms(ts),
            model=self.model,
            provider=self.provider,
            api=CODEX_API,
            stop_reason=stop_reason,
        )
        return self.add_message(line, ts, message, source_id, mark=ASSISTANT_ITEM, **extra)

    # -- records -------------------------------------------------------------------------
    def run(self) -> list[tuple[int, dict[str, Any]]]:
        for line, value in self.values:
            if not isinstance(value, Mapping):
                kind = type(value).__name__
                self.log.add(line, "not-an-object", f"line holds a JSON {kind}, not a rollout item")
                continue
            self.record(line, value)
        return self.rows

    def record(self, line: int, value: Mapping[str, Any]) -> None:
        kind = value.get("type")
        ts = value.get("timestamp") if isinstance(value.get("timestamp"), str) else None
        payload = value.get("payload")
        if kind not in ("session_meta", "response_item", "event_msg", "turn_context", "compacted"):
            self.log.add(
                line, "unknown-entry-type", f"unknown rollout type {kind!r}; kept as custom"
            )
            self.add_custom(line, ts, str(kind), dict(value))
            return
        if not isinstance(payload, Mapping):
            self.log.add(line, "bad-record", f"{kind} payload is not an object; kept as custom")
            self.add_custom(line, ts, str(kind), payload)
            return
        if kind == "session_meta":
            if self.meta is None:
                self.meta, self.meta_timestamp = payload, ts
                provider = payload.get("model_provider")
                self.provider = provider if isinstance(provider, str) else ""
            else:
                self.add_custom(line, ts, "session_meta", dict(payload))
        elif kind == "response_item":
            self.response_item(line, ts, payload)
        elif kind == "event_msg":
            self.event(line, ts, payload)
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model:
                self.model = model
                self.first_model = self.first_model or model
            self.add_custom(line, ts, "turn_context", dict(payload))
        else:
            self.compacted(line, ts, payload)

    def response_item(self, line: int, ts: str | None, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        item_id = payload.get("id") if isinstance(payload.get("id"), str) else None
        if kind == "message":
            self.message(line, ts, payload, item_id or f"line:{line}")
        elif kind == "reasoning":
            block: dict[str, Any] = {"type": "thinking", "thinking": thinking_text(payload)}
            if isinstance(payload.get("encrypted_content"), str):
                block["thinkingSignature"] = payload["encrypted_content"]
            # Raw reasoning content is only used when there is no summary; else it is kept.
            has_summary = bool(thinking_text({"summary": payload.get("summary")}))
            used = ("summary", "encrypted_content") + (() if has_summary else ("content",))
            extra = leftover_fields(payload, used)
            self.add_assistant(
                line, ts, [block], item_id or f"line:{line}", stop_reason="stop", sourceFields=extra
            )
        elif kind in TOOL_CALL_TYPES:
            block = tool_call_of(payload, line)
            self.calls[block["id"]] = block["name"]
            used = ("call_id", "name", "arguments", "input", "action")
            extra = leftover_fields(payload, used)
            self.add_assistant(
                line, ts, [block], block["id"], stop_reason="toolUse", sourceFields=extra
            )
        elif kind in TOOL_OUTPUT_TYPES:
            self.tool_output(line, ts, payload)
        else:
            if kind not in _NON_MESSAGE_ITEMS:
                self.log.add(
                    line,
                    "unknown-item-type",
                    f"unknown response item type {kind!r}; kept as custom",
                )
            self.add_custom(line, ts, str(kind), dict(payload), mark=OTHER_ITEM)

    def message(
        self, line: int, ts: str | None, payload: Mapping[str, Any], source_id: str
    ) -> None:
        role = payload.get("role")
        blocks = content_blocks(payload.get("content"))
        extra: dict[str, Any] = {"sourceFields": leftover_fields(payload, ("role", "content"))}
        if role == "assistant":
            self.add_assistant(line, ts, blocks, source_id, stop_reason="stop", **extra)
        elif role == "user":
            first_text = next((b["text"] for b in blocks if b.get("type") == "text"), "")
            kind = context_kind(first_text)
            if (
                kind is None
                and self.user_near_events is not None
                and line not in self.user_near_events
            ):
                kind = CONTEXTUAL_KIND
            if kind is not None:
                extra["sourceKind"] = kind
            self.add_message(line, ts, user_message(blocks, epoch_ms(ts)), source_id, **extra)
        elif role in ("developer", "system"):
            if role == "system":
                extra["sourceRole"] = "system"
            message = {"role": "developer", "content": blocks, "timestamp": epoch_ms(ts)}
            self.add_message(line, ts, message, source_id, **extra)
        else:
            self.log.add(
                line, "unknown-role", f"message role {role!r} is not a pi role; kept as custom"
            )
            self.add_custom(line, ts, "message", dict(payload), mark=OTHER_ITEM)

    def tool_output(self, line: int, ts: str | None, payload: Mapping[str, Any]) -> None:
        call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
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
        message = tool_result_message(
            call_id or f"line:{line}",
            name or "",
            output_blocks(output),
            epoch_ms(ts),
            is_error=output_is_error(output),
        )
        extra = leftover_fields(payload, ("call_id", "output"))
        self.add_message(line, ts, message, call_id or f"line:{line}", sourceFields=extra)

    def event(self, line: int, ts: str | None, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        window = _int(payload.get("model_context_window"))
        info = payload.get("info")
        if kind == "token_count" and isinstance(info, Mapping):
            window = window or _int(info.get("model_context_window"))
            self.token_count(info)
        if self.context_window is None and window:
            self.context_window = window
        self.add_custom(line, ts, str(kind), dict(payload))

    def token_count(self, info: Mapping[str, Any]) -> None:
        last = info.get("last_token_usage")
        cumulative = info.get("total_token_usage")
        if not isinstance(last, Mapping):
            return
        # Codex repeats a token_count without a new request (same cumulative totals), and
        # around a compaction writes one with zero input and output: neither is a request.
        if cumulative is not None and cumulative == self.last_cumulative:
            return
        self.last_cumulative = cumulative
        if not (_int(last.get("input_tokens")) or _int(last.get("output_tokens"))):
            return
        self.last_request_total = _int(last.get("total_tokens"))
        # The token_count entry is added right after this call: it gets the next row.
        self.requests.append((len(self.rows), usage_of(last)))

    def compacted(self, line: int, ts: str | None, payload: Mapping[str, Any]) -> None:
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
        if remote:
            preserved: dict[str, Any] = {"provider": "openai", "replacementHistory": history}
            item = next(
                (
                    h
                    for h in history
                    if isinstance(h, Mapping)
                    and h.get("type") in ("compaction", "compaction_summary")
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
        index = self.add(line, ts, "compaction", body, f"line:{line}", mark=OTHER_ITEM)
        self.open_compactions.append(index)

    def finish(self) -> None:
        for row, usage_ in assign_usage(self.marks, self.requests).items():
            self.rows[row][1]["message"]["usage"] = usage_
        for index in self.open_compactions:
            # A compaction on the last line keeps nothing: point at itself, not at a missing id.
            self.rows[index][1]["firstKeptEntryId"] = self.rows[index][1]["id"]
        self.open_compactions.clear()

    # -- header --------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        meta = self.meta or {}
        first_ts = next((r["timestamp"] for _, r in self.rows if r.get("timestamp")), None)
        timestamp = meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else None
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": self.session_id,
            "timestamp": timestamp or self.meta_timestamp or first_ts,
            "cwd": meta.get("cwd") if isinstance(meta.get("cwd"), str) else "",
            "sourceFormat": SOURCE_FORMAT,
        }
        if self.first_model:
            header["model"] = self.first_model
        for key, source_key in _HEADER_FIELDS:
            if meta.get(source_key) is not None:
                header[key] = meta[source_key]
        if self.context_window:
            header["contextWindow"] = self.context_window
        lifted = {"id", "timestamp", "cwd", *(k for _, k in _HEADER_FIELDS)}
        rest = {k: v for k, v in meta.items() if k not in lifted and v is not None}
        if rest:
            header["codexMeta"] = rest
        return header


def read_codex(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read an OpenAI Codex CLI rollout JSONL file into a `Session`.

    Every line but the `session_meta` header becomes one entry, chained in file order;
    messages get pi shapes, native Codex compactions become `compaction` entries, and UI
    events and turn settings are kept as `custom` entries outside the LLM context. See the
    module docstring for the full mapping.

    Args:
        path: The rollout `.jsonl` file (never modified).
        strict: Raise `SessionReadError` for the earliest problem in the file instead of
            recording it.

    Returns:
        The session, `source_format="codex"`, problems in `Session.errors`.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    # Problems are collected first and raised (strict) or listed in file order at the end,
    # so strict mode names the same first problem that lenient mode lists first.
    log = ProblemLog(p, strict=False)
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a rollout")
        return _finish(_empty_session(p), log, strict=strict)
    if not data.removeprefix(_BOM).strip():
        log.add(None, "empty-file", "file is empty")
        return _finish(_empty_session(p), log, strict=strict)
    values = parse_jsonl(data, log)
    converter = _Converter(p, values, log)
    if not converter.has_meta and values:
        log.add(values[0][0], "missing-header", "rollout has no session_meta; header synthesized")
    rows = converter.run()
    converter.finish()
    entries = [Entry.from_record(record, line=line) for line, record in rows]
    session = Session(converter.header(), entries, source_path=p, source_format=SOURCE_FORMAT)
    return _finish(session, log, strict=strict)


def _finish(session: Session, log: ProblemLog, *, strict: bool) -> Session:
    problems = sorted(log.problems, key=lambda q: (q.line is not None, q.line or 0))
    if strict and problems:
        raise SessionReadError.from_problem(problems[0])
    return session.copy_with(errors=problems)


def _empty_session(path: str) -> Session:
    header = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": rollout_session_id(path),
        "cwd": "",
        "sourceFormat": SOURCE_FORMAT,
    }
    return Session(header, (), source_path=path, source_format=SOURCE_FORMAT)
