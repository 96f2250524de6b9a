"""Claude Code session headers and subagent files (split from `_claude_code.py`).

Subagent transcripts sit beside their session in `<sessionId>/subagents/`:

- `agent-<agentId>.jsonl`: a Task (Agent) call's subagent, linked to the call by the
  `agentId` of its result (`toolUseResult.agentId`) or by the `toolUseId` of the
  `agent-<agentId>.meta.json` beside it (which also gives `agentType` and `description`);
  `agent-acompact-*` are compaction runs and `agent-aside_question-*` the `/btw` side
  questions (Claude Code 2.1), which replay parent messages before their own;
- `workflows/<runId>/agent-<agentId>.jsonl`: the agents of a Workflow run (Claude Code 2.1),
  linked to the Workflow call whose result names the run (`toolUseResult.runId`); the
  `journal.jsonl` beside them and `<sessionId>/workflows/<runId>.json` are the run's own
  records, not transcripts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..session._session import CURRENT_SESSION_VERSION, Session

SOURCE_FORMAT = "claude-code"
_COMPACTION_AGENT_PREFIX = "acompact"
_SIDE_QUESTION_PREFIX = "aside_question"
_META_SUFFIX = ".meta.json"
_META_FIELDS = (("agentType", "agentType"), ("description", "agentDescription"))


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
    if linked_file and "#" in session_id:
        # Workflow agents write `<sessionId>#agent-<agentId>` as their session id.
        session_id = session_id.split("#", 1)[0]
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
        header["subagentKind"] = _subagent_kind(Path(path), agent_name)
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


def _subagent_kind(path: Path, agent_name: str) -> str:
    if agent_name.startswith(f"agent-{_COMPACTION_AGENT_PREFIX}"):
        return "compaction"
    if agent_name.startswith(f"agent-{_SIDE_QUESTION_PREFIX}"):
        return "side-question"
    if path.parent.parent.name == "workflows" and path.parent.parent.parent.name == "subagents":
        return "workflow"
    return "subagent"


def subagent_paths(path: str | os.PathLike[str]) -> list[Path]:
    """The subagent transcripts of a main session file: `<stem>/subagents/agent-*.jsonl`,
    then the Workflow agents `<stem>/subagents/workflows/<runId>/agent-*.jsonl`."""
    folder = Path(path).with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    plain = sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())
    runs = sorted(p for p in folder.glob("workflows/*/agent-*.jsonl") if p.is_file())
    return plain + runs


def subagent_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The `agent-<id>.meta.json` beside a subagent transcript, or {} (missing or unreadable:
    the transcript is read all the same)."""
    meta = Path(path).with_name(Path(path).stem + _META_SUFFIX)
    try:
        value = orjson.loads(meta.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def linked_header(
    sub: Session,
    agent_calls: Mapping[str, str],
    compaction_by_logical_parent: Mapping[str, str],
    workflow_calls: Mapping[str, str],
) -> Session:
    """A subagent session whose header names the call or compaction that started it."""
    extra: dict[str, Any] = {}
    meta = subagent_meta(sub.source_path) if sub.source_path else {}
    for source_key, key in _META_FIELDS:
        if isinstance(meta.get(source_key), str):
            extra[key] = meta[source_key]
    agent_id = sub.header.get("agentId")
    if isinstance(agent_id, str) and agent_id in agent_calls:
        extra["parentToolCallId"] = agent_calls[agent_id]
    elif isinstance(meta.get("toolUseId"), str):
        extra["parentToolCallId"] = meta["toolUseId"]
    if sub.header.get("subagentKind") == "workflow" and sub.source_path:
        run = Path(sub.source_path).parent.name
        extra["workflowRunId"] = run
        if run in workflow_calls:
            extra["parentToolCallId"] = workflow_calls[run]
    for entry in sub.entries:
        foreign = entry.get("sourceParentId")
        if foreign in compaction_by_logical_parent:
            extra["compactionEntryId"] = compaction_by_logical_parent[foreign]
    if not extra:
        return sub
    return sub.copy_with(header={**sub.header, **extra})
