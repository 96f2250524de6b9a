"""Codex session headers: the `session_meta` lifted into the pi header, and what ties a
spawned, review or forked rollout to the session it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._codex_family import ChildMeta

SOURCE_FORMAT = "codex"

# session_meta fields lifted into the header (header key, payload key).
_HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("modelProvider", "model_provider"),
    ("cliVersion", "cli_version"),
    ("originator", "originator"),
    ("source", "source"),
    ("git", "git"),
)
_LIFTED = frozenset({"id", "timestamp", "cwd", *(k for _, k in _HEADER_FIELDS)})


def codex_header(
    meta: Mapping[str, Any],
    *,
    session_id: str,
    timestamp: str | None,
    model: str | None,
    context_window: int | None,
    child: ChildMeta | None = None,
    inherited: int = 0,
) -> dict[str, Any]:
    """The pi header of a rollout.

    Args:
        meta: The first `session_meta` payload (empty when the rollout has none).
        session_id: The session id (the payload's, else the file name's).
        timestamp: When the session started, when the payload does not say.
        model: The first model a `turn_context` named.
        context_window: The first context window an event named.
        child: What the `session_meta` says of the session that started this one: gives
            `subagentKind`, `parentSessionId` (a spawned child's parent),
            `forkedFromId` and `parentToolCallId` (the spawn call, when recorded).
        inherited: How many records were copied from that session (`inheritedRecords`).
    """
    own_ts = meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else None
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": session_id,
        "timestamp": own_ts or timestamp,
        "cwd": meta.get("cwd") if isinstance(meta.get("cwd"), str) else "",
        "sourceFormat": SOURCE_FORMAT,
    }
    if model:
        header["model"] = model
    for key, source_key in _HEADER_FIELDS:
        if meta.get(source_key) is not None:
            header[key] = meta[source_key]
    if context_window:
        header["contextWindow"] = context_window
    if child is not None:
        header["subagentKind"] = child.kind
        for key, value in (
            ("parentSessionId", child.parent_id),
            ("forkedFromId", child.forked_from),
            ("parentToolCallId", child.spawn_call_id),
        ):
            if value is not None:
                header[key] = value
        if inherited:
            header["inheritedRecords"] = inherited
    rest = {k: v for k, v in meta.items() if k not in _LIFTED and v is not None}
    if rest:
        header["codexMeta"] = rest
    return header


def linked_child(child: Session, parent: Session, event_line: int | None) -> Session:
    """A child rollout as its parent links it: its header names the parent session, the
    parent's call that spawned it (`parentToolCallId`: the call whose output names the
    child's id, when the child's record does not say) and, for a review child, the parent's
    `entered_review_mode` entry (`parentEntryId`)."""
    extra: dict[str, Any] = {"parentSessionId": parent.id}
    if "parentToolCallId" not in child.header:
        call = _spawn_call(parent.entries, child.id)
        if call is not None:
            extra["parentToolCallId"] = call
    if event_line is not None:
        entry = next((e for e in parent.entries if e.line == event_line), None)
        if entry is not None:
            extra["parentEntryId"] = entry.id
    return child.copy_with(header={**child.header, **extra})


def _spawn_call(entries: tuple[Entry, ...], child_id: str) -> str | None:
    """The spawning tool call whose result names the child's session id (`spawn_agent`
    answers `{"agent_id": <id>}`; a later `wait` names it too, and is not it), or None."""
    for entry in entries:
        message = entry.message
        if message is None or message.get("role") != "toolResult":
            continue
        if "spawn" not in str(message.get("toolName") or ""):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            text = block.get("text") if isinstance(block, Mapping) else None
            if isinstance(text, str) and child_id in text:
                call = message.get("toolCallId")
                return call if isinstance(call, str) else None
    return None
