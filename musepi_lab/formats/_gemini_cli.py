"""Gemini CLI sessions → `Session`.

Gemini CLI (`@google/gemini-cli-core` 0.61.0, `dist/src/services/chatRecordingService.js`
and `chatRecordingTypes.d.ts`) records each chat under
`~/.gemini/tmp/<project_hash>/chats/` in one of two layouts:

- `session-<time>-<id>.jsonl` (current): a metadata line (`sessionId`, `projectHash`,
  `startTime`, `lastUpdated`, `kind`, ...), then one line per message written. A message
  written again (with its tokens or tool calls added) replaces the earlier version of the
  same `id`; `{"$rewindTo": id}` drops that message and everything after it from the
  conversation; `{"$set": {...}}` updates the metadata, and with `messages` rebuilds the
  conversation from that list.
- `session-*.json` (legacy): one JSON object, the metadata plus `messages[]`.

A message has `id`, `timestamp`, `type` (`user`, `gemini`, `info`, `error`, `warning`) and
`content` (Gemini `Part`s, see `_gemini_parts`); a `gemini` message adds `thoughts`
(`{subject, description, timestamp}`), `toolCalls` (`{id, name, args, result, status,
timestamp, displayName, ...}`), `tokens` and `model`.

Mapping: `user` → user message (0.61 also records the function responses it sends back
as a `user` message; those parts are the results of recorded calls and are read from the
calls, so a user message holding only them gives no entry); `gemini` → assistant message (thoughts as thinking blocks,
content, one toolCall per tool call), then one toolResult per tool call that has finished
(`result` parts; `isError` when its status is `error` or `cancelled`); `info`, `warning`
and `error` (notes the CLI showed, never sent to the model) → `custom` entries
`gemini-cli:<type>` holding the raw message; an unknown type → such a custom entry and an
`unknown-message-type` problem. A rewound message is not lost: it stays as a branch off
the message before it, and the conversation Gemini CLI would resume is the path to the
leaf.

Usage (`tokens`, copied from the API's `usageMetadata`): Gemini counts cached tokens
inside `input` (`promptTokenCount` includes `cachedContentTokenCount`), and tool-use prompt
tokens and thinking tokens apart from it. So `input = input - cached + tool`,
`cacheRead = cached`, `output = output + thoughts`, `totalTokens = total`; input +
cacheRead is the prompt the model read. Costs are not recorded (zero).

Checkpoints (`/chat save <tag>` writes `~/.gemini/tmp/<hash>/checkpoint-<tag>.json`,
`dist/src/core/logger.js`) and the user-prompt log (`logs.json`) are read by
`_gemini_history`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._gemini_parts import API, PROVIDER, part_block, part_list, response_text, result_blocks
from ._io import parse_jsonl, read_bytes_checked, strip_bom
from ._records import (
    assistant_message,
    empty_session,
    epoch_ms,
    message_record,
    stable_id,
    text_block,
    token_count,
    tool_call_block,
    tool_result_message,
    usage,
    user_message,
)
from ._swe_agent import parse_json_document

SOURCE_FORMAT = "gemini-cli"
NOTE_TYPES = frozenset({"info", "warning", "error"})
_FINISHED = frozenset({"success", "error", "cancelled"})
_METADATA_KEYS = ("projectHash", "startTime", "lastUpdated", "summary", "kind", "directories")


def gemini_usage(tokens: Any) -> dict[str, Any] | None:
    """pi usage of a Gemini CLI `tokens` summary (see the module docstring), or None."""
    if not isinstance(tokens, Mapping):
        return None
    prompt, cached = token_count(tokens.get("input")), token_count(tokens.get("cached"))
    tool, thoughts = token_count(tokens.get("tool")), token_count(tokens.get("thoughts"))
    total = tokens.get("total")
    return usage(
        input=max(prompt - cached, 0) + tool,
        output=token_count(tokens.get("output")) + thoughts,
        cache_read=cached,
        total=total if token_count(total) else None,
    )


def _thinking(thought: Any) -> dict[str, Any] | None:
    if not isinstance(thought, Mapping):
        return None
    subject, description = thought.get("subject"), thought.get("description")
    text = "\n\n".join(str(t) for t in (subject, description) if isinstance(t, str) and t)
    return {"type": "thinking", "thinking": text} if text else None


def _has_result(call: Mapping[str, Any]) -> bool:
    return call.get("status") in _FINISHED or call.get("result") is not None


class _Conversation:
    """The messages of a recording, in the tree its rewinds and rebuilds make."""

    def __init__(self) -> None:
        self.latest: dict[str, tuple[Mapping[str, Any], int | None]] = {}
        self.parent: dict[str, str | None] = {}
        self.order: list[str] = []
        self.active: list[str] = []

    def place(self, msg: Mapping[str, Any], line: int | None, *, rebuild: bool = False) -> None:
        mid = str(msg["id"])
        if mid not in self.latest:
            self.order.append(mid)
        if mid not in self.latest or rebuild or mid not in self.active:
            self.parent[mid] = self.active[-1] if self.active else None
            if mid in self.active:
                self.active.remove(mid)
            self.active.append(mid)
        self.latest[mid] = (msg, line)

    def rewind(self, mid: str) -> None:
        self.active = self.active[: self.active.index(mid)] if mid in self.active else []

    def in_file_order(self) -> list[str]:
        """Message ids: those off the resumed conversation first, then the conversation,
        so the last entry is the leaf."""
        on_path = set(self.active)
        return [m for m in self.order if m not in on_path] + self.active


class _Reader:
    def __init__(self, path: str, log: ProblemLog) -> None:
        self.path = path
        self.log = log
        self.meta: dict[str, Any] = {}
        self.conv = _Conversation()
        self.answered: set[str] = set()

    def messages(self, items: Any, line: int | None, *, rebuild: bool) -> None:
        if rebuild:
            self.conv.active = []
        for index, msg in enumerate(items if isinstance(items, list) else ()):
            if isinstance(msg, Mapping) and isinstance(msg.get("id"), str):
                self.conv.place(msg, line, rebuild=rebuild)
            else:
                self.log.add(line, "bad-message", f"messages[{index}] is not a message; skipped")

    def record(self, line: int | None, rec: Any) -> None:
        """One line of a `.jsonl` recording (or the whole legacy document)."""
        if not isinstance(rec, Mapping):
            self.log.add(line, "not-an-object", f"a JSON {type(rec).__name__}; skipped")
        elif isinstance(rec.get("$rewindTo"), str):
            self.conv.rewind(rec["$rewindTo"])
        elif isinstance(rec.get("id"), str):
            self.conv.place(rec, line)
        elif isinstance(rec.get("$set"), Mapping):
            update = rec["$set"]
            if isinstance(update.get("messages"), list):
                self.messages(update["messages"], line, rebuild=True)
            self.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(rec.get("sessionId"), str):
            self.meta.update({k: v for k, v in rec.items() if k != "messages"})
            if "messages" in rec:
                self.messages(rec["messages"], line, rebuild=False)
        else:
            keys = ",".join(sorted(str(k) for k in rec)) or "empty"
            self.log.add(
                line, "unknown-record", f"record with keys {keys}: not Gemini CLI's; skipped"
            )

    def header(self) -> dict[str, Any]:
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": str(self.meta.get("sessionId") or Path(self.path).stem),
        }
        if isinstance(self.meta.get("startTime"), str):
            header["timestamp"] = self.meta["startTime"]
        directories = self.meta.get("directories")
        if isinstance(directories, list) and directories and isinstance(directories[0], str):
            header["cwd"] = directories[0]
        for key in _METADATA_KEYS:
            if self.meta.get(key) is not None:
                header[key] = self.meta[key]
        header["sourceFormat"] = SOURCE_FORMAT
        return header

    def entries(self) -> list[Entry]:
        out: list[Entry] = []
        last_of: dict[str, str] = {}  # message id → id of its last entry
        forward: dict[int, str] = {}  # index in `out` → parent message listed later
        self.answered = {
            str(c.get("id"))
            for m, _ in self.conv.latest.values()
            if m.get("type") == "gemini"
            for c in m.get("toolCalls") or ()
            if isinstance(c, Mapping) and _has_result(c)
        }
        for mid in self.conv.in_file_order():
            msg, line = self.conv.latest[mid]
            parent_msg = self.conv.parent.get(mid)
            parent = last_of.get(parent_msg) if parent_msg is not None else None
            if parent_msg is not None and parent is None:
                forward[len(out)] = parent_msg
            records = self.message_records(msg, line)
            if not records:  # tool responses already carried by their calls
                forward.pop(len(out), None)
                last_of[mid] = parent if parent is not None else (parent_msg or "")
                continue
            for rec in records:
                rec["parentId"] = parent
                parent = rec["id"]
                out.append(Entry.from_record(rec, line=line))
            last_of[mid] = records[-1]["id"]
        for index, parent_msg in forward.items():
            # A rewound branch written before the message it hangs from is placed again.
            out[index] = out[index].copy_with(parentId=last_of.get(parent_msg, parent_msg))
        return out

    def _answered(self, part: Any) -> bool:
        """A `functionResponse` part whose call carries the same result (Gemini CLI 0.61
        records the responses sent back to the model as a user message too)."""
        fr = part.get("functionResponse") if isinstance(part, Mapping) else None
        return isinstance(fr, Mapping) and str(fr.get("id")) in self.answered

    def blocks(self, content: Any, line: int | None, where: str) -> list[dict[str, Any]]:
        blocks = []
        for part in part_list(content):
            fr = part.get("functionResponse") if isinstance(part, Mapping) else None
            if isinstance(fr, Mapping):
                self.log.add(
                    line,
                    "unpaired-tool-result",
                    f"{where}: response to {fr.get('name')!r} answers no recorded call; kept as text",
                )
                blocks.append(text_block(response_text(fr.get("response"))))
                continue
            block, unknown = part_block(part)
            if unknown is not None:
                self.log.add(
                    line, "unknown-part", f"{where}: part ({unknown}) kept as its JSON text"
                )
            if block is not None:
                blocks.append(block)
        return blocks

    def message_records(self, msg: Mapping[str, Any], line: int | None) -> list[dict[str, Any]]:
        mid, kind = str(msg["id"]), msg.get("type")
        iso = msg.get("timestamp") if isinstance(msg.get("timestamp"), str) else None
        ms = epoch_ms(iso)
        if kind == "user":
            parts = [p for p in part_list(msg.get("content")) if not self._answered(p)]
            if not parts and part_list(msg.get("content")):
                return []
            blocks = self.blocks(parts, line, f"message {mid}")
            return [message_record(mid, None, iso, user_message(blocks, ms), source_id=mid)]
        if kind == "gemini":
            return self.gemini_records(msg, mid, iso, ms, line)
        if kind not in NOTE_TYPES:
            self.log.add(
                line, "unknown-message-type", f"message {mid} has type {kind!r}; kept as custom"
            )
        custom = {
            "type": "custom",
            "id": mid,
            "parentId": None,
            "timestamp": iso,
            "customType": f"gemini-cli:{kind if isinstance(kind, str) else 'message'}",
            "data": dict(msg),
            "sourceId": mid,
        }
        return [custom]

    def gemini_records(
        self, msg: Mapping[str, Any], mid: str, iso: str | None, ms: int, line: int | None
    ) -> list[dict[str, Any]]:
        thoughts: list[Any] = msg["thoughts"] if isinstance(msg.get("thoughts"), list) else []
        blocks = [b for b in (_thinking(t) for t in thoughts) if b is not None]
        blocks += self.blocks(msg.get("content"), line, f"message {mid}")
        calls = [c for c in msg.get("toolCalls") or () if isinstance(c, Mapping)]
        results: list[dict[str, Any]] = []
        for k, call in enumerate(calls):
            call_id = str(call.get("id") or f"{mid}-call{k}")
            name = str(call.get("name", ""))
            blocks.append(tool_call_block(call_id, name, call.get("args") or {}))
            status = call.get("status")
            if not _has_result(call):
                continue  # still running when the file was written: no result yet
            content, unknown = result_blocks(call.get("result"))
            for what in unknown:
                self.log.add(
                    line, "unknown-part", f"result of {call_id}: part ({what}) kept as text"
                )
            ts = call.get("timestamp") if isinstance(call.get("timestamp"), str) else iso
            result = tool_result_message(
                call_id, name, content, epoch_ms(ts), is_error=status in ("error", "cancelled")
            )
            results.append(
                message_record(stable_id(mid, call_id), None, ts, result, source_id=call_id)
            )
        message = assistant_message(
            blocks,
            ms,
            model=str(msg.get("model") or ""),
            provider=PROVIDER,
            api=API,
            usage_=gemini_usage(msg.get("tokens")),
            stop_reason="toolUse" if calls else "stop",
        )
        return [message_record(mid, None, iso, message, source_id=mid), *results]


_LEGACY_START = re.compile(rb"\s*\{\s*\n")


def read_gemini_cli(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a Gemini CLI session: a chat recording (`session-*.jsonl` or legacy `.json`),
    a `/chat save` checkpoint (`checkpoint-<tag>.json`) or the prompt log (`logs.json`).

    Args:
        path: The file.
        strict: Raise `SessionReadError` for the earliest problem instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    body = strip_bom(data).lstrip()
    if body.startswith(b"[") or re.match(rb'\{\s*"history"\s*:', body):
        from ._gemini_history import read_gemini_history

        return read_gemini_history(p, data, strict=strict)
    log = ProblemLog(p, strict=strict, deferred=True)
    reader = _Reader(p, log)
    if _LEGACY_START.match(body):  # one pretty-printed document
        ok, value = parse_json_document(data, log)
        if ok:
            reader.record(None, value)
            _message_lines(data, reader.conv)
    else:
        for line, rec in parse_jsonl(data, log):
            reader.record(line, rec)
    if not reader.meta and not reader.conv.order:
        if not log.problems:
            log.add(None, "empty-file", "no Gemini CLI records")
        return empty_session(p, log.finish(), SOURCE_FORMAT)
    entries = reader.entries()
    return Session(
        reader.header(), entries, errors=log.finish(), source_path=p, source_format=SOURCE_FORMAT
    )


def _message_lines(data: bytes, conv: _Conversation) -> None:
    """Give the messages of a pretty-printed document the line their `id` is on."""
    offset = 0
    for mid in conv.order:
        msg, _ = conv.latest[mid]
        at = data.find(b'"id": ' + orjson.dumps(mid), offset)
        if at < 0:
            continue
        offset = at
        conv.latest[mid] = (msg, data.count(b"\n", 0, at) + 1)
