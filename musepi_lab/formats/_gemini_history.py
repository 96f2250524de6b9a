"""Gemini CLI checkpoints and prompt logs → `Session`.

Both are written by `dist/src/core/logger.js` of `@google/gemini-cli-core` 0.61.0 into
`~/.gemini/tmp/<project_hash>/`, pretty-printed (`JSON.stringify(value, null, 2)`):

- `checkpoint-<tag>.json` (`/chat save <tag>`): `{"history": Content[], "authType"?}`, or
  in older versions the bare `Content[]`. A `Content` is `{role: "user" | "model", parts}`.
  `model` contents → assistant messages (`thought` parts as thinking, text, one toolCall per
  `functionCall`); `user` contents → a user message for their text and a toolResult per
  `functionResponse` (joined to its call by `id`, else to the oldest open call of that
  name). No usage is recorded in a checkpoint.
- `logs.json`: `LogEntry[]` of `{sessionId, messageId, type: "user", message, timestamp}`,
  every prompt the user typed in that project, all sessions together; each → a user message
  carrying its `geminiSessionId` and `messageId`. Another `type` → a `custom` entry and an
  `unknown-message-type` problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._gemini_parts import API, PROVIDER, function_call_block, part_block, part_list, response_text
from ._openhands_parse import parse_json_array
from ._records import (
    IdAllocator,
    assistant_message,
    chain,
    empty_session,
    epoch_ms,
    message_record,
    text_block,
    tool_result_message,
    user_message,
)
from ._swe_agent import parse_json_document

SOURCE_FORMAT = "gemini-cli"


def _items(p: str, data: bytes, log: ProblemLog) -> tuple[list[tuple[int | None, Any]], Any]:
    """`(items with their line, the document)`: a top-level array item by item (so damage
    keeps what comes before it), an object whole."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if text.lstrip().startswith("["):
        return [(line, v) for line, v in parse_json_array(text.lstrip(), log)], None
    ok, doc = parse_json_document(data, log)
    history = doc.get("history") if ok and isinstance(doc, Mapping) else None
    if ok and not isinstance(history, list):
        log.add(None, "missing-history", "checkpoint has no `history` list")
    return [(None, v) for v in history or ()], doc


class _Checkpoint:
    def __init__(self, alloc: IdAllocator, log: ProblemLog) -> None:
        self.alloc = alloc
        self.log = log
        self.open: dict[str, str] = {}  # call id → tool name
        self.records: list[tuple[dict[str, Any], int | None]] = []

    def blocks(self, parts: list[Any], line: int | None, index: int) -> list[dict[str, Any]]:
        out = []
        for part in parts:
            block, unknown = part_block(part)
            if unknown is not None:
                self.log.add(
                    line, "unknown-part", f"history[{index}]: part ({unknown}) kept as text"
                )
            if block is not None:
                out.append(block)
        return out

    def content(self, index: int, line: int | None, content: Any) -> None:
        if not isinstance(content, Mapping):
            self.log.add(line, "not-an-object", f"history[{index}] is not a Content; skipped")
            return
        role, parts = content.get("role"), part_list(content.get("parts"))
        if role == "model":
            self.model(index, line, parts)
        elif role == "user":
            self.user(index, line, parts)
        else:
            self.log.add(
                line, "unknown-role", f"history[{index}] has role {role!r}; kept as custom"
            )
            rec = {
                "type": "custom",
                "id": self.alloc.take(None, index),
                "parentId": None,
                "timestamp": None,
                "customType": "gemini-cli:content",
                "data": dict(content),
            }
            self.records.append((rec, line))

    def model(self, index: int, line: int | None, parts: list[Any]) -> None:
        blocks: list[dict[str, Any]] = []
        calls = 0
        for k, part in enumerate(parts):
            if isinstance(part, Mapping) and isinstance(part.get("functionCall"), Mapping):
                block = function_call_block(part, f"history{index}-call{k}")
                self.open[block["id"]] = block["name"]
                blocks.append(block)
                calls += 1
            else:
                blocks.extend(self.blocks([part], line, index))
        msg = assistant_message(
            blocks, 0, provider=PROVIDER, api=API, stop_reason="toolUse" if calls else "stop"
        )
        self.records.append((message_record(self.alloc.take(None, index), None, None, msg), line))

    def user(self, index: int, line: int | None, parts: list[Any]) -> None:
        blocks: list[dict[str, Any]] = []
        for part in parts:
            fr = part.get("functionResponse") if isinstance(part, Mapping) else None
            if not isinstance(fr, Mapping):
                blocks.extend(self.blocks([part], line, index))
                continue
            text = response_text(fr.get("response"))
            call_id = self._call_for(fr)
            if call_id is None:
                self.log.add(
                    line,
                    "unpaired-tool-result",
                    f"history[{index}]: response to {fr.get('name')!r} answers no call; kept as text",
                )
                blocks.append(text_block(text))
                continue
            name = self.open.pop(call_id)
            is_error = isinstance(fr.get("response"), Mapping) and "error" in fr["response"]
            msg = tool_result_message(call_id, name, text, 0, is_error=is_error)
            rid = self.alloc.take(None, index, call_id)
            self.records.append((message_record(rid, None, None, msg, source_id=call_id), line))
        if blocks or not parts:
            msg = user_message(blocks, 0)
            self.records.append(
                (message_record(self.alloc.take(None, index), None, None, msg), line)
            )

    def _call_for(self, fr: Mapping[str, Any]) -> str | None:
        """The open call a function response answers: by id, else the oldest of its name."""
        call_id = fr.get("id")
        if isinstance(call_id, str) and call_id in self.open:
            return call_id
        return next((c for c, n in self.open.items() if n == fr.get("name")), None)


def _log_records(
    items: list[tuple[int | None, Any]], alloc: IdAllocator, log: ProblemLog
) -> list[tuple[dict[str, Any], int | None]]:
    out = []
    for index, (line, item) in enumerate(items):
        if not isinstance(item, Mapping):
            log.add(line, "not-an-object", f"log entry {index} is not an object; skipped")
            continue
        iso = item.get("timestamp") if isinstance(item.get("timestamp"), str) else None
        extra = {"geminiSessionId": item.get("sessionId"), "messageId": item.get("messageId")}
        rid = alloc.take(None, index)
        if item.get("type") == "user" and isinstance(item.get("message"), str):
            msg = user_message(item["message"], epoch_ms(iso))
            out.append((message_record(rid, None, iso, msg, **extra), line))
            continue
        log.add(line, "unknown-message-type", f"log entry {index} has type {item.get('type')!r}")
        rec = {"type": "custom", "id": rid, "parentId": None, "timestamp": iso}
        out.append(({**rec, "customType": "gemini-cli:log", "data": dict(item)}, line))
    return out


def _is_log(items: list[tuple[int | None, Any]]) -> bool:
    first = next((v for _, v in items if isinstance(v, Mapping)), None)
    return first is not None and "messageId" in first and "role" not in first


def read_gemini_history(p: str, data: bytes, *, strict: bool) -> Session:
    """A checkpoint or `logs.json` already read as `data` (see the module docstring)."""
    log = ProblemLog(p, strict=strict, deferred=True)
    items, doc = _items(p, data, log)
    stem = Path(p).stem
    alloc = IdAllocator(stem)
    header: dict[str, Any] = {"type": "session", "version": CURRENT_SESSION_VERSION, "id": stem}
    if _is_log(items):
        records = _log_records(items, alloc, log)
        header["geminiFile"] = "logs"
    else:
        builder = _Checkpoint(alloc, log)
        for index, (line, content) in enumerate(items):
            builder.content(index, line, content)
        records = builder.records
        header["geminiFile"] = "checkpoint"
        if stem.startswith("checkpoint-"):
            header["checkpointTag"] = stem[len("checkpoint-") :]
        if isinstance(doc, Mapping) and doc.get("authType") is not None:
            header["authType"] = doc["authType"]
    if not records:
        return empty_session(p, log.finish(), SOURCE_FORMAT, **header)
    first_ts = next((r["timestamp"] for r, _ in records if r.get("timestamp")), None)
    if first_ts is not None:
        header["timestamp"] = first_ts
    header["sourceFormat"] = SOURCE_FORMAT
    linked = chain([r for r, _ in records])
    entries = [
        Entry.from_record(r, line=line) for r, (_, line) in zip(linked, records, strict=True)
    ]
    return Session(header, entries, errors=log.finish(), source_path=p, source_format=SOURCE_FORMAT)
