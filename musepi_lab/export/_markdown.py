"""A transcript document as GitHub-flavoured Markdown.

Session text is data, never markup: prose has every character that could open Markdown or
HTML backslash-escaped (CommonMark lets any ASCII punctuation be escaped), so a message
holding `# title`, `[link](…)` or `<script>` reads as those characters; tool calls and
results go into fenced blocks whose fence is longer than any run of backticks inside.
Tool calls, results and thinking fold with `<details>`, as GitHub renders them.
"""

from __future__ import annotations

import html
import re

from ._document import Block, Marker, Message, TranscriptDocument

# Characters that open CommonMark or GFM markup anywhere in a line (emphasis, code, links,
# HTML and entities, tables, strikethrough) or GitHub's math (`$`).
_INLINE = re.compile(r"([\\`*_\[\]<>|~&$])")
# What opens markup only at the start of a line: an ATX heading, a list item, a setext
# underline (`===`, `---`), an ordered item (`1.`, `1)`).
_LINE_START = re.compile(r"^([#\-+=])", re.MULTILINE)
_ORDERED = re.compile(r"^(\d+)([.)])", re.MULTILINE)
_LEADING = re.compile(r"^[ \t]+", re.MULTILINE)


def md_text(text: str) -> str:
    """Prose as Markdown that renders as exactly that text: markup characters escaped,
    leading indentation kept as no-break spaces (not a code block), each line break kept."""
    escaped = _INLINE.sub(r"\\\1", text.replace("\r\n", "\n").replace("\r", "\n"))
    escaped = _ORDERED.sub(r"\1\\\2", escaped)
    escaped = _LINE_START.sub(r"\\\1", escaped)
    escaped = _LEADING.sub(lambda m: "\u00a0" * len(m.group(0).expandtabs(4)), escaped)
    lines = escaped.split("\n")
    # A line break inside a paragraph is a hard break (a trailing backslash); a blank line
    # stays a paragraph break.
    return "\n".join(
        line + "\\" if line and i + 1 < len(lines) and lines[i + 1] else line
        for i, line in enumerate(lines)
    )


def md_inline(text: str) -> str:
    """One line of prose (a heading, a table cell): escaped, newlines as spaces."""
    return md_text(" ".join(str(text).split()))


def code_span(text: str) -> str:
    """Inline code that survives backticks inside (a longer fence, padded)."""
    flat = " ".join(str(text).split())
    runs = [len(r) for r in re.findall(r"`+", flat)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def code_block(text: str) -> str:
    """A fenced block whose fence no line of the text can close."""
    runs = [len(r) for r in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}\n{text}\n{fence}"


def _block(block: Block) -> str:
    if block.kind == "text":
        return md_text(block.text)
    if block.kind == "image":
        return f"*{md_inline(block.text)}*"
    label = {"tool_call": "tool call", "tool_result": "result"}.get(block.kind, "")
    summary = html.escape(f"{label} {block.title}".strip(), quote=True)
    if block.is_error:
        summary += " (error)"
    opened = " open" if block.kind == "summary" else ""
    return (
        f"<details{opened}><summary>{summary}</summary>\n\n{code_block(block.text)}\n\n</details>"
    )


def _message(message: Message) -> str:
    head = [md_inline(message.title)]
    if message.timestamp:
        head.append(code_span(message.timestamp))
    if message.entry_id:
        head.append(code_span(message.entry_id))
    lines = [f"### {' · '.join(head)}", ""]
    facts = [f"{message.tokens:,} tokens estimated by the counter"]
    if message.recorded:
        facts.append(message.recorded)
    if message.region:
        facts.append(f"cut region: {message.region}")
    lines += [f"*{md_inline(' · '.join(facts))}*", ""]
    lines += [f"> {md_inline(note)}\n" for note in message.notes]
    for block in message.blocks:
        lines += [_block(block), ""]
    return "\n".join(lines)


def _marker(marker: Marker) -> str:
    rule = "---" if marker.kind == "cut" else "- - -"
    return f"{rule}\n\n**{md_inline(marker.text)}**\n\n{rule}\n"


def render_markdown(document: TranscriptDocument) -> str:
    """The document: a title, the facts as a table, any warning, then every message with
    the cut and the split turn's start as rules between them."""
    out = [f"# {md_inline(document.title)}", ""]
    out += [f"> **⚠ {md_inline(w)}**\n" for w in document.warnings]
    out += ["| | |", "|---|---|"]
    out += [f"| {md_inline(k)} | {md_inline(v)} |" for k, v in document.facts]
    out.append("")
    by_position: dict[int, list[Marker]] = {}
    for marker in document.markers:
        by_position.setdefault(marker.before, []).append(marker)
    for index, message in enumerate(document.messages):
        out += [_marker(m) for m in by_position.get(index, ())]
        out.append(_message(message))
    return "\n".join(out).rstrip("\n") + "\n"
