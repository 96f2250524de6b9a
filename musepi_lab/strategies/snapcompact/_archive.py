"""Snapcompact's archive text (spec §6.2): the scoped serialization of the history and the
normaliser that folds it to what the frame font can draw."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...compaction._serialize import (
    _JS_WS_RUN_RE,
    JS_WHITESPACE,
    TOOL_RESULT_MAX_CHARS,
    TRUNCATE_HEAD_RATIO,
    _arguments,
    _blocks,
    js_trim,
    truncate_head_tail,
)
from ...session._model import message_text
from ...tokens._estimate import js_stringify
from ._normalize import DIM_OFF, DIM_ON, normalize_archive_text

TOOL_ARG_MAX_CHARS = 500
"""Per-argument-value cap inside a serialized tool call."""


TOOL_CALL_MAX_CHARS = 2000
"""Cap on one tool call's whole serialized argument list."""


INTENT_FIELD = "i"
"""The tool-argument key carrying a call's intent (`INTENT_FIELD` of `@oh-my-pi/pi-wire`
18.2.3).

Older oh-my-pi revisions used other keys (`_i`, `intent`); the block-level `intent` field
wins when present. Pass `intent_field=` to `serialize_scoped` for another key.
"""


SCOPE_USER = "¶user:"


SCOPE_THINK = "¶think:"


SCOPE_AI = "¶ai:"


SCOPE_CALL = "¶call:"


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


@dataclass(frozen=True, slots=True)
class _ScopedOptions:
    """The knobs of `serialize_scoped`, carried through its helpers."""

    include_thinking: bool
    tool_result_max_chars: int
    tool_arg_max_chars: int
    tool_call_max_chars: int
    head_ratio: float
    dim_tool_results: bool
    intent_field: str


def _result_block(raw: str, opts: _ScopedOptions) -> str:
    """A tool result as `<out>` + (dimmed) body + `</out>`, elided and cut to size."""
    body = truncate_head_tail(
        elide_data_urls(strip_dim_markers(raw)), opts.tool_result_max_chars, opts.head_ratio
    )
    if opts.dim_tool_results:
        return f"<out>\n{DIM_ON}{body}{DIM_OFF}\n</out>"
    return f"<out>\n{body}\n</out>"


def _push_assistant(
    parts: _Parts,
    msg: Mapping[str, Any],
    opts: _ScopedOptions,
    useless: set[Any],
    result_text: Mapping[Any, str],
    merged: set[Any],
) -> None:
    """An assistant message's blocks in content order: thinking and text flush into their
    own parts right before each tool call, which carries its result when there is one."""
    pending_thinking: list[str] = []
    pending_text: list[str] = []
    for block in _blocks(msg):
        kind = block.get("type")
        if kind == "text":
            text = strip_dim_markers(str(block.get("text", "")))
            if js_trim(text):
                pending_text.append(text)
        elif kind == "thinking" and opts.include_thinking:
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
                    block,
                    opts.intent_field,
                    opts.tool_arg_max_chars,
                    opts.tool_call_max_chars,
                    opts.head_ratio,
                )
            ]
            if call_id in result_text:
                merged.add(call_id)
                lines.append(_result_block(result_text[call_id], opts))
            parts.push(SCOPE_CALL, "\n".join(lines))
    _flush_assistant(parts, pending_thinking, pending_text)


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
    opts = _ScopedOptions(
        include_thinking,
        tool_result_max_chars,
        tool_arg_max_chars,
        tool_call_max_chars,
        head_ratio,
        dim_tool_results,
        intent_field,
    )
    msgs = [m for m in messages if isinstance(m, Mapping)]
    useless, result_text = _result_text_by_call(msgs)
    merged: set[Any] = set()
    parts = _Parts()
    for msg in msgs:
        role = msg.get("role")
        if role == "user":
            text = message_text(msg.get("content"))
            if text:
                parts.push(SCOPE_USER, strip_dim_markers(text))
        elif role == "assistant":
            _push_assistant(parts, msg, opts, useless, result_text, merged)
        elif role == "toolResult":
            call_id = msg.get("toolCallId")
            if call_id in useless or call_id in merged:
                continue
            if call_id in result_text:
                parts.push(SCOPE_CALL, "\n" + _result_block(result_text[call_id], opts))
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
