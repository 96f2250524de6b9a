"""Heuristic token estimates of pi (UTF-16 chars/4) and MusePi/oh-my-pi (UTF-8 bytes/4).

Spec §3.1 (pi `estimateTokens`) and §3.4 (omp `tokenizer.ts` fallback). Both work on one
message (a mapping as stored in a `message` entry, or a runtime summary message).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

PI_IMAGE_CHARS = 4800
"""pi counts an image block in custom/toolResult messages as 4800 chars (1200 tokens)."""
MUSEPI_IMAGE_TOKENS = 1200
"""oh-my-pi adds 1200 tokens per image block."""
FRAME_TOKEN_ESTIMATE = 5024
"""oh-my-pi's estimate per snapcompact frame attached to a summary message."""


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's `String.length`."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def utf8_len(text: str) -> int:
    """Length in UTF-8 bytes."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", errors="surrogatepass"))


def _js_numbers(value: Any) -> Any:
    """Integral floats become ints, as JavaScript prints them (`1.0` → `1`)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, Mapping):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_numbers(v) for v in value]
    return value


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, Mapping):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return False


def js_stringify(value: Any) -> str:
    """Compact JSON as JavaScript's `JSON.stringify` (no spaces, key order kept, integral
    floats without a fraction)."""
    if _has_float(value):
        value = _js_numbers(value)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _text_or_blocks_chars(content: Any, image_chars: int) -> int:
    if isinstance(content, str):
        return utf16_len(content)
    chars = 0
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                chars += utf16_len(text)
        elif kind == "image":
            chars += image_chars
    return chars


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def pi_chars(message: Mapping[str, Any]) -> int:
    """The UTF-16 char count pi's `estimateTokens` divides by four (spec §3.1)."""
    role = message.get("role")
    if role == "user":
        return _text_or_blocks_chars(message.get("content"), 0)
    if role == "assistant":
        chars = 0
        for block in _blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                chars += utf16_len(_str(block.get("text")))
            elif kind == "thinking":
                chars += utf16_len(_str(block.get("thinking")))
            elif kind == "toolCall":
                chars += utf16_len(_str(block.get("name")))
                chars += utf16_len(js_stringify(block.get("arguments", {})))
        return chars
    if role in ("custom", "toolResult", "hookMessage"):
        return _text_or_blocks_chars(message.get("content"), PI_IMAGE_CHARS)
    if role == "bashExecution":
        return utf16_len(_str(message.get("command"))) + utf16_len(_str(message.get("output")))
    if role in ("branchSummary", "compactionSummary"):
        return utf16_len(_str(message.get("summary")))
    return 0


def estimate_tokens_pi(message: Mapping[str, Any]) -> int:
    """pi's `estimateTokens`: `ceil(chars / 4)` with UTF-16 chars; images count 0 for
    user messages and 4800 chars in custom and tool-result messages."""
    return math.ceil(pi_chars(message) / 4)


def text_fragments(
    message: Mapping[str, Any], *, exclude_encrypted_reasoning: bool = False
) -> Iterator[str]:
    """The text fragments oh-my-pi's tokenizer counts for one message (spec §3.4).

    Image blocks and snapcompact frames are not fragments; see `extra_tokens`.
    """
    role = message.get("role")
    if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        content = message.get("content")
        if isinstance(content, str):
            yield content
            return
        for block in _blocks(content):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield block["text"]
    elif role == "assistant":
        for block in _blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                yield _str(block.get("text"))
            elif kind == "thinking":
                yield _str(block.get("thinking"))
                if not exclude_encrypted_reasoning and isinstance(
                    block.get("thinkingSignature"), str
                ):
                    yield block["thinkingSignature"]
            elif kind == "redactedThinking":
                yield _str(block.get("data"))
            elif kind == "toolCall":
                yield _str(block.get("name"))
                yield js_stringify(block.get("arguments", {}))
    elif role in ("bashExecution", "pythonExecution"):
        yield _str(message.get("command") or message.get("code"))
        yield _str(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        yield _str(message.get("summary"))
        # Snapcompact blocks: the text head/tail count as text, frames in `extra_tokens`.
        for block in _blocks(message.get("blocks")):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield block["text"]


def extra_tokens(message: Mapping[str, Any]) -> int:
    """Tokens oh-my-pi adds beyond text: 1200 per image, 5024 per snapcompact frame."""
    role = message.get("role")
    if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        return MUSEPI_IMAGE_TOKENS * sum(
            1 for b in _blocks(message.get("content")) if b.get("type") == "image"
        )
    if role in ("branchSummary", "compactionSummary"):
        frames = sum(1 for b in _blocks(message.get("blocks")) if b.get("type") == "image")
        return FRAME_TOKEN_ESTIMATE * frames
    return 0


def estimate_tokens_musepi(
    message: Mapping[str, Any], *, exclude_encrypted_reasoning: bool = False
) -> int:
    """oh-my-pi's fallback estimate: Σ `(utf8_bytes(fragment) + 3) >> 2` per fragment,
    plus 1200 per image and 5024 per snapcompact frame (spec §3.4)."""
    total = 0
    for fragment in text_fragments(
        message, exclude_encrypted_reasoning=exclude_encrypted_reasoning
    ):
        total += (utf8_len(fragment) + 3) >> 2
    return total + extra_tokens(message)
