"""A transcript document as one self-contained HTML page.

No script, no external resource: the style sheet is inline, tool calls, results, thinking
and summaries fold with `<details>`. Every text from the session goes through
`html.escape` (quotes included), so a message holding `<script>` or a closing tag shows
as that text and nothing else.
"""

from __future__ import annotations

import html

from ._document import Block, Marker, Message, TranscriptDocument

STYLE = """
body{font-family:system-ui,sans-serif;font-size:14px;margin:0 auto;max-width:1100px;
padding:12px 20px;color:#222;background:#fff}
h1{font-size:20px;margin:8px 0}
table.facts{border-collapse:collapse;margin:6px 0 14px 0}
table.facts th{text-align:left;color:#555;font-weight:normal;padding:1px 12px 1px 0;
vertical-align:top;white-space:nowrap}
table.facts td{padding:1px 0}
.warning{color:#a33;font-weight:bold;margin:6px 0}
.message{border-left:4px solid #ccc;margin:10px 0;padding:4px 10px;background:#fafafa}
.message.user{border-color:#3182bd}
.message.assistant{border-color:#31a354}
.message.toolResult,.message.bashExecution,.message.pythonExecution{border-color:#969696}
.message.compactionSummary{border-color:#e6550d;background:#fff5eb}
.message.branchSummary{border-color:#756bb1;background:#f2f0f7}
.message.out{opacity:.7}
.head{font-size:12px;color:#555}
.head b{color:#222;font-size:13px}
.id{font-family:monospace;white-space:nowrap}
.region{font-size:11px;padding:0 5px;border-radius:3px;white-space:nowrap}
.region.summarized{background:#fdd49e}.region.turn-prefix{background:#dadaeb}
.region.kept{background:#c7e9c0}
.note{font-size:12px;color:#8c2d04}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f0f0;padding:6px;margin:4px 0;
font-size:12px}
details{margin:4px 0}summary{cursor:pointer;font-size:12px;color:#333}
details.error summary{color:#a33}
.marker{margin:14px 0;padding:6px 10px;border-top:3px dashed #d62728;color:#d62728;
font-weight:bold;font-size:13px}
.marker.turn-start{border-top-style:dotted;border-color:#6a51a3;color:#6a51a3}
"""

FOLDED = {"tool_call": "tool call", "tool_result": "result", "thinking": ""}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _block(block: Block) -> str:
    if block.kind == "text":
        return f"<div class='text'>{_e(block.text)}</div>"
    if block.kind == "image":
        return f"<div class='text'><i>{_e(block.text)}</i></div>"
    label = FOLDED.get(block.kind, "")
    summary = f"{label} {_e(block.title)}".strip()
    css = " class='error'" if block.is_error else ""
    opened = " open" if block.kind == "summary" else ""
    return (
        f"<details{css}{opened}><summary>{summary}</summary><pre>{_e(block.text)}</pre></details>"
    )


def _message(message: Message) -> str:
    region = (
        f" <span class='region {message.region.replace(' ', '-')}'>{_e(message.region)}</span>"
        if message.region
        else ""
    )
    parts = [
        f"<b>{_e(message.title)}</b>",
        f"<span class='time'>{_e(message.timestamp)}</span>" if message.timestamp else "",
        f"<span class='id'>{_e(message.entry_id)}</span>",
        f"{message.tokens:,} tokens estimated by the counter",
        _e(message.recorded) if message.recorded else "",
    ]
    head = " · ".join(p for p in parts if p) + region
    notes = "".join(f"<div class='note'>{_e(n)}</div>" for n in message.notes)
    body = "".join(_block(b) for b in message.blocks)
    css = f"message {_e(message.role)}" + ("" if message.in_context else " out")
    anchor = f" id='entry-{_e(message.entry_id)}'" if message.entry_id else ""
    return f"<div class='{css}'{anchor}><div class='head'>{head}</div>{notes}{body}</div>"


def _marker(marker: Marker) -> str:
    css = marker.kind.replace(" ", "-")
    return f"<div class='marker {css}'>{_e(marker.text)}</div>"


def render_html(document: TranscriptDocument) -> str:
    """The page: header with the facts and any warning, then every message, the cut and
    the split turn's start drawn between them."""
    facts = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in document.facts)
    warnings = "".join(f"<div class='warning'>⚠ {_e(w)}</div>" for w in document.warnings)
    by_position: dict[int, list[Marker]] = {}
    for marker in document.markers:
        by_position.setdefault(marker.before, []).append(marker)
    rows: list[str] = []
    for index, message in enumerate(document.messages):
        rows.extend(_marker(m) for m in by_position.get(index, ()))
        rows.append(_message(message))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(document.title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_e(document.title)}</h1>{warnings}<table class='facts'>{facts}</table>"
        f"{''.join(rows)}</body></html>\n"
    )
