"""The display transcript: every path entry in order, compactions inline (the TUI's view)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..session._model import Entry, Message
from ..session._session import Session
from ._build import (
    UNSET,
    _last_index,
    _musepi_compaction_message,
    _musepi_message,
    _resolve_path,
)
from ._llm import bash_execution_text, python_execution_text
from ._passes import strip_unpaired_calls


@dataclass(frozen=True, slots=True)
class TranscriptItem:
    """One row of the display transcript.

    Attributes:
        entry_id: The entry the row shows.
        entry_type: That entry's type (`message`, `compaction`, `custom_message`, ...).
        message: The runtime message shown (a `compactionSummary` for compactions).
        superseded: True for a compaction replaced by a later one on the path (its summary
            is elided).
    """

    entry_id: str | None
    entry_type: str
    message: Message
    superseded: bool = False

    @property
    def role(self) -> str | None:
        """The role of the row's message."""
        role = self.message.get("role")
        return role if isinstance(role, str) else None


# ---------------------------------------------------------------------------------------
# Display transcript
# ---------------------------------------------------------------------------------------
def transcript(
    session: Session | Iterable[Entry | Mapping[str, Any]],
    leaf_id: str | None = UNSET,
    *,
    keep_dangling_tool_calls: bool = False,
) -> list[TranscriptItem]:
    """The display transcript: every path entry in order, each compaction inline (spec §2.3).

    Nothing is hidden for the model's sake (retried or failed turns stay). The latest
    compaction carries its summary and snapcompact blocks; earlier ones show a fixed
    placeholder. Tool calls without a result on the path are stripped (the turn stays,
    marked with `strippedToolCalls`) unless `keep_dangling_tool_calls` is set, for a
    session caught mid-turn.

    Args:
        session: A `Session` or entries in file order.
        leaf_id: As in `build_session_context`.
        keep_dangling_tool_calls: Keep tool calls that have no result.
    """
    if leaf_id is None:
        return []
    path = _resolve_path(session, leaf_id)
    latest = _last_index(path, "compaction")
    rows: list[tuple[Message, str | None]] = []
    labels: list[tuple[str, bool]] = []
    for index, entry in enumerate(path):
        if entry.type == "compaction":
            active = index == latest
            msg: Message | None = _musepi_compaction_message(
                entry, active=active, frame_budget=None
            )
        else:
            msg = _musepi_message(entry, llm=False)
        if msg is not None:
            rows.append((msg, entry.id))
            labels.append((entry.type, entry.type == "compaction" and index != latest))
    if not keep_dangling_tool_calls:
        # Stripping never removes a row in transcript mode, so rows and labels stay aligned.
        rows = strip_unpaired_calls(rows, transcript=True)
    return [
        TranscriptItem(entry_id=eid, entry_type=kind, message=msg, superseded=superseded)
        for (msg, eid), (kind, superseded) in zip(rows, labels, strict=True)
    ]


# ---------------------------------------------------------------------------------------
# Plain-text rendering of a transcript
# ---------------------------------------------------------------------------------------
def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more chars]"


def _render_blocks(content: Any, limit: int | None) -> list[str]:
    if isinstance(content, str):
        return [_clip(content, limit)] if content else []
    lines: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            lines.append(_clip(str(block["text"]), limit))
        elif kind == "thinking" and block.get("thinking"):
            lines.append("(thinking) " + _clip(str(block["thinking"]), limit))
        elif kind == "redactedThinking":
            lines.append("(redacted thinking)")
        elif kind == "toolCall":
            args = orjson.dumps(block.get("arguments", {}), default=str).decode()
            lines.append(f"-> {block.get('name')}({_clip(args, limit)})")
        elif kind == "image":
            lines.append(f"[image {block.get('mimeType', '')}]")
    return lines


def _heading(item: TranscriptItem) -> str:
    msg = item.message
    role = item.role or "?"
    if role == "compactionSummary":
        state = " (superseded)" if item.superseded else ""
        before = msg.get("tokensBefore")
        tokens = f" · {before:,} tokens before" if isinstance(before, int) else ""
        method = f" · {msg['method']}" if msg.get("method") else ""
        return f"== compaction{state}{tokens}{method} =="
    if role == "assistant":
        model = f"{msg.get('provider', '')}/{msg.get('model', '')}"
        stop = msg.get("stopReason")
        return f"-- assistant ({model}{', ' + stop if stop else ''}) --"
    if role == "toolResult":
        mark = " (error)" if msg.get("isError") else ""
        return f"-- toolResult {msg.get('toolName', '')}{mark} --"
    if role == "custom":
        return f"-- custom {msg.get('customType', '')} --"
    return f"-- {role} --"


def _body(item: TranscriptItem, limit: int | None) -> list[str]:
    msg = item.message
    role = item.role
    if role in ("compactionSummary", "branchSummary"):
        short = msg.get("shortSummary")
        text = str(msg.get("summary", ""))
        return [_clip(str(short) if short and item.superseded else text, limit)]
    if role == "bashExecution":
        return [_clip(bash_execution_text(msg), limit)]
    if role == "pythonExecution":
        return [_clip(python_execution_text(msg), limit)]
    lines = _render_blocks(msg.get("content"), limit)
    if msg.get("strippedToolCalls"):
        lines.append(f"({msg['strippedToolCalls']} tool call(s) without a result not shown)")
    if msg.get("errorMessage"):
        lines.append(f"(error: {_clip(str(msg['errorMessage']), limit)})")
    return lines


def render_transcript(
    source: Session | Sequence[TranscriptItem],
    leaf_id: str | None = UNSET,
    *,
    max_chars: int | None = 2000,
) -> str:
    """A plain-text rendering of the display transcript, for terminals and logs.

    Args:
        source: A `Session` (its transcript at `leaf_id` is rendered) or transcript items.
        leaf_id: The leaf, when `source` is a session.
        max_chars: Longest text shown per block (None: everything).

    Returns:
        One section per transcript row, a heading line then the content, blank-line separated.
    """
    items = transcript(source, leaf_id) if isinstance(source, Session) else source
    sections = []
    for item in items:
        lines = [_heading(item), *_body(item, max_chars)]
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + ("\n" if sections else "")
