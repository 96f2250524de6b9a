"""The messages a dialect renders: `useless` pairs dropped, tool results cut to text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .._serialize import truncate_tool_result
from ._parts import Message, message_blocks


# -- preparation and dispatch ----------------------------------------------------------------
def useless_call_ids(messages: Iterable[Message]) -> frozenset[str]:
    """Ids of the tool calls whose results are flagged `useless` and are not errors."""
    return frozenset(
        str(m.get("toolCallId"))
        for m in messages
        if m.get("role") == "toolResult"
        and m.get("useless") is True
        and m.get("isError") is not True
    )


def without_useless(messages: Sequence[Message]) -> list[Message]:
    """The legacy serializer's view: useless results and their calls gone (blocks only)."""
    useless = useless_call_ids(messages)
    if not useless:
        return list(messages)
    out: list[Message] = []
    for msg in messages:
        role = msg.get("role")
        if role == "toolResult" and str(msg.get("toolCallId")) in useless:
            continue
        if role == "assistant":
            blocks = [
                b
                for b in message_blocks(msg)
                if not (b.get("type") == "toolCall" and str(b.get("id")) in useless)
            ]
            msg = {**msg, "content": blocks}
        out.append(msg)
    return out


def dialect_input(messages: Sequence[Message], dialect: str) -> list[Message]:
    """The messages a dialect renders (see the module docstring for the rules)."""
    useless = useless_call_ids(messages)
    drop_thinking = dialect == "anthropic"
    out: list[Message] = []
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            content = msg.get("content")
            blocks = content if isinstance(content, list) else []
            kept = [
                b
                for b in blocks
                if not (
                    isinstance(b, Mapping)
                    and (
                        (b.get("type") == "toolCall" and str(b.get("id")) in useless)
                        or (drop_thinking and b.get("type") == "thinking")
                    )
                )
            ]
            if kept:
                out.append(msg if len(kept) == len(blocks) else {**msg, "content": kept})
        elif role == "toolResult":
            if str(msg.get("toolCallId")) in useless:
                continue
            text = "".join(
                str(b.get("text", "")) for b in message_blocks(msg) if b.get("type") == "text"
            )
            if text:
                out.append(
                    {**msg, "content": [{"type": "text", "text": truncate_tool_result(text)}]}
                )
        else:
            out.append(msg)
    return out
