"""What `SessionExplorer` shows, as plain functions of plain values: entry lines and
cards, the context table, a navigation, the branch, subagent and file choices.

Pure string and list building (no widget here), so the views are tested without a kernel
and a later model/view split of the explorer keeps them as they are.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..compaction._token_sources import ESTIMATED, ContextFigures, recorded_usage_text
from ..context._build import SessionContext
from ..context._transcript import TranscriptItem
from ..context._transcript import render_transcript as _render_transcript
from ..formats._registry import SESSION_SUFFIXES, iter_session_files
from ..metrics._facts import context_text
from ..navigation._navigate import NavigationResult
from ..session._messages import entry_to_message
from ..session._model import Entry
from ..session._session import Session
from ._figures import escape_clip, one_line

ID_STYLE = "white-space:nowrap;font-family:monospace"
"""Ids never wrap: a wrapped id reads as two ids."""

SNIPPET_CHARS = 90
"""Characters of an entry's text shown in the entry list and the context table."""


def entry_kind(entry: Entry) -> str:
    """`type/role` of an entry, or its type when it carries no message role."""
    return f"{entry.type}/{entry.role}" if entry.role else entry.type


def entry_snippet(entry: Entry, limit: int = SNIPPET_CHARS) -> str:
    """One line of what an entry says: its message text, or its record for metadata."""
    message = entry_to_message(entry)
    if message is not None:
        text = context_text([message])
        if text.strip():
            return one_line(text, limit)
    extra = {k: v for k, v in entry.record.items() if k not in ("type", "id", "parentId")}
    return one_line(orjson.dumps(extra, default=str).decode(), limit)


def entry_option_label(index: int, entry: Entry, tokens: int) -> str:
    """The line of one path entry in the entry list (tokens estimated by the counter)."""
    return (
        f"{index:>6,} · {entry_kind(entry):<22} {tokens:>7,} est. tok · "
        f"{entry_snippet(entry, SNIPPET_CHARS)}"
    )


def subagent_options(session: Session) -> list[tuple[str, int]]:
    """`(label, index)` of the session itself (-1) and each linked session (subagents,
    compaction runs) in `Session.linked` order, for the subagent picker."""
    options = [(f"main session · {len(session.entries):,} entries", -1)]
    for index, sub in enumerate(session.linked):
        header = sub.header
        kind = str(header.get("subagentKind") or "linked")
        name = str(header.get("agentId") or sub.id)
        started_by = header.get("parentToolCallId") or header.get("compactionEntryId")
        first = next((e for e in sub.entries if e.role == "user"), None)
        what = f" · {entry_snippet(first, 50)}" if first is not None else ""
        by = f" · from {started_by}" if started_by else ""
        options.append((f"{kind} {name} · {len(sub.entries):,} entries{by}{what}", index))
    return options


def entry_html(
    entry: Entry, index: int, tokens: int, *, max_chars: int | None = None, method: str = ""
) -> str:
    """An entry as HTML: its ids, position and tokens (each figure with its source), then
    its whole content in a box that scrolls (`max_chars` cuts each block, None: never)."""
    message = entry_to_message(entry)
    if message is not None:
        item = TranscriptItem(entry_id=entry.id, entry_type=entry.type, message=message)
        body = _render_transcript([item], max_chars=max_chars)
    else:
        body = orjson.dumps(entry.to_dict(), option=orjson.OPT_INDENT_2, default=str).decode()
    counted = f" ({method})" if method else ""
    facts: list[tuple[str, Any, bool]] = [
        ("path index", f"{index:,}", False),
        ("id", entry.id, True),
        ("parent", entry.parent_id, True),
        ("line", None if entry.line is None else f"{entry.line:,}", False),
        ("timestamp", entry.timestamp, True),
        ("tokens", f"{tokens:,} {ESTIMATED}{counted}", False),
        ("usage", recorded_usage_text(entry_to_message(entry)), False),
    ]
    head = " · ".join(
        f"<b>{html.escape(k)}</b> "
        + (
            f"<span style='{ID_STYLE}'>{html.escape(str(v))}</span>"
            if nowrap
            else html.escape(str(v))
        )
        for k, v, nowrap in facts
        if v is not None
    )
    limit = None if max_chars is None else max_chars * 4
    return (
        f"<div style='font-size:12px'><div><b>{html.escape(entry_kind(entry))}</b> · {head}</div>"
        "<pre style='white-space:pre-wrap;overflow-wrap:anywhere;max-height:480px;overflow:auto;"
        f"margin:4px 0;background:#f7f7f7;padding:4px'>{_escape(body, limit)}</pre></div>"
    )


def _escape(text: str, limit: int | None) -> str:
    return html.escape(text) if limit is None else escape_clip(text, limit)


def figures_html(figures: ContextFigures) -> str:
    """Both sizes of a context, labelled by source, and the warning when they disagree."""
    warning = figures.warning()
    note = (
        f"<div style='color:#a33'><b>⚠ recorded ≠ estimated</b>: {html.escape(warning)}</div>"
        if warning
        else ""
    )
    return f"<span>{html.escape(figures.text())}</span>{note}"


def context_html(
    context: SessionContext,
    tokens: Sequence[int],
    figures: ContextFigures,
    *,
    max_rows: int = 60,
    title: str = "",
) -> str:
    """The messages of an LLM context as a table (newest rows kept when cut), headed by
    both sizes of the context, each with its source."""
    shown = range(max(0, len(context.messages) - max_rows), len(context.messages))
    rows = []
    for i in shown:
        message = context.messages[i]
        role = str(message.get("role", "?"))
        snippet = one_line(context_text([message]), SNIPPET_CHARS)
        rows.append(
            f"<tr><td>{i:,}</td><td>{html.escape(role)}</td>"
            f"<td style='{ID_STYLE}'>{html.escape(str(context.entry_ids[i]))}</td>"
            f"<td style='text-align:right'>{tokens[i]:,}</td>"
            f"<td>{html.escape(snippet)}</td></tr>"
        )
    cut = len(context.messages) - len(shown)
    more = f"<div>… {cut:,} earlier message(s) not shown</div>" if cut else ""
    model = context.model or {}
    model_text = f"{model.get('provider', '')}/{model.get('modelId', '')}" if model else "-"
    summary = (
        f"<b>{html.escape(title)}</b> {len(context.messages):,} messages · "
        f"model {html.escape(model_text)} · thinking {html.escape(context.thinking_level)}"
        + (
            f" · opens with compaction <span style='{ID_STYLE}'>"
            f"{html.escape(context.compaction_id)}</span>"
            if context.compaction_id
            else ""
        )
    )
    return (
        f"<div style='font-size:12px'><div>{summary}</div>"
        f"<div>context: {figures_html(figures)}</div>{more}"
        "<div style='max-height:320px;overflow:auto'><table style='border-collapse:collapse'>"
        "<tr><th>#</th><th>role</th><th>entry</th>"
        f"<th title='{ESTIMATED} ({html.escape(figures.method)})'>tokens (estimated)</th>"
        f"<th>text</th></tr>{''.join(rows)}</table></div></div>"
    )


def navigation_html(result: NavigationResult, *, applied: bool, max_rows: int = 40) -> str:
    """A navigation as HTML: from and to, what is abandoned, the summary budget and the
    messages prepared for it, and the summary when there is one."""
    verb = "navigated" if applied else "would navigate"
    head = (
        f"<b>{verb}</b> from {html.escape(str(result.old_leaf_id))} to "
        f"{html.escape(result.target_id)}: new leaf {html.escape(str(result.new_leaf_id))}, "
        f"common ancestor {html.escape(str(result.common_ancestor_id))}"
    )
    if result.cancelled:
        head += " · <b>cancelled by a hook</b>"
    rows = "".join(
        f"<tr><td>{html.escape(str(e.id))}</td><td>{html.escape(entry_kind(e))}</td>"
        f"<td>{html.escape(entry_snippet(e))}</td></tr>"
        for e in result.abandoned[-max_rows:]
    )
    more = len(result.abandoned) - min(len(result.abandoned), max_rows)
    prep = result.preparation
    parts = [
        f"<div>{head}</div>",
        f"<div>{len(result.abandoned)} entries abandoned"
        + (f" ({more} earlier not listed)" if more else "")
        + f" · summary budget {result.budget:,} tokens · {len(prep.messages)} messages "
        f"prepared (≈{prep.total_tokens:,} tokens)</div>",
        "<div style='max-height:200px;overflow:auto'><table>"
        f"<tr><th>entry</th><th>kind</th><th>text</th></tr>{rows}</table></div>",
    ]
    if result.summary is not None:
        parts.append(
            "<div><b>branch summary</b>"
            + (
                f" (entry {html.escape(str(result.summary_entry.id))})"
                if result.summary_entry
                else ""
            )
            + "<pre style='white-space:pre-wrap;max-height:240px;overflow:auto;"
            f"background:#f7f7f7;padding:4px'>{escape_clip(result.summary.summary, 6000)}</pre></div>"
        )
    return f"<div style='font-size:12px'>{''.join(parts)}</div>"


def branch_options(session: Session) -> list[tuple[str, str]]:
    """`(label, leaf id)` of each real branch: the session leaf first, then the tip of every
    other branch of the folded tree (`plot._layout.fold_tree`), in tree order."""
    from ..plot._layout import fold_tree

    if session.leaf_id is None:
        return []
    folded = fold_tree(session)
    depth = {e.id: d + 1 for d, e in session.walk()}
    own = folded.unit_of.get(session.leaf_id)
    tips = [session.leaf_id] + [
        str(folded.heads[u].id)
        for u, kids in enumerate(folded.children)
        if not kids and u != own and folded.heads[u].id
    ]
    options = []
    for tip in tips:
        entry = session.by_id[tip]
        label = session.labels.get(tip)
        active = " (session leaf)" if tip == session.leaf_id else ""
        tag = f" [{label}]" if label else ""
        options.append(
            (
                f"{tip} · {depth.get(tip, 0)} entries · ends {entry_kind(entry)}{tag}{active}"
                f" · {entry_snippet(entry, 40)}",
                tip,
            )
        )
    return options


def session_files(source: Path) -> list[Path]:
    """The session files a picker offers: those under a folder, or a file and its siblings."""
    if source.is_dir():
        return list(iter_session_files(source))
    siblings = sorted(
        p for p in source.parent.iterdir() if p.is_file() and p.suffix in SESSION_SUFFIXES
    )
    return siblings if source in siblings else [source, *siblings]


def file_label(file: Path, source: Path) -> str:
    """A session file as the picker names it: relative to the folder shown."""
    base = source if source.is_dir() else source.parent
    try:
        return str(file.relative_to(base))
    except ValueError:
        return str(file)
