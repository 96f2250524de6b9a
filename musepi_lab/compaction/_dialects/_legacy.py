"""The release's serializer without a dialect (`[User]:`, `[Think]:`, …)."""

from __future__ import annotations

from collections.abc import Sequence

from .._serialize import truncate_tool_result
from ._js import js_json, js_keys
from ._parts import Message, call_args, call_name, message_blocks


# -- legacy (no dialect) ---------------------------------------------------------------------
def render_legacy(messages: Sequence[Message]) -> str:
    """The release's serializer without a dialect: `[User]:`, `[Think]:`, `[Assistant]:`,
    `[Tool Call]:` and `[Tool Result]:` parts joined by a blank line.

    Developer messages and images are left out; `useless` pairs are already gone.
    """
    parts: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            text = (
                content
                if isinstance(content, str)
                else "".join(
                    str(b.get("text", "")) for b in message_blocks(msg) if b.get("type") == "text"
                )
            )
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            p_text: list[str] = []
            p_think: list[str] = []
            p_calls: list[str] = []
            for block in message_blocks(msg):
                kind = block.get("type")
                if kind == "text":
                    p_text.append(str(block.get("text", "")))
                elif kind == "thinking":
                    p_think.append(str(block.get("thinking", "")))
                elif kind == "toolCall":
                    args = call_args(block)
                    rendered = ", ".join(f"{k}={js_json(args[k])}" for k in js_keys(args))
                    p_calls.append(f"{call_name(block)}({rendered})")
            if p_think:
                parts.append("[Think]: " + "\n".join(p_think))
            if p_text:
                parts.append("[Assistant]: " + "\n".join(p_text))
            if p_calls:
                parts.append("[Tool Call]: " + "; ".join(p_calls))
        elif role == "toolResult":
            text = "".join(
                str(b.get("text", "")) for b in message_blocks(msg) if b.get("type") == "text"
            )
            if text:
                parts.append(f"[Tool Result]: {truncate_tool_result(text)}")
    return "\n\n".join(parts)
