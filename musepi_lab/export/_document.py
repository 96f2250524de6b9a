"""A session's transcript as a plain document, for the HTML and Markdown exports.

Built once from the display transcript (`context.transcript`: every path entry in order,
compactions inline), with what a reader of a transcript expects: a header with the
session's facts and token figures (each labelled by its source), each message with its
time, entry id, estimated tokens and the usage its provider recorded, tool calls and
results as blocks of their own, compactions marked, and the cut a compaction would make
now (`prepare_compaction` at the leaf) drawn as a line between two messages. Nothing is
clipped: a file is read at leisure. The renderers only format this value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..analysis._live import cost_so_far
from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._settings import CompactionSettings
from ..compaction._threshold import message_usage
from ..compaction._token_sources import (
    ESTIMATED,
    RECORDED,
    ContextFigures,
    context_figures,
    recorded_usage_text,
)
from ..context._build import build_session_context
from ..context._llm import bash_execution_text, python_execution_text
from ..context._transcript import TranscriptItem, transcript
from ..session._session import Session
from ..tokens._counter import TokenCounter


@dataclass(frozen=True, slots=True)
class Block:
    """One part of a message.

    Attributes:
        kind: `text`, `thinking`, `tool_call`, `tool_result`, `image` or `summary`.
        text: The whole text (arguments as indented JSON for a tool call).
        title: A one-line title for blocks shown folded (tool calls, results, thinking).
        is_error: A failed tool result.
    """

    kind: str
    text: str
    title: str = ""
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """One row of the transcript.

    Attributes:
        entry_id: The entry shown (an anchor in the HTML).
        role: `user`, `assistant`, `toolResult`, `compactionSummary`, ... (the message's).
        title: What the row is, e.g. `Assistant · anthropic/claude-sonnet-4-5`.
        timestamp: The entry's timestamp, as recorded.
        tokens: The counter's tokens of the message.
        recorded: What the provider recorded for a reply (`recorded_usage_text`), if any.
        blocks: The content.
        notes: Marks: a compaction's facts, "not in the model's context now", ...
        region: Where the cut puts it: `summarized`, `turn prefix`, `kept` or "" (no cut,
            or before the region the cut considered).
        in_context: Whether the model sees it at the leaf (False for what an earlier
            compaction summarized).
    """

    entry_id: str
    role: str
    title: str
    timestamp: str
    tokens: int
    recorded: str | None
    blocks: tuple[Block, ...]
    notes: tuple[str, ...] = ()
    region: str = ""
    in_context: bool = True


@dataclass(frozen=True, slots=True)
class Marker:
    """A line between two messages: the cut, or where a split turn starts.

    Attributes:
        kind: `cut` or `turn start`.
        before: Index in `TranscriptDocument.messages` of the message it stands above.
        text: What it says.
    """

    kind: str
    before: int
    text: str


@dataclass(frozen=True, slots=True)
class TranscriptDocument:
    """A session's transcript, ready to render.

    Attributes:
        title: `Session <id>`.
        facts: `(label, value)` rows of the header (tokens labelled by source).
        messages: The rows, in path order.
        markers: The cut and the split turn's start, by position.
        warnings: Sentences a reader must see first (figures that disagree extremely).
    """

    title: str
    facts: tuple[tuple[str, str], ...]
    messages: tuple[Message, ...]
    markers: tuple[Marker, ...]
    warnings: tuple[str, ...] = ()


ROLE_TITLES: dict[str, str] = {
    "user": "User",
    "assistant": "Assistant",
    "toolResult": "Tool result",
    "bashExecution": "Shell command",
    "pythonExecution": "Python",
    "compactionSummary": "Compaction",
    "branchSummary": "Branch summary",
    "custom": "Custom message",
}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _content_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block("text", content)] if content else []
    blocks: list[Block] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            blocks.append(Block("text", str(block["text"])))
        elif kind == "thinking" and block.get("thinking"):
            text = str(block["thinking"])
            blocks.append(Block("thinking", text, f"thinking · {_one_line(text, 60)}"))
        elif kind == "redactedThinking":
            blocks.append(Block("thinking", "(redacted by the provider)", "redacted thinking"))
        elif kind == "toolCall":
            arguments = block.get("arguments", {})
            name = str(block.get("name", "?"))
            short = _one_line(orjson.dumps(arguments, default=str).decode(), 70)
            blocks.append(Block("tool_call", _json(arguments), f"{name} {short}"))
        elif kind == "image":
            blocks.append(Block("image", f"[image {block.get('mimeType', '')}]"))
    return blocks


def _blocks(item: TranscriptItem) -> list[Block]:
    msg = item.message
    role = item.role
    if role in ("compactionSummary", "branchSummary"):
        short = msg.get("shortSummary")
        text = str(short) if short and item.superseded else str(msg.get("summary", ""))
        return [Block("summary", text, "summary")]
    if role == "bashExecution":
        return [Block("tool_result", bash_execution_text(msg), "shell command and output")]
    if role == "pythonExecution":
        return [Block("tool_result", python_execution_text(msg), "Python cell and output")]
    blocks = _content_blocks(msg.get("content"))
    if role == "toolResult":
        text = "\n".join(b.text for b in blocks if b.kind == "text")
        lines = text.count("\n") + 1 if text else 0
        error = bool(msg.get("isError"))
        title = f"{msg.get('toolName', '')} · {lines:,} line(s)" + (" · error" if error else "")
        rest = [b for b in blocks if b.kind != "text"]
        return [Block("tool_result", text, title, is_error=error), *rest]
    if msg.get("errorMessage"):
        blocks.append(Block("text", f"(error: {msg['errorMessage']})"))
    return blocks


def _title(item: TranscriptItem) -> str:
    msg = item.message
    role = item.role or "?"
    base = ROLE_TITLES.get(role, role)
    if role == "assistant":
        model = "/".join(str(p) for p in (msg.get("provider"), msg.get("model")) if p)
        stop = msg.get("stopReason")
        return " · ".join(p for p in (base, model, f"stop: {stop}" if stop else "") if p)
    if role == "custom" and msg.get("customType"):
        return f"{base} · {msg['customType']}"
    if role == "compactionSummary" and item.superseded:
        return f"{base} (superseded by a later one)"
    return base


def _compaction_notes(item: TranscriptItem, record: Mapping[str, Any]) -> tuple[str, ...]:
    msg = item.message
    notes = []
    before = msg.get("tokensBefore")
    if isinstance(before, int):
        notes.append(f"context before it: {before:,} tokens (as the compaction recorded it)")
    if record.get("firstKeptEntryId"):
        notes.append(f"kept from entry {record['firstKeptEntryId']} on")
    if msg.get("method"):
        notes.append(f"method: {msg['method']}")
    return tuple(notes)


def _regions(prep: CompactionPreparation | None) -> dict[str, str]:
    if prep is None:
        return {}
    regions = dict.fromkeys(prep.summarize_entry_ids, "summarized")
    regions.update(dict.fromkeys(prep.turn_prefix_entry_ids, "turn prefix"))
    regions.update(dict.fromkeys(prep.kept_entry_ids, "kept"))
    return regions


def _messages(
    session: Session,
    items: Sequence[TranscriptItem],
    counter: TokenCounter,
    regions: Mapping[str, str],
    seen: set[str],
) -> list[Message]:
    rows = []
    for item in items:
        entry = session.get(item.entry_id) if item.entry_id else None
        record = entry.record if entry is not None else {}
        notes: tuple[str, ...] = ()
        if item.role == "compactionSummary":
            notes = _compaction_notes(item, record)
        entry_id = item.entry_id or ""
        in_context = entry_id in seen
        if not in_context and item.role != "compactionSummary":
            notes = (*notes, "not in the model's context now (a compaction summarized it)")
        rows.append(
            Message(
                entry_id=entry_id,
                role=item.role or "?",
                title=_title(item),
                timestamp=str(entry.timestamp or "") if entry is not None else "",
                tokens=counter.count_message(item.message),
                recorded=recorded_usage_text(item.message),
                blocks=tuple(_blocks(item)),
                notes=notes,
                region=regions.get(entry_id, ""),
                in_context=in_context,
            )
        )
    return rows


def _markers(
    session: Session,
    leaf_id: str | None,
    rows: Sequence[Message],
    prep: CompactionPreparation | None,
    counter: TokenCounter,
) -> tuple[Marker, ...]:
    if prep is None:
        return ()
    index = {e.id: i for i, e in enumerate(session.path(leaf_id))}

    def first_at(path_index: int) -> int | None:
        return next(
            (i for i, r in enumerate(rows) if index.get(r.entry_id, -1) >= path_index), None
        )

    markers = []
    summarized = counter.count_messages(prep.messages_to_summarize)
    prefix = counter.count_messages(prep.turn_prefix_messages)
    kept = counter.count_messages(prep.recent_messages)
    cut = first_at(prep.cut_index)
    if cut is not None:
        markers.append(
            Marker(
                "cut",
                cut,
                f"✂ the cut: a compaction now would summarize "
                f"{len(prep.messages_to_summarize):,} message(s) above ({summarized:,} tokens "
                f"{ESTIMATED}) and keep {len(prep.recent_messages):,} from here "
                f"({kept:,} tokens), first kept entry {prep.first_kept_entry_id}",
            )
        )
    if prep.is_split_turn and prep.turn_start_index >= 0:
        start = first_at(prep.turn_start_index)
        if start is not None:
            markers.append(
                Marker(
                    "turn start",
                    start,
                    f"the split turn starts here: its first {len(prep.turn_prefix_messages):,} "
                    f"message(s) ({prefix:,} tokens) are summarized as the turn prefix",
                )
            )
    return tuple(sorted(markers, key=lambda m: m.before))


def _usage_totals(session: Session, leaf_id: str | None) -> str:
    totals: Counter[str] = Counter()
    replies = 0
    for entry in session.path(leaf_id):
        usage = message_usage(entry.message, profile="pi")
        if usage is None:
            continue
        replies += 1
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[key] += int(value)
    if not replies:
        return "none recorded"
    return (
        f"{replies:,} replies: input {totals['input']:,}, output {totals['output']:,}, cache "
        f"read {totals['cacheRead']:,}, cache write {totals['cacheWrite']:,} ({RECORDED})"
    )


def _facts(
    session: Session,
    leaf_id: str | None,
    rows: Sequence[Message],
    figures: ContextFigures,
) -> tuple[tuple[str, str], ...]:
    path = session.path(leaf_id)
    stamps = [str(e.timestamp) for e in path if e.timestamp]
    models = sorted(
        {
            "/".join(str(p) for p in (m.get("provider"), m.get("model")) if p)
            for e in path
            if e.role == "assistant" and (m := e.message) is not None and m.get("model")
        }
    )
    roles = Counter(r.role for r in rows)
    cost, priced, _ = cost_so_far(session)
    facts = [
        ("format", session.source_format),
        ("source", str(session.source_path or "(in memory)")),
        ("working directory", str(session.header.get("cwd") or "-")),
        ("time", f"{stamps[0]} – {stamps[-1]}" if stamps else "-"),
        ("models", ", ".join(models) or "-"),
        ("entries", f"{len(session.entries):,} ({len(path):,} on this path)"),
        ("messages", ", ".join(f"{ROLE_TITLES.get(r, r)} {n:,}" for r, n in roles.most_common())),
        ("compactions", f"{roles.get('compactionSummary', 0):,}"),
        ("branches", f"{len(session.leaves):,} leaves"),
        ("subagents", f"{len(session.linked):,}"),
        ("context at the leaf", figures.text()),
        ("usage on this path", _usage_totals(session, leaf_id)),
        (
            "cost (every branch)",
            f"${cost:,.4f}" + (f" ({priced:,} replies at list prices)" if priced else ""),
        ),
    ]
    return tuple(facts)


def transcript_document(
    session: Session,
    *,
    leaf_id: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
) -> TranscriptDocument:
    """The transcript of a session's path, with its facts, compactions and cut.

    Args:
        session: The session (not changed).
        leaf_id: The leaf whose path is exported (default: the session leaf).
        profile: Which context and cut (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).
    """
    counter = counter or TokenCounter.for_profile(profile)
    leaf = leaf_id or session.leaf_id
    items = transcript(session, leaf) if leaf is not None else []
    context = build_session_context(session, leaf, profile=profile)
    counts = [counter.count_message(m) for m in context.messages]
    figures = context_figures(context.messages, counts, method=counter.method, profile=profile)
    prep = None
    if leaf is not None:
        settings = CompactionSettings.for_profile(profile)
        prep = prepare_compaction(session, settings, counter, leaf_id=leaf)
    seen = {str(i) for i in context.entry_ids if i}
    rows = _messages(session, items, counter, _regions(prep), seen)
    warning = figures.warning()
    return TranscriptDocument(
        title=f"Session {session.id}",
        facts=_facts(session, leaf, rows, figures),
        messages=tuple(rows),
        markers=_markers(session, leaf, rows, prep, counter),
        warnings=(warning,) if warning else (),
    )
