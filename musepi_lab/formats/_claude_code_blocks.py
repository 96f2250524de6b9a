"""Claude Code content blocks (Anthropic Messages shape) as pi content: pure conversions.

Split from `_claude_code.py`, which builds the entry tree from the lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ._records import text_block, tool_call_block, usage

_STOP_REASONS = {"end_turn": "stop", "tool_use": "toolUse", "max_tokens": "length"}

# -- content conversion (pure) --------------------------------------------------------------


def stop_reason(raw: Any, *, has_tool_calls: bool) -> str:
    """pi's stopReason for an Anthropic `stop_reason` (None: the reply's lines never had one)."""
    if raw is None:
        return "toolUse" if has_tool_calls else "stop"
    return _STOP_REASONS.get(raw, "stop") if isinstance(raw, str) else "stop"


def usage_from_anthropic(raw: Any) -> dict[str, Any]:
    """A pi usage object from an Anthropic `usage` object (missing counts are zero).

    Anthropic splits cache writes by lifetime (`cache_creation.ephemeral_1h_input_tokens`,
    billed at twice the input price, against 1.25x for 5-minute writes); pi's usage has one
    `cacheWrite`, so the 1-hour share is kept beside it as `cacheWrite1h` (included in
    `cacheWrite`) when the reply recorded any.
    """
    if not isinstance(raw, dict):
        return usage()
    out = usage(
        input=_count(raw, "input_tokens"),
        output=_count(raw, "output_tokens"),
        cache_read=_count(raw, "cache_read_input_tokens"),
        cache_write=_count(raw, "cache_creation_input_tokens"),
    )
    split = raw.get("cache_creation")
    one_hour = _count(split, "ephemeral_1h_input_tokens") if isinstance(split, dict) else 0
    return {**out, "cacheWrite1h": min(one_hour, out["cacheWrite"])} if one_hour else out


def _count(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def image_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """A pi image block from an Anthropic image block; a non-base64 source becomes text."""
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return {
            "type": "image",
            "data": str(source.get("data", "")),
            "mimeType": str(source.get("media_type", "")),
        }
    kind = source.get("type") if isinstance(source, dict) else None
    return text_block(f"[image: {kind or 'unknown'} source]")


def assistant_block(block: Any) -> dict[str, Any]:
    """A pi content block for one Anthropic assistant block (unknown blocks are kept as is)."""
    if not isinstance(block, dict):
        return text_block(str(block))
    kind = block.get("type")
    if kind == "text":
        return text_block(str(block.get("text", "")))
    if kind == "thinking":
        out = {"type": "thinking", "thinking": str(block.get("thinking", ""))}
        if isinstance(block.get("signature"), str):
            out["thinkingSignature"] = block["signature"]
        return out
    if kind == "redacted_thinking":
        return {
            "type": "thinking",
            "thinking": "",
            "thinkingSignature": str(block.get("data", "")),
            "redacted": True,
        }
    if kind == "tool_use":
        return tool_call_block(
            str(block.get("id", "")), str(block.get("name", "")), block.get("input")
        )
    return dict(block)


def user_blocks(blocks: list[Any]) -> list[dict[str, Any]]:
    """pi user content for the non-tool-result blocks of a user line."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, str):
            out.append(text_block(block))
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text":
            out.append(text_block(str(block.get("text", ""))))
        elif block.get("type") == "image":
            out.append(image_block(block))
        else:
            out.append(dict(block))
    return out


def tool_result_content(content: Any) -> list[dict[str, Any]]:
    """pi toolResult content: the texts joined into one text block, then the images."""
    if isinstance(content, str):
        return [text_block(content)]
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            texts.append(block)
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            converted = image_block(block)
            if converted["type"] == "image":
                images.append(converted)
            else:
                texts.append(converted["text"])
        else:
            # Not a pi block type; its JSON keeps what it said visible to the estimators.
            texts.append(orjson.dumps(block).decode())
    if texts or not images:
        return [text_block("\n".join(texts)), *images]
    return images


def text_of(content: Any) -> str:
    """The text blocks of Anthropic content joined by newlines (a string as it is)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""
