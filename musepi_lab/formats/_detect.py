"""What format one parsed record belongs to (shared by detection and the pi reader)."""

from __future__ import annotations

from typing import Any

import orjson

_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_TYPES = {
    "user",
    "assistant",
    "summary",
    "system",
    "progress",
    "file-history-snapshot",
    "queue-operation",
}


# Response item types a Codex rollout of the layout before `session_meta` (mid 2025) holds
# bare, one per line, with no `payload` around them.
_CODEX_BARE_ITEMS = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "local_shell_call",
    "custom_tool_call",
    "custom_tool_call_output",
    "web_search_call",
}


def is_legacy_codex_header(obj: Any) -> bool:
    """The first line of a Codex rollout written before `session_meta` existed:
    `{"id", "timestamp", "instructions"?, "git"?, …}`, with no `type` and no `payload`."""
    return (
        isinstance(obj, dict)
        and "type" not in obj
        and "payload" not in obj
        and isinstance(obj.get("id"), str)
        and isinstance(obj.get("timestamp"), str)
    )


def format_of_record(obj: dict[str, Any]) -> str | None:
    """The format one JSONL record belongs to, or None when it tells nothing."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        kind = None  # an unhashable `type` must not break the set lookups below
    if kind in ("session", "title"):
        return "pi"
    if "payload" in obj and kind in _CODEX_TYPES:
        return "codex"
    if "sessionId" in obj and "projectHash" in obj:
        return "gemini-cli"
    if "sessionId" in obj or "uuid" in obj or (kind in _CLAUDE_TYPES and "leafUuid" in obj):
        return "claude-code"
    if "history" in obj and ("instance_id" in obj or "instruction" in obj):
        return "openhands"
    if "trajectory" in obj and "history" in obj:
        return "swe-agent"
    if isinstance(obj.get("id"), str) and "parentId" in obj:
        return "pi"
    if "record_type" in obj and kind is None:
        return "codex"  # the legacy rollout's `{"record_type": "state"}` markers
    if kind in _CODEX_BARE_ITEMS and "payload" not in obj and "parentId" not in obj:
        if any(key in obj for key in ("role", "call_id", "summary", "encrypted_content")):
            return "codex"  # a legacy rollout's bare response item
    return None


def is_opencode_db_name(name: str) -> bool:
    """True for the names opencode gives its database (`opencode.db`, `opencode-*.db`)."""
    return name == "opencode.db" or (name.startswith("opencode-") and name.endswith(".db"))


_WORKFLOW_RUN_KEYS = ("workflowName", "workflowProgress")
_JOURNAL_TYPES = {"started", "result"}


def claude_code_sidecar(name: str, head: bytes) -> str | None:
    """What a Claude Code file that sits beside the transcripts but is none holds, or None.

    `agent-<id>.meta.json` (a subagent's type and description), `workflows/<runId>.json` (a
    Workflow run's record) and `subagents/workflows/<runId>/journal.jsonl` (the run's agent
    journal): detected so that reading one says what it is instead of reading it as a pi or
    OpenHands session.
    """
    if not name.endswith(".json") and name != "journal.jsonl":
        return None  # Claude Code names them so: no other file pays for a look
    text = head.lstrip(b"\xef\xbb\xbf").strip()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        if name.endswith(".meta.json") and "uuid" not in value:
            return "a Claude Code subagent's metadata (agent-*.meta.json)"
        if isinstance(value.get("runId"), str) and any(k in value for k in _WORKFLOW_RUN_KEYS):
            return "a Claude Code Workflow run record (workflows/<runId>.json)"
        return None
    lines = [line for line in text.split(b"\n")[:8] if line.strip()]
    try:
        records = [orjson.loads(line) for line in lines]
    except orjson.JSONDecodeError:
        return None
    journal = records and all(
        isinstance(r, dict)
        and r.get("type") in _JOURNAL_TYPES
        and "agentId" in r
        and "uuid" not in r
        for r in records
    )
    return "a Claude Code Workflow journal (journal.jsonl)" if journal else None
