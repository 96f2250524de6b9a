"""Codex rollout items, one value at a time: the pure conversion helpers `_codex` uses.

Content and output blocks, error detection in tool outputs, reasoning text, call arguments,
usage and its assignment to model responses, leftover fields and entry ids. Nothing here
reads a file or keeps state across lines (`LineIds` only remembers the ids it handed out).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from hashlib import blake2b
from pathlib import Path
from typing import Any, TypeVar

import orjson

from ._detect import is_legacy_codex_header
from ._records import text_block, tool_call_block, usage

_T = TypeVar("_T")

# How Codex itself recognizes the user messages it injects (codex-rs `is_session_prefix`,
# `UserInstructions::is_user_instructions`), compared case-insensitively on the text start.
_CONTEXT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# agents.md instructions for", "user_instructions"),
    ("<turn_aborted>", "turn_aborted"),
    ("<skill>", "skill_instructions"),
    ("<subagent_notification>", "subagent_notification"),
)

# Sanitized corpora replace every text, even an empty one, by a marker; `len=0` means the
# original was empty (the sha is that of the empty string).
_EMPTY_REDACTION = re.compile(r"\[REDACTED_[A-Z_]+ len=0(?: sha=[0-9a-f]+)?\]")
# Exit status lines Codex puts in the head of a shell output (freeform and unified exec).
_EXIT_LINE = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)\s*$", re.MULTILINE)
_EXIT_HEAD_LINES = 4
_DATA_URL = re.compile(r"data:([^;,]*)(;base64)?,(.*)", re.DOTALL)

_JSON_SPACE = " \t\n\r"
# What any JSON text starts with (after whitespace), and what follows `[` or `{`.
_JSON_STARTS = frozenset('{["-0123456789tfn')
_JSON_ARRAY_NEXT = _JSON_STARTS | {"]"}
_JSON_OBJECT_NEXT = frozenset('"}')
_ROLLOUT_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# -- pure helpers ---------------------------------------------------------------------------
def is_empty_text(text: Any) -> bool:
    """True for a missing, blank, or redacted-empty (`[REDACTED_… len=0 …]`) text."""
    if not isinstance(text, str):
        return True
    stripped = text.strip()
    return not stripped or _EMPTY_REDACTION.fullmatch(stripped) is not None


def context_kind(text: str) -> str | None:
    """The kind of a Codex-injected user message (`environment_context`, ...), else None."""
    head = text.lstrip()[:64].lower()
    for prefix, kind in _CONTEXT_PREFIXES:
        if head.startswith(prefix):
            return kind
    return None


def image_block(url: Any) -> dict[str, Any]:
    """A pi image block from a Responses `image_url`.

    A base64 data URL gives the bytes; any other URL (or a redaction marker) gives an image
    block without data, with the URL in `sourceUrl`, so images still count as images.
    """
    text = url if isinstance(url, str) else ""
    match = _DATA_URL.fullmatch(text)
    if match and match.group(2):
        return {"type": "image", "data": match.group(3), "mimeType": match.group(1) or ""}
    return {"type": "image", "data": "", "mimeType": "", "sourceUrl": text}


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """pi content blocks from Responses content items (`input_text`, `output_text`, ...).

    Unknown item types are kept as they are (estimators ignore blocks they do not know).
    """
    if isinstance(content, str):
        return [text_block(content)]
    if not isinstance(content, list):
        return []
    blocks: list[dict[str, Any]] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("input_text", "output_text", "text"):
            text = item.get("text")
            blocks.append({"type": "text", "text": text if isinstance(text, str) else ""})
        elif kind == "refusal":
            refusal = item.get("refusal")
            blocks.append(text_block(refusal if isinstance(refusal, str) else ""))
        elif kind == "input_image":
            blocks.append(image_block(item.get("image_url")))
        else:
            blocks.append(dict(item))
    return blocks


def output_blocks(output: Any) -> list[dict[str, Any]]:
    """The toolResult content of a Codex tool output (a string, content items, or an object)."""
    if isinstance(output, (str, list)):
        return content_blocks(output)
    if isinstance(output, dict):
        if "content" in output:
            return output_blocks(output["content"])
        return [text_block(orjson.dumps(dict(output)).decode())]
    if output is None:
        return []
    return [text_block(str(output))]


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_is_error(text: str) -> bool:
    """Whether a tool output text reports failure.

    Recognized: a JSON object with `success: false` or a non-zero `metadata.exit_code`
    (shell outputs of Codex 0.58), and an `Exit code: N` / `Process exited with code N`
    line among the first lines (later Codex shell formats). Anything else is a success.
    """
    stripped = text.lstrip()
    if stripped.startswith("{") and may_be_json(stripped):
        try:
            obj = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            if obj.get("success") is False:
                return True
            meta = obj.get("metadata")
            code = int_or_none(meta.get("exit_code")) if isinstance(meta, dict) else None
            return code is not None and code != 0
    # The head by position: splitting would copy the whole (often huge) output once more.
    end = -1
    for _ in range(_EXIT_HEAD_LINES):
        end = stripped.find("\n", end + 1)
        if end < 0:
            break
    head = stripped if end < 0 else stripped[:end]
    if "code" not in head:  # both exit-line forms say "code"; most outputs have neither
        return False
    match = _EXIT_LINE.search(head)
    return match is not None and int(match.group(1)) != 0


def output_is_error(output: Any) -> bool:
    """Whether a Codex tool output (any of its serializations) reports failure."""
    if isinstance(output, dict):
        if output.get("success") is False:
            return True
        return output_is_error(output.get("content"))
    if isinstance(output, str):
        return text_is_error(output)
    return False


def _part_texts(parts: Any) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def reasoning_text(payload: Mapping[str, Any]) -> tuple[str, bool]:
    """The text of a reasoning item, and whether it is a (non-empty) summary.

    The text is the summary's, or the raw content's when the item has no summary parts.
    """
    summary = _part_texts(payload.get("summary"))
    if summary:
        text = "\n\n".join(summary)
        return text, bool(text)
    content = _part_texts(payload.get("content"))
    return ("\n\n".join(content) if content else ""), False


def may_be_json(text: str) -> bool:
    """False when the start of `text` already rules out JSON (a cheap test before parsing).

    Looks at the first character and, for an array or object, the next one: the texts that
    fail here (`[REDACTED_… len=…]` markers, plain words) would cost a raised exception each.
    """
    body = text.lstrip(_JSON_SPACE)
    first = body[:1]
    if first not in _JSON_STARTS:
        return False
    if first == "[":
        return body[1:].lstrip(_JSON_SPACE)[:1] in _JSON_ARRAY_NEXT
    if first == "{":
        return body[1:].lstrip(_JSON_SPACE)[:1] in _JSON_OBJECT_NEXT
    return True


def parse_arguments(arguments: Any) -> Any:
    """Function-call arguments: the JSON string decoded when it is JSON, else kept as is."""
    if isinstance(arguments, str):
        if not may_be_json(arguments):
            return arguments
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}


def tool_call_of(payload: Mapping[str, Any], line: int) -> dict[str, Any]:
    """The pi toolCall block of a Codex tool-call response item."""
    kind = payload.get("type")
    call_id = call_id_of(payload) or f"line:{line}"
    if kind == "custom_tool_call":
        return tool_call_block(
            call_id, str(payload.get("name") or ""), {"input": payload.get("input")}
        )
    if kind == "local_shell_call":
        action = payload.get("action")
        return tool_call_block(call_id, "local_shell", action if isinstance(action, dict) else {})
    if kind == "web_search_call":
        action = payload.get("action")
        return tool_call_block(call_id, "web_search", action if isinstance(action, dict) else {})
    arguments = parse_arguments(payload.get("arguments"))
    # tool_call_block's shape, built here: this is the common case, once per call.
    return {
        "type": "toolCall",
        "id": call_id,
        "name": str(payload.get("name") or ""),
        "arguments": dict(arguments) if isinstance(arguments, dict) else {"input": arguments},
    }


def call_id_of(payload: Mapping[str, Any]) -> str | None:
    """The id that pairs a Codex tool call with its output (`call_id`, else the item `id`)."""
    for key in ("call_id", "id"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def usage_of(last: Mapping[str, Any]) -> dict[str, Any]:
    """pi usage from a Codex `last_token_usage` (OpenAI counts cached input inside input)."""
    inp = int_or_none(last.get("input_tokens")) or 0
    cached = int_or_none(last.get("cached_input_tokens")) or 0
    out = int_or_none(last.get("output_tokens")) or 0
    return usage(
        input=max(inp - cached, 0),
        output=out,
        cache_read=cached,
        total=int_or_none(last.get("total_tokens")),
    )


def leftover_fields(payload: Mapping[str, Any], consumed: Sequence[str]) -> dict[str, Any]:
    """Payload fields not mapped into the pi shape (nulls dropped)."""
    return {k: v for k, v in payload.items() if k not in consumed and v is not None}


EVENT_MARK, USER_ITEM_MARK, RESPONSE_ITEM_MARK = "E", "U", "R"


def user_event_neighbours(marks: Sequence[tuple[str, int]]) -> set[int] | None:
    """Lines of user response messages next to an `event_msg` `user_message`, or None.

    Codex logs a `user_message` event for what the person typed, beside its response item;
    the messages Codex injects have none. Only response items and those events count as
    neighbours. None when the file has no such events (older rollouts): nothing to judge by.

    Args:
        marks: `(mark, line)` in file order for every response item (`USER_ITEM_MARK` for a
            user message, else `RESPONSE_ITEM_MARK`) and `user_message` event (`EVENT_MARK`).
    """
    if not any(mark == EVENT_MARK for mark, _ in marks):
        return None
    near: set[int] = set()
    last = len(marks) - 1
    for i, (mark, line) in enumerate(marks):
        if mark != USER_ITEM_MARK:
            continue
        if (i > 0 and marks[i - 1][0] == EVENT_MARK) or (
            i < last and marks[i + 1][0] == EVENT_MARK
        ):
            near.add(line)
    return near


def unpaired_prompt_events(marks: Sequence[tuple[str, int]]) -> set[int]:
    """Lines of `user_message` events with no user response message beside them: the
    prompts Codex recorded only as an event (the same neighbour rule as
    `user_event_neighbours`, seen from the event)."""
    lone: set[int] = set()
    last = len(marks) - 1
    for i, (mark, line) in enumerate(marks):
        if mark != EVENT_MARK:
            continue
        before = i > 0 and marks[i - 1][0] == USER_ITEM_MARK
        after = i < last and marks[i + 1][0] == USER_ITEM_MARK
        if not (before or after):
            lone.add(line)
    return lone


def prompt_message(payload: Mapping[str, Any], timestamp_ms: int) -> dict[str, Any]:
    """The pi user message of a `user_message` event: its text, then its images."""
    text = payload.get("message")
    blocks = [text_block(text if isinstance(text, str) else "")]
    images = payload.get("images")
    for url in images if isinstance(images, list) else ():
        blocks.append(image_block(url))
    return {"role": "user", "content": blocks, "timestamp": timestamp_ms}


def request_usage(usage_: Mapping[str, Any], provider: str, model: str) -> dict[str, Any]:
    """What a usage report needs of a request that left no reply: its pi usage and model."""
    return {"usage": dict(usage_), "provider": provider, "model": model}


LEGACY_STATE = "legacy:state"
"""The rollout type given to a legacy rollout's `{"record_type": …}` lines (kept as custom)."""


def modern_values(values: Sequence[tuple[int, Any]]) -> tuple[list[tuple[int, Any]], bool]:
    """The parsed lines of a legacy rollout (first line `{"id", "timestamp", …}` with no
    `type`: Codex before `session_meta`) in today's shape, and whether it was one.

    The first line becomes a `session_meta`, `{"record_type": …}` lines `LEGACY_STATE`
    records, and each bare response item (`{"type": "message", …}`, no `payload`) a
    `response_item` with the item's own `timestamp` when it has one. Other files come back
    as they are.
    """
    if not values or not is_legacy_codex_header(values[0][1]):
        return list(values), False
    first_line, header = values[0]
    out: list[tuple[int, Any]] = [
        (first_line, {"timestamp": header["timestamp"], "type": "session_meta", "payload": header})
    ]
    for line, value in values[1:]:
        if isinstance(value, dict) and "payload" not in value:
            ts = value.get("timestamp") if isinstance(value.get("timestamp"), str) else None
            if "record_type" in value and "type" not in value:
                value = {"timestamp": ts, "type": LEGACY_STATE, "payload": value}
            elif isinstance(value.get("type"), str):
                value = {"timestamp": ts, "type": "response_item", "payload": value}
        out.append((line, value))
    return out, True


def rollout_session_id(path: str) -> str:
    """The session uuid at the end of a rollout file name, else the file stem."""
    stem = Path(path).stem
    match = _ROLLOUT_UUID.search(stem)
    return match.group(0) if match else stem


ASSISTANT_ITEM, OTHER_ITEM, NOT_AN_ITEM = "A", "O", "-"


def assign_usage(marks: Sequence[str], requests: Sequence[tuple[int, _T]]) -> dict[int, _T]:
    """Which reply receives each model request's usage.

    A reply is one assistant row (the output items of one response, merged by the reader).
    Codex 0.66 and later write a request's token_count after the response's items, Codex
    0.58 and earlier before them, so a request goes to the reply that is the last item
    before it when that reply has no usage yet, else to the reply that is the first item
    after it, else nowhere.

    Args:
        marks: Per row, `ASSISTANT_ITEM`, `OTHER_ITEM` or `NOT_AN_ITEM` (events, settings).
        requests: `(row, usage)` per model request, `row` being its token_count's row.

    Returns:
        Row of the receiving reply → usage.
    """
    items = [row for row, mark in enumerate(marks) if mark != NOT_AN_ITEM]
    assigned: dict[int, _T] = {}
    for row, usage_ in requests:
        split = bisect.bisect_left(items, row)
        neighbours = (
            items[split - 1] if split > 0 else None,
            items[split] if split < len(items) else None,
        )
        for item in neighbours:
            if item is not None and marks[item] == ASSISTANT_ITEM and item not in assigned:
                assigned[item] = usage_
                break
    return assigned


class LineIds:
    """Entry ids for rollout lines, the same as `IdAllocator(seed).take(None, line)`.

    Rollout items have no id of their own that is unique per line, so every entry gets a
    stable hash of the session id and its line. The hash prefix is encoded once: this runs
    once per line, and the generic allocator's joining and encoding was a fifth of the
    importer's time.
    """

    __slots__ = ("_prefix", "_taken")

    def __init__(self, seed: str) -> None:
        prefix = f"{seed}\x1fNone\x1f".encode("utf-8", errors="surrogatepass")
        self._prefix = blake2b(prefix, digest_size=4)
        self._taken: set[str] = set()

    def take(self, line: int) -> str:
        """A fresh id for the entry of `line` (salted further on the rare collision)."""
        n = 0
        while True:
            digest = self._prefix.copy()
            digest.update(b"%d\x1f%d" % (line, n))
            candidate = digest.hexdigest()
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
            n += 1


def zero_usage() -> dict[str, Any]:
    # The same object `usage()` builds, as a literal: one per assistant item.
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
