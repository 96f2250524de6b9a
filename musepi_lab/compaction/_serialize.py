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
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
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


# -- snapcompact scoped serialization (§6.2) ------------------------------------------------

TOOL_ARG_MAX_CHARS = 500
"""Per-argument-value cap inside a serialized tool call."""
TOOL_CALL_MAX_CHARS = 2000
"""Cap on one tool call's whole serialized argument list."""
TRUNCATE_HEAD_RATIO = 0.6
"""Share of a truncation budget kept from the head; the rest keeps the tail."""
DIM_ON = "\x0e"
"""Zero-width ink toggle (shift-out): following text prints dim."""
DIM_OFF = "\x0f"
"""Zero-width ink toggle (shift-in): back to normal ink."""
NEWLINE_GLYPH = "\u2588"
"""Printed in place of any whitespace run that contained a line break."""
INTENT_FIELD = "_i"
"""The tool-argument key carrying a call's intent (pi-ai's `INTENT_FIELD`).

oh-my-pi revisions disagree on the key (`_i`, `intent`, `i`); the block-level `intent`
field wins when present. Pass `intent_field=` to `serialize_scoped` for another key.
"""

SCOPE_USER = "¶user:"
SCOPE_THINK = "¶think:"
SCOPE_AI = "¶ai:"
SCOPE_CALL = "¶call:"


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


_DIM_MARKERS_RE = re.compile("[\x0e\x0f]")


def strip_dim_markers(text: str) -> str:
    """Remove stray ink toggles from raw content so it cannot forge dim spans."""
    return _DIM_MARKERS_RE.sub("", text)


# Data URLs: `data:<type/subtype>(;param=value)*;base64,<payload>`, the payload optionally
# holding one elision marker, optionally closed by `)` (a Markdown image wrapper).
_MEDIA_TOKEN = r"[\w!#$%&'*+.^|~-]+"
_ELIDED_MARKER = r"\[(?:\u2026|\.{3})\d+ch elided(?:\u2026|\.{3})\]"
_DATA_URL_RE = re.compile(
    rf"data:([A-Za-z][\w.+-]*/[\w.+-]+(?:;{_MEDIA_TOKEN}={_MEDIA_TOKEN})*);base64,"
    rf"([A-Za-z0-9+/=]*(?:\s*{_ELIDED_MARKER}\s*[A-Za-z0-9+/=]*)?)"
    r"(\s*\))?",
    re.IGNORECASE | re.ASCII,
)
_ELIDED_IN_PAYLOAD_RE = re.compile(rf"\s*{_ELIDED_MARKER}\s*", re.ASCII)
_CANONICAL_BASE64_RE = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)"
)
_BASE64_MARKER_RE = re.compile(r";base64,", re.IGNORECASE)
_DAMAGED_PAYLOAD_MIN_CHARS = 40


def _markdown_opener_start(text: str, data_index: int, cursor: int) -> int | None:
    """Start of a `![label](` / `[label](` opener right before `data_index`, if any."""
    i = data_index
    while i > cursor and text[i - 1] in JS_WHITESPACE:
        i -= 1
    if i - 2 < cursor or text[i - 1] != "(" or text[i - 2] != "]":
        return None
    opener = -1
    for j in range(i - 3, cursor - 1, -1):
        c = text[j]
        if c in "]\n":
            break
        if c == "[":
            opener = j
    if opener < 0:
        return None
    return opener - 1 if opener > cursor and text[opener - 1] == "!" else opener


def elide_data_urls(text: str, *, archive: bool = False) -> str:
    """Replace inline base64 data URLs with `[data URL omitted: <mime>, <N> base64 chars]`.

    A Markdown image/link wrapper around the URL goes with it. In source text (the
    default) a short payload that is not canonical base64 is a prose mention and stays;
    with `archive=True` (text that may have been cut anywhere) every data URL is elided.
    A payload that already carries an elision marker counts the elided characters too.
    """
    if not _BASE64_MARKER_RE.search(text):
        return text
    out: list[str] = []
    cursor = 0
    for match in _DATA_URL_RE.finditer(text):
        url_start, url_end = match.start(), match.end()
        mime, payload, closer = match.group(1), match.group(2) or "", match.group(3)
        marker = _ELIDED_IN_PAYLOAD_RE.search(payload)
        is_atom = (
            archive
            or marker is not None
            or _CANONICAL_BASE64_RE.fullmatch(payload) is not None
            or len(payload) >= _DAMAGED_PAYLOAD_MIN_CHARS
        )
        if not is_atom:
            out.append(text[cursor:url_end])
            cursor = url_end
            continue
        if marker is not None:
            digits = re.search(r"\d+", marker.group(0), re.ASCII)
            b64_chars = len(payload) - len(marker.group(0)) + int(digits.group(0) if digits else 0)
        else:
            b64_chars = len(payload)
        placeholder = f"[data URL omitted: {mime}, {b64_chars} base64 chars]"
        opener = _markdown_opener_start(text, url_start, cursor)
        emit_start = opener if opener is not None else url_start
        out.append(text[cursor:emit_start])
        if opener is not None and closer is not None:
            out.append(placeholder)
        else:
            out.append(text[opener:url_start] if opener is not None else "")
            out.append(placeholder)
            out.append(closer or "")
        cursor = url_end
    out.append(text[cursor:])
    return "".join(out)


def _result_text_by_call(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[set[str], dict[str, str]]:
    useless: set[str] = set()
    texts: dict[str, str] = {}
    for msg in messages:
        if msg.get("role") != "toolResult":
            continue
        call_id = msg.get("toolCallId")
        if msg.get("useless") is True and msg.get("isError") is not True:
            useless.add(call_id)  # type: ignore[arg-type]
            continue
        text = message_text(msg.get("content"))
        if text:
            texts[call_id] = text  # type: ignore[index]
    return useless, texts


class _Parts:
    """Scoped parts; a part with the same scope as the previous one is merged into it."""

    __slots__ = ("last_scope", "parts")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.last_scope: str | None = None

    def push(self, scope: str, content: str) -> None:
        if self.parts and self.last_scope == scope:
            last = self.parts[-1]
            sep = "" if last.endswith("\n") or content.startswith("\n") else "\n"
            self.parts[-1] = last + sep + content
        else:
            self.parts.append(scope + content)
            self.last_scope = scope


def serialize_scoped(
    messages: Iterable[Mapping[str, Any]],
    *,
    include_thinking: bool = True,
    tool_result_max_chars: int = TOOL_RESULT_MAX_CHARS,
    tool_arg_max_chars: int = TOOL_ARG_MAX_CHARS,
    tool_call_max_chars: int = TOOL_CALL_MAX_CHARS,
    head_ratio: float = TRUNCATE_HEAD_RATIO,
    dim_tool_results: bool = True,
    intent_field: str = INTENT_FIELD,
    normalize: bool = False,
) -> str:
    """snapcompact's scoped serialization of LLM messages (spec §6.2).

    Scopes: `¶user:` (user text), `¶think:` (thinking, left out when `include_thinking` is
    false), `¶ai:` (assistant text), `¶call:` (a tool call and its result). Parts are joined
    by a blank line; consecutive parts of the same scope merge into one, joined by `\\n`
    unless one side already has the newline. Assistant blocks stream in content order:
    pending thinking and text flush into their own parts right before each tool call.

    A call is `name(k=<JSON>, …)`: each value is data-URL-elided and cut to
    `tool_arg_max_chars`, the whole list to `tool_call_max_chars` (head+tail, see
    `truncate_head_tail`); the intent (block `intent`, else the `intent_field` argument) is
    removed from the arguments and appended as `//<intent>` with whitespace collapsed. Its
    result follows on the next line as `<out>\\n` + U+000E + body + U+000F + `\\n</out>`
    (no ink toggles when `dim_tool_results` is false), the body data-URL-elided and cut to
    `tool_result_max_chars`. A result whose call is not in `messages` renders as its own
    `¶call:` part starting with a newline. Results flagged `useless` (and not errors) are
    dropped together with their calls. Raw ink toggles in the content are removed.

    Args:
        messages: LLM messages (after `convert_to_llm`).
        include_thinking: Keep `¶think:` parts (oh-my-pi drops them for Anthropic readers).
        tool_result_max_chars: Cap per tool-result body.
        tool_arg_max_chars: Cap per argument value.
        tool_call_max_chars: Cap per argument list.
        head_ratio: Head share of each cap.
        dim_tool_results: Wrap result bodies in the dim ink toggles.
        intent_field: Argument key holding the call's intent.
        normalize: Pass the result through `normalize_archive_text` (as snapcompact does
            before laying out the archive).

    Returns:
        The archive text.
    """
    msgs = [m for m in messages if isinstance(m, Mapping)]
    useless, result_text = _result_text_by_call(msgs)
    merged: set[Any] = set()
    parts = _Parts()

    def result_block(raw: str) -> str:
        body = truncate_head_tail(
            elide_data_urls(strip_dim_markers(raw)), tool_result_max_chars, head_ratio
        )
        return (
            f"<out>\n{DIM_ON}{body}{DIM_OFF}\n</out>"
            if dim_tool_results
            else f"<out>\n{body}\n</out>"
        )

    for msg in msgs:
        role = msg.get("role")
        if role == "user":
            text = message_text(msg.get("content"))
            if text:
                parts.push(SCOPE_USER, strip_dim_markers(text))
        elif role == "assistant":
            pending_thinking: list[str] = []
            pending_text: list[str] = []
            for block in _blocks(msg):
                kind = block.get("type")
                if kind == "text":
                    text = strip_dim_markers(str(block.get("text", "")))
                    if js_trim(text):
                        pending_text.append(text)
                elif kind == "thinking":
                    if not include_thinking:
                        continue
                    thinking = strip_dim_markers(str(block.get("thinking", "")))
                    if js_trim(thinking):
                        pending_thinking.append(thinking)
                elif kind == "toolCall":
                    call_id = block.get("id")
                    if call_id in useless:
                        continue
                    _flush_assistant(parts, pending_thinking, pending_text)
                    lines = [
                        _render_scoped_call(
                            block, intent_field, tool_arg_max_chars, tool_call_max_chars, head_ratio
                        )
                    ]
                    if call_id in result_text:
                        merged.add(call_id)
                        lines.append(result_block(result_text[call_id]))
                    parts.push(SCOPE_CALL, "\n".join(lines))
            _flush_assistant(parts, pending_thinking, pending_text)
        elif role == "toolResult":
            call_id = msg.get("toolCallId")
            if call_id in useless or call_id in merged:
                continue
            if call_id in result_text:
                parts.push(SCOPE_CALL, "\n" + result_block(result_text[call_id]))
    text = "\n\n".join(parts.parts)
    return normalize_archive_text(text) if normalize else text


def _flush_assistant(parts: _Parts, thinking: list[str], texts: list[str]) -> None:
    # Thinking and text seen since the last tool call become their own parts.
    if thinking:
        parts.push(SCOPE_THINK, "\n".join(thinking))
    if texts:
        parts.push(SCOPE_AI, "\n".join(texts))
    thinking.clear()
    texts.clear()


def _render_scoped_call(
    block: Mapping[str, Any],
    intent_field: str,
    arg_max: int,
    call_max: int,
    head_ratio: float,
) -> str:
    args = _arguments(block)
    raw_intent = block.get("intent")
    if not isinstance(raw_intent, str):
        raw_intent = args.get(intent_field)
        if not isinstance(raw_intent, str):
            raw_intent = ""
    intent = js_trim(_JS_WS_RUN_RE.sub(" ", strip_dim_markers(raw_intent)))
    rendered = ", ".join(
        f"{key}={truncate_head_tail(elide_data_urls(js_stringify(value)), arg_max, head_ratio)}"
        for key, value in args.items()
        if key != intent_field
    )
    line = f"{block.get('name', '')}({truncate_head_tail(rendered, call_max, head_ratio)})"
    return f"{line}//{intent}" if intent else line


# -- archive text normalization (§6.2) -------------------------------------------------------

# Folds for punctuation and symbols that NFKD leaves alone (or leaves non-ASCII).
CHAR_FOLD: Mapping[str, str] = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"',
    "\u2032": "'", "\u2033": '"', "\u2035": "'", "\u2036": '"',
    "\u2039": "<", "\u203a": ">",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2044": "/",
    "\u2024": ".", "\u2025": "..", "\u2026": "...", "\u22ef": "...",
    "\u2022": "*", "\u2023": "*", "\u2043": "-", "\u2219": "*",
    "\u25cf": "*", "\u25a0": "*", "\u25aa": "*",
    "\u2190": "<-", "\u2191": "^", "\u2192": "->", "\u2193": "v", "\u2194": "<->",
    "\u21d0": "<=", "\u21d2": "=>", "\u21d4": "<=>",
    "\u2713": "v", "\u2714": "v", "\u2717": "x", "\u2718": "x",
}  # fmt: skip

# Status pictographs that carry meaning in tool output; other emoji are dropped.
EMOJI_FOLD: Mapping[str, str] = {
    "\u2705": "[OK]", "\u2611": "[OK]", "\u2714": "[OK]",
    "\u274c": "[FAIL]", "\u274e": "[FAIL]", "\u2716": "[FAIL]",
    "\u26a0": "[WARN]", "\U0001f6a8": "[ALERT]", "\u2139": "[INFO]",
    "\U0001f41b": "[BUG]", "\U0001f4a5": "[CRASH]", "\U0001f525": "[HOT]",
    "\U0001f512": "[LOCK]", "\U0001f513": "[UNLOCK]",
    "\U0001f4c1": "[DIR]", "\U0001f4c2": "[DIR]", "\U0001f4c4": "[FILE]",
    "\U0001f4dd": "[NOTE]", "\U0001f9ea": "[TEST]",
    "\u23f3": "[WAIT]", "\u231b": "[WAIT]", "\U0001f680": "[RUN]",
}  # fmt: skip

# Unicode `Extended_Pictographic` (emoji-data.txt), which Python's `re` cannot name.
_PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D), (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip

_LINE_BREAKS = "\n\r\u2028\u2029"
_LINE_BREAK_RE = re.compile(f"[{_LINE_BREAKS}]")
# JavaScript whitespace without U+FEFF (a format character too, dropped with them first),
# escaped for a character class.
_SPACING = re.escape(JS_WHITESPACE.replace("\ufeff", ""))
# A spacing run, unless it is one plain space (most runs: left alone, no callback). The
# pattern opens with a character class so the regex engine skips other text in C.
_SPACING_RUN_RE = re.compile(f"[{_SPACING}](?:[{_SPACING}]+|(?<! ))")
_EDGES = " " + NEWLINE_GLYPH
_EXTRA_SPACES_RE = re.compile(" {2,}")
# Everything the pixel font does not print as it is: not ASCII/Latin-1, the ink toggles or `█`.
_UNPRINTED_RUN_RE = re.compile(f"[^\\x20-\\x7e\\xa0-\\xff{DIM_ON}{DIM_OFF}{NEWLINE_GLYPH}]+")
# Folds are cached per distinct character; bounded, so text cycling through all of Unicode
# cannot grow the cache without limit.
_FOLD_CACHE_SIZE = 1 << 16
# ECMA-48 escape sequences, as the `ansi-regex` package matches them, then any bare ESC pair.
_ANSI_RE = re.compile(
    "[\x1b\x9b][\\[\\]()#;?]*(?:"
    "(?:(?:(?:;[-a-zA-Z\\d/#&.:=?%@~_]+)*|[a-zA-Z\\d]+(?:;[-a-zA-Z\\d/#&.:=?%@~_]*)*)?"
    "(?:\x07|\x1b\\\\|\x9c))"
    "|(?:(?:\\d{1,4}(?:;\\d{0,4})*)?[\\dA-PR-TZcf-nq-uy=><~])"
    ")",
    re.ASCII,
)
_ESC_PAIR_RE = re.compile("\x1b[\\s\\S]?")


def is_pictographic(ch: str) -> bool:
    """Whether a character is Unicode `Extended_Pictographic` (an emoji pictograph)."""
    cp = ord(ch)
    if cp < 0xA9:
        return False
    return any(lo <= cp <= hi for lo, hi in _PICTOGRAPHIC_RANGES)


def _ascii_or_latin1(cp: int) -> bool:
    return 0x20 <= cp < 0x7F or 0xA0 <= cp <= 0xFF


def _unrenderable(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Mn", "Me", "Cs")


def fold_to_ascii(ch: str) -> str | None:
    """A one-character ASCII/Latin-1 fold by NFKD (fullwidth, ligatures, accents, …).

    Combining marks are dropped; residual punctuation goes through `CHAR_FOLD`. None when
    the character has no decomposition or still leaves an undrawable character.
    """
    decomposed = "".join(
        c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.category(c).startswith("M")
    )
    if decomposed == ch:
        return None
    out: list[str] = []
    for part in decomposed:
        if _ascii_or_latin1(ord(part)):
            out.append(part)
        elif part in CHAR_FOLD:
            out.append(CHAR_FOLD[part])
        else:
            return None
    return "".join(out)


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (and any stray ESC pair)."""
    if "\x1b" not in text:
        return text
    return _ESC_PAIR_RE.sub("", _ANSI_RE.sub("", text))


def _char_class(codes: Iterable[int]) -> str:
    # A regex character class body of sorted code points, consecutive ones as ranges.
    ranges: list[list[int]] = []
    for cp in codes:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges
    )


@cache
def _format_char_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # (runs of characters that may be format characters, format characters). Taken from
    # this Python's Unicode database, so the set is exactly what `unicodedata.category`
    # calls Cf; built on first use (about 0.1 s), not at import. The first pattern lets
    # the common text (ASCII and Latin-1 only, no soft hyphen) through one quick scan.
    category = unicodedata.category
    codes = [cp for cp in range(sys.maxunicode + 1) if category(chr(cp)) == "Cf"]
    latin1_plain = (cp for cp in range(256) if cp not in codes)
    return (
        re.compile(f"[^{_char_class(latin1_plain)}]+"),
        re.compile(f"[{_char_class(codes)}]+"),
    )


def _drop_format_chars(text: str) -> str:
    if text.isascii():  # every format character lies outside ASCII
        return text
    candidates, format_chars = _format_char_res()
    if candidates.search(text) is None:
        return text
    return candidates.sub(lambda m: format_chars.sub("", m.group()), text)


def _spacing_run(match: re.Match[str]) -> str:
    return NEWLINE_GLYPH if _LINE_BREAK_RE.search(match.group()) else " "


def _collapse_whitespace(text: str) -> str:
    # A run of whitespace and format (Cf) characters with a line break becomes the newline
    # glyph, a run with real whitespace one space, a run of only format characters (zero-
    # width space, BOM, direction marks…) nothing. Dropping the format characters first
    # gives the same runs, since they never decide a run's kind.
    return _SPACING_RUN_RE.sub(_spacing_run, _drop_format_chars(text))


@lru_cache(maxsize=_FOLD_CACHE_SIZE)
def _fold_char(ch: str) -> str:
    # What one character outside the font prints as ("" when it is dropped).
    if ch in EMOJI_FOLD:
        return EMOJI_FOLD[ch]
    if ch in CHAR_FOLD:
        return CHAR_FOLD[ch]
    cp = ord(ch)
    if 0x2500 <= cp <= 0x257F:
        return "|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+"
    folded = fold_to_ascii(ch)
    if folded is not None:
        return folded
    if is_pictographic(ch) or _unrenderable(ch):
        return ""
    return "?"


def _fold_run(match: re.Match[str]) -> str:
    return "".join(map(_fold_char, match.group()))


def normalize_archive_text(text: str) -> str:
    """Prepare archive text for snapcompact's pixel font (oh-my-pi `normalize`, spec §6.2).

    Steps: strip ANSI escapes; collapse every whitespace/format-character run — a run with
    a line break becomes one `█` (U+2588), other runs one space, pure format runs vanish;
    trim spaces and `█` at both ends; then per character: ASCII and Latin-1 stay; the ink
    toggles and `█` stay; status emoji become `[OK]`, `[FAIL]`, `[WARN]`, `[ALERT]`,
    `[INFO]`, … (`EMOJI_FOLD`); quotes, dashes, bullets, arrows, ellipses and check marks
    fold to ASCII (`CHAR_FOLD`); box drawing (U+2500–U+257F) becomes `|`, `-` or `+`;
    NFKD-decomposable characters fold to their ASCII skeleton; other pictographs are
    dropped, as are controls, combining marks and lone surrogates; anything else becomes
    `?`. Finally space runs collapse and the ends are trimmed again.

    Unlike oh-my-pi, no font is consulted: characters its bundled fonts could draw as they
    are (CJK through the Silver fallback, Greek, …) become `?` here.
    """
    # Regex passes scan in C; Python runs only per spacing run other than a lone space,
    # per run of characters outside the font, and once per distinct character folded.
    chars = _collapse_whitespace(strip_ansi(text)).strip(_EDGES)
    folded = _UNPRINTED_RUN_RE.sub(_fold_run, chars)
    # Folding can leave two spaces side by side (a dropped emoji between two words).
    if "  " in folded:
        folded = _EXTRA_SPACES_RE.sub(" ", folded)
    return folded.strip(_EDGES)
