"""Gemini API `Part`s (as Gemini CLI stores them) → pi content blocks and tool results.

Gemini CLI keeps message content as a `PartListUnion` of `@google/genai`: a string, one
`Part`, or a list of strings and `Part`s. A `Part` holds one of `text` (with `thought: true`
for the model's thinking), `inlineData {mimeType, data}`, `fileData {mimeType, fileUri}`,
`functionCall {id, name, args}`, `functionResponse {id, name, response}`,
`executableCode` or `codeExecutionResult`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ._records import text_block, tool_call_block

API = "google-generative-ai"
PROVIDER = "google"


def part_list(content: Any) -> list[Any]:
    """A `PartListUnion` as a list (None → empty)."""
    if content is None:
        return []
    return list(content) if isinstance(content, list) else [content]


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def part_block(part: Any) -> tuple[dict[str, Any] | None, str | None]:
    """`(block, unknown)`: the pi block of one non-call part, or the name of what it is
    when no block shape fits (the part is then kept as its JSON text)."""
    if isinstance(part, str):
        return (text_block(part) if part else None), None
    if not isinstance(part, Mapping):
        return text_block(_json_text(part)), type(part).__name__
    if isinstance(part.get("text"), str):
        if part.get("thought") is True:
            return {"type": "thinking", "thinking": part["text"]}, None
        return (text_block(part["text"]) if part["text"] else None), None
    inline = part.get("inlineData")
    if isinstance(inline, Mapping):
        mime = str(inline.get("mimeType", ""))
        if mime.startswith("image/") and isinstance(inline.get("data"), str):
            return {"type": "image", "data": inline["data"], "mimeType": mime}, None
        return text_block(f"[inline data {mime}]"), None
    file_data = part.get("fileData")
    if isinstance(file_data, Mapping):
        return text_block(
            f"[file {file_data.get('mimeType', '')} {file_data.get('fileUri', '')}]"
        ), None
    if "executableCode" in part or "codeExecutionResult" in part:
        return text_block(_json_text(dict(part))), None
    if part.get("thought") is True:  # a thought signature without text
        return None, None
    keys = ",".join(sorted(str(k) for k in part)) or "empty"
    return text_block(_json_text(dict(part))), keys


def response_text(response: Any) -> str:
    """The text of a `functionResponse.response`: its `output` (or `error`), else JSON."""
    if isinstance(response, Mapping):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    if isinstance(response, str):
        return response
    return _json_text(response)


def result_blocks(result: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Blocks of a tool call's recorded `result` (function responses and sibling parts),
    and the names of parts no block shape fits."""
    blocks: list[dict[str, Any]] = []
    unknown: list[str] = []
    for part in part_list(result):
        if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping):
            fr = part["functionResponse"]
            blocks.append(text_block(response_text(fr.get("response"))))
            for extra in part_list(fr.get("parts")):
                block, what = part_block(extra)
                if block is not None:
                    blocks.append(block)
                if what is not None:
                    unknown.append(what)
            continue
        block, what = part_block(part)
        if block is not None:
            blocks.append(block)
        if what is not None:
            unknown.append(what)
    return blocks, unknown


def function_call_block(part: Mapping[str, Any], fallback_id: str) -> dict[str, Any]:
    """The toolCall block of a `functionCall` part (its id, else `fallback_id`)."""
    call = part["functionCall"]
    call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else fallback_id
    return tool_call_block(str(call_id), str(call.get("name", "")), call.get("args") or {})
