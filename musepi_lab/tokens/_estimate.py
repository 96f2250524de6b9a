"""Heuristic token estimates of pi (UTF-16 chars/4) and MusePi/oh-my-pi (UTF-8 bytes/4).

Spec §3.1 (pi `estimateTokens`) and §3.4 (omp `tokenizer.ts` fallback). Both work on one
message (a mapping as stored in a `message` entry, or a runtime summary message).
"""

from __future__ import annotations

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
    kind = type(value)
    if kind is float:
        return True
    if kind is dict or (kind is not str and isinstance(value, Mapping)):
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return isinstance(value, float)
    for item in items:
        # Strings, ints, booleans and nulls (nearly every argument) skip the call.
        item_kind = type(item)
        if item_kind is str or item_kind is int or item_kind is bool or item is None:
            continue
        if _has_float(item):
            return True
    return False


def _orjson_js(value: Any) -> bytes | None:
    """`value` as JavaScript's `JSON.stringify` prints it, through orjson; None when orjson
    cannot (non-JSON types, integers beyond 64 bits)."""
    try:
        data = orjson.dumps(_js_numbers(value) if _has_float(value) else value)
    except TypeError:
        return None
    return data


def _json_js(value: Any) -> str:
    import json

    return json.dumps(_js_numbers(value), separators=(",", ":"), ensure_ascii=False, default=str)


def js_stringify(value: Any) -> str:
    """Compact JSON as JavaScript's `JSON.stringify` (no spaces, key order kept, integral
    floats without a fraction)."""
    data = _orjson_js(value)
    return data.decode() if data is not None else _json_js(value)


def js_stringify_bytes(value: Any) -> bytes:
    """`js_stringify` as UTF-8 bytes (what the byte-counting estimator measures)."""
    data = _orjson_js(value)
    return data if data is not None else _json_js(value).encode("utf-8", "surrogatepass")


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if type(content) is list:
        return [b for b in content if type(b) is dict or isinstance(b, Mapping)]
    return []


def _utf16(value: Any) -> int:
    """`utf16_len` of a string, 0 for anything else."""
    if type(value) is not str:
        return 0
    if value.isascii():
        return len(value)
    return len(value.encode("utf-16-le", "surrogatepass")) >> 1


def _text_or_blocks_chars(content: Any, image_chars: int) -> int:
    if type(content) is str:
        return _utf16(content)
    chars = 0
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            chars += _utf16(block.get("text"))
        elif kind == "image":
            chars += image_chars
    return chars


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _arguments_utf16(arguments: Any) -> int:
    data = js_stringify_bytes(arguments)
    if data.isascii():
        return len(data)
    return _utf16(data.decode("utf-8", "surrogatepass"))


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
                chars += _utf16(block.get("text"))
            elif kind == "thinking":
                chars += _utf16(block.get("thinking"))
            elif kind == "toolCall":
                chars += _utf16(block.get("name")) + _arguments_utf16(block.get("arguments", {}))
        return chars
    if role in ("custom", "toolResult", "hookMessage"):
        return _text_or_blocks_chars(message.get("content"), PI_IMAGE_CHARS)
    if role == "bashExecution":
        return _utf16(message.get("command")) + _utf16(message.get("output"))
    if role in ("branchSummary", "compactionSummary"):
        return _utf16(message.get("summary"))
    return 0


def estimate_tokens_pi(message: Mapping[str, Any]) -> int:
    """pi's `estimateTokens`: `ceil(chars / 4)` with UTF-16 chars; images count 0 for
    user messages and 4800 chars in custom and tool-result messages."""
    return -(-pi_chars(message) // 4)


def _fragments(message: Mapping[str, Any], exclude_encrypted_reasoning: bool) -> Iterator[Any]:
    """The fragments of `text_fragments`, tool-call arguments left as UTF-8 bytes (the
    byte-counting estimator measures them without decoding)."""
    role = message.get("role")
    if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        content = message.get("content")
        if type(content) is str:
            yield content
            return
        for block in _blocks(content):
            if block.get("type") == "text":
                text = block.get("text")
                if type(text) is str:
                    yield text
    elif role == "assistant":
        for block in _blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                yield _str(block.get("text"))
            elif kind == "thinking":
                yield _str(block.get("thinking"))
                signature = block.get("thinkingSignature")
                if not exclude_encrypted_reasoning and type(signature) is str:
                    yield signature
            elif kind == "redactedThinking":
                yield _str(block.get("data"))
            elif kind == "toolCall":
                yield _str(block.get("name"))
                yield js_stringify_bytes(block.get("arguments", {}))
    elif role in ("bashExecution", "pythonExecution"):
        yield _str(message.get("command") or message.get("code"))
        yield _str(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        yield _str(message.get("summary"))
        # Snapcompact blocks: the text head/tail count as text, frames in `extra_tokens`.
        for block in _blocks(message.get("blocks")):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield block["text"]


def text_fragments(
    message: Mapping[str, Any], *, exclude_encrypted_reasoning: bool = False
) -> Iterator[str]:
    """The text fragments oh-my-pi's tokenizer counts for one message (spec §3.4).

    Image blocks and snapcompact frames are not fragments; see `extra_tokens`.
    """
    for fragment in _fragments(message, exclude_encrypted_reasoning):
        yield fragment.decode() if type(fragment) is bytes else fragment


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


def _units(text: str) -> int:
    """oh-my-pi's per-fragment estimate: `(utf8_bytes + 3) >> 2`."""
    return (len(text) + 3) >> 2 if text.isascii() else (utf8_len(text) + 3) >> 2


_CONTENT_ROLES = frozenset({"user", "developer", "custom", "hookMessage", "toolResult"})


def estimate_tokens_musepi(
    message: Mapping[str, Any], *, exclude_encrypted_reasoning: bool = False
) -> int:
    """oh-my-pi's fallback estimate: Σ `(utf8_bytes(fragment) + 3) >> 2` per fragment,
    plus 1200 per image and 5024 per snapcompact frame (spec §3.4).

    One pass over the message: the fragments of `text_fragments` and the extras of
    `extra_tokens`, summed as they are met (tests hold the two definitions equal).
    """
    role = message.get("role")
    total = 0
    if role in _CONTENT_ROLES:
        content = message.get("content")
        if type(content) is str:
            return _units(content)
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is str:
                    total += _units(text)
            elif kind == "image":
                total += MUSEPI_IMAGE_TOKENS
        return total
    if role == "assistant":
        for block in _blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                total += _units(_str(block.get("text")))
            elif kind == "thinking":
                total += _units(_str(block.get("thinking")))
                signature = block.get("thinkingSignature")
                if not exclude_encrypted_reasoning and type(signature) is str:
                    total += _units(signature)
            elif kind == "redactedThinking":
                total += _units(_str(block.get("data")))
            elif kind == "toolCall":
                arguments = js_stringify_bytes(block.get("arguments", {}))
                total += _units(_str(block.get("name"))) + ((len(arguments) + 3) >> 2)
        return total
    if role in ("bashExecution", "pythonExecution"):
        command = _str(message.get("command") or message.get("code"))
        return _units(command) + _units(_str(message.get("output")))
    if role in ("branchSummary", "compactionSummary"):
        total = _units(_str(message.get("summary")))
        for block in _blocks(message.get("blocks")):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                total += _units(block["text"])
            elif kind == "image":
                total += FRAME_TOKEN_ESTIMATE
        return total
    return 0
