"""pi LLM messages → provider wire formats: Chat Completions messages and Responses input items.

The handoff strategy replays the live history as Chat Completions `messages` (spec §6.4) and
the remote strategy sends it to the Responses compact endpoint as input items (spec §5.7).
Both take messages after `convert_to_llm` (and preferably `provider_messages`) and return
plain JSON-ready dicts.

Providers reject a history whose tool calls and results do not pair up, so both converters
repair it the way pi's provider layer does (spec §2.2): a call left without a result gets a
made-up error result ("No result provided") right after the results that did arrive, and a
result with no open call becomes a user text. Thinking blocks are not replayed: without the
provider's signatures they are not valid input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..context._templates import SYNTHETIC_TOOL_RESULT_TEXT
from ..tokens._estimate import js_stringify

IMAGE_PLACEHOLDER = "[image omitted]"
"""Stands in for an image when images are not sent (text-only endpoints reject them)."""
ORPHAN_RESULT_PREFIX = "[Tool result]: "
"""Prefix of the user text an unpaired tool result becomes."""


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping)]


def _texts(message: Mapping[str, Any], *, images: bool) -> list[str]:
    """The texts of a message, with a placeholder where an image is not sent."""
    out: list[str] = []
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif kind == "image" and not images:
            out.append(IMAGE_PLACEHOLDER)
    return out


def _data_url(block: Mapping[str, Any]) -> str:
    return f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"


def _calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [b for b in _blocks(message) if b.get("type") == "toolCall" and b.get("id")]


def _assistant_text(message: Mapping[str, Any]) -> str:
    return "\n".join(str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text")


def _arguments_json(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    return js_stringify(args if isinstance(args, Mapping) else {})


# -- pairing -------------------------------------------------------------------------------
# A unit is what one LLM message becomes: `(kind, items, call_ids)`. `kind` is `call` for an
# assistant turn opening `call_ids`, `result` for a tool result answering `call_ids[0]`, and
# `other` for anything else.
Unit = tuple[str, list[dict[str, Any]], tuple[str, ...]]


def _paired(
    units: Iterable[Unit],
    *,
    synthetic: Callable[[str], dict[str, Any]],
    orphan: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Flatten units, repairing call/result pairing (see the module docstring)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for kind, items, ids in units:
        if kind == "result":
            if ids and ids[0] in pending:
                pending.remove(ids[0])
                out.extend(items)
            else:
                out.extend(orphan(item) for item in items)
            continue
        out.extend(synthetic(call_id) for call_id in pending)
        pending = list(ids) if kind == "call" else []
        out.extend(items)
    out.extend(synthetic(call_id) for call_id in pending)
    return out


# -- Chat Completions ------------------------------------------------------------------------
def _chat_content(message: Mapping[str, Any], *, images: bool) -> str | list[dict[str, Any]]:
    blocks = _blocks(message)
    has_image = images and any(b.get("type") == "image" for b in blocks)
    if not has_image:
        return "\n".join(_texts(message, images=False))
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": _data_url(block)}})
    return parts


def _chat_unit(message: Mapping[str, Any], *, images: bool, developer_role: str) -> Unit | None:
    role = message.get("role")
    if role in ("user", "developer"):
        content = _chat_content(message, images=images)
        if not content:
            return None
        chat_role = "user" if role == "user" else developer_role
        return "other", [{"role": chat_role, "content": content}], ()
    if role == "assistant":
        text = _assistant_text(message)
        calls = _calls(message)
        if not text and not calls:
            return None  # thinking only: nothing a provider can take back
        item: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            item["tool_calls"] = [
                {
                    "id": str(b["id"]),
                    "type": "function",
                    "function": {"name": str(b.get("name", "")), "arguments": _arguments_json(b)},
                }
                for b in calls
            ]
        return ("call" if calls else "other"), [item], tuple(str(b["id"]) for b in calls)
    if role == "toolResult":
        call_id = str(message.get("toolCallId", ""))
        text = "\n".join(_texts(message, images=False))
        item = {"role": "tool", "tool_call_id": call_id, "content": text or "(no output)"}
        return "result", [item], (call_id,)
    return None


def to_chat_messages(
    llm_messages: Iterable[Mapping[str, Any]],
    *,
    images: bool = False,
    developer_role: str = "user",
) -> list[dict[str, Any]]:
    """LLM messages as Chat Completions `messages` (without a system message).

    user → `user` (a string, or text and `image_url` parts when `images`); developer
    (MusePi custom messages) → `developer_role`; assistant → `assistant` with its texts
    joined by newlines and `tool_calls` (arguments as compact JSON), thinking dropped;
    toolResult → `tool`. Pairing is repaired (see the module docstring).

    Args:
        llm_messages: Output of `convert_to_llm` / `provider_messages`.
        images: Send images as data URLs; otherwise each becomes `[image omitted]`.
        developer_role: Role for developer messages. `user` by default because many
            OpenAI-compatible servers (llama.cpp, vLLM chat templates) reject `developer`,
            and a `system` message anywhere but first.
    """
    units = [
        unit
        for m in llm_messages
        if isinstance(m, Mapping)
        for unit in [_chat_unit(m, images=images, developer_role=developer_role)]
        if unit is not None
    ]
    return _paired(
        units,
        synthetic=lambda call_id: {
            "role": "tool",
            "tool_call_id": call_id,
            "content": SYNTHETIC_TOOL_RESULT_TEXT,
        },
        orphan=lambda item: {
            "role": "user",
            "content": ORPHAN_RESULT_PREFIX + str(item.get("content", "")),
        },
    )


# -- Responses input items -----------------------------------------------------------------
def _input_parts(message: Mapping[str, Any], *, images: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "input_text", "text": block["text"]})
        elif kind == "image":
            if images:
                parts.append({"type": "input_image", "image_url": _data_url(block)})
            else:
                parts.append({"type": "input_text", "text": IMAGE_PLACEHOLDER})
    return parts


def _responses_unit(message: Mapping[str, Any], *, images: bool) -> Unit | None:
    payload = message.get("providerPayload")
    if isinstance(payload, Mapping) and isinstance(payload.get("items"), list):
        # A previous remote compaction: its replacement history is the input, as is.
        return "other", [dict(i) for i in payload["items"] if isinstance(i, Mapping)], ()
    role = message.get("role")
    if role in ("user", "developer"):
        parts = _input_parts(message, images=images)
        return ("other", [{"role": role, "content": parts}], ()) if parts else None
    if role == "assistant":
        items: list[dict[str, Any]] = []
        text = _assistant_text(message)
        if text:
            items.append({"role": "assistant", "content": text})
        calls = _calls(message)
        items.extend(
            {
                "type": "function_call",
                "call_id": str(b["id"]),
                "name": str(b.get("name", "")),
                "arguments": _arguments_json(b),
            }
            for b in calls
        )
        if not items:
            return None
        return ("call" if calls else "other"), items, tuple(str(b["id"]) for b in calls)
    if role == "toolResult":
        call_id = str(message.get("toolCallId", ""))
        text = "\n".join(_texts(message, images=False))
        item = {"type": "function_call_output", "call_id": call_id, "output": text or "(no output)"}
        return "result", [item], (call_id,)
    return None


def to_responses_input(
    llm_messages: Iterable[Mapping[str, Any]], *, images: bool = False
) -> list[dict[str, Any]]:
    """LLM messages as OpenAI Responses `input` items.

    user/developer → a message with `input_text` (and `input_image` when `images`) parts;
    assistant → an assistant message with its text, then one `function_call` item per
    tool call; toolResult → `function_call_output`. A compaction summary that carries a
    previous remote compaction's `providerPayload` is replaced by that payload's items.
    Pairing is repaired (see the module docstring).

    Args:
        llm_messages: Output of `convert_to_llm` / `provider_messages`.
        images: Send images as data URLs; otherwise each becomes `[image omitted]`.
    """
    units = [
        unit
        for m in llm_messages
        if isinstance(m, Mapping)
        for unit in [_responses_unit(m, images=images)]
        if unit is not None
    ]
    return _paired(
        units,
        synthetic=lambda call_id: {
            "type": "function_call_output",
            "call_id": call_id,
            "output": SYNTHETIC_TOOL_RESULT_TEXT,
        },
        orphan=lambda item: {
            "role": "user",
            "content": [
                {"type": "input_text", "text": ORPHAN_RESULT_PREFIX + str(item.get("output", ""))}
            ],
        },
    )
