"""Readers of the three answer shapes the seam speaks, each refusing an unusable answer.

A reader takes the decoded JSON object of a 2xx reply and returns what the caller needs, or
raises `BadAnswer`: an `{"error": ...}` body, no choices, `content: null` or empty text, a
refusal, a `content_filter` stop, a compact answer without its compaction item. Such an
answer is never cached and never applied as a summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._client import BadAnswer

_MESSAGE_CHARS = 300


def count(value: Any) -> int:
    """A reported token count: a non-negative int, else 0 (bools and floats are not counts)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _status_of(error: Mapping[str, Any]) -> int | None:
    for name in ("code", "status"):
        value = error.get(name)
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def check_error_body(data: Mapping[str, Any]) -> None:
    """Raise `BadAnswer` for an `{"error": ...}` body (a null `error` is no error).

    The status inside the error object (`code` or `status`, e.g. a gateway's 502) decides
    whether the call is retried.
    """
    error = data.get("error")
    if error is None or error == {} or error == "":
        return
    if isinstance(error, Mapping):
        message = str(error.get("message") or error.get("type") or dict(error))
        status = _status_of(error)
    else:
        message, status = str(error), None
    raise BadAnswer(f"answered with an error body: {message[:_MESSAGE_CHARS]}", status)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers send content parts
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


@dataclass(frozen=True)
class ChatAnswer:
    """The usable part of a Chat Completions answer.

    Attributes:
        text: The assistant text (never empty).
        finish_reason: `stop`, `length`, ... as the server said (None if absent).
        model: The model the server named, or "".
        input_tokens: `usage.prompt_tokens` (0 if absent).
        output_tokens: `usage.completion_tokens` (0 if absent).
    """

    text: str
    finish_reason: str | None
    model: str
    input_tokens: int
    output_tokens: int


def read_chat(data: Mapping[str, Any]) -> ChatAnswer:
    """Read a Chat Completions answer.

    Raises:
        BadAnswer: An error body, no choices, a refusal, a content filter, or no text.
    """
    check_error_body(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BadAnswer("answered with no choices")
    choice = choices[0]
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise BadAnswer("answer stopped by the content filter (finish_reason content_filter)")
    message = choice.get("message")
    message = message if isinstance(message, Mapping) else {}
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        raise BadAnswer(f"model refused: {refusal[:_MESSAGE_CHARS]}")
    text = _content_text(message.get("content"))
    if not text.strip():
        raise BadAnswer(f"answered with no text (content {message.get('content')!r:.40})")
    usage = data.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    model = data.get("model")
    return ChatAnswer(
        text=text,
        finish_reason=finish if isinstance(finish, str) else None,
        model=model if isinstance(model, str) else "",
        input_tokens=count(usage.get("prompt_tokens")),
        output_tokens=count(usage.get("completion_tokens")),
    )


def _usage_number(data: Mapping[str, Any], *keys: str) -> int:
    usage = data.get("usage")
    for source in (usage if isinstance(usage, Mapping) else {}, data):
        for key in keys:
            if count(source.get(key)):
                return count(source.get(key))
    return 0


def read_endpoint_summary(data: Mapping[str, Any], sent_chars: int) -> ChatAnswer:
    """Read a custom remote endpoint's `{summary, usage?}` answer.

    Without reported usage, tokens are estimated at four characters each.

    Raises:
        BadAnswer: An error body, or no summary text.
    """
    check_error_body(data)
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise BadAnswer("answered without a summary")
    return ChatAnswer(
        text=summary,
        finish_reason="stop",
        model="",
        input_tokens=_usage_number(data, "input_tokens", "inputTokens")
        or math.ceil(sent_chars / 4),
        output_tokens=_usage_number(data, "output_tokens", "outputTokens")
        or math.ceil(len(summary) / 4),
    )


def compaction_item(output: list[Any]) -> dict[str, Any]:
    """The (last) compaction item of a compact response's output.

    Raises:
        BadAnswer: There is none.
    """
    for item in reversed(output):
        if isinstance(item, Mapping) and item.get("type") == "compaction":
            return dict(item)
    raise BadAnswer("responses compact endpoint returned no compaction item")


@dataclass(frozen=True)
class CompactAnswer:
    """A Responses compact answer: the replacement history and what it cost.

    Attributes:
        history: The output items (retained messages and the compaction item).
        item: The compaction item.
        input_tokens: `usage.input_tokens` (0 if absent).
        output_tokens: `usage.output_tokens` (0 if absent).
    """

    history: tuple[dict[str, Any], ...]
    item: dict[str, Any]
    input_tokens: int
    output_tokens: int


def read_compact(data: Mapping[str, Any]) -> CompactAnswer:
    """Read a `POST /responses/compact` answer.

    Raises:
        BadAnswer: An error body, no output list, or no compaction item in it.
    """
    check_error_body(data)
    output = data.get("output")
    if not isinstance(output, list):
        raise BadAnswer("responses compact endpoint returned no output list")
    history = tuple(dict(i) for i in output if isinstance(i, Mapping))
    item = compaction_item(list(history))
    usage = data.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return CompactAnswer(
        history, item, count(usage.get("input_tokens")), count(usage.get("output_tokens"))
    )
