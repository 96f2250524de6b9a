"""What format one parsed record belongs to (shared by detection and the pi reader)."""

from __future__ import annotations

from typing import Any

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
    return None


def is_opencode_db_name(name: str) -> bool:
    """True for the names opencode gives its database (`opencode.db`, `opencode-*.db`)."""
    return name == "opencode.db" or (name.startswith("opencode-") and name.endswith(".db"))
