"""A generated pi session written as another agent's file: Claude Code JSONL, Codex rollout.

The shapes are copied from the corpus files of those formats (`/work/shared/corpus/claude-code`,
Claude Code 2.1.38; `/work/shared/corpus/codex`, Codex CLI 0.58): the line types, the fields
each line carries, one line per content block of an assistant reply (Claude Code) or one
response item per block (Codex). Every writer returns the bytes and, for each pi entry it
wrote, the 1-based line where that entry begins, so the planted facts can be moved to the
entries the format's reader makes (`_scale.remap_facts`).

What the formats cannot hold is left out, on purpose: pi's `model_change`,
`thinking_level_change`, `label` and `session_info` entries (no such lines), branch
summaries (Claude Code branches are bare forks of `parentUuid`), and in Codex, which is
linear, every entry off the leaf's path.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

Records = Sequence[Mapping[str, Any]]
"""A pi session as its parsed lines: the header, then one record per entry."""

CLAUDE_CODE_VERSION = "2.1.38"
CODEX_CLI_VERSION = "0.58.0"

_SKIPPED = frozenset({"model_change", "thinking_level_change", "label", "session_info"})
_STOP_REASONS = {"toolUse": "tool_use", "stop": "end_turn", "length": "max_tokens"}


def stable_uuid(*parts: object) -> str:
    """A version-4-shaped UUID drawn from the parts (the same parts, the same UUID)."""
    digest = bytearray(hashlib.blake2b(repr(parts).encode(), digest_size=16).digest())
    digest[6] = (digest[6] & 0x0F) | 0x40
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def _lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _image_source(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}


# -- Claude Code ---------------------------------------------------------------------------


class _ClaudeCodeWriter:
    def __init__(self, header: Mapping[str, Any], session_uuid: str) -> None:
        self.sid = session_uuid
        self.base = {
            "isSidechain": False,
            "userType": "external",
            "cwd": header.get("cwd", "/"),
            "sessionId": session_uuid,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": "main",
        }
        self.out: list[dict[str, Any]] = []
        self.alias: dict[str | None, str | None] = {None: None}  # pi id -> uuid children use
        self.first_line: dict[str, int] = {}

    def line(self, parent: str | None, kind: str, ts: str, **fields: Any) -> str:
        line_uuid = stable_uuid(self.sid, len(self.out))
        record = {"parentUuid": parent, **self.base, "type": kind, **fields}
        record.update({"uuid": line_uuid, "timestamp": ts})
        self.out.append(record)
        return line_uuid

    def entry(self, rec: Mapping[str, Any]) -> None:
        pid, parent = rec["id"], self.alias.get(rec.get("parentId"))
        if rec["type"] in _SKIPPED or rec["type"] == "branch_summary":
            self.alias[pid] = parent
            return
        self.first_line[pid] = len(self.out) + 1
        ts = rec["timestamp"]
        if rec["type"] == "compaction":
            boundary = self.line(
                None,
                "system",
                ts,
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                logicalParentUuid=parent,
                compactMetadata={"trigger": "auto", "preTokens": rec.get("tokensBefore", 0)},
            )
            message = {"role": "user", "content": rec["summary"]}
            self.alias[pid] = self.line(
                boundary, "user", ts, message=message, isCompactSummary=True
            )
            return
        message = rec["message"]
        role = message["role"]
        if role == "assistant":
            self.alias[pid] = self.assistant(parent, ts, message, rec["id"])
        elif role == "toolResult":
            self.alias[pid] = self.tool_result(parent, ts, message)
        else:
            self.alias[pid] = self.user(parent, ts, message)

    def user(self, parent: str | None, ts: str, message: Mapping[str, Any]) -> str:
        content: list[dict[str, Any]] = []
        for block in message["content"]:
            if block["type"] == "image":
                content.append({"type": "image", "source": _image_source(block)})
            else:
                content.append({"type": "text", "text": block["text"]})
        return self.line(parent, "user", ts, message={"role": "user", "content": content})

    def tool_result(self, parent: str | None, ts: str, message: Mapping[str, Any]) -> str:
        text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
        block = {
            "type": "tool_result",
            "tool_use_id": message["toolCallId"],
            "content": text,
            "is_error": bool(message.get("isError")),
        }
        return self.line(
            parent,
            "user",
            ts,
            message={"role": "user", "content": [block]},
            toolUseResult={"stdout": text, "stderr": "", "interrupted": False},
        )

    def assistant(self, parent: str | None, ts: str, message: Mapping[str, Any], pid: str) -> str:
        usage = message.get("usage") or {}
        cc_usage = {
            "input_tokens": usage.get("input", 0),
            "cache_creation_input_tokens": usage.get("cacheWrite", 0),
            "cache_read_input_tokens": usage.get("cacheRead", 0),
            "output_tokens": usage.get("output", 0),
            "service_tier": "standard",
        }
        blocks = message["content"]
        message_id = (
            "msg_01" + hashlib.blake2b(f"{self.sid}{pid}".encode(), digest_size=11).hexdigest()
        )
        for n, block in enumerate(blocks):
            last = n == len(blocks) - 1
            body = {
                "model": message.get("model"),
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [_claude_block(block)],
                "stop_reason": _STOP_REASONS.get(str(message.get("stopReason"))) if last else None,
                "stop_sequence": None,
                "usage": cc_usage,
            }
            parent = self.line(
                parent, "assistant", ts, message=body, requestId=f"req_{message_id[6:]}"
            )
        assert parent is not None
        return parent


def _claude_block(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": block["thinking"],
            "signature": "[REDACTED_SIGNATURE]",
        }
    if kind == "toolCall":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block["arguments"],
            "caller": {"type": "direct"},
        }
    return {"type": "text", "text": block["text"]}


def to_claude_code(records: Records, session_uuid: str) -> tuple[bytes, dict[str, int]]:
    """A pi session as a Claude Code transcript: the bytes, and pi entry id → first line.

    The file opens with the `SessionStart` hook `progress` line Claude Code writes, and
    keeps pi's tree: an abandoned branch is a fork of `parentUuid` (its summary has no line).
    """
    header, entries = records[0], records[1:]
    writer = _ClaudeCodeWriter(header, session_uuid)
    hook = writer.line(
        None,
        "progress",
        header["timestamp"],
        data={
            "type": "hook_progress",
            "hookEvent": "SessionStart",
            "hookName": "SessionStart:startup",
        },
    )
    writer.alias[None] = hook
    for rec in entries:
        writer.entry(rec)
    return _lines(writer.out), writer.first_line


# -- Codex ---------------------------------------------------------------------------------


def _leaf_path(entries: Records) -> list[Mapping[str, Any]]:
    by_id = {r["id"]: r for r in entries}
    path: list[Mapping[str, Any]] = []
    node: Mapping[str, Any] | None = entries[-1] if entries else None
    while node is not None:
        path.append(node)
        node = by_id.get(node.get("parentId"))
    path.reverse()
    return path


class _CodexWriter:
    def __init__(self, model: str) -> None:
        self.model = model
        self.out: list[dict[str, Any]] = []
        self.first_line: dict[str, int] = {}
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}

    def line(self, ts: str, kind: str, payload: dict[str, Any]) -> None:
        self.out.append({"timestamp": ts, "type": kind, "payload": payload})

    def item(self, ts: str, payload: dict[str, Any]) -> None:
        self.line(ts, "response_item", payload)

    def entry(self, rec: Mapping[str, Any], cwd: str) -> None:
        if rec["type"] in _SKIPPED or rec["type"] == "branch_summary":
            return
        ts = rec["timestamp"]
        if rec["type"] == "compaction":
            self.first_line[rec["id"]] = len(self.out) + 1
            self.line(ts, "compacted", {"message": rec["summary"]})
            return
        message = rec["message"]
        role = message["role"]
        if role == "user":
            self.line(ts, "turn_context", _turn_context(cwd, self.model))
        self.first_line[rec["id"]] = len(self.out) + 1
        if role == "user":
            self.user(ts, message)
        elif role == "toolResult":
            self.tool_result(ts, message)
        else:
            self.assistant(ts, message)

    def user(self, ts: str, message: Mapping[str, Any]) -> None:
        content: list[dict[str, Any]] = []
        for block in message["content"]:
            if block["type"] == "image":
                url = f"data:{block['mimeType']};base64,{block['data']}"
                content.append({"type": "input_image", "image_url": url})
            else:
                content.append({"type": "input_text", "text": block["text"]})
        self.item(ts, {"type": "message", "role": "user", "content": content})
        texts = [b["text"] for b in message["content"] if b["type"] == "text"]
        self.line(
            ts, "event_msg", {"type": "user_message", "message": "\n".join(texts), "images": []}
        )

    def tool_result(self, ts: str, message: Mapping[str, Any]) -> None:
        text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
        exit_code = 1 if message.get("isError") else 0
        output = {"output": text, "metadata": {"exit_code": exit_code, "duration_seconds": 0.4}}
        self.item(
            ts,
            {
                "type": "function_call_output",
                "call_id": message["toolCallId"],
                "output": orjson.dumps(output).decode(),
            },
        )

    def assistant(self, ts: str, message: Mapping[str, Any]) -> None:
        for block in message["content"]:
            if block["type"] == "thinking":
                summary = [{"type": "summary_text", "text": block["thinking"]}]
                self.item(ts, {"type": "reasoning", "summary": summary, "content": None})
            elif block["type"] == "toolCall":
                arguments = orjson.dumps(block["arguments"]).decode()
                call = {"type": "function_call", "name": block["name"], "arguments": arguments}
                self.item(ts, {**call, "call_id": block["id"]})
            else:
                content = [{"type": "output_text", "text": block["text"]}]
                self.item(ts, {"type": "message", "role": "assistant", "content": content})
        self.token_count(ts, message.get("usage") or {})

    def token_count(self, ts: str, usage: Mapping[str, Any]) -> None:
        last = {
            "input_tokens": usage.get("input", 0) + usage.get("cacheRead", 0),
            "cached_input_tokens": usage.get("cacheRead", 0),
            "output_tokens": usage.get("output", 0),
            "reasoning_output_tokens": 0,
        }
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for key in self.total:
            self.total[key] += last[key]
        total = {**self.total, "reasoning_output_tokens": 0}
        total["total_tokens"] = total["input_tokens"] + total["output_tokens"]
        info = {
            "total_token_usage": total,
            "last_token_usage": last,
            "model_context_window": 272000,
        }
        self.line(ts, "event_msg", {"type": "token_count", "info": info, "rate_limits": None})


def _turn_context(cwd: str, model: str) -> dict[str, Any]:
    return {
        "cwd": cwd,
        "approval_policy": "never",
        "sandbox_policy": {"mode": "danger-full-access"},
        "model": model,
        "effort": "medium",
        "summary": "auto",
    }


def to_codex(
    records: Records, session_uuid: str, model: str = "gpt-5.1-codex"
) -> tuple[bytes, dict[str, int]]:
    """The leaf's path of a pi session as a Codex rollout: the bytes, and pi id → first line.

    Each content block is its own response item, as Codex writes them; every assistant
    reply is followed by the `token_count` event that carries its usage.
    """
    header, entries = records[0], records[1:]
    cwd = str(header.get("cwd", "/"))
    writer = _CodexWriter(model)
    meta = {
        "id": session_uuid,
        "timestamp": header["timestamp"],
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": CODEX_CLI_VERSION,
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
    }
    writer.line(header["timestamp"], "session_meta", meta)
    for rec in _leaf_path(entries):
        writer.entry(rec, cwd)
    return _lines(writer.out), writer.first_line
