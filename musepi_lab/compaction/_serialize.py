"""Conversation serialization for summaries and archives (spec §5.1, §5.4, §5.7, §6.2).

- `serialize_conversation`: pi's labelled transcript (`[User]: …`, `[Tool result]: …`) with
  tool results cut at 2000 UTF-16 units (spec §5.1).
- `serialize_scoped`: snapcompact's scoped archive text (`¶user:`, `¶think:`, `¶ai:`,
  `¶call:`), with each tool result merged under its call, head+tail truncation, data-URL
  placeholders, and `normalize_archive_text` for the frame font (spec §6.2).
- `merge_split_turn` (spec §5.4) and `neutralize_boundary_tags` (spec §5.7).

JavaScript semantics are kept where they change the bytes: lengths and slices count UTF-16
code units, `trim` uses JavaScript's whitespace set, `Math.round` rounds halves up, and JSON
is compact with key order kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..session._model import message_text
from ..tokens._estimate import js_stringify, utf16_len

# -- JavaScript string semantics -----------------------------------------------------------

JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters JavaScript's `\\s` and `String.prototype.trim` treat as whitespace."""
_JS_WS_CLASS = "[" + re.escape(JS_WHITESPACE) + "]"
_JS_WS_RUN_RE = re.compile(_JS_WS_CLASS + "+")


def js_trim(text: str) -> str:
    """`String.prototype.trim`: strip JavaScript whitespace at both ends."""
    return text.strip(JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    """`String.prototype.trimEnd`."""
    return text.rstrip(JS_WHITESPACE)


def utf16_slice(text: str, start: int, end: int | None = None) -> str:
    """`String.prototype.slice` in UTF-16 code units (negative indices count from the end).

    A cut through a surrogate pair leaves a lone surrogate, as JavaScript does.
    """
    if text.isascii():
        return text[start:end]
    data = text.encode("utf-16-le", "surrogatepass")
    units = len(data) // 2
    lo = max(units + start, 0) if start < 0 else min(start, units)
    if end is None:
        hi = units
    else:
        hi = max(units + end, 0) if end < 0 else min(end, units)
    if hi <= lo:
        return ""
    return data[2 * lo : 2 * hi].decode("utf-16-le", "surrogatepass")


def js_round(value: float) -> int:
    """`Math.round`: halves round up (toward +∞), unlike Python's banker's rounding."""
    return math.floor(value + 0.5)


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping)]


def _arguments(block: Mapping[str, Any]) -> Mapping[str, Any]:
    args = block.get("arguments")
    return args if isinstance(args, Mapping) else {}


# -- pi (§5.1) -----------------------------------------------------------------------------

TOOL_RESULT_MAX_CHARS = 2000
"""Tool results longer than this (UTF-16 units) are cut in summary input (pi and omp)."""


def truncate_tool_result(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """pi's tool-result cut: the first `max_chars` UTF-16 units, then a marker.

    The marker is `"\\n\\n[... N more characters truncated]"` with N the units cut off.
    """
    length = utf16_len(text)
    if length <= max_chars:
        return text
    return (
        f"{utf16_slice(text, 0, max_chars)}\n\n[... {length - max_chars} more characters truncated]"
    )


def render_tool_call(block: Mapping[str, Any]) -> str:
    """One tool call as `name(k1=<JSON>, k2=<JSON>)`, keys in argument order."""
    args = ", ".join(f"{key}={js_stringify(value)}" for key, value in _arguments(block).items())
    return f"{block.get('name', '')}({args})"


def serialize_conversation(llm_messages: Iterable[Mapping[str, Any]]) -> str:
    """pi's `serializeConversation`: LLM messages as labelled text parts (spec §5.1).

    Expects messages after `convert_to_llm` (bash runs, custom messages and summaries
    already turned into `user` messages); other roles are ignored, as are images.
    Parts, joined by a blank line, each only when non-empty:

    - user: `[User]: ` + its texts joined with no separator;
    - assistant: `[Assistant thinking]: ` + thinkings joined by `\\n`, then
      `[Assistant]: ` + texts joined by `\\n`, then `[Assistant tool calls]: ` + calls
      joined by `; ` (each `name(k=<JSON>, …)`);
    - toolResult: `[Tool result]: ` + its texts, cut by `truncate_tool_result`.

    User and assistant texts are never truncated.
    """
    parts: list[str] = []
    for msg in llm_messages:
        role = msg.get("role")
        if role == "user":
            text = message_text(msg.get("content"))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            thinking: list[str] = []
            texts: list[str] = []
            calls: list[str] = []
            for block in _blocks(msg):
                kind = block.get("type")
                if kind == "text":
                    texts.append(str(block.get("text", "")))
                elif kind == "thinking":
                    thinking.append(str(block.get("thinking", "")))
                elif kind == "toolCall":
                    calls.append(render_tool_call(block))
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = message_text(msg.get("content"))
            if text:
                parts.append(f"[Tool result]: {truncate_tool_result(text)}")
    return "\n\n".join(parts)


# -- split turn (§5.4) and boundary tags (§5.7) --------------------------------------------

NO_PRIOR_HISTORY = "No prior history."
"""The history part of a split-turn summary when there was nothing to summarize."""
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"


def merge_split_turn(history: str | None, turn_prefix: str) -> str:
    """The stored summary of a split turn: history, separator, turn-prefix summary.

    Args:
        history: The generated history summary, or None when none was generated; pi then
            writes `"No prior history."` (and so loses a previous summary — spec §5.4).
        turn_prefix: The turn-prefix summary.
    """
    head = NO_PRIOR_HISTORY if history is None else history
    return head + SPLIT_TURN_SEPARATOR + turn_prefix


_BOUNDARY_TAG_RE = re.compile(
    rf"<{_JS_WS_CLASS}*/?{_JS_WS_CLASS}*(?:conversation|previous-summary){_JS_WS_CLASS}*>",
    re.IGNORECASE,
)


def neutralize_boundary_tags(text: str) -> str:
    """Escape `<conversation>` / `<previous-summary>` tags (open or close) in untrusted text.

    Whitespace inside the tag and letter case are tolerated; the `<` becomes `&lt;`, so a
    transcript cannot close or impersonate the summary prompt's own boundaries.
    """
    return _BOUNDARY_TAG_RE.sub(lambda m: "&lt;" + m.group(0)[1:], text)


TRUNCATE_HEAD_RATIO = 0.6
"""Share of a truncation budget kept from the head; the rest keeps the tail."""


def truncate_head_tail(text: str, max_chars: int, head_ratio: float = TRUNCATE_HEAD_RATIO) -> str:
    """Keep the head and the tail of `text`, eliding the middle beyond `max_chars`.

    head = `round(max_chars * head_ratio)` (ratio clamped to [0, 1]), tail = the rest, and
    between them the marker `" […N ch elided…] "` written as in oh-my-pi's source:
    `" […" + N + "ch elided…] "` (no space between N and `ch`; U+2026 ellipses), N = the
    UTF-16 units elided. Text within the budget is returned unchanged.
    """
    length = utf16_len(text)
    if length <= max_chars:
        return text
    ratio = min(max(head_ratio, 0.0), 1.0)
    head = js_round(max_chars * ratio)
    tail = max_chars - head
    elided = length - max_chars
    tail_text = utf16_slice(text, -tail) if tail > 0 else ""
    return f"{utf16_slice(text, 0, head)} [\u2026{elided}ch elided\u2026] {tail_text}"


# -- archive text normalization (§6.2) -------------------------------------------------------
