"""MusePi's passes over a built context (spec §2.3 post-passes): tool calls with no result
on the path are stripped, aborted and error turns dropped with their results.

Both work on `(message, entry id)` pairs and never change a message: a turn that needs
rewriting is copied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..session._model import Message

INTERRUPTED_THINKING_TYPE = "interrupted-thinking"
"""customType of oh-my-pi's continuity message after an interrupted thinking turn."""


def _tool_call_ids(message: Message) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        str(b["id"])
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def strip_unpaired_calls(
    items: list[tuple[Message, str | None]], *, transcript: bool
) -> list[tuple[Message, str | None]]:
    """Remove tool calls with no result on the path (spec §2.3 post-pass (a)).

    A rewritten turn also loses `redactedThinking` and its thinking signatures (a provider
    rejects a modified signed turn); an emptied turn is dropped, except in the transcript,
    where it stays with a `strippedToolCalls` count.
    """
    paired = {m.get("toolCallId") for m, _ in items if m.get("role") == "toolResult"}
    # Every tool call as (item index, call id), found by one comprehension: only the few
    # turns holding an unpaired call are rewritten.
    calls = [
        (index, b.get("id"))
        for index, (m, _) in enumerate(items)
        if m.get("role") == "assistant" and isinstance(content := m.get("content"), list)
        for b in content
        if (type(b) is dict or isinstance(b, Mapping)) and b.get("type") == "toolCall"
    ]
    out = list(items)
    for index in sorted({index for index, call_id in calls if call_id not in paired}, reverse=True):
        msg, entry_id = out[index]
        rewritten = _without_unpaired_calls(msg, paired, transcript=transcript)
        if rewritten is None:
            del out[index]
        else:
            out[index] = (rewritten, entry_id)
    return out


def _without_unpaired_calls(
    msg: Message, paired: set[Any], *, transcript: bool
) -> dict[str, Any] | None:
    """An assistant turn without its unpaired tool calls (None: emptied, outside the
    transcript)."""
    content = msg["content"]
    stripped = 0
    kept: list[Any] = []
    for block in content:
        if isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "toolCall" and block.get("id") not in paired:
                stripped += 1
                continue
            if kind == "redactedThinking":
                continue
            if kind == "thinking" and block.get("thinkingSignature"):
                block = {k: v for k, v in block.items() if k != "thinkingSignature"}
        kept.append(block)
    if not kept and not transcript:
        return None
    rewritten = {**msg, "content": kept}
    if transcript:
        rewritten["strippedToolCalls"] = stripped
    return rewritten


_FAILED = ("aborted", "error")


def drop_failed_turns(
    items: list[tuple[Message, str | None]],
) -> list[tuple[Message, str | None]]:
    """Drop aborted/error assistant turns and their results (spec §2.3 post-pass (b)).

    A turn followed by the interrupted-thinking continuity message stays.
    """
    out = list(items)
    # Found first, then handled from the last: a drop only changes the items after it.
    failed = [
        index
        for index, (m, _) in enumerate(out)
        if m.get("stopReason") in _FAILED and m.get("role") == "assistant"
    ]
    for index in reversed(failed):
        msg = out[index][0]
        nxt = out[index + 1][0] if index + 1 < len(out) else None
        continuity = (
            nxt is not None
            and nxt.get("role") == "custom"
            and nxt.get("customType") == INTERRUPTED_THINKING_TYPE
        )
        if not continuity:
            dropped = set(_tool_call_ids(msg))
            del out[index]
            if dropped:
                out[index:] = [
                    item
                    for item in out[index:]
                    if not (
                        item[0].get("role") == "toolResult" and item[0].get("toolCallId") in dropped
                    )
                ]
    return out
