"""What a context holds, by kind: a message's tokens split over the kinds of its parts.

Each message's total is the counter's own `count_message`, so the kinds of a context always
sum to `counter.count_messages(messages)`. The split follows the estimator: for `pi` the
weights are the UTF-16 characters pi counts (spec §3.1: images 0 in user messages, 4800
chars in tool results and custom messages, no thinking signatures, no snapcompact blocks);
for the others, the tokens of each fragment oh-my-pi counts (spec §3.4) plus the fixed
image and frame extras. pi rounds once per message, so its per-kind parts are apportioned
by largest remainder; the other methods count per fragment and need no rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ._counter import TokenCounter
from ._estimate import (
    FRAME_TOKEN_ESTIMATE,
    MUSEPI_IMAGE_TOKENS,
    PI_IMAGE_CHARS,
    js_stringify,
    utf16_len,
)

SYSTEM = "system/tools"
USER = "user"
ASSISTANT_TEXT = "assistant text"
THINKING = "thinking"
TOOL_CALLS = "tool calls"
TOOL_RESULTS = "tool results"
SUMMARIES = "summaries"
IMAGES = "images"

COMPOSITION_KINDS: tuple[str, ...] = (
    SYSTEM,
    USER,
    ASSISTANT_TEXT,
    THINKING,
    TOOL_CALLS,
    TOOL_RESULTS,
    SUMMARIES,
    IMAGES,
)
"""The kinds a context is split into, in display order. Sessions do not record the system
prompt and tool definitions: `system/tools` holds developer and harness-injected (custom)
messages, plus whatever the caller adds for the system prompt (`system_tokens`)."""

SUMMARY_CUSTOM_TYPES = frozenset({"handoff"})
"""Custom messages that carry a summary of earlier work rather than an instruction."""

# A part is (kind, text) for text the estimator reads, or (kind, extra) for a fixed amount
# (images, frames) in the estimator's own unit.
_Part = tuple[str, str | int]


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _content_kind(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "toolResult":
        return TOOL_RESULTS
    if role in ("custom", "hookMessage"):
        return SUMMARIES if message.get("customType") in SUMMARY_CUSTOM_TYPES else SYSTEM
    if role == "developer":
        return SYSTEM
    return USER


def _content_parts(content: Any, kind: str, image: int) -> Iterator[_Part]:
    if isinstance(content, str):
        yield kind, content
        return
    for block in _blocks(content):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            yield kind, block["text"]
        elif block.get("type") == "image" and image:
            yield IMAGES, image


def _assistant_parts(message: Mapping[str, Any], *, pi: bool) -> Iterator[_Part]:
    for block in _blocks(message.get("content")):
        kind = block.get("type")
        if kind == "text":
            yield ASSISTANT_TEXT, _str(block.get("text"))
        elif kind == "thinking":
            yield THINKING, _str(block.get("thinking"))
            if not pi and isinstance(block.get("thinkingSignature"), str):
                yield THINKING, block["thinkingSignature"]
        elif kind == "redactedThinking" and not pi:
            yield THINKING, _str(block.get("data"))
        elif kind == "toolCall":
            yield TOOL_CALLS, _str(block.get("name"))
            yield TOOL_CALLS, js_stringify(block.get("arguments", {}))


def _summary_parts(message: Mapping[str, Any], *, pi: bool) -> Iterator[_Part]:
    yield SUMMARIES, _str(message.get("summary"))
    if pi:
        return
    for block in _blocks(message.get("blocks")):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            yield SUMMARIES, block["text"]
        elif block.get("type") == "image":
            yield IMAGES, FRAME_TOKEN_ESTIMATE


def message_parts(message: Mapping[str, Any], *, pi: bool = False) -> Iterator[_Part]:
    """The parts the estimator counts in one runtime message, each with its kind.

    Args:
        message: A runtime message (as `build_session_context` returns them).
        pi: Follow pi's estimator (spec §3.1) instead of oh-my-pi's (spec §3.4).

    Yields:
        `(kind, text)` for counted text, `(kind, amount)` for a fixed extra (pi: UTF-16
        chars, otherwise tokens).
    """
    role = message.get("role")
    if role == "assistant":
        yield from _assistant_parts(message, pi=pi)
    elif role in ("branchSummary", "compactionSummary"):
        yield from _summary_parts(message, pi=pi)
    elif role in ("bashExecution", "pythonExecution"):
        # A command the user ran in the session and its output: tool output by nature.
        command = message.get("command") if pi else message.get("command") or message.get("code")
        yield TOOL_RESULTS, _str(command)
        yield TOOL_RESULTS, _str(message.get("output"))
    elif role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        if pi and role == "developer":
            return  # pi's estimator does not count developer messages
        if pi:
            image = 0 if role == "user" else PI_IMAGE_CHARS
        else:
            image = MUSEPI_IMAGE_TOKENS
        yield from _content_parts(message.get("content"), _content_kind(message), image)


def apportion(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Split `total` over the keys in proportion to `weights` (largest remainder).

    The parts always sum to `total`; all of it goes to the first key when every weight is 0.
    """
    if total <= 0 or not weights:
        return {key: 0 for key in weights}
    whole = sum(weights.values())
    if whole <= 0:
        first = next(iter(weights))
        return {key: total if key == first else 0 for key in weights}
    shares = {key: total * w // whole for key, w in weights.items()}
    left = total - sum(shares.values())
    by_remainder = sorted(
        weights, key=lambda k: (-(total * weights[k] % whole), list(weights).index(k))
    )
    for key in by_remainder[:left]:
        shares[key] += 1
    return shares


def message_composition(message: Mapping[str, Any], counter: TokenCounter) -> dict[str, int]:
    """Tokens of one message by kind; the values sum to `counter.count_message(message)`."""
    pi = counter.method == "pi"
    weights: dict[str, int] = {}
    for kind, part in message_parts(message, pi=pi):
        if isinstance(part, int):
            amount = part
        else:
            amount = utf16_len(part) if pi else counter.count_text(part) if part else 0
        weights[kind] = weights.get(kind, 0) + amount
    total = counter.count_message(message)
    if not pi and sum(weights.values()) == total:
        return weights
    return apportion(total, weights) if weights else {}


def context_composition_of(
    messages: Iterable[Mapping[str, Any]], counter: TokenCounter, *, system_tokens: int = 0
) -> dict[str, int]:
    """Tokens of a context by kind, every kind of `COMPOSITION_KINDS` present (0 if none).

    Args:
        messages: The context's runtime messages.
        counter: The token counter; the kinds sum to its `count_messages(messages)`
            plus `system_tokens`.
        system_tokens: Tokens of the system prompt and tool definitions, which sessions
            do not record (as `replay(system_tokens=...)`).
    """
    totals = {kind: 0 for kind in COMPOSITION_KINDS}
    totals[SYSTEM] += system_tokens
    for message in messages:
        for kind, tokens in message_composition(message, counter).items():
            totals[kind] += tokens
    return totals
