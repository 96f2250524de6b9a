"""Claude Code session headers and subagent files (split from `_claude_code.py`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..session._session import CURRENT_SESSION_VERSION, Session

SOURCE_FORMAT = "claude-code"
_COMPACTION_AGENT_PREFIX = "acompact"


def _first(values: list[tuple[int, Any]], key: str) -> Any:
    for _, rec in values:
        if isinstance(rec, dict) and rec.get(key) is not None:
            return rec[key]
    return None


def session_header(
    path: str,
    values: list[tuple[int, Any]],
    *,
    linked_file: bool,
    has_entries: bool,
    title: str | None,
    source_records: list[dict[str, Any]],
) -> dict[str, Any]:
    """The session header of a Claude Code file (a subagent file's id under its parent's)."""
    session_id = _first(values, "sessionId")
    session_id = session_id if isinstance(session_id, str) else Path(path).stem
    # A main file has no agentId: not worth a scan of every line.
    agent_id = _first(values, "agentId") if linked_file else None
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
    if linked_file and has_entries:
        # A subagent transcript: its own id under its parent session's, even read alone
        # (older files carry no agentId; the file name `agent-<id>` says it).
        stem = Path(path).stem
        agent_name = f"agent-{agent_id}" if isinstance(agent_id, str) else stem
        header["id"] = f"{session_id}/{agent_name}"
        if isinstance(agent_id, str):
            header["agentId"] = agent_id
        header["parentSessionId"] = session_id
        compaction = agent_name.startswith(f"agent-{_COMPACTION_AGENT_PREFIX}")
        header["subagentKind"] = "compaction" if compaction else "subagent"
    for source_key, key in (
        ("version", "sourceVersion"),
        ("gitBranch", "gitBranch"),
        ("slug", "slug"),
    ):
        value = _first(values, source_key)
        if isinstance(value, str) and value:
            header[key] = value
    if title is not None:
        header["title"] = title
    if source_records:
        header["sourceRecords"] = source_records
    return header


def subagent_paths(path: str | os.PathLike[str]) -> list[Path]:
    """The subagent transcripts of a main session file (`<stem>/subagents/agent-*.jsonl`)."""
    folder = Path(path).with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())


def linked_header(
    sub: Session, agent_calls: Mapping[str, str], compaction_by_logical_parent: Mapping[str, str]
) -> Session:
    """A subagent session whose header names the call or compaction that started it."""
    extra: dict[str, Any] = {}
    agent_id = sub.header.get("agentId")
    if isinstance(agent_id, str) and agent_id in agent_calls:
        extra["parentToolCallId"] = agent_calls[agent_id]
    for entry in sub.entries:
        foreign = entry.get("sourceParentId")
        if foreign in compaction_by_logical_parent:
            extra["compactionEntryId"] = compaction_by_logical_parent[foreign]
    if not extra:
        return sub
    return sub.copy_with(header={**sub.header, **extra})
